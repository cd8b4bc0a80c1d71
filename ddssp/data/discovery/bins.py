"""What a bin of a numeric column holds, read from the noisy counts of a grid already paid for: the
value it decodes to and how its rows spread inside it (for synthetic rows), and where the outer bins
of private medians end (their counts and the shares the median tree gives each bin); the public
grids a numeric column's numbers are counted on, and the equal-frequency cut of their noisy counts.

Post-processing of noisy counts and their public noise sd: nothing here reads the data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ddssp.data.columns import Column
from ddssp.data.dates import hhmm_snap, hhmm_sub_cells, hhmm_valid
from ddssp.data.discovery.scan import GROW_SDS
from ddssp.data.discovery.slots import SLOT_LO
from ddssp.data.discovery.spans import STEP_LEVEL_CELLS, outer_span, span_sds, step_start
from ddssp.data.within import Within

__all__ = [
    "PILED_SHARE",
    "piled",
    "SHRINK_NOISE",
    "as_hhmm",
    "TAIL_MEANS",
    "WITHIN_CELLS",
    "bin_median",
    "step_end",
    "tail_end",
    "tail_prior",
    "within_bin",
    "within_coarse",
]

#: cells of a fine numeric grid at most
GRID_CELLS = 256
#: sub-cells per bin kept for synthetic rows (runs of adjacent fine-grid cells; keeps files small)
WITHIN_CELLS = 16
#: the within-bin shares keep the noisy counts' deviation from uniform only in the part by which its
#: square exceeds this many times what the noise alone gives. At 1 (the plain method-of-moments
#: estimate of the signal's share) bins of noise alone keep noise whenever it came out above its
#: mean, about 4 in 10; at 1.5 about 1 in 10 does, and little of it. Below a few thousand rows the
#: fine counts are mostly noise and uniform spreading decodes closer to the data; a spike or a steep
#: slope is kept (see the discovery method page for the measurements)
SHRINK_NOISE = 1.5
#: an outer bin's tail is taken to end this many of its mean excess lengths beyond the bin's inner
#: edge (a density falling linearly to zero has its mean at a third of its length; see
#: :func:`tail_end`)
TAIL_MEANS = 3.0
#: sub-cells of the thinning part of an outer median bin without counts to weigh its parts
TAIL_CELLS = 8


def bin_median(grid: np.ndarray, y: np.ndarray, a: float, b: float, sigma: float, whole: bool) -> float | None:
    """The representative value of bin [a, b): the median of the noisy grid counts inside it (cell
    midpoints; the cell's whole number on a whole-number grid), so a bin whose rows sit at one end
    decodes near them rather than at its middle. Post-processing of paid-for counts.

    Parameters
    ----------
    grid : numpy.ndarray
        The grid's cell edges.
    y : numpy.ndarray
        Noisy counts of its cells.
    a, b : float
        The bin.
    sigma : float
        The noise sd of one cell.
    whole : bool
        The values are whole numbers.

    Returns
    -------
    float or None
        The value, None when the counts inside the bin do not rise clearly above the noise (then
        the caller uses the middle).
    """
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


def within_bin(
    grid: np.ndarray, y: np.ndarray, a: float, b: float, sigma: float
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """How the rows of bin [a, b) spread inside it, for synthetic rows: the grid cells inside the
    bin, merged into at most ``WITHIN_CELLS`` runs of adjacent cells, weighted by their noisy counts
    shrunk toward uniform spreading (:func:`_shrunk_shares`; uniform when the counts are noise).
    Post-processing of paid-for counts and their public noise sd.

    Parameters
    ----------
    grid : numpy.ndarray
        The grid's cell edges.
    y : numpy.ndarray
        Noisy counts of its cells.
    a, b : float
        The bin.
    sigma : float
        The noise sd of one cell.

    Returns
    -------
    cuts : tuple of float
        Cuts strictly inside the bin: grid edges, rounded to 6 significant digits when that keeps
        them strictly inside the bin and increasing.
    weights : tuple of float
        The share of the bin's rows between consecutive cuts, summing to 1.
    """
    inside = np.flatnonzero((grid[:-1] >= a) & (grid[1:] <= b))
    if inside.size == 0:
        return (), (1.0,)
    groups = np.array_split(np.arange(inside.size), min(WITHIN_CELLS, inside.size))
    sums = np.array([y[inside[g]].sum() for g in groups], dtype=float)
    cuts = np.array([grid[inside[g[0]]] for g in groups[1:]], dtype=float)
    width = np.diff(np.concatenate([[a], cuts, [b]]))
    return _packed(a, b, cuts, _shrunk_shares(sums, np.array([g.size for g in groups]) * sigma**2, width))


def within_coarse(
    grid: np.ndarray, y: np.ndarray, a: float, b: float, sigma: float, tail: int = 0, end: float | None = None
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """How the rows of bin [a, b) spread inside it, from the noisy counts of a coarser grid: the
    bin cut at the grid edges inside it, each part weighted by its cell's noisy count times the
    share of the cell's width it covers, shrunk toward uniform spreading (:func:`_shrunk_shares`),
    or for an outer bin (``tail``) toward a density falling linearly to zero at its outer edge.
    Post-processing of paid-for counts and their public noise sd.

    Parameters
    ----------
    grid : numpy.ndarray
        The coarser grid's cell edges.
    y : numpy.ndarray
        Noisy counts of its cells.
    a, b : float
        The bin.
    sigma : float
        The noise sd of one cell.
    tail : int
        1: the top bin of the column (its outer edge is ``b``), -1: the bottom bin (``a``), 0:
        neither. An outer bin ends where the evidence for rows ends (a quarter-decade band edge of
        the scan, not the largest value), and the rows of a tail thin out toward it.
    end : float, optional
        For an outer bin: where its tail's density reaches zero, strictly inside the bin (see
        :func:`tail_end`); the sub-cells beyond it get no rows, whatever their noisy counts (cells
        of noise there would place synthetic values past the data). Default: the outer edge.

    Returns
    -------
    cuts : tuple of float
        Cuts strictly inside the bin (see :func:`within_bin`).
    weights : tuple of float
        The share of the bin's rows between consecutive cuts, summing to 1.
    """
    inner = end is not None and tail != 0 and a < end < b
    cuts = grid[(grid > a) & (grid < b)].astype(float)
    if inner:
        cuts = np.union1d(cuts, [end])
    sub = np.concatenate([[a], cuts, [b]])
    k = np.clip(np.searchsorted(grid, sub[:-1], side="right") - 1, 0, len(y) - 1)
    share = np.diff(sub) / (grid[k + 1] - grid[k])
    prior = np.diff(sub)
    if tail and sub.size > 2:
        prior = tail_prior(sub, a, b, tail, end if inner else None)
    w = _shrunk_shares(y[k] * share, (sigma * share) ** 2, prior)
    if inner:  # no rows past the tail's end
        w = np.where(prior > 0, w, 0.0)
        w = w / w.sum() if w.sum() > 0 else prior / prior.sum()
    return _packed(a, b, cuts, w)


def tail_prior(sub: np.ndarray, a: float, b: float, tail: int, end: float | None = None) -> np.ndarray:
    """Masses of the sub-cells ``sub`` (edges, from ``a`` to ``b``) of an outer bin under a density
    falling linearly to zero at its outer edge, or at ``end`` inside it (zero beyond).

    Parameters
    ----------
    sub : numpy.ndarray
        The sub-cell edges, increasing from ``a`` to ``b``.
    a, b : float
        The bin.
    tail : int
        1: the top bin (the density falls toward ``b``), -1: the bottom bin (toward ``a``).
    end : float, optional
        Where the density reaches zero (default: the outer edge).

    Returns
    -------
    numpy.ndarray
        One non-negative mass per sub-cell (not normalised).
    """
    if tail > 0:
        d = np.clip((b if end is None else end) - sub, 0.0, None)
    else:
        d = np.clip(sub - (a if end is None else end), 0.0, None)
    return np.abs(np.diff(d**2))


def tail_end(a: float, b: float, tail: int, ratio: float, nb_width: float, log: bool, whole: bool) -> float | None:
    """Where the rows of an outer bin [a, b) are taken to end: a tail that thins out from the
    density of its neighbouring bin, linearly, to zero.

    A density starting at the neighbour's, d0 = M_nb / ``nb_width``, holding the outer bin's rows
    M = ``ratio`` x M_nb, has mean excess s = M / d0 = ``ratio`` x ``nb_width`` beyond the bin's
    inner edge; a linear fall to zero with that mean ends 3 s from the inner edge. The shares come
    from the design of the bins (private medians halve their group: each bin holds about a known
    share of the rows), not from counts, so this reads nothing new. On a log-spaced axis the
    lengths are in log units. Post-processing.

    Parameters
    ----------
    a, b : float
        The outer bin.
    tail : int
        1: the top bin, -1: the bottom bin.
    ratio : float
        The outer bin's share of the rows over its neighbour's.
    nb_width : float
        The neighbouring bin's width (in log units when ``log``).
    log : bool
        The axis is log-spaced (``a`` > 0 for a top bin, ``b`` > 0 for a bottom bin).
    whole : bool
        Whole numbers: the end is rounded outwards to a whole number.

    Returns
    -------
    float or None
        The end strictly inside the bin, or None when the tail reaches the outer edge.
    """
    length = TAIL_MEANS * ratio * nb_width
    if not (length > 0 and math.isfinite(length)):
        return None
    inner = a if tail > 0 else b
    if log:
        if inner <= 0:
            return None
        e = inner * math.exp(length if tail > 0 else -length)
    else:
        e = inner + length if tail > 0 else inner - length
    if whole:
        e = float(math.ceil(e) if tail > 0 else math.floor(e))
    return e if a < e < b else None


def _packed(a: float, b: float, cuts: np.ndarray, weights: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """A within-bin entry: the cuts rounded to 6 significant digits when that keeps them strictly
    inside [a, b) and increasing, the weights to 5 decimals (unless that zeroes them all)."""
    rounded = np.array([float(f"{c:.6g}") for c in cuts])
    if np.all(np.diff(np.concatenate([[a], rounded, [b]])) > 0):
        cuts = rounded
    shares = np.round(weights, 5)
    if shares.sum() <= 0:
        shares = weights
    return tuple(float(c) for c in cuts), tuple(float(x) for x in shares)


def _shrunk_shares(sums: np.ndarray, var: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Shares of a bin's rows in its sub-cells, from their noisy counts ``sums`` (noise variances
    ``var``), shrunk toward uniform spreading (shares proportional to ``width``).

    With ``d = sums - total * u`` (``u`` the uniform shares), the noisy deviation from uniform is
    kept in the part ``1 - SHRINK_NOISE * E_noise|d|^2 / |d|^2`` (at least 0): nearly all of it when
    the rows are far from uniform above the noise, none when the noise could explain it. Where the noise sd
    of a cell is as large as its rows, noisy counts (clipped at zero) put mass where there are no
    rows and decode worse than uniform spreading. Shares are clipped at zero and sum to 1.
    Post-processing of noisy counts and their public noise sd."""
    u = width / width.sum()
    total = float(sums.sum())
    if sums.size < 2 or total <= 0:
        return u
    d = sums - total * u
    # E|d|^2 under noise alone: d = (I - u 1') e with e ~ N(0, diag(var))
    noise = float(var.sum() - 2.0 * np.dot(u, var) + var.sum() * np.dot(u, u))
    spread = float(np.dot(d, d))
    keep = max(0.0, 1.0 - SHRINK_NOISE * noise / spread) if spread > 0 else 0.0
    w = np.clip(u + keep * d / total, 0.0, None)
    return w / w.sum() if w.sum() > 0 else u


def ends_shown(edges: list[float], points: set[float], coarse: tuple, whole: bool = False) -> list[float]:
    """The outer edges of median bins cut to where the noisy counts of the first grid (``coarse``:
    its edges, counts and noise sd, already paid for) show rows (:func:`outer_span`, grown by windows
    of thin cells): the scan's range ends at a quarter decade, and a top bin that reaches it would
    draw synthetic values up to it. An end moves only inside its own bin (the medians placed rows on
    the other side of its cut), never off a point mass. When no cell of the bottom bin shows at that
    level (its rows, too few for one cell to show, yet the medians put a share of the rows in it),
    its start moves up to the last scan band edge below where a step fit to the bin's cells places
    them (:func:`step_end`): the outer bands there hold no rows the coarse counts show, and the
    scan's end rested on them. The top bin keeps the scan's end: rows thin out towards the top of
    most columns (ages 57..90 over 16 cells of noise), and a step fit reads such a tail as no rows
    (its thinning is :func:`tail_stop`'s). Post-processing.

    Parameters
    ----------
    edges : list of float
        The bin edges.
    points : set of float
        The lower edges of point-mass bins.
    coarse : tuple
        The first grid's edges, its noisy counts and their noise sd.
    whole : bool
        Whole numbers.

    Returns
    -------
    list of float
        The edges, the outer two possibly moved inwards.
    """
    grid, y, sd = coarse
    span = outer_span(y, sd, span_sds(len(y)), GROW_SDS)
    if span is None:
        return edges
    lo, hi = float(grid[span[0]]), float(grid[span[1] + 1])
    edges = list(edges)
    if edges[0] not in points and edges[0] < lo < edges[1]:
        edges[0] = lo
    elif edges[0] not in points and lo >= edges[1]:
        edges[0] = _band_edge(step_end(grid, y, edges[0], edges[1], -1), edges[0], -1, whole)
    if edges[-2] not in points and edges[-2] < hi < edges[-1]:
        edges[-1] = hi
    return edges


def _band_edge(e: float | None, end: float, tail: int, whole: bool) -> float:
    """The outer end ``end`` of a range moved towards ``e`` only as far as the last edge of a scan
    band before it: the scan's noisy band counts placed the range's end at a band edge, and cells
    finer than a band cannot overrule a band that holds rows; only the outer bands the step fit
    finds empty are dropped. Whole numbers end at a whole number (a band [10, 17.8) holds 10..17)."""
    if e is None:
        return end
    cuts = np.unique(SLOT_LO[np.isfinite(SLOT_LO)])
    if whole:
        cuts = np.ceil(cuts)
    inside = cuts[(cuts > end) & (cuts <= e)] if tail < 0 else cuts[(cuts < end) & (cuts >= e)]
    if not inside.size:
        return end
    return float(inside.max() if tail < 0 else inside.min())


def step_end(grid: np.ndarray, y: np.ndarray, a: float, b: float, tail: int) -> float | None:
    """Where the rows of the outer bin [a, b) start (``tail`` -1, the bottom bin) or end (1, the top
    bin), from the noisy counts ``y`` of a grid (edges ``grid``) already paid for: the least-squares
    step fit (:func:`ddssp.data.discovery.spans.step_start`, by cell widths) to the grid's cells
    inside the bin, from its outer edge in, and to the ``STEP_LEVEL_CELLS`` cells beyond its inner
    edge, which give the fit the rows' level. Post-processing.

    Parameters
    ----------
    grid : numpy.ndarray
        The grid's cell edges.
    y : numpy.ndarray
        The grid's noisy counts.
    a, b : float
        The outer bin.
    tail : int
        1: the top bin, -1: the bottom bin.

    Returns
    -------
    float or None
        A cell edge of the grid strictly inside (a, b), or None when the fit keeps the bin's cells
        whole (or the bin holds fewer than two of the grid's cells).
    """
    inside = np.flatnonzero((grid[:-1] >= a) & (grid[1:] <= b))
    if inside.size < 2:
        return None
    if tail < 0:
        cells = np.arange(inside[0], min(len(y), inside[-1] + 1 + STEP_LEVEL_CELLS))
    else:
        cells = np.arange(inside[-1], max(-1, inside[0] - 1 - STEP_LEVEL_CELLS), -1)
    k = min(step_start(y[cells], np.abs(grid[cells + 1] - grid[cells])), inside.size - 1)
    if k == 0:
        return None
    end = float(grid[cells[k]] if tail < 0 else grid[cells[k] + 1])
    return end if a < end < b else None


def median_spread(
    a: float, b: float, points: set[float], coarse: tuple | None, tail: int = 0, end: float | None = None
):
    """How the rows of a median bin [a, b) spread inside it: None for a point mass (it decodes to
    exactly its value), uniform without counts to weigh the bin's parts, else from the noisy counts
    of the coarse grid (:func:`within_coarse`). An outer bin whose tail
    ends inside it (``end``, :func:`tail_stop`) thins out to that end, with no rows beyond.
    Post-processing.

    Parameters
    ----------
    a, b : float
        The bin.
    points : set of float
        The lower edges of point-mass bins.
    coarse : tuple or None
        The first grid's edges, its noisy counts and their noise sd.
    tail : int
        1: the top bin, -1: the bottom bin, 0: neither.
    end : float, optional
        Where the outer bin's rows end.

    Returns
    -------
    tuple or None
        A :class:`~ddssp.data.within.Within` entry: None, or (cuts, weights).
    """
    if a in points:
        return None
    if coarse is not None:
        return within_coarse(coarse[0], coarse[1], a, b, coarse[2], tail, end)
    if end is None or not tail:
        return (), (1.0,)
    lo, hi = (a, end) if tail > 0 else (end, b)
    sub = np.unique(np.concatenate([np.linspace(lo, hi, TAIL_CELLS + 1), [a, b]]))
    w = tail_prior(sub, a, b, tail, end)
    cuts = sub[1:-1]
    return tuple(float(c) for c in cuts), tuple(float(x) for x in np.round(w / w.sum(), 5))


def drop_empty_ends(
    edges: list[float], points: set[float], shares: list[float | None], coarse: tuple, n: float
) -> tuple[list[float], list[float | None]]:
    """Merge an outer median bin into its neighbour when the noisy counts of the first grid
    (``coarse``, already paid for) say it holds fewer than half the rows a median's half holds.

    With few rows the exponential mechanism sometimes cuts a group next to its end ([48, 99) and
    [99, 100) for ages): the outer bin then holds almost no rows, yet the model gives it some, and
    its synthetic values sit past the data. The test compares the bin's noisy sum with half its
    share of the scan's noisy count of numbers ``n`` (the midpoint between "holds its share" and
    "holds nothing"). Never a point mass, and two bins stay. Post-processing.

    Parameters
    ----------
    edges : list of float
        The bin edges.
    points : set of float
        The lower edges of point-mass bins.
    shares : list of float or None
        Each bin's share of the rows by the median tree's design (None: not known).
    coarse : tuple
        The first grid's edges, its noisy counts and their noise sd.
    n : float
        The scan's noisy count of numbers.

    Returns
    -------
    edges : list of float
    shares : list of float or None
        Both with the merged bins as one.
    """
    grid, y, _ = coarse
    edges, shares = list(edges), list(shares)
    for side in (1, -1):
        if len(edges) < 4:
            break
        i = len(edges) - 2 if side > 0 else 0
        j = i - 1 if side > 0 else 1  # the neighbouring bin
        if edges[i] in points or edges[j] in points or shares[i] is None or shares[j] is None:
            continue
        a, b = edges[i], edges[i + 1]
        inside = (grid[:-1] >= a) & (grid[1:] <= b)
        if not inside.any() or float(np.sum(y[inside])) >= 0.5 * shares[i] * n:
            continue
        merged = shares[i] + shares[j]
        if side > 0:
            del edges[i]
            shares[j : j + 2] = [merged]
        else:
            del edges[1]
            shares[0:2] = [merged]
    return edges, shares


def tail_stop(
    edges: list[float], points: set[float], shares: list[float | None], i: int, tail: int, log: bool, whole: bool
) -> float | None:
    """Where the rows of the outer median bin ``i`` end (:func:`tail_end`),
    from its share and its neighbour's share and width; None without a neighbour of known share
    (a point mass, or two bins only), or when the tail reaches the bin's outer edge.

    Parameters
    ----------
    edges : list of float
        The bin edges.
    points : set of float
        The lower edges of point-mass bins.
    shares : list of float or None
        Each bin's share of the rows by the median tree's design (None: not known).
    i : int
        The outer bin.
    tail : int
        1: the top bin, -1: the bottom bin.
    log : bool
        The axis is log-spaced.
    whole : bool
        Whole numbers.

    Returns
    -------
    float or None
        The end, strictly inside the bin.
    """
    j = i - 1 if tail > 0 else i + 1
    if len(edges) < 4 or not 0 <= j < len(edges) - 1 or edges[i] in points or edges[j] in points:
        return None
    if shares[i] is None or shares[j] is None or i >= len(shares) or j >= len(shares):
        return None
    a, b = edges[j], edges[j + 1]
    if log and a <= 0:
        return None
    width = math.log(b / a) if log else b - a
    # the tail holds at most the rows of the bin beside it: the shares are the medians' design, and
    # a few hundred rows put a median far enough off that a merged outer bin would claim twice them
    return tail_end(edges[i], edges[i + 1], tail, min(1.0, shares[i] / shares[j]), width, log, whole)


def as_hhmm(col: Column, note: str) -> tuple[Column, str]:
    """A binned column of integer clock times HHMM whose representative values are clock times and
    whose synthetic values are drawn on clock times only (:func:`ddssp.data.dates.hhmm_sub_cells`).
    Post-processing.

    Parameters
    ----------
    col : Column
        A binned whole-number column.
    note : str
        What discovery found, for the report.

    Returns
    -------
    col : Column
    note : str
    """
    e, m = list(col.edges), len(col.edges) - 1
    values = [float(v) for v in col.values[:m]]
    bins = list(col.within.bins if col.within is not None else (((), (1.0,)),) * m)
    owner = list(range(m))  # the bin each original bin ends up in
    i = 0
    while i < len(e) - 1 and len(e) > 3:
        # a bin that holds no clock time (minutes 60-99 only, [1772, 1779)) merges into its
        # neighbour as a sub-cell without weight; never into a point mass
        if hhmm_valid(np.arange(math.ceil(e[i]), math.ceil(e[i + 1]))).any():
            i += 1
            continue
        j = i - 1 if i > 0 and bins[i - 1] is not None else i + 1
        if j >= len(e) - 1 or bins[j] is None:
            i += 1
            continue
        cuts, weights = bins[j]
        if j < i:
            bins[j] = ((*cuts, e[i]), (*weights, 0.0))
            del e[i]
        else:
            bins[j] = ((e[j], *cuts), (0.0, *weights))
            del e[j]
        owner = [k - 1 if k > i or (k == i and j < i) else k for k in owner]
        del values[i], bins[i]
    values = [hhmm_snap(v, e[k], e[k + 1]) for k, v in enumerate(values)]
    out = Column.binned(col.name, e, values, missing=col.missing)
    within = [b if b is None else (hhmm_sub_cells(e[k], e[k + 1], *b) or b) for k, b in enumerate(bins)]
    out.with_within(Within(tuple(within), whole=True))
    if col.na is not None:
        na = col.labels.index(col.na)
        out.with_na(out.labels[owner[na]] if na < m else col.na)
    return out, note + ", clock times HHMM"


def bin_middle(a: float, b: float, whole: bool) -> float:
    """The middle of bin [a, b): for whole numbers the middle whole number of ``a .. b - 1``.

    Parameters
    ----------
    a, b : float
        The bin's edges.
    whole : bool
        The values are whole numbers (bin [a, b) holds ``a .. b - 1``).

    Returns
    -------
    float
    """
    if whole and b - a >= 1:
        return float(math.floor(a + (b - a - 1) / 2))
    return (a + b) / 2


#: whole numbers whose noisy counts on the first grid hold at least this share of the rows in one
#: cell or two adjacent ones are piled up on few values (years 2007-2009) and keep the histograms,
#: which can make them levels; spread over many whole numbers (ages, grams, hours with a spike at 40)
#: they take the private medians in a small table
PILED_SHARE = 0.6


def piled(y: np.ndarray, a: int, b: int, n: float) -> bool:
    """Whether the noisy counts ``y`` of a grid over the scan's range, populated in cells ``a..b``,
    show whole numbers piled up on a few values: one cell, or two adjacent cells (a few values that
    straddle a cell edge), hold at least ``PILED_SHARE`` of the rows. The grid's two end cells also
    hold the rows beyond the scan's range (clipped into them): they are not read as a pile, and the
    rows are the scan's noisy count ``n`` of numbers in its range plus those two cells (not the
    span's sum, to which its cells of noise clipped at zero add). Post-processing.

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts of the grid's cells.
    a, b : int
        The populated cells.
    n : float
        The scan's noisy count of numbers in its range.

    Returns
    -------
    bool
    """
    w = np.clip(np.asarray(y, dtype=float), 0, None)
    total = n + w[0] + w[-1]
    inner = w[max(a, 1) : min(b, len(w) - 2) + 1]
    if w[a : b + 1].sum() <= 0:
        return True
    if inner.size == 0:
        return False
    pairs = inner[:-1] + inner[1:] if inner.size > 1 else inner
    return bool(max(inner.max(), pairs.max()) >= PILED_SHARE * total)


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
        # the values are below hi: a top edge rounded down below it would leave the largest whole
        # number (3 in a range ending at 3.16) at the edge, outside every cell
        grid[-1] = max(grid[-1], math.ceil(hi))
    if zero and lo <= 0 <= hi:  # zero gets cell [0, next edge)
        first, last = float(grid[0]), float(grid[-1])
        grid = np.unique(np.concatenate([grid, [0.0, 1.0] if whole else [0.0]]))
        # the added edges stay inside the grid's own ends (a whole grid's top edge, rounded up
        # above hi, stays: it holds the largest values)
        grid = grid[(grid >= first) & (grid <= max(last, 1.0 if whole else 0.0))]
    if len(grid) < 2:
        grid = np.array([lo, max(hi, lo + 1.0)])
    return grid
