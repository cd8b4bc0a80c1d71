"""The time axes of date columns: ISO dates, timestamps and clock times as numbers, and back.

A date column is a numeric column whose numbers are **days since 1970-01-01** (a float; a timestamp
is the day plus the fraction of the day elapsed, so 2003-01-01T12:00 is 12053.5). Binning, ranges,
representative values and regression coefficients (per day) all live on that axis; only reading
(:func:`parse_days`) and writing (:func:`format_days`) see calendar text. The calendar is the
proleptic Gregorian one, years 0001 to 9999, no time zones.

Accepted text (after stripping spaces): ``YYYY-MM-DD`` (a date) and ``YYYY-MM-DD HH:MM``,
``YYYY-MM-DD HH:MM:SS`` or ``YYYY-MM-DD HH:MM:SS.fff`` with ``T`` or a space between date and time
and an optional trailing ``Z`` (a timestamp). Anything else, including impossible dates
(2003-02-30) and time zone offsets, does not parse: it is a non-numeric value of the column (its
missing / other level). Python ``datetime`` / ``date`` objects and pandas datetime columns are read
directly (time zone aware ones in UTC).

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

#: the two kinds of time axis a numeric column may have ("unit" in the schema file)
TIME_UNITS = ("date", "timestamp", "time")
#: minutes in a day: the clock-time axis is [0, MINUTES)
MINUTES = 1440.0

_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?Z?)?$",
)


def days_from_civil(y, m, d) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (vectorised integer arithmetic)."""
    y = np.asarray(y, dtype=np.int64) - (np.asarray(m) <= 2)
    m = np.asarray(m, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * np.where(m > 2, m - 3, m + 9) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of whole days since 1970-01-01 (the inverse of :func:`days_from_civil`)."""
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


def _days_in_month(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    base = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(m, 1, 12) - 1]
    return base + ((m == 2) & leap)


def parse_text(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(days, has_time) of a list of strings: days since 1970-01-01 (NaN where the text is not an
    ISO date or timestamp) and whether the text carried a time of day."""
    n = len(values)
    days = np.full(n, np.nan)
    has_time = np.zeros(n, dtype=bool)
    rows, parts = [], []
    for i, v in enumerate(values):
        m = _ISO.match(v.strip()) if isinstance(v, str) and len(v) <= 64 else None
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
    """(minutes, has_seconds) of a list of strings: minutes since midnight of ``HH:MM[:SS]`` (NaN
    where the text is not a clock time) and whether the text carried seconds."""
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
    vals = s.astype(object).to_numpy()
    isna = pd.isna(vals) if vals.size else np.zeros(0, dtype=bool)
    inv, uniq = pd.factorize(np.asarray([_as_text(v) for v in vals], dtype=object))
    ux, uf = parse(list(uniq))
    x, flag = ux[inv], uf[inv]
    x[isna] = np.nan
    flag[isna] = False
    return x, flag


def parse_clock(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(minutes, has_seconds) of a column: minutes since midnight of its ``HH:MM[:SS]`` values (NaN
    for missing cells and values that are not clock times; ``datetime.time`` objects are read)."""
    if not (s.dtype == object or pd.api.types.is_string_dtype(s.dtype)):
        return np.full(len(s), np.nan), np.zeros(len(s), dtype=bool)
    return _by_distinct(s, parse_clock_text)


def parse_axis(s: pd.Series, unit: str) -> np.ndarray:
    """A column's values on the axis of ``unit``: days since 1970-01-01 ("date", "timestamp") or
    minutes since midnight ("time"); NaN where a value does not parse."""
    return parse_clock(s)[0] if unit == "time" else parse_days(s)[0]


def axis_range(unit: str) -> tuple[float, float]:
    """(low, high) of the axis of ``unit``: bounds and edges of such a column lie inside."""
    return (0.0, MINUTES) if unit == "time" else (DAY_MIN, DAY_MAX + 1.0)


def on_axis(xs, unit: str) -> bool:
    """All values are finite and inside :func:`axis_range` (the high end excluded for dates)."""
    lo, hi = axis_range(unit)
    vals = [float(x) for x in xs]
    if unit == "time":
        return all(math.isfinite(x) and lo <= x <= hi for x in vals)
    return all(math.isfinite(x) and lo <= x < hi for x in vals)


def parse_days(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(days, has_time) of a column: days since 1970-01-01 as float (NaN for missing cells and for
    values that are not ISO dates or timestamps) and whether each value carried a time of day.
    Each distinct value is parsed once."""
    n = len(s)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        t = s
        if getattr(s.dt, "tz", None) is not None:
            t = s.dt.tz_convert("UTC").dt.tz_localize(None)
        ns = t.to_numpy(dtype="datetime64[ns]")
        ok = ~np.isnat(ns)
        days = np.full(n, np.nan)
        days[ok] = ns[ok].astype(np.int64) / 86_400e9
        has_time = np.zeros(n, dtype=bool)
        has_time[ok] = (ns[ok].astype(np.int64) % 86_400_000_000_000) != 0
        return days, has_time
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
    """One ISO date / timestamp string (days since 1970-01-01), or for the "time" unit one clock
    time (minutes since midnight; "24:00" is the end of the day): a schema file's bound or edge.
    None when it does not parse."""
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
    """ISO text of days since 1970-01-01 (object array; None for NaN): ``YYYY-MM-DD`` for the
    "date" unit (the day the value falls in), ``YYYY-MM-DDTHH:MM:SS`` for "timestamp" (rounded
    to the second); for "time", ``HH:MM`` of minutes since midnight (the minute the value falls in;
    24:00 for the end of the day). Values outside the axis are clipped to it."""
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
    """One value of the axis as ISO text (see :func:`format_days`)."""
    return str(format_days([x], unit)[0])
