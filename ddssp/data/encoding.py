"""DataFrame <-> integer codes under a :class:`~ddssp.data.schema.Schema`.

:func:`encode` maps labels and numeric values to codes (clipping numeric values outside declared
bounds, with one local :class:`ClipWarning` per column, and a number between two explicit levels to
the nearest one; unknown labels and missing values go to a declared missing level or raise
:class:`~ddssp.errors.SchemaError`). :func:`decode` maps codes back to
labels and representative values, or (synthetic rows, given a generator) to values drawn inside each
bin by the column's within-bin distribution. ``Schema.encode`` / ``Schema.decode`` call these.

A numeric column with a ``unit`` ("date" / "timestamp" / "time") reads ISO dates and timestamps as
days since 1970-01-01, clock times as minutes since midnight (:mod:`ddssp.data.dates`; anything else
in it is a non-numeric value, to its ``na`` level) and decodes to ISO text.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import pandas as pd

from ddssp.data.columns import INFER_MISSING_LABEL, Column
from ddssp.data.dates import format_days, is_datetime_dtype, parse_axis
from ddssp.data.drawing import draw_within, strata_order
from ddssp.data.values import as_label, first_few, format_number, nearest_level, numeric_label
from ddssp.errors import SchemaError


class _Columns(Protocol):
    """What encode and decode read of a :class:`~ddssp.data.schema.Schema` (this module sits below
    the schema, which calls it)."""

    columns: list[Column]
    names: list[str]
    _by_name: dict[str, Column]


class ClipWarning(UserWarning):
    """Numeric values outside a column's range were clipped (a local note for the data holder).

    Every counting backend warns with one of these per clipped column, its message made from its
    fields by one function, word for word the same for every backend; readers (the release's summary
    of many notes, the CLI's note) read the fields, never the text. :meth:`merged` makes one note of
    the notes of many columns.

    Parameters
    ----------
    column : str
        The column.
    clipped : int
        How many of its values were clipped.
    lo, hi : str
        The range they were clipped to, as shown to people (:func:`show`).
    total : int, optional
        How many values the column has (None when not known).
    how : str, optional
        Where the range came from, said in the message: "declared" or "discovered under DP"; ""
        says nothing; None (the backends' default) says "declared, or discovered under DP" (a
        release rewords it with :meth:`with_how` once it knows which columns it discovered).

    Attributes
    ----------
    column, clipped, lo, hi, total, how
        As given; on a :meth:`merged` note all None but ``how``.
    parts : tuple of ClipWarning
        The notes of one column each: ``(self,)``, or those a :meth:`merged` note holds.
    """

    def __init__(
        self, column: str, clipped: int, lo: str, hi: str, total: int | None = None, how: str | None = None
    ) -> None:
        self.column, self.clipped, self.lo, self.hi, self.total, self.how = column, clipped, lo, hi, total, how
        self.parts: tuple[ClipWarning, ...] = (self,)
        super().__init__(_clip_message(column, clipped, lo, hi, total, how))

    def __reduce__(self):
        if self.column is None:
            return (type(self).merged, (self.parts,))
        return (type(self), (self.column, self.clipped, self.lo, self.hi, self.total, self.how))

    def with_how(self, how: str) -> ClipWarning:
        """The same note saying where its range came from.

        Parameters
        ----------
        how : str
            "declared", "discovered under DP", or "" (say nothing).

        Returns
        -------
        ClipWarning
            A new note; this one is unchanged.
        """
        return type(self)(self.column, self.clipped, self.lo, self.hi, self.total, how)

    @classmethod
    def merged(cls, parts: Sequence[ClipWarning]) -> ClipWarning:
        """One note for the notes of many columns (a wide table would otherwise print a line each).

        Parameters
        ----------
        parts : sequence of ClipWarning
            Notes of one column each (a merged note's ``parts`` are taken in its place).

        Returns
        -------
        ClipWarning
            The note; it says where the ranges came from when every part says the same.
        """
        flat = tuple(p for note in parts for p in note.parts)
        hows = {p.how for p in flat}
        how = hows.pop() if len(hows) == 1 else ""
        note = cls.__new__(cls)
        note.column = note.clipped = note.lo = note.hi = note.total = None
        note.how, note.parts = how, flat
        Warning.__init__(note, _clip_message_many(flat, how))
        return note


#: how a clipping note names its range before the caller knows where it came from
_EITHER = "declared, or discovered under DP"
_LOCAL = "(local note for the data holder; nothing about this is released)"


def _count(clipped: int, total: int | None) -> str:
    return f"{clipped}" if total is None else f"{clipped} of {total}"


def _how(how: str | None) -> str:
    how = _EITHER if how is None else how
    return f" ({how})" if how else ""


def _clip_message(column: str, clipped: int, lo: str, hi: str, total: int | None, how: str | None) -> str:
    """The message of a :class:`ClipWarning` about one column (the fields as documented there)."""
    return (
        f"column {column!r}: {_count(clipped, total)} value(s) outside the schema's range [{lo}, {hi}]"
        f"{_how(how)} were clipped to it {_LOCAL}"
    )


def _clip_message_many(parts: Sequence[ClipWarning], how: str | None) -> str:
    """The message of a :class:`ClipWarning` merging the notes of ``parts`` (one column each, named
    in this order with their counts and ranges)."""
    listed = "; ".join(f"{p.column!r} {_count(p.clipped, p.total)} to [{p.lo}, {p.hi}]" for p in parts)
    return f"values outside the schema's range{_how(how)} were clipped to it in {len(parts)} columns: {listed} {_LOCAL}"


def encode(schema: _Columns, df: pd.DataFrame) -> pd.DataFrame:
    """Integer codes of a table of raw values, by each column's rules (:func:`classify`).

    Parameters
    ----------
    schema : Schema
        The columns and their levels, bins and bounds.
    df : pandas.DataFrame
        Raw values (labels, numbers, empty cells), one column per schema column.

    Returns
    -------
    pandas.DataFrame
        Integer codes (int64), columns in schema order, same index as ``df``.

    Raises
    ------
    SchemaError
        When the columns differ from the schema, for unknown labels and missing values (unless the
        column has a ``missing`` level), non-numeric values in numeric columns, and codes outside a
        domain file's sizes.

    Warns
    -----
    ClipWarning
        Numeric values outside the column's range are clipped, one note per column saying how many.
    """
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"encode needs a pandas DataFrame, got {type(df).__name__}")
    cols = [str(c) for c in df.columns]
    if len(set(cols)) < len(cols):
        dup = sorted({c for c in cols if cols.count(c) > 1})
        raise SchemaError(f"the data has duplicate column names: {first_few(dup)}")
    extra = [c for c in cols if c not in schema._by_name]
    if extra:
        raise SchemaError(
            f"the data has column(s) not in the schema: {first_few(extra)}; add them to the schema "
            "or drop them from the data"
        )
    absent = [n for n in schema.names if n not in set(cols)]
    if absent:
        raise SchemaError(
            f"schema column(s) missing from the data: {first_few(absent)}; the data has {first_few(cols, 20)}"
        )
    data = df.copy()
    data.columns = cols
    out = {c.name: _encode_column(c, data[c.name]) for c in schema.columns}
    return pd.DataFrame(out, index=df.index, columns=schema.names)


#: What happened to a cell on its way to a code. :func:`classify` decides it once for every reader:
#: :func:`encode` (pandas) and the counting backends (DuckDB, Spark) both apply its verdicts.
#: OK: a level; CLIPPED: outside the column's range (clipped into an end level, or refused when the
#: column is not clipped); BAD: an unknown label / a number between levels (to the ``missing``
#: level); MISSING: an empty cell (to the ``na`` level); NONNUM: text in a numeric column (to the
#: ``na`` level, like an empty cell).
OK, CLIPPED, BAD, MISSING, NONNUM = 0, 1, 2, 3, 4


def classify(col: Column, s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The code and the status (:data:`OK`, :data:`CLIPPED`, ...) of every cell under a column's rules.

    The code is -1 where the rules need a level the column does not have (an unknown label without a
    ``missing`` level, an empty cell without an ``na`` level, a value outside a column that is not
    clipped): :func:`encode` refuses those, naming them.

    Parameters
    ----------
    col : Column
        The column's rules.
    s : pandas.Series
        The raw values.

    Returns
    -------
    codes : numpy.ndarray
        int64 codes, -1 where no level fits.
    status : numpy.ndarray
        One status code per cell.
    """
    if col.kind == "categorical":
        return _classify_categorical(col, s)
    return _classify_numeric(col, s)


def _classify_categorical(col: Column, s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    isna = s.isna().to_numpy()
    codes = np.full(len(s), -1, dtype=np.int64)
    status = np.zeros(len(s), dtype=np.int64)
    lookup = {lab: i for i, lab in enumerate(col.labels)}
    present = s[~isna]
    uniq = pd.unique(present)
    ulabels = [as_label(v) for v in uniq]
    ucodes = np.array([lookup.get(lab, lookup.get(numeric_label(lab), -1)) for lab in ulabels], dtype=np.int64)
    if len(uniq):
        codes[~isna] = ucodes[pd.Index(uniq).get_indexer(present)]
    unknown = ~isna & (codes < 0)
    status[unknown] = BAD
    status[isna] = MISSING
    mc, nc = col.missing_code, col.na_code
    codes[unknown] = -1 if mc is None else mc
    codes[isna] = -1 if nc is None else nc
    return codes, status


def parse_numeric(s: pd.Series) -> np.ndarray:
    """A column's values as float: text stripped, unparseable and missing cells NaN.

    The numeric parse of :func:`encode`, shared with the counting backends so they agree cell by cell.
    Typed dates and timestamps are not numbers (NaN): a date column reads them on its time axis.

    Parameters
    ----------
    s : pandas.Series
        The raw values.

    Returns
    -------
    numpy.ndarray
        float64 values.
    """
    isna = s.isna().to_numpy()
    if is_datetime_dtype(s.dtype):
        return np.full(len(s), np.nan)
    if isinstance(s.dtype, pd.StringDtype):
        # each distinct text parsed once (a column repeats few values over many rows); missing: -1
        codes, uniques = pd.factorize(s)
        xu = pd.to_numeric(pd.Series(np.asarray(uniques, dtype=object)).str.strip(), errors="coerce")
        xu = np.append(xu.to_numpy(dtype=float, na_value=np.nan), np.nan)
        return xu[codes]  # code -1 picks the appended NaN
    if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
        x = pd.to_numeric(
            s.astype(object).where(~isna, None).map(lambda v: v.strip() if isinstance(v, str) else v), errors="coerce"
        )
    else:
        try:
            x = pd.to_numeric(s, errors="coerce")
        except (TypeError, ValueError):
            x = pd.to_numeric(s.astype(object), errors="coerce")
    return x.to_numpy(dtype=float, na_value=np.nan)


def parse_column(col: Column, s: pd.Series) -> np.ndarray:
    """A numeric column's values as float by its rules.

    Days since 1970-01-01 for a date column, minutes since midnight for a clock-time column
    (:func:`ddssp.data.dates.parse_axis`), else :func:`parse_numeric`.

    Parameters
    ----------
    col : Column
        The numeric column.
    s : pandas.Series
        Its raw values.

    Returns
    -------
    numpy.ndarray
        Float values; NaN for missing cells and for values that do not parse.
    """
    if getattr(col, "unit", None) is not None:
        return parse_axis(s, col.unit)
    return parse_numeric(s)


def _classify_numeric(col: Column, s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    isna = s.isna().to_numpy()
    x = parse_column(col, s)
    codes = np.full(len(s), -1, dtype=np.int64)
    status = np.zeros(len(s), dtype=np.int64)
    mc, nc = col.missing_code, col.na_code
    miss = np.isnan(x)
    status[miss & ~isna] = NONNUM
    status[isna] = MISSING
    codes[miss] = -1 if nc is None else nc
    xv = x[~miss]
    lo, hi = col.bounds
    out = (xv < lo) | (xv > hi)
    levels_mode = col.edges is None
    # explicit levels, not clipped, with a missing/other level: values outside go to that level
    to_other = out & (not col.clip) & (mc is not None) & levels_mode
    st = np.where(out & ~to_other, CLIPPED, OK)
    xc = np.clip(xv, lo, hi)
    n = col.size - (mc is not None)
    if not levels_mode:
        e = np.asarray(col.edges, dtype=float)
        c = np.clip(np.searchsorted(e, xc, side="right") - 1, 0, n - 1)
    else:
        levels = col.values[:n]
        c = np.clip(np.searchsorted(levels, xc, side="left"), 0, n - 1)
        off = levels[c] != xc
        if col.clip:  # between two levels: the nearest one (a 2.5 among whole numbers)
            if off.any():
                c[off] = nearest_level(levels, xc[off])
        else:
            inside_off = off & ~out
            c[inside_off] = -1 if mc is None else mc
            st[inside_off] = BAD
    if not col.clip:
        c[to_other] = mc if mc is not None else -1
        c[out & ~to_other] = -1  # refused: the column is not clipped
    codes[~miss] = c
    status[~miss] = st
    return codes, status


def _encode_column(col: Column, s: pd.Series) -> np.ndarray:
    """Codes of one column by :func:`classify`, refusing what the schema has no level for and noting
    (:class:`ClipWarning`) what was clipped."""
    codes, status = classify(col, s)
    isna = status == MISSING
    if col.kind == "categorical":
        unknown = status == BAD
        if unknown.any() and col.missing_code is None:
            labels = sorted({as_label(v) for v in s[unknown]})
            raise SchemaError(
                f"column {col.name!r}: {len(labels)} value(s) not among the schema's levels: "
                f"{first_few(labels)}{domain_hint(col) or '; add them to the levels or declare a missing/other level'}"
            )
        if isna.any() and col.na_code is None:
            raise SchemaError(
                f"column {col.name!r}: {int(isna.sum())} missing (empty) value(s), e.g. in row(s) "
                f'{first_few(list(s.index[isna]))}; fill them or declare a "missing" level'
            )
        return codes
    nonnum = status == NONNUM
    if nonnum.any() and col.na_code is None:
        vals = sorted({as_label(v) for v in s[nonnum]})
        raise SchemaError(
            f"column {col.name!r} is "
            + ("a date column" if col.unit is not None else "numeric")
            + f" but has {int(nonnum.sum())} "
            + (f"value(s) that do not parse as a {col.unit}" if col.unit is not None else "non-numeric value(s)")
            + f": {first_few(vals)}; fix the data, declare a missing level, or make the column categorical"
        )
    if isna.any() and col.na_code is None:
        raise SchemaError(
            f"column {col.name!r}: {int(isna.sum())} missing (empty) value(s), e.g. in row(s) "
            f'{first_few(list(s.index[isna]))}; fill them or declare a "missing" level'
        )
    clipped = status == CLIPPED
    lo, hi = col.bounds
    if clipped.any():
        if not col.clip:
            x = parse_column(col, s)
            offending = sorted(set(x[clipped].tolist()))
            raise SchemaError(
                f"column {col.name!r}: {int(clipped.sum())} value(s) outside [{show(col, lo)}, {show(col, hi)}]: "
                f"{first_few([show(col, v) for v in offending])}"
                + (domain_hint(col) or '; this column is not clipped ("clip": false)')
            )
        note = ClipWarning(col.name, int(clipped.sum()), show(col, lo), show(col, hi), total=len(s))
        warnings.warn(note, stacklevel=3)
    off = (status == BAD) & (codes < 0)
    if off.any():
        x = parse_column(col, s)
        n = col.size - (col.missing_code is not None)
        levels = col.values[:n]
        offending = sorted(set(x[off].tolist()))
        raise SchemaError(
            f"column {col.name!r}: {int(off.sum())} value(s) not among the declared levels "
            f"{first_few([show(col, v) for v in levels], 8)}: {first_few([show(col, v) for v in offending])}"
            + (domain_hint(col) or "; use bin edges or declare a missing level")
        )
    return codes


def show(col: Column, x: float) -> str:
    """A value of a numeric column as people read it (for messages).

    Parameters
    ----------
    col : Column
        The numeric column.
    x : float
        A value on its axis.

    Returns
    -------
    str
        ISO text on a time axis, else a short number.
    """
    if getattr(col, "unit", None) is not None:
        return str(format_days([x], col.unit)[0])
    return format_number(x)


def domain_hint(col: Column) -> str:
    """The end of an encoding error for a column of codes from a domain file: the domain does not
    fit the data (empty for other columns).

    Parameters
    ----------
    col : Column
        The column.

    Returns
    -------
    str
    """
    if col.is_codes:
        return (
            f"; the domain says column {col.name!r} has size {col.size} (codes "
            f"0..{col.size - 1}) but the data has other values: the domain does not fit the data"
        )
    return ""


def decode(
    schema: _Columns,
    codes: pd.DataFrame | np.ndarray,
    *,
    rng: np.random.Generator | None = None,
    strata: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Labels (categorical, as strings; None for the ``"<missing>"`` level of empty cells) and
    representative values (numeric: int64 when every level value is a whole number and there is no
    missing level, else float with NaN for a missing level; ISO date / timestamp strings for a
    column with a time ``unit``, None for its missing level) from integer codes: a missing value
    comes out missing for every kind (an empty cell in a CSV), ``"<other>"`` stays a label.

    With ``rng`` (synthetic rows), a binned numeric column that has a within-bin distribution
    (:class:`~ddssp.data.columns.Within`) decodes each code to a value drawn inside its bin by that
    distribution instead of the representative value (whole numbers for a whole-number column); the
    value encodes back to the same code. Columns without one, levels and labels decode as above.
    Post-processing of public values: the draw uses ``rng``, never DP noise.

    With ``strata`` too, a column it names draws its values balanced instead of independently
    (:func:`~ddssp.data.drawing.draw_within`): each bin's rows, sorted by the listed columns' codes, get values at
    evenly spread quantiles of the bin's distribution, so every group of rows that share those
    codes gets its share of each part of the bin within about one row. Each row's value still
    follows the bin's distribution.

    Parameters
    ----------
    schema : Schema
        The columns the codes belong to.
    codes : pandas.DataFrame or numpy.ndarray
        Integer codes. A DataFrame may hold any subset of the schema's columns (output in schema
        order); an array must have one column per schema column, in order.
    rng : numpy.random.Generator, optional
        Draw binned numeric values inside their bins (see above); None keeps representative values.
    strata : mapping, optional
        ``{column: columns}``: draw that column's values balanced over the rows' codes of those
        columns, most important first (see above); columns missing from ``codes`` are skipped.

    Returns
    -------
    pandas.DataFrame
        The decoded values.

    Raises
    ------
    SchemaError
        For a column not in the schema, non-integer codes, or codes outside a column's levels.
    """
    if isinstance(codes, pd.DataFrame):
        cols = [str(c) for c in codes.columns]
        extra = [c for c in cols if c not in schema._by_name]
        if extra:
            raise SchemaError(f"cannot decode column(s) not in the schema: {first_few(extra)}")
        names = [n for n in schema.names if n in set(cols)]
        frame = codes.copy()
        frame.columns = cols
        arrays = {n: frame[n].to_numpy() for n in names}
        index = codes.index
    else:
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[1] != len(schema.columns):
            raise SchemaError(f"codes must be a 2-D array with {len(schema.columns)} columns, got shape {arr.shape}")
        names = schema.names
        arrays = {n: arr[:, j] for j, n in enumerate(names)}
        index = None
    out = {}
    for n in names:
        col = schema._by_name[n]
        a = arrays[n]
        try:
            af = np.asarray(a, dtype=float)
        except (TypeError, ValueError):
            raise SchemaError(f"column {n!r}: codes must be integers") from None
        if np.isnan(af).any() or (af != np.round(af)).any():
            raise SchemaError(f"column {n!r}: codes must be integers")
        ai = af.astype(np.int64)
        bad = (ai < 0) | (ai >= col.size)
        if bad.any():
            raise SchemaError(
                f"column {n!r}: codes outside 0..{col.size - 1}: {first_few(sorted(set(ai[bad].tolist())))}"
            )
        if col.kind == "categorical":
            labels = np.asarray(col.labels, dtype=object)
            na = col.na_code
            if na is not None and col.labels[na] == INFER_MISSING_LABEL:  # empty cells' own level
                labels = labels.copy()
                labels[na] = None
            out[n] = labels[ai]
        elif col.unit is not None:  # a time axis: ISO text, drawn inside the bin for synthetic rows
            if rng is not None and col.within is not None:
                v = _readable(col, ai, draw_within(col, ai, rng, strata_order(arrays, strata, n, ai.size, rng)))
            else:
                v = col.values[ai]
            out[n] = format_days(v, col.unit)
        elif rng is not None and col.within is not None:
            v = draw_within(col, ai, rng, strata_order(arrays, strata, n, ai.size, rng))
            out[n] = v.astype(np.int64) if col.integral_values and col.within.whole else v
        else:
            v = col.values[ai]
            out[n] = v.astype(np.int64) if col.integral_values else v
    return pd.DataFrame(out, index=index, columns=names)


def _readable(col: Column, codes: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Values of a time-axis column put on the resolution its text keeps (the day of a date, the
    second of a timestamp, the minute of a clock time), each moved to the nearest such point inside
    its bin when its text would read back outside it: so a drawn value's text encodes back to the
    same code. A bin that holds no such point (narrower than a day / second / minute) keeps its
    values; the missing level stays NaN."""
    ts = col.unit == "timestamp"
    step = 1.0 / 86400.0 if ts else 1.0
    m = len(col.edges) - 1
    x = np.asarray(v, dtype=float)
    ok = np.isfinite(x) & (codes < m)
    i = codes[ok]
    edges = np.asarray(col.edges, dtype=float)
    a, b = edges[i], edges[i + 1]

    def back(t):  # the axis value the text of point t (a day, a second, a minute) reads back as
        if not ts:
            return t
        day = np.floor(t / 86400.0)
        return day + (t - day * 86400.0) / 86400.0

    # the point the text of each value names: the second rounded to, the day / minute it falls in
    t = np.rint(x[ok] / step) if ts else np.floor(x[ok] + (1e-9 if col.unit == "time" else 0.0))
    first = np.ceil(a / step)
    first = first + (back(first) < a) - (back(first - 1) >= a)  # the first point inside the bin
    last = np.ceil(b / step) - 1
    last = last + (back(last + 1) < b) - (back(last) >= b)  # the last point below its upper edge
    out = x.copy()
    out[ok] = np.where(first <= last, np.clip(t, first, np.maximum(first, last)) * step, x[ok])
    return out
