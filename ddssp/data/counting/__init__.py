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
tables with every column kind. Typed date and timestamp columns (Parquet DATE / TIMESTAMP, a frame's
datetime64) read in SQL by their integer ticks since 1970 (:mod:`ddssp.data.counting.typed`) give
the codes of their ISO text, time-zone-aware ones in UTC whatever the session's zone. One known difference, unreachable from files written by pandas or
DuckDB: CSV leading spaces are skipped after the delimiter (pandas' ``skipinitialspace``), and the
SQL readers cannot tell a quoted field's own leading spaces (``"  a"``) from those, so they are
skipped too.

Privacy: exact counts leave this module only as return values to the caller (the mechanisms).
Error messages and the clipping warning name values and counts: local notes for the data holder,
never written to a release.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.columns import Column
from ddssp.data.counting.common import (
    BACKENDS,
    CsvOptions,
    Histogram,
    check_cliques,
    check_path,
    counts_from_codes,
    csv_header,
    first_line,
    is_parquet,
    is_spark_frame,
    is_uri,
)
from ddssp.data.counting.duckdb_backend import DuckDBCounter
from ddssp.data.counting.numpy_backend import NumpyCounter
from ddssp.data.counting.spark_backend import SparkCounter, spark_session
from ddssp.data.schema import Schema
from ddssp.errors import DataError
from ddssp.types import Clique

__all__ = [
    "BACKENDS",
    "CsvOptions",
    "Histogram",
    "count_histograms",
    "count_labels",
    "count_marginals",
    "counts_from_codes",
    "default_backend",
    "make_counter",
    "spark_session",
    "table_columns",
    "NumpyCounter",
    "DuckDBCounter",
    "SparkCounter",
]


# --------------------------------------------------------------------------- public interface
@contextlib.contextmanager
def _opened(source: Any, backend: str | None, csv_options, memory_limit, spark_master) -> Iterator[Any]:
    """:func:`make_counter`'s counter for one scan, closed afterwards (its temporary files and views removed)."""
    counter = make_counter(
        source, backend, csv_options=csv_options, memory_limit=memory_limit, spark_master=spark_master
    )
    try:
        yield counter
    finally:
        counter.close()


def count_marginals(
    source: Any,
    schema: Schema,
    cliques: Iterable[Sequence[str]],
    *,
    backend: str | None = None,
    csv_options: CsvOptions | None = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
    columns: Sequence[str] | None = None,
) -> dict[Clique, np.ndarray]:
    """Exact counts (int64) of every clique, axes in the clique's order, cells in code order.

    One scan of the table; every backend gives the counts of ``Schema.encode`` + ``np.bincount``.

    Parameters
    ----------
    source : pandas.DataFrame, str or path-like, or Spark DataFrame
        The raw table: a DataFrame, a CSV or Parquet file, or (spark backend) a URI or Spark DataFrame.
    schema : Schema
        The public schema that encodes the table.
    cliques : iterable of sequences of str
        Column tuples to count (a bare string is a one-way clique); repeats are counted once.
    backend, csv_options, memory_limit, spark_master : optional
        The counting backend and its options, as for :func:`make_counter`.
    columns : sequence of str, optional
        The table's columns to count, which must be the schema's; the table's other columns are
        left out (DuckDB and Spark never read them). Default: every column of the table, which must
        then be the schema's.

    Returns
    -------
    dict of tuple of str to numpy.ndarray
        ``{clique: counts}``, int64, shape ``[schema.column(a).size for a in clique]``.

    Raises
    ------
    SchemaError
        As ``Schema.encode`` raises: unknown labels or missing cells without a missing level,
        columns that differ from the schema, values outside an unclipped column's range.
    DataError
        An unreadable or empty table, a bad backend option.

    Warns
    -----
    ClipWarning
        The number of values clipped to the bounds, per column (a local note, never released).
    """
    cl = check_cliques(schema, cliques)
    with _opened(source, backend, csv_options, memory_limit, spark_master) as counter:
        if columns is not None:
            counter.columns = [str(c) for c in columns]
        return counter.marginals(schema, cl)


def count_labels(
    source: Any,
    columns: Sequence[str],
    *,
    backend: str | None = None,
    csv_options: CsvOptions | None = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
) -> dict[str, dict[str | None, int]]:
    """Exact count of each raw label of each column, in one scan.

    Parameters
    ----------
    source : pandas.DataFrame, str or path-like, or Spark DataFrame
        The raw table (as for :func:`count_marginals`).
    columns : sequence of str
        The columns whose labels to count.
    backend, csv_options, memory_limit, spark_master : optional
        The counting backend and its options, as for :func:`make_counter`.

    Returns
    -------
    dict of str to dict of (str or None) to int
        ``{column: {label: count}}``. Labels are strings as ``Schema.encode`` compares them (a
        number 3 or 3.0 gives ``"3"``, 2.5 gives ``"2.5"``, CSV text after the skipped leading
        spaces); missing cells (empty, NaN and the CSV ``na_values``) count under ``None``.
        Exact: noise them before anything is released.

    Raises
    ------
    SchemaError
        A column that is not in the data.
    DataError
        An unreadable table, a column type the backend does not read, a bad backend option.
    """
    with _opened(source, backend, csv_options, memory_limit, spark_master) as counter:
        return counter.labels([str(c) for c in columns])


def count_histograms(
    source: Any,
    edges: Mapping[str, Sequence[float]],
    *,
    backend: str | None = None,
    csv_options: CsvOptions | None = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
) -> dict[str, Histogram]:
    """Exact histogram of each numeric column on its edges, in one scan.

    Parameters
    ----------
    source : pandas.DataFrame, str or path-like, or Spark DataFrame
        The raw table (as for :func:`count_marginals`).
    edges : mapping of str to sequence of float
        ``{column: edges}``, edges finite and strictly increasing (at least two).
    backend, csv_options, memory_limit, spark_master : optional
        The counting backend and its options, as for :func:`make_counter`.

    Returns
    -------
    dict of str to Histogram
        Counts in ``[e_i, e_{i+1})`` (the last bin closed), below ``e_0``, above ``e_m``, missing
        and non-numeric. Values are parsed as ``Schema.encode`` parses a numeric column (text is
        stripped; ``inf`` is a number). Exact: noise before anything is released.

    Raises
    ------
    SchemaError
        Bad edges, or a column that is not in the data.
    DataError
        An unreadable table, a bad backend option.
    """
    checked = {str(name): list(Column.binned(str(name), e).edges) for name, e in edges.items()}
    with _opened(source, backend, csv_options, memory_limit, spark_master) as counter:
        return counter.histograms(checked)


def table_columns(source: Any, csv_options: CsvOptions | None = None) -> list[str]:
    """The column names of a table, without reading its rows.

    Parameters
    ----------
    source : pandas.DataFrame, str or path-like, or Spark DataFrame
        A DataFrame, a CSV or Parquet file, or a URI Spark reads.
    csv_options : CsvOptions, optional
        How to read a CSV header.

    Returns
    -------
    list of str
        The names (a CSV header, a Parquet schema, a DataFrame's columns). Public: the header is
        not protected.

    Raises
    ------
    DataError
        A missing, unreadable or empty file.
    """
    if isinstance(source, pd.DataFrame) or is_spark_frame(source):
        return [str(c) for c in source.columns]
    if is_uri(source):
        counter = SparkCounter(str(source), csv_options or CsvOptions())
        return list(counter._relation()[1])
    p = check_path(source)
    if is_parquet(p):
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(p)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many types
            raise DataError(f"{p} is not a readable Parquet file ({first_line(exc)})") from None
        from ddssp.data.tables import HeaderNames, parquet_header

        h = parquet_header(schema)  # nested columns marked: select_columns refuses them unless dropped
        return HeaderNames([n.strip() for n in h], {k.strip(): v for k, v in h.nested.items()})
    return csv_header(p, csv_options or CsvOptions())


def default_backend(source: Any) -> str:
    """The backend used when none is named.

    Parameters
    ----------
    source : Any
        The table.

    Returns
    -------
    str
        ``"numpy"`` for a pandas DataFrame, ``"spark"`` for a Spark DataFrame, ``"duckdb"`` otherwise
        (a file).
    """
    if isinstance(source, pd.DataFrame):
        return "numpy"
    if is_spark_frame(source):
        return "spark"
    return "duckdb"


def make_counter(
    source: Any,
    backend: str | None = None,
    *,
    csv_options: CsvOptions | None = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
):
    """The backend object for ``source``: it has ``marginals``, ``labels``, ``histograms`` and ``close``.

    Parameters
    ----------
    source : pandas.DataFrame, str or path-like, or Spark DataFrame
        The raw table.
    backend : {"numpy", "duckdb", "spark"}, optional
        Counting backend; default :func:`default_backend` of ``source``.
    csv_options : CsvOptions, optional
        Delimiter, extra missing-value markers and text encoding of a CSV source.
    memory_limit : str, optional
        DuckDB's memory limit (e.g. ``"2GB"``); duckdb backend only.
    spark_master : str, optional
        Spark master URL (default: the active session or ``local[*]``); spark backend only.

    Returns
    -------
    NumpyCounter or DuckDBCounter or SparkCounter
        The counter; call ``close()`` when done (it removes temporary files and views).

    Raises
    ------
    DataError
        An unknown backend, an option that does not apply to it, a missing file.
    """
    backend = default_backend(source) if backend is None else backend
    if backend not in BACKENDS:
        raise DataError(f"unknown counting backend {backend!r}; use one of: {', '.join(BACKENDS)}")
    opts = csv_options if csv_options is not None else CsvOptions()
    if not isinstance(source, pd.DataFrame) and not is_spark_frame(source):
        if not (backend == "spark" and is_uri(source)):  # hdfs://, s3a://: Spark reads them
            source = check_path(source)
    if backend != "duckdb" and memory_limit is not None:
        raise DataError("a memory limit applies to the duckdb backend only")
    if backend != "spark" and spark_master is not None:
        raise DataError("a Spark master applies to the spark backend only (use --backend spark)")
    if backend == "numpy":
        if is_spark_frame(source):
            raise DataError("a Spark DataFrame needs the spark backend")
        return NumpyCounter(source, opts)
    if backend == "duckdb":
        if is_spark_frame(source):
            raise DataError("a Spark DataFrame needs the spark backend")
        return DuckDBCounter(source, opts, memory_limit=memory_limit)
    return SparkCounter(source, opts, master=spark_master)
