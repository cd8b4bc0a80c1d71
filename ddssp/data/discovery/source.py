"""Where discovery reads its data: a pandas DataFrame in memory, or a table read where it lives.

Discovery reads a table only through a few exact count vectors (:mod:`.slots`, :mod:`.scan`,
:mod:`.labels`, :mod:`.numeric`), each handed straight to a charged mechanism. For a DataFrame the
user already holds, those readers run on pandas. For a file (CSV / Parquet, read by DuckDB) or any
path Spark reads, :class:`SqlTable` stands in for the DataFrame: ``table[name]`` is a
:class:`SqlColumn`, and the readers, given one, ask it for the same counts, computed by aggregate SQL
queries that stream over the table (never a materialised copy). The counts are the same, cell for
cell, as the pandas readers' on the table :func:`ddssp.pipeline.read_rows` reads, so the ledger and a
seeded schema are the same whichever way the table is read.

The raw-text rules are kept exactly by splitting the work:

* missing cells (null, an empty CSV cell, a ``--na-values`` marker; leading spaces of a CSV cell
  skipped) and numbers are classified in SQL, with the counting backends' own rules
  (:mod:`ddssp.data.counting.sql`: the same text-to-number parse ``Schema.encode`` uses);
* every other value (text, ISO dates and timestamps, clock times, and any number SQL leaves to
  Python) is grouped by its distinct raw value, and those distinct values are parsed in Python by
  the very functions the pandas path applies (:func:`~ddssp.data.discovery.slots.parse_numbers`,
  :func:`~ddssp.data.discovery.slots.parse_times_of_text`, :func:`~ddssp.data.values.as_label`);
* a number's scan slot is computed in SQL from ``log10`` as :func:`~.slots.slot_index` does, and a
  number within a hair of a slot boundary (where two ``log10`` implementations could round apart) is
  fetched by value and slotted in numpy.

A column SQL cannot read this way (a typed date or timestamp, a type the counting backends do not
encode, a column whose missing marker comes from a codebook hint) is read in memory on its own, as
the pandas path reads it: the fallback is per column, never for the whole table. What stays in
memory is one count per distinct non-numeric value of the column scanned (and of a categorical
column's labels, which key release needs in full in any case).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.discovery.slots import (
    BAND_LO,
    BAND_PER,
    N_BANDS,
    N_SLOTS,
    N_TIME_CELLS,
    SLOT_HI,
    SLOT_LO,
    ZERO_SLOT,
    parse_numbers,
    parse_times_of_text,
    slot_index,
)
from ddssp.data.discovery.views import MissingView, NumberView, TimeView, _weighted_slots
from ddssp.data.values import as_label

__all__ = ["SqlColumn", "SqlTable", "open_table"]

#: a number whose band coordinate ``(log10|x| - BAND_LO) * BAND_PER`` is this close to a whole
#: number is slotted in numpy (SQL's ``log10`` may round differently from numpy's there)
_NEAR_EDGE = 1e-6


def open_table(
    source: Any,
    backend: str,
    *,
    names: list[str] | None = None,
    csv_options: Any = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
) -> SqlTable:
    """A table discovery reads where it lives (DuckDB over a CSV / Parquet file, or Spark).

    Parameters
    ----------
    source : str, path-like or Spark DataFrame
        The table.
    backend : {"duckdb", "spark"}
        The engine that reads it.
    names : list of str, optional
        The columns discovery sees (all of the table's by default).
    csv_options : CsvOptions, optional
        How a CSV is read (delimiter, missing-value markers, encoding).
    memory_limit : str, optional
        DuckDB's memory limit.
    spark_master : str, optional
        The Spark master of a new session.

    Returns
    -------
    SqlTable
        Call ``close()`` when done.

    Raises
    ------
    DataError
        For an unreadable table or an engine that cannot start.
    """
    from ddssp.data.counting import make_counter

    counter = make_counter(
        source, backend, csv_options=csv_options, memory_limit=memory_limit, spark_master=spark_master
    )
    return SqlTable(counter, names)


class SqlTable:
    """A table discovery reads by aggregate SQL where it lives; it stands in for a DataFrame.

    ``len(table)`` is its row count, iterating it gives the column names, and ``table[name]`` a
    :class:`SqlColumn` (or, for a column read in memory, a pandas Series as
    :func:`ddssp.pipeline.read_rows` reads it).

    Parameters
    ----------
    counter : DuckDBCounter or SparkCounter
        The counting backend whose connection and relation the queries use.
    names : list of str, optional
        The columns discovery sees (all of the relation's by default).
    """

    def __init__(self, counter: Any, names: list[str] | None = None):
        self._counter = counter
        self.dialect = counter.dialect
        self.rel, self.srcs = counter._relation()
        self.names = list(self.srcs) if names is None else [str(n) for n in names]
        self.na_values = tuple(getattr(counter.opts, "na_values", ()) or ())
        self._memory: dict[str, pd.Series] = {}
        self._columns: dict[str, SqlColumn] = {}
        self._n: int | None = None
        self._ordered: str | None = None

    # ------------------------------------------------------------------ the DataFrame face
    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        if self._n is None:
            self._n = int(self.rows(f"SELECT count(*) FROM {self.rel}")[0][0])
        return self._n

    @property
    def columns(self) -> list[str]:
        """The column names."""
        return list(self.names)

    @property
    def engine(self) -> str:
        """``"duckdb"`` or ``"spark"``."""
        return self.dialect.name

    def __getitem__(self, name: str):
        if name in self._memory:
            return self._memory[name]
        src = self.srcs[name]
        if src.family not in ("text", "int", "float", "bool"):
            # a typed date / timestamp, or a type the backends do not encode: this column in memory
            self._memory[name] = self.series(name)
            return self._memory[name]
        if name not in self._columns:
            self._columns[name] = SqlColumn(self, name, src)
        return self._columns[name]

    def assign(self, **columns: pd.Series) -> SqlTable:
        """This table with some columns replaced by Series in memory (``DataFrame.assign``).

        Parameters
        ----------
        **columns : pandas.Series
            The columns to replace.

        Returns
        -------
        SqlTable
        """
        out = copy.copy(self)
        out._memory = {**self._memory, **columns}
        return out

    def close(self) -> None:
        """Release the engine's connection, temporary files and views."""
        self._counter.close()

    # ------------------------------------------------------------------ queries
    def rows(self, sql: str) -> list[tuple]:
        """The rows of a query (a small result: an aggregate).

        Parameters
        ----------
        sql : str
            The query.

        Returns
        -------
        list of tuple
        """
        return self._counter._rows(sql)

    def ordered(self) -> tuple[str, str]:
        """The relation with a column giving each row's position in the table (for the order in
        which pandas meets labels first), and that column's name.

        Returns
        -------
        relation : str
            The SQL relation.
        position : str
            The name of its position column.
        """
        d = self.dialect
        if d.name == "spark":
            return f"(SELECT *, monotonically_increasing_id() AS ddssp_rn FROM {self.rel}) ddssp_o", "ddssp_rn"
        if self.rel.startswith("read_parquet(") and self.rel.endswith(")"):
            return self.rel[:-1] + ", file_row_number = true)", "file_row_number"
        return f"(SELECT *, row_number() OVER () AS ddssp_rn FROM {self.rel}) ddssp_o", "ddssp_rn"

    def ordered_rows(self, sql: str) -> list[tuple]:
        """:meth:`rows` of a query whose row positions must follow the table's order.

        Parameters
        ----------
        sql : str
            The query.

        Returns
        -------
        list of tuple
        """
        if self.dialect.name != "duckdb":
            return self.rows(sql)
        con = self._counter.con
        con.execute("SET preserve_insertion_order = true")
        try:
            return self.rows(sql)
        finally:
            con.execute("SET preserve_insertion_order = false")

    def series(self, name: str) -> pd.Series:
        """One column in memory, as :func:`ddssp.pipeline.read_rows` reads it (the per-column
        fallback).

        Parameters
        ----------
        name : str
            The column.

        Returns
        -------
        pandas.Series
        """
        src = self.srcs[name]
        if src.family == "text":  # missing cells NULL (SqlSource.missing_sql), CSV text's leading spaces skipped
            na = src.missing_sql(self.dialect, self.na_values)
            values = [r[0] for r in self.rows(f"SELECT CASE WHEN {na} THEN NULL ELSE {src.sql} END FROM {self.rel}")]
            s = pd.Series(values, dtype="str", name=name)
            return s.str.lstrip(" ") if src.csv else s
        values = [r[0] for r in self.rows(f"SELECT {src.sql} FROM {self.rel}")]
        if src.typed_time or src.family is None:
            return pd.Series(pd.array(values) if values else values, name=name)
        return (
            pd.Series(values, name=name)
            .convert_dtypes(dtype_backend="numpy_nullable")
            .astype("float64" if any(v is None for v in values) and src.family != "bool" else _numpy_dtype(src.family))
        )


def _numpy_dtype(family: str) -> str:
    return {"int": "int64", "float": "float64", "bool": "object"}.get(family, "object")


class _OddValues:
    """A column's values that are neither missing nor numbers in SQL, by distinct value (after the
    CSV reading rules), with what the pandas readers make of each: its number (a few texts only
    Python parses as one), and its time values."""

    def __init__(self, values: list[str], counts: np.ndarray):
        self.values = values
        self.counts = counts
        s = pd.Series(values, dtype="str")
        self.x, isna = parse_numbers(s)
        self.isna = isna
        self._s = s
        self._times: dict[str, np.ndarray] | None = None

    def times(self) -> dict[str, np.ndarray]:
        if self._times is None:
            self._times = parse_times_of_text(self._s, self.x, self.isna)
        return self._times


class SqlColumn:
    """One column of a :class:`SqlTable`: the exact counts discovery's readers need, by SQL.

    Parameters
    ----------
    table : SqlTable
        The table.
    name : str
        The column name.
    src : SqlSource
        Its SQL expression and type family.
    """

    def __init__(self, table: SqlTable, name: str, src: Any):
        self.table = table
        self.name = name
        self.src = src
        d = table.dialect
        v = src.sql
        self.na = src.missing_sql(d, table.na_values)
        if src.family == "text":
            self.x = f"(CASE WHEN {d.numeric_guard(v)} THEN TRY_CAST({v} AS DOUBLE) END)"
        else:
            self.x = f"CAST({v} AS DOUBLE)"
        self._scan: tuple | None = None
        self._odd: _OddValues | None = None
        self._labels: dict[str, int] | None = None

    # ------------------------------------------------------------------ the Series face
    @property
    def dtype(self):
        """The dtype pandas gives this column."""
        if self.src.family == "text":
            return pd.StringDtype(na_value=np.nan)
        return np.dtype({"int": "int64", "float": "float64"}.get(self.src.family, "object"))

    def series(self) -> pd.Series:
        """The column in memory (the per-column fallback).

        Returns
        -------
        pandas.Series
        """
        return self.table.series(self.name)

    def astype(self, dtype):
        """The column in memory, as ``dtype``.

        Parameters
        ----------
        dtype : dtype
            The dtype.

        Returns
        -------
        pandas.Series
        """
        return self.series().astype(dtype)

    def where(self, cond):
        """The column in memory, missing where ``cond`` is False.

        Parameters
        ----------
        cond : pandas.Series
            Which cells to keep.

        Returns
        -------
        pandas.Series
        """
        return self.series().where(cond)

    def __len__(self) -> int:
        return len(self.table)

    # ------------------------------------------------------------------ SQL pieces
    def _classified(self) -> str:
        """A relation of (cls, x, v): cls 0 missing, 1 a number SQL parses, 2 anything else."""
        d = self.table.dialect
        inner = f"SELECT {self.na} AS na, {self.x} AS x, {self.src.sql} AS v FROM {self.table.rel}"
        num = "(x IS NOT NULL AND NOT isnan(x))"
        return (
            f"(SELECT CASE WHEN na THEN 0 WHEN {num} THEN 1 ELSE 2 END AS cls, x, v FROM ({inner}) ddssp_b) "
            f"{d.ident('ddssp_c')}"
        )

    def _slot_parts(self) -> tuple[str, str, str]:
        """SQL of a number's scan slot, its wholeness, and the number itself when it lies within a
        hair of a slot boundary (else NULL; slotted in numpy)."""
        d = self.table.dialect
        a = "abs(x)"
        lo, hi = d.double(float(SLOT_HI[ZERO_SLOT + 1])), d.double(float(SLOT_LO[N_SLOTS - 1]))
        t = f"((log10({a}) - {d.double(float(BAND_LO))}) * {d.double(float(BAND_PER))})"
        j = f"least(greatest(CAST(floor({t}) AS INT), 0), {N_BANDS - 1})"
        slot = (
            f"CASE WHEN x = 0 THEN {ZERO_SLOT} "
            f"WHEN {a} < {lo} THEN (CASE WHEN x > 0 THEN {ZERO_SLOT + 1} ELSE {N_BANDS + 1} END) "
            f"WHEN {a} >= {hi} THEN (CASE WHEN x > 0 THEN {N_SLOTS - 1} ELSE 0 END) "
            f"WHEN x > 0 THEN {ZERO_SLOT + 2} + {j} ELSE {N_BANDS} - {j} END"
        )
        whole = f"(x % {d.double(1.0)} = {d.double(0.0)})"
        near = f"(x <> 0 AND {a} >= {lo} AND {a} < {hi} AND abs({t} - round({t})) < {d.double(_NEAR_EDGE)})"
        return slot, whole, f"CASE WHEN {near} THEN x END"

    # ------------------------------------------------------------------ the scan
    def _scan_data(self) -> tuple:
        """(missing count, whole numbers by slot, other numbers by slot), from one aggregate query;
        the other values by distinct value go to :attr:`_odd`."""
        if self._scan is not None:
            return self._scan
        slot, whole, near = self._slot_parts()
        q = (
            f"SELECT cls, CASE WHEN cls = 1 THEN {slot} END AS s, CASE WHEN cls = 1 THEN {whole} END AS w, "
            f"CASE WHEN cls = 1 THEN {near} END AS ax, CASE WHEN cls = 2 THEN v END AS ov, count(*) AS n "
            f"FROM {self._classified()} GROUP BY 1, 2, 3, 4, 5"
        )
        miss = 0
        counts = np.zeros((2, N_SLOTS), dtype=np.int64)  # [whole, other] by slot
        edge: list[tuple[float, bool, int]] = []
        odd: dict[str, int] = {}
        for cls, s, w, ax, ov, n in self.table.rows(q):
            n = int(n)
            if cls == 0:
                miss += n
            elif cls == 1:
                if ax is not None:
                    edge.append((float(ax), bool(w), n))
                else:
                    counts[0 if w else 1, int(s)] += n
            else:
                key = self._text(ov)
                odd[key] = odd.get(key, 0) + n
        if edge:
            v = np.array([e[0] for e in edge])
            for (_, w, n), s in zip(edge, slot_index(v)):
                counts[0 if w else 1, int(s)] += n
        keys = list(odd)
        self._odd = _OddValues(keys, np.array([odd[k] for k in keys], dtype=np.int64))
        o = self._odd
        counts += _weighted_slots(o.x, o.counts)
        self._scan = (miss, counts[0], counts[1])
        return self._scan

    def _text(self, v: Any) -> str:
        """A raw text value as pandas holds it (a CSV cell's leading spaces skipped)."""
        v = str(v)
        return v.lstrip(" ") if self.src.csv else v

    def odd(self) -> _OddValues:
        """The values that are neither missing nor numbers in SQL, by distinct value.

        Returns
        -------
        _OddValues
        """
        self._scan_data()
        return self._odd

    def scan_cells(self, with_times: bool) -> np.ndarray:
        """Exact counts of the scan cells (:func:`ddssp.data.discovery.slots.scan_cells`).

        Parameters
        ----------
        with_times : bool
            Count the text values that parse as dates or clock times in the time cells.

        Returns
        -------
        numpy.ndarray
        """
        miss, whole, frac = self._scan_data()
        o = self._odd
        text = np.isnan(o.x) & ~o.isna
        c = o.counts
        cells = np.zeros(N_TIME_CELLS + 2 + 2 * N_SLOTS, dtype=np.int64)
        cells[0] = miss + int(c[o.isna].sum())
        cells[2 : 2 + 2 * N_SLOTS] = np.concatenate([whole, frac])
        if not with_times:
            cells[1] = int(c[text].sum())
            return cells
        t = o.times()
        dated = text & ~np.isnan(t["days"])
        timed = dated & t["has_time"]
        clock = text & ~dated & ~np.isnan(t["minutes"])
        secs = clock & t["has_seconds"]
        cells[1] = int(c[text & ~dated & ~clock].sum())
        cells[-4:] = [
            int(c[dated & ~timed].sum()),
            int(c[timed].sum()),
            int(c[clock & ~secs].sum()),
            int(c[secs].sum()),
        ]
        return cells

    # ------------------------------------------------------------------ the readers' entry points
    def parse_numbers(self) -> tuple[NumberView, MissingView]:
        """The column's numbers and missing cells as views the readers count through.

        Returns
        -------
        numbers : NumberView
        missing : MissingView
        """
        return NumberView(self), MissingView(self)

    def parse_times(self) -> dict[str, Any]:
        """The column's text values parsed as days and minutes, as views.

        Returns
        -------
        dict
            ``{"days": TimeView, "minutes": TimeView}``.
        """
        return {"days": TimeView(self, "days"), "minutes": TimeView(self, "minutes")}

    def label_counts(self) -> dict[str, int]:
        """Exact counts of the column's labels (:func:`ddssp.data.discovery.labels.label_counts`),
        in the order pandas meets them first.

        Returns
        -------
        dict
            ``{label: count}``; missing cells under ``"<missing>"``.
        """
        if self._labels is not None:
            return dict(self._labels)
        from ddssp.data.discovery.scan import MISSING_LABEL

        rel, rn = self.table.ordered()
        v = self.src.sql
        q = (
            f"SELECT na, v, count(*) AS n, min(rn) AS r FROM (SELECT {self.na} AS na, "
            f"CASE WHEN {self.na} THEN NULL ELSE {v} END AS v, {rn} AS rn FROM {rel}) ddssp_l GROUP BY 1, 2"
        )
        rows = self.table.ordered_rows(q)
        missing = sum(int(n) for na, _, n, _ in rows if na)
        out: dict[str, int] = {}
        text = self.src.family == "text"
        for _, value, n, _ in sorted((r for r in rows if not r[0]), key=lambda r: r[3]):
            key = self._text(value) if text else as_label(value)
            out[key] = out.get(key, 0) + int(n)
        if missing:
            out[MISSING_LABEL] = out.get(MISSING_LABEL, 0) + missing
        self._labels = out
        return dict(out)
