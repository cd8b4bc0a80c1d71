"""The table of a release as the pipeline reads it: its header, the columns used, the backend that
counts it, and its rows in memory when discovery (or the numpy backend) needs them.

Only the header is read first (it is public), so a column selection or a discovery option naming a
column the table lacks fails before the rows are read or any noise is drawn.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import DataError, SchemaError
from ddssp.pipeline.events import Notice
from ddssp.pipeline.options import ReadOptions


@dataclasses.dataclass(frozen=True)
class Source:
    """A release's table: what the counting layer reads, and what the pipeline holds in memory.

    Attributes
    ----------
    data : pandas.DataFrame, path or Spark DataFrame
        The table as given (a DataFrame already restricted to ``names``).
    names : list of str
        The columns used, in order (after ``ReadOptions.columns`` / ``drop``).
    backend : str
        The counting backend (``ReadOptions.backend``, or the default for ``data``).
    direct : bool
        The counting layer can read ``data`` by its own column names (no header cell was renamed);
        it reads only the columns used.
    read : ReadOptions
        How the table is read.
    frame : pandas.DataFrame or None
        The used columns in memory, once read (always for a DataFrame).
    table : SqlTable or None
        The table as discovery reads it where it lives (DuckDB or Spark, aggregate queries only),
        when columns are to be discovered and the backend can read the file by its column names
        (:mod:`ddssp.data.discovery.source`); ``frame`` then stays None.
    """

    data: Any
    names: list[str]
    backend: str
    direct: bool
    read: ReadOptions
    frame: pd.DataFrame | None = None
    table: Any = None

    def discovery_input(self) -> Any:
        """What schema planning reads: the rows in memory, the table where it lives, or (all
        columns declared) the column names only.

        Returns
        -------
        pandas.DataFrame, SqlTable or list of str
        """
        if self.frame is not None:
            return self.frame
        return self.table if self.table is not None else self.names

    def closed(self) -> Source:
        """This source without its discovery table (closed: its engine's connection and temporary
        files released).

        Returns
        -------
        Source
        """
        if self.table is None:
            return self
        self.table.close()
        return dataclasses.replace(self, table=None)

    def in_memory(self, schema: Any) -> Source:
        """This source with its rows in memory when they are needed, else itself.

        The rows are needed to discover a column ``schema`` does not declare, for the numpy backend,
        and when the counting layer cannot read the file by its own column names.

        Parameters
        ----------
        schema : Schema or None
            The declared columns.

        Returns
        -------
        Source
        """
        declared = schema is not None and all(n in schema for n in self.names)
        if self.frame is not None or self.table is not None or (declared and self.backend != "numpy" and self.direct):
            return self
        if not declared and self.backend in ("duckdb", "spark") and (self.direct or not _local_file(self.data)):
            table = _discovery_table(self)
            if table is not None:  # discovery reads it where it lives: no row is held here
                return dataclasses.replace(self, table=table)
        if not _local_file(self.data):  # a Spark DataFrame or URI: counted where it is, never read here
            return self
        if self.backend == "numpy" and self.read.memory_limit is not None:
            check_memory(self.data, len(self.names), self.read.memory_limit)
        with warnings.catch_warnings():
            from ddssp.data.tables import UnnamedColumnWarning

            warnings.simplefilter("ignore", UnnamedColumnWarning)  # said once, when the header was read
            frame = read_rows(self.data, self.read)
        return dataclasses.replace(self, frame=frame[self.names])

    def counted(self, dropped: Sequence[str]) -> tuple[Any, str, list[str] | None]:
        """What the counting layer counts once the schema is planned, with which backend and which of
        its columns.

        Parameters
        ----------
        dropped : sequence of str
            Columns planning left out of the release.

        Returns
        -------
        table : pandas.DataFrame, path or Spark DataFrame
            The table in memory without ``dropped``, or the file itself when the backend can read it.
        backend : str
        columns : list of str or None
            The columns of a file or Spark table to count (its others are never read), or None when
            ``table`` holds exactly the released columns.
        """
        kept = [c for c in self.names if c not in set(dropped)]
        if isinstance(self.data, pd.DataFrame):
            return (self.frame[kept] if dropped else self.frame), self.backend, None
        if self.frame is not None and (self.backend == "numpy" or not self.direct or dropped):
            return self.frame[kept], "numpy", None
        if not self.direct:
            raise DataError(
                f"{self.data}: a header cell is empty, so the {self.backend} backend cannot name its "
                "columns; name every column in the header"
            )
        return self.data, self.backend, kept


def coded_source(codes: pd.DataFrame, schema: Any, read: ReadOptions) -> Source:
    """A table of integer codes of ``schema`` (``ReadOptions.encoded``), checked, as a source.

    Parameters
    ----------
    codes : pandas.DataFrame
        One integer column per schema column, codes in 0..size-1.
    schema : Schema
        The schema the codes are of.
    read : ReadOptions
        How the table is read.

    Returns
    -------
    Source

    Raises
    ------
    SchemaError
        For a missing column, a column that is not integer-coded, or codes outside the column's range.
    """
    missing = [c for c in schema.names if c not in codes.columns]
    if missing:
        raise SchemaError(f"columns {missing} of the schema are not in the data")
    codes = codes[schema.names]
    domain = schema.domain  # built once: it is a new dict on each access
    for c in schema.names:
        col = codes[c]
        if not np.issubdtype(col.dtype, np.integer):
            raise SchemaError(f"column {c!r} is not integer-coded")
        if col.min() < 0 or col.max() >= domain[c]:
            raise SchemaError(f"column {c!r} has codes outside 0..{domain[c] - 1}")
    codes = codes.astype(np.int64)
    return Source(codes, list(schema.names), "numpy", True, read, frame=codes)


def open_source(data: Any, read: ReadOptions, tell: Callable[[Any], None] | None = None) -> Source:
    """A release's table from its header: the columns used and the backend; no row is read yet.

    Parameters
    ----------
    data : pandas.DataFrame, str, Path or Spark DataFrame
        The table.
    read : ReadOptions
        How it is read (``columns`` / ``drop`` select the columns).
    tell : callable, optional
        Receives a :class:`~ddssp.pipeline.events.Notice` for each header cell that was renamed (an
        empty cell); the warning is raised as well.

    Returns
    -------
    Source

    Raises
    ------
    DataError
        For an unreadable table, or a selection naming columns the table lacks.
    """
    from ddssp.data.counting import default_backend, table_columns
    from ddssp.data.tables import UnnamedColumnWarning, select_columns

    backend = read.backend if read.backend is not None else default_backend(data)
    if isinstance(data, pd.DataFrame):
        names = [str(c) for c in data.columns]
        if read.selects:
            names = select_columns(names, read.columns, read.drop)
            data = data[names]
        return Source(data, names, backend, True, read, frame=data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnnamedColumnWarning)
        header = table_columns(data, read.csv)  # public: the column names only
    renamed = False
    for w in caught:
        if issubclass(w.category, UnnamedColumnWarning):
            renamed = True
            if tell is not None:
                tell(Notice(w.message))
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    names = select_columns(header, read.columns, read.drop)
    return Source(data, names, backend, not renamed, read)


def read_rows(path: Any, read: ReadOptions) -> pd.DataFrame:
    """A table file read in memory as text, with extra missing-value markers turned into missing cells.

    Parameters
    ----------
    path : str or path-like
        A CSV or Parquet file.
    read : ReadOptions
        Its CSV options (delimiter, missing-value markers besides empty cells, text encoding) and its
        column selection, which the caller applies (nested Parquet columns it leaves out are not
        warned of).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    DataError
        For a file that cannot be read.
    """
    from ddssp.data.counting import CsvOptions
    from ddssp.data.tables import read_table

    csv = CsvOptions() if read.csv is None else read.csv
    df = read_table(path, delimiter=csv.delimiter, encoding=csv.encoding, columns=read.columns, drop=read.drop or ())
    if csv.na_values:
        df = df.mask(df.isin(list(csv.na_values)))
    return df


def read_frame(path: Any, read: ReadOptions) -> pd.DataFrame:
    """A table file in memory, restricted to ``read.columns`` / ``read.drop`` (``ddssp schema`` reads so).

    Parameters
    ----------
    path : str or path-like
        A CSV or Parquet file.
    read : ReadOptions
        Its CSV options and the column selection.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    DataError
        For a file that cannot be read, a selection naming columns the table lacks, or one keeping
        a nested Parquet column.
    """
    from ddssp.data.tables import PARQUET_SUFFIXES, select_columns

    if read.selects and Path(path).suffix.lower() in PARQUET_SUFFIXES:
        from ddssp.data.counting import table_columns

        # from the schema, with the nested columns (which the frame lacks), before a row is read
        names = select_columns(table_columns(path, read.csv), read.columns, read.drop)
        return read_rows(path, read)[names]
    df = read_rows(path, read)
    return df[select_columns(list(df.columns), read.columns, read.drop)]


def _discovery_table(source: Source) -> Any:
    """The table as discovery reads it where it lives, or None when the engine cannot name the used
    columns as the header does (a renamed header cell)."""
    from ddssp.data.discovery.source import open_table

    table = open_table(
        source.data,
        source.backend,
        names=source.names,
        csv_options=source.read.csv,
        memory_limit=source.read.memory_limit,
        spark_master=source.read.spark_master,
    )
    if any(n not in table.srcs for n in source.names):
        table.close()
        return None
    if len(table) == 0:  # as the pandas reader refuses it (read_table)
        table.close()
        raise DataError(f"{source.data} has a header but no rows")
    return table


#: bytes a table read in memory by pandas takes per cell, with discovery's working copies (measured on
#: raw Adult, 15 columns: 0.4-0.6 GB per million rows)
PANDAS_BYTES_PER_CELL = 40


def check_memory(path: Any, columns: int, limit: str) -> None:
    """Refuse a table the numpy backend would read in memory when its estimated size is over ``limit``.

    The estimate is the rows (a Parquet file's metadata; a CSV's size over the mean length of its
    first lines) times ``columns`` times :data:`PANDAS_BYTES_PER_CELL`.

    Parameters
    ----------
    path : str or path-like
        The CSV or Parquet file.
    columns : int
        The columns read.
    limit : str
        A size such as ``2GB`` or ``500MB``.

    Raises
    ------
    DataError
        When the estimate is over the limit, or the limit is not a size.
    """
    cap = parse_size(limit)
    rows = estimated_rows(path)
    need = rows * columns * PANDAS_BYTES_PER_CELL
    if need > cap:
        raise DataError(
            f"--memory-limit {limit}: the numpy backend would hold about {need / 1e6:,.0f} MB in memory for "
            f"{rows:,} rows x {columns} columns; use --backend duckdb (or spark), which reads the table where it lives"
        )


def parse_size(text: str) -> int:
    """Bytes of a size such as ``2GB``, ``500MB``, ``1.5GiB`` (DuckDB's spelling).

    Parameters
    ----------
    text : str
        The size.

    Returns
    -------
    int

    Raises
    ------
    DataError
        For text that is not a size.
    """
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?I?B?)\s*", str(text).upper())
    if m is None:
        raise DataError(f"--memory-limit {text!r} is not a size such as 2GB or 500MB")
    unit = m.group(2).rstrip("B")
    base = 1024 if unit.endswith("I") else 1000
    power = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}[unit.rstrip("I")]
    return int(float(m.group(1)) * base**power)


def estimated_rows(path: Any) -> int:
    """The rows of a table file: a Parquet file's metadata, or a CSV's size over the mean length of
    its first lines (an estimate).

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    int
    """
    from ddssp.data.tables import PARQUET_SUFFIXES

    p = Path(path)
    if p.suffix.lower() in PARQUET_SUFFIXES:
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(p).metadata.num_rows)
    with open(p, "rb") as fh:
        head = fh.read(1 << 20)
    lines = max(head.count(b"\n"), 1)
    return int(p.stat().st_size / (len(head) / lines)) if head else 0


def _local_file(data: Any) -> bool:
    from ddssp.data.counting.common import is_spark_frame, is_uri

    return not (is_spark_frame(data) or is_uri(data))
