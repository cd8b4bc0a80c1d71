"""Declared orders: one column is a non-decreasing function of another (public knowledge).

A rules-file line ``[name:] COLUMN increases with COLUMN [within GROUP]`` declares that the first
column never decreases as the second grows: of two rows (of the same GROUP level, with ``within``),
the one with the larger second value never has the smaller first value. The NIST dictionary's
PINCP_DECILE is the person's "income rank with respect to their state, in 10% bins" of PINCP: in a
one-state table ``decile_of_income: PINCP_DECILE increases with PINCP``; in a table of several states
the order holds only inside each state, and ``... increases with PINCP within PUMA`` declares it
inside each PUMA (every PUMA lies in one state). Only the order is declared, never where one level
ends and the next begins.

Levels outside the order (the first column's levels that are not numbers, such as ``N``; either
column's missing level) are not constrained: other rules say when they occur. The first column's
levels must each stand for one number (a categorical column with numeric labels, or numeric levels);
the second may be binned.

How a release follows it (post-processing; the data are never read):

* :func:`staircase` reads the model's two-way marginal of the pair (of each GROUP level, with
  ``within``) and keeps the monotone path of cells (each step to the next level of one column or
  both) that holds the most mass; every other ordered cell becomes a structural zero, so the model's
  draws follow the order from bin to bin;
* :func:`arrange` then gives, inside each bin of the second column (and GROUP level), the smaller
  drawn values to the rows with the smaller first value, so the decoded rows follow it inside a bin
  too.

:func:`order_violations` counts the rows that break an order; :func:`ddssp.data.rules.orders` lists
the orders among rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.rule_levels import CompiledRule, RuleError, level_values, number, quote

__all__ = [
    "Order",
    "arrange",
    "broken_by_order",
    "check_order",
    "order_keys",
    "order_violations",
    "staircase",
]


@dataclass(frozen=True)
class Order:
    """A declared order: ``column`` is a non-decreasing function of ``by``.

    Attributes
    ----------
    name : str
        The declaration's name (given before a colon, else ``rule N``).
    column : str
        The column that increases (one number per level).
    by : str
        The column it increases with (may be binned).
    within : str or None
        A column inside each level of which the order holds (None: across the whole table).
    """

    name: str
    column: str
    by: str
    within: str | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns named: the increasing one, the one it increases with, then the group's."""
        return (self.column, self.by) if self.within is None else (self.column, self.by, self.within)

    @property
    def text(self) -> str:
        """The declaration in its canonical text form (what a release stores)."""
        group = "" if self.within is None else f" within {quote(self.within)}"
        return f"{self.name}: {quote(self.column)} increases with {quote(self.by)}{group}"

    def __str__(self) -> str:
        return self.text


def parse_order(tokens: list[tuple[str, str]], name: str) -> Order:
    """``COLUMN increases with COLUMN [within COLUMN]`` from a rule's tokens (kind, text).

    Parameters
    ----------
    tokens : list of (str, str)
        The rule's tokens after its name.
    name : str
        The rule's name.

    Returns
    -------
    Order

    Raises
    ------
    RuleError
        For anything but two different columns around ``increases with``, optionally followed by
        ``within`` and a third column.
    """
    words = ("word", "value")
    grouped = len(tokens) == 6 and tokens[4] == ("word", "within") and tokens[5][0] in words
    if (len(tokens) != 4 and not grouped) or tokens[0][0] not in words or tokens[3][0] not in words:
        raise RuleError(f"rule {name!r}: write COLUMN increases with COLUMN [within COLUMN]")
    column, by = tokens[0][1], tokens[3][1]
    within = tokens[5][1] if grouped else None
    if column == by:
        raise RuleError(f"rule {name!r}: a column cannot increase with itself ({column!r})")
    if within in (column, by):
        raise RuleError(f"rule {name!r}: the group column {within!r} must differ from the order's columns")
    return Order(name, column, by, within)


def order_keys(column: Any) -> np.ndarray:
    """The number each level of ``column`` stands for in an order (NaN: outside the order).

    A binned numeric column's bin stands for its lower edge (bins do not overlap); its missing level
    and any level past the bins are outside the order.

    Parameters
    ----------
    column : ddssp.data.columns.Column
        A schema column.

    Returns
    -------
    numpy.ndarray
        float64, one entry per level.
    """
    if column.kind == "numeric" and column.edges is not None:
        keys = np.full(column.size, np.nan)
        edges = np.asarray(column.edges, dtype=float)
        k = min(len(edges) - 1, column.size)
        keys[:k] = edges[:k]
        if column.missing_code is not None:
            keys[column.missing_code] = np.nan
        return keys
    return level_values(column, column.name)


def check_order(order: Order, schema: Any) -> int:
    """Check an order against a schema; return the cells of its table (two-way, or three-way with
    its group column).

    Parameters
    ----------
    order : Order
        The declaration.
    schema : ddssp.data.Schema
        The release's schema.

    Returns
    -------
    int

    Raises
    ------
    RuleError
        For an unknown column, an increasing column that is binned or has fewer than two numeric
        levels, or a second column with fewer than two ordered levels.
    """
    unknown = [c for c in order.columns if c not in schema.names]
    if unknown:
        raise RuleError(f"rule {order.name!r} names column(s) {unknown} not in the schema")
    col, by = schema.column(order.column), schema.column(order.by)
    if col.kind == "numeric" and col.edges is not None:
        raise RuleError(
            f"rule {order.name!r}: {order.column!r} is binned; the increasing column needs one number a level"
        )
    if np.isfinite(level_values(col, order.name)).sum() < 2:
        raise RuleError(f"rule {order.name!r}: {order.column!r} has fewer than two levels that are numbers")
    if np.isfinite(order_keys(by)).sum() < 2:
        raise RuleError(f"rule {order.name!r}: {order.by!r} has fewer than two levels that are numbers or bins")
    return col.size * by.size * (1 if order.within is None else schema.column(order.within).size)


def _path(mass: np.ndarray) -> list[tuple[int, int]]:
    """The monotone lattice path from (0, 0) to the far corner (steps (1, 0), (0, 1) or (1, 1)) whose
    cells hold the most mass: dynamic programming over the table, ties to the diagonal step."""
    r, c = mass.shape
    best = np.full((r, c), -np.inf)
    step = np.zeros((r, c), dtype=np.int8)  # 0 start, 1 from above, 2 from left, 3 diagonal
    best[0, 0] = mass[0, 0]
    for i in range(r):
        for j in range(c):
            if i == 0 and j == 0:
                continue
            options = []
            if i > 0 and j > 0:
                options.append((best[i - 1, j - 1], 3))
            if i > 0:
                options.append((best[i - 1, j], 1))
            if j > 0:
                options.append((best[i, j - 1], 2))
            value, how = max(options, key=lambda t: (t[0], t[1] == 3))
            best[i, j], step[i, j] = value + mass[i, j], how
    path, i, j = [], r - 1, c - 1
    while True:
        path.append((i, j))
        how = step[i, j]
        if how == 0:
            break
        i, j = i - (how in (1, 3)), j - (how in (2, 3))
    return path[::-1]


def staircase(order: Order, schema: Any, table: np.ndarray, columns: tuple[str, ...]) -> CompiledRule:
    """The order as structural zeros, decided from a model's marginal of its columns.

    The ordered levels of both columns are sorted by the numbers they stand for; of every monotone
    path through that grid, the one holding the most of ``table``'s mass is kept (a level of one
    column may meet several consecutive levels of the other, as a bin meets the two deciles it
    straddles) and the grid's other cells are forbidden. Levels outside the order are not touched.
    With a group column (``order.within``) each of its levels gets its own path, from its own slice
    of ``table``.

    Parameters
    ----------
    order : Order
        The declaration (checked against ``schema``).
    schema : ddssp.data.Schema
        The release's schema.
    table : numpy.ndarray
        The model's marginal over ``columns``.
    columns : tuple of str
        The order's columns (:attr:`Order.columns`), in ``table``'s axis order.

    Returns
    -------
    CompiledRule
        Its forbidden table over ``columns``.
    """
    kx = level_values(schema.column(order.column), order.name)
    ky = order_keys(schema.column(order.by))
    ix = [int(i) for i in np.argsort(kx, kind="stable") if np.isfinite(kx[i])]
    iy = [int(i) for i in np.argsort(ky, kind="stable") if np.isfinite(ky[i])]
    axes = [columns.index(c) for c in order.columns]
    t = np.transpose(np.asarray(table, dtype=float), axes)  # (column, by[, within])
    t = t[..., None] if order.within is None else t
    forbidden = np.zeros(t.shape, dtype=bool)
    for g in range(t.shape[2]):
        grid = np.clip(t[np.ix_(ix, iy, [g])][..., 0], 0.0, None)
        forbidden[np.ix_(ix, iy, [g])] = True
        for a, b in _path(grid):
            forbidden[ix[a], iy[b], g] = False
    forbidden = forbidden[..., 0] if order.within is None else forbidden
    return CompiledRule(order, tuple(columns), np.transpose(forbidden, np.argsort(axes)).copy())


def arrange(frame: pd.DataFrame, codes: pd.DataFrame, orders: list[Order], schema: Any, rng: Any) -> pd.DataFrame:
    """Decoded rows with each order's second column sorted inside its bins by the first column.

    Inside every bin of a binned ``by`` column (and level of the group column, with ``within``), the
    values drawn for the rows whose ``column`` is in the order are given back in increasing order to
    those rows sorted by ``column`` (ties in random order): the bin's values and each row's bin are
    unchanged, so every rule that follows the bin edges still holds, and rows of a larger ``column``
    value never get a smaller ``by`` value.

    Parameters
    ----------
    frame : pandas.DataFrame
        The decoded rows (changed in place and returned).
    codes : pandas.DataFrame
        Their integer codes.
    orders : list of Order
        The declarations.
    schema : ddssp.data.Schema
        The release's schema.
    rng : numpy.random.Generator
        Post-processing randomness (the ties).

    Returns
    -------
    pandas.DataFrame
    """
    for o in orders:
        by = schema.column(o.by)
        if by.kind != "numeric" or by.edges is None or len(frame) == 0:
            continue
        kx = level_values(schema.column(o.column), o.name)[np.asarray(codes[o.column], dtype=np.int64)]
        bins = np.asarray(codes[o.by], dtype=np.int64)
        inside = np.isfinite(kx) & np.isfinite(order_keys(by)[bins])
        values = frame[o.by].to_numpy(dtype=float, copy=True)
        rows = np.flatnonzero(inside)
        group = (
            np.zeros(len(frame), dtype=np.int64) if o.within is None else np.asarray(codes[o.within], dtype=np.int64)
        )
        # one sort does every (group, bin): then the increasing column, then a random tie-break
        by_key = rows[np.lexsort((rng.random(len(rows)), kx[rows], bins[rows], group[rows]))]
        by_value = rows[np.lexsort((values[rows], bins[rows], group[rows]))]
        values[by_key] = values[by_value]
        frame[o.by] = pd.Series(values, index=frame.index).astype(frame[o.by].dtype)
    return frame


def _as_number(v: Any) -> float:
    x = number(v)
    return math.nan if x is None else x


def broken_by_order(frame: pd.DataFrame, order: Order, schema: Any) -> np.ndarray:
    """For every row, whether it breaks ``order``: its first value is larger than that of some row
    (of the same group, with ``within``) whose second value is larger (rows with a value outside the
    order break nothing).

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows in the schema's values (decoded, or the data).
    order : Order
        The declaration.
    schema : ddssp.data.Schema
        The schema whose levels say which values are in the order.

    Returns
    -------
    numpy.ndarray
        Boolean, one entry per row.
    """
    col = schema.column(order.column)
    levels = {str(lab): v for lab, v in zip(col.labels, level_values(col, order.name))}
    x = np.array([levels.get(str(v), _as_number(v)) for v in frame[order.column]], dtype=float)
    y = pd.to_numeric(frame[order.by], errors="coerce").to_numpy(dtype=float)
    bad = np.zeros(len(frame), dtype=bool)
    ok = np.isfinite(x) & np.isfinite(y)
    if order.within is None:
        _broken_in(x, y, np.flatnonzero(ok), bad)
        return bad
    rows = np.flatnonzero(ok)
    group = pd.factorize(frame[order.within].astype(str))[0][rows]
    by_group = np.argsort(group, kind="stable")  # one sort, then each group's rows in one slice
    for part in np.split(rows[by_group], np.flatnonzero(np.diff(group[by_group])) + 1):
        _broken_in(x, y, part, bad)
    return bad


def _broken_in(x: np.ndarray, y: np.ndarray, rows: np.ndarray, bad: np.ndarray) -> None:
    """Mark in ``bad`` the ``rows`` whose ``x`` is larger than that of one of them with a larger ``y``."""
    if len(rows):
        # from the largest second value down: the smallest first value among strictly larger ones
        rows = rows[np.lexsort((x[rows], -y[rows]))]
        xs, ys = x[rows], y[rows]
        starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
        above = np.r_[np.inf, np.minimum.accumulate(np.minimum.reduceat(xs, starts))[:-1]]
        group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(xs)]))
        bad[rows] = xs > above[group]


def order_violations(frame: pd.DataFrame, declared: list[Order], schema: Any) -> list[dict[str, Any]]:
    """How many rows break each order (:func:`broken_by_order`).

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows in the schema's values (decoded, or the data).
    declared : list of Order
        The declarations.
    schema : ddssp.data.Schema
        The schema whose levels say which values are in the order.

    Returns
    -------
    list of dict
        Per order: ``rule`` (its name), ``text`` and ``rows`` (0 exactly when the order holds).
    """
    return [{"rule": o.name, "text": o.text, "rows": int(broken_by_order(frame, o, schema).sum())} for o in declared]
