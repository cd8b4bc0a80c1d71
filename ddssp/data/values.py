"""Single data values against a column's levels: the label a value gets, the level nearest a number,
and values written short.

Level labels are compared as strings, so every value that becomes a label goes through
:func:`as_label` (a CSV cell ``1`` and the number ``1.0`` both become ``"1"``); :func:`numeric_label`
is the fallback for a label with no exact match. A clipped explicit-level column codes a number to
:func:`nearest_level`. :func:`format_number` prints bin edges and levels in labels and messages,
:func:`int_if_whole` writes whole numbers as integers in a schema file, and :func:`first_few` shows the
first few of many values in an error message.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable
from typing import Any

import numpy as np


def format_number(x: float) -> str:
    """A short printable number: 20 -> '20', 2.5 -> '2.5'.

    Parameters
    ----------
    x : float
        The number.

    Returns
    -------
    str
        Whole numbers (below 1e15) without a decimal point, others to 6 significant digits.
    """
    x = float(x)
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"


def as_label(v: Any) -> str:
    """A data value as a categorical label.

    Ints and integral floats without '.0', strings as is, a time-zone-aware timestamp in UTC (an
    instant reads the same whatever zone it carries).

    Parameters
    ----------
    v : object
        The data value.

    Returns
    -------
    str
    """
    if isinstance(v, str):
        return v
    if isinstance(v, _dt.datetime) and v.tzinfo is not None:
        return str(v.astimezone(_dt.UTC))
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isfinite(f) and f == int(f):
            return str(int(f))
        return repr(f)
    return str(v)


def numeric_label(label: str) -> str | None:
    """An integral number written differently, as its plain label: '1.0' -> '1', ' 7 ' -> '7'.

    Used only when a label has no exact match, so it can never change which level an exact label
    maps to.

    Parameters
    ----------
    label : str
        The label.

    Returns
    -------
    str or None
        The plain label, None when ``label`` is not an integral number.
    """
    try:
        f = float(label)
    except (TypeError, ValueError):
        return None
    if math.isfinite(f) and f == int(f):
        return str(int(f))
    return None


def nearest_level(levels: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Index of the level nearest to each value (ties go to the lower level).

    A clipped explicit-level column codes a value between two levels (a 2.5 in a column of whole
    numbers) this way, so that no single value can stop an encoding.

    Parameters
    ----------
    levels : numpy.ndarray
        The levels, sorted and finite.
    x : numpy.ndarray
        The values to code.

    Returns
    -------
    numpy.ndarray
        Integer indices into ``levels``, one per value of ``x``.
    """
    levels = np.asarray(levels, dtype=float)
    x = np.asarray(x, dtype=float)
    hi = np.clip(np.searchsorted(levels, x, side="left"), 0, len(levels) - 1)
    lo = np.clip(hi - 1, 0, len(levels) - 1)
    return np.where(np.abs(x - levels[lo]) <= np.abs(levels[hi] - x), lo, hi)


def first_few(values: Iterable[Any], k: int = 5) -> str:
    """The first few of many values, for an error message: ``'a', 'b' (and 3 more)``.

    Parameters
    ----------
    values : iterable
        The values.
    k : int
        How many to show.

    Returns
    -------
    str
    """
    vals = list(values)
    shown = ", ".join(repr(v) for v in vals[:k])
    more = f" (and {len(vals) - k} more)" if len(vals) > k else ""
    return shown + more


def int_if_whole(xs):
    """Whole numbers of a list as ints (for a schema file); anything else unchanged.

    Parameters
    ----------
    xs : list or object
        The values.

    Returns
    -------
    list or object
        ``xs`` with its whole numbers (below 1e15) as ints, when it is a list; else ``xs``.
    """
    if isinstance(xs, list):
        return [int(x) if float(x).is_integer() and abs(x) < 1e15 else x for x in xs]
    return xs
