"""Private schema discovery: column kinds, categorical levels, numeric bounds and bin edges, all
read from the data only through noisy counts charged to a privacy ledger.

First (when the pipeline passes the release's budget) a noisy row count: a small table gets a larger
share of the budget for its schema (up to ``MAX_AUTO_SHARE``, :func:`discovery_budget`), since the
noise of a count does not shrink with the table. Then, per discovered column (names are public; nothing else about the data is):

1. **Scan** (every column whose kind or range is unknown): one vector of counts, one cell per row,
   noised with the discrete Gaussian (:func:`ddssp.dp.discovery.noisy_counts`). The cells are fixed
   in advance (public): missing, text (not a number), and for numbers a signed log-spaced band
   (four per decade from 1e-6 to 1e12, exact zero its own cell), split by whole / not whole, and
   four cells for text that parses as an ISO date, an ISO timestamp, a clock time HH:MM or
   HH:MM:SS. From the noisy cells (only cells clearly above the noise count) come the kind
   (numeric, categorical, or a date / clock-time column when those values hold at least 80% of
   the present values; a mix of numbers and text is refused), the range (outer edges of the
   populated bands, grown by neighbouring bands that show, alone or a few together), whether the
   numbers are whole, and the mass at exactly zero.
   **Date columns** then spend another scan's share on the range of their values as days since
   1970-01-01 (the same log-band slots, on that axis, grown the same way), and go on as numeric
   columns on that axis with linear grids (step 3); values that are not dates are missing values
   of the column. They decode to ISO dates (or timestamps, when at least 20% of the dates carry a
   time of day). **Clock-time columns** live on minutes since midnight, a public axis [0, 1440]:
   no range pass; they go straight to step 3 and decode to HH:MM.
2. **Categorical**: stable key release (:func:`ddssp.dp.discovery.threshold_counts`): noisy counts
   of the observed labels, kept when they reach a threshold chosen so that a label held by one row
   is released with probability at most the column's delta share. Missing cells are a label like any
   other. Labels not released (and labels never seen) map to the ``<other>`` level. Two rounds: a
   first small share of each column's key budget releases its large labels; the rest of all the
   categorical columns' key budgets is pooled and spent on a second key release of the labels not
   yet released, shared by the noisy share of each column's rows the first round left out.
3. **Numeric**: noisy counts on a public grid inside the range found in step 1: one cell per whole
   number when the numbers are whole and few; else coarse to fine, half the budget each: a 16-cell
   grid (log-spaced when the range spans decades) cut to its populated span, grown by windows of
   adjacent cells whose noisy sum shows (thin tails), then a finer grid (or one cell per whole
   number) inside that span, trimmed only inside the outer coarse cells (by a step fit). Cells are windows of
   adjacent cells when single cells are lost in the noise (small tables). A value found alone by
   the scan gets its own bin, the other values are located by decade and binned. Whole numbers
   over a short range (at most ``max_levels``) become ordered levels; otherwise equal-frequency bin
   edges are read from the cumulative noisy counts, and a heavy point mass (a whole number, or
   zero, holding at least 1/bins of the rows) gets its own bin that decodes to exactly that value.
   Each other bin decodes to the median of the noisy fine counts inside it (fits, every decode),
   and keeps how those counts spread inside it (at most ``WITHIN_CELLS`` weighted runs of cells),
   from which synthetic rows draw values inside the bin. Values outside the range are clipped into
   the end bins.

Decisions use noisy outputs only (post-processing), so the column kind, the number of levels and
even the refusals ("a single value", "an identifier", "all missing") are DP outputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.columns import Column, Within
from ddssp.data.dates import DAY_MAX, DAY_MIN, MINUTES, format_day
from ddssp.data.discovery_cells import (
    DECADE_HI,
    DECADE_LO,
    MISSING_LABEL,
    N_SLOTS,
    N_TIME_CELLS,
    SLOT_HI,
    SLOT_LO,
    ZERO_SLOT,
    grid_counts,
    label_counts,
    parse_numbers,
    parse_times_of_text,
    rest_cells,
    scan_cells,
    slot_cells,
)
from ddssp.data.spans import outer_span, populated_windows, span_sds, step_start
from ddssp.errors import SchemaError

OTHER_LABEL = "<other>"

SCAN_FRACTION = 0.25  # of a column's rho, when the column needs a scan
#: noisy count a scan cell must reach to count as populated (in noise sds; ~300 cells per column,
#: so an empty cell passes with probability ~1e-3 per column)
POP_SDS = 4.5
#: a slot next to the populated range joins it when its noisy count reaches this many sds
ADJACENT_SDS = 2.0
#: a window of grid cells right next to a populated span joins it when its noisy sum reaches this
#: many sds of that sum (a thin tail spread over cells each lost in the noise; a few windows per
#: side are tested, so a hard end of the range is falsely extended in under 1% of the cuts)
GROW_SDS = 3.0
GRID_CELLS = 256
#: cells of the coarse grid (the first of the two numeric passes)
COARSE_CELLS = 16
MAX_INT_CELLS = 4096
#: sub-cells per bin kept for synthetic rows (runs of adjacent fine-grid cells; keeps files small)
WITHIN_CELLS = 16
DEFAULT_MAX_LEVELS = 32
MAX_CATEGORICAL_LEVELS = 200


#: discovery's share of the zCDP budget is raised (up to this) when the noisy row count is small
MAX_AUTO_SHARE = 0.6
#: ... so that the noise sd of one column's full discovery budget is at most this share of the rows
#: (with a column's whole key budget in one round, a label would then need about 2.5% of the rows)
TARGET_SD_SHARE = 1 / 300
#: share of a categorical column's key budget spent on the first of its two key releases; the rest
#: of every categorical column's key budget is pooled for the second round
KEY_FIRST = 0.2
#: a column's weight in the second round: (noisy share of its rows left unreleased) ** KEY_POWER,
#: at least KEY_FLOOR (so the pool is always spent)
KEY_POWER = 1.5
KEY_FLOOR = 1e-4
#: the numbers of a column are whole unless the noisy count of non-whole numbers reaches this many
#: sds of its noise (and 2% of the numbers)
WHOLE_SDS = 3.5
#: share of the discovery budget spent on the noisy row count that sets the two above
ROWS_FRACTION = 0.01


# ----------------------------------------------------------------------------- the discovery
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
    """

    kind: str | None  # "numeric" / "categorical" / "date"
    n_present: float  # noisy count of present (non-missing) cells, populated cells only
    missing: float  # noisy missing + text count (numeric columns: cells that are not numbers)
    lo: float = 0.0
    hi: float = 0.0
    lo_pos: float | None = None  # lower edge of the lowest populated positive band
    whole: bool = False
    zero: float = 0.0  # noisy count of exact zeros
    text: float = 0.0
    sigma: float = 0.0
    unit: str | None = None  # time-axis columns: "date", "timestamp" or "time"


@dataclass
class DiscoveryReport:
    """What discovery decided, per column (printed by the CLI; the values are DP outputs).

    Attributes
    ----------
    notes : dict
        ``{column: what was found}``.
    categorical : list of str
        The columns discovered as categorical.
    unresolved : dict
        ``{column: why}`` for the columns discovery could not resolve (no values, no label released,
        a single value, numbers mixed with text); post-processing of noisy counts, so public.
    rows : float or None
        The noisy row count, when one was drawn.
    share : float or None
        Discovery's share of the release's zCDP budget, when chosen from it.
    """

    notes: dict[str, str] = field(default_factory=dict)
    categorical: list[str] = field(default_factory=list)
    #: columns discovery could not resolve, {name: why} (no values, no label released, a single
    #: value, numbers mixed with text); post-processing of noisy counts, so public
    unresolved: dict[str, str] = field(default_factory=dict)
    rows: float | None = None  # the noisy row count, when one was drawn
    share: float | None = None  # discovery's share of the release's zCDP budget, when chosen from it

    @property
    def dropped(self) -> dict[str, str]:
        """The unresolved columns, which the release leaves out (or refuses, when strict)."""
        return self.unresolved


def _sigma(rho: float) -> float:
    return 1.0 / math.sqrt(2.0 * rho)


def _numeric_range(res: ScanResult, whole: np.ndarray, frac: np.ndarray, sigma: float) -> None:
    """Range, wholeness and zero mass of the numbers from their noisy slot counts (whole numbers by
    slot, other numbers by slot), into ``res``. Post-processing."""
    slot = whole + frac
    pop = populated_windows(slot, sigma * math.sqrt(2), POP_SDS)
    num = float(np.sum(slot[pop]))
    idx = np.flatnonzero(pop)
    first, last = int(idx[0]), int(idx[-1])
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
    first, last = _grow_scan(slot, first, last, sigma * math.sqrt(2))
    idx = np.array(sorted(set(idx.tolist()) | {first, last}))
    res.lo, res.hi = float(SLOT_LO[first]), float(SLOT_HI[last])
    posidx = idx[idx > ZERO_SLOT]
    res.lo_pos = float(SLOT_LO[posidx[0]]) if posidx.size else None
    nonwhole = float(np.sum(frac[pop]))
    res.whole = nonwhole <= max(0.02 * num, WHOLE_SDS * sigma * math.sqrt(pop.sum()))
    res.zero = float(slot[ZERO_SLOT]) if pop[ZERO_SLOT] else 0.0
    res.n_present = num


def scan_column(
    x: np.ndarray,
    isna: np.ndarray,
    name: str,
    rho: float,
    mech,
    declared_kind: str | None,
    times: dict[str, np.ndarray] | None = None,
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

    Returns
    -------
    ScanResult

    Raises
    ------
    SchemaError
        When no values show above the noise, numbers are mixed with text, or a column declared
        numeric (date, clock time) holds (almost) no numbers (dates, clock times).
    """
    sigma = _sigma(rho)
    y = mech.counts(
        scan_cells(x, isna, times), sigma, column=name, note="scan: missing / text / log-band / date / time counts"
    ).astype(float)
    thr = POP_SDS * sigma
    miss, text = y[0], y[1]
    whole, frac = y[2 : 2 + N_SLOTS], y[2 + N_SLOTS : 2 + 2 * N_SLOTS]
    slot = whole + frac
    pop = populated_windows(slot, sigma * math.sqrt(2), POP_SDS)
    num = float(np.sum(slot[pop]))
    text_c = text if text >= thr else 0.0
    date_c, ts_c, clock_c, secs_c = (float(v) if v >= thr else 0.0 for v in y[-N_TIME_CELLS:])
    dated = date_c + ts_c
    clocked = clock_c + secs_c
    if num <= 0 and text_c <= 0 and dated <= 0 and clocked <= 0:
        raise SchemaError(
            f"column {name!r}: no values found (all missing, or too few rows for this budget: a "
            f"column needs about {math.ceil(POP_SDS * sigma * math.sqrt(2))} rows in one quarter decade of "
            "values)"
        )
    kind = declared_kind
    if kind == "dates":
        # declared a time axis (``--dates``): its unit follows the noisy counts, dates and
        # timestamps or clock times, whichever show more
        if dated <= 0 and clocked <= 0:
            raise SchemaError(
                f"column {name!r} is declared a date column (--dates) but holds (almost) no ISO dates, "
                "timestamps or clock times (YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS], HH:MM[:SS]); leave it out of "
                "--dates, declare it categorical, or fix the data"
            )
        kind = "time" if clocked > dated else "date"
    if kind is None:
        # a date column when the parseable dates dominate (as numbers do for a numeric column);
        # otherwise dates are text like any other
        present = text_c + num + dated + clocked
        if dated > 0 and dated >= 0.8 * present:
            kind = "date"
        elif clocked > 0 and clocked >= 0.8 * present:
            kind = "time"
        else:
            share = (text_c + dated + clocked) / present
            if share >= 0.8:
                kind = "categorical"
            elif share <= 0.2:
                kind = "numeric"
            else:
                raise SchemaError(
                    f"column {name!r} mixes numbers and text (about {100 * share:.0f}% text); declare it "
                    "with --categorical, or mark the text as missing with --na-values"
                )
    if kind == "date":
        if dated <= 0:
            raise SchemaError(
                f"column {name!r} is declared a date column but holds (almost) no ISO dates "
                "(YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS]); declare it categorical or fix the data"
            )
        # non-dates (text, numbers, clock times) in a date column are missing values of it
        return ScanResult(
            kind="date",
            n_present=dated,
            missing=max(miss, 0.0) + text_c + num + clocked,
            text=text_c,
            sigma=sigma,
            unit="timestamp" if ts_c >= 0.2 * dated else "date",
        )
    if kind == "time":
        if clocked <= 0:
            raise SchemaError(
                f"column {name!r} is declared a clock-time column but holds (almost) no clock times "
                "(HH:MM[:SS]); declare it categorical or fix the data"
            )
        # the axis is public (minutes since midnight, 0..1440): no range pass; whole minutes unless
        # seconds are common
        return ScanResult(
            kind="date",
            n_present=clocked,
            missing=max(miss, 0.0) + text_c + num + dated,
            text=text_c,
            lo=0.0,
            hi=MINUTES,
            whole=secs_c < 0.2 * clocked,
            sigma=sigma,
            unit="time",
        )
    text_all = text_c + dated + clocked
    res = ScanResult(
        kind=kind,
        n_present=num + text_all,
        missing=max(miss, 0.0) + (text_all if kind == "numeric" else 0.0),
        text=text_all,
        sigma=sigma,
    )
    if kind == "numeric":
        if not pop.any():
            raise SchemaError(
                f"column {name!r} is declared numeric but holds (almost) no numbers; declare it "
                "categorical or fix the data"
            )
        _numeric_range(res, whole, frac, sigma)
    return res


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
    sigma = _sigma(rho)
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
    _numeric_range(scan, whole, frac, sigma)
    scan.n_present = max(n_dates, scan.n_present)
    scan.lo, scan.hi = max(scan.lo, DAY_MIN), min(scan.hi, DAY_MAX)
    if scan.hi <= scan.lo:
        scan.hi = min(scan.lo + 1.0, DAY_MAX + 1.0)
    scan.lo_pos, scan.zero = None, 0.0  # a linear axis; 1970-01-01 is no special day
    return scan


def _grow_scan(slot: np.ndarray, first: int, last: int, sd: float) -> tuple[int, int]:
    """The scan's range grown by the window of 1, 2 or 4 bands right next to it whose noisy sum
    reaches ``GROW_SDS`` sds of that sum (a tail spread thinly over several bands), repeatedly; a
    window never reaches or crosses the exact-zero slot (see the neighbouring-band rule)."""
    grown = True
    while grown:
        grown = False
        for w in (1, 2, 4):
            # left: bands [first - w, first), all on first's side of zero
            ok = first - w >= (ZERO_SLOT + 1 if first > ZERO_SLOT else 0) and first != ZERO_SLOT
            if ok and slot[first - w : first].sum() >= GROW_SDS * sd * math.sqrt(w):
                first, grown = first - w, True
                break
            ok = last + w <= (ZERO_SLOT - 1 if last < ZERO_SLOT else N_SLOTS - 1) and last != ZERO_SLOT
            if ok and slot[last + 1 : last + 1 + w].sum() >= GROW_SDS * sd * math.sqrt(w):
                last, grown = last + w, True
                break
    return first, last


def _single(name: str) -> str:
    return f"column {name!r} holds a single value; drop it (it carries no information)"


def _confident_single(rest: float, sd: float, n: float) -> bool:
    """The noisy count of rows outside the one value found is within 2 sds of zero, and the noise is
    small enough (sd below 1% of the rows) for that to mean "a single value" rather than "too noisy to see
    the others"."""
    return rest < 2 * sd and sd < 0.01 * max(n, 1.0)


def _unique_label(label: str, taken: set[str]) -> str:
    while label in taken:
        label = label + "_"
    return label


def _keys(s: pd.Series, name: str, rho: float, delta: float, mech, known: dict) -> tuple[dict[str, float], int, float]:
    """Stable key release of the labels of ``s`` not in ``known`` (released before); returns the
    released ``{label: noisy count}``, the threshold and the noise sd."""
    counts = {k: v for k, v in label_counts(s).items() if k not in known}
    return (*mech.keys(counts, _sigma(rho), delta, column=name), _sigma(rho))


def discover_categorical(
    s: pd.Series, name: str, rho: float, delta: float, mech, scan: ScanResult | None, first: tuple | None = None
):
    """Discover a categorical column's levels by stable key release.

    Labels not released (and labels never seen) go to an ``<other>`` level of their own; missing
    cells get their own level when released. With ``first`` (an earlier key release of the column,
    from :func:`_keys`), this is its second round: a key release of the labels the first did not
    release, and the levels are the labels either round released.

    Parameters
    ----------
    s : pandas.Series
        The raw column.
    name : str
        The column name.
    rho : float
        The column's zCDP budget.
    delta : float
        The delta of this key release: a label held by one row is released by it with at most this
        probability.
    mech : ChargedMechanisms
        Draws the noisy counts and charges them to the ledger.
    scan : ScanResult or None
        The column's scan, if it had one (used to refuse a single-valued column).
    first : tuple, optional
        ``(released, threshold, sigma)`` of the column's first key release.

    Returns
    -------
    col : Column
    note : str
        What was found, for the report.

    Raises
    ------
    SchemaError
        When no label is released, or the column holds a single value.
    """
    released, threshold, sigma = _keys(s, name, rho, delta, mech, first[0] if first else {})
    if first:  # the labels of both rounds (each counted by one of them)
        released = {**first[0], **released}
        threshold = min(first[1], threshold)
    has_missing = MISSING_LABEL in released
    labels = {k: v for k, v in released.items() if k != MISSING_LABEL}
    if not labels:
        raise SchemaError(
            f"column {name!r}: no label is held by enough rows to be released at this budget (a label "
            f"needs about {threshold} rows): an identifier or free-text column, or too few rows"
        )
    if len(labels) > MAX_CATEGORICAL_LEVELS:  # post-processing: keep the largest noisy counts
        keep = sorted(labels, key=lambda k: -labels[k])[:MAX_CATEGORICAL_LEVELS]
        labels = {k: labels[k] for k in keep}
    if len(labels) == 1 and not has_missing and scan is not None:
        # rows outside the one label, estimated from the scan (present + missing) minus its count
        rest = scan.n_present + scan.missing - next(iter(labels.values()))
        sd = math.sqrt(2 * scan.sigma**2 + (first[2] if first and set(labels) <= set(first[0]) else sigma) ** 2)
        if _confident_single(rest, sd, scan.n_present):
            raise SchemaError(_single(name))
    keys = list(labels)
    try:
        keys.sort(key=float)
    except ValueError:
        keys.sort()
    other = _unique_label(OTHER_LABEL, set(keys) | {MISSING_LABEL})
    # labels that are not released (and labels never seen) go to an <other> level of their own,
    # never to a released label: a binary column keeps <other> as its third level
    levels = list(keys) + [other]
    catch = other
    na = catch
    if has_missing:
        na = MISSING_LABEL
        levels.insert(len(keys), na)
    col = Column.categorical(name, levels, missing=catch).with_na(na)
    note = (
        f"categorical, {len(keys)} released label(s)"
        + (" + missing" if has_missing else "")
        + f" + {other} (threshold {threshold})"
    )
    return col, note


def _equal_frequency(grid: np.ndarray, y: np.ndarray, bins: int, forced: Iterable[int]) -> list[float]:
    """Edges: grid ends, cuts where the cumulative noisy count (forced cells left out) crosses
    j / bins' of its total, and both edges of every forced cell."""
    forced = sorted(set(int(i) for i in forced))
    w = np.clip(y.astype(float), 0, None)
    w_free = w.copy()
    w_free[forced] = 0.0
    b_free = max(1, bins - len(forced))
    total = w_free.sum()
    edges = {float(grid[0]), float(grid[-1])}
    if total > 0 and b_free > 1:
        cum = np.cumsum(w_free)
        for j in range(1, b_free):
            i = int(np.searchsorted(cum, j * total / b_free, side="left"))
            edges.add(float(grid[min(i + 1, len(grid) - 1)]))
    for i in forced:
        edges.add(float(grid[i]))
        edges.add(float(grid[i + 1]))
    return sorted(edges)


def _grid_cells(n: float, sigma: float) -> int:
    """Cells of a numeric grid: about a few noise sds of rows per cell on average (a finer grid
    only adds noise), between 8 and ``GRID_CELLS``."""
    return int(np.clip(n / (3.0 * sigma), 8, GRID_CELLS))


def _make_grid(
    lo: float, hi: float, lo_pos: float | None, cells: int, whole: bool, zero: bool, linear: bool = False
) -> np.ndarray:
    """Edges of ``cells`` cells over [lo, hi]: log-spaced when the (non-negative) range spans more
    than 50x (unless ``linear``: a time axis), else linear; whole-number edges for whole numbers;
    zero its own cell when present."""
    if not linear and lo >= 0 and lo_pos is not None and lo_pos > 0 and hi / lo_pos > 50:
        g = np.geomspace(lo_pos, hi, cells + 1 - (lo < lo_pos))
        grid = np.concatenate([[lo], g]) if lo < lo_pos else g
    else:
        grid = np.linspace(lo, hi, cells + 1)
    if whole:
        grid = np.unique(np.round(grid))
    if zero and lo <= 0 <= hi:  # zero gets cell [0, next edge)
        grid = np.unique(np.concatenate([grid, [0.0, 1.0] if whole else [0.0]]))
        grid = grid[(grid >= lo) & (grid <= max(hi, 1.0 if whole else 0.0))]
    if len(grid) < 2:
        grid = np.array([lo, max(hi, lo + 1.0)])
    return grid


def discover_numeric(
    x: np.ndarray, name: str, rho: float, mech, scan: ScanResult, bins: int | None, max_levels: int
) -> tuple[Column, str]:
    """Discover a numeric column's levels or bins from noisy counts on public grids.

    A time-axis column (``scan.unit``) is discovered the same way on its axis (days since 1970-01-01,
    or minutes since midnight), with linear grids, and labelled with ISO text.

    Parameters
    ----------
    x : numpy.ndarray
        Float values (a time-axis column: values on its axis), NaN for missing or text.
    name : str
        The column name.
    rho : float
        The zCDP budget left for the column after its scan (and range pass).
    mech : ChargedMechanisms
        Draws the noisy counts and charges them to the ledger.
    scan : ScanResult
        The column's scan (kind, range, whole numbers, zeros).
    bins : int or None
        The number of bins; chosen from the noisy count of values when None.
    max_levels : int
        Whole numbers over at most this many values become ordered levels.

    Returns
    -------
    col : Column
    note : str
        What was found, for the report.

    Raises
    ------
    SchemaError
        When the column holds a single value.
    """
    sigma = _sigma(rho)
    unit = scan.unit
    linear = unit is not None

    def show(v: float) -> str:
        return format_day(v, unit) if unit is not None else f"{v:g}"

    n = max(scan.n_present, 1.0)
    lo, hi = scan.lo, scan.hi
    int_grid = False
    keep = None  # (lo, hi) the final cut keeps in range, when a coarse pass showed where rows are
    if scan.whole:
        lo_i = math.ceil(lo)
        hi_i = max(lo_i, math.floor(hi) if hi <= 0 else math.ceil(hi) - 1)
        span = hi_i - lo_i + 1
        # one cell per whole number when they are few enough to be levels, or when the noise lets
        # each cell hold a few sds of rows on average
        if span <= MAX_INT_CELLS and (span <= max_levels or span <= _grid_cells(n, sigma)):
            int_grid = True
            grid = np.arange(lo_i, hi_i + 2, dtype=float)  # cell [v, v+1) per whole number v
    single = (int_grid and len(grid) == 2) or (not int_grid and hi <= lo)
    point = None  # a value found alone by the scan: its own bin, decoding to exactly it
    if single:
        # one value found: half the budget on the other numbers by decade (are there any, and
        # where?), half on a grid from the value to them (as the fine grid below)
        v = float(grid[0]) if int_grid else lo
        sigma = _sigma(rho / 2)
        y = mech.counts(rest_cells(x, v)[1:], sigma, column=name, note="counts of the other values by decade").astype(
            float
        )
        span = outer_span(y, sigma, span_sds(len(y)))
        if span is None:
            if _confident_single(float(y.sum()), sigma * math.sqrt(len(y)), n):
                raise SchemaError(_single(name))
            raise SchemaError(
                f"column {name!r}: one value {show(v)} found; the other values are too few for this budget "
                "to place (declare the column, or give discovery more budget)"
            )
        a, b = span
        int_grid, point = False, v
        lo, hi = min(v, float(DECADE_LO[a])), max(v + scan.whole, float(DECADE_HI[b]))
        # the fine cut below keeps it all: the decades hold the rows, and the fine cells would
        # split them into cells each lost in the noise
        keep = (lo, math.nextafter(hi, math.inf))
        pos = np.flatnonzero(DECADE_LO[a : b + 1] > 0)
        lo_pos = float(DECADE_LO[a + pos[0]]) if pos.size else None
    if int_grid:
        y = mech.counts(grid_counts(x, grid), sigma, column=name, note=f"counts on a {len(grid) - 1}-cell grid").astype(
            float
        )
    else:
        if point is None:
            # coarse to fine, half the budget each: a grid over the scan's range (whose ends are a quarter
            # decade wide), cut to the part the noisy counts show populated; then a grid inside that part
            # (one cell per whole number when few enough), so years 2003-2009 stay 2003-2009 and
            # coordinates stay in their city
            sigma = _sigma(rho / 2)
            # few coarse cells: a thin tail (a few % of the rows over a decade) must show above the noise
            # of the cells it spans, or the cut below would clip it away
            k = min(COARSE_CELLS, _grid_cells(n, sigma))
            grid = _make_grid(lo, hi, scan.lo_pos, k, _whole_edges(scan, lo, hi, k), scan.zero > 0, linear)
            y = mech.counts(
                grid_counts(x, grid), sigma, column=name, note=f"coarse counts on a {len(grid) - 1}-cell grid"
            ).astype(float)
            # the populated span, grown outwards by windows of adjacent cells whose noisy sum shows
            # above the noise of the window: a tail of many thin cells holds rows in aggregate
            a, b = outer_span(y, sigma, span_sds(len(y)), GROW_SDS) or (0, len(y) - 1)
            lo, hi = float(grid[a]), float(grid[b + 1])
            lo_pos = scan.lo_pos
            # the cut of the fine grid below may trim only inside the two outer coarse cells: the coarse
            # cells between hold the rows the coarse counts showed, and a fine grid splits a thin tail
            # into cells each lost in the noise
            keep = (float(grid[a + 1]), float(grid[b]))
        # the fine grid: finer than the coarse one (its empty cells are cut off again below)
        cells = min(GRID_CELLS, 4 * _grid_cells(n, sigma))
        if scan.whole and math.ceil(hi) - math.ceil(lo) <= max(max_levels, cells):
            int_grid = True
            grid = np.arange(math.ceil(lo), max(math.ceil(hi), math.ceil(lo) + 1) + 1, dtype=float)
        else:
            whole = _whole_edges(scan, lo, hi, cells)
            grid = _make_grid(lo, hi, lo_pos if lo <= 0 else lo, cells, whole, scan.zero > 0, linear)
            if point is not None:  # the point mass gets a cell [v, v + 1) (whole numbers) of its own
                step = 1.0 if scan.whole else float(np.min(np.diff(grid))) / 64
                grid = np.unique(np.concatenate([grid, [point, point + step]]))
        y = mech.counts(
            grid_counts(x, grid), sigma, column=name, note=f"fine counts on a {len(grid) - 1}-cell grid"
        ).astype(float)
    # cut to the outermost populated cells (years 2003-2009 become 7 levels, a city's latitudes stay
    # in the city); the test level makes a false extension of the range ~1% likely per column. After
    # a coarse pass (which grew the range by its thin tails) the cut only trims its outer cells
    span = outer_span(y, sigma, span_sds(len(y)), GROW_SDS if keep is None else None)
    if span is not None and int_grid and span[0] == span[1]:
        # one whole number shows: a single value, or the others are thin over the whole grid (then
        # it stays uncut: every value must decode to a number, none to an empty cell)
        rest = float(y.sum() - y[span[0]])
        if _confident_single(rest, sigma * math.sqrt(max(len(y) - 1, 1)), n):
            raise SchemaError(_single(name))
        span = None
    if span is not None:
        a, b = span
        if keep is not None and keep[0] <= keep[1]:  # never inside the coarse cells that hold the rows
            inner_a = int(np.searchsorted(grid, keep[0], side="right")) - 1
            inner_b = int(np.searchsorted(grid, keep[1], side="left")) - 1
            a = max(0, min(a, inner_a))
            b = min(len(y) - 1, max(b, a, inner_b))
            # and where a least-squares step fit to the fine counts keeps more of an outer coarse
            # cell, the step fit wins: its fine cells are each too thin for the threshold above (for
            # spiky counts, such as whole numbers on a fine grid, the threshold's edge stands)
            a = min(a, max(0, min(step_start(y[: inner_a + 1]), inner_a)))
            b = max(b, min(len(y) - 1, max(len(y) - 1 - step_start(y[inner_b:][::-1]), inner_b)))
        grid, y = grid[a : b + 2], y[a : b + 1]
    n_bins = bins if bins is not None else int(np.clip(n // (40 * sigma), 4, 10))
    missing = MISSING_LABEL if scan.missing >= POP_SDS * scan.sigma * math.sqrt(2) else None
    thr = 3.5 * sigma
    # whole numbers become ordered levels when few (at most max_levels, and not more than the noise
    # lets the rows fill: a small table gets bins); the populated span above set their ends
    if int_grid and len(grid) - 1 <= min(max_levels, max(16, 2 * _grid_cells(n, sigma))):
        a, b = 0, len(grid) - 2
        values = grid[a : b + 1]
        col = Column.levels(name, values, missing=missing, unit=unit)
        col.with_na(missing if missing is not None else col.labels[_median_index(y[a : b + 1])])
        what = "days" if unit is not None else "whole numbers"
        return col, (
            f"{_kind_word(unit)}, {what} {show(values[0])}..{show(values[-1])} as {len(values)} ordered levels"
        )
    forced = []
    heavy = max(n / n_bins, thr)
    if int_grid:
        forced = [i for i in np.flatnonzero(y >= heavy)]
    elif scan.zero >= heavy and grid[0] <= 0.0 < grid[-1]:
        forced = [int(np.searchsorted(grid, 0.0, side="right") - 1)]
    elif point is not None:
        forced = [int(np.searchsorted(grid, point, side="right") - 1)]
    edges = _equal_frequency(grid, y, n_bins, forced)
    if len(edges) < 2:
        raise SchemaError(f"column {name!r} holds a single value; drop it (it carries no information)")
    if len(edges) < 3:  # one bin: every row would clip into it, and the column would say nothing
        raise SchemaError(
            f"column {name!r}: the noisy counts show its values in one narrow band only "
            f"([{show(edges[0])}, {show(edges[-1])}]), too few rows elsewhere for this budget"
        )
    values = []
    points = {float(grid[i]) for i in forced}
    for a, b in zip(edges, edges[1:]):
        if a in points:
            values.append(a)
            continue
        rep = _bin_median(grid, y, a, b, sigma, scan.whole)
        if rep is not None:
            values.append(rep)
        elif scan.whole and b - a >= 1:
            values.append(float(math.floor(a + (b - a - 1) / 2)) if b > a + 1 else float(a))
        else:
            values.append((a + b) / 2)
    col = Column.binned(name, edges, values, missing=missing, unit=unit)
    col.with_within(
        Within(
            tuple(None if a in points else _within_bin(grid, y, a, b) for a, b in zip(edges, edges[1:])),
            whole=bool(scan.whole),
        )
    )
    # na level: the missing level, else the bin holding the noisy median
    if missing is None:
        mids = 0.5 * (grid[:-1] + grid[1:])
        med = mids[_median_index(y)]
        col.with_na(col.labels[int(np.clip(np.searchsorted(edges, med, side="right") - 1, 0, len(edges) - 2))])
    pm = ", ".join(show(v) for v in sorted(points))
    return col, (
        f"{_kind_word(unit)}, {len(edges) - 1} bins over [{show(edges[0])}, {show(edges[-1])}]"
        + (f", point mass(es) at {pm}" if points else "")
    )


def _whole_edges(scan: ScanResult, lo: float, hi: float, cells: int) -> bool:
    """Grid edges on whole numbers: for whole numbers, and for timestamps whose grid cells span
    days anyway (edges at midnight read better, and lose nothing at that width)."""
    return scan.whole or (scan.unit == "timestamp" and hi - lo >= 2.0 * cells)


def _kind_word(unit: str | None) -> str:
    if unit is None:
        return "numeric"
    return "clock time (minutes since midnight)" if unit == "time" else f"{unit} (days since 1970-01-01)"


def _bin_median(grid: np.ndarray, y: np.ndarray, a: float, b: float, sigma: float, whole: bool) -> float | None:
    """The representative value of bin [a, b): the median of the noisy grid counts inside it (cell
    midpoints; the cell's whole number on a whole-number grid), so a bin whose rows sit at one end
    decodes near them rather than at its middle. None when the counts inside the bin do not rise
    clearly above the noise (then the caller uses the middle). Post-processing of paid-for counts."""
    inside = np.flatnonzero((grid[:-1] >= a) & (grid[1:] <= b))
    if inside.size < 2:
        return None
    w = np.clip(y[inside], 0, None)
    if w.sum() < 3.0 * sigma * math.sqrt(inside.size):
        return None
    k = inside[int(np.searchsorted(np.cumsum(w), w.sum() / 2))]
    if whole and grid[k + 1] - grid[k] == 1:
        v = float(grid[k])
    elif whole:
        v = float(math.floor(0.5 * (grid[k] + grid[k + 1])))
    else:
        v = float(0.5 * (grid[k] + grid[k + 1]))
    return v if a <= v < b else None


def _within_bin(grid: np.ndarray, y: np.ndarray, a: float, b: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """How the rows of bin [a, b) spread inside it, for synthetic rows: the grid cells inside the
    bin, merged into at most ``WITHIN_CELLS`` runs of adjacent cells, each weighted by its noisy
    counts clipped at zero (uniform when all are zero). Returns (cuts strictly inside the bin,
    weights summing to 1). Post-processing of paid-for counts; cuts are grid edges, rounded to 6
    significant digits when that keeps them strictly inside the bin and increasing."""
    inside = np.flatnonzero((grid[:-1] >= a) & (grid[1:] <= b))
    if inside.size == 0:
        return (), (1.0,)
    w = np.clip(y[inside], 0, None)
    groups = np.array_split(np.arange(inside.size), min(WITHIN_CELLS, inside.size))
    weights = np.array([w[g].sum() for g in groups])
    cuts = np.array([grid[inside[g[0]]] for g in groups[1:]], dtype=float)
    if weights.sum() <= 0:  # nothing shows above the noise: uniform over the bin's width
        sub = np.concatenate([[a], cuts, [b]])
        weights = np.diff(sub)
    weights = weights / weights.sum()
    rounded = np.array([float(f"{c:.6g}") for c in cuts])
    if np.all(np.diff(np.concatenate([[a], rounded, [b]])) > 0):
        cuts = rounded
    shares = np.round(weights, 5)
    if shares.sum() <= 0:
        shares = weights
    return tuple(float(c) for c in cuts), tuple(float(x) for x in shares)


def _median_index(y: np.ndarray) -> int:
    w = np.clip(y, 0, None)
    if w.sum() <= 0:
        return len(y) // 2
    return int(np.searchsorted(np.cumsum(w), w.sum() / 2))


def discover(
    df: pd.DataFrame,
    columns: list[str],
    mech,
    *,
    rho: float,
    delta: float,
    kinds: dict[str, str] | None = None,
    bins: int | None = None,
    max_levels: int = DEFAULT_MAX_LEVELS,
    rho_max: float | None = None,
    collect: bool = False,
) -> tuple[dict[str, Any], DiscoveryReport, float]:
    """Discover columns of a table, reading the data only through noisy counts charged to a ledger.

    The delta is split among the categorical columns only (known after the scans), so it is all used
    when there is one, and none is used otherwise; each column's part is halved between its two key
    releases (the second one's rho pooled over the categorical columns, see :func:`_unreleased`).

    ``"date"`` declares a column of ISO dates / timestamps, ``"time"`` one of clock times,
    ``"dates"`` either (the noisy counts of parse outcomes decide which); a column is also discovered as one when the noisy count of values that parse as ISO dates (clock times)
    holds at least 80% of its scan (:func:`scan_column`). A date column spends another
    ``SCAN_FRACTION`` of its budget on the range of its days (:func:`scan_dates`) and the rest on its
    bins, on the axis of days since 1970-01-01; a clock-time column's axis (minutes since midnight,
    0..1440) is public, so it needs no range pass.

    With ``rho_max`` (the budget of the whole release), discovery first spends ``ROWS_FRACTION`` of
    ``rho`` on a noisy row count, and when the table is small raises its own budget above ``rho`` (up
    to ``MAX_AUTO_SHARE * rho_max``) so that each column's noise sd is about ``TARGET_SD_SHARE`` of the
    rows: the noise of a count does not shrink with the table, so a small table needs a larger share of
    the budget for its schema to hold any information.

    Parameters
    ----------
    df : pandas.DataFrame
        The raw table.
    columns : list of str
        The columns to discover.
    mech : ChargedMechanisms
        :class:`ddssp.dp.discovery.ChargedMechanisms`: every noisy count is charged to its ledger.
    rho : float
        zCDP budget to spend (at most; more only with ``rho_max``, as above).
    delta : float
        Delta for the key release of categorical levels.
    kinds : dict, optional
        Declared kinds, ``{name: "numeric" | "categorical" | "date" | "time" | "dates"}``.
    bins : int, optional
        Bins per binned numeric column; chosen from the noisy counts when None.
    max_levels : int
        Whole numbers over at most this many values become ordered levels.
    rho_max : float, optional
        The zCDP budget of the whole release (enables the noisy row count, as above).
    collect : bool
        Report the columns that cannot be discovered in the report instead of raising.

    Returns
    -------
    columns : dict
        ``{name: Column}`` for the discovered columns.
    report : DiscoveryReport
        What was decided, per column.
    delta : float
        The delta used.

    Raises
    ------
    SchemaError
        When a column cannot be discovered (unless ``collect``): one message for all of them.
    """
    kinds = dict(kinds or {})
    if not columns:
        return {}, DiscoveryReport(), 0.0
    report = DiscoveryReport()
    if rho_max is not None:
        rho_n = ROWS_FRACTION * rho
        y = mech.counts(
            np.array([len(df)], dtype=np.int64),
            _sigma(rho_n),
            column=columns[0],
            note="noisy row count (sets discovery's share of the budget)",
        )
        n = max(float(y[0]), 1.0)
        rho_use = discovery_budget(n, len(columns), rho, float(rho_max))
        report.rows = n
        report.share = rho_use / float(rho_max)
        rho = rho_use - rho_n
    rho_col = rho / len(columns)
    scans: dict[str, ScanResult | None] = {}
    parsed = {}
    for name in columns:
        if kinds.get(name) == "categorical":
            scans[name] = None
            continue
        x, isna = parse_numbers(df[name])
        times = parse_times_of_text(df[name], x, isna)
        try:
            scan = scan_column(x, isna, name, SCAN_FRACTION * rho_col, mech, kinds.get(name), times=times)
            if scan.unit == "time":  # a public axis: no range pass
                x = times["minutes"]
            elif scan.kind == "date":
                x = times["days"]
                scan = scan_dates(x, name, SCAN_FRACTION * rho_col, mech, scan)
            scans[name] = scan
            parsed[name] = x
        except SchemaError as exc:
            report.unresolved[name] = str(exc)
    live = [n for n in columns if n not in report.unresolved]
    cat = [n for n in live if scans[n] is None or scans[n].kind == "categorical"]
    report.categorical = cat
    out = {}
    left = {n: (1 - _passes(scans[n]) * SCAN_FRACTION) * rho_col for n in live}
    # two rounds of key release: a first small share of each categorical column's budget releases its
    # large labels; the rest is pooled and goes to the columns by the noisy share of their rows the
    # first round left out (a binary column needs no second look, one of many mid-sized labels does)
    first = {n: _keys(df[n], n, KEY_FIRST * left[n], delta / (2 * len(cat)), mech, {}) for n in cat}
    weight = {n: _unreleased(scans[n], first[n][0], report.rows) ** KEY_POWER for n in cat}
    pool = (1 - KEY_FIRST) * sum(left[n] for n in cat)
    for name in live:
        try:
            if name in cat:
                rho2 = pool * weight[name] / sum(weight.values())
                col, note = discover_categorical(
                    df[name], name, rho2, delta / (2 * len(cat)), mech, scans[name], first[name]
                )
            else:
                col, note = discover_numeric(parsed[name], name, left[name], mech, scans[name], bins, max_levels)
        except SchemaError as exc:
            report.unresolved[name] = str(exc)
            continue
        out[name] = col
        report.notes[name] = note
    if report.unresolved and not collect:
        raise SchemaError(unresolved_message(report))
    return out, report, (delta if cat else 0.0)


def discovery_budget(rows: float, columns: int, rho: float, rho_max: float) -> float:
    """Discovery's zCDP budget for a table of (noisy) ``rows``: the given ``rho``, raised so that the
    noise sd of each column's share is ``TARGET_SD_SHARE`` of the rows, at most ``MAX_AUTO_SHARE``
    of ``rho_max`` (never below ``rho``). Non-increasing in ``rows``. Post-processing.

    Parameters
    ----------
    rows : float
        The noisy row count.
    columns : int
        The columns to discover.
    rho : float
        The given budget (``--discovery-share`` of the release's).
    rho_max : float
        The budget of the whole release.

    Returns
    -------
    float
    """
    need = columns / (2.0 * (max(rows, 1.0) * TARGET_SD_SHARE) ** 2)
    return min(max(rho, need), max(rho, MAX_AUTO_SHARE * rho_max))


def _passes(scan: ScanResult | None) -> int:
    """Scan-sized passes a column spent before its levels or bins: none (declared categorical), the
    scan, or the scan and a date range pass."""
    return 0 if scan is None else (2 if scan.kind == "date" and scan.unit != "time" else 1)


def _unreleased(scan: ScanResult | None, released: dict[str, float], rows: float | None) -> float:
    """The noisy share of a categorical column's rows (its scan's total, else the noisy row count)
    outside the labels released so far, at least ``KEY_FLOOR`` (1 when no total is known).
    Post-processing of noisy counts."""
    total = scan.n_present + scan.missing if scan is not None else rows
    if total is None or total <= 0:
        return 1.0
    return float(np.clip(1.0 - sum(released.values()) / total, KEY_FLOOR, 1.0))


def unresolved_message(report: DiscoveryReport) -> str:
    """One message for every column discovery could not resolve, with what to do.

    Parameters
    ----------
    report : DiscoveryReport
        The report with its ``unresolved`` columns.

    Returns
    -------
    str
    """
    why = "; ".join(report.unresolved.values())
    return (
        f"{len(report.unresolved)} column(s) could not be discovered at this budget: {why}. Drop them, "
        "declare them in a schema (--categorical for codes), or give discovery more budget "
        "(--discovery-share, --eps); a new run spends its budget again"
    )
