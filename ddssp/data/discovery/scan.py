"""The scan of one column: the exact counts of its rows in the public scan cells of :mod:`.slots`,
and what their noisy counts say (kind, range, wholeness, mass at zero).

:func:`rest_cells` reads the data (each row adds one to exactly one cell, so each count vector has L2
sensitivity 1: add / remove one row). :func:`scan_column` and :func:`scan_dates` hand the exact
counts straight to the charged mechanism and read only its noisy output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ddssp.data.dates import DAY_MAX, DAY_MIN, MINUTES
from ddssp.data.discovery.shared import noise_sd
from ddssp.data.discovery.slots import (
    DECADE_GROUP,
    N_DECADES,
    N_SLOTS,
    N_TIME_CELLS,
    SLOT_HI,
    SLOT_LO,
    ZERO_SLOT,
    scan_cells,
    slot_cells,
    slot_index,
)
from ddssp.data.discovery.spans import (
    REST_ALPHA,
    TROUGH_SDS,
    anchored_span,
    evidence_windows,
    populated_windows,
    span_sds,
)
from ddssp.errors import SchemaError

MISSING_LABEL = "<missing>"

SCAN_FRACTION = 0.25  # of a column's rho, when the column needs a scan


#: noisy count a scan cell must reach to count as populated (in noise sds; ~300 cells per column,
#: so an empty cell passes with probability ~1e-3 per column)
POP_SDS = 4.5
#: a column with text is refused as mixing numbers and text only when its numbers also reach this
#: many sds: a union bound over the windows of 1, 2, 4, ... 128 scan slots that ``populated_windows``
#: tests at every position (945 of them), so noise alone refuses a text column with probability
#: under 1e-4 (at ``POP_SDS`` a window of noise passes in about 0.2% of text columns)
MIXED_SDS = 5.2
#: a column whose numbers show in no single slot must show in a window of slots at this level (the
#: union level ``MIXED_SDS`` over the windows tested) for its range to count as found
COARSE_POP_SDS = MIXED_SDS


#: a slot next to the populated range joins it when its noisy count reaches this many sds
ADJACENT_SDS = 2.0


#: a run of populated scan slots apart from the strongest one counts only when its noisy sum reaches
#: this many sds of that sum: noise alone reaches it in one of the ~150 slots in under 2e-5 of columns
#: (at ``POP_SDS``, 5e-4: one column-release in a few hundred of a table with several numbers)
DETACHED_SDS = MIXED_SDS


#: the exact-zero slot joins a range beside it when its noisy count reaches this many sds: one
#: test of a cell named in advance, at the level noise alone reaches in ``REST_ALPHA`` of columns
#: (3.09 sds; see :func:`_with_zero`)
ZERO_SDS = span_sds(1, REST_ALPHA)


#: a window of grid cells right next to a populated span joins it when its noisy sum reaches this
#: many sds of that sum (a thin tail spread over cells each lost in the noise; a few windows per
#: side are tested, so a hard end of the range is falsely extended in under 1% of the cuts)
GROW_SDS = 3.0


#: empty bands a range is carried over to a window of bands beyond them that shows (:func:`_jump_gap`):
#: half a decade
GAP_BANDS = 2
#: ... at this many sds of the window's noise: the level one of the windows tested per range (1, 2 or
#: 4 bands past a gap of 1 or 2, on both sides) reaches on noise alone in ``REST_ALPHA`` of columns
GAP_SDS = span_sds(2 * GAP_BANDS * 3, REST_ALPHA)


#: slots next to each end of the scan's range whose noisy counts estimate the rows it leaves out
#: (one decade: further slots add noise and, in most columns, no rows)
OUTSIDE_SLOTS = 4


#: the numbers of a column are whole unless the noisy count of non-whole numbers, in its populated
#: slots or over every slot of its range, reaches this many sds of its noise (and 2% of the numbers);
#: noise alone calls whole numbers otherwise in about 5e-4 of columns (two tests at 2.3e-4)
WHOLE_SDS = 3.5


@dataclass
class ScanResult:
    """What the scan of one column found (all from noisy counts).

    Attributes
    ----------
    kind : str or None
        ``"numeric"``, ``"categorical"`` or ``"date"`` (a time axis, see ``unit``).
    n_present : float
        Noisy count of present (non-missing) cells, populated cells only.
    missing : float
        Noisy missing + text count (numeric columns: cells that are not numbers).
    missing_sd : float or None
        The noise sd of ``missing``: ``sigma`` times the root of the number of scan cells it sums
        (None: the missing cell's alone, ``sigma``).
    lo, hi : float
        The outer edges of the populated bands (numeric).
    lo_pos : float or None
        The lower edge of the lowest populated positive band.
    whole : bool
        The numbers are whole.
    zero : float
        Noisy count of exact zeros.
    text : float
        Noisy count of text cells, when above the noise.
    sigma : float
        The noise sd of one scan cell.
    unit : str or None
        The axis of a time-axis column: ``"date"`` or ``"timestamp"`` (days since 1970-01-01) or
        ``"time"`` (minutes since midnight); it lives on and decodes from that axis.
    outside, outside_sd : tuple of float
        Noisy counts of the numbers in the ``OUTSIDE_SLOTS`` slots just below / above the range
        (the rows it leaves out), and the noise sd of each.
    frac : numpy.ndarray or None
        Noisy counts of the non-whole numbers by scan slot (numeric scans; see :meth:`fractions_in`).
    """

    kind: str | None  # "numeric" / "categorical" / "date"
    n_present: float  # noisy count of present (non-missing) cells, populated cells only
    missing: float  # noisy missing + text count (numeric columns: cells that are not numbers)
    missing_sd: float | None = None  # its noise sd (the scan cells it sums); None: sigma
    lo: float = 0.0
    hi: float = 0.0
    lo_pos: float | None = None  # lower edge of the lowest populated positive band
    whole: bool = False
    zero: float = 0.0  # noisy count of exact zeros
    text: float = 0.0
    sigma: float = 0.0
    unit: str | None = None  # time-axis columns: "date", "timestamp" or "time"
    #: noisy count of the numbers in the ``OUTSIDE_SLOTS`` slots just below / above the range (rows
    #: the range leaves out, to be clipped into its ends)
    outside: tuple[float, float] = (0.0, 0.0)
    #: the noise sd of each of those two counts
    outside_sd: tuple[float, float] = (0.0, 0.0)
    #: noisy counts of the non-whole numbers by scan slot (numeric scans)
    frac: np.ndarray | None = None

    def fractions_in(self, a: int, b: int, total: float) -> bool:
        """Whether the scan's noisy counts of non-whole numbers show them in the slots of decades
        ``a..b`` (:data:`~ddssp.data.discovery.slots.DECADE_GROUP`), at the level of the wholeness
        test over those slots: ``WHOLE_SDS`` sds of their sum's noise and 2% of ``total``. For the
        rest of a single value, which the scan's own test, reading only the slots that show, never
        sees. Post-processing.

        Parameters
        ----------
        a, b : int
            First and last decade.
        total : float
            The noisy count of the numbers there.

        Returns
        -------
        bool
        """
        if self.frac is None:
            return False
        slots = (DECADE_GROUP >= a) & (DECADE_GROUP <= b)
        nonwhole = float(np.sum(self.frac[slots]))
        return nonwhole > max(0.02 * total, WHOLE_SDS * self.sigma * math.sqrt(int(slots.sum())))


def _numeric_range(res: ScanResult, whole: np.ndarray, frac: np.ndarray, sigma: float, name: str = "") -> None:
    """Range, wholeness and zero mass of the numbers from their noisy slot counts (whole numbers by
    slot, other numbers by slot), into ``res``. Post-processing.

    The range rests on evidence above the noise at its ends: unless a slot reaches ``COARSE_POP_SDS``,
    a window must (noise alone: ~1e-4 of columns; at ``POP_SDS`` a few in a thousand, anywhere on
    the axis), and the range is the strongest segment cut to slots that show, not grown on weaker
    evidence (:func:`evidence_windows`). That segment must itself reach ``COARSE_POP_SDS``: a window
    that shows can join a weak run of rows to a run of noise that outscores them, which would place
    the range where no row is; another segment widens it only at ``DETACHED_SDS``, as a detached
    run of single slots does. Raises :class:`SchemaError` when nothing shows but noise."""
    slot = whole + frac
    sd = sigma * math.sqrt(2)
    w, pop = evidence_windows(slot, sd, POP_SDS, COARSE_POP_SDS)
    if w == 0:
        raise SchemaError(_noise_alone_message(name, sd))
    if w == 1:
        pop = _attached(slot, pop, sd)
    idx = np.flatnonzero(pop)
    first, last = int(idx[0]), int(idx[-1])
    if w > 1:
        # the strongest segment of the windows that show, cut to cells that show at its ends
        span = anchored_span(slot, sd, COARSE_POP_SDS, DETACHED_SDS)
        if span is None:
            raise SchemaError(_noise_alone_message(name, sd))
        first, last = _with_zero(slot, pop, *span, sd)
        kept = pop & (np.arange(N_SLOTS) >= first) & (np.arange(N_SLOTS) <= last)
        _set_range(res, slot, frac, kept, sigma, first, last, num=float(np.sum(slot[pop])))
        return
    # a neighbouring slot of the populated range joins it on weaker evidence (2 sds): the band
    # next to the data is where a tail that did not clear 4.5 sds lives
    near = ADJACENT_SDS * sigma * math.sqrt(2)
    # ... but never across zero: a range that starts (ends) at the exact-zero slot is the common
    # non-negative (non-positive) column, and a 2-sd false positive on the tiny band beside zero
    # would put a spurious [-1e-6, 0) bin in front of the zero point mass (~2% of releases)
    if first > 0 and first != ZERO_SLOT and slot[first - 1] >= near:
        first -= 1
    if last < N_SLOTS - 1 and last != ZERO_SLOT and slot[last + 1] >= near:
        last += 1
    first, last = _with_zero(slot, pop, *_grow_scan(slot, first, last, sigma * math.sqrt(2)), sd)
    _set_range(res, slot, frac, pop, sigma, first, last)


def _with_zero(slot: np.ndarray, pop: np.ndarray, first: int, last: int, sd: float) -> tuple[int, int]:
    """The range ``first..last`` (slots) widened to the exact-zero slot when its noisy count reaches
    ``ZERO_SDS`` sds; ``pop`` then marks it populated. Zero is one cell named before the counts are
    seen (the common point mass of counts, amounts and durations), so one test's level bounds its
    false alarms (a column without zeros gets a range to 0 in ``REST_ALPHA`` of columns), where a
    run of slots anywhere on the axis needs the level of all the runs it could be (``DETACHED_SDS``).
    Post-processing."""
    if first <= ZERO_SLOT <= last or slot[ZERO_SLOT] < ZERO_SDS * sd:
        return first, last
    pop[ZERO_SLOT] = True
    return min(first, ZERO_SLOT), max(last, ZERO_SLOT)


def _attached(slot: np.ndarray, pop: np.ndarray, sd: float) -> np.ndarray:
    """The populated slots cut to the strongest run of adjacent ones (largest noisy sum in sds of
    that sum) and the other runs whose own sum reaches ``DETACHED_SDS``. A slot of noise alone
    passes ``POP_SDS`` in a few of ten thousand columns; far from the rows (ages at -3,000) it
    would stretch the range, and the bins over it, by orders of magnitude, and synthetic values
    would fill them. Post-processing."""
    idx = np.flatnonzero(pop)
    runs = np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)
    if len(runs) < 2:
        return pop
    z = [float(np.sum(slot[r])) / (sd * math.sqrt(r.size)) for r in runs]
    best = int(np.argmax(z))
    out = np.zeros_like(pop)
    for k, r in enumerate(runs):
        if k == best or z[k] >= DETACHED_SDS:
            out[r] = True
    return out


def _noise_alone_message(name: str, sd: float) -> str:
    """Why a column whose numbers show only at the level of noise is left out."""
    return (
        f"column {name!r}: its numbers show only at the level of noise (no range rests on evidence above it: "
        f"too few rows for this budget; a column needs about {math.ceil(POP_SDS * sd)} rows in one quarter decade "
        "of values)"
    )


def _set_range(
    res: ScanResult,
    slot: np.ndarray,
    frac: np.ndarray,
    pop: np.ndarray,
    sigma: float,
    first: int,
    last: int,
    num: float | None = None,
) -> None:
    """Range ``first..last`` (slots), wholeness and zero mass into ``res`` from the populated slots
    ``pop``; ``num`` (noisy count of numbers) is their sum unless given. Post-processing."""
    num = float(np.sum(slot[pop])) if num is None else num
    low, high = slot[max(first - OUTSIDE_SLOTS, 0) : first], slot[last + 1 : last + 1 + OUTSIDE_SLOTS]
    res.outside = (float(np.sum(low)), float(np.sum(high)))
    res.outside_sd = (sigma * math.sqrt(2 * len(low)), sigma * math.sqrt(2 * len(high)))
    idx = np.array(sorted(set(np.flatnonzero(pop).tolist()) | {first, last}))
    res.lo, res.hi = float(SLOT_LO[first]), float(SLOT_HI[last])
    posidx = idx[idx > ZERO_SLOT]
    res.lo_pos = float(SLOT_LO[posidx[0]]) if posidx.size else None
    # non-whole numbers show in the populated slots, or spread thinly over every slot of the range
    # (fractions of a thin rest beside a point mass fill no slot that shows)
    nonwhole = (float(np.sum(frac[pop])), float(np.sum(frac[first : last + 1])))
    cells = (int(pop.sum()), last - first + 1)
    res.whole = all(f <= max(0.02 * num, WHOLE_SDS * sigma * math.sqrt(k)) for f, k in zip(nonwhole, cells))
    res.zero = float(slot[ZERO_SLOT]) if pop[ZERO_SLOT] else 0.0
    res.n_present = num
    res.frac = frac


def scan_column(
    x: np.ndarray,
    isna: np.ndarray,
    name: str,
    rho: float,
    mech,
    declared_kind: str | None,
    times: dict[str, np.ndarray] | None = None,
    rows: float | None = None,
) -> ScanResult:
    """Scan one column: noisy counts of its parse outcomes, read into a kind and a range.

    The cells are missing, text, numbers by log-band slot, ISO dates, ISO timestamps and clock times
    (:func:`scan_cells`). A column is a time axis (kind ``"date"``, ``unit`` "date", "timestamp" or
    "time") when its dates (clock times) hold at least 80% of the present values.

    Parameters
    ----------
    x : numpy.ndarray
        Float values, NaN for missing or text (:func:`parse_numbers`).
    isna : numpy.ndarray
        The missing-cell mask.
    name : str
        The column name.
    rho : float
        The scan's zCDP budget.
    mech : ChargedMechanisms
        Draws the noisy counts and charges them to the ledger.
    declared_kind : str or None
        A kind the user declared ("numeric", "categorical", "date", "time", or "dates": a time
        axis whose unit, dates and timestamps or clock times, the counts decide); read from the
        counts when None.
    times : dict, optional
        The text values parsed as times (:func:`parse_times_of_text`); None: no value counts as a
        date or a time.
    rows : float, optional
        The table's noisy row count, when one was drawn (a refusal then says what share is missing).

    Returns
    -------
    ScanResult

    Raises
    ------
    SchemaError
        When no values show above the noise, numbers are mixed with text, or a column declared
        numeric (date, clock time) holds (almost) no numbers (dates, clock times).
    """
    sigma = noise_sd(rho)
    y = mech.counts(
        scan_cells(x, isna, times), sigma, column=name, note="scan: missing / text / log-band / date / time counts"
    ).astype(float)
    t = _ScanTotals.read(y, sigma)
    if t.num <= 0 and t.text <= 0 and t.dated <= 0 and t.clocked <= 0:
        raise SchemaError(_no_values_message(name, y, sigma, rows))
    kind = _scan_kind(t, name, declared_kind)
    if kind in ("date", "time"):
        return _time_axis_scan(t, name, kind)
    text_all = t.text + t.dated + t.clocked
    res = ScanResult(
        kind=kind,
        n_present=t.num + text_all,
        missing=max(t.miss, 0.0) + (text_all if kind == "numeric" else 0.0),
        missing_sd=t.sd_of(t.text_cells() if kind == "numeric" else 0),
        text=text_all,
        sigma=sigma,
    )
    if kind == "numeric":
        if not t.pop.any():
            raise SchemaError(
                f"column {name!r} is declared numeric but holds (almost) no numbers; declare it "
                "categorical or fix the data"
            )
        _numeric_range(res, t.whole, t.frac, sigma, name)
    return res


def _no_values_message(name: str, y: np.ndarray, sigma: float, rows: float | None = None) -> str:
    """Why a column whose values do not show above the noise is left out, read from its noisy scan
    cells ``y`` and the noisy row count ``rows`` (already charged; the message goes to the terminal,
    nothing new is released).

    When the noisy missing count clears the noise the column is mostly missing (or not applicable):
    the message gives its noisy share of the rows (when ``rows`` is known), and says that the values
    left spread too thin over the scan's cells to show. The sum of the other noisy cells is not
    quoted: it adds the noise of every cell, far more than a handful of rows. Otherwise the column is
    too short for the budget: its values, missing or not, do not show."""
    need = math.ceil(POP_SDS * sigma * math.sqrt(2))
    tail = f"a column needs about {need} rows in one quarter decade of values"
    if y[0] < POP_SDS * sigma:
        return f"column {name!r}: its values do not show above the noise (too few rows for this budget: {tail})"
    share = ""
    if rows is not None and rows > 0:
        pct = min(100.0 * float(y[0]) / rows, 100.0)
        share = f" for about {pct:.0f}% of the rows (noisy)" if pct < 99.5 else " for over 99% of the rows (noisy)"
    return (
        f"column {name!r}: missing (or not applicable){share or ' in most rows'}: the values left do not "
        f"show above the noise ({tail})"
    )


@dataclass
class _ScanTotals:
    """The noisy counts of one scan, read: each total counts only cells (or windows of number slots)
    clearly above the noise (``POP_SDS``); the missing count is kept as drawn."""

    sigma: float
    miss: float
    #: noisy counts of whole and other numbers by slot, and the populated slots
    whole: np.ndarray
    frac: np.ndarray
    pop: np.ndarray
    num: float
    text: float
    #: ISO dates, ISO timestamps, clock times HH:MM and HH:MM:SS
    date: float
    ts: float
    clock: float
    secs: float

    @classmethod
    def read(cls, y: np.ndarray, sigma: float) -> _ScanTotals:
        """The totals of the noisy scan cells ``y`` (:func:`scan_cells`) at noise sd ``sigma``."""
        thr = POP_SDS * sigma
        whole, frac = y[2 : 2 + N_SLOTS], y[2 + N_SLOTS : 2 + 2 * N_SLOTS]
        slot = whole + frac
        pop = populated_windows(slot, sigma * math.sqrt(2), POP_SDS)
        date_c, ts_c, clock_c, secs_c = (float(v) if v >= thr else 0.0 for v in y[-N_TIME_CELLS:])
        return cls(
            sigma=sigma,
            miss=y[0],
            whole=whole,
            frac=frac,
            pop=pop,
            num=float(np.sum(slot[pop])),
            text=y[1] if y[1] >= thr else 0.0,
            date=date_c,
            ts=ts_c,
            clock=clock_c,
            secs=secs_c,
        )

    def text_cells(self) -> int:
        """How many of the text, date, timestamp and clock-time cells count (are above the noise)."""
        return sum(v > 0 for v in (self.text, self.date, self.ts, self.clock, self.secs))

    def sd_of(self, cells: int) -> float:
        """The noise sd of the missing count plus ``cells`` other scan cells (each row in one cell:
        independent noises of sd ``sigma``)."""
        return self.sigma * math.sqrt(1 + cells)

    @property
    def dated(self) -> float:
        """Dates and timestamps."""
        return self.date + self.ts

    @property
    def clocked(self) -> float:
        """Clock times, with or without seconds."""
        return self.clock + self.secs


def _scan_kind(t: _ScanTotals, name: str, declared_kind: str | None) -> str:
    """The column's kind from the scan's noisy totals: the declared kind, except that a declared time
    axis (``"dates"``) takes the unit whose values show more; undeclared, a date (clock-time) column
    when those values hold at least 80% of the present values, numeric when text holds at most 20%,
    categorical when it holds at least 80%. Numbers that show only at the noise level of the many
    windows tested (``MIXED_SDS``) do not count (their total is then zeroed in ``t``); a real mix
    of numbers and text is refused."""
    dated, clocked = t.dated, t.clocked
    if declared_kind == "dates":
        # declared a time axis (``--dates``): its unit follows the noisy counts, dates and
        # timestamps or clock times, whichever show more
        if dated <= 0 and clocked <= 0:
            raise SchemaError(
                f"column {name!r} is declared a date column (--dates) but holds (almost) no ISO dates, "
                "timestamps or clock times (YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS], HH:MM[:SS]); leave it out of "
                "--dates, declare it categorical, or fix the data"
            )
        return "time" if clocked > dated else "date"
    if declared_kind is not None:
        return declared_kind
    # a date column when the parseable dates dominate (as numbers do for a numeric column);
    # otherwise dates are text like any other
    present = t.text + t.num + dated + clocked
    if dated > 0 and dated >= 0.8 * present:
        return "date"
    if clocked > 0 and clocked >= 0.8 * present:
        return "time"
    share = (t.text + dated + clocked) / present
    slot = t.whole + t.frac
    if 0.2 < share < 0.8 and not populated_windows(slot, t.sigma * math.sqrt(2), MIXED_SDS).any():
        # the numbers show only at the level of noise in one of the many windows tested:
        # a text column, not a refusal
        t.num, share = 0.0, 1.0
    if share >= 0.8:
        return "categorical"
    if share <= 0.2:
        return "numeric"
    raise SchemaError(
        f"column {name!r} mixes numbers and text (about {100 * share:.0f}% text); declare it "
        "with --categorical, or mark the text as missing with --na-values"
    )


def _time_axis_scan(t: _ScanTotals, name: str, kind: str) -> ScanResult:
    """The scan of a date (``kind`` "date") or clock-time ("time") column from its noisy totals: the
    values that are not of its kind (text, numbers, the other time kind) are missing values of it;
    timestamps when at least 20% of the dates carry a time of day, whole minutes unless seconds are
    common. A clock-time axis is public (minutes since midnight, 0..1440): no range pass follows.
    Refuses a column whose values of that kind do not show above the noise."""
    if kind == "date":
        if t.dated <= 0:
            raise SchemaError(
                f"column {name!r} is declared a date column but holds (almost) no ISO dates "
                "(YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS]); declare it categorical or fix the data"
            )
        return ScanResult(
            kind="date",
            n_present=t.dated,
            missing=max(t.miss, 0.0) + t.text + t.num + t.clocked,
            missing_sd=t.sd_of((t.text > 0) + 2 * int(t.pop.sum()) + (t.clock > 0) + (t.secs > 0)),
            text=t.text,
            sigma=t.sigma,
            unit="timestamp" if t.ts >= 0.2 * t.dated else "date",
        )
    if t.clocked <= 0:
        raise SchemaError(
            f"column {name!r} is declared a clock-time column but holds (almost) no clock times "
            "(HH:MM[:SS]); declare it categorical or fix the data"
        )
    return ScanResult(
        kind="date",
        n_present=t.clocked,
        missing=max(t.miss, 0.0) + t.text + t.num + t.dated,
        missing_sd=t.sd_of((t.text > 0) + 2 * int(t.pop.sum()) + (t.date > 0) + (t.ts > 0)),
        text=t.text,
        lo=0.0,
        hi=MINUTES,
        whole=t.secs < 0.2 * t.clocked,
        sigma=t.sigma,
        unit="time",
    )


def scan_dates(days: np.ndarray, name: str, rho: float, mech, scan: ScanResult) -> ScanResult:
    """The range pass of a date column: its days since 1970-01-01 counted by scan slot, noisily.

    The counts (whole days / days with a time of day by slot) are read as a numeric scan's, range
    grown the same way; the range is then cut to the time axis. Rows that are not dates are in no
    cell.

    Parameters
    ----------
    days : numpy.ndarray
        Days since 1970-01-01, NaN for rows that are not dates.
    name : str
        The column name.
    rho : float
        The pass's zCDP budget.
    mech : ChargedMechanisms
        Draws the noisy counts and charges them to the ledger.
    scan : ScanResult
        The column's scan (kind "date"); updated in place.

    Returns
    -------
    ScanResult
        ``scan``, with its range, wholeness and count of dates.

    Raises
    ------
    SchemaError
        When no band shows above the noise.
    """
    sigma = noise_sd(rho)
    y = mech.counts(slot_cells(days), sigma, column=name, note="date range: log-band counts of days since 1970").astype(
        float
    )
    whole, frac = y[:N_SLOTS], y[N_SLOTS:]
    if not populated_windows(whole + frac, sigma * math.sqrt(2), POP_SDS).any():
        raise SchemaError(
            f"column {name!r}: no range found for its dates (too few rows for this budget: it needs about "
            f"{math.ceil(POP_SDS * sigma * math.sqrt(2))} rows in one quarter decade of days since 1970)"
        )
    n_dates = scan.n_present
    _numeric_range(scan, whole, frac, sigma, name)
    scan.n_present = max(n_dates, scan.n_present)
    scan.lo, scan.hi = max(scan.lo, DAY_MIN), min(scan.hi, DAY_MAX)
    if scan.hi <= scan.lo:
        scan.hi = min(scan.lo + 1.0, DAY_MAX + 1.0)
    scan.lo_pos, scan.zero = None, 0.0  # a linear axis; 1970-01-01 is no special day
    return scan


def _grow_scan(slot: np.ndarray, first: int, last: int, sd: float) -> tuple[int, int]:
    """The scan's range grown by the window of 1, 2 or 4 bands right next to it whose noisy sum
    reaches ``GROW_SDS`` sds of that sum (a tail spread thinly over several bands), repeatedly; a
    window never reaches or crosses the exact-zero slot (see the neighbouring-band rule), and grows
    the range only when its band next to the range reaches ``TROUGH_SDS`` sds: a tail fills the band
    beside the rows, while a window of noise a band or more away would widen the range by a decade
    on noise alone."""
    grown = True
    while grown:
        grown = False
        lo, hi = _reach(first, last)
        for w in (1, 2, 4):
            # left: bands [first - w, first), all on first's side of zero
            ok = first - w >= lo and slot[first - 1] >= TROUGH_SDS * sd  # the tail fills the band next to the range
            if ok and slot[first - w : first].sum() >= GROW_SDS * sd * math.sqrt(w):
                first, grown = first - w, True
                break
            ok = last + w <= hi and slot[last + 1] >= TROUGH_SDS * sd
            if ok and slot[last + 1 : last + 1 + w].sum() >= GROW_SDS * sd * math.sqrt(w):
                last, grown = last + w, True
                break
        if not grown:
            jump = _jump_gap(slot, first, last, sd)
            if jump is not None:
                (first, last), grown = jump, True
    return first, last


def _jump_gap(slot: np.ndarray, first: int, last: int, sd: float) -> tuple[int, int] | None:
    """The range ``first..last`` (slots) carried over a gap of up to ``GAP_BANDS`` bands to a window
    of 1, 2 or 4 bands beyond it whose noisy sum reaches ``GAP_SDS`` sds of that sum, or None.

    Values on a coarse lattice (years married 0.5, 2.5, 6, 9, 13, 16.5, 23) leave whole quarter
    decades empty between them; the band next to the range then reads noise, the tail rule of
    :func:`_grow_scan` stops there, and every row beyond the gap would be clipped into the range's
    end. A window past the gap counts at the level noise alone reaches in ``REST_ALPHA`` of columns
    over the windows tested, and never on the far side of zero. Post-processing."""
    lo, hi = _reach(first, last)
    for gap in range(1, GAP_BANDS + 1):
        for w in (1, 2, 4):
            end = first - gap  # left: bands [end - w, end)
            if end - w >= lo and slot[end - w : end].sum() >= GAP_SDS * sd * math.sqrt(w):
                return end - w, last
            start = last + 1 + gap  # right: bands [start, start + w)
            if start + w - 1 <= hi and slot[start : start + w].sum() >= GAP_SDS * sd * math.sqrt(w):
                return first, start + w - 1
    return None


def _reach(first: int, last: int) -> tuple[int, int]:
    """The outermost slots the range ``first..last`` may grow to on its left and right: never to
    or across the exact-zero slot, and not at all from an end that is that slot (see the
    neighbouring-band rule of :func:`_numeric_range`)."""
    lo = first if first == ZERO_SLOT else (ZERO_SLOT + 1 if first > ZERO_SLOT else 0)
    hi = last if last == ZERO_SLOT else (ZERO_SLOT - 1 if last < ZERO_SLOT else N_SLOTS - 1)
    return lo, hi


def rest_cells(x: np.ndarray, v: float) -> np.ndarray:
    """Exact counts of the rows equal to ``v`` and of the other numbers by decade (noised by the caller).

    Parameters
    ----------
    x : numpy.ndarray
        Float values, NaN for missing or text.
    v : float
        The single value the scan found.

    Returns
    -------
    numpy.ndarray
        int64 counts: [rows equal to ``v``, the other numbers by decade group (``DECADE_GROUP``)].
    """
    if not isinstance(x, np.ndarray):  # counted where the table lives (discovery/source.py)
        return x.rest_cells(v)
    num = x[~np.isnan(x)]
    rest = num[num != v]
    groups = np.bincount(DECADE_GROUP[slot_index(rest)], minlength=N_DECADES)
    return np.concatenate([[int(np.sum(num == v))], groups]).astype(np.int64)
