"""A numeric column whose bounds are declared (public): its bins inside those bounds, from noisy
counts, with no budget spent on finding its range.

Two count vectors read the data (:func:`bounded_cells`, :func:`ddssp.data.discovery.numeric.grid_counts`),
each row adding one to exactly one cell: first a count of the column's cells by what they hold
(missing or not a number, zero, other whole numbers, other numbers) at ``COUNT_FRACTION`` of the
column's budget, which says how many numbers there are, whether they are whole and whether a missing
level is needed; then the rest of the budget on one grid over the declared bounds, from whose
cumulative noisy counts the equal-frequency bin edges, each bin's representative value and its
within-bin spread are read. The outer edges are the declared bounds: values outside are clipped into
the end bins. Decisions use the noisy outputs and the declared (public) values only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ddssp.data.columns import Column
from ddssp.data.discovery.bins import GRID_CELLS, _equal_frequency, _grid_cells, _make_grid, bin_median, within_bin
from ddssp.data.discovery.numeric import grid_counts
from ddssp.data.discovery.scan import MISSING_LABEL
from ddssp.data.discovery.shared import noise_sd
from ddssp.data.values import format_number
from ddssp.data.within import Within

#: share of a bounded column's budget spent on the count of its cells by what they hold
COUNT_FRACTION = 0.1

#: cells of a quantile grid at most: a declared step and the bins' edges need finer cells than a
#: grid read for its shape; more cells add noise to the cumulative counts the edges are read from
QUANTILE_CELLS = 1024

#: a whole number's own cell becomes a bin of its own when its noisy count reaches a bin's share of
#: the rows and this many noise sds (its rows then decode to it, not spread over a wider bin)
HEAVY_SDS = 3.5

#: a missing level is added (when none is declared) when the noisy count of missing cells reaches
#: this many noise sds
MISSING_SDS = 4.0

#: the lowest positive edge of a log-spaced grid of numbers that are not whole, as a share of the
#: declared top bound (values below it share one cell with zero)
LOG_FLOOR = 1e-4

#: the share of non-whole numbers (of the noisy count of numbers) below which the numbers are whole
WHOLE_SHARE = 0.02


def bounded_cells(x: np.ndarray) -> np.ndarray:
    """Exact counts of a column's cells: missing or not a number, exact zero, other whole numbers,
    other numbers (noised by the caller; each row adds one to one cell).

    Parameters
    ----------
    x : numpy.ndarray
        Float values, NaN for missing cells and text.

    Returns
    -------
    numpy.ndarray
        Four int64 counts.
    """
    nan = np.isnan(x)
    v = x[~nan]
    zero = v == 0
    whole = (np.mod(v, 1) == 0) & ~zero
    return np.array([nan.sum(), zero.sum(), whole.sum(), (~zero & ~whole).sum()], dtype=np.int64)


def discover_bounded(
    x: np.ndarray,
    name: str,
    rho: float,
    mech,
    bounds: tuple[float, float],
    *,
    whole: bool | None = None,
    missing: str | None = None,
    bins: int | None = None,
    max_levels: int = 32,
    quantiles: QuantileHint | None = None,
) -> tuple[Column, str]:
    """Bins of a numeric column inside its declared ``bounds`` (whole-number levels when the numbers
    are whole and the bounds hold at most ``max_levels`` of them).

    Parameters
    ----------
    x : numpy.ndarray
        The column's values as floats, NaN for missing cells and for cells that are not numbers.
    name : str
        The column.
    rho : float
        The column's zCDP budget.
    mech : ChargedMechanisms
        Draws the noisy counts and charges them to the ledger.
    bounds : tuple of float
        The declared ``(low, high)``, low < high.
    whole : bool, optional
        The numbers are declared whole (True) or not (False); None: read from the noisy counts, and
        never whole when a declared bound is not a whole number.
    missing : str, optional
        The declared label of the missing level; None: ``"<missing>"`` when the noisy count of
        missing cells shows, else missing cells go to the bin of the noisy median.
    bins : int, optional
        The number of bins (default: from the noisy count of numbers, 4 to 10).
    max_levels : int
        Whole numbers over at most this many values become ordered levels.
    quantiles : QuantileHint, optional
        Declared quantile bins (the codebook's ``bins``, ``cuts``, ``step``, ``points``): that many
        equal-frequency bins with ties kept whole (:func:`rank_edges`), on a grid whose cells end just
        above multiples of ``step``, with the ``cuts`` as edges and each of the ``points`` a bin of its
        own; ``bins`` and ``max_levels`` do not apply.

    Returns
    -------
    col : Column
    note : str
        What was found, for the report.
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    xc = np.where(np.isnan(x), np.nan, np.clip(x, lo, hi))
    rho_count = COUNT_FRACTION * rho
    sd = noise_sd(rho_count)
    c = mech.counts(bounded_cells(xc), sd, column=name, note="count of missing / zero / whole / other numbers").astype(
        float
    )
    n = max(c[1] + c[2] + c[3], 1.0)
    if whole is None:  # a declared bound that is not a whole number says the numbers are not all whole
        whole = bool(c[3] <= max(WHOLE_SHARE * n, 2.0 * sd)) and lo.is_integer() and hi.is_integer()
    label = missing if missing is not None else (MISSING_LABEL if c[0] >= MISSING_SDS * sd else None)
    span = (math.floor(hi) - math.ceil(lo) + 1) if whole else None
    if quantiles is not None:
        return _quantile_bins(xc, name, rho - rho_count, mech, (lo, hi), n, bool(whole), label, quantiles)
    if span is not None and 1 <= span <= max_levels:
        col = Column.levels(name, range(math.ceil(lo), math.floor(hi) + 1), missing=label)
        if label is None:
            col.with_na(col.labels[len(col.labels) // 2])
        return col, f"numeric, declared bounds {_show(lo)}..{_show(hi)}: whole numbers as {span} ordered levels"
    sigma = noise_sd(rho - rho_count)
    cells = min(GRID_CELLS, 4 * _grid_cells(n, sigma))
    grid = bounded_grid(lo, hi, cells, whole)
    floor = _log_floor(lo, hi, whole)
    y = mech.counts(grid_counts(xc, grid), sigma, column=name, note=f"counts on a {len(grid) - 1}-cell grid").astype(
        float
    )
    n_bins = bins if bins is not None else int(np.clip(n // (40 * sigma), 4, 10))
    width = np.diff(grid)
    forced = []
    if whole:
        heavy = max(n / n_bins, HEAVY_SDS * sigma)
        forced = [int(i) for i in np.flatnonzero((width <= 1) & (y >= heavy))]
    edges = _equal_frequency(grid, y, n_bins, forced)
    points = {float(grid[i]) for i in forced if grid[i + 1] - grid[i] <= 1}
    col = _read_bins(name, grid, y, edges, sigma, bool(whole), floor, label, lambda a, b: a in points)
    return col, f"numeric, declared bounds {_show(lo)}..{_show(hi)}: {len(edges) - 1} bins inside them"


def _read_bins(name, grid, y, edges, sigma, whole, floor, label, is_point) -> Column:
    """A binned column from its edges and the noisy grid counts (post-processing): each bin's
    representative value and within-bin spread, a point bin (``is_point(a, b)``) decoding to its
    value with no spread, and missing cells (when there is no missing level) at the noisy median's
    bin."""
    values, within = [], []
    for a, b in zip(edges, edges[1:]):
        if is_point(a, b):
            values.append(float(a))
            within.append(None)
            continue
        rep = bin_median(grid, y, a, b, sigma, whole)
        if rep is None:
            rep = float(math.floor(a + (b - a - 1) / 2)) if whole and b - a >= 1 else (a + b) / 2
        values.append(rep)
        within.append(_within(grid, y, a, b, sigma, floor))
    col = Column.binned(name, edges, values, missing=label)
    col.with_within(Within(tuple(within), whole=whole))
    if label is None:
        mids = 0.5 * (grid[:-1] + grid[1:])
        w = np.clip(y, 0, None)
        med = mids[int(np.searchsorted(np.cumsum(w), w.sum() / 2))] if w.sum() > 0 else 0.5 * (grid[0] + grid[-1])
        col.with_na(col.labels[int(np.clip(np.searchsorted(edges, med, side="right") - 1, 0, len(edges) - 2))])
    return col


@dataclass(frozen=True)
class QuantileHint:
    """Declared quantile bins of a bounded column (public; :class:`ddssp.data.codebook.ColumnHint`).

    Parameters
    ----------
    bins : int
        Equal-frequency bins.
    cuts : tuple of float
        Edges every release keeps.
    step : float, optional
        Whole numbers heap at its multiples: the grid's cells end just above them.
    points : tuple of float
        Whole numbers that are bins of their own, outside the equal shares.
    """

    bins: int
    cuts: tuple[float, ...] = ()
    step: float | None = None
    points: tuple[float, ...] = ()

    @classmethod
    def of(cls, hint) -> QuantileHint | None:
        """The quantile bins a codebook hint declares.

        Parameters
        ----------
        hint : ddssp.data.codebook.ColumnHint
            The column's hint.

        Returns
        -------
        QuantileHint or None
            None when the hint declares no ``bins``.
        """
        if getattr(hint, "bins", None) is None:
            return None
        return cls(hint.bins, hint.cuts or (), hint.step, hint.points or ())


def _quantile_bins(
    xc: np.ndarray,
    name: str,
    rho: float,
    mech,
    bounds: tuple[float, float],
    n: float,
    whole: bool,
    label: str | None,
    q: QuantileHint,
) -> tuple[Column, str]:
    """Quantile bins of a bounded column from one noisy count on a public grid (``rho`` spent)."""
    lo, hi = bounds
    sigma = noise_sd(rho)
    top = hi + 1.0 if whole else hi  # whole numbers: the top value gets a cell [hi, hi + 1) of its own
    grid = quantile_grid(lo, top, int(np.clip(4 * n / (3.0 * sigma), 8, QUANTILE_CELLS)), whole, q)
    y = mech.counts(grid_counts(xc, grid), sigma, column=name, note=f"counts on a {len(grid) - 1}-cell grid").astype(
        float
    )
    point_cells = [int(np.searchsorted(grid, p, side="right") - 1) for p in q.points]
    edges = set(rank_edges(grid, y, q.bins, point_cells)) | {float(c) for c in q.cuts if lo < c < top}
    if whole:  # a value holding a bin's share of the rows is a bin of its own (a heap at zero income)
        heavy = max(n / q.bins, HEAVY_SDS * sigma)
        for i in np.flatnonzero((np.diff(grid) <= 1) & (y >= heavy)):
            edges.update((float(grid[i]), float(grid[i + 1])))
    edges = sorted(edges)
    floor = _log_floor(lo, hi, whole)
    col = _read_bins(name, grid, y, edges, sigma, whole, floor, label, lambda a, b: whole and b - a <= 1)
    note = f"numeric, declared bounds {_show(lo)}..{_show(hi)}: {len(edges) - 1} quantile bins (declared {q.bins})"
    return col, note + _edge_noise(sigma, len(grid) - 1, n, q.bins)


def _edge_noise(sigma: float, cells: int, n: float, bins: int) -> str:
    """How far the noise moves a quantile edge, as a share of the rows: the sd of the noisy
    cumulative count half-way along the grid over the noisy count of numbers. At over half a bin's
    share the edges are mostly noise, and the note says to declare them instead."""
    spread = sigma * math.sqrt(max(cells, 1) / 2.0) / max(n, 1.0)
    out = f"; noise moves an edge by ~{spread:.1%} of the rows (a bin holds {1 / bins:.1%})"
    if spread > 0.5 / bins:
        out += ": at this budget the edges are mostly noise; declare them instead (--schema edges)"
    return out


def quantile_grid(lo: float, hi: float, cells: int, whole: bool, q: QuantileHint) -> np.ndarray:
    """The public grid of declared quantile bins: a cell per whole number when the bounds hold at
    most ``cells`` of them, else :func:`bounded_grid`'s; with a ``step``, every multiple of it gets
    an edge just above it (whole numbers heaped there stay whole in a cell with the values below
    them): cells a step wide or wider have their edges moved there, narrower cells keep theirs
    and gain those edges. An edge at every cut and a cell [p, p + 1) for every point. Depends on
    public values only.

    Parameters
    ----------
    lo, hi : float
        The outer edges.
    cells : int
        About how many cells before the step merges them.
    whole : bool
        Whole-number edges.
    q : QuantileHint
        The declared quantile bins.

    Returns
    -------
    numpy.ndarray
    """
    if whole and hi - lo <= cells:  # one cell per whole number
        grid = np.arange(lo, hi + 1.0)
    else:
        grid = bounded_grid(lo, hi, cells, whole)
    inner = grid[1:-1]
    if q.step is not None:
        s = q.step
        width = np.diff(grid)
        # cells at least a step wide: their edges move to just above the nearest multiple; where the
        # cells are narrower they stay, and an edge is added just above each multiple among them
        moved = np.floor((inner - 1.0) / s + 0.5) * s + 1.0
        inner = np.where((inner == 0.0) | (width[1:] < s), inner, moved)  # the zero cell [0, 1) stays
        marks = np.arange(math.ceil((lo - 1.0) / s), math.floor((hi - 1.0) / s) + 1) * s + 1.0
        cell = np.clip(np.searchsorted(grid, marks, side="right") - 1, 0, len(width) - 1)
        inner = np.concatenate([inner, marks[width[cell] < s]])
    extra = [float(c) for c in q.cuts] + [float(v) for p in q.points for v in (p, p + 1.0)]
    inner = np.concatenate([inner, extra])
    inner = inner[(inner > lo) & (inner < hi)]
    return np.unique(np.concatenate([[lo], inner, [hi]]))


def rank_edges(grid: np.ndarray, y: np.ndarray, bins: int, points: list[int]) -> list[float]:
    """Equal-frequency edges with ties kept whole: each cell goes to bin ``floor(bins * m)``, where
    ``m`` is the share of the noisy count below its middle row, and an edge stands where
    the bin changes between cells (a percentile ranking with ties averaged, as a cell holding many
    rows of one value cannot be split). The ``points`` cells are bins of their own and take no share.

    Parameters
    ----------
    grid : numpy.ndarray
        Cell edges.
    y : numpy.ndarray
        Noisy counts per cell.
    bins : int
        Equal-frequency bins.
    points : list of int
        Cells that are bins of their own.

    Returns
    -------
    list of float
        The edges, from ``grid[0]`` to ``grid[-1]``.
    """
    w = np.asarray(y, float).copy()
    w[points] = 0.0
    # the cumulative count of the raw noisy counts, kept non-decreasing: clipping each cell at zero
    # first would add the positive half of the noise of every empty cell and push the edges down
    cum = np.maximum.accumulate(np.clip(np.cumsum(w), 0, None))
    total = cum[-1]
    edges = {float(grid[0]), float(grid[-1])}
    for i in points:
        edges.update((float(grid[i]), float(grid[i + 1])))
    if total <= 0:
        return sorted(edges)
    mid = (cum + np.concatenate([[0.0], cum[:-1]])) / (2 * total)
    b = np.minimum(np.floor(bins * mid), bins - 1)
    free = [i for i in range(len(w)) if i not in set(points)]
    for i, j in zip(free, free[1:]):
        if b[j] != b[i]:
            edges.add(float(grid[j]))
    return sorted(edges)


def bounded_grid(lo: float, hi: float, cells: int, whole: bool) -> np.ndarray:
    """A public grid of about ``cells`` cells over the declared bounds, its outer edges the bounds.

    Log-spaced where the bounds span decades (as :func:`ddssp.data.discovery.numeric._make_grid`):
    from 1 for whole numbers, else from ``LOG_FLOOR`` of the top bound, zero and the values below
    that floor in a cell of their own; bounds that straddle zero with a wide positive side (incomes
    from -9,000 to 1.3 million) get a linear negative side of ``cells // 16`` cells and a log-spaced
    positive side. Depends on the bounds only.

    Parameters
    ----------
    lo, hi : float
        The declared bounds.
    cells : int
        About how many cells.
    whole : bool
        Whole-number edges.

    Returns
    -------
    numpy.ndarray
        Strictly increasing edges from ``lo`` to ``hi``.
    """
    floor = 1.0 if whole else hi * LOG_FLOOR
    if lo < 0 < hi and hi / -lo > 50 and hi > floor:  # as _log_floor
        k_neg = max(2, cells // 16)
        neg = np.linspace(lo, 0.0, k_neg + 1)
        if whole:
            neg = np.unique(np.round(neg))
        pos = _make_grid(0.0, hi, floor, cells - k_neg, whole, True)
        grid = np.unique(np.concatenate([neg, pos]))
    else:
        lo_pos = lo if lo > 0 else (floor if hi > floor else None)
        grid = _make_grid(lo, hi, lo_pos, cells, whole, bool(whole and lo <= 0 <= hi))
    grid = grid[(grid > lo) & (grid < hi)]
    return np.concatenate([[lo], grid, [hi]])  # the declared bounds are the outer edges


def _log_floor(lo: float, hi: float, whole: bool) -> float | None:
    """The scale of the signed log axis of a log-spaced :func:`bounded_grid` (its lowest positive
    edge), or None when the grid is linear."""
    floor = 1.0 if whole else hi * LOG_FLOOR
    if hi <= floor:
        return None
    if lo < 0:
        return floor if hi / -lo > 50 else None
    return floor if hi / (lo if lo > 0 else floor) > 50 else None


def _within(grid: np.ndarray, y: np.ndarray, a: float, b: float, sigma: float, floor: float | None):
    """How the rows of bin [a, b) spread inside it (:func:`ddssp.data.discovery.bins.within_bin`).

    On a log-spaced grid the counts are read on the signed log axis ``asinh(x / floor)``, on which
    the grid's cells are about equal: where the counts are mostly noise they are shrunk toward equal
    shares per cell, not per unit of value (a top income bin from 100,000 to 1.3 million would
    otherwise put most of its synthetic rows above 600,000). Post-processing of paid-for counts."""
    if floor is None:
        return within_bin(grid, y, a, b, sigma)
    cuts, weights = within_bin(np.arcsinh(grid / floor), y, np.arcsinh(a / floor), np.arcsinh(b / floor), sigma)
    on_grid = grid[(grid > a) & (grid < b)]
    back = [float(on_grid[np.argmin(np.abs(on_grid - floor * np.sinh(c)))]) for c in cuts]
    if len(set(back)) < len(back):  # never: the cuts are distinct grid edges
        return within_bin(grid, y, a, b, sigma)
    short = [float(f"{c:.6g}") for c in back]  # as within_bin writes its cuts, when that keeps them apart
    if np.all(np.diff([a, *short, b]) > 0):
        back = short
    return tuple(back), weights


def _show(v: float) -> str:
    return format_number(v)
