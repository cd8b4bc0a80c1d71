"""Where a grid of noisy counts is populated: the cells, windows and spans that private schema
discovery reads from its noisy count vectors.

Pure post-processing of noisy outputs: nothing here reads the data.
"""

from __future__ import annotations

import math

import numpy as np

from ddssp.data.discovery.slots import DECADE_LO


def _window_hits(cum: np.ndarray, sd: float, sds: float, w: int) -> np.ndarray:
    """Cells of the windows of ``w`` adjacent cells whose noisy sum reaches ``sds`` sds of that sum
    (``cum``: the cumulative noisy counts, with a leading 0)."""
    k = len(cum) - 1
    out = np.zeros(k, dtype=bool)
    sums = cum[w:] - cum[:-w]  # the window starting at i covers cells i..i+w-1
    for i in np.flatnonzero(sums >= sds * sd * math.sqrt(w)):
        out[i : i + w] = True
    return out


def finest_scale(y: np.ndarray, sd: float, sds: float) -> tuple[int, np.ndarray]:
    """The finest scale at which a grid of noisy counts shows rows. Pure post-processing.

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per cell.
    sd : float
        The noise sd of one cell.
    sds : float
        The level, in sds of a window's sum.

    Returns
    -------
    w : int
        The fewest adjacent cells (1, 2, 4, ...) at which some window reaches ``sds`` sds; 0 when
        none does.
    cells : numpy.ndarray
        A boolean mask of the cells of the windows of that width that do.
    """
    y = np.asarray(y, dtype=float)
    cum = np.concatenate([[0.0], np.cumsum(y)])
    w = 1
    while w <= len(y):
        hit = _window_hits(cum, sd, sds, w)
        if hit.any():
            return w, hit
        w *= 2
    return 0, np.zeros(len(y), dtype=bool)


def evidence_windows(y: np.ndarray, sd: float, sds: float, coarse_sds: float) -> tuple[int, np.ndarray]:
    """Where a grid of noisy counts shows rows on evidence above the noise. Pure post-processing.

    Single cells at ``sds`` when one of them reaches ``coarse_sds``; else (no cell, or only cells
    between the two levels) windows of 1, 2, 4, ... cells at ``coarse_sds``, a level for all the
    windows tested: at ``sds`` a window of noise alone shows somewhere among them in a few grids in
    a thousand, and a lone cell of noise in about one in two thousand (a table of 30 columns that
    show nothing else would put one column's range wherever that cell is).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per cell.
    sd : float
        The noise sd of one cell.
    sds, coarse_sds : float
        The levels of single cells and of wider windows, in sds of a window's sum.

    Returns
    -------
    w : int
        The width of the windows that show (0 when none does).
    cells : numpy.ndarray
        A boolean mask of their cells.
    """
    w, pop = finest_scale(y, sd, sds)
    if w > 1 or (w == 1 and float(np.max(y)) < coarse_sds * sd):
        w, pop = finest_scale(y, sd, coarse_sds)
    return w, pop


def populated_windows(y: np.ndarray, sd: float, sds: float) -> np.ndarray:
    """Cells of a grid of noisy counts that are populated. Pure post-processing.

    The cells whose noisy count reaches ``sds`` sds; when none does (a small table, rows spread
    thinly), the windows of 2, 4, 8, ... adjacent cells whose noisy sum reaches ``sds`` sds of that
    sum, at the finest scale where any does (the rows are somewhere in those windows).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per cell.
    sd : float
        The noise sd of one cell.
    sds : float
        The threshold, in sds.

    Returns
    -------
    numpy.ndarray
        A boolean mask over the cells.
    """
    return finest_scale(y, sd, sds)[1]


#: a cell whose noisy count is below this many sds splits the populated cells into segments
#: (:func:`populated_segments`)
TROUGH_SDS = 1.0


#: the strongest segment of populated cells is taken to end at its outermost cells whose noisy count
#: reaches this many sds (see :func:`anchored_span`)
EDGE_SDS = 2.0


def populated_segments(y: np.ndarray, pop: np.ndarray, sd: float) -> list[tuple[int, int]]:
    """The parts of a grid's populated cells that show rows of their own. Pure post-processing.

    A window that reaches the threshold as a whole marks all its cells populated, empty ones too.
    The runs of adjacent populated cells are split at each cell whose noisy count is below
    ``TROUGH_SDS`` sds between two cells of the run that reach it; weaker cells at the outer end
    of a run stay with the part next to them (a run whose cells are all weaker is one part).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per cell.
    pop : numpy.ndarray
        The populated cells (a boolean mask over the grid).
    sd : float
        The noise sd of one cell.

    Returns
    -------
    list of tuple of int
        (first, last) cell of each segment, in order.
    """
    y = np.asarray(y, dtype=float)
    idx = np.flatnonzero(pop)
    segs: list[tuple[int, int]] = []
    for run in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1):
        if run.size == 0:
            continue
        shown = run[y[run] >= TROUGH_SDS * sd]
        if shown.size == 0:
            segs.append((int(run[0]), int(run[-1])))
            continue
        parts = [[int(p[0]), int(p[-1])] for p in np.split(shown, np.flatnonzero(np.diff(shown) > 1) + 1)]
        parts[0][0], parts[-1][1] = int(run[0]), int(run[-1])
        segs += [(i, j) for i, j in parts]
    return segs


def _edges(y: np.ndarray, seg: tuple[int, int], sd: float) -> tuple[int, int]:
    """A segment trimmed to its outermost cells that reach ``EDGE_SDS`` sds (whole when none does)."""
    cells = np.arange(seg[0], seg[1] + 1)
    shown = cells[y[cells] >= EDGE_SDS * sd]
    return (int(shown[0]), int(shown[-1])) if shown.size else seg


def window_sds(cells: int, alpha: float = 0.01) -> float:
    """Test level (in noise sds) of a window of a grid of noisy counts, counting every window tested.

    :func:`populated_windows` tests the windows of 1, 2, 4, ... cells at every position; noise
    alone reaches this level in one of them in about ``alpha`` of grids.

    Parameters
    ----------
    cells : int
        The number of cells of the grid.
    alpha : float
        The share of grids of noise alone in which some window reaches the level.

    Returns
    -------
    float
        The level, in sds of a window's sum.
    """
    windows = sum(cells - w + 1 for w in (2**i for i in range(cells.bit_length())) if w <= cells)
    return span_sds(windows, alpha)


def segment_sds(cum: np.ndarray, sd: float, seg: tuple[int, int]) -> float:
    """The noisy sum of a run of cells in sds of that sum. Pure post-processing.

    Parameters
    ----------
    cum : numpy.ndarray
        The cumulative noisy counts, with a leading 0.
    sd : float
        The noise sd of one cell.
    seg : tuple of int
        The first and last cell of the run.

    Returns
    -------
    float
    """
    return float(cum[seg[1] + 1] - cum[seg[0]]) / (sd * math.sqrt(seg[1] - seg[0] + 1))


def anchored_span(y: np.ndarray, sd: float, sds: float, detached: float) -> tuple[int, int] | None:
    """(first, last) cell of the strongest populated segment of a grid of noisy counts, cut to its
    outermost cells that reach ``EDGE_SDS`` sds, widened by the other segments whose own noisy sum
    reaches ``detached`` sds; None when nothing reaches ``sds``, or when that strongest segment
    does not itself reach ``sds``. The range of a scan whose rows show only in windows of several
    cells: a window that shows marks its empty cells along with its rows, and an end must rest on a
    cell that shows.

    The strongest segment must show on its own: a window that reaches ``sds`` can be a weak run of
    rows joined by cells of noise, and among its segments a run of noise cells then outscores the
    rows as often as not (a breast-cancer column of values 12..50 was placed at [100, 316], a
    decade above every row). A segment of noise alone reaches ``sds`` only as rarely as a window of
    noise does. Pure post-processing.

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per cell.
    sd : float
        The noise sd of one cell.
    sds : float
        The level (in sds) a window must reach for the cells to be populated.
    detached : float
        The level (in sds of its sum) another segment must reach to widen the span.

    Returns
    -------
    tuple of int or None
        Cell indices, or None when no segment shows on its own.
    """
    y = np.asarray(y, dtype=float)
    w, pop = finest_scale(y, sd, sds)
    if w == 0:
        return None
    segs = populated_segments(y, pop, sd)
    cum = np.concatenate([[0.0], np.cumsum(y)])
    # the windows twice as wide are candidates too: two cells that each miss the threshold can
    # show more rows together than one noise cell that reaches it somewhere else
    wider = populated_segments(y, _window_hits(cum, sd, sds, 2 * w), sd) if 2 * w <= len(y) else []

    def z(seg: tuple[int, int]) -> float:
        return segment_sds(cum, sd, seg)

    # the strongest part, without the weak cells at its ends that its window marked along with it
    a, b = max((_edges(y, seg, sd) for seg in segs + wider), key=z)
    if z((a, b)) < sds:
        return None
    for i, j in segs:
        if z((i, j)) >= detached:
            a, b = min(a, i), max(b, j)
    return a, b


def outer_span(y: np.ndarray, sd: float, sds: float, grow: float | None = None) -> tuple[int, int] | None:
    """(first, last) populated cell of a grid of noisy counts. Pure post-processing.

    The outermost cells of :func:`populated_windows`, then extended outwards by any window of 1, 2,
    4, ... cells beyond the span whose noisy sum reaches ``sds`` sds, or by the window of as many
    cells right next to the span whose noisy sum reaches ``grow`` sds (when given; a lower level,
    as only these few windows are tested). A thin tail shows at a coarser scale than the bulk, in
    aggregate over cells each lost in the noise; the span then reaches that window's far end. A
    window clear of the span counts only when the cells from the span to its far end also reach the
    level of a window next to the span: the many windows tested far out would otherwise let a window
    of noise pull the span across the empty cells between (a single cell far out that reaches
    ``sds`` on its own is populated, and counts).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per cell.
    sd : float
        The noise sd of one cell.
    sds : float
        The threshold, in sds.
    grow : float, optional
        The lower threshold (in sds) of the windows right next to the span.

    Returns
    -------
    tuple of int or None
        Cell indices, or None when nothing is populated.
    """
    y = np.asarray(y, dtype=float)
    k = len(y)
    pop = populated_windows(y, sd, sds)
    if not pop.any():
        return None
    a, b = int(np.flatnonzero(pop)[0]), int(np.flatnonzero(pop)[-1])
    cum = np.concatenate([[0.0], np.cumsum(y)])
    near = sds if grow is None else min(grow, sds)
    grown = True
    while grown:
        grown = False
        w = 1
        while w <= max(a, k - 1 - b):
            t, t_near = sds * sd * math.sqrt(w), near * sd * math.sqrt(w)
            # ok: the extension, from the span to the window's far end, reaches the near level (a
            # thin tail fills the gap to the window, a window of noise far out does not)
            if w <= a:  # windows [i, i + w) left of a; the last one ends next to a
                sums = cum[w : a + 1] - cum[: a + 1 - w]
                ext = cum[a] - cum[: a + 1 - w]  # cells i..a-1
                ok = ext >= near * sd * np.sqrt(a - np.arange(a + 1 - w))
                hit = np.flatnonzero((sums >= t) & ok)
                if hit.size or sums[-1] >= t_near:
                    a, grown = int(hit[0]) if hit.size else a - w, True
                    break
            if w <= k - 1 - b:  # windows right of b; the first one starts next to b
                sums = cum[b + 1 + w :] - cum[b + 1 : k + 1 - w]
                ext = cum[b + 1 + w :] - cum[b + 1]  # cells b+1..(the window's last)
                ok = ext >= near * sd * np.sqrt(np.arange(w, k - b))
                hit = np.flatnonzero((sums >= t) & ok)
                if hit.size or sums[0] >= t_near:
                    b, grown = int(b + (hit[-1] if hit.size else 0) + w), True
                    break
            w *= 2
    return a, b


#: a rest placed by its strongest pair of decades (no decade shows on its own) must beat every
#: decade or pair below it by this many sds of their sums, or it is not placed
#: (:func:`decade_span`): a capital loss of 27 rows in [1e3, 1e4) at 2.6 sds was placed on a pair
#: of noise at [1e7, 1e9) at 2.9, and its synthetic values reached 1.5e7
LOCATE_SDS = 1.0

#: the values other than a single one are placed by decade only when some window of decades shows
#: them at a level that noise alone reaches in this share of columns, over all the windows tested
REST_ALPHA = 1e-3


#: a decade right below the placed ones joins them when its noisy count, or that of it and the
#: decade beyond, reaches this many sds of that sum (as a window next to a scan's range does)
DECADE_GROW_SDS = 3.0


#: a decade above the span joins it only when its own noisy count reaches the level noise alone
#: reaches in this share of columns over the decades above the span: one decade of noise there puts
#: the top bin, and the synthetic values drawn in it, ten times beyond the data's maximum
TOP_ALPHA = 1e-3


#: a rest placed below zero must rest on a negative decade whose noisy count alone reaches the level
#: noise alone reaches in this share of columns over the negative decades: negative synthetic values
#: in a column that holds none are impossible values, not merely a range too wide
NEGATIVE_ALPHA = 1e-6


def decade_span(y: np.ndarray, sd: float) -> tuple[int, int] | None:
    """(first, last) decade of the values other than a single one, from their noisy counts by decade
    (a grid whose cells are orders of magnitude apart). Pure post-processing.

    One decade taken in on noise puts the range, and the synthetic values drawn over it, an order
    of magnitude or more beyond the data; a decade left out clips a thin edge of the rows into the
    next one (and is counted as clipped). So every decade of the span rests on evidence of its own:

    - the rest must show: some window of 1, 2, 4, ... decades reaches :func:`window_sds` at
      ``REST_ALPHA`` (noise alone: under 1e-3 of columns), at the finest scale where any does;
    - the span starts from the evidence, not from the windows' extent (a window of eight decades
      that shows marks its empty decades along with the rows): the strongest decade among those
      windows' cells when one reaches :func:`span_sds` (a level for one of the 41 cells), else their
      strongest window of two decades (largest noisy sum in sds of that sum), placed only when it
      beats every decade and pair below it by ``LOCATE_SDS`` (else None: noise may have chosen it
      over the rows, and a rest placed too high draws values orders of magnitude past the data);
    - a run of those cells apart from the span widens it, to its outermost decades that reach
      ``EDGE_SDS``: it reached the level of all the windows on its own;
    - it grows one decade at a time. Downwards the decade right next to it joins when its noisy
      count, or the sum of it and the decade beyond, reaches ``DECADE_GROW_SDS`` sds of that sum,
      and the decade next to the span reaches ``TROUGH_SDS`` sds itself. Only the decade next to
      the span joins, never the far one of the pair: a thin edge shows in the decade beside the
      rows, while the far one of a pair that shows by the edge's rows is as often a decade of noise.
      Upwards the decade next to the span joins only when its own noisy count reaches the level
      :data:`TOP_ALPHA` sets over the decades above the span (3.7 sds): a decade of noise there
      puts synthetic values ten times beyond the data's maximum (noise passes 3 sds, alone or as a
      pair, in about 2 of a thousand columns), while a thin top decade left out clips its rows to
      the decade below.
    - the span reaches below zero only when one of its negative decades shows on its own, at the
      level :data:`NEGATIVE_ALPHA` sets over the negative decades (5.3 sds); else the negative
      decades count as empty and the span is found again from the others. Windows of several
      decades, a strongest pair and a grown edge each place the positive side on weaker evidence,
      but a column whose values are all >= 0 would get negative synthetic values from them in a
      few of ten thousand columns (:func:`negative_shown`).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per cell.
    sd : float
        The noise sd of one cell.

    Returns
    -------
    tuple of int or None
        Cell indices, or None when the rest does not show.
    """
    y = np.asarray(y, dtype=float)
    k = len(y)
    w, pop = finest_scale(y, sd, window_sds(k, REST_ALPHA))
    if w == 0:
        return None
    cum = np.concatenate([[0.0], np.cumsum(y)])

    def z(i: int, j: int) -> float:
        return segment_sds(cum, sd, (i, j))

    cells = np.flatnonzero(pop)
    strong = cells[y[cells] >= span_sds(k) * sd]
    if strong.size:
        a = b = int(strong[np.argmax(y[strong])])
    else:
        pairs = [(int(i), int(i) + 1) for i in cells if i + 1 < k and pop[i + 1]] or [(int(i), int(i)) for i in cells]
        a, b = max(pairs, key=lambda s: z(*s))
        # the windows show rows somewhere in them, the pair says where: when a decade or pair
        # below it comes within LOCATE_SDS of it, noise may have chosen the higher one, and a rest
        # placed on a pair of noise draws synthetic values orders of magnitude past the data (a
        # close pair above it, passed over, at worst clips rows into the decades below)
        below = [z(int(i), int(i)) for i in cells if i < a - 1] + [z(i, j) for i, j in pairs if j < a - 1]
        if below and z(a, b) - max(below) < LOCATE_SDS:
            return None
    for run in np.split(cells, np.flatnonzero(np.diff(cells) > 1) + 1):
        if run[0] > b + 1 or run[-1] < a - 1:  # apart from the span
            i, j = _edges(y, (int(run[0]), int(run[-1])), sd)
            a, b = min(a, i), max(b, j)
    grown = True
    while grown:
        grown = False
        for wd in (1, 2):
            if a - wd >= 0 and y[a - 1] >= TROUGH_SDS * sd and z(a - wd, a - 1) >= DECADE_GROW_SDS:
                a, grown = a - 1, True
                break
            if wd == 1 and b + 1 < k and y[b + 1] >= span_sds(k - 1 - b, TOP_ALPHA) * sd:
                b, grown = b + 1, True
                break
    neg = np.flatnonzero(DECADE_LO[:k] < 0)
    if neg.size and a <= neg[-1] and not negative_shown(y[a : min(b, int(neg[-1])) + 1], sd, neg.size):
        if np.any(y[neg] != 0.0):
            return decade_span(np.where(DECADE_LO[:k] < 0, 0.0, y), sd)
        a = int(neg[-1]) + 1  # the negative decades already count as empty
        if a > b:
            return None
    return a, b


def negative_shown(y: np.ndarray, sd: float, cells: int) -> bool:
    """Whether some negative decade of a span shows on its own: its noisy count reaches the level
    noise alone reaches in ``NEGATIVE_ALPHA`` of columns over the ``cells`` negative decades.
    Pure post-processing.

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts of the span's negative decades.
    sd : float
        The noise sd of one count.
    cells : int
        The number of negative decades tested.

    Returns
    -------
    bool
    """
    return bool(np.any(np.asarray(y, dtype=float) >= span_sds(cells, NEGATIVE_ALPHA) * sd))


def populated_span(y: np.ndarray, sd: float, sds: float = 3.0) -> tuple[int, int]:
    """(first, last) cell of the populated part of a grid of noisy counts. Pure post-processing.

    The first cell where the noisy count of the cells up to it reaches ``sds`` sds of that sum, and
    the same from the right end. A tail too thin to show above the noise is left out (its rows clip
    into the end bins).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per cell.
    sd : float
        The noise sd of one cell.
    sds : float
        The threshold, in sds.

    Returns
    -------
    tuple of int
        Cell indices; the whole grid when no end shows.
    """
    y = np.asarray(y, dtype=float)
    k = len(y)
    t = sds * sd * np.sqrt(np.arange(1, k + 1))
    okl = np.flatnonzero(np.cumsum(y) >= t)
    okr = np.flatnonzero(np.cumsum(y[::-1]) >= t)
    if not okl.size or not okr.size:
        return 0, k - 1
    a, b = int(okl[0]), k - 1 - int(okr[0])
    return (a, b) if a <= b else (0, k - 1)


def span_sds(cells: int, alpha: float = 0.01) -> float:
    """Test level (in noise sds) of the cut of a grid of noisy counts to its populated span.

    Parameters
    ----------
    cells : int
        The number of cells of the grid.
    alpha : float
        How likely a false extension of the range is per grid.

    Returns
    -------
    float
        The level at which a false extension of the range is about ``alpha`` likely per grid.
    """
    from scipy.stats import norm

    return float(norm.isf(alpha / cells))


#: fine cells above an outer coarse cell that the step fit inside it also reads, for the rows' level:
#: rows only at the top of the cell (ages from 17 in a first cell [0, 18) that reaches 0) give the
#: fit one or two cells of level, and cells of noise below them then place the start as low as 0;
#: a few only, as the density changes further in and a step fit reads a ramp as a later start
STEP_LEVEL_CELLS = 4


def step_start(y: np.ndarray, widths: np.ndarray | None = None) -> int:
    """Where the rows start in a run of noisy counts that the data fills from some cell onwards.

    The least-squares fit of a step (0 before cell ``k``, a constant density from ``k`` on: a cell
    of width ``widths[j]`` then holds that density times its width) to ``y``: pure
    post-processing. Used inside an outer cell that a coarser grid showed populated, where a
    threshold on single fine cells would cut away cells each too thin to show above the noise (a
    threshold needs about (sds x sd / density)^2 cells to see a uniform density; the step fit
    places the edge within about (sd / density)^2 cells).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, in order from the outside in.
    widths : numpy.ndarray, optional
        The cells' widths (all equal when None).

    Returns
    -------
    int
        The first cell of the step (0: the rows fill the whole run).
    """
    y = np.asarray(y, dtype=float)
    m = len(y)
    if m < 2:
        return 0
    w = np.ones(m) if widths is None else np.asarray(widths, dtype=float)
    # SSE(k) = sum_{j<k} y_j^2 + sum_{j>=k} (y_j - c w_j)^2, least at c = sum y_j w_j / sum w_j^2:
    # sum y^2 - (sum_{j>=k} y_j w_j)^2 / sum_{j>=k} w_j^2
    tail = np.cumsum((y * w)[::-1])[::-1]  # sum_{j>=k} y_j w_j for k = 0..m-1
    gain = tail**2 / np.cumsum((w**2)[::-1])[::-1]
    gain = np.where(tail > 0, gain, -np.inf)  # a step up, not down
    return int(np.argmax(gain)) if np.isfinite(gain).any() else 0
