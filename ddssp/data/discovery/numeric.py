"""A numeric (or time-axis) column's levels or bins from noisy counts on public grids.

:func:`grid_counts` reads the data (a row adds one to exactly one cell); :func:`discover_numeric`
hands its exact counts, and those of :func:`ddssp.data.discovery.scan.rest_cells`, straight to the
charged mechanism and decides levels, bin edges, representative values and within-bin spreads from
its noisy output only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddssp.data.columns import Column, Within
from ddssp.data.dates import HHMM_OTHER, format_day, hhmm_cells, may_be_hhmm
from ddssp.data.discovery.bins import (
    GRID_CELLS,
    _equal_frequency,
    _grid_cells,
    _make_grid,
    as_hhmm,
    bin_median,
    bin_middle,
    drop_empty_ends,
    ends_shown,
    median_spread,
    piled,
    tail_stop,
    within_bin,
)
from ddssp.data.discovery.codes import (
    code_span,
    codes_below,
    first_cell_to_zero,
    fractions_show,
    next_decade,
    with_strongest,
)
from ddssp.data.discovery.scan import GROW_SDS, MISSING_LABEL, POP_SDS, ScanResult, rest_cells
from ddssp.data.discovery.shared import confident_single, noise_sd, single_value_message
from ddssp.data.discovery.slots import DECADE_HI, DECADE_LO
from ddssp.data.discovery.spans import STEP_LEVEL_CELLS, decade_span, outer_span, span_sds, step_start
from ddssp.errors import SchemaError


def grid_counts(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Exact counts of numbers in the cells of a grid (noised by the caller).

    Parameters
    ----------
    x : numpy.ndarray
        Float values; NaN is skipped.
    edges : numpy.ndarray
        The grid's cell edges; values outside are clipped into the end cells.

    Returns
    -------
    numpy.ndarray
        int64 counts, one per cell.
    """
    if not isinstance(x, np.ndarray):  # counted where the table lives (discovery/source.py)
        return x.grid_counts(edges)
    v = x[~np.isnan(x)]
    v = np.clip(v, edges[0], edges[-1])
    k = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, len(edges) - 2)
    return np.bincount(k, minlength=len(edges) - 1).astype(np.int64)


#: cells of the coarse grid (the first of the two numeric passes)
COARSE_CELLS = 16
MAX_INT_CELLS = 4096
DEFAULT_MAX_LEVELS = 32
#: below this many rows per noise sd of a fine-grid cell (n * sqrt(rho) for the column's budget after
#: its scan: about 1,600 rows for eight columns at eps 1), the bin edges of numbers that are not whole,
#: and of whole numbers spread over many values (:data:`ddssp.data.discovery.bins.PILED_SHARE`), come from private medians over the
#: scan's range instead of coarse-to-fine noisy histograms. There
#: the histogram cells, coarse ones too, are mostly noise and their cut of the range clips real rows;
#: a median's error shrinks with the rows of its whole group. Above it the histograms win where the
#: values sit in a narrow part of a scan band (coordinates), which the medians cannot see (see the
#: discovery method page for the measurements)
MEDIANS_BELOW = 45.0
#: levels of the private median tree (2 ** levels bins at most)
MEDIAN_LEVELS = 3
#: cells of the median tree's candidate grid
MEDIAN_CELLS = 1024
#: a numeric column gets a ``<missing>`` level when the scan's noisy count of its missing (and text)
#: cells reaches this many sds of its noise (``ScanResult.missing_sd``): one count tested, not one of
#: the scan's many cells (noise alone passes in about 1e-3 of columns; a missing level of noise holds
#: about no rows); under it the missing cells are written as the median's value, a code not theirs
MISSING_SDS = 3.0


@dataclass
class _NumericPass:
    """What the steps of :func:`discover_numeric` share: the column and its budget, the range the
    grids cover, and the grid counted last with its noisy counts (public choices and noisy outputs
    only, apart from the values ``x`` that the counting reads)."""

    x: np.ndarray
    name: str
    rho: float
    mech: Any
    scan: ScanResult
    bins: int | None
    max_levels: int
    #: noise sd of one cell of the grid counted last
    sigma: float
    #: the scan's noisy count of numbers (at least 1)
    n: float
    #: the range the next grid covers
    lo: float
    hi: float
    #: the lowest positive edge of that range, for log-spaced grids
    lo_pos: float | None = None
    #: the grid has one cell [v, v + 1) per whole number v
    int_grid: bool = False
    grid: np.ndarray | None = None
    #: noisy counts of the cells of ``grid``
    y: np.ndarray | None = None
    #: the scan found one value only
    single: bool = False
    #: few rows for the budget: bins from private medians (or, for whole numbers, after a check)
    medians: bool = False
    #: (lo, hi) that the final cut keeps, when an earlier pass showed where the rows are
    keep: tuple[float, float] | None = None
    #: a value found alone by the scan: its own bin, decoding to exactly it
    point: float | None = None
    #: noisy counts of the rows left below / above the kept range: the scan's slots beyond its range,
    #: until a grid cuts that side (a grid's end cells hold every row beyond it, so the last grid
    #: cut on a side counts all that side's rows)
    below: float = 0.0
    above: float = 0.0
    #: the noise sds of ``below`` and ``above``
    below_sd: float = 0.0
    above_sd: float = 0.0

    def count(self, note: str) -> np.ndarray:
        """Noisy counts of ``grid`` at ``sigma``, charged to the ledger."""
        exact = grid_counts(self.x, self.grid)
        return self.mech.counts(exact, self.sigma, column=self.name, note=note).astype(float)


def discover_numeric(
    x: np.ndarray,
    name: str,
    rho: float,
    mech,
    scan: ScanResult,
    bins: int | None,
    max_levels: int,
    clipped: dict[str, tuple[float, ...]] | None = None,
) -> tuple[Column, str]:
    """Discover a numeric column's levels or bins from noisy counts on public grids.

    A time-axis column (``scan.unit``) is discovered the same way on its axis (days since 1970-01-01,
    or minutes since midnight), with linear grids, and labelled with ISO text.

    The steps, each reading only the scan's and its own noisy counts: :func:`_plan_grid` (one cell
    per whole number, or medians for few rows), :func:`_locate_rest` (a single value found by the
    scan), :func:`_coarse_pass` and :func:`_fine_pass` (coarse to fine grids), :func:`_cut_to_span`
    (the populated cells), then :func:`_levels_column` or :func:`_bins_column`; with few rows for the
    budget :func:`_median_bins` makes the bins instead. Whole numbers whose scan range allows clock
    times HHMM (and are not mostly zero) first spend a tenth of the budget on whether they are.

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
    clipped : dict, optional
        Filled with ``{name: (below, above, sd_below, sd_above)}``: the noisy shares of the numbers left outside the
        column's range, from the scan's slots next to its range or the cells a grid's cut left out
        and their noise sds (post-processing of noisy counts; not for time axes).

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
    hhmm = False
    if scan.unit is None and may_be_hhmm(scan.lo, scan.hi, scan.whole) and scan.zero < scan.n_present / 2:
        # are the numbers integer clock times HHMM? A tenth of the budget on two noisy counts
        sd, rho = noise_sd(rho / 10), rho * 0.9
        y = mech.counts(hhmm_cells(x), sd, column=name, note="clock times HHMM / other numbers").astype(float)
        hhmm = y[0] >= POP_SDS * sd and y[1] <= HHMM_OTHER * y[0] + 3.0 * sd
    # clipped shares only of a discovered column (a refusal after the cut leaves none to describe)
    shares: dict[str, tuple[float, ...]] = {}
    col, note = _discover_numeric(x, name, rho, mech, scan, bins, max_levels, shares)
    if clipped is not None:
        clipped.update(shares)
    return as_hhmm(col, note) if hhmm and col.edges is not None else (col, note)


def _discover_numeric(x, name, rho, mech, scan, bins, max_levels, clipped) -> tuple[Column, str]:
    """:func:`discover_numeric` once the budget is set (see there)."""
    st = _plan_grid(x, name, rho, mech, scan, bins, max_levels)
    clipped = {} if scan.unit is not None else clipped  # time axes: not estimated
    if st.single:
        one = _locate_rest(st)
        if one is not None:
            clipped[name] = _shares(st)
            return one
    if st.int_grid:
        st.y = st.count(f"counts on a {len(st.grid) - 1}-cell grid")
    elif st.medians and not scan.whole:
        # even the coarse cells are mostly noise, and a coarse cut of the range would clip real rows:
        # the medians take the whole budget over the scan's range
        clipped[name] = _shares(st)
        return _median_bins(x, name, rho, mech, scan)
    else:
        if st.point is None:
            a, b = _coarse_pass(st)
            if st.medians and not piled(st.y, a, b, st.n):
                # whole numbers spread over many values, each too few for the noise of a fine cell:
                # the medians over the scan's range, cut between whole numbers, with the other half
                clipped[name] = _shares(st)
                return _median_bins(x, name, rho / 2, mech, scan, coarse=(st.grid, st.y, st.sigma))
            _narrow_to_coarse(st, a, b)
        _fine_pass(st)
    _cut_to_span(st)
    clipped[name] = _shares(st)
    if st.int_grid and len(st.grid) - 1 <= min(max_levels, max(16, 2 * _grid_cells(st.n, st.sigma))):
        return _levels_column(st)
    return _bins_column(st)


def _plan_grid(
    x: np.ndarray, name: str, rho: float, mech, scan: ScanResult, bins: int | None, max_levels: int
) -> _NumericPass:
    """The first decisions, from the scan's noisy outputs (range, wholeness, count of numbers)
    alone: one grid cell per whole number when they are few enough to be levels or for the noise
    to fill; whether the scan found a single value; whether the rows are too few for the budget
    for histograms (then private medians, :data:`MEDIANS_BELOW`)."""
    st = _NumericPass(
        x=x,
        name=name,
        rho=rho,
        mech=mech,
        scan=scan,
        bins=bins,
        max_levels=max_levels,
        sigma=noise_sd(rho),
        n=max(scan.n_present, 1.0),
        lo=scan.lo,
        hi=scan.hi,
        below=scan.outside[0],
        above=scan.outside[1],
        below_sd=scan.outside_sd[0],
        above_sd=scan.outside_sd[1],
    )
    if scan.whole:
        lo_i = math.ceil(st.lo)
        hi_i = max(lo_i, math.floor(st.hi) if st.hi <= 0 else math.ceil(st.hi) - 1)
        span = hi_i - lo_i + 1
        # one cell per whole number when they are few enough to be levels, or when the noise lets
        # each cell hold a few sds of rows on average
        if span <= MAX_INT_CELLS and (span <= max_levels or span <= _grid_cells(st.n, st.sigma)):
            st.int_grid = True
            st.grid = np.arange(lo_i, hi_i + 2, dtype=float)  # cell [v, v+1) per whole number v
    st.single = (st.int_grid and len(st.grid) == 2) or (not st.int_grid and st.hi <= st.lo)
    if st.int_grid and not st.single and _codes(st) and scan.lo > 0:
        # the codes below the scan's range get cells of their own; the rows its slots left below
        # are inside the grid, and the cut counts those it leaves out
        st.grid, st.below, st.below_sd = codes_below(st.grid, scan.lo, max_levels), 0.0, 0.0
    # few rows for the budget: noisy fine-histogram cells would be mostly noise, while a median's
    # error shrinks with the rows of its group. Whole numbers over a wide range first count a grid
    # (:func:`_coarse_pass`): piled up on few values (years, codes) every candidate between two of
    # them ties and the medians would be drawn at random, so they keep the histograms. Whole days of
    # a time axis keep the histograms too: dates sit in a narrow part of their scan band, which the
    # medians cannot see (see the discovery method page)
    st.medians = (
        not st.single
        and bins is None
        and st.n * math.sqrt(rho) < MEDIANS_BELOW
        and not (scan.whole and scan.unit is not None)
    )
    return st


def _codes(st: _NumericPass) -> bool:
    """Whether a whole-number grid holds few enough whole numbers to become ordered levels (codes),
    off a time axis: their range ends on the codes' own fine counts (:mod:`.codes`)."""
    return st.scan.unit is None and len(st.grid) - 1 <= st.max_levels


def _locate_rest(st: _NumericPass) -> tuple[Column, str] | None:
    """The range around a single value the scan found: half the budget on noisy counts of the other
    numbers by decade (are there any, and where?), the other half left for a grid from the value to
    them (:func:`_fine_pass`), on which the value gets a cell of its own. Decides from those noisy
    decade counts (:func:`ddssp.data.discovery.spans.decade_span`). When they place no other number,
    a whole-number column off a time axis is released as that one value (:func:`_one_level`, returned
    here); other columns are refused."""
    scan = st.scan
    v = float(st.grid[0]) if st.int_grid else st.lo
    st.sigma = noise_sd(st.rho / 2)
    y = st.mech.counts(
        rest_cells(st.x, v)[1:], st.sigma, column=st.name, note="counts of the other values by decade"
    ).astype(float)
    # where the decades show rows; noise in one of the 41 decades must not place the range
    # orders of magnitude beyond the data (nor across zero)
    span = decade_span(y, st.sigma)
    if span is None and scan.whole:
        span = next_decade(y, st.sigma, v)
    if span is None and scan.whole and scan.unit is None:
        return _one_level(st, v, y)
    if span is None:
        if confident_single(float(y.sum()), st.sigma * math.sqrt(len(y)), st.n):
            raise SchemaError(single_value_message(st.name))
        raise SchemaError(
            f"column {st.name!r}: one value {_show(v, scan.unit)} found; the other values are too few for "
            "this budget to place (declare the column, or give discovery more budget)"
        )
    a, b = span
    rest = float(y[a : b + 1].sum())
    if scan.whole and scan.unit is None and (fractions_show(y, st.sigma, span) or scan.fractions_in(a, b, rest)):
        scan.whole = False  # the rest's numbers are not whole: the scan's slots that show missed them
    st.int_grid, st.point = False, v
    st.lo, st.hi = min(v, float(DECADE_LO[a])), max(v + scan.whole, float(DECADE_HI[b]))
    # the fine cut keeps it all: the decades hold the rows, and the fine cells would split them into
    # cells each lost in the noise
    st.keep = (st.lo, math.nextafter(st.hi, math.inf))
    pos = np.flatnonzero(DECADE_LO[a : b + 1] > 0)
    st.lo_pos = float(DECADE_LO[a + pos[0]]) if pos.size else None
    return None


def _one_level(st: _NumericPass, v: float, y: np.ndarray) -> tuple[Column, str]:
    """A whole-number column as the single value ``v`` the scan found (one level, plus the missing
    level when the scan's noisy count shows one), when the noisy decade counts ``y`` of the other
    numbers place none of them: they are too few to show at this budget (a housing type 1 beside
    types 2 and 3 on 2% of the rows), or absent. The value has rows, so the level is honest, and the
    column stays in the release (an agency's scorer expects every feature); rows with other values
    clip to it as any value outside a range does, and the noisy decade counts give the shares of
    rows below and above it (post-processing: the decade counts are already charged)."""
    # the decade holding v: its other numbers lie on the side where the decade extends further
    here = (DECADE_LO <= v) & (v <= DECADE_HI)
    up = here & (DECADE_HI - v >= v - DECADE_LO)
    below, above = (DECADE_HI < v) | (here & ~up), (DECADE_LO > v) | up
    st.below, st.above = float(y[below].sum()), float(y[above].sum())
    st.below_sd, st.above_sd = st.sigma * math.sqrt(int(below.sum())), st.sigma * math.sqrt(int(above.sum()))
    st.grid, st.y = np.array([v, v + 1.0]), np.ones(1)  # one cell: the value is its own median
    return _levels_column(st)


def _coarse_pass(st: _NumericPass) -> tuple[int, int]:
    """The coarse grid of coarse to fine: half the budget on a grid over the scan's range (whose ends
    are a quarter decade wide). Returns the cells the noisy counts show populated
    (:func:`ddssp.data.discovery.spans.outer_span`, grown outwards by windows of adjacent cells whose
    noisy sum shows above the noise of the window: a tail of many thin cells holds rows in
    aggregate); the grid and its counts stay in ``st``."""
    scan = st.scan
    st.sigma = noise_sd(st.rho / 2)
    # few coarse cells: a thin tail (a few % of the rows over a decade) must show above the noise
    # of the cells it spans, or the cut would clip it away
    k = min(COARSE_CELLS, _grid_cells(st.n, st.sigma))
    if st.medians and scan.whole:
        # whole numbers in a small table: the fine grid's cells, whose counts show whether the
        # rows pile up on a few values and, when not, how they spread inside the medians' bins
        # (a spike at one value among them)
        k = min(GRID_CELLS, 4 * _grid_cells(st.n, st.sigma))
    whole = _whole_edges(scan, st.lo, st.hi, k)
    st.grid = _make_grid(st.lo, st.hi, scan.lo_pos, k, whole, scan.zero > 0, scan.unit is not None)
    if first_cell_to_zero(st.grid, scan.whole, scan.lo, scan.zero, scan.unit is not None):
        st.grid = np.concatenate([[0.0], st.grid[1:]])
    st.y = st.count(f"coarse counts on a {len(st.grid) - 1}-cell grid")
    return outer_span(st.y, st.sigma, span_sds(len(st.y)), GROW_SDS) or (0, len(st.y) - 1)


def _narrow_to_coarse(st: _NumericPass, a: int, b: int) -> None:
    """The range of the fine grid: the coarse cells ``a..b`` the noisy coarse counts showed
    populated, of which the final cut may trim only the two outer ones (the coarse cells between
    hold the rows, and a fine grid splits a thin tail into cells each lost in the noise)."""
    st.lo, st.hi = float(st.grid[a]), float(st.grid[b + 1])
    st.lo_pos = st.scan.lo_pos
    _count_outside(st, a, b)
    st.keep = (float(st.grid[a + 1]), float(st.grid[b]))


def _fine_pass(st: _NumericPass) -> None:
    """The fine grid over the range found so far (its empty cells are cut off again by
    :func:`_cut_to_span`), and its noisy counts: one cell per whole number when few enough (so years
    2003-2009 stay 2003-2009), else finer than the coarse grid, with a cell of its own for a single
    value the scan found. The number of cells follows the scan's noisy count of numbers."""
    scan = st.scan
    lo, hi = st.lo, st.hi
    cells = min(GRID_CELLS, 4 * _grid_cells(st.n, st.sigma))
    if scan.whole and math.ceil(hi) - math.ceil(lo) <= max(st.max_levels, cells):
        st.int_grid = True
        st.grid = np.arange(math.ceil(lo), max(math.ceil(hi), math.ceil(lo) + 1) + 1, dtype=float)
    else:
        whole = _whole_edges(scan, lo, hi, cells)
        grid = _make_grid(lo, hi, st.lo_pos if lo <= 0 else lo, cells, whole, scan.zero > 0, scan.unit is not None)
        if st.point is not None:  # the point mass gets a cell [v, v + 1) (whole numbers) of its own
            step = 1.0 if scan.whole else float(np.min(np.diff(grid))) / 64
            grid = np.unique(np.concatenate([grid, [st.point, st.point + step]]))
        st.grid = grid
    st.y = st.count(f"fine counts on a {len(st.grid) - 1}-cell grid")


def _cut_to_span(st: _NumericPass) -> None:
    """The grid and its noisy counts cut to the outermost populated cells (years 2003-2009 become 7
    levels, a city's latitudes stay in the city), from the noisy counts of the last grid; the test
    level makes a false extension of the range ~1% likely per column. After an earlier pass
    (``keep``) the cut only trims outside what that pass showed, and a least-squares step fit to the
    fine counts can keep more of the outer cells. A column whose counts show one whole number and
    the rest within the noise keeps that number alone (one level: the rows of other numbers clip to
    it, and the cut counts them); on a time axis it is refused."""
    grid, y = st.grid, st.y
    span = outer_span(y, st.sigma, span_sds(len(y)), GROW_SDS if st.keep is None else None)
    codes = st.int_grid and _codes(st) and (st.keep is None or st.point is not None)
    alone = False  # the counts show one whole number only, kept as one level
    if codes:
        span = code_span(y, st.sigma, span)
        if st.point is None and span is not None and span[0] == span[1]:
            # one code shows: a single value, or it and its strongest other code in the scan's range
            # (an uncut grid would keep the codes below the scan's range that no row holds)
            # (a code whose other codes are too few to show, or absent, stays as one level; the rows of
            # the others clip to it and the cut counts them)
            alone = confident_single(float(y.sum() - y[span[0]]), st.sigma * math.sqrt(max(len(y) - 1, 1)), st.n)
            if not alone:
                span = with_strongest(y, span[0], grid[:-1] >= math.ceil(st.scan.lo))  # where the scan saw rows
    if st.point is not None and st.int_grid:
        # whole numbers placed by decades: their own counts trim empty ones at the ends (a 0/1 column
        # is not levels 0..9), never down to the value alone (then to its strongest other value; of
        # codes, the stronger next one: a code of noise further out would widen the levels to it)
        p = int(np.searchsorted(grid, st.point, side="right")) - 1
        if span is None or span == (p, p):
            span = with_strongest(y, p, np.abs(np.arange(len(y)) - p) == 1 if codes else None)
        span, st.keep = (min(span[0], p), max(span[1], p)), None
    if span is not None and st.int_grid and span[0] == span[1] and not alone:
        # one whole number shows: a single value (one level, off a time axis), or the others are thin
        # over the whole grid (then it stays uncut: every value must decode to a number, none to an
        # empty cell)
        rest = float(y.sum() - y[span[0]])
        alone = confident_single(rest, st.sigma * math.sqrt(max(len(y) - 1, 1)), st.n)
        if alone and st.scan.unit is not None:
            raise SchemaError(single_value_message(st.name))
        if not alone:
            span = None
    if span is None:
        return
    a, b = span
    keep = st.keep
    if keep is not None and keep[0] <= keep[1]:  # never inside the coarse cells that hold the rows
        inner_a = int(np.searchsorted(grid, keep[0], side="right")) - 1
        inner_b = int(np.searchsorted(grid, keep[1], side="left")) - 1
        a = max(0, min(a, inner_a))
        b = min(len(y) - 1, max(b, a, inner_b))
        # and where a least-squares step fit to the fine counts keeps more of an outer coarse cell, the step
        # fit wins: its fine cells are each too thin for the threshold above (for spiky counts, such as whole
        # numbers on a fine grid, the threshold's edge stands); it reads the level also from STEP_LEVEL_CELLS
        a = min(a, max(0, min(step_start(y[: inner_a + 1 + STEP_LEVEL_CELLS]), inner_a)))
        b = max(b, min(len(y) - 1, max(len(y) - 1 - step_start(y[inner_b:][::-1]), inner_b)))
    _count_outside(st, a, b)
    st.grid, st.y = grid[a : b + 2], y[a : b + 1]


def _shares(st: _NumericPass) -> tuple[float, float, float, float]:
    """The noisy rows left below / above the range as shares of the scan's noisy count of numbers
    (clamped to [0, 1]), and the noise sds of those shares. Post-processing."""
    return (
        min(max(st.below / st.n, 0.0), 1.0),
        min(max(st.above / st.n, 0.0), 1.0),
        st.below_sd / st.n,
        st.above_sd / st.n,
    )


def _count_outside(st: _NumericPass, a: int, b: int) -> None:
    """Record the noisy rows of the cells of ``st.y`` that a cut to cells ``a..b`` leaves out, on each
    side it cuts (the end cells of a grid hold every row beyond it, so this counts them all).
    Post-processing."""
    if a > 0:
        st.below, st.below_sd = float(np.sum(st.y[:a])), st.sigma * math.sqrt(a)
    if b < len(st.y) - 1:
        st.above, st.above_sd = float(np.sum(st.y[b + 1 :])), st.sigma * math.sqrt(len(st.y) - 1 - b)


def _levels_column(st: _NumericPass) -> tuple[Column, str]:
    """Whole numbers as ordered levels, one per cell of the cut grid (its ends set by the noisy
    populated span); the na level is the missing level, else the level of the noisy median."""
    unit = st.scan.unit
    missing = _missing_level(st.scan)
    values = st.grid[:-1]
    median = _median_index(st.y)
    col = Column.levels(st.name, values, missing=missing, unit=unit)
    col.with_na(missing if missing is not None else col.labels[median])
    if len(values) == 1:
        lo, hi = _shares(st)[:2]
        return col, (
            f"{_kind_word(unit)}, one value {_show(values[0], unit)} as 1 level; the other values were too "
            f"few to show at this budget (~{lo:.0%} below / {hi:.0%} above by noisy counts), and such rows "
            "clip to it"
        )
    what = "days" if unit is not None else "whole numbers"
    return col, (
        f"{_kind_word(unit)}, {what} {_show(values[0], unit)}..{_show(values[-1], unit)} "
        f"as {len(values)} ordered levels"
    )


def _forced_cells(st: _NumericPass, n_bins: int) -> list[int]:
    """Grid cells that get a bin of their own (a point mass decoding to exactly its value): whole
    numbers whose noisy count reaches 1/bins of the rows (and the noise), the exact zeros when the
    scan's noisy count of them does, or the single value the scan found."""
    grid, y = st.grid, st.y
    heavy = max(st.n / n_bins, 3.5 * st.sigma)
    if st.int_grid:
        return [i for i in np.flatnonzero(y >= heavy)]
    if st.scan.zero >= heavy and grid[0] <= 0.0 < grid[-1]:
        return [int(np.searchsorted(grid, 0.0, side="right") - 1)]
    if st.point is not None:
        return [int(np.searchsorted(grid, st.point, side="right") - 1)]
    return []


def _bins_column(st: _NumericPass) -> tuple[Column, str]:
    """Equal-frequency bins over the cut grid, read from its cumulative noisy counts (the number of
    bins from the scan's noisy count of numbers unless given), point masses in bins of their own;
    each other bin decodes to the median of the noisy counts inside it (else its middle) and keeps
    how they spread inside it (:func:`ddssp.data.discovery.bins.within_bin`); the na level is the missing level, else the
    bin of the noisy median. Refuses a column whose counts leave one bin only."""
    grid, y, scan, name = st.grid, st.y, st.scan, st.name
    unit = scan.unit
    n_bins = st.bins if st.bins is not None else int(np.clip(st.n // (40 * st.sigma), 4, 10))
    forced = _forced_cells(st, n_bins)
    edges = _equal_frequency(grid, y, n_bins, forced)
    if len(edges) < 2:
        raise SchemaError(f"column {name!r} holds a single value; drop it (it carries no information)")
    if len(edges) < 3:  # one bin: every row would clip into it, and the column would say nothing
        raise SchemaError(
            f"column {name!r}: the noisy counts show its values in one narrow band only "
            f"([{_show(edges[0], unit)}, {_show(edges[-1], unit)}]), too few rows elsewhere for this budget"
        )
    values = []
    points = {float(grid[i]) for i in forced}
    for a, b in zip(edges, edges[1:]):
        if a in points:
            values.append(a)
            continue
        rep = bin_median(grid, y, a, b, st.sigma, scan.whole)
        if rep is not None:
            values.append(rep)
        elif scan.whole and b - a >= 1:
            values.append(float(math.floor(a + (b - a - 1) / 2)) if b > a + 1 else float(a))
        else:
            values.append((a + b) / 2)
    within = tuple(None if a in points else within_bin(grid, y, a, b, st.sigma) for a, b in zip(edges, edges[1:]))
    # na level: the missing level, else the bin holding the noisy median
    mids = 0.5 * (grid[:-1] + grid[1:])
    median_bin = int(np.clip(np.searchsorted(edges, mids[_median_index(y)], side="right") - 1, 0, len(edges) - 2))
    missing = _missing_level(scan)
    col = Column.binned(name, edges, values, missing=missing, unit=unit)
    col.with_within(Within(within, whole=bool(scan.whole)))
    if missing is None:
        col.with_na(col.labels[median_bin])
    pm = ", ".join(_show(v, unit) for v in sorted(points))
    return col, (
        f"{_kind_word(unit)}, {len(edges) - 1} bins over [{_show(edges[0], unit)}, {_show(edges[-1], unit)}]"
        + (f", point mass(es) at {pm}" if points else "")
    )


def _show(v: float, unit: str | None) -> str:
    """A value for the report: ISO text on a time axis, else ``%g``."""
    return format_day(v, unit) if unit is not None else f"{v:g}"


def _whole_edges(scan: ScanResult, lo: float, hi: float, cells: int) -> bool:
    """Grid edges on whole numbers: for whole numbers, and for timestamps whose grid cells span
    days anyway (edges at midnight read better, and lose nothing at that width)."""
    return scan.whole or (scan.unit == "timestamp" and hi - lo >= 2.0 * cells)


def _kind_word(unit: str | None) -> str:
    if unit is None:
        return "numeric"
    return "clock time (minutes since midnight)" if unit == "time" else f"{unit} (days since 1970-01-01)"


def _median_index(y: np.ndarray) -> int:
    w = np.clip(y, 0, None)
    if w.sum() <= 0:
        return len(y) // 2
    return int(np.searchsorted(np.cumsum(w), w.sum() / 2))


def _median_bins(
    x: np.ndarray, name: str, rho: float, mech, scan: ScanResult, coarse: tuple | None = None
) -> tuple[Column, str]:
    """Bins of a column with few rows for its budget, from a private median tree over the scan's range.

    The candidates are the edges of a public grid of ``MEDIAN_CELLS`` cells over the range,
    log-spaced when it spans decades (as the histogram path's); for whole numbers the edges are
    whole numbers (each cut falls between two of them, and a bin ``[a, b)`` holds ``a .. b - 1``).
    Level one picks the noisy median of all rows, each later level the noisy median of each part
    the earlier picks made, ``rho / MEDIAN_LEVELS`` a level
    (:meth:`ddssp.dp.discovery.ChargedMechanisms.medians`). A heavy mass at exact zero (from the
    scan) gets its own bin. Bins decode to their middle (the middle whole number). Synthetic rows
    spread uniformly inside a bin, or, with ``coarse`` (the noisy counts ``y`` of a coarse grid over
    the same range and their sd, already paid for), by those counts shrunk toward uniform
    (:func:`ddssp.data.discovery.bins.within_coarse`).
    """
    unit, lo, hi = scan.unit, scan.lo, scan.hi
    whole = bool(scan.whole)
    lo_pos = scan.lo_pos if lo <= 0 else lo
    grid = _make_grid(lo, hi, lo_pos, MEDIAN_CELLS, whole, scan.zero > 0, unit is not None)
    # the grid is log-spaced (as :func:`_make_grid` decides)
    log = unit is None and lo >= 0 and lo_pos is not None and lo_pos > 0 and hi / lo_pos > 50
    counts = grid_counts(x, grid)
    groups = [(0, len(grid) - 1)]  # runs of cells [a, b)
    # each run's share of the rows by design: a median halves its group
    share: dict[tuple[int, int], float] = {groups[0]: 1.0}
    cuts: list[int] = []
    first = None
    for level in range(MEDIAN_LEVELS):
        live = [(a, b) for a, b in groups if b - a >= 2]
        if not live:
            break
        picks = mech.medians(
            [counts[a:b] for a, b in live],
            rho / MEDIAN_LEVELS,
            column=name,
            note=f"private medians, level {level + 1} of {MEDIAN_LEVELS} on a {len(grid) - 1}-cell grid",
        )
        groups = []
        for (a, b), j in zip(live, picks):
            s = a + j
            if a < s < b:
                cuts.append(s)
                groups += [(a, s), (s, b)]
                share[(a, s)] = share[(s, b)] = share[(a, b)] / 2
                first = s if first is None else first
    edges = sorted({float(grid[0]), float(grid[-1])} | {float(grid[s]) for s in cuts})
    # the leaves of the tree (runs no later level cut), by their edges: their shares of the rows
    leaves = {
        (float(grid[a]), float(grid[b])): f for (a, b), f in share.items() if not set(cuts) & set(range(a + 1, b))
    }
    points: set[float] = set()
    n = max(scan.n_present, 1.0)
    if scan.zero >= max(n / 2**MEDIAN_LEVELS, 3.5 * scan.sigma * math.sqrt(2)) and grid[0] <= 0.0 < grid[-1]:
        z = int(np.searchsorted(grid, 0.0, side="right") - 1)
        edges = sorted(set(edges) | {float(grid[z]), float(grid[z + 1])})
        points.add(float(grid[z]))
    n_shares = [leaves.get((a, b)) for a, b in zip(edges, edges[1:])]
    if coarse is not None:
        edges = ends_shown(edges, points, coarse, whole)
        edges, n_shares = drop_empty_ends(edges, points, n_shares, coarse, n)
    if len(edges) < 3:
        raise SchemaError(
            f"column {name!r}: the private medians found no cut inside "
            f"[{_show(edges[0], unit)}, {_show(edges[-1], unit)}] at this budget (too few rows)"
        )
    values = [a if a in points else bin_middle(a, b, whole) for a, b in zip(edges, edges[1:])]
    missing = _missing_level(scan)
    middle = float(grid[first]) if first is not None else 0.5 * (edges[0] + edges[-1])
    median_bin = int(np.clip(np.searchsorted(edges, middle, side="right") - 1, 0, len(edges) - 2))
    ends = {0: -1, len(edges) - 2: 1}
    stops = {i: tail_stop(edges, points, n_shares, i, t, log, whole) for i, t in ends.items()}
    within = tuple(
        median_spread(a, b, points, coarse, ends.get(i, 0), stops.get(i))
        for i, (a, b) in enumerate(zip(edges, edges[1:]))
    )
    col = Column.binned(name, edges, values, missing=missing, unit=unit)
    col.with_within(Within(within, whole=whole))
    if missing is None:
        col.with_na(col.labels[median_bin])
    return col, (
        f"{_kind_word(unit)}, {len(edges) - 1} bins over [{_show(edges[0], unit)}, {_show(edges[-1], unit)}] "
        "by private medians"
    )


def _missing_level(scan: ScanResult) -> str | None:
    """The ``<missing>`` level when the scan's noisy count of missing (or non-numeric) cells reaches
    ``MISSING_SDS`` sds of its noise, else None (they then go to the bin of the noisy median)."""
    return MISSING_LABEL if scan.missing >= MISSING_SDS * (scan.missing_sd or scan.sigma) else None
