"""Discovery's noisy grid counts reused as one-way measurements of AIM (post-processing).

Discovery counts a numeric column's numbers on public grids (each row in exactly one cell, the end
cells holding every number beyond the grid), with discrete Gaussian noise charged to the release's
ledger. When every cell of such a grid falls wholly into one level of the column as the release
encodes it (a bin, or a whole-number level; numbers beyond the column's range are clipped into its
end levels, as the grid's end cells hold them), the sum of a level's cells is a noisy count of that
level's numbers with noise sd ``sigma * sqrt(cells)``. These sums are a one-way measurement AIM
fits with its own, for nothing more: the counts were paid for once, by discovery.

Two kinds of level are not covered by a grid, and are left unmeasured (``inf`` sd): the level of a
column's missing and text cells (``na``: a grid counts numbers only) and its catch-all level
(``missing``). A whole-number level takes the grid cell ``[v, v + 1)`` of its number ``v``: a number
between two levels (``v + 0.7``) would be coded to the nearest level but counted in ``v``'s cell, so
grids of whole numbers are used only for columns discovery found to hold whole numbers, and never for
a column whose levels are not whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RecycledMeasurement", "add_recycled", "from_grid", "recycled_problem", "round_zero"]


@dataclass
class RecycledMeasurement:
    """A one-way marginal summed from one grid of discovery's noisy counts.

    Attributes
    ----------
    clique : tuple of str
        The one column.
    values : numpy.ndarray
        Per level of the column: the sum of its grid cells' noisy counts (0 where unmeasured).
    cells : numpy.ndarray
        Per level: how many grid cells it sums (0: unmeasured).
    sigma : float
        The noise sd of one grid cell (the discovery charge's).
    entry : int
        The index, in the release's ledger, of the discovery charge that paid for the grid's counts.
    full : bool
        Whether it measures every level of a column of whole-number levels but the level of missing
        cells and the catch-all level (:func:`round_zero`); known when made by :func:`from_grid`,
        False when read back from a file.
    """

    clique: tuple[str, ...]
    values: np.ndarray
    cells: np.ndarray
    sigma: float
    entry: int
    full: bool = False

    @property
    def sigmas(self) -> np.ndarray:
        """Per level, the noise sd of its sum: ``sigma * sqrt(cells)``, ``inf`` where unmeasured."""
        n = np.asarray(self.cells, dtype=float)
        return np.where(n > 0, self.sigma * np.sqrt(np.maximum(n, 1.0)), np.inf)


def from_grid(
    col: Any, edges: np.ndarray, y: np.ndarray, sigma: float, entry: int, *, whole: bool
) -> RecycledMeasurement | None:
    """The one-way measurement of ``col`` that a grid's noisy counts give, or None when a cell of the
    grid spans two of its levels (or the column is not a numeric one this applies to).

    Parameters
    ----------
    col : ddssp.data.Column
        The discovered column, as the release encodes it.
    edges : numpy.ndarray
        The grid's cell edges (its end cells hold every number beyond them).
    y : numpy.ndarray
        The grid's noisy counts, one per cell.
    sigma : float
        Their noise sd.
    entry : int
        The ledger index of the charge that paid for them.
    whole : bool
        Whether the column holds whole numbers only (as its scan found): a grid of one cell per
        whole number then maps onto whole-number levels.

    Returns
    -------
    RecycledMeasurement or None
    """
    edges = np.asarray(edges, dtype=float)
    y = np.asarray(y, dtype=float)
    if col.kind != "numeric" or getattr(col, "unit", None) is not None or len(edges) != len(y) + 1 or len(y) < 1:
        return None
    level = _cell_levels(col, edges, whole)
    if level is None:
        return None
    skip = {c for c in (col.na_code, col.missing_code) if c is not None}
    values = np.zeros(col.size)
    cells = np.zeros(col.size, dtype=np.int64)
    np.add.at(values, level, y)
    np.add.at(cells, level, 1)
    for c in skip:
        values[c], cells[c] = 0.0, 0
    if not cells.any():
        return None
    full = col.edges is None and all(cells[i] > 0 for i in range(col.size) if i not in skip)
    return RecycledMeasurement((col.name,), values, cells, float(sigma), int(entry), full)


def _cell_levels(col: Any, edges: np.ndarray, whole: bool) -> np.ndarray | None:
    """The level each grid cell's numbers are coded to, or None when one cell's numbers may go to
    two levels. The first cell holds every number below its upper edge, the last every number from
    its lower edge on."""
    n = col.size - (col.missing_code is not None)
    lo, hi = (float(b) for b in col.bounds)
    if col.edges is not None:  # bins: [e_i, e_i+1), numbers clipped into [lo, hi] first
        e = np.asarray(col.edges, dtype=float)
        low = np.concatenate([[-np.inf], edges[1:-1]])  # each cell's lowest number
        top = np.concatenate([edges[1:-1], [np.inf]])  # each cell's numbers are below this
        first = np.clip(np.searchsorted(e, np.clip(low, lo, hi), side="right") - 1, 0, n - 1)
        # the bin of the numbers just under ``top``: the last edge below it starts it
        last = np.clip(np.searchsorted(e, np.minimum(top, np.nextafter(hi, np.inf)), side="left") - 1, 0, n - 1)
        return first if np.array_equal(first, last) else None
    values = np.asarray(col.values[:n], dtype=float)
    steps = np.diff(edges)
    whole_grid = np.all(edges == np.round(edges)) and np.all(steps == 1.0)
    if not (whole and whole_grid and np.all(values == np.round(values))):
        return None
    if edges[0] > lo or edges[-2] < hi:  # a cell beyond the grid's ends would hold several levels
        return None
    v = np.clip(edges[:-1], lo, hi)
    idx = np.searchsorted(values, v)
    if np.any(idx >= n) or np.any(values[np.minimum(idx, n - 1)] != v):
        return None  # a whole number between levels: coded to the nearest, not to one level alone
    return idx


def add_recycled(est: Any, recycled: Sequence[RecycledMeasurement]) -> None:
    """Give the recycled measurements to an estimation engine that takes a noise sd per cell.

    Parameters
    ----------
    est : MirrorDescentNumpy
        The engine.
    recycled : sequence of RecycledMeasurement
        The measurements (none: nothing is done).
    """
    for m in recycled:
        est.add(tuple(m.clique), np.asarray(m.values, dtype=float), m.sigmas)


def round_zero(
    one_ways: Sequence[tuple[str, ...]],
    recycled: Sequence[RecycledMeasurement],
    domain: dict[str, int],
    *,
    total_known: bool,
) -> list[tuple[str, ...]]:
    """The one-way marginals AIM's round 0 still measures, given the recycled measurements it fits.

    A column of whole-number levels whose recycled measurement is ``full`` needs no round-0 one-way:
    discovery's counts already measure its every level but the level of missing cells and the
    catch-all level, at a far smaller sd than round 0's, and the model's total (from the measurements
    of every cell) fixes the level left. Its share of round 0 goes to the adaptive rounds, which spend
    whatever the budget has left. A binned column keeps its one-way: the rule that marks empty end
    bins after AIM reads AIM's counts only, as discovery's counts chose the bins' range and are biased
    towards showing at its ends. When no measurement of every cell would be left before the first
    fit (no target phase, every column covered), the smallest column's one-way is kept: it measures
    the total at the smallest sd. Public: from the schema and the grids only.

    Parameters
    ----------
    one_ways : sequence of tuple of str
        The one-way marginals round 0 would measure, in order.
    recycled : sequence of RecycledMeasurement
        The recycled measurements the run fits.
    domain : dict
        ``{column: levels}``.
    total_known : bool
        Whether earlier measurements (a target phase) already measure every cell of a marginal.

    Returns
    -------
    list of tuple of str
        The one-way marginals to measure, in the order given.
    """
    covered = {m.clique for m in recycled if m.full}
    left = [c for c in one_ways if c not in covered]
    if left or total_known or not one_ways:
        return left
    return [min(one_ways, key=lambda c: domain[c[0]])]


def recycled_problem(m: RecycledMeasurement, ledger: Any, domain: dict[str, int]) -> str | None:
    """Why a recorded recycled measurement does not agree with the ledger and the schema, or None.

    Its charge must be a discovery count on its column with the same noise sd, its cells at most
    that charge's, its size the column's, and its sums integers (of discrete Gaussian counts).

    Parameters
    ----------
    m : RecycledMeasurement
        The measurement.
    ledger : Ledger
        The release's ledger.
    domain : dict
        The schema's ``{column: levels}``.

    Returns
    -------
    str or None
    """
    name = ",".join(m.clique)
    if len(m.clique) != 1 or m.clique[0] not in domain:
        return f"recycled measurement on {name}: not one column of the schema"
    if not 0 <= m.entry < len(ledger.entries):
        return f"recycled measurement on {name}: no ledger entry {m.entry}"
    e = ledger.entries[m.entry]
    if e.kind != "discover-counts" or tuple(e.clique or ()) != tuple(m.clique):
        return f"recycled measurement on {name}: ledger entry {m.entry} is not a discovery count of that column"
    if not math.isclose(float(e.sigma), float(m.sigma), rel_tol=1e-12):
        return f"recycled measurement on {name}: sigma {m.sigma:.6g}, its charge's {float(e.sigma):.6g}"
    cells = np.asarray(m.cells)
    values = np.asarray(m.values, dtype=float)
    if cells.shape != (domain[m.clique[0]],) or values.shape != cells.shape:
        return f"recycled measurement on {name}: {cells.size} levels, the column has {domain[m.clique[0]]}"
    if (cells < 0).any() or int(cells.sum()) > int((e.params or {}).get("cells", 0)):
        return f"recycled measurement on {name}: sums more cells than its charge counted"
    if not np.all(values == np.round(values)) or np.any(values[cells == 0] != 0):
        return f"recycled measurement on {name}: sums that are not integers, or values in unmeasured levels"
    return None
