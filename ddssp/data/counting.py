"""Exact counts from a table, in one scan: the way AIM and schema discovery read the data.

One small interface, three backends that give identical integer counts.

* :func:`count_marginals` ``(source, schema, cliques) -> {clique: int64 array}``: the exact
  contingency table of every clique, axes in the clique's column order, cells in the schema's code
  order (the codes :meth:`Schema.encode <ddssp.data.schema.Schema.encode>` gives). All cliques and
  the one-way marginals of every column (which check the encoding) come from one pass over the table.
* :func:`count_labels` ``(source, columns) -> {column: {label: count}}``: how often each raw label
  occurs, labels as ``Schema.encode`` compares them (a number 3 or 3.0 is ``"3"``; CSV text after
  the skipped leading spaces); missing cells (empty, NaN, CSV ``na_values``) under the key ``None``.
  For private schema discovery, which must noise these counts before using them.
* :func:`count_histograms` ``(source, {column: edges}) -> {column: Histogram}``: counts of numeric
  values in the bins ``[e_i, e_{i+1})`` (the last bin closed) plus the counts below ``e_0``, above
  ``e_m``, missing and non-numeric; values parsed as ``Schema.encode`` parses a numeric column. Also
  for discovery.

A ``source`` is a pandas DataFrame of raw values (as passed to :func:`ddssp.release`), a path to a
CSV or Parquet file, or (Spark backend) a Spark DataFrame. CSV reading options
(:class:`CsvOptions`: delimiter, extra missing-value markers, text encoding) are the same for every
backend.

Backends
--------
``numpy``   in memory: pandas reads the table (:func:`ddssp.data.tables.read_table`),
            ``Schema.encode`` encodes it, ``np.bincount`` counts. The reference; default for DataFrames.
``duckdb``  embedded DuckDB, the default for files. CSV and Parquet are scanned out of core and never
            copied into pandas. Plan: (1) one scan groups the rows by a key per column (the raw value
            of categorical and explicit-level columns, the bin code of binned numeric columns, computed
            in SQL from the edges with clipping into the end bins), giving a table of distinct keys
            with their row counts; (2) the distinct raw values of each column are encoded in Python
            by exactly the rules of ``Schema.encode`` (a few hundred values, not millions of rows);
            (3) one ``GROUP BY GROUPING SETS`` query over the grouped table joins those codes and sums
            all marginals at once. Memory is bounded by DuckDB's ``memory_limit`` (it spills to a
            temporary directory that is removed afterwards).
``spark``   the same SQL on a Spark DataFrame (``pip install "ddssp[spark]"``) for tables that live on a
            cluster: a path Spark can read (HDFS, S3, local), or a DataFrame (a Hive table). Uses the
            active session (``spark-submit``) or starts one on ``spark_master`` (default ``local[*]``).

Exactness: the tests compare every backend with ``Schema.encode`` + ``np.bincount``, cell by cell, on
tables with every column kind. One known difference, unreachable from files written by pandas or
DuckDB: CSV leading spaces are skipped after the delimiter (pandas' ``skipinitialspace``), and the
SQL readers cannot tell a quoted field's own leading spaces (``"  a"``) from those, so they are
skipped too.

Privacy: exact counts leave this module only as return values to the caller (the mechanisms).
Error messages and the clipping warning name values and counts: local notes for the data holder,
never written to a release.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ddssp.data.columns import Column, _as_label, _few, _fmt, _numeric_label
from ddssp.data.encoding import ClipWarning, parse_numeric
from ddssp.data.schema import Schema
from ddssp.data.tables import header_names
from ddssp.errors import DataError, SchemaError

Clique = tuple[str, ...]
BACKENDS = ("numpy", "duckdb", "spark")
PARQUET_SUFFIXES = (".parquet", ".pq")

# raw codes inside the SQL (never returned): a value that fits no level, a missing cell
_UNKNOWN, _NA = -2, -3
# per-column status in the one-way grouping sets
# _BAD: an unknown label / a number that is no level (coded to the ``missing`` level);
# _NONNUM: text in a numeric column (coded like an empty cell, to the ``na`` level); _MISSING: empty
_OK, _CLIPPED, _BAD, _MISSING, _NONNUM = 0, 1, 2, 3, 4
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
    """How to read a CSV file: the field delimiter, extra missing-value markers (the empty cell is
    always missing) and the text encoding. The same for every backend."""

    delimiter: str = ","
    na_values: tuple[str, ...] = ()
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        if not isinstance(self.delimiter, str) or len(self.delimiter) != 1 or self.delimiter in "\"\n\r":
            raise DataError(
                f"the CSV delimiter must be one character (not a quote or a newline), got {self.delimiter!r}"
            )
        object.__setattr__(self, "na_values", tuple(str(v) for v in (self.na_values or ())))


@dataclass
class Histogram:
    """Exact counts of a numeric column on given edges: ``counts[i]`` = values in ``[e_i, e_{i+1})``
    (the last bin closed), and the values below ``e_0``, above ``e_m``, missing, and non-numeric."""

    edges: np.ndarray
    counts: np.ndarray
    below: int
    above: int
    missing: int
    non_numeric: int


# --------------------------------------------------------------------------- public interface
def count_marginals(
    source: Any,
    schema: Schema,
    cliques: Iterable[Sequence[str]],
    *,
    backend: str | None = None,
    csv_options: CsvOptions | None = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
) -> dict[Clique, np.ndarray]:
    """Exact counts (int64) of every clique, axes in the clique's order, cells in code order.

    One scan of the table. Raises SchemaError as ``Schema.encode`` does (unknown labels or missing
    cells without a missing level, columns that differ from the schema, values outside an unclipped
    column's range) and warns :class:`ClipWarning` with the number of clipped values per column.
    """
    cl = _check_cliques(schema, cliques)
    counter = make_counter(source, backend, csv_options=csv_options, memory_limit=memory_limit,
                           spark_master=spark_master)
    try:
        return counter.marginals(schema, cl)
    finally:
        counter.close()


def count_labels(
    source: Any,
    columns: Sequence[str],
    *,
    backend: str | None = None,
    csv_options: CsvOptions | None = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
) -> dict[str, dict[str | None, int]]:
    """Exact count of each raw label of each column, one scan: ``{column: {label: count}}``.

    Labels are strings as ``Schema.encode`` compares them (a number 3 or 3.0 gives ``"3"``, 2.5 gives
    ``"2.5"``, CSV text after the skipped leading spaces); missing cells (empty, NaN and the CSV
    ``na_values``) count under ``None``. Exact: noise them before anything is released."""
    counter = make_counter(source, backend, csv_options=csv_options, memory_limit=memory_limit,
                           spark_master=spark_master)
    try:
        return counter.labels([str(c) for c in columns])
    finally:
        counter.close()


def count_histograms(
    source: Any,
    edges: Mapping[str, Sequence[float]],
    *,
    backend: str | None = None,
    csv_options: CsvOptions | None = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
) -> dict[str, Histogram]:
    """Exact histogram of each numeric column on its edges (finite, strictly increasing), one scan.

    Values are parsed as ``Schema.encode`` parses a numeric column (text is stripped; ``inf`` is a
    number; anything else unparseable is non-numeric). Exact: noise before anything is released."""
    checked = {str(name): list(Column.binned(str(name), e).edges) for name, e in edges.items()}
    counter = make_counter(source, backend, csv_options=csv_options, memory_limit=memory_limit,
                           spark_master=spark_master)
    try:
        return counter.histograms(checked)
    finally:
        counter.close()


def table_columns(source: Any, csv_options: CsvOptions | None = None) -> list[str]:
    """The column names of a table (a CSV header, a Parquet schema, a DataFrame), without reading
    its rows. Public: the header is not protected."""
    if isinstance(source, pd.DataFrame) or _is_spark_frame(source):
        return [str(c) for c in source.columns]
    if _is_uri(source):
        counter = SparkCounter(str(source), csv_options or CsvOptions())
        return list(counter._relation()[1])
    p = _check_path(source)
    if _is_parquet(p):
        import pyarrow.parquet as pq

        try:
            return [str(n).strip() for n in pq.read_schema(p).names]
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many types
            raise DataError(f"{p} is not a readable Parquet file ({_first_line(exc)})") from None
    return _csv_header(p, csv_options or CsvOptions())


def default_backend(source: Any) -> str:
    """``numpy`` for a pandas DataFrame, ``spark`` for a Spark DataFrame, ``duckdb`` for a file."""
    if isinstance(source, pd.DataFrame):
        return "numpy"
    if _is_spark_frame(source):
        return "spark"
    return "duckdb"


def make_counter(source: Any, backend: str | None = None, *, csv_options: CsvOptions | None = None,
                 memory_limit: str | None = None, spark_master: str | None = None):
    """The backend object (``marginals`` / ``labels`` / ``histograms`` / ``close``) for ``source``."""
    backend = default_backend(source) if backend is None else backend
    if backend not in BACKENDS:
        raise DataError(f"unknown counting backend {backend!r}; use one of: {', '.join(BACKENDS)}")
    opts = csv_options if csv_options is not None else CsvOptions()
    if not isinstance(source, pd.DataFrame) and not _is_spark_frame(source):
        if not (backend == "spark" and _is_uri(source)):  # hdfs://, s3a://: Spark reads them
            source = _check_path(source)
    if backend != "duckdb" and memory_limit is not None:
        raise DataError("a memory limit applies to the duckdb backend only")
    if backend != "spark" and spark_master is not None:
        raise DataError("a Spark master applies to the spark backend only (use --backend spark)")
    if backend == "numpy":
        if _is_spark_frame(source):
            raise DataError("a Spark DataFrame needs the spark backend")
        return NumpyCounter(source, opts)
    if backend == "duckdb":
        if _is_spark_frame(source):
            raise DataError("a Spark DataFrame needs the spark backend")
        return DuckDBCounter(source, opts, memory_limit=memory_limit)
    return SparkCounter(source, opts, master=spark_master)


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
        raise DataError(f"{p} is not a CSV file (it looks like {p.suffix.lstrip('.').upper()}); "
                        "give a CSV with a header row, or a Parquet file")
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


def counts_from_codes(codes: Mapping[str, np.ndarray], domain: Mapping[str, int],
                      cliques: Iterable[Clique]) -> dict[Clique, np.ndarray]:
    """Exact int64 counts of each clique from integer code columns (``np.bincount``)."""
    out = {}
    for c in cliques:
        shape = [int(domain[a]) for a in c]
        idx = codes[c[0]] if len(c) == 1 else np.ravel_multi_index([codes[a] for a in c], shape)
        out[tuple(c)] = np.bincount(idx, minlength=math.prod(shape)).astype(np.int64).reshape(shape)
    return out


def _domain_hint(col: Column) -> str:
    if col.is_codes:
        return (f"; the domain says column {col.name!r} has size {col.size} (codes "
                f"0..{col.size - 1}) but the data has other values: the domain does not fit the data")
    return ""


# --------------------------------------------------------------------------- numpy backend
class NumpyCounter:
    """In memory: pandas read, ``Schema.encode``, ``np.bincount``. The reference backend."""

    def __init__(self, source: pd.DataFrame | Path, opts: CsvOptions):
        self.source, self.opts = source, opts

    def close(self) -> None:
        pass

    def _frame(self) -> pd.DataFrame:
        if isinstance(self.source, pd.DataFrame):
            return self.source
        from ddssp.data.tables import read_table

        o = self.opts
        return read_table(self.source, delimiter=o.delimiter, na_values=list(o.na_values), encoding=o.encoding)

    def marginals(self, schema: Schema, cliques: list[Clique]) -> dict[Clique, np.ndarray]:
        df = self._frame()
        if len(df) == 0:
            raise DataError("the table has no rows")
        enc = schema.encode(df)
        codes = {n: enc[n].to_numpy(dtype=np.int64) for n in schema.names}
        return counts_from_codes(codes, schema.domain, cliques)

    def labels(self, columns: list[str]) -> dict[str, dict[str | None, int]]:
        df = self._frame()
        out = {}
        for name in columns:
            s = _frame_column(df, name)
            isna = s.isna()
            d: dict[str | None, int] = {}
            for k, v in s[~isna].map(_as_label).value_counts(sort=False).items():
                d[str(k)] = d.get(str(k), 0) + int(v)
            if isna.any():
                d[None] = int(isna.sum())
            out[name] = d
        return out

    def histograms(self, edges: Mapping[str, list[float]]) -> dict[str, Histogram]:
        df = self._frame()
        out = {}
        for name, e in edges.items():
            s = _frame_column(df, name)
            isna = s.isna().to_numpy()
            x = parse_numeric(s)
            bad = np.isnan(x) & ~isna
            xv = x[~np.isnan(x)]
            ea = np.asarray(e, dtype=float)
            below, above = int((xv < ea[0]).sum()), int((xv > ea[-1]).sum())
            inside = xv[(xv >= ea[0]) & (xv <= ea[-1])]
            c = np.clip(np.searchsorted(ea, inside, side="right") - 1, 0, len(ea) - 2)
            counts = np.bincount(c, minlength=len(ea) - 1).astype(np.int64)
            out[name] = Histogram(ea, counts, below, above, int(isna.sum()), int(bad.sum()))
        return out


def _frame_column(df: pd.DataFrame, name: str) -> pd.Series:
    cols = [str(c) for c in df.columns]
    if name not in cols:
        raise SchemaError(f"column {name!r} is not in the data (columns: {_few(cols, 20)})")
    return df.iloc[:, cols.index(name)]


# --------------------------------------------------------------------------- SQL: dialects, sources
class _Dialect:
    """The few places where DuckDB and Spark SQL differ."""

    def __init__(self, name: str):
        self.name = name
        self.text = "STRING" if name == "spark" else "VARCHAR"

    def ident(self, name: str) -> str:
        if self.name == "spark":
            return "`" + name.replace("`", "``") + "`"
        return '"' + name.replace('"', '""') + '"'

    def string(self, s: str) -> str:
        if self.name == "spark":
            return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + s.replace("'", "''") + "'"

    def double(self, x: float) -> str:
        """An exact double literal (text cast: correctly rounded in both engines)."""
        return f"CAST({self.string(repr(float(x)))} AS DOUBLE)"

    def numeric_guard(self, v: str) -> str:
        """False for text that TRY_CAST accepts but pandas does not: '1_000' (DuckDB), '1d' / '1f'
        (Spark, Java's suffixes)."""
        if self.name == "spark":
            return f"(instr({v}, '_') = 0 AND NOT ({v} RLIKE '[0-9.][dDfF]\\\\s*$'))"
        return f"(instr({v}, '_') = 0)"


@dataclass
class _Src:
    """A column of the scanned relation: its SQL expression and type family."""

    sql: str
    family: str | None  # "text", "int", "float", "bool"; None = unsupported
    csv: bool  # text from a CSV (empty cells and na markers are missing, leading spaces skipped)


def _family(type_name: str) -> str | None:
    t = type_name.upper()
    if t.startswith(("VARCHAR", "STRING", "TEXT", "CHAR")):
        return "text"
    if t.startswith("BOOL"):
        return "bool"
    if t.startswith(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                     "UINTEGER", "UBIGINT", "INT", "LONG", "SHORT", "BYTE")):
        return "int"
    if t.startswith(("DOUBLE", "FLOAT", "REAL")):
        return "float"
    return None


def _number_sql(d: _Dialect, src: _Src, na_values: tuple[str, ...]) -> tuple[str, str]:
    """(x, na): the value as DOUBLE (NULL if missing or not numeric) and the SQL condition 'missing'
    that is checked first. For CSV text, markers that are not numbers are only looked for among the
    non-numeric values (checked in :func:`_bad_or_na_sql`)."""
    v = src.sql
    if src.family == "text":
        x = f"(CASE WHEN {d.numeric_guard(v)} THEN TRY_CAST({v} AS DOUBLE) END)"
        numeric_marks = [m for m in na_values if _parses(m.lstrip(" "))]
        if src.csv and numeric_marks:
            marks = ", ".join(d.string(m.lstrip(" ")) for m in numeric_marks)
            return x, f"({v} IS NULL OR TRIM(LEADING ' ' FROM {v}) IN ({marks}))"
        return x, f"({v} IS NULL)"
    if src.family == "float":
        return f"CAST({v} AS DOUBLE)", f"({v} IS NULL OR isnan({v}))"
    return f"CAST({v} AS DOUBLE)", f"({v} IS NULL)"


def _bad_or_na_sql(d: _Dialect, src: _Src, na_values: tuple[str, ...]) -> str:
    """For a value that is neither missing (first check) nor numeric: _NA if it is an empty CSV cell
    or a marker, else _UNKNOWN."""
    if src.family == "text" and src.csv:
        marks = ", ".join(d.string(m) for m in ("", *(m.lstrip(" ") for m in na_values)))
        return f"(CASE WHEN TRIM(LEADING ' ' FROM {src.sql}) IN ({marks}) THEN {_NA} ELSE {_UNKNOWN} END)"
    return str(_UNKNOWN)


def _parses(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _bin_sql(d: _Dialect, x: str, edges: Sequence[float]) -> str:
    """Bin code of x (not NULL): searchsorted(edges, x, 'right') - 1 clipped into the end bins."""
    m = len(edges) - 1
    whens = " ".join(f"WHEN {x} < {d.double(edges[i + 1])} THEN {i}" for i in range(m - 1))
    return f"(CASE {whens} ELSE {m - 1} END)" if whens else "0"


# --------------------------------------------------------------------------- Python side of the plan
def _map_values(col: Column, src: _Src, values: list[Any], na_values: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Final codes and statuses of distinct raw values of a categorical or explicit-level column, by
    the rules of Schema.encode (missing cells to the ``na`` level, unknown labels and off-level numbers
    to the ``missing`` level, non-numeric text to the ``na`` level)."""
    vals = list(values)
    n = len(vals)
    codes = np.full(n, -1, dtype=np.int64)
    status = np.zeros(n, dtype=np.int64)
    if src.family == "text" and src.csv:
        marks = {"", *na_values}
        vals = [None if v is None else v.lstrip(" ") for v in vals]
        vals = [None if v is None or v in marks else v for v in vals]
    if src.family == "float":
        vals = [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in vals]
    fill_bad, fill_na, fill_nonnum = _fills(col)
    isna = np.array([v is None for v in vals], dtype=bool)
    status[isna] = _MISSING
    codes[isna] = fill_na
    present = [v for v in vals if v is not None]
    idx = np.flatnonzero(~isna)
    if col.kind == "categorical":
        lookup = {lab: i for i, lab in enumerate(col.labels)}
        for j, v in zip(idx, present):
            lab = _as_label(v)
            c = lookup.get(lab, lookup.get(_numeric_label(lab), -1))
            codes[j] = c if c >= 0 else fill_bad
            if c < 0:
                status[j] = _BAD
        return codes, status
    # numeric with explicit levels (as _encode_numeric)
    if not present:
        return codes, status
    dtype = {"text": object, "int": "int64", "float": "float64", "bool": bool}.get(src.family, object)
    try:
        s = pd.Series(present, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        s = pd.Series(present, dtype=object)
    x = parse_numeric(s)
    bad = np.isnan(x)
    lo, hi = col.bounds
    out = ~bad & ((x < lo) | (x > hi))
    xc = np.clip(np.where(bad, lo, x), lo, hi)
    m = col.size - (col.missing is not None)
    levels = col.values[:m]
    c = np.clip(np.searchsorted(levels, xc, side="left"), 0, m - 1)
    off = levels[c] != xc
    st = np.where(bad, _NONNUM, np.where(out, _CLIPPED, _OK))
    if not col.clip:
        off = off | out
        if col.missing is not None:  # not clipped, with a missing level: outside values go there
            st = np.where(out, _OK, st)
    c = np.where(bad, fill_nonnum, np.where(off, fill_bad, c))
    st = np.where(~bad & ~out & off, _BAD, st)
    codes[idx] = c
    status[idx] = st
    return codes, status


def _from_grouping_sets(schema: Schema, cliques: list[Clique], sets: list[list[int]],
                        cols: dict[str, np.ndarray]) -> tuple[dict[int, np.ndarray], dict[Clique, np.ndarray]]:
    """Scatter GROUPING SETS rows into (per-column counts by code x status, clique arrays)."""
    k = len(schema.columns)
    dom = [c.size for c in schema.columns]
    n = _int_values(cols["n"])
    present = np.stack([~_isnull(cols[f"c{i}"]) for i in range(k)], axis=1)
    codes = {i: _int_values(cols[f"c{i}"]) for i in range(k)}
    weights = 1 << np.arange(k, dtype=object)
    pattern = np.array([sum(int(w) for w, p in zip(weights, row) if p) for row in present], dtype=object)

    def rows_of(s: list[int]) -> np.ndarray:
        return pattern == sum(1 << i for i in s)

    oneway = {}
    for i in range(k):
        sel = rows_of([i])
        st = _int_values(cols[f"s{i}"])[sel]
        arr = np.zeros((dom[i], _NSTATUS), dtype=np.int64)
        np.add.at(arr, (codes[i][sel], st), n[sel])
        oneway[i] = arr
    out = {}
    for s in {tuple(sorted(schema.names.index(a) for a in c)) for c in cliques if len(c) > 1}:
        sel = rows_of(list(s))
        shape = [dom[i] for i in s]
        arr = np.zeros(math.prod(shape), dtype=np.int64)
        np.add.at(arr, np.ravel_multi_index([codes[i][sel] for i in s], shape), n[sel])
        out[s] = arr.reshape(shape)
    return oneway, out


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


def _finish(schema: Schema, cliques: list[Clique], oneway: dict[int, np.ndarray],
            arrays: dict[tuple[int, ...], np.ndarray], check) -> dict[Clique, np.ndarray]:
    """Check statuses (errors / clip warnings via ``check``), then the arrays in clique order."""
    for i, col in enumerate(schema.columns):
        by_status = oneway[i].sum(axis=0)
        check(col, int(by_status[_MISSING]), int(by_status[_BAD]), int(by_status[_CLIPPED]),
              int(by_status[_NONNUM]))
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


# --------------------------------------------------------------------------- the SQL backends
class _SQLCounter:
    """What DuckDB and Spark share: the three-step plan, error checks and result assembly.
    Subclasses provide ``_relation`` (source SQL and columns), ``_fetch`` (run a query, return numpy
    columns), ``_rows`` (run a query, return Python rows), ``_materialize`` (a query into a named
    temporary table) and ``_register`` (a small pandas frame as a named table)."""

    dialect: _Dialect
    opts: CsvOptions
    where: str

    def close(self) -> None:  # pragma: no cover - overridden
        pass

    def _check_types(self, names: Iterable[str], srcs: dict[str, _Src]) -> None:
        for name in names:
            if srcs[name].family is None:
                raise DataError(
                    f"column {name!r} has a type the {self.dialect.name} backend does not encode (it reads "
                    "text, integer, floating-point and boolean columns); use --backend numpy"
                )

    # ----------------------------------------------------------------- marginals
    def marginals(self, schema: Schema, cliques: list[Clique]) -> dict[Clique, np.ndarray]:
        d = self.dialect
        relation, srcs = self._relation()
        _check_columns(schema, list(srcs))
        self._check_types(schema.names, srcs)
        na_values = self.opts.na_values
        # (1) one scan: group rows by one key per column
        keys, mapped = [], []
        for i, col in enumerate(schema.columns):
            src = srcs[col.name]
            if col.kind == "numeric" and col.edges is not None:
                x, na = _number_sql(d, src, na_values)
                lo, hi = col.bounds
                keys.append(
                    f"CASE WHEN {na} THEN {_NA} WHEN {x} IS NULL OR isnan({x}) THEN {_bad_or_na_sql(d, src, na_values)} "
                    f"ELSE {_bin_sql(d, x, col.edges)} END AS b{i}"
                )
                keys.append(f"COALESCE({x} < {d.double(lo)} OR {x} > {d.double(hi)}, FALSE) AS k{i}")
            else:
                v = src.sql
                if src.family == "float":  # NaN is missing (pandas): one NULL key
                    v = f"CASE WHEN isnan({v}) THEN NULL ELSE {v} END"
                keys.append(f"{v} AS v{i}")
                mapped.append(i)
        key_names = ", ".join(k.rsplit(" AS ", 1)[1] for k in keys)
        comp = self._materialize(
            "ddssp_grouped",
            f"SELECT {key_names}, COUNT(*) AS n FROM (SELECT {', '.join(keys)} FROM {relation}) t GROUP BY {key_names}",
        )
        oneway, arrays = self._encode_and_count(comp, schema, cliques, srcs, mapped)
        errors: list[str] = []

        def check(col: Column, n_missing: int, n_bad: int, n_clip: int, n_nonnum: int) -> None:
            if errors:
                return
            mc = col.missing_code
            nc = getattr(col, "na_code", mc)
            lo, hi = col.bounds if col.kind == "numeric" else (None, None)
            if n_nonnum and nc is None:
                errors.append(self._bad_message(col, n_nonnum))
            elif n_bad and mc is None and not (col.kind == "numeric" and not col.clip and n_clip):
                errors.append(self._bad_message(col, n_bad))
            elif n_missing and nc is None:
                errors.append(
                    f"column {col.name!r}: {n_missing} missing (empty) value(s); fill them or declare a \"missing\" level"
                )
            elif n_clip and not col.clip:
                errors.append(
                    f"column {col.name!r}: {n_clip} value(s) outside [{_fmt(lo)}, {_fmt(hi)}]"
                    + (_domain_hint(col) or "; this column is not clipped (\"clip\": false)")
                )
            elif n_clip:
                warnings.warn(
                    f"column {col.name!r}: {n_clip} value(s) outside the declared bounds [{_fmt(lo)}, {_fmt(hi)}] "
                    "were clipped to them (local note for the data holder; nothing about this is released)",
                    ClipWarning,
                    stacklevel=5,
                )

        out = _finish(schema, cliques, oneway, arrays, check)
        if errors:
            raise SchemaError(errors[0])
        return out

    def _encode_and_count(self, comp: str, schema: Schema, cliques: list[Clique], srcs: dict[str, _Src],
                          mapped: list[int]):
        """(2) encode each column's distinct raw values in Python, by Schema.encode's rules, join the
        codes to the grouped rows, and (3) count every marginal in one GROUPING SETS query."""
        na_values = self.opts.na_values
        joins, enc = [], []
        distinct_of: dict[int, list[Any]] = {i: [] for i in mapped}
        if mapped:  # the distinct raw values of every mapped column, in one query
            keys = ", ".join(f"v{i}" for i in mapped)
            gid = ", ".join(f"GROUPING(v{i}) AS g{i}" for i in mapped)
            sets = ", ".join(f"(v{i})" for i in mapped)
            for r in self._rows(f"SELECT {keys}, {gid} FROM {comp} GROUP BY GROUPING SETS ({sets})"):
                for j, i in enumerate(mapped):
                    if r[len(mapped) + j] == 0 and r[j] is not None:
                        distinct_of[i].append(r[j])
        for i, col in enumerate(schema.columns):
            fill_bad, fill_na, fill_nonnum = _fills(col)  # 0 where no level: an error is raised first
            if i in mapped:
                distinct = distinct_of[i]
                codes, status = _map_values(col, srcs[col.name], distinct, na_values)
                frame = pd.DataFrame({"key": pd.Series(distinct, dtype=_pandas_dtype(srcs[col.name].family)),
                                      "code": codes, "st": status})
                m = self._register(f"ddssp_map{i}", frame, srcs[col.name].family)
                joins.append(f"LEFT JOIN {m} m{i} ON g.v{i} = m{i}.key")
                enc.append(f"CASE WHEN g.v{i} IS NULL THEN {_MISSING} ELSE m{i}.st END AS s{i}")
                enc.append(f"CASE WHEN g.v{i} IS NULL THEN {fill_na} ELSE m{i}.code END AS c{i}")
            else:
                enc.append(
                    f"CASE WHEN g.b{i} = {_NA} THEN {_MISSING} WHEN g.b{i} = {_UNKNOWN} THEN {_NONNUM} "
                    f"WHEN g.k{i} THEN {_CLIPPED} ELSE {_OK} END AS s{i}"
                )
                enc.append(f"CASE WHEN g.b{i} = {_NA} THEN {fill_na} WHEN g.b{i} < 0 THEN {fill_nonnum} "
                           f"ELSE g.b{i} END AS c{i}")
        # (3) all marginals from the encoded grouped rows
        enc_sql = f"SELECT {', '.join(enc)}, g.n AS n FROM {comp} g {' '.join(joins)}"
        return self._count_encoded(enc_sql, schema, cliques)

    def _count_encoded(self, enc_sql: str, schema: Schema, cliques: list[Clique]):
        """Every marginal in one GROUP BY GROUPING SETS query: a one-way set (code, status) per
        column and one set per clique."""
        k = len(schema.columns)
        sets: list[list[int]] = [[i] for i in range(k)]
        for c in cliques:
            idx = sorted(schema.names.index(a) for a in c)
            if len(idx) > 1 and idx not in sets:
                sets.append(idx)
        gs = ", ".join(
            "(" + ", ".join(f"c{i}" for i in s) + (f", s{s[0]}" if len(s) == 1 else "") + ")" for s in sets
        )
        cols_c = ", ".join(f"c{i}" for i in range(k))
        cols_s = ", ".join(f"s{i}" for i in range(k))
        cols = self._fetch(f"SELECT {cols_c}, {cols_s}, SUM(n) AS n FROM ({enc_sql}) e GROUP BY GROUPING SETS ({gs})")
        return _from_grouping_sets(schema, cliques, sets, cols)

    def _bad_message(self, col: Column, n_bad: int) -> str:
        if col.kind == "categorical":
            return (f"column {col.name!r}: {n_bad} value(s) not among the schema's levels"
                    f"{_domain_hint(col) or '; add them to the levels or declare a missing/other level'}")
        if col.edges is None:
            return (f"column {col.name!r}: {n_bad} value(s) not numeric or not among the declared levels"
                    f"{_domain_hint(col) or '; use bin edges or declare a missing level'}")
        return (f"column {col.name!r} is numeric but has {n_bad} non-numeric value(s); fix the data, "
                "declare a missing level, or make the column categorical")

    # ----------------------------------------------------------------- discovery counts
    def labels(self, columns: list[str]) -> dict[str, dict[str | None, int]]:
        relation, srcs = self._relation()
        for name in columns:
            if name not in srcs:
                raise SchemaError(f"column {name!r} is not in the data (columns: {_few(list(srcs), 20)})")
        self._check_types(columns, srcs)
        sel = ", ".join(f"{srcs[name].sql} AS l{j}" for j, name in enumerate(columns))
        keys = ", ".join(f"l{j}" for j in range(len(columns)))
        gid = ", ".join(f"GROUPING(l{j}) AS g{j}" for j in range(len(columns)))
        gs = ", ".join(f"(l{j})" for j in range(len(columns)))
        rows = self._rows(f"SELECT {keys}, {gid}, COUNT(*) AS n FROM (SELECT {sel} FROM {relation}) t "
                          f"GROUP BY GROUPING SETS ({gs})")
        k = len(columns)
        out: dict[str, dict[str | None, int]] = {name: {} for name in columns}
        for j, name in enumerate(columns):
            src = srcs[name]
            marks = {"", *self.opts.na_values}
            for r in rows:
                if r[k + j] != 0:
                    continue
                v = r[j]
                if src.family == "text" and src.csv and v is not None:
                    v = v.lstrip(" ")
                    v = None if v in marks else v
                if isinstance(v, float) and math.isnan(v):
                    v = None
                key = None if v is None else _as_label(v)
                out[name][key] = out[name].get(key, 0) + int(r[2 * k])
        return out

    def histograms(self, edges: Mapping[str, list[float]]) -> dict[str, Histogram]:
        d = self.dialect
        relation, srcs = self._relation()
        for name in edges:
            if name not in srcs:
                raise SchemaError(f"column {name!r} is not in the data (columns: {_few(list(srcs), 20)})")
        self._check_types(list(edges), srcs)
        sel, meta = [], []
        for j, (name, e) in enumerate(edges.items()):
            src = srcs[name]
            x, na = _number_sql(d, src, self.opts.na_values)
            # -4 missing, -3 non-numeric, -2 below, -1 above (remapped from _NA / _UNKNOWN)
            sel.append(
                f"CASE WHEN {na} THEN -4 WHEN {x} IS NULL OR isnan({x}) THEN "
                f"(CASE WHEN {_bad_or_na_sql(d, src, self.opts.na_values)} = {_NA} THEN -4 ELSE -3 END) "
                f"WHEN {x} < {d.double(e[0])} THEN -2 WHEN {x} > {d.double(e[-1])} THEN -1 "
                f"ELSE {_bin_sql(d, x, e)} END AS h{j}"
            )
            meta.append((name, np.asarray(e, dtype=float)))
        keys = ", ".join(f"h{j}" for j in range(len(meta)))
        gs = ", ".join(f"(h{j})" for j in range(len(meta)))
        cols = self._fetch(f"SELECT {keys}, COUNT(*) AS n FROM (SELECT {', '.join(sel)} FROM {relation}) t "
                           f"GROUP BY GROUPING SETS ({gs})")
        n = np.asarray(cols["n"], dtype=np.int64)
        out = {}
        for j, (name, e) in enumerate(meta):
            ok = ~_isnull(cols[f"h{j}"])
            hv, nv = _int_values(cols[f"h{j}"])[ok], n[ok]
            counts = np.zeros(len(e) - 1, dtype=np.int64)
            inb = hv >= 0
            np.add.at(counts, hv[inb], nv[inb])
            sp = {c: int(nv[hv == c].sum()) for c in (-4, -3, -2, -1)}
            out[name] = Histogram(e, counts, sp[-2], sp[-1], sp[-4], sp[-3])
        return out


def _pandas_dtype(family: str | None):
    return {"int": "Int64", "float": "float64", "bool": "boolean"}.get(family or "", object)


def _first_line(exc: BaseException) -> str:
    s = str(exc).strip().splitlines()
    return s[0] if s else type(exc).__name__


# --------------------------------------------------------------------------- DuckDB
class DuckDBCounter(_SQLCounter):
    """Embedded DuckDB over a CSV / Parquet file (scanned out of core) or a pandas DataFrame."""

    def __init__(self, source: pd.DataFrame | Path, opts: CsvOptions, memory_limit: str | None = None,
                 threads: int | None = None):
        import duckdb

        self.dialect = _Dialect("duckdb")
        self.opts = opts
        self.source = source
        self.where = "the data" if isinstance(source, pd.DataFrame) else str(source)
        self._tmpdir = tempfile.mkdtemp(prefix="ddssp-duckdb-")
        config = {"temp_directory": self._tmpdir}
        if memory_limit is not None:
            config["memory_limit"] = str(memory_limit)
        if threads is not None:
            config["threads"] = int(threads)
        try:
            self.con = duckdb.connect(":memory:", config=config)
        except Exception as exc:  # noqa: BLE001 - e.g. an unreadable memory limit
            self.close()
            raise DataError(f"cannot start DuckDB (memory limit {memory_limit!r}?): {_first_line(exc)}") from None
        self.con.execute("SET preserve_insertion_order = false")
        self._rel: tuple[str, dict[str, _Src]] | None = None

    def close(self) -> None:
        con = getattr(self, "con", None)
        if con is not None:
            con.close()
            self.con = None
        if getattr(self, "_tmpdir", None):
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def _relation(self) -> tuple[str, dict[str, _Src]]:
        if self._rel is not None:
            return self._rel
        d = self.dialect
        if isinstance(self.source, pd.DataFrame):
            names = [str(c) for c in self.source.columns]
            if len(set(names)) < len(names):
                dup = sorted({c for c in names if names.count(c) > 1})
                raise SchemaError(f"the data has duplicate column names: {_few(dup)}")
            frame = self.source.copy(deep=False)
            frame.columns = names
            self.con.register("ddssp_input", frame)
            rel = "ddssp_input"
            types = self.con.execute("DESCRIBE SELECT * FROM ddssp_input").fetchall()
            srcs = {str(t[0]): _Src(d.ident(str(t[0])), _family(str(t[1])), False) for t in types}
        elif _is_parquet(self.source):
            rel = f"read_parquet({d.string(str(self.source))})"
            try:
                types = self.con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
            except Exception as exc:  # noqa: BLE001
                raise DataError(f"{self.source} is not a readable Parquet file ({_first_line(exc)})") from None
            if not types:
                raise DataError(f"{self.source} has no columns")
            srcs = {str(t[0]).strip(): _Src(d.ident(str(t[0])), _family(str(t[1])), False) for t in types}
        else:
            names = _csv_header(self.source, self.opts)
            o = self.opts
            cols = "{" + ", ".join(f"'f{i}': 'VARCHAR'" for i in range(len(names))) + "}"
            enc = o.encoding.lower().replace("_", "-")
            enc = {"utf8": "utf-8", "latin1": "latin-1", "iso-8859-1": "latin-1", "utf16": "utf-16"}.get(enc, enc)
            rel = (
                f"read_csv({d.string(str(self.source))}, header = true, columns = {cols}, auto_detect = false, "
                f"delim = {d.string(o.delimiter)}, quote = '\"', escape = '\"', encoding = {d.string(enc)}, "
                "strict_mode = true, null_padding = false, buffer_size = 4194304)"
            )
            srcs = {n: _Src(d.ident(f"f{i}"), "text", True) for i, n in enumerate(names)}
        self._rel = (rel, srcs)
        return self._rel

    def _run(self, sql: str):
        try:
            return self.con.execute(sql)
        except Exception as exc:  # noqa: BLE001 - DuckDB raises many types
            msg = _first_line(exc)
            if "out of memory" in msg.lower() or "memory limit" in msg.lower():
                raise DataError(f"DuckDB ran out of memory ({msg}); raise --memory-limit") from None
            raise DataError(f"cannot read {self.where}: {msg}") from None

    def _fetch(self, sql: str) -> dict[str, np.ndarray]:
        return self._run(sql).fetchnumpy()

    def _rows(self, sql: str) -> list[tuple]:
        return self._run(sql).fetchall()

    def _encode_and_count(self, comp: str, schema: Schema, cliques: list[Clique], srcs: dict[str, _Src],
                          mapped: list[int]):
        """Stream the grouped rows (distinct keys, usually far fewer than rows) in Arrow batches;
        encode each batch's distinct raw values in Python by Schema.encode's rules (cached) and
        count in numpy. Needs little memory beyond one batch (a GROUPING SETS query with a hundred
        sets, or a dozen joins, need more than a tight memory_limit allows)."""
        import pyarrow.compute as pc

        acc = _Accumulator(schema, cliques)
        cache: dict[int, dict[Any, tuple[int, int]]] = {i: {} for i in mapped}
        try:
            rel = self.con.sql(f"SELECT * FROM {comp}")
            reader = rel.to_arrow_reader(200_000) if hasattr(rel, "to_arrow_reader") else rel.fetch_arrow_reader(200_000)
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"cannot read {self.where}: {_first_line(exc)}") from None
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except Exception as exc:  # noqa: BLE001
                raise DataError(f"cannot read {self.where}: {_first_line(exc)}") from None
            if batch.num_rows == 0:
                continue
            cols: dict[str, np.ndarray] = {"n": batch.column("n").to_numpy(zero_copy_only=False).astype(np.int64)}
            for i, col in enumerate(schema.columns):
                fill_bad, fill_na, fill_nonnum = _fills(col)
                if i in mapped:
                    arr = batch.column(f"v{i}")
                    de = pc.dictionary_encode(arr)
                    idx = pc.fill_null(de.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
                    values = de.dictionary.to_pylist()
                    new = [v for v in values if v not in cache[i]]
                    if new:
                        c_new, s_new = _map_values(col, srcs[col.name], new, self.opts.na_values)
                        cache[i].update({v: (int(c), int(st)) for v, c, st in zip(new, c_new, s_new)})
                    vc = np.array([cache[i][v][0] for v in values] + [fill_na], dtype=np.int64)
                    vs = np.array([cache[i][v][1] for v in values] + [_MISSING], dtype=np.int64)
                    code = vc[idx]
                    cols[f"c{i}"] = code
                    cols[f"s{i}"] = vs[idx]
                else:
                    b = batch.column(f"b{i}").to_numpy(zero_copy_only=False).astype(np.int64)
                    k = batch.column(f"k{i}").to_numpy(zero_copy_only=False).astype(bool)
                    cols[f"s{i}"] = np.where(b == _NA, _MISSING, np.where(b == _UNKNOWN, _NONNUM,
                                                                         np.where(k, _CLIPPED, _OK)))
                    cols[f"c{i}"] = np.where(b == _NA, fill_na, np.where(b < 0, fill_nonnum, b))
            acc.add(cols)
        return acc.result()

    def _materialize(self, name: str, sql: str) -> str:
        self._run(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")
        return name

    def _register(self, name: str, frame: pd.DataFrame, family: str | None) -> str:
        self.con.register(name, frame)
        return name


# --------------------------------------------------------------------------- Spark
class SparkCounter(_SQLCounter):
    """The same SQL on a Spark DataFrame: a path Spark reads (CSV / Parquet; local, HDFS, S3), or a
    DataFrame given directly (e.g. ``spark.table("db.census")``)."""

    def __init__(self, source: Any, opts: CsvOptions, master: str | None = None):
        self.dialect = _Dialect("spark")
        self.opts = opts
        self.source = source
        self.where = "the Spark DataFrame" if _is_spark_frame(source) else str(source)
        self.spark = source.sparkSession if _is_spark_frame(source) else spark_session(master)
        self._rel = None
        self._prefix = f"ddssp_{os.getpid()}_{id(self)}_"
        self._cached: list = []
        self._views: list[str] = []

    def close(self) -> None:
        for df in self._cached:
            df.unpersist()
        for v in self._views:
            self.spark.catalog.dropTempView(v)
        self._cached, self._views = [], []

    def _view(self, df, name: str) -> str:
        full = self._prefix + name
        df.createOrReplaceTempView(full)
        self._views.append(full)
        return self.dialect.ident(full)

    def _relation(self):
        if self._rel is not None:
            return self._rel
        d = self.dialect
        try:
            if _is_spark_frame(self.source):
                df, names = self.source, None
            elif str(self.source).lower().endswith(PARQUET_SUFFIXES):
                df, names = self.spark.read.parquet(str(self.source)), None
            elif _is_uri(self.source):  # a remote CSV: its header as Spark reads it
                o = self.opts
                df = (self.spark.read.option("header", True).option("sep", o.delimiter).option("quote", '"')
                      .option("escape", '"').option("encoding", o.encoding).option("mode", "FAILFAST")
                      .option("inferSchema", False).csv(str(self.source)))
                names = [str(c).strip() for c in df.columns]
                df = df.toDF(*[f"f{i}" for i in range(len(names))])
            else:
                names = _csv_header(self.source, self.opts)
                o = self.opts
                df = (self.spark.read.option("header", True).option("sep", o.delimiter).option("quote", '"')
                      .option("escape", '"').option("encoding", o.encoding).option("mode", "FAILFAST")
                      .option("inferSchema", False).csv(str(self.source)))
                df = df.toDF(*[f"f{i}" for i in range(len(names))])
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"Spark cannot read {self.where}: {_first_line(exc)}") from None
        rel = self._view(df, "input")
        if names is not None:
            srcs = {n: _Src(d.ident(f"f{i}"), "text", True) for i, n in enumerate(names)}
        else:
            srcs = {str(n).strip(): _Src(d.ident(n), _family(t), False) for n, t in df.dtypes}
        self._rel = (rel, srcs)
        return self._rel

    def _sql(self, sql: str):
        try:
            return self.spark.sql(sql)
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"Spark could not count {self.where}: {_first_line(exc)}") from None

    def _rows(self, sql: str) -> list[tuple]:
        try:
            return [tuple(r) for r in self._sql(sql).collect()]
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. a malformed CSV row under FAILFAST
            raise DataError(f"Spark could not count {self.where}: {_first_line(exc)}") from None

    def _fetch(self, sql: str) -> dict[str, np.ndarray]:
        df = self._sql(sql)
        names = df.columns
        rows = self._rows(sql)
        out = {}
        for j, name in enumerate(names):
            vals = [r[j] for r in rows]
            if all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in vals):
                mask = np.array([v is None for v in vals], dtype=bool)
                data = np.array([0 if v is None else v for v in vals], dtype=np.int64)
                out[name] = np.ma.MaskedArray(data, mask=mask)
            else:
                out[name] = np.array(vals, dtype=object)
        return out

    def _materialize(self, name: str, sql: str) -> str:
        df = self._sql(sql).cache()
        self._cached.append(df)
        return self._view(df, name)

    def _register(self, name: str, frame: pd.DataFrame, family: str | None) -> str:
        from pyspark.sql.types import (BooleanType, DoubleType, LongType, StringType, StructField, StructType)

        key_type = {"int": LongType(), "float": DoubleType(), "bool": BooleanType()}.get(family or "", StringType())
        schema = StructType([StructField("key", key_type), StructField("code", LongType()), StructField("st", LongType())])
        rows = [(None if pd.isna(k) else (int(k) if family == "int" else float(k) if family == "float"
                                          else bool(k) if family == "bool" else str(k)), int(c), int(s))
                for k, c, s in zip(frame["key"], frame["code"], frame["st"])]
        return self._view(self.spark.createDataFrame(rows, schema), name)


def spark_session(master: str | None = None):
    """The active Spark session (e.g. under ``spark-submit``) or a new one on ``master`` (default
    ``local[*]``)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise DataError('the spark backend needs pyspark: pip install "ddssp[spark]"') from None
    if master is None:
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
    builder = SparkSession.builder.appName("ddssp-counting").config("spark.ui.showConsoleProgress", "false")
    if master is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        master = "(from spark-submit)"  # launched by spark-submit: its --master and conf apply
    else:
        master = master or "local[*]"
        builder = builder.master(master).config("spark.ui.enabled", "false")
    if master.startswith("local"):  # one machine: few shuffle partitions (a cluster keeps its default)
        builder = builder.config("spark.sql.shuffle.partitions", "4")
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - no Java, a bad master URL
        raise DataError(f"cannot start Spark (master {master}): {_first_line(exc)}; "
                        "Spark needs Java 17 or later") from None
    session.sparkContext.setLogLevel("ERROR")
    return session
