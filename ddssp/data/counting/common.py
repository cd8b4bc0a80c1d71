"""What every counting backend shares: CSV options, input checks, the per-column status codes,
the exact accumulator and the final checks that turn counts into clique arrays.

The backends (:mod:`.numpy_backend`, :mod:`.sql` and the DuckDB and Spark backends on it) and the
package's dispatch import these by their public names (``__all__``).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ddssp.data.columns import Column
from ddssp.data.encoding import BAD, CLIPPED, MISSING, NONNUM
from ddssp.data.schema import Schema
from ddssp.data.tables import csv_cell, header_names
from ddssp.data.values import first_few
from ddssp.errors import DataError, SchemaError
from ddssp.types import Clique

__all__ = [
    "BACKENDS",
    "NA_RAW",
    "N_STATUS",
    "PARQUET_SUFFIXES",
    "UNKNOWN_RAW",
    "Accumulator",
    "CsvOptions",
    "Histogram",
    "check_cliques",
    "check_columns",
    "check_path",
    "counts_from_codes",
    "csv_header",
    "fill_codes",
    "finish_counts",
    "first_line",
    "int_values",
    "is_parquet",
    "is_spark_frame",
    "is_uri",
    "isnull",
    "pandas_dtype",
]

BACKENDS = ("numpy", "duckdb", "spark")
PARQUET_SUFFIXES = (".parquet", ".pq")

# raw codes inside the SQL (never returned): a value that fits no level, a missing cell
UNKNOWN_RAW, NA_RAW = -2, -3
#: per-column statuses in the one-way grouping sets: those of ddssp.data.encoding.classify (OK,
#: CLIPPED, BAD, MISSING, NONNUM)
N_STATUS = 5


def fill_codes(col: Column) -> tuple[int, int, int]:
    """Codes of (unknown / off-level values, missing cells, non-numeric text), as Schema.encode
    assigns them (0 where the schema has no such level: an error is raised before counts are used).

    Parameters
    ----------
    col : Column
        The column.

    Returns
    -------
    tuple of int
        ``(unknown, missing, non-numeric)`` codes.
    """
    mc = col.missing_code
    nc = col.na_code if hasattr(col, "na_code") else mc
    m = 0 if mc is None else mc
    na = 0 if nc is None else nc
    return m, na, na


@dataclass(frozen=True)
class CsvOptions:
    """How to read a CSV file; the same for every backend.

    Attributes
    ----------
    delimiter : str
        The field delimiter.
    na_values : tuple of str
        Extra missing-value markers (the empty cell is always missing), read as a CSV cell is
        (:func:`~ddssp.data.tables.csv_cell`: leading spaces skipped, so ``" ?"`` is ``"?"``).
    encoding : str
        The text encoding.
    """

    delimiter: str = ","
    na_values: tuple[str, ...] = ()
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        if not isinstance(self.delimiter, str) or len(self.delimiter) != 1 or self.delimiter in '"\n\r':
            raise DataError(
                f"the CSV delimiter must be one character (not a quote or a newline), got {self.delimiter!r}"
            )
        object.__setattr__(self, "na_values", tuple(csv_cell(str(v)) for v in (self.na_values or ())))


@dataclass
class Histogram:
    """Exact counts of a numeric column on given edges.

    Attributes
    ----------
    edges : numpy.ndarray
        The bin edges ``e_0 < ... < e_m``.
    counts : numpy.ndarray
        ``counts[i]`` = values in ``[e_i, e_{i+1})`` (the last bin closed).
    below, above : int
        Values below ``e_0`` and above ``e_m``.
    missing : int
        Empty cells.
    non_numeric : int
        Cells that are not numbers.
    """

    edges: np.ndarray
    counts: np.ndarray
    below: int
    above: int
    missing: int
    non_numeric: int


# --------------------------------------------------------------------------- helpers
def check_cliques(schema: Schema, cliques: Iterable[Sequence[str]]) -> list[Clique]:
    """The cliques to count, as tuples of column names, each once and in the order given.

    Parameters
    ----------
    schema : Schema
        The schema the cliques' columns must be in.
    cliques : iterable
        Column names, or sequences of them.

    Returns
    -------
    list of tuple of str

    Raises
    ------
    SchemaError
        For an empty clique, a repeated column, or a column not in the schema.
    """
    out: list[Clique] = []
    for c in cliques:
        c = (c,) if isinstance(c, str) else tuple(str(a) for a in c)
        if not c:
            raise SchemaError("an empty clique cannot be counted")
        if len(set(c)) != len(c):
            raise SchemaError(f"repeated column in clique {list(c)}")
        for a in c:
            schema.column(a)  # SchemaError naming an unknown column
        if c not in out:
            out.append(c)
    return out


def is_uri(x: Any) -> bool:
    """Whether ``x`` names a remote table (a URI, not ``file://``).

    Parameters
    ----------
    x : object
        A table argument.

    Returns
    -------
    bool
    """
    return isinstance(x, str) and "://" in x and not x.startswith("file://")


def is_spark_frame(x: Any) -> bool:
    """Whether ``x`` is a Spark DataFrame (checked without importing pyspark).

    Parameters
    ----------
    x : object
        A table argument.

    Returns
    -------
    bool
    """
    return (type(x).__module__ or "").startswith("pyspark.") and type(x).__name__ == "DataFrame"


def check_path(path: Any) -> Path:
    """A table argument as the path of an existing file.

    Parameters
    ----------
    path : object
        A table argument.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    DataError
        When ``path`` is not a path, does not exist, or is a directory.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise DataError(
            f"a table must be a pandas DataFrame or a path to a CSV / Parquet file, got {type(path).__name__}"
        )
    p = Path(path)
    if not p.exists():
        raise DataError(f"input file {p} not found")
    if p.is_dir():
        raise DataError(f"input path {p} is a directory; give a CSV or Parquet file")
    return p


def is_parquet(p: Path) -> bool:
    """Whether a file is Parquet, by its suffix (``PARQUET_SUFFIXES``).

    Parameters
    ----------
    p : pathlib.Path
        The file.

    Returns
    -------
    bool
    """
    return p.suffix.lower() in PARQUET_SUFFIXES


def _py_encoding(enc: str) -> str:
    return "utf-8-sig" if enc.lower().replace("_", "-") in ("utf-8", "utf8") else enc


def csv_header(p: Path, opts: CsvOptions) -> list[str]:
    """Column names of a CSV (first non-blank line, stripped), checked as read_table checks them.

    Parameters
    ----------
    p : pathlib.Path
        The CSV file.
    opts : CsvOptions
        How to read it.

    Returns
    -------
    list of str

    Raises
    ------
    DataError
        When the file is not readable CSV text with a header.
    """
    from ddssp.data.tables import NOT_CSV_SUFFIXES

    if p.suffix.lower() in NOT_CSV_SUFFIXES:
        raise DataError(
            f"{p} is not a CSV file (it looks like {p.suffix.lstrip('.').upper()}); "
            "give a CSV with a header row, or a Parquet file"
        )
    try:
        with open(p, "rb") as fh:
            raw = fh.read(1 << 16)
    except OSError as exc:
        raise DataError(f"cannot read {p}: {exc.strerror or exc}") from None
    if b"\x00" in raw and not opts.encoding.lower().startswith("utf-16"):
        raise DataError(f"{p} is not a CSV file (it contains binary data; if it is compressed, decompress it first)")
    try:
        head = raw.decode(_py_encoding(opts.encoding), errors="strict" if len(raw) < (1 << 16) else "ignore")
    except UnicodeDecodeError:
        raise DataError(f"{p} is not a CSV file (not {opts.encoding} text)") from None
    except LookupError:
        raise DataError(f"unknown text encoding {opts.encoding!r}") from None
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if not lines:
        raise DataError(f"{p} is empty: no header and no rows")
    header = next(csv.reader([lines[0]], delimiter=opts.delimiter, skipinitialspace=True))
    names = header_names(header, p)
    return names


def check_columns(schema: Schema, names: list[str]) -> None:
    """Check that a table's columns are the schema's, no more and no fewer.

    Parameters
    ----------
    schema : Schema
        The schema.
    names : list of str
        The table's column names.

    Raises
    ------
    SchemaError
        Naming the extra or the absent columns.
    """
    extra = [c for c in names if c not in schema]
    if extra:
        raise SchemaError(
            f"the data has column(s) not in the schema: {first_few(extra)}; add them to the schema or drop them from the data"
        )
    absent = [n for n in schema.names if n not in set(names)]
    if absent:
        raise SchemaError(
            f"schema column(s) missing from the data: {first_few(absent)}; the data has {first_few(names, 20)}"
        )


def counts_from_codes(
    codes: Mapping[str, np.ndarray], domain: Mapping[str, int], cliques: Iterable[Clique]
) -> dict[Clique, np.ndarray]:
    """Exact counts of each clique from integer code columns (``np.bincount``).

    Parameters
    ----------
    codes : mapping of str to numpy.ndarray
        ``{column: integer codes}``, all of the same length.
    domain : mapping of str to int
        ``{column: number of levels}``.
    cliques : iterable of tuple of str
        The column tuples to count.

    Returns
    -------
    dict of tuple of str to numpy.ndarray
        ``{clique: int64 counts}`` of shape ``[domain[a] for a in clique]``.
    """
    out = {}
    for c in cliques:
        shape = [int(domain[a]) for a in c]
        idx = codes[c[0]] if len(c) == 1 else np.ravel_multi_index([codes[a] for a in c], shape)
        out[tuple(c)] = np.bincount(idx, minlength=math.prod(shape)).astype(np.int64).reshape(shape)
    return out


class Accumulator:
    """Counts from batches of encoded grouped rows (c0.., s0.., n), in numpy (exact int64).

    Parameters
    ----------
    schema : Schema
        The schema of the encoded columns ``c0..`` (in its column order).
    cliques : list of tuple of str
        The cliques to count; each column is also counted one-way by status.
    """

    def __init__(self, schema: Schema, cliques: list[Clique]):
        self.dom = [c.size for c in schema.columns]
        self.k = len(self.dom)
        self.oneway = {i: np.zeros(self.dom[i] * N_STATUS, dtype=np.int64) for i in range(self.k)}
        self.sets = sorted({tuple(sorted(schema.names.index(a) for a in c)) for c in cliques if len(c) > 1})
        self.arrays = {s: np.zeros(math.prod(self.dom[i] for i in s), dtype=np.int64) for s in self.sets}

    def add(self, cols: Mapping[str, np.ndarray]) -> None:
        """Add a batch of grouped rows.

        Parameters
        ----------
        cols : mapping of str to numpy.ndarray
            ``c{i}`` (code) and ``s{i}`` (status) of each column, and ``n`` (rows in the group).
        """
        n = np.asarray(cols["n"], dtype=np.int64)
        if n.size == 0:
            return
        codes = [np.asarray(cols[f"c{i}"], dtype=np.int64) for i in range(self.k)]
        for i in range(self.k):
            st = np.asarray(cols[f"s{i}"], dtype=np.int64)
            self.oneway[i] += _bincount_exact(codes[i] * N_STATUS + st, n, self.dom[i] * N_STATUS)
        for s in self.sets:
            shape = [self.dom[i] for i in s]
            idx = np.ravel_multi_index([codes[i] for i in s], shape)
            self.arrays[s] += _bincount_exact(idx, n, self.arrays[s].size)

    def result(self) -> tuple[dict[int, np.ndarray], dict[tuple[int, ...], np.ndarray]]:
        """The counts so far.

        Returns
        -------
        oneway : dict
            ``{column index: counts by code x status}``.
        arrays : dict
            ``{sorted column indices: counts}`` of each clique of two or more columns.
        """
        oneway = {i: a.reshape(self.dom[i], N_STATUS) for i, a in self.oneway.items()}
        arrays = {s: a.reshape([self.dom[i] for i in s]) for s, a in self.arrays.items()}
        return oneway, arrays


def _bincount_exact(idx: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Weighted bincount in exact integers (float64 sums are exact below 2**53; checked)."""
    if int(weights.sum()) < 2**53:
        return np.rint(np.bincount(idx, weights=weights, minlength=size)).astype(np.int64)
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, idx, weights)
    return out


def finish_counts(
    schema: Schema,
    cliques: list[Clique],
    oneway: dict[int, np.ndarray],
    arrays: dict[tuple[int, ...], np.ndarray],
    check,
) -> dict[Clique, np.ndarray]:
    """Check statuses (errors / clip warnings via ``check``), then the arrays in clique order.

    Parameters
    ----------
    schema : Schema
        The schema.
    cliques : list of tuple of str
        The cliques, in the order to return.
    oneway : dict
        ``{column index: counts by code x status}``.
    arrays : dict
        ``{sorted column indices: counts}``.
    check : callable
        ``check(col, n_missing, n_bad, n_clip, n_nonnum)``: raises or warns for one column.

    Returns
    -------
    dict
        ``{clique: int64 array}`` with axes in the clique's column order.

    Raises
    ------
    DataError
        For a table without rows.
    """
    for i, col in enumerate(schema.columns):
        by_status = oneway[i].sum(axis=0)
        check(col, int(by_status[MISSING]), int(by_status[BAD]), int(by_status[CLIPPED]), int(by_status[NONNUM]))
    if int(oneway[0].sum()) == 0:
        raise DataError("the table has no rows")
    pos = {c: i for i, c in enumerate(schema.names)}
    out = {}
    for c in cliques:
        idx = [pos[a] for a in c]
        if len(c) == 1:
            out[c] = oneway[idx[0]].sum(axis=1).astype(np.int64)
            continue
        s = tuple(sorted(idx))
        out[c] = np.ascontiguousarray(np.transpose(arrays[s], [s.index(i) for i in idx]))
    return out


def isnull(a: Any) -> np.ndarray:
    """The NULL cells of a fetched column (masked, NaN or None).

    Parameters
    ----------
    a : array-like
        The column.

    Returns
    -------
    numpy.ndarray
        Boolean mask.
    """
    if isinstance(a, np.ma.MaskedArray):
        return np.ma.getmaskarray(a)
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return np.isnan(a)
    if a.dtype == object:
        return np.array([v is None or (isinstance(v, float) and math.isnan(v)) for v in a], dtype=bool)
    return np.zeros(a.shape, dtype=bool)


def int_values(a: Any) -> np.ndarray:
    """Integer values with NULLs as 0 (callers select the non-NULL rows).

    Parameters
    ----------
    a : array-like
        The column.

    Returns
    -------
    numpy.ndarray
        int64 values.
    """
    null = isnull(a)
    data = np.ma.getdata(a) if isinstance(a, np.ma.MaskedArray) else np.asarray(a)
    if data.dtype == object:
        data = np.array([0 if z else v for v, z in zip(data, null)], dtype=np.int64)
    out = np.where(null, 0, np.nan_to_num(data, nan=0) if data.dtype.kind == "f" else data)
    return out.astype(np.int64)


def pandas_dtype(family: str | None):
    """The pandas dtype that holds values of a SQL type family.

    Parameters
    ----------
    family : str or None
        ``"int"``, ``"float"``, ``"bool"``, or another family.

    Returns
    -------
    str or type
        A nullable dtype name, or ``object``.
    """
    return {"int": "Int64", "float": "float64", "bool": "boolean"}.get(family or "", object)


def first_line(exc: BaseException) -> str:
    """The first line of an engine's error message (its type name when empty).

    Parameters
    ----------
    exc : BaseException
        The error.

    Returns
    -------
    str
    """
    s = str(exc).strip().splitlines()
    return s[0] if s else type(exc).__name__
