"""The views a :class:`~ddssp.data.discovery.source.SqlColumn` hands discovery's readers: its numbers,
missing cells and time values, counted by SQL (or from its distinct values) when a reader asks for
counts, and read in memory (``numpy.asarray``) only by a reader that needs every value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddssp.data.discovery.slots import (
    DECADE_GROUP,
    N_DECADES,
    N_SLOTS,
    parse_numbers,
    parse_times_of_text,
    slot_index,
)

__all__ = ["MissingView", "NumberView", "TimeView"]


class MissingView:
    """The missing-cell mask of a :class:`SqlColumn` (counted, never held).

    Parameters
    ----------
    col : SqlColumn
        The column.
    """

    def __init__(self, col: Any):
        self.col = col

    def __array__(self, dtype=None, copy=None):
        s = self.col.series()
        return np.asarray(s.isna().to_numpy(), dtype=dtype)


class NumberView:
    """The numbers of a :class:`SqlColumn`, NaN elsewhere: counted by SQL on a grid or by slot, or
    read in memory (``numpy.asarray``) by a reader that needs them all.

    Parameters
    ----------
    col : SqlColumn
        The column.
    """

    def __init__(self, col: Any):
        self.col = col

    def __array__(self, dtype=None, copy=None):
        x, _ = parse_numbers(self.col.series())
        return np.asarray(x, dtype=dtype)

    def scan_cells(self, with_times: bool) -> np.ndarray:
        """See :meth:`SqlColumn.scan_cells`.

        Parameters
        ----------
        with_times : bool
            Count the dates and clock times in the time cells.

        Returns
        -------
        numpy.ndarray
        """
        return self.col.scan_cells(with_times)

    def slot_cells(self) -> np.ndarray:
        """Exact counts by scan slot (:func:`ddssp.data.discovery.slots.slot_cells`).

        Returns
        -------
        numpy.ndarray
        """
        _, whole, frac = self.col._scan_data()
        return np.concatenate([whole, frac]).astype(np.int64)

    def grid_counts(self, edges: np.ndarray) -> np.ndarray:
        """Exact counts on a grid (:func:`ddssp.data.discovery.numeric.grid_counts`).

        Parameters
        ----------
        edges : numpy.ndarray
            The grid's cell edges.

        Returns
        -------
        numpy.ndarray
        """
        col = self.col
        m = len(edges) - 1
        k = _bin_tree(col.table.dialect, "x", np.asarray(edges, dtype=float), 0, m - 1)
        out = np.zeros(m, dtype=np.int64)
        for b, n in col.table.rows(f"SELECT {k} AS k, count(*) FROM {col._classified()} WHERE cls = 1 GROUP BY 1"):
            out[int(b)] += int(n)
        o = col.odd()
        return out + _weighted_grid(o.x, o.counts, edges)

    def hhmm_cells(self) -> np.ndarray:
        """Exact counts of the numbers that are clock times HHMM and of the other numbers
        (:func:`ddssp.data.dates.hhmm_cells`): whole, 0 <= x < 2400, minutes ``x mod 100`` below 60.

        Returns
        -------
        numpy.ndarray
            int64 ``[clock times, other numbers]``.
        """
        from ddssp.data.dates import HHMM_END, hhmm_valid

        col = self.col
        end = col.table.dialect.double(float(HHMM_END))
        # floor is taken only inside the range (a huge x is never cast to a whole number), and there
        # x - 100 * floor(x / 100) is numpy's mod(x, 100) for a whole x >= 0
        clock = "CASE WHEN x = floor(x) AND x - 100 * floor(x / 100) < 60 THEN 1 ELSE 0 END"
        ok = f"CASE WHEN x >= 0 AND x < {end} THEN {clock} ELSE 0 END"
        q = f"SELECT {ok} AS ok, count(*) FROM {col._classified()} WHERE cls = 1 GROUP BY 1"
        out = np.zeros(2, dtype=np.int64)
        for k, n in col.table.rows(q):
            out[0 if int(k) else 1] += int(n)
        o = col.odd()
        num = ~np.isnan(o.x)
        valid = num & hhmm_valid(np.where(num, o.x, -1.0))
        return out + np.array([int(o.counts[valid].sum()), int(o.counts[num & ~valid].sum())], dtype=np.int64)

    def rest_cells(self, v: float) -> np.ndarray:
        """Exact counts of the rows equal to ``v`` and of the other numbers by decade
        (:func:`ddssp.data.discovery.scan.rest_cells`).

        Parameters
        ----------
        v : float
            The single value.

        Returns
        -------
        numpy.ndarray
        """
        col = self.col
        d = col.table.dialect
        slot, _, near = col._slot_parts()
        lit = d.double(float(v))
        q = (
            f"SELECT x = {lit} AS eq, CASE WHEN x = {lit} THEN NULL ELSE {slot} END AS s, "
            f"CASE WHEN x = {lit} THEN NULL ELSE {near} END AS ax, count(*) FROM {col._classified()} "
            "WHERE cls = 1 GROUP BY 1, 2, 3"
        )
        eq = 0
        slots = np.zeros(N_SLOTS, dtype=np.int64)
        for e, s, ax, n in col.table.rows(q):
            if e:
                eq += int(n)
            elif ax is not None:
                slots[int(slot_index(np.array([float(ax)]))[0])] += int(n)
            else:
                slots[int(s)] += int(n)
        o = col.odd()
        eq_odd, rest_odd = _weighted_rest(o.x, o.counts, v)
        return _rest_vector(eq + eq_odd, slots + rest_odd)


class TimeView:
    """The days (or minutes) of a :class:`SqlColumn`'s time values, by distinct value.

    Parameters
    ----------
    col : SqlColumn
        The column.
    key : str
        ``"days"`` or ``"minutes"``.
    """

    def __init__(self, col: Any, key: str):
        self.col = col
        self.key = key

    def _values(self) -> tuple[np.ndarray, np.ndarray]:
        o = self.col.odd()
        return o.times()[self.key], o.counts

    def __array__(self, dtype=None, copy=None):
        s = self.col.series()
        x, isna = parse_numbers(s)
        return np.asarray(parse_times_of_text(s, x, isna)[self.key], dtype=dtype)

    def slot_cells(self) -> np.ndarray:
        """Exact counts by scan slot (:func:`ddssp.data.discovery.slots.slot_cells`).

        Returns
        -------
        numpy.ndarray
        """
        v, w = self._values()
        return _weighted_slots(v, w).reshape(-1)

    def grid_counts(self, edges: np.ndarray) -> np.ndarray:
        """Exact counts on a grid (:func:`ddssp.data.discovery.numeric.grid_counts`).

        Parameters
        ----------
        edges : numpy.ndarray
            The grid's cell edges.

        Returns
        -------
        numpy.ndarray
        """
        v, w = self._values()
        return _weighted_grid(v, w, edges)

    def rest_cells(self, v: float) -> np.ndarray:
        """Exact counts of the rows equal to ``v`` and of the others by decade.

        Parameters
        ----------
        v : float
            The single value.

        Returns
        -------
        numpy.ndarray
        """
        x, w = self._values()
        eq, rest = _weighted_rest(x, w, v)
        return _rest_vector(eq, rest)


# --------------------------------------------------------------------------- numpy on distinct values
def _weighted_slots(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """[[whole numbers by slot], [other numbers by slot]] of values ``v`` held by ``w`` rows each
    (NaN skipped): :func:`~ddssp.data.discovery.slots.slot_cells` on distinct values."""
    m = ~np.isnan(v)
    v, w = v[m], np.asarray(w)[m]
    out = np.zeros((2, N_SLOTS), dtype=np.int64)
    if v.size:
        slot = slot_index(v)
        whole = np.isfinite(v) & (v == np.floor(v))
        np.add.at(out[0], slot[whole], w[whole])
        np.add.at(out[1], slot[~whole], w[~whole])
    return out


def _weighted_grid(v: np.ndarray, w: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """:func:`~ddssp.data.discovery.numeric.grid_counts` of values ``v`` held by ``w`` rows each."""
    m = ~np.isnan(v)
    v, w = np.clip(v[m], edges[0], edges[-1]), np.asarray(w)[m]
    out = np.zeros(len(edges) - 1, dtype=np.int64)
    if v.size:
        k = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, len(edges) - 2)
        np.add.at(out, k, w)
    return out


def _weighted_rest(x: np.ndarray, w: np.ndarray, v: float) -> tuple[int, np.ndarray]:
    """Rows equal to ``v`` and the other numbers by slot, of values ``x`` held by ``w`` rows each."""
    m = ~np.isnan(x)
    x, w = x[m], np.asarray(w)[m]
    eq = int(w[x == v].sum())
    slots = np.zeros(N_SLOTS, dtype=np.int64)
    rest = x != v
    if rest.any():
        np.add.at(slots, slot_index(x[rest]), w[rest])
    return eq, slots


def _rest_vector(eq: int, slots: np.ndarray) -> np.ndarray:
    """[rows equal to the value, the other numbers by decade group] from counts by slot."""
    groups = np.zeros(N_DECADES, dtype=np.int64)
    np.add.at(groups, DECADE_GROUP, slots)
    return np.concatenate([[eq], groups]).astype(np.int64)


def _bin_tree(d: Any, x: str, edges: np.ndarray, a: int, b: int) -> str:
    """The grid cell ``a..b`` of x as a balanced CASE tree: searchsorted(edges, x, 'right') - 1,
    clipped into the end cells (values beyond the grid count in its end cells), as
    :func:`~ddssp.data.discovery.numeric.grid_counts` does."""
    if a == b:
        return str(a)
    mid = (a + b + 1) // 2  # cells a..mid-1 hold x < edges[mid]
    return f"(CASE WHEN {x} < {d.double(float(edges[mid]))} THEN {_bin_tree(d, x, edges, a, mid - 1)} ELSE {_bin_tree(d, x, edges, mid, b)} END)"
