"""Typed date and timestamp columns in the SQL backends (Parquet DATE and TIMESTAMP, DuckDB's and
Spark's date and timestamp types, a pandas frame's datetime64 columns registered in DuckDB).

A typed value is first made an integer, its *ticks*: whole days since 1970-01-01 for a date,
microseconds (DuckDB TIMESTAMP_NS: nanoseconds) since 1970-01-01T00:00 for a timestamp; for a
time-zone-aware one (DuckDB TIMESTAMPTZ, Spark TIMESTAMP) the ticks of its UTC wall clock. No step
reads the session's time zone. From the ticks, a binned date column's value on its axis is computed
in SQL by the arithmetic of :func:`ddssp.data.dates.days_of_ticks` (the same doubles as the numpy
backend and as the value's ISO text), and every other column maps the distinct ticks back to the
pandas values ``Schema.encode`` reads (:func:`typed_series`), so its rules code them. A typed value
is never a number: a numeric column without a time unit reads it as a non-numeric value.
"""

from __future__ import annotations

import datetime as _dt

import numpy as np
import pandas as pd

from ddssp.data.dates import DAY_MAX, DAY_MIN

#: families of typed times: a date, a naive timestamp (the wall clock as written), an instant (a
#: time-zone-aware timestamp: its UTC wall clock)
TIME_FAMILIES = ("date", "timestamp", "instant")

_DUCKDB = {
    "DATE": ("date", 0),
    "TIMESTAMP": ("timestamp", 10**6),
    "DATETIME": ("timestamp", 10**6),
    "TIMESTAMP_S": ("timestamp", 10**6),
    "TIMESTAMP_MS": ("timestamp", 10**6),
    "TIMESTAMP_US": ("timestamp", 10**6),
    "TIMESTAMP_NS": ("timestamp", 10**9),
    "TIMESTAMP WITH TIME ZONE": ("instant", 10**6),
    "TIMESTAMPTZ": ("instant", 10**6),
}
# Spark's TIMESTAMP is an instant (shown in the session's zone), TIMESTAMP_NTZ a wall clock
_SPARK = {"DATE": ("date", 0), "TIMESTAMP": ("instant", 10**6), "TIMESTAMP_NTZ": ("timestamp", 10**6)}


def time_family(engine: str, type_name: str) -> tuple[str, int] | None:
    """The family and ticks per second of an engine's date / timestamp type.

    Parameters
    ----------
    engine : str
        ``"duckdb"`` or ``"spark"``.
    type_name : str
        The column's type as the engine names it (``DESCRIBE``, ``DataFrame.dtypes``).

    Returns
    -------
    tuple of (str, int) or None
        (``"date"``, 0), (``"timestamp"`` or ``"instant"``, ticks per second); None for any other
        type.
    """
    table = _SPARK if engine == "spark" else _DUCKDB
    return table.get(type_name.upper().strip())


def ticks_sql(engine: str, v: str, family: str, per_second: int) -> str:
    """SQL for the ticks of a typed value (BIGINT; NULL for NULL).

    Parameters
    ----------
    engine : str
        ``"duckdb"`` or ``"spark"``.
    v : str
        The column's SQL expression.
    family : str
        One of :data:`TIME_FAMILIES`.
    per_second : int
        Ticks per second of a timestamp (1e6 or 1e9).

    Returns
    -------
    str
    """
    if engine == "spark":
        if family == "date":
            return f"CAST(unix_date({v}) AS BIGINT)"
        if family == "instant":
            return f"unix_micros({v})"
        # a wall clock: its parts, never through the session's zone
        return (
            f"(CAST(unix_date(CAST({v} AS DATE)) AS BIGINT) * 86400000000 "
            f"+ CAST(hour({v}) * 3600 + minute({v}) * 60 AS BIGINT) * 1000000 "
            f"+ CAST(extract(SECOND FROM {v}) * 1000000 AS BIGINT))"
        )
    if family == "date":
        return f"date_diff('day', DATE '1970-01-01', {v})"
    return f"epoch_ns({v})" if per_second == 10**9 else f"epoch_us({v})"


def axis_sql(d, t: str, family: str, per_second: int) -> tuple[str, str, str]:
    """SQL for a typed value's days since 1970-01-01 from its ticks, by
    :func:`ddssp.data.dates.days_of_ticks`'s arithmetic, in three steps (each reads the one before).

    Parameters
    ----------
    d : Dialect
        The SQL dialect (``name``, ``double``).
    t : str
        The name of the ticks (step one's output; see :func:`ticks_sql`).
    family : str
        One of :data:`TIME_FAMILIES`.
    per_second : int
        Ticks per second of a timestamp.

    Returns
    -------
    tuple of str
        (``r``, ``day``, ``x``): the ticks into the day (never negative) and the day, both over
        ``t``; then the value (DOUBLE; NULL outside 0001-01-01 .. 9999-12-31 or for NULL), over the
        names ``t + "_r"`` and ``t + "_d"`` that the caller gives the first two.
    """
    if family == "date":
        r, day = "CAST(0 AS BIGINT)", t
        x = f"CAST({t}_d AS DOUBLE)"
    else:
        u, per_day = int(per_second), 86400 * int(per_second)
        r = f"pmod({t}, {per_day})" if d.name == "spark" else f"((({t} % {per_day}) + {per_day}) % {per_day})"
        whole = f"({t} - {r})"  # a multiple of the day: truncating division is floor
        day = f"({whole} div {per_day})" if d.name == "spark" else f"({whole} // {per_day})"
        secs = f"({t}_r div {u})" if d.name == "spark" else f"({t}_r // {u})"
        x = (
            f"CAST({t}_d AS DOUBLE) + (CAST({secs} AS DOUBLE) + CAST({t}_r % {u} AS DOUBLE) / {d.double(u)}) "
            f"/ {d.double(86400.0)}"
        )
    x = f"CASE WHEN {t}_d >= {int(DAY_MIN)} AND {t}_d <= {int(DAY_MAX)} THEN {x} END"
    return r, day, x


def typed_series(family: str, per_second: int, ticks: list) -> pd.Series:
    """Ticks as the pandas values a reader of the column holds: ``datetime.date`` objects for dates,
    datetime64 for timestamps (UTC for an instant).

    Parameters
    ----------
    family : str
        One of :data:`TIME_FAMILIES`.
    per_second : int
        Ticks per second of a timestamp (1e6 or 1e9).
    ticks : list
        Integers; None for a missing value.

    Returns
    -------
    pandas.Series
        One value per tick, missing where it is None. A date outside 0001-01-01 .. 9999-12-31 is
        kept as its engine's text (a year of five digits), which no date column reads.
    """
    if family == "date":
        epoch = _dt.date(1970, 1, 1)
        vals = [
            None
            if v is None
            else (epoch + _dt.timedelta(days=int(v)) if DAY_MIN <= v <= DAY_MAX else str(np.datetime64(int(v), "D")))
            for v in ticks
        ]
        return pd.Series(vals, dtype=object)
    nat = np.iinfo(np.int64).min
    raw = np.array([nat if v is None else int(v) for v in ticks], dtype=np.int64)
    s = pd.Series(raw.view("datetime64[ns]" if per_second == 10**9 else "datetime64[us]"))
    return s.dt.tz_localize("UTC") if family == "instant" else s
