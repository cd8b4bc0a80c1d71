"""The SQL counter DuckDB and Spark share: the per-column key expressions and the three-step plan
(group rows by key, encode distinct keys by ``Schema.encode``'s rules, count); the dialects and the
columns' sources are in :mod:`.dialect`."""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.columns import Column
from ddssp.data.counting.common import (
    N_STATUS,
    NA_RAW,
    UNKNOWN_RAW,
    CsvOptions,
    Histogram,
    check_columns,
    fill_codes,
    finish_counts,
    int_values,
    isnull,
    pandas_dtype,
)
from ddssp.data.counting.dialect import Dialect, SqlSource
from ddssp.data.counting.typed import axis_sql, typed_series
from ddssp.data.encoding import CLIPPED, MISSING, NONNUM, OK, ClipWarning, classify, domain_hint, show
from ddssp.data.schema import Schema
from ddssp.data.tables import csv_cell
from ddssp.data.values import as_label, first_few
from ddssp.errors import DataError, SchemaError
from ddssp.types import Clique

__all__ = ["SQLCounter", "map_values"]


def _number_sql(d: Dialect, src: SqlSource, na_values: tuple[str, ...]) -> tuple[str, str]:
    """(x, na): the value as DOUBLE (NULL if missing or not numeric) and the SQL condition 'missing'
    that is checked first (:meth:`SqlSource.missing_sql`). For CSV text, only the markers that are
    numbers are looked for first; the empty cell and the other markers are found among the
    non-numeric values (:func:`_bad_or_na_sql`), so that most cells skip the check."""
    v = src.sql
    if src.typed_time:  # a date is not a number (never its ticks since 1970)
        return "CAST(NULL AS DOUBLE)", src.missing_sql(d, na_values)
    if src.family == "text":
        x = f"(CASE WHEN {d.numeric_guard(v)} THEN TRY_CAST({v} AS DOUBLE) END)"
        if not src.csv:
            return x, src.missing_sql(d, na_values)
        numeric_marks = [m for m in na_values if _parses(csv_cell(m))]
        if numeric_marks:
            marks = ", ".join(d.string(csv_cell(m)) for m in numeric_marks)
            return x, f"({v} IS NULL OR TRIM(LEADING ' ' FROM {v}) IN ({marks}))"
        return x, f"({v} IS NULL)"
    return f"CAST({v} AS DOUBLE)", src.missing_sql(d, na_values)


def _bad_or_na_sql(d: Dialect, src: SqlSource, na_values: tuple[str, ...]) -> str:
    """For a value that is neither missing (first check) nor numeric: NA_RAW if it is an empty CSV cell
    or a marker, else UNKNOWN_RAW."""
    if src.family == "text" and src.csv:
        marks = ", ".join(d.string(m) for m in ("", *(csv_cell(m) for m in na_values)))
        return f"(CASE WHEN TRIM(LEADING ' ' FROM {src.sql}) IN ({marks}) THEN {NA_RAW} ELSE {UNKNOWN_RAW} END)"
    return str(UNKNOWN_RAW)


def _parses(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _bin_sql(d: Dialect, x: str, edges: Sequence[float]) -> str:
    """Bin code of x (not NULL): searchsorted(edges, x, 'right') - 1 clipped into the end bins."""
    m = len(edges) - 1
    whens = " ".join(f"WHEN {x} < {d.double(edges[i + 1])} THEN {i}" for i in range(m - 1))
    return f"(CASE {whens} ELSE {m - 1} END)" if whens else "0"


# --------------------------------------------------------------------------- time axes in SQL
# The text of :mod:`ddssp.data.dates` that SQL parses itself: ISO dates / timestamps and clock times
# in ASCII digits, nothing around them. Anything else (spaces, other digits, impossible dates) is
# left to Python's parser, by raw value. ``\z`` (the very end) in both engines' regex dialects.
_ISO_SQL = r"^[0-9]{4}(-[0-9]{2}-|/[0-9]{2}/)[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,9})?)?Z?)?\z"
_CLOCK_SQL = r"^[0-9]{1,2}:[0-9]{2}(:[0-9]{2})?\z"


def _axis_in_sql(col: Column, src: SqlSource) -> bool:
    """A binned date / timestamp / clock-time column read as text, or a binned date / timestamp
    column read from typed dates: parsed and binned in SQL."""
    unit = getattr(col, "unit", None)
    return (
        col.kind == "numeric"
        and col.edges is not None
        and unit is not None
        and (src.family == "text" or (src.typed_time and unit != "time"))
    )


def _axis_layers(d: Dialect, axis: dict[int, tuple[SqlSource, str]], na_values: tuple[str, ...]) -> list[str]:
    """Three select lists over the scanned relation (each layer reads the one before): whether the
    text is one SQL parses, its integer parts, and its value on the axis as ``ddssp_x{i}`` (NULL where
    SQL leaves the value to Python). The arithmetic is :func:`ddssp.data.dates.parse_text`'s and
    :func:`~ddssp.data.dates.parse_clock_text`'s, in the same order, so the doubles are the same."""
    big = "BIGINT"
    l1, l2, l3 = [], [], []
    for i, (src, unit) in axis.items():
        t, p = src.sql, f"ddssp_a{i}_"
        if src.typed_time:  # a typed date: its ticks, then the day and the time of day, then the value
            r, day, x = axis_sql(d, f"{p}t", src.family, src.per_second)
            l1.append(f"{src.key(d)} AS {p}t")
            l2 += [f"{r} AS {p}t_r", f"{day} AS {p}t_d"]
            l3.append(f"{x} AS ddssp_x{i}")
            continue
        m = d.matches(t, _CLOCK_SQL if unit == "time" else _ISO_SQL)
        if na_values:  # a marker is a missing cell even when it reads as a date
            m = f"({m} AND NOT {src.missing_sql(d, na_values)})"
        l1.append(f"{m} AS {p}m")

        def part(expr: str, typ: str = big, p=p) -> str:
            return f"CASE WHEN {p}m THEN TRY_CAST({expr} AS {typ}) END"

        if unit == "time":
            c = f"instr({t}, ':')"
            l2 += [
                f"{part(f'substr({t}, 1, {c} - 1)')} AS {p}h",
                f"{part(f'substr({t}, {c} + 1, 2)')} AS {p}mi",
                f"CASE WHEN length({t}) = {c} + 5 THEN {part(f'substr({t}, {c} + 4, 2)')} ELSE 0 END AS {p}s",
            ]
            ok = f"{p}h <= 23 AND {p}mi <= 59 AND {p}s <= 59"
            x = f"CAST({p}h * 60 + {p}mi AS DOUBLE) + CAST({p}s AS DOUBLE) / {d.double(60.0)}"
        else:
            n = f"length({t})"
            zero = d.string("0")  # ".5" as "0.5": the same double in Python and in both engines
            fr = f"concat({zero}, substr({t}, 20, {n} - 19 - (CASE WHEN {t} LIKE '%Z' THEN 1 ELSE 0 END)))"
            l2 += [
                f"{part(f'substr({t}, 1, 4)')} AS {p}y",
                f"{part(f'substr({t}, 6, 2)')} AS {p}mo",
                f"{part(f'substr({t}, 9, 2)')} AS {p}d",
                f"CASE WHEN {n} >= 16 THEN {part(f'substr({t}, 12, 2)')} ELSE 0 END AS {p}h",
                f"CASE WHEN {n} >= 16 THEN {part(f'substr({t}, 15, 2)')} ELSE 0 END AS {p}mi",
                f"CASE WHEN {n} >= 19 AND substr({t}, 17, 1) = ':' THEN {part(f'substr({t}, 18, 2)')} ELSE 0 END AS {p}s",
                f"CASE WHEN {n} >= 21 AND substr({t}, 20, 1) = '.' THEN {part(fr, 'DOUBLE')} "
                f"ELSE {d.double(0.0)} END AS {p}f",
            ]
            y, mo, dd = f"{p}y", f"{p}mo", f"{p}d"
            leap = f"(({y} % 4 = 0 AND {y} % 100 <> 0) OR {y} % 400 = 0)"
            dim = f"(CASE WHEN {mo} IN (4, 6, 9, 11) THEN 30 WHEN {mo} = 2 THEN (CASE WHEN {leap} THEN 29 ELSE 28 END) ELSE 31 END)"
            ok = (
                f"{y} >= 1 AND {mo} >= 1 AND {mo} <= 12 AND {dd} >= 1 AND {dd} <= {dim} "
                f"AND {p}h <= 23 AND {p}mi <= 59 AND {p}s <= 59"
            )
            # days_from_civil: every operand is >= 0 (years from 1), so integer division is floor
            yy = f"({y} - (CASE WHEN {mo} <= 2 THEN 1 ELSE 0 END))"
            era = d.intdiv(yy, 400)
            yoe = f"({yy} - {era} * 400)"
            doy = f"({d.intdiv(f'153 * (CASE WHEN {mo} > 2 THEN {mo} - 3 ELSE {mo} + 9 END) + 2', 5)} + {dd} - 1)"
            doe = f"({yoe} * 365 + {d.intdiv(yoe, 4)} - {d.intdiv(yoe, 100)} + {doy})"
            days = f"({era} * 146097 + {doe} - 719468)"
            secs = f"CAST({p}h * 3600 + {p}mi * 60 + {p}s AS DOUBLE)"
            x = f"CAST({days} AS DOUBLE) + ({secs} + {p}f) / {d.double(86400.0)}"
        l3.append(f"CASE WHEN {ok} THEN {x} END AS ddssp_x{i}")
    return [", ".join(l1), ", ".join(l2), ", ".join(l3)]


# --------------------------------------------------------------------------- Python side of the plan
def map_values(col: Column, src: SqlSource, values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Final codes and statuses of distinct raw values of a categorical or explicit-level column.

    Missing cells come as None (NULLed in SQL by :meth:`SqlSource.missing_sql`); CSV text's leading
    spaces are skipped here, and the encoding rules are :func:`ddssp.data.encoding.classify`'s, the
    same function ``Schema.encode`` applies. A cell the schema has no level for gets code 0 (an
    error is raised from its status before counts are used).

    Parameters
    ----------
    col : Column
        The column.
    src : SqlSource
        Its source in the relation.
    values : list
        Distinct raw values (None for a missing cell).

    Returns
    -------
    codes : numpy.ndarray
        int64 code of each value.
    status : numpy.ndarray
        int64 status of each value (:func:`ddssp.data.encoding.classify`).
    """
    vals = list(values)
    n = len(vals)
    codes = np.zeros(n, dtype=np.int64)
    status = np.zeros(n, dtype=np.int64)
    if src.family == "text" and src.csv:
        vals = [None if v is None else csv_cell(v) for v in vals]
    isna = np.array([v is None for v in vals], dtype=bool)
    if src.typed_time:  # ticks as the values pandas holds, coded by the same rules
        c, st = classify(col, typed_series(src.family, src.per_second, vals))
        return np.where(c < 0, 0, c), st
    _, fill_na, _ = fill_codes(col)
    status[isna] = MISSING
    codes[isna] = fill_na
    present = [v for v in vals if v is not None]
    if not present:
        return codes, status
    if col.kind == "categorical":
        s = pd.Series(present, dtype=object)
    else:
        dtype = {"text": object, "int": "int64", "float": "float64", "bool": bool}.get(src.family, object)
        try:
            s = pd.Series(present, dtype=dtype)
        except (TypeError, ValueError, OverflowError):
            s = pd.Series(present, dtype=object)
    c, st = classify(col, s)
    idx = np.flatnonzero(~isna)
    codes[idx] = np.where(c < 0, 0, c)
    status[idx] = st
    return codes, status


def _used(srcs: dict[str, SqlSource], columns: list[str] | None) -> dict[str, SqlSource]:
    """The table's columns restricted to ``columns`` (all of them when None), in that order."""
    if columns is None:
        return srcs
    absent = [c for c in columns if c not in srcs]
    if absent:
        raise SchemaError(f"column(s) {first_few(absent)} not in the data (columns: {first_few(list(srcs), 20)})")
    return {c: srcs[c] for c in columns}


def _from_grouping_sets(
    schema: Schema, cliques: list[Clique], sets: list[list[int]], cols: dict[str, np.ndarray]
) -> tuple[dict[int, np.ndarray], dict[Clique, np.ndarray]]:
    """Scatter GROUPING SETS rows into (per-column counts by code x status, clique arrays)."""
    k = len(schema.columns)
    dom = [c.size for c in schema.columns]
    n = int_values(cols["n"])
    present = np.stack([~isnull(cols[f"c{i}"]) for i in range(k)], axis=1)
    codes = {i: int_values(cols[f"c{i}"]) for i in range(k)}
    weights = 1 << np.arange(k, dtype=object)
    pattern = np.array([sum(int(w) for w, p in zip(weights, row) if p) for row in present], dtype=object)

    def rows_of(s: list[int]) -> np.ndarray:
        return pattern == sum(1 << i for i in s)

    oneway = {}
    for i in range(k):
        sel = rows_of([i])
        st = int_values(cols[f"s{i}"])[sel]
        arr = np.zeros((dom[i], N_STATUS), dtype=np.int64)
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


# --------------------------------------------------------------------------- the SQL backends
class SQLCounter:
    """What DuckDB and Spark share: the three-step plan, error checks and result assembly.
    Subclasses provide ``_relation`` (source SQL and columns), ``_fetch`` (run a query, return numpy
    columns), ``_rows`` (run a query, return Python rows), ``_materialize`` (a query into a named
    temporary table) and ``_register`` (a small pandas frame as a named table)."""

    dialect: Dialect
    opts: CsvOptions
    where: str
    #: the table's columns :meth:`marginals` counts (the rest are never read), or None: the table's
    #: columns must then be the schema's
    columns: list[str] | None = None

    def close(self) -> None:  # pragma: no cover - overridden
        """Release the engine (overridden by each backend)."""
        pass

    def _check_types(self, names: Iterable[str], srcs: dict[str, SqlSource]) -> None:
        for name in names:
            if srcs[name].family is None:
                raise DataError(
                    f"column {name!r} has a type the {self.dialect.name} backend does not encode (it reads "
                    "text, integer, floating-point, boolean, date and timestamp columns); use --backend numpy"
                )

    # ----------------------------------------------------------------- marginals
    def marginals(self, schema: Schema, cliques: list[Clique]) -> dict[Clique, np.ndarray]:
        """Exact counts of the encoded table on each clique.

        Parameters
        ----------
        schema : Schema
            Encodes the table.
        cliques : list of tuple of str
            The column sets to count.

        Returns
        -------
        dict
            ``{clique: int64 array}`` of shape ``[size of each column]``.

        Raises
        ------
        DataError
            For a table without rows, or a column type the backend does not encode.
        SchemaError
            When the table does not encode under the schema.
        """
        d = self.dialect
        relation, srcs = self._relation()
        srcs = _used(srcs, self.columns)
        check_columns(schema, list(srcs))
        self._check_types(schema.names, srcs)
        na_values = self.opts.na_values
        # (1) one scan: group rows by one key per column
        keys, mapped = [], []
        axis = {i: (srcs[c.name], c.unit) for i, c in enumerate(schema.columns) if _axis_in_sql(c, srcs[c.name])}
        for i, col in enumerate(schema.columns):
            src = srcs[col.name]
            # binned numbers: the bin in SQL. A binned date column's text: parsed and binned in SQL
            # when it is plain ISO text (the bin and the clip flag; the raw value is then NULL), else
            # grouped by raw value like the rest, and encoded below by Python's rules
            if i in axis:
                x = f"ddssp_x{i}"
                lo, hi = col.bounds
                keys.append(f"CASE WHEN {x} IS NOT NULL THEN {_bin_sql(d, x, col.edges)} END AS b{i}")
                keys.append(f"COALESCE({x} < {d.double(lo)} OR {x} > {d.double(hi)}, FALSE) AS k{i}")
                raw = f"ddssp_a{i}_t" if src.typed_time else src.sql  # a typed date's ticks
                keys.append(f"CASE WHEN {x} IS NULL AND NOT {src.missing_sql(d, na_values)} THEN {raw} END AS v{i}")
                mapped.append(i)
            elif col.kind == "numeric" and col.edges is not None and getattr(col, "unit", None) is None:
                x, na = _number_sql(d, src, na_values)
                lo, hi = col.bounds
                keys.append(
                    f"CASE WHEN {na} THEN {NA_RAW} WHEN {x} IS NULL OR isnan({x}) THEN {_bad_or_na_sql(d, src, na_values)} "
                    f"ELSE {_bin_sql(d, x, col.edges)} END AS b{i}"
                )
                keys.append(f"COALESCE({x} < {d.double(lo)} OR {x} > {d.double(hi)}, FALSE) AS k{i}")
            else:  # a missing cell (NaN, an empty CSV cell, a marker): one NULL key
                keys.append(f"CASE WHEN {src.missing_sql(d, na_values)} THEN NULL ELSE {src.key(d)} END AS v{i}")
                mapped.append(i)
        key_names = ", ".join(k.rsplit(" AS ", 1)[1] for k in keys)
        source = relation
        for j, layer in enumerate(_axis_layers(d, axis, na_values) if axis else []):
            source = f"(SELECT *, {layer} FROM {source}) ddssp_l{j}"
        comp = self._materialize(
            "ddssp_grouped",
            f"SELECT {key_names}, COUNT(*) AS n FROM (SELECT {', '.join(keys)} FROM {source}) t GROUP BY {key_names}",
        )
        oneway, arrays = self._encode_and_count(comp, schema, cliques, srcs, mapped, set(axis))
        errors: list[str] = []
        rows = int(oneway[0].sum())  # every row has one code and status in each column's counts

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
                    f'column {col.name!r}: {n_missing} missing (empty) value(s); fill them or declare a "missing" level'
                )
            elif n_clip and not col.clip:
                errors.append(
                    f"column {col.name!r}: {n_clip} value(s) outside [{show(col, lo)}, {show(col, hi)}]"
                    + (domain_hint(col) or '; this column is not clipped ("clip": false)')
                )
            elif n_clip:
                note = ClipWarning(col.name, n_clip, show(col, lo), show(col, hi), total=rows)
                warnings.warn(note, stacklevel=5)

        out = finish_counts(schema, cliques, oneway, arrays, check)
        if errors:
            raise SchemaError(errors[0])
        return out

    def _encode_and_count(
        self,
        comp: str,
        schema: Schema,
        cliques: list[Clique],
        srcs: dict[str, SqlSource],
        mapped: list[int],
        binned: Collection[int] = (),
    ):
        """(2) encode each column's distinct raw values in Python, by Schema.encode's rules, join the
        codes to the grouped rows, and (3) count every marginal in one GROUPING SETS query. Rows of
        a ``binned`` column (mapped too) with a bin from SQL take it; the rest go by raw value."""
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
            fill_bad, fill_na, fill_nonnum = fill_codes(col)  # 0 where no level: an error is raised first
            if i in mapped:
                distinct = distinct_of[i]
                codes, status = map_values(col, srcs[col.name], distinct)
                frame = pd.DataFrame(
                    {
                        "key": pd.Series(distinct, dtype=pandas_dtype(srcs[col.name].key_family)),
                        "code": codes,
                        "st": status,
                    }
                )
                m = self._register(f"ddssp_map{i}", frame, srcs[col.name].key_family)
                joins.append(f"LEFT JOIN {m} m{i} ON g.v{i} = m{i}.key")
                st = f"CASE WHEN g.v{i} IS NULL THEN {MISSING} ELSE m{i}.st END"
                code = f"CASE WHEN g.v{i} IS NULL THEN {fill_na} ELSE m{i}.code END"
                if i in binned:
                    st = f"CASE WHEN g.b{i} IS NOT NULL THEN (CASE WHEN g.k{i} THEN {CLIPPED} ELSE {OK} END) ELSE {st} END"
                    code = f"CASE WHEN g.b{i} IS NOT NULL THEN g.b{i} ELSE {code} END"
                enc.append(f"{st} AS s{i}")
                enc.append(f"{code} AS c{i}")
            else:
                enc.append(
                    f"CASE WHEN g.b{i} = {NA_RAW} THEN {MISSING} WHEN g.b{i} = {UNKNOWN_RAW} THEN {NONNUM} "
                    f"WHEN g.k{i} THEN {CLIPPED} ELSE {OK} END AS s{i}"
                )
                enc.append(
                    f"CASE WHEN g.b{i} = {NA_RAW} THEN {fill_na} WHEN g.b{i} < 0 THEN {fill_nonnum} "
                    f"ELSE g.b{i} END AS c{i}"
                )
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
        gs = ", ".join("(" + ", ".join(f"c{i}" for i in s) + (f", s{s[0]}" if len(s) == 1 else "") + ")" for s in sets)
        cols_c = ", ".join(f"c{i}" for i in range(k))
        cols_s = ", ".join(f"s{i}" for i in range(k))
        cols = self._fetch(f"SELECT {cols_c}, {cols_s}, SUM(n) AS n FROM ({enc_sql}) e GROUP BY GROUPING SETS ({gs})")
        return _from_grouping_sets(schema, cliques, sets, cols)

    def _bad_message(self, col: Column, n_bad: int) -> str:
        if col.kind == "categorical":
            return (
                f"column {col.name!r}: {n_bad} value(s) not among the schema's levels"
                f"{domain_hint(col) or '; add them to the levels or declare a missing/other level'}"
            )
        if col.edges is None:
            return (
                f"column {col.name!r}: {n_bad} value(s) not numeric or not among the declared levels"
                f"{domain_hint(col) or '; use bin edges or declare a missing level'}"
            )
        return (
            f"column {col.name!r} is numeric but has {n_bad} non-numeric value(s); fix the data, "
            "declare a missing level, or make the column categorical"
        )

    # ----------------------------------------------------------------- discovery counts
    def labels(self, columns: list[str]) -> dict[str, dict[str | None, int]]:
        """Exact counts of the distinct labels (as strings) of each column.

        Parameters
        ----------
        columns : list of str
            The columns to count.

        Returns
        -------
        dict
            ``{column: {label: count}}``; the key None counts the missing cells.
        """
        relation, srcs = self._relation()
        for name in columns:
            if name not in srcs:
                raise SchemaError(f"column {name!r} is not in the data (columns: {first_few(list(srcs), 20)})")
        self._check_types(columns, srcs)
        d, na_values = self.dialect, self.opts.na_values
        sel = ", ".join(
            f"CASE WHEN {srcs[name].missing_sql(d, na_values)} THEN NULL ELSE {srcs[name].key(d)} END AS l{j}"
            for j, name in enumerate(columns)
        )
        keys = ", ".join(f"l{j}" for j in range(len(columns)))
        gid = ", ".join(f"GROUPING(l{j}) AS g{j}" for j in range(len(columns)))
        gs = ", ".join(f"(l{j})" for j in range(len(columns)))
        rows = self._rows(
            f"SELECT {keys}, {gid}, COUNT(*) AS n FROM (SELECT {sel} FROM {relation}) t GROUP BY GROUPING SETS ({gs})"
        )
        k = len(columns)
        out: dict[str, dict[str | None, int]] = {name: {} for name in columns}
        for j, name in enumerate(columns):
            src = srcs[name]
            mine = [r for r in rows if r[k + j] == 0]
            typed = typed_series(src.family, src.per_second, [r[j] for r in mine]) if src.typed_time else None
            for q, r in enumerate(mine):
                v = r[j] if typed is None else typed.iloc[q]  # a typed date: the value pandas holds
                if v is pd.NaT:
                    v = None
                if src.family == "text" and src.csv and v is not None:
                    v = csv_cell(v)  # missing cells are NULL already (SqlSource.missing_sql)
                key = None if v is None else as_label(v)
                out[name][key] = out[name].get(key, 0) + int(r[2 * k])
        return out

    def histograms(self, edges: Mapping[str, list[float]]) -> dict[str, Histogram]:
        """Exact counts of numeric columns on given edges.

        Parameters
        ----------
        edges : mapping of str to list of float
            ``{column: edges}``.

        Returns
        -------
        dict
            ``{column: Histogram}``.
        """
        d = self.dialect
        relation, srcs = self._relation()
        for name in edges:
            if name not in srcs:
                raise SchemaError(f"column {name!r} is not in the data (columns: {first_few(list(srcs), 20)})")
        self._check_types(list(edges), srcs)
        sel, meta = [], []
        for j, (name, e) in enumerate(edges.items()):
            src = srcs[name]
            x, na = _number_sql(d, src, self.opts.na_values)
            # -4 missing, -3 non-numeric, -2 below, -1 above (remapped from NA_RAW / UNKNOWN_RAW)
            sel.append(
                f"CASE WHEN {na} THEN -4 WHEN {x} IS NULL OR isnan({x}) THEN "
                f"(CASE WHEN {_bad_or_na_sql(d, src, self.opts.na_values)} = {NA_RAW} THEN -4 ELSE -3 END) "
                f"WHEN {x} < {d.double(e[0])} THEN -2 WHEN {x} > {d.double(e[-1])} THEN -1 "
                f"ELSE {_bin_sql(d, x, e)} END AS h{j}"
            )
            meta.append((name, np.asarray(e, dtype=float)))
        keys = ", ".join(f"h{j}" for j in range(len(meta)))
        gs = ", ".join(f"(h{j})" for j in range(len(meta)))
        cols = self._fetch(
            f"SELECT {keys}, COUNT(*) AS n FROM (SELECT {', '.join(sel)} FROM {relation}) t "
            f"GROUP BY GROUPING SETS ({gs})"
        )
        n = np.asarray(cols["n"], dtype=np.int64)
        out = {}
        for j, (name, e) in enumerate(meta):
            ok = ~isnull(cols[f"h{j}"])
            hv, nv = int_values(cols[f"h{j}"])[ok], n[ok]
            counts = np.zeros(len(e) - 1, dtype=np.int64)
            inb = hv >= 0
            np.add.at(counts, hv[inb], nv[inb])
            sp = {c: int(nv[hv == c].sum()) for c in (-4, -3, -2, -1)}
            out[name] = Histogram(e, counts, sp[-2], sp[-1], sp[-4], sp[-3])
        return out
