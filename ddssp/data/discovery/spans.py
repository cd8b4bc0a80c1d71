"""Where a grid of noisy counts is populated: the cells, windows and spans that private schema
discovery reads from its noisy count vectors, and when the counts outside one value say the column
holds that value alone.

Pure post-processing of noisy outputs: nothing here reads the data.
"""

from __future__ import annotations

import math

import numpy as np


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
    y = np.asarray(y, dtype=float)
    k = len(y)
    out = np.zeros(k, dtype=bool)
    cum = np.concatenate([[0.0], np.cumsum(y)])
    w = 1
    while w <= k:
        sums = cum[w:] - cum[:-w]  # the window starting at i covers cells i..i+w-1
        hit = np.flatnonzero(sums >= sds * sd * math.sqrt(w))
        if hit.size:
            for i in hit:
                out[i : i + w] = True
            return out
        w *= 2
    return out


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


def span_sds(cells: int) -> float:
    """Test level (in noise sds) of the cut of a grid of noisy counts to its populated span.

    Parameters
    ----------
    cells : int
        The number of cells of the grid.

    Returns
    -------
    float
        The level at which a false extension of the range is about 1% likely per grid.
    """
    from scipy.stats import norm

    return float(norm.isf(0.01 / cells))


def step_start(y: np.ndarray) -> int:
    """Where the rows start in a run of noisy counts that the data fills from some cell onwards.

    The least-squares fit of a step (0 before cell ``k``, a constant from ``k`` on) to ``y``: pure
    post-processing. Used inside an outer cell that a coarser grid showed populated, where a
    threshold on single fine cells would cut away cells each too thin to show above the noise (a
    threshold needs about (sds x sd / density)^2 cells to see a uniform density; the step fit
    places the edge within about (sd / density)^2 cells).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, in order from the outside in.

    Returns
    -------
    int
        The first cell of the step (0: the rows fill the whole run).
    """
    y = np.asarray(y, dtype=float)
    m = len(y)
    if m < 2:
        return 0
    # SSE(k) = sum_{j<k} y_j^2 + sum_{j>=k} (y_j - mean)^2 = sum y^2 - (sum_{j>=k} y_j)^2 / (m - k)
    tail = np.cumsum(y[::-1])[::-1]  # sum_{j>=k} y_j for k = 0..m-1
    gain = tail**2 / np.arange(m, 0, -1)
    gain = np.where(tail > 0, gain, -np.inf)  # a step up, not down
    return int(np.argmax(gain)) if np.isfinite(gain).any() else 0


def _single(name: str) -> str:
    return f"column {name!r} holds a single value; drop it (it carries no information)"


def _confident_single(rest: float, sd: float, n: float) -> bool:
    """The noisy count of rows outside the one value found is within 2 sds of zero, and the noise is
    small enough (sd below 1% of the rows) for that to mean "a single value" rather than "too noisy to see
    the others"."""
    return rest < 2 * sd and sd < 0.01 * max(n, 1.0)
