"""The public scan cells of a column's values and the exact counts of its rows in them.

The cells are fixed in advance and public: missing, text, signed log-spaced bands of numbers (four
per decade from 1e-6 to 1e12, exact zero its own cell) split by whole / not whole, and the text that
parses as an ISO date, an ISO timestamp or a clock time; decade groups of the bands are the public
cells where a column's values other than its one point mass are counted. Every function here that
reads data adds each row to exactly one cell (L2 sensitivity 1); :mod:`.scan` noises the counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddssp.data.dates import is_datetime_dtype, parse_clock, parse_days
from ddssp.data.encoding import parse_numeric

# scan bands: 10**(BAND_LO + j / BAND_PER) for j = 0..N_BANDS
BAND_LO, BAND_HI, BAND_PER = -6, 12, 4


N_BANDS = (BAND_HI - BAND_LO) * BAND_PER


_B = 10.0 ** (BAND_LO + np.arange(N_BANDS + 1) / BAND_PER)


#: slots in value order: -huge, -bands (high to low), -tiny, zero, +tiny, +bands, +huge
N_SLOTS = 2 * N_BANDS + 5


ZERO_SLOT = N_BANDS + 2


#: scan cells of time values: ISO dates, ISO timestamps, clock times HH:MM, HH:MM:SS
N_TIME_CELLS = 4


def _slot_bounds() -> tuple[np.ndarray, np.ndarray]:
    lo = np.empty(N_SLOTS)
    hi = np.empty(N_SLOTS)
    lo[0] = hi[0] = -_B[-1]
    for j in range(N_BANDS):  # negative band j: x in (-B[j+1], -B[j]] -> slot N_BANDS - j
        s = N_BANDS - j
        lo[s], hi[s] = -_B[j + 1], -_B[j]
    lo[N_BANDS + 1], hi[N_BANDS + 1] = -_B[0], 0.0
    lo[ZERO_SLOT] = hi[ZERO_SLOT] = 0.0
    lo[ZERO_SLOT + 1], hi[ZERO_SLOT + 1] = 0.0, _B[0]
    for j in range(N_BANDS):
        s = ZERO_SLOT + 2 + j
        lo[s], hi[s] = _B[j], _B[j + 1]
    lo[-1] = hi[-1] = _B[-1]
    return lo, hi


SLOT_LO, SLOT_HI = _slot_bounds()


def _decade_groups() -> np.ndarray:
    """Group of each scan slot when the bands are merged by whole decades (in value order)."""
    j = np.zeros(N_SLOTS, dtype=np.int64)  # band index of each band slot, by magnitude
    j[1 : N_BANDS + 1] = N_BANDS - np.arange(1, N_BANDS + 1)
    j[ZERO_SLOT + 2 : ZERO_SLOT + 2 + N_BANDS] = np.arange(N_BANDS)
    key = np.where(
        np.isin(np.arange(N_SLOTS), [0, N_BANDS + 1, ZERO_SLOT, ZERO_SLOT + 1, N_SLOTS - 1]), -1, j // BAND_PER
    )
    group = np.zeros(N_SLOTS, dtype=np.int64)
    for s in range(1, N_SLOTS):
        group[s] = group[s - 1] + (key[s] == -1 or key[s] != key[s - 1])
    return group


#: decade group of each scan slot (a public grid of 41 cells in value order: the cells where a
#: column's values other than its one point mass are counted, see :func:`rest_cells`)
DECADE_GROUP = _decade_groups()

N_DECADES = int(DECADE_GROUP[-1]) + 1


DECADE_LO = np.array([SLOT_LO[DECADE_GROUP == g].min() for g in range(N_DECADES)])


DECADE_HI = np.array([SLOT_HI[DECADE_GROUP == g].max() for g in range(N_DECADES)])


def parse_numbers(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column's values as numbers (text stripped first); typed dates and timestamps are not
    numbers (they are read by :func:`parse_times_of_text`, never as their ticks since 1970).

    Parameters
    ----------
    s : pandas.Series
        The raw column.

    Returns
    -------
    x : numpy.ndarray
        Float values, NaN for missing, text, date and timestamp cells.
    isna : numpy.ndarray
        The missing-cell mask.
    """
    if not isinstance(s, pd.Series):  # a table read where it lives (discovery/source.py)
        return s.parse_numbers()
    isna = s.isna().to_numpy()
    if is_datetime_dtype(s.dtype):
        return np.full(len(s), np.nan), isna
    if isinstance(s.dtype, pd.StringDtype):  # text: encode's own parse, each distinct value once
        return parse_numeric(s), isna
    if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
        # each distinct value parsed once (a text column repeats few labels over many rows)
        codes, uniques = pd.factorize(s.astype(object).where(~isna, None))
        u = pd.Series(np.asarray(uniques, dtype=object)).map(lambda v: v.strip() if isinstance(v, str) else v)
        xu = np.asarray(pd.to_numeric(u, errors="coerce"), dtype=float)
        x = np.full(len(s), np.nan)
        x[codes >= 0] = xu[codes[codes >= 0]]
        return x, isna
    return np.asarray(pd.to_numeric(s, errors="coerce"), dtype=float), isna


def parse_times_of_text(s: pd.Series, x: np.ndarray, isna: np.ndarray) -> dict[str, np.ndarray]:
    """The time values among a column's text values (present cells that are not numbers), typed
    dates and timestamps included.

    Parameters
    ----------
    s : pandas.Series
        The raw column.
    x : numpy.ndarray
        Its values as numbers (:func:`parse_numbers`), NaN for missing or text.
    isna : numpy.ndarray
        The missing-cell mask.

    Returns
    -------
    dict
        ``days`` (days since 1970-01-01 of ISO dates / timestamps,
        :func:`ddssp.data.dates.parse_days`), ``has_time`` (a timestamp), ``minutes`` (minutes since
        midnight of ``HH:MM[:SS]`` clock times) and ``has_seconds``, one entry per row; NaN / False
        elsewhere.
    """
    if not isinstance(s, pd.Series):  # a table read where it lives (discovery/source.py)
        return s.parse_times()
    n = len(s)
    out = {
        "days": np.full(n, np.nan),
        "has_time": np.zeros(n, dtype=bool),
        "minutes": np.full(n, np.nan),
        "has_seconds": np.zeros(n, dtype=bool),
    }
    text = np.isnan(x) & ~isna
    if text.any():
        out["days"][text], out["has_time"][text] = parse_days(s[text])
        out["minutes"][text], out["has_seconds"][text] = parse_clock(s[text])
    return out


def slot_index(v: np.ndarray) -> np.ndarray:
    """The scan slot of each number in ``v``.

    Parameters
    ----------
    v : numpy.ndarray
        Float values, no NaN.

    Returns
    -------
    numpy.ndarray
        int64 slot indices, ``0..N_SLOTS-1``.
    """
    slot = np.full(v.shape, ZERO_SLOT, dtype=np.int64)
    a = np.abs(v)
    with np.errstate(divide="ignore", invalid="ignore"):
        j = np.floor((np.log10(a) - BAND_LO) * BAND_PER)
    pos, neg = v > 0, v < 0
    tiny, huge = a < _B[0], a >= _B[-1]
    jj = np.clip(np.nan_to_num(j, nan=0, posinf=N_BANDS - 1, neginf=0), 0, N_BANDS - 1).astype(np.int64)
    slot[pos] = ZERO_SLOT + 2 + jj[pos]
    slot[neg] = N_BANDS - jj[neg]
    slot[pos & tiny] = ZERO_SLOT + 1
    slot[neg & tiny] = N_BANDS + 1
    slot[pos & huge] = N_SLOTS - 1
    slot[neg & huge] = 0
    return slot


def slot_cells(v: np.ndarray) -> np.ndarray:
    """Exact counts of numbers by scan slot (noised by the caller).

    Parameters
    ----------
    v : numpy.ndarray
        Float values; NaN is skipped.

    Returns
    -------
    numpy.ndarray
        int64 counts: [whole numbers by log-band slot, other numbers by slot].
    """
    if not isinstance(v, np.ndarray):  # counted where the table lives (discovery/source.py)
        return v.slot_cells()
    v = v[~np.isnan(v)]
    slot = slot_index(v)
    whole = np.isfinite(v) & (v == np.floor(v))
    return np.concatenate(
        [np.bincount(slot[whole], minlength=N_SLOTS), np.bincount(slot[~whole], minlength=N_SLOTS)]
    ).astype(np.int64)


def scan_cells(x: np.ndarray, isna: np.ndarray, times: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Exact counts of the scan cells (noised by the caller).

    A text value that parses as a date or a clock time (``times``) counts in one of the last four
    cells instead of the text cell, so each row is still in exactly one cell.

    Parameters
    ----------
    x : numpy.ndarray
        Float values, NaN for missing or text (:func:`parse_numbers`).
    isna : numpy.ndarray
        The missing-cell mask.
    times : dict, optional
        The text values parsed as times (:func:`parse_times_of_text`); None: no value counts as a
        date or a time.

    Returns
    -------
    numpy.ndarray
        int64 counts: [missing, text, whole numbers by log-band slot, other numbers by slot, ISO
        dates, ISO timestamps, clock times HH:MM, clock times HH:MM:SS].
    """
    if not isinstance(x, np.ndarray):  # counted where the table lives (discovery/source.py)
        return x.scan_cells(times is not None)
    n = len(x)
    text = np.isnan(x) & ~isna
    none = np.zeros(n, dtype=bool)
    t = times or {}
    dated = text & ~np.isnan(t["days"]) if "days" in t else none
    timed = dated & t.get("has_time", none)
    clock = text & ~dated & ~np.isnan(t["minutes"]) if "minutes" in t else none
    secs = clock & t.get("has_seconds", none)
    cells = np.zeros(N_TIME_CELLS + 2 + 2 * N_SLOTS, dtype=np.int64)
    cells[0] = int(isna.sum())
    cells[1] = int((text & ~dated & ~clock).sum())
    cells[2 : 2 + 2 * N_SLOTS] = slot_cells(x)
    cells[-4:] = [int((dated & ~timed).sum()), int(timed.sum()), int((clock & ~secs).sum()), int(secs.sum())]
    return cells
