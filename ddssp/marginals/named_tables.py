"""Tables over named axes: numpy arrays whose axes are columns of a domain, summed, broadcast and
combined by name.

A table over the columns ``attrs`` (a tuple in domain order, :func:`canonical`) has one axis per
column, of the column's size (:func:`cells` counts them). :func:`bcast` lines a table up with one
over more axes, :func:`sum_to` and :func:`logsumexp_to` sum axes out, :func:`marginals_from` and
:func:`expand_sum` compute several sums at once sharing the partial sums, and :func:`contract` sums
a product of tables. The junction trees (:mod:`ddssp.marginals.junction_tree`), belief propagation
(:mod:`ddssp.marginals.belief_propagation`) and the fitted model all work on such tables.

This module must not import JAX (or mbi).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ddssp.types import Clique, Domain


def canonical(domain: Domain, attrs: Iterable[str]) -> Clique:
    """Attributes as a tuple in domain order (duplicates removed).

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    attrs : iterable of str
        Column names.

    Returns
    -------
    tuple of str
    """
    s = set(attrs)
    return tuple(a for a in domain if a in s)


def cells(domain: Domain, attrs: Iterable[str]) -> int:
    """The number of cells of the table over some attributes.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    attrs : iterable of str
        Column names.

    Returns
    -------
    int
    """
    return math.prod(int(domain[a]) for a in attrs)


def bcast(arr: np.ndarray, attrs: Clique, target: Clique) -> np.ndarray:
    """A view of a table broadcastable to a table over more axes.

    Parameters
    ----------
    arr : numpy.ndarray
        The table, axes ``attrs``.
    attrs : tuple of str
        A domain-ordered subset of ``target``.
    target : tuple of str
        The axes to broadcast to.

    Returns
    -------
    numpy.ndarray
    """
    if attrs == target:
        return arr
    pos = {a: i for i, a in enumerate(attrs)}
    shape = [arr.shape[pos[a]] if a in pos else 1 for a in target]
    return arr.reshape(shape)


def sum_to(arr: np.ndarray, attrs: Clique, keep: Clique) -> np.ndarray:
    """Sum a table down to a domain-ordered subset of its axes.

    Parameters
    ----------
    arr : numpy.ndarray
        The table, axes ``attrs``.
    attrs : tuple of str
        Its axes.
    keep : tuple of str
        The axes to keep.

    Returns
    -------
    numpy.ndarray
    """
    if keep == attrs:
        return arr
    return _sum_out(arr, [i for i, a in enumerate(attrs) if a in keep])


#: From this many cells on, tables are summed down with ``einsum``: numpy's ``sum`` over the last
#: (contiguous) axes of a large table runs 2-5 times slower (float32 and float64, 10^5-10^7 cells),
#: over leading axes about as fast; below it ``sum``'s smaller call overhead wins.
EINSUM_CELLS = 1 << 14


def _sum_out(arr: np.ndarray, kept: list[int]) -> np.ndarray:
    """``arr`` summed over every axis not in ``kept`` (increasing axis positions)."""
    if arr.size >= EINSUM_CELLS:
        return np.einsum(arr, list(range(arr.ndim)), kept)
    return arr.sum(axis=tuple(i for i in range(arr.ndim) if i not in kept))


def contract(parts: list[tuple[tuple[str, ...], np.ndarray]], out: tuple[str, ...]) -> np.ndarray:
    """Sum over every attribute not in ``out`` of the product of ``parts`` (tables with named axes).

    Letters are given to the attributes of this one product, so the contraction works on tables of
    any number of columns (einsum has 52 letters).

    Parameters
    ----------
    parts : list of (tuple of str, numpy.ndarray)
        Tables and the names of their axes; a name shared by tables is one index.
    out : tuple of str
        The axes of the result, in order.

    Returns
    -------
    numpy.ndarray
    """
    letters: dict[str, int] = {}
    for attrs, _ in parts:
        for a in attrs:
            letters.setdefault(a, len(letters))
    operands: list = []
    for attrs, table in parts:
        operands += [table, [letters[a] for a in attrs]]
    operands.append([letters[a] for a in out])
    return np.einsum(*operands, optimize="greedy")


def _attribute_to_eliminate(attrs: Clique, subsets: Iterable[Clique], sizes: dict[str, int]) -> str:
    """Of the attributes in ``attrs`` that some subset lacks, the one the fewest subsets contain
    (ties: the largest): summing it out first shares the most work between the subsets.
    Memoised (the same choices recur every iteration of a fit: 3% of an AIM run at eps 4)."""
    subsets = tuple(subsets)
    key = (attrs, frozenset(subsets), tuple(sizes[a] for a in attrs))
    hit = _ELIMINATE_CACHE.get(key)
    if hit is not None:
        return hit
    cand = [a for a in attrs if any(a not in q for q in subsets)]
    out = min(cand, key=lambda x: (sum(x in q for q in subsets), -sizes[x]))
    if len(_ELIMINATE_CACHE) > 50_000:
        _ELIMINATE_CACHE.clear()
    _ELIMINATE_CACHE[key] = out
    return out


_ELIMINATE_CACHE: dict = {}


def marginals_from(
    table: np.ndarray, attrs: Clique, queries: Iterable[Clique], sizes: dict[str, int]
) -> dict[Clique, np.ndarray]:
    """Marginals of a table onto several domain-ordered subsets at once.

    Sums out one attribute at a time and shares the partial sums between queries, so k queries cost a
    few passes over the table instead of k passes.

    Parameters
    ----------
    table : numpy.ndarray
        The table, axes ``attrs``.
    attrs : tuple of str
        Its axes.
    queries : iterable of tuple of str
        Domain-ordered subsets of ``attrs``.
    sizes : dict
        ``{column: size}``.

    Returns
    -------
    dict
        ``{query: table}``.
    """
    out: dict[Clique, np.ndarray] = {}
    todo = set(queries)
    if attrs in todo:
        out[attrs] = table
        todo.discard(attrs)
    if not todo:
        return out
    if len(todo) == 1:
        q = todo.pop()
        out[q] = sum_to(table, attrs, q)
        return out
    a = _attribute_to_eliminate(attrs, todo, sizes)
    without = [q for q in todo if a not in q]
    within = [q for q in todo if a in q]
    rest = tuple(x for x in attrs if x != a)
    out.update(marginals_from(_sum_out(table, [i for i, x in enumerate(attrs) if x != a]), rest, without, sizes))
    if within:
        out.update(marginals_from(table, attrs, within, sizes))
    return out


def expand_sum(
    parts: Sequence[tuple[Clique, np.ndarray]], attrs: Clique, sizes: dict[str, int], dtype=np.float64
) -> np.ndarray:
    """Sum of several tables over subsets of ``attrs``, as one new table over ``attrs``.

    Tables that lack an attribute are first summed at the smaller size, so k tables cost a few passes
    over the result instead of k.

    Parameters
    ----------
    parts : sequence of (tuple of str, numpy.ndarray)
        The tables, each over a domain-ordered subset of ``attrs``.
    attrs : tuple of str
        The result's axes.
    sizes : dict
        ``{column: size}``.
    dtype : numpy dtype
        The result's dtype.

    Returns
    -------
    numpy.ndarray
    """
    out = np.empty(tuple(sizes[a] for a in attrs), dtype=dtype)
    return expand_sum_into(out, parts, attrs, sizes)


def expand_sum_into(
    out: np.ndarray, parts: Sequence[tuple[Clique, np.ndarray]], attrs: Clique, sizes: dict[str, int]
) -> np.ndarray:
    """:func:`expand_sum` written into an existing table.

    Reusing ``out`` across calls spares the page faults of allocating a fresh table for every
    expansion.

    Parameters
    ----------
    out : numpy.ndarray
        The result, shaped like ``attrs``; its dtype is the result's.
    parts : sequence of (tuple of str, numpy.ndarray)
        The tables, each over a domain-ordered subset of ``attrs``.
    attrs : tuple of str
        The result's axes.
    sizes : dict
        ``{column: size}``.

    Returns
    -------
    numpy.ndarray
        ``out``.
    """
    if not parts:
        out.fill(0)
        return out
    if len(parts) == 1:
        c, arr = parts[0]
        np.copyto(out, bcast(arr, c, attrs), casting="unsafe")
        return out
    full = [arr for c, arr in parts if c == attrs]
    rest = [(c, arr) for c, arr in parts if c != attrs]
    if not rest:
        np.copyto(out, full[0], casting="unsafe")
        for arr in full[1:]:
            out += arr
        return out
    a = _attribute_to_eliminate(attrs, [c for c, _ in rest], sizes)
    without = [(c, arr) for c, arr in rest if a not in c]
    within = [(c, arr) for c, arr in rest if a in c] + [(attrs, arr) for arr in full]
    sub_attrs = tuple(x for x in attrs if x != a)
    rest_sum = bcast(expand_sum(without, sub_attrs, sizes, out.dtype), sub_attrs, attrs) if without else None
    if not within:  # one pass (a broadcast copy) instead of zeros + add
        np.copyto(out, rest_sum)
        return out
    expand_sum_into(out, within, attrs, sizes)
    if rest_sum is not None:
        out += rest_sum
    return out


def logsumexp_to(arr: np.ndarray, attrs: Clique, keep: Clique) -> np.ndarray:
    """Stable log-sum-exp of a table down to a subset of its axes.

    Parameters
    ----------
    arr : numpy.ndarray
        The log table, axes ``attrs``.
    attrs : tuple of str
        Its axes.
    keep : tuple of str
        The axes to keep.

    Returns
    -------
    numpy.ndarray
    """
    if keep == attrs:
        return arr
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    m = arr.max(axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(arr - m).sum(axis=axes, keepdims=True)) + m
    return out.reshape([arr.shape[i] for i, a in enumerate(attrs) if a in keep])
