"""Code columns (few small whole numbers: sex 1..2, education 1..16, a count of children 0..5) and
whole numbers near zero: the grids their fine counts are drawn on and the ends those counts set.

Public choices from the scan's noisy range, and post-processing of noisy counts: nothing here reads
the data.
"""

from __future__ import annotations

import math

import numpy as np

from ddssp.data.discovery.slots import DECADE_GROUP, DECADE_HI, DECADE_LO, slot_index
from ddssp.data.discovery.spans import REST_ALPHA, span_sds

__all__ = [
    "CODE_ALPHA",
    "code_span",
    "codes_below",
    "first_cell_to_zero",
    "fractions_show",
    "next_decade",
    "with_strongest",
]

#: the end codes of a code grid are its outermost cells whose own noisy count reaches the level at
#: which noise alone reaches it in one of the grid's cells in this share of columns: a code beyond the
#: data's (OWN_RENT 3 where the codes are 0..2) is a value no record has, which a dictionary refuses
CODE_ALPHA = 1e-3


def codes_below(grid: np.ndarray, lo: float, max_levels: int) -> np.ndarray:
    """A code grid (one cell per whole number) whose scan range starts above zero, reaching down to
    the whole numbers of the decade below it, and to 0 when that decade reaches under 1 (a range of
    1..2 gets the cell of 0, one of 2..12 the cells 0 and 1), as far as it stays within
    ``max_levels`` cells.

    The scan counts numbers in log bands a quarter decade wide: a code 0 in a few % of the rows sits
    alone in the exact-zero slot, and code 1 alone in [1, 1.78), each at the noise sd of a scan slot,
    so a code that its fine cell would show at five sds is often under the scan's level and was
    clipped into the next code. Its own fine cell counts it (a count vector of codes costs the same
    however many cells it has), and :func:`code_span` keeps it only when that count shows.

    Parameters
    ----------
    grid : numpy.ndarray
        Cell edges, one cell [v, v + 1) per whole number v.
    lo : float
        The scan's (noisy) lower end of the range.
    max_levels : int
        The most cells the grid may have.

    Returns
    -------
    numpy.ndarray
        The grid, extended (or as it was when ``lo`` is not above 0 or nothing fits).
    """
    if lo <= 0:
        return grid
    new_lo = max(float(math.floor(lo / 10.0)), float(grid[-1]) - max_levels)
    if new_lo >= grid[0]:
        return grid
    return np.concatenate([np.arange(new_lo, grid[0], dtype=float), grid])


def code_span(y: np.ndarray, sd: float, span: tuple[int, int] | None) -> tuple[int, int] | None:
    """The populated span of a code grid cut to its outermost cells whose own noisy count reaches
    :func:`ddssp.data.discovery.spans.span_sds` at ``CODE_ALPHA``: a window of thin cells that
    reaches the level of :func:`ddssp.data.discovery.spans.outer_span` shows rows somewhere in it,
    not that its end code holds any. Post-processing.

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts, one per code.
    sd : float
        The noise sd of one count.
    span : tuple of int or None
        The populated span by the window rule; kept when no cell reaches the level (codes each too
        thin to show alone).

    Returns
    -------
    tuple of int or None
    """
    shown = np.flatnonzero(np.asarray(y, dtype=float) >= span_sds(len(y), CODE_ALPHA) * sd)
    if span is None or shown.size == 0:
        return span
    return int(shown[0]), int(shown[-1])


def with_strongest(y: np.ndarray, p: int, among: np.ndarray | None = None) -> tuple[int, int]:
    """The span of cell ``p`` and the cell of the largest noisy count among the others (a value and
    its strongest other value, when only the value shows). Post-processing.

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts (at least two cells).
    p : int
        The cell that shows.
    among : numpy.ndarray, optional
        A boolean mask of the cells to choose from (all when None, or when it holds none but ``p``).

    Returns
    -------
    tuple of int
    """
    y = np.asarray(y, dtype=float)
    ok = np.arange(len(y)) != p
    if among is not None and (among & ok).any():
        ok &= among
    j = int(np.argmax(np.where(ok, y, -np.inf)))
    return min(p, j), max(p, j)


def first_cell_to_zero(grid: np.ndarray, whole: bool, lo: float, zero: float, time_axis: bool) -> bool:
    """Whether the first cell of a coarse grid of whole numbers reaches down to 0: the scan found no
    zeros and no negative numbers, and its range starts above 0 by at most two widths of the first
    cell (ages from 2 or 6 where the data starts at 0).

    The scan's bands see ages 0 and 1 each alone at about one sd of its noise, so its range starts
    at 2 or 6 even when the rows reach 0. The first coarse cell already holds every row below it
    (clipped in); reaching 0, it also says where they may lie: it keeps the range only when its
    noisy count shows, and the fine cut then starts the range where a step fit to the fine counts
    of that cell (its level read also from a few cells above it) places the rows (at 0 when the
    rows reach it, where they start when they do not).

    Parameters
    ----------
    grid : numpy.ndarray
        The coarse grid's edges over the scan's range.
    whole : bool
        The scan found whole numbers.
    lo : float
        The scan's (noisy) lower end of the range.
    zero : float
        The scan's noisy count of zeros (0 when its slot did not show).
    time_axis : bool
        The column is a time axis (no zero of its own).

    Returns
    -------
    bool
    """
    if not whole or time_axis or lo <= 0 or zero > 0 or len(grid) < 3:
        return False
    return bool(0 < grid[0] <= 2.0 * (grid[1] - grid[0]))


def next_decade(y: np.ndarray, sd: float, v: float) -> tuple[int, int] | None:
    """The decade of the whole numbers next to a single value ``v`` the scan found, when its noisy
    count shows on its own. Post-processing.

    :func:`ddssp.data.discovery.spans.decade_span` tests every window of the 41 decades, at a level
    noise reaches in ``REST_ALPHA`` of columns over all of them (4.4 sds); the decade of ``v + 1``
    is where the other codes of a code column lie (housing types 2 and 3 beside a type 1 that holds
    97% of the rows), and tested alone it needs the level of one test at ``REST_ALPHA`` (3.1 sds).
    Used only when no window reached the union level: noise alone places a rest in at most twice
    ``REST_ALPHA`` of columns.

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts of the other numbers by decade (:data:`ddssp.data.discovery.slots.DECADE_GROUP`).
    sd : float
        The noise sd of one count.
    v : float
        The single value (a whole number).

    Returns
    -------
    tuple of int or None
        (g, g), the decade's index, or None when ``v`` is negative or the count does not show.
    """
    if v < 0:
        return None
    g = int(DECADE_GROUP[slot_index(np.array([v + 1.0]))[0]])
    return (g, g) if float(y[g]) >= span_sds(1, REST_ALPHA) * sd else None


def fractions_show(y: np.ndarray, sd: float, span: tuple[int, int]) -> bool:
    """Whether the noisy decade counts of the numbers other than a single value show numbers
    strictly between -1 and 1 (other than 0), which no whole number is. Post-processing.

    The scan calls a column's numbers whole from its populated slots alone. A column that is mostly
    one value (affairs: 0 in two thirds of the rows, the rest 0.04 to 58 spread thinly over the
    slots) has no other slot that shows, so nothing there counts its fractions; its rest, counted by
    decade, can. A decade of the rest's span strictly inside (0, 1), or inside (-0.1, 0), whose own
    count reaches the level one of those decades reaches on noise alone in ``REST_ALPHA`` of
    columns, shows them (the decade [-1, -0.1) is left out: -1 is a whole number).

    Parameters
    ----------
    y : numpy.ndarray
        Noisy counts of the other numbers by decade (:data:`ddssp.data.discovery.slots.DECADE_GROUP`).
    sd : float
        The noise sd of one count.
    span : tuple of int
        The decades the rest was placed in (:func:`ddssp.data.discovery.spans.decade_span`).

    Returns
    -------
    bool
    """
    a, b = span
    k = np.arange(len(y))
    lo, hi = DECADE_LO[: len(y)], DECADE_HI[: len(y)]
    fractional = ((lo >= 0) & (hi <= 1)) | ((lo >= -0.1) & (hi <= 0))
    cells = np.flatnonzero((k >= a) & (k <= b) & (lo != hi) & fractional)  # lo == hi: the zero cell
    return bool(cells.size) and bool(np.max(y[cells]) >= span_sds(cells.size, REST_ALPHA) * sd)
