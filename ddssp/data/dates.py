"""The time axes of date columns: ISO dates, timestamps and clock times as numbers, and back.

A date column is a numeric column whose numbers are **days since 1970-01-01** (a float; a timestamp
is the day plus the fraction of the day elapsed, so 2003-01-01T12:00 is 12053.5). Binning, ranges,
representative values and regression coefficients (per day) all live on that axis; only reading
(:func:`parse_days`) and writing (:func:`format_days`) see calendar text. The calendar is the
proleptic Gregorian one, years 0001 to 9999, no time zones.

Accepted text (after stripping spaces): ``YYYY-MM-DD`` (a date) and ``YYYY-MM-DD HH:MM``,
``YYYY-MM-DD HH:MM:SS`` or ``YYYY-MM-DD HH:MM:SS.fff`` with ``T`` or a space between date and time
and an optional trailing ``Z`` (a timestamp); the date may also be written ``YYYY/MM/DD`` (year
first, slashes). Decoded values are always written with dashes. Anything else, including impossible dates
(2003-02-30) and time zone offsets, does not parse: it is a non-numeric value of the column (its
missing / other level).

Typed values (Python ``date`` / ``datetime`` objects, pandas datetime64 columns; in the SQL backends
Parquet DATE and TIMESTAMP columns) are read as their ISO text would be, to the same float
(:func:`days_of_ticks`), and never as numbers (their integer ticks since 1970 are not a value of a
numeric column). Time zones: a naive value is read as written (its wall clock, no zone attached); a
time-zone-aware value (pandas ``datetime64[..., tz]``, a ``datetime`` with ``tzinfo``, Parquet
TIMESTAMP adjusted to UTC, DuckDB TIMESTAMPTZ, Spark TIMESTAMP) is an instant and is read as its
wall clock in UTC, whatever the zone it carries or the session's time zone. Its text form is thus
the UTC one (``2021-01-01T23:30Z`` for 2021-01-02T00:30+01:00), and its dates decode in UTC.

A clock-time column (unit "time") holds ``HH:MM`` or ``HH:MM:SS`` (hours 0-23, one or two digits)
as **minutes since midnight** (a float in [0, 1440); 09:30 is 570, 09:30:30 is 570.5), written back
as ``HH:MM`` (the minute the value falls in; an upper bin edge may be 24:00).

Nothing here reads data beyond the values it is given; nothing is private.
"""

from __future__ import annotations

import datetime as _dt
import math
import re

import numpy as np
import pandas as pd

from ddssp.errors import SchemaError

#: the two kinds of time axis a numeric column may have ("unit" in the schema file)
TIME_UNITS = ("date", "timestamp", "time")
#: minutes in a day: the clock-time axis is [0, MINUTES)
MINUTES = 1440.0

_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?Z?)?$",
)


def _dashes(t: str) -> str:
    """``YYYY/MM/DD...`` written with dashes (the year-first form with slashes is as unambiguous)."""
    if len(t) >= 10 and t[4] == "/" and t[7] == "/":
        return f"{t[:4]}-{t[5:7]}-{t[8:]}"
    return t


def days_from_civil(y, m, d) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (vectorised integer arithmetic).

    Parameters
    ----------
    y, m, d : array_like of int
        Year, month (1-12) and day of the month; valid dates (not checked here).

    Returns
    -------
    numpy.ndarray
        int64 days since 1970-01-01 (negative before it).
    """
    y = np.asarray(y, dtype=np.int64) - (np.asarray(m) <= 2)
    m = np.asarray(m, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * np.where(m > 2, m - 3, m + 9) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The calendar dates of whole days since 1970-01-01 (the inverse of :func:`days_from_civil`).

    Parameters
    ----------
    z : array_like of int
        Days since 1970-01-01.

    Returns
    -------
    year, month, day : numpy.ndarray
        int64 arrays.
    """
    z = np.asarray(z, dtype=np.int64) + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    return y + (m <= 2), m, d


#: the axis covers 0001-01-01 .. 9999-12-31 (bounds and edges of a date column must lie inside)
DAY_MIN = float(days_from_civil(1, 1, 1))
DAY_MAX = float(days_from_civil(9999, 12, 31))


def is_datetime_dtype(dtype) -> bool:
    """Whether a pandas dtype holds typed dates or timestamps (numpy datetime64 with or without a
    time zone, pyarrow date and timestamp types): never numbers.

    Parameters
    ----------
    dtype : dtype
        A pandas Series' dtype.

    Returns
    -------
    bool
    """
    return bool(pd.api.types.is_datetime64_any_dtype(dtype))


def days_of_ticks(ticks, per_second: int) -> tuple[np.ndarray, np.ndarray]:
    """Days since 1970-01-01 of integer times since 1970-01-01T00:00, by the arithmetic of
    :func:`parse_text`, so a typed value and its ISO text give the same float.

    The day is the floor of the ticks by the day; the rest is seconds and their fraction, added as
    the text's ``HH:MM:SS`` and ``.fff`` are: ``day + (seconds + fraction) / 86400``. The SQL
    backends compute the same expression from the same integers.

    Parameters
    ----------
    ticks : array_like of int
        Whole days since 1970-01-01 (``per_second`` 0) or ticks since 1970-01-01T00:00 at
        ``per_second`` ticks a second (1, 1e3, 1e6 or 1e9).
    per_second : int
        Ticks per second; 0 for whole days.

    Returns
    -------
    days : numpy.ndarray
        Days since 1970-01-01 as float; NaN for a day outside 0001-01-01 .. 9999-12-31 (its text
        would not be an ISO date).
    has_time : numpy.ndarray
        Whether the time of day is not midnight.
    """
    t = np.asarray(ticks, dtype=np.int64)
    u = max(int(per_second), 1)
    if per_second == 0:
        day, sod = t, np.zeros_like(t)
    else:
        day = np.floor_divide(t, 86400 * u)
        sod = t - day * (86400 * u)
    secs = sod // u
    days = day.astype(float) + (secs + (sod - secs * u) / float(u)) / 86400.0
    out = (day < DAY_MIN) | (day > DAY_MAX)
    days[out] = np.nan
    return days, (sod != 0) & ~out


def _days_in_month(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    base = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(m, 1, 12) - 1]
    return base + ((m == 2) & leap)


def parse_text(values: list) -> tuple[np.ndarray, np.ndarray]:
    """ISO dates and timestamps of a list of strings as days since 1970-01-01.

    Parameters
    ----------
    values : list
        Strings (anything else does not parse).

    Returns
    -------
    days : numpy.ndarray
        Days since 1970-01-01 as float (a timestamp adds the fraction of its day); NaN where the
        text is not an ISO date or timestamp.
    has_time : numpy.ndarray
        Whether the text carried a time of day.
    """
    n = len(values)
    days = np.full(n, np.nan)
    has_time = np.zeros(n, dtype=bool)
    rows, parts = [], []
    for i, v in enumerate(values):
        m = _ISO.match(_dashes(v.strip())) if isinstance(v, str) and len(v) <= 64 else None
        if m is not None:
            rows.append(i)
            parts.append(m.groups())
    if not rows:
        return days, has_time
    idx = np.asarray(rows)
    y = np.array([int(p[0]) for p in parts], dtype=np.int64)
    mo = np.array([int(p[1]) for p in parts], dtype=np.int64)
    d = np.array([int(p[2]) for p in parts], dtype=np.int64)
    timed = np.array([p[3] is not None for p in parts], dtype=bool)
    hh = np.array([int(p[3]) if p[3] else 0 for p in parts], dtype=np.int64)
    mi = np.array([int(p[4]) if p[4] else 0 for p in parts], dtype=np.int64)
    ss = np.array([int(p[5]) if p[5] else 0 for p in parts], dtype=np.int64)
    frac = np.array([float(p[6]) if p[6] else 0.0 for p in parts])
    ok = (y >= 1) & (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= _days_in_month(y, mo))
    ok &= (hh <= 23) & (mi <= 59) & (ss <= 59)
    whole = days_from_civil(np.where(ok, y, 1970), np.where(ok, mo, 1), np.where(ok, d, 1)).astype(float)
    value = whole + (hh * 3600 + mi * 60 + ss + frac) / 86400.0
    days[idx[ok]] = value[ok]
    has_time[idx[ok]] = timed[ok]
    return days, has_time


def parse_clock_text(values: list) -> tuple[np.ndarray, np.ndarray]:
    """Clock times ``HH:MM[:SS]`` of a list of strings as minutes since midnight.

    Parameters
    ----------
    values : list
        Strings (anything else does not parse).

    Returns
    -------
    minutes : numpy.ndarray
        Minutes since midnight as float; NaN where the text is not a clock time.
    has_seconds : numpy.ndarray
        Whether the text carried seconds.
    """
    n = len(values)
    mins = np.full(n, np.nan)
    secs = np.zeros(n, dtype=bool)
    for i, v in enumerate(values):
        m = _CLOCK.match(v.strip()) if isinstance(v, str) and len(v) <= 16 else None
        if m is None:
            continue
        h, mi, se = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if h <= 23 and mi <= 59 and se <= 59:
            mins[i] = h * 60 + mi + se / 60.0
            secs[i] = m.group(3) is not None
    return mins, secs


def _by_distinct(s: pd.Series, parse) -> tuple[np.ndarray, np.ndarray]:
    """``parse`` applied once per distinct text of ``s`` (missing cells: NaN / False)."""
    if isinstance(s.dtype, pd.StringDtype):
        # a text column is its own text: factorized as it is (no per-cell conversion; missing: -1)
        inv, uniq = pd.factorize(s)
        isna = inv < 0
        uniq = np.asarray(uniq, dtype=object)
        if uniq.size == 0:
            return np.full(len(s), np.nan), np.zeros(len(s), dtype=bool)
    else:
        vals = s.astype(object).to_numpy()
        isna = pd.isna(vals) if vals.size else np.zeros(0, dtype=bool)
        inv, uniq = pd.factorize(np.asarray([_as_text(v) for v in vals], dtype=object))
    ux, uf = parse(list(uniq))
    x, flag = ux[inv], uf[inv]
    x[isna] = np.nan
    flag[isna] = False
    return x, flag


def parse_clock(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column's clock times ``HH:MM[:SS]`` as minutes since midnight (``datetime.time`` objects are
    read too); each distinct value is parsed once.

    Parameters
    ----------
    s : pandas.Series
        The raw column (only text and object columns can hold clock times).

    Returns
    -------
    minutes : numpy.ndarray
        Minutes since midnight as float; NaN for missing cells and values that are not clock times.
    has_seconds : numpy.ndarray
        Whether each value carried seconds.
    """
    if not (s.dtype == object or pd.api.types.is_string_dtype(s.dtype)):
        return np.full(len(s), np.nan), np.zeros(len(s), dtype=bool)
    return _by_distinct(s, parse_clock_text)


def parse_axis(s: pd.Series, unit: str) -> np.ndarray:
    """A column's values on the axis of a time unit.

    Parameters
    ----------
    s : pandas.Series
        The raw column.
    unit : str
        ``"date"`` / ``"timestamp"`` (days since 1970-01-01) or ``"time"`` (minutes since midnight).

    Returns
    -------
    numpy.ndarray
        Float values on that axis; NaN where a value is missing or does not parse.
    """
    return parse_clock(s)[0] if unit == "time" else parse_days(s)[0]


def axis_range(unit: str) -> tuple[float, float]:
    """The ends of the axis of a time unit: bounds and edges of such a column lie inside.

    Parameters
    ----------
    unit : str
        ``"date"``, ``"timestamp"`` or ``"time"``.

    Returns
    -------
    tuple of float
        (low, high): 0001-01-01 .. the day after 9999-12-31 in days since 1970-01-01, or 0 .. 1440
        minutes.
    """
    return (0.0, MINUTES) if unit == "time" else (DAY_MIN, DAY_MAX + 1.0)


def on_axis(xs, unit: str) -> bool:
    """Whether values lie on the axis of a time unit.

    Parameters
    ----------
    xs : iterable of float
        The values.
    unit : str
        ``"date"``, ``"timestamp"`` or ``"time"``.

    Returns
    -------
    bool
        All values are finite and inside :func:`axis_range` (its high end excluded for dates).
    """
    lo, hi = axis_range(unit)
    vals = [float(x) for x in xs]
    if unit == "time":
        return all(math.isfinite(x) and lo <= x <= hi for x in vals)
    return all(math.isfinite(x) and lo <= x < hi for x in vals)


#: ticks per second of the datetime64 units pandas uses
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def parse_days(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column's ISO dates and timestamps as days since 1970-01-01; each distinct value is parsed
    once, and pandas datetime columns are read directly, to the floats of their ISO text (time zone
    aware ones as their UTC wall clock).

    Parameters
    ----------
    s : pandas.Series
        The raw column (numbers and booleans are not dates).

    Returns
    -------
    days : numpy.ndarray
        Days since 1970-01-01 as float; NaN for missing cells and for values that are not ISO dates
        or timestamps.
    has_time : numpy.ndarray
        Whether each value carried a time of day.
    """
    n = len(s)
    if is_datetime_dtype(s.dtype) and not isinstance(s.dtype, pd.ArrowDtype):
        t = s
        if getattr(s.dt, "tz", None) is not None:
            t = s.dt.tz_convert("UTC").dt.tz_localize(None)  # an instant: its UTC wall clock
        a = t.to_numpy()  # datetime64 in the column's own unit (no overflow to nanoseconds)
        unit, _ = np.datetime_data(a.dtype)
        ok = ~np.isnat(a)
        days = np.full(n, np.nan)
        has_time = np.zeros(n, dtype=bool)
        days[ok], has_time[ok] = days_of_ticks(a[ok].view(np.int64), _PER_SECOND[unit])
        return days, has_time
    if is_datetime_dtype(s.dtype):  # pyarrow dates and timestamps: as date / Timestamp objects
        return _by_distinct(s.astype(object), parse_text)
    if not (s.dtype == object or pd.api.types.is_string_dtype(s.dtype)):
        return np.full(n, np.nan), np.zeros(n, dtype=bool)  # numbers and booleans are not dates
    return _by_distinct(s, parse_text)


def _as_text(v) -> str:
    """A cell as the text the parser reads: strings as they are, ``datetime`` / ``date`` objects
    in ISO form, anything else (numbers, missing) as a text that does not parse."""
    if isinstance(v, str):
        return v
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.UTC).replace(tzinfo=None)
        return v.isoformat(sep="T")
    if isinstance(v, _dt.date):
        return v.isoformat()
    if isinstance(v, _dt.time):
        return v.replace(microsecond=0, tzinfo=None).isoformat()
    return ""


def parse_value(v, unit: str = "date") -> float | None:
    """One value of a schema file's bounds, edges or values, written as text, on the axis of a unit.

    Parameters
    ----------
    v : object
        An ISO date / timestamp string, or for the "time" unit a clock time ("24:00" is the end of
        the day); anything else does not parse.
    unit : str
        ``"date"``, ``"timestamp"`` or ``"time"``.

    Returns
    -------
    float or None
        Days since 1970-01-01 (minutes since midnight); None when it does not parse.
    """
    if not isinstance(v, str):
        return None
    if unit == "time":
        if v.strip() == "24:00":
            return MINUTES
        x, _ = parse_clock_text([v])
    else:
        x, _ = parse_text([v])
    return None if np.isnan(x[0]) else float(x[0])


def format_days(days, unit: str) -> np.ndarray:
    """Values of a time axis as ISO text; values outside the axis are clipped to it.

    Parameters
    ----------
    days : array_like of float
        Days since 1970-01-01 ("date", "timestamp") or minutes since midnight ("time").
    unit : str
        ``"date"``: ``YYYY-MM-DD`` (the day the value falls in); ``"timestamp"``:
        ``YYYY-MM-DDTHH:MM:SS`` (rounded to the second); ``"time"``: ``HH:MM`` (the minute the value
        falls in; 24:00 for the end of the day).

    Returns
    -------
    numpy.ndarray
        Object array of strings; None for NaN.
    """
    x = np.asarray(days, dtype=float).reshape(-1)
    out = np.full(x.shape, None, dtype=object)
    ok = np.isfinite(x)
    if not ok.any():
        return out
    if unit == "time":
        # the minute the value falls in (a value just below midnight stays 23:59, readable back)
        mm = np.clip(np.floor(x[ok] + 1e-9), 0, MINUTES).astype(np.int64)
        out[ok] = [f"{m // 60:02d}:{m % 60:02d}" for m in mm.tolist()]
        return out
    v = np.clip(x[ok], DAY_MIN, DAY_MAX + (86399 / 86400 if unit == "timestamp" else 0.0))
    if unit == "timestamp":
        secs = np.rint(v * 86400.0).astype(np.int64)
        day = np.floor_divide(secs, 86400)
        sod = secs - day * 86400
    else:
        day = np.floor(v).astype(np.int64)
        sod = np.zeros_like(day)
    y, m, d = civil_from_days(day)
    if unit == "timestamp":
        txt = [
            f"{a:04d}-{b:02d}-{c:02d}T{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
            for a, b, c, s in zip(y.tolist(), m.tolist(), d.tolist(), sod.tolist())
        ]
    else:
        txt = [f"{a:04d}-{b:02d}-{c:02d}" for a, b, c in zip(y.tolist(), m.tolist(), d.tolist())]
    out[ok] = txt
    return out


def format_day(x: float, unit: str) -> str:
    """One value of a time axis as ISO text.

    Parameters
    ----------
    x : float
        The value.
    unit : str
        ``"date"``, ``"timestamp"`` or ``"time"`` (see :func:`format_days`).

    Returns
    -------
    str
    """
    return str(format_days([x], unit)[0])


def schema_entry_on_axis(name: str, d: dict) -> dict:
    """A time-axis column's schema entry with its ISO date / timestamp (or clock time) strings in
    "bounds", "edges" and "values" turned into numbers on its axis; numbers are kept as they are.

    Parameters
    ----------
    name : str
        The column name (for the error message).
    d : dict
        The entry, with a valid ``"unit"``.

    Returns
    -------
    dict
        A copy of the entry.

    Raises
    ------
    SchemaError
        For a string that is not a date, timestamp or clock time.
    """
    unit = d["unit"]
    out = dict(d)
    for key in ("bounds", "edges", "values"):
        xs = d.get(key)
        if not isinstance(xs, list):
            continue
        conv = []
        for x in xs:
            if isinstance(x, str):
                v = parse_value(x, unit)
                if v is None:
                    what = (
                        "a clock time (HH:MM[:SS])"
                        if unit == "time"
                        else "an ISO date (YYYY-MM-DD) or timestamp (YYYY-MM-DD HH:MM[:SS])"
                    )
                    raise SchemaError(f'column {name!r}: "{key}" entry {x!r} is not {what}')
                conv.append(v)
            else:
                conv.append(x)
        out[key] = conv
    return out


#: integer-coded clock times HHMM lie in [0, HHMM_END): hours 0-23 times 100 plus minutes 0-59
HHMM_END = 2400
#: a whole-number column counts as clock times HHMM when the noisy count of its numbers that are no
#: clock time stays within this share of those that are (plus three noise sds): clock times have
#: none, and other whole numbers below 2,400 about two in five (Adult's capital losses: one in two
#: of the few that are not zero)
HHMM_OTHER = 0.005


def may_be_hhmm(lo: float, hi: float, whole: bool) -> bool:
    """Whether a column's scan range (noisy, public after the scan) allows integer clock times
    HHMM: whole numbers from 0 up, starting at 1000 or below (10:00; years such as 2003-2009 are
    whole numbers with "minutes" below 60 too, and start at 1778), ending in the scan band
    [1000, 1778) or [1778, 3162), or in the band after it (a band of noise next to the rows joins
    the range in a few % of columns).

    Parameters
    ----------
    lo, hi : float
        The scan's range.
    whole : bool
        The numbers are whole.

    Returns
    -------
    bool
    """
    return bool(whole and 0 <= lo <= 1000.0 and 1000.0 < hi <= 5624.0)


def hhmm_cells(x: np.ndarray) -> np.ndarray:
    """Exact counts of the numbers that are clock times HHMM and of the other numbers (noised by
    the caller; each row adds one to at most one cell).

    Parameters
    ----------
    x : numpy.ndarray or NumberView
        Float values, NaN for missing or text; or the number view of a column read where its table
        lives (:class:`ddssp.data.discovery.views.NumberView`), which counts them by SQL.

    Returns
    -------
    numpy.ndarray
        int64 ``[clock times, other numbers]``.
    """
    if not isinstance(x, np.ndarray):  # counted where the table lives (discovery/source.py)
        return x.hhmm_cells()
    v = x[~np.isnan(x)]
    ok = int(np.sum(hhmm_valid(v)))
    return np.array([ok, v.size - ok], dtype=np.int64)


def hhmm_valid(v: np.ndarray) -> np.ndarray:
    """Which numbers are clock times HHMM (whole, 0 <= v < 2400, minutes below 60).

    Parameters
    ----------
    v : numpy.ndarray
        Numbers.

    Returns
    -------
    numpy.ndarray
        A boolean mask.
    """
    v = np.asarray(v, dtype=float)
    with np.errstate(invalid="ignore"):  # inf: mod is NaN, and the range test already fails
        return (v >= 0) & (v < HHMM_END) & (v == np.floor(v)) & (np.mod(v, 100) < 60)


def hhmm_snap(v: float, a: float, b: float) -> float:
    """A bin's representative value moved to a clock time inside [a, b): minutes of 60 or more
    become the hour's :59, or the next hour's :00 when that falls below the bin; unchanged when no
    clock time lies in the bin.

    Parameters
    ----------
    v : float
        The value.
    a, b : float
        The bin.

    Returns
    -------
    float
    """
    if hhmm_valid(np.array([v]))[0]:
        return v
    for c in (math.floor(v / 100) * 100 + 59, math.floor(v / 100) * 100 + 100):
        if a <= c < b and hhmm_valid(np.array([c]))[0]:
            return float(c)
    return v


def hhmm_sub_cells(
    a: float, b: float, cuts: tuple[float, ...], weights: tuple[float, ...]
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """A whole-number bin's within-bin sub-cells split at the clock-time gaps: each sub-cell's
    weight goes to its whole numbers that are clock times (in proportion to their number), none to
    minutes 60-99, so synthetic values drawn inside the bin are clock times. None when the bin holds
    no clock time with weight (then the bin keeps its sub-cells).

    Parameters
    ----------
    a, b : float
        The bin.
    cuts, weights : tuple of float
        Its within-bin sub-cells (:class:`ddssp.data.within.Within`, whole numbers).

    Returns
    -------
    tuple or None
        ``(cuts, weights)``.
    """
    sub = [a, *cuts, b]
    out_edges: list[float] = [a]
    out_w: list[float] = []
    for (lo, hi), w in zip(zip(sub, sub[1:]), weights):
        first, end = math.ceil(lo), math.ceil(hi)  # the whole numbers first .. end - 1
        n = max(end - first, 1)
        # the pieces of [lo, hi) between the edges of the hours' valid minutes (h00, h60)
        marks = sorted(
            {lo, hi}
            | {
                float(m)
                for h in range(int(first // 100), int(end // 100) + 1)
                for m in (100 * h, 100 * h + 60)
                if lo < m < hi
            }
        )
        for p, q in zip(marks, marks[1:]):
            k = math.ceil(q) - math.ceil(p)
            valid = k > 0 and hhmm_valid(np.array([math.ceil(p)]))[0]
            out_w.append(w * k / n if valid else 0.0)
            out_edges.append(q)
    if sum(out_w) <= 0:
        return None
    total = sum(out_w)
    return tuple(out_edges[1:-1]), tuple(x / total for x in out_w)
