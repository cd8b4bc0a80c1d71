"""What every counting backend shares: CSV options, input checks, the per-column status codes,
the exact accumulator and the final checks that turn counts into clique arrays."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ddssp.data.columns import Column, _few
from ddssp.data.encoding import BAD, CLIPPED, MISSING, NONNUM, OK
from ddssp.data.schema import Schema
from ddssp.data.tables import header_names
from ddssp.errors import DataError, SchemaError
from ddssp.types import Clique

BACKENDS = ("numpy", "duckdb", "spark")
PARQUET_SUFFIXES = (".parquet", ".pq")

# raw codes inside the SQL (never returned): a value that fits no level, a missing cell
_UNKNOWN, _NA = -2, -3
# per-column status in the one-way grouping sets: the statuses of ddssp.data.encoding.classify
_OK, _CLIPPED, _BAD, _MISSING, _NONNUM = OK, CLIPPED, BAD, MISSING, NONNUM
_NSTATUS = 5


def _fills(col: Column) -> tuple[int, int, int]:
    """Codes of (unknown / off-level values, missing cells, non-numeric text), as Schema.encode
    assigns them (0 where the schema has no such level: an error is raised before counts are used)."""
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
        Extra missing-value markers (the empty cell is always missing).
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
        object.__setattr__(self, "na_values", tuple(str(v) for v in (self.na_values or ())))


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
def _check_cliques(schema: Schema, cliques: Iterable[Sequence[str]]) -> list[Clique]:
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


def _is_uri(x: Any) -> bool:
    return isinstance(x, str) and "://" in x and not x.startswith("file://")


def _is_spark_frame(x: Any) -> bool:
    return (type(x).__module__ or "").startswith("pyspark.") and type(x).__name__ == "DataFrame"


def _check_path(path: Any) -> Path:
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


def _is_parquet(p: Path) -> bool:
    return p.suffix.lower() in PARQUET_SUFFIXES


def _py_encoding(enc: str) -> str:
    return "utf-8-sig" if enc.lower().replace("_", "-") in ("utf-8", "utf8") else enc


def _csv_header(p: Path, opts: CsvOptions) -> list[str]:
    """Column names of a CSV (first non-blank line, stripped), checked as read_table checks them."""
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


def _check_columns(schema: Schema, names: list[str]) -> None:
    extra = [c for c in names if c not in schema]
    if extra:
        raise SchemaError(
            f"the data has column(s) not in the schema: {_few(extra)}; add them to the schema or drop them from the data"
        )
    absent = [n for n in schema.names if n not in set(names)]
    if absent:
        raise SchemaError(f"schema column(s) missing from the data: {_few(absent)}; the data has {_few(names, 20)}")


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


class _Accumulator:
    """Counts from batches of encoded grouped rows (c0.., s0.., n), in numpy (exact int64)."""

    def __init__(self, schema: Schema, cliques: list[Clique]):
        self.dom = [c.size for c in schema.columns]
        self.k = len(self.dom)
        self.oneway = {i: np.zeros(self.dom[i] * _NSTATUS, dtype=np.int64) for i in range(self.k)}
        self.sets = sorted({tuple(sorted(schema.names.index(a) for a in c)) for c in cliques if len(c) > 1})
        self.arrays = {s: np.zeros(math.prod(self.dom[i] for i in s), dtype=np.int64) for s in self.sets}

    def add(self, cols: Mapping[str, np.ndarray]) -> None:
        n = np.asarray(cols["n"], dtype=np.int64)
        if n.size == 0:
            return
        codes = [np.asarray(cols[f"c{i}"], dtype=np.int64) for i in range(self.k)]
        for i in range(self.k):
            st = np.asarray(cols[f"s{i}"], dtype=np.int64)
            self.oneway[i] += _bincount_exact(codes[i] * _NSTATUS + st, n, self.dom[i] * _NSTATUS)
        for s in self.sets:
            shape = [self.dom[i] for i in s]
            idx = np.ravel_multi_index([codes[i] for i in s], shape)
            self.arrays[s] += _bincount_exact(idx, n, self.arrays[s].size)

    def result(self) -> tuple[dict[int, np.ndarray], dict[tuple[int, ...], np.ndarray]]:
        oneway = {i: a.reshape(self.dom[i], _NSTATUS) for i, a in self.oneway.items()}
        arrays = {s: a.reshape([self.dom[i] for i in s]) for s, a in self.arrays.items()}
        return oneway, arrays


def _bincount_exact(idx: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Weighted bincount in exact integers (float64 sums are exact below 2**53; checked)."""
    if int(weights.sum()) < 2**53:
        return np.rint(np.bincount(idx, weights=weights, minlength=size)).astype(np.int64)
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, idx, weights)
    return out


def _finish(
    schema: Schema,
    cliques: list[Clique],
    oneway: dict[int, np.ndarray],
    arrays: dict[tuple[int, ...], np.ndarray],
    check,
) -> dict[Clique, np.ndarray]:
    """Check statuses (errors / clip warnings via ``check``), then the arrays in clique order."""
    for i, col in enumerate(schema.columns):
        by_status = oneway[i].sum(axis=0)
        check(col, int(by_status[_MISSING]), int(by_status[_BAD]), int(by_status[_CLIPPED]), int(by_status[_NONNUM]))
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


def _isnull(a: Any) -> np.ndarray:
    if isinstance(a, np.ma.MaskedArray):
        return np.ma.getmaskarray(a)
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return np.isnan(a)
    if a.dtype == object:
        return np.array([v is None or (isinstance(v, float) and math.isnan(v)) for v in a], dtype=bool)
    return np.zeros(a.shape, dtype=bool)


def _int_values(a: Any) -> np.ndarray:
    """Integer values with NULLs as 0 (callers select the non-NULL rows)."""
    null = _isnull(a)
    data = np.ma.getdata(a) if isinstance(a, np.ma.MaskedArray) else np.asarray(a)
    if data.dtype == object:
        data = np.array([0 if z else v for v, z in zip(data, null)], dtype=np.int64)
    out = np.where(null, 0, np.nan_to_num(data, nan=0) if data.dtype.kind == "f" else data)
    return out.astype(np.int64)


def _pandas_dtype(family: str | None):
    return {"int": "Int64", "float": "float64", "bool": "boolean"}.get(family or "", object)


def _first_line(exc: BaseException) -> str:
    s = str(exc).strip().splitlines()
    return s[0] if s else type(exc).__name__
