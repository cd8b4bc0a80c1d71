"""Junction trees and belief propagation in numpy: the tables a :class:`~ddssp.marginals.model.GraphicalModel`
and AIM's estimation work on.

- table helpers over named axes (:func:`canonical`, :func:`bcast`, :func:`sum_to`,
  :func:`marginals_from`, :func:`expand_sum`, :func:`logsumexp_to`);
- triangulation and the junction tree of a set of cliques (:func:`junction_tree`,
  :func:`triangulated_cliques`, :func:`model_size_mb`);
- :class:`CalibratedTree`: log-space belief propagation on a junction tree.

This module must not import JAX (or mbi).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Iterable, Sequence

import networkx as nx
import numpy as np

from ddssp.errors import ReleaseFileError
from ddssp.types import Clique, Domain


# --------------------------------------------------------------------------- small helpers
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
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    return arr.sum(axis=axes)


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
    out.update(marginals_from(table.sum(axis=attrs.index(a)), rest, without, sizes))
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


#: :meth:`CalibratedTree.calibrate`: a slice sum or a clique's largest belief below this (by dtype)
#: sends that clique down the exact (log-space, per-slice maxima) path.
_SAFE = {"d": 1e-280, "f": 1e-20}


# --------------------------------------------------------------------------- junction trees
def greedy_order(domain: Domain, cliques: Sequence[Clique]) -> list[str]:
    """Greedy elimination order: eliminate the attribute whose neighbourhood table is smallest.

    The same rule as private-pgm's ``greedy_order``.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    cliques : sequence of tuple of str
        The cliques of the graph.

    Returns
    -------
    list of str
    """
    clique_set = {frozenset(c) for c in cliques if c}
    unmarked = list(domain)
    order = []
    while unmarked:
        best, best_cost = None, None
        for a in unmarked:
            nb = set().union(*[c for c in clique_set if a in c]) if clique_set else set()
            cost = cells(domain, nb | {a})
            if best_cost is None or cost < best_cost:
                best, best_cost = a, cost
        order.append(best)
        unmarked.remove(best)
        touching = [c for c in clique_set if best in c]
        merged = frozenset(set().union(*touching) - {best}) if touching else frozenset()
        clique_set -= set(touching)
        if merged:
            clique_set.add(merged)
    return order


def triangulated_cliques(domain: Domain, cliques: Sequence[Clique]) -> list[Clique]:
    """The maximal cliques of :func:`junction_tree`, without the tree.

    Same triangulation (:func:`greedy_order`), on plain adjacency sets instead of networkx graphs, for
    the many model-size checks of an AIM round. Eliminating a vertex makes its remaining neighbours a
    clique; the maximal cliques of the triangulated graph are the maximal sets {v} + neighbours(v) at
    elimination.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    cliques : sequence of tuple of str
        The cliques of the graph.

    Returns
    -------
    list of tuple of str
        Domain-ordered, sorted.
    """
    adj: dict[str, set[str]] = {a: set() for a in domain}
    for cl in cliques:
        for a in cl:
            adj[a].update(x for x in cl if x != a)
    size = {a: int(n) for a, n in domain.items()}
    position = {a: i for i, a in enumerate(domain)}

    def cost(a: str) -> int:
        out = size[a]
        for x in adj[a]:
            out *= size[x]
        return out

    # greedy_order's rule (smallest neighbourhood table, first in domain order on ties), with the
    # costs in a heap: an elimination changes only its neighbours' costs, so only they are pushed
    # again and stale entries are skipped (same order as rescanning every column at every step)
    current = {a: cost(a) for a in domain}
    heap = [(c, position[a], a) for a, c in current.items()]
    heapq.heapify(heap)
    elim: list[frozenset] = []
    holding: dict[str, list[frozenset]] = {a: [] for a in domain}  # earlier elimination cliques per column
    while heap:
        c, _, best = heapq.heappop(heap)
        if best not in adj or current[best] != c:
            continue
        nb = adj.pop(best)
        clique = frozenset(nb | {best})
        # only an earlier clique can hold this one (a later one lacks the eliminated column)
        if not any(clique < o for o in holding[best]):
            elim.append(clique)
        for x in nb:
            holding[x].append(clique)
        for x in nb:
            adj[x].discard(best)
            adj[x].update(y for y in nb if y != x)
        for x in nb:
            current[x] = cost(x)
            heapq.heappush(heap, (current[x], position[x], x))
    return sorted(tuple(sorted(c, key=position.__getitem__)) for c in set(elim))


def junction_tree(domain: Domain, cliques: Sequence[Clique]) -> tuple[list[Clique], list[tuple[int, int]]]:
    """A junction tree over a triangulation of the graph of some cliques.

    The graph has an edge for every pair inside a clique. Attributes in no clique become singleton
    cliques; components are joined by empty separators, so the tree is always connected.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    cliques : sequence of tuple of str
        The cliques of the graph.

    Returns
    -------
    cliques : list of tuple of str
        The maximal cliques of the triangulation (domain-ordered, sorted).
    edges : list of (int, int)
        The tree's edges, as index pairs into ``cliques``.
    """
    graph = nx.Graph()
    graph.add_nodes_from(domain)
    for cl in cliques:
        graph.add_edges_from(itertools.combinations(cl, 2))
    tri = nx.Graph(graph)
    work = nx.Graph(graph)
    for node in greedy_order(domain, [tuple(c) for c in cliques]):
        nbrs = list(work.neighbors(node))
        fill = list(itertools.combinations(nbrs, 2))
        tri.add_edges_from(fill)
        work.add_edges_from(fill)
        work.remove_node(node)
    maxcl = sorted(canonical(domain, c) for c in nx.find_cliques(tri))
    return maxcl, tree_edges(maxcl)


def tree_edges(maxcl: Sequence[Clique]) -> list[tuple[int, int]]:
    """Maximum-weight spanning tree (weight = separator size) over the cliques of a chordal graph.

    Parameters
    ----------
    maxcl : sequence of tuple of str
        The maximal cliques.

    Returns
    -------
    list of (int, int)
        Edges as sorted index pairs.
    """
    complete = nx.Graph()
    complete.add_nodes_from(range(len(maxcl)))
    sets = [set(c) for c in maxcl]
    for i, j in itertools.combinations(range(len(maxcl)), 2):
        complete.add_edge(i, j, weight=len(sets[i] & sets[j]))
    tree = nx.maximum_spanning_tree(complete, weight="weight")
    return sorted((min(i, j), max(i, j)) for i, j in tree.edges())


def model_size_mb(domain: Domain, cliques: Sequence[Clique]) -> float:
    """Size in MB (float64) of the junction-tree tables the given cliques would need.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    cliques : sequence of tuple of str
        The cliques.

    Returns
    -------
    float
    """
    return model_cells(domain, cliques) * 8 / 2**20


def model_cells(domain: Domain, cliques: Sequence[Clique]) -> int:
    """Cells of the junction-tree tables the given cliques would need (a column in no clique is a
    clique of its own).

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    cliques : sequence of tuple of str
        The cliques.

    Returns
    -------
    int
    """
    return sum(cells(domain, c) for c in triangulated_cliques(domain, list(cliques)))


class CalibratedTree:
    """Junction tree + log-space belief propagation (HUGIN schedule) in numpy.

    Log-potentials on the tree's cliques go in; :meth:`calibrate` returns normalised beliefs (each
    sums to 1).

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    maxcl : list of tuple of str
        The tree's maximal cliques.
    edges : list of (int, int)
        The tree's edges, as index pairs.

    Raises
    ------
    ReleaseFileError
        When the tree is not connected.
    """

    def __init__(self, domain: Domain, maxcl: list[Clique], edges: list[tuple[int, int]]):
        self.domain = domain
        self.cliques = list(maxcl)
        self.edges = list(edges)
        n = len(maxcl)
        self.nbrs: list[list[int]] = [[] for _ in range(n)]
        for i, j in edges:
            self.nbrs[i].append(j)
            self.nbrs[j].append(i)
        # BFS order from the largest clique (it then sends no collect message: one exp fewer
        # over the biggest table); the tree is connected by construction
        root = max(range(n), key=lambda i: (cells(domain, maxcl[i]), -i)) if n else 0
        self.parent = [-1] * n
        order, seen, dq = [], {root}, deque([root])
        while dq:
            u = dq.popleft()
            order.append(u)
            for v in self.nbrs[u]:
                if v not in seen:
                    seen.add(v)
                    self.parent[v] = u
                    dq.append(v)
        if len(order) != n:
            raise ReleaseFileError("the junction tree of the model is not connected")
        self.order = order
        self.children: list[list[int]] = [[] for _ in range(n)]
        for v in order[1:]:
            self.children[self.parent[v]].append(v)
        self.sep = {}
        for i, j in edges:
            s = tuple(a for a in maxcl[i] if a in set(maxcl[j]))
            self.sep[(i, j)] = self.sep[(j, i)] = s

    def _finish(self, probs: list, shift: list, sepm: dict, normalize: bool):
        """The normalising constant from the root (a small separator marginal when it has one), then
        either ``(tables, scales)`` or the tables scaled to probabilities in place."""
        root = self.order[0]
        if root in sepm and sepm[root]:  # the root's total from a (small) separator marginal
            root_sum = float(next(iter(sepm[root].values())).sum())
        else:
            root_sum = float(probs[root].sum())
        logz = float(np.log(root_sum)) + shift[root]
        if not normalize:
            return probs, [math.exp(shift[v] - logz) for v in range(len(probs))]
        for v in range(len(probs)):
            probs[v] *= math.exp(shift[v] - logz)
        return probs

    def _down_message(self, v: int, probs: list, shift: list, up: dict, sepm: dict) -> tuple[Clique, np.ndarray]:
        """(separator, log message) from ``v``'s parent in the distribute pass: the log of the
        parent's (calibrated, unnormalised) separator marginal plus its shift, minus ``v``'s own
        collect message; -inf where the separator has no mass. ``sepm`` caches the parent's
        separator marginals (all children's at once)."""
        p = self.parent[v]
        s = self.sep[(v, p)]
        if p not in sepm:
            seps = [self.sep[(k, p)] for k in self.children[p]]
            sepm[p] = marginals_from(probs[p], self.cliques[p], seps, self.domain)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.log(sepm[p][s]) + shift[p] - up[v]
        return s, np.where(np.isnan(h), -np.inf, h)

    def calibrate(
        self, theta: list[np.ndarray], overwrite: bool = False, normalize: bool = True
    ) -> list[np.ndarray] | tuple[list[np.ndarray], list[float]]:
        """Calibrated beliefs (probabilities; each table sums to 1) from log-potentials.

        Each clique is exponentiated once, relative to its own maximum (``e = exp(x - max x)``, ``x`` = its
        potential plus its children's collect messages); the collect message to the parent is
        ``log(sum_to(e)) + max x`` and the distribute pass multiplies ``e`` by the exponentiated message
        from the parent (no second exponential, no per-slice maxima). (:meth:`calibrate_reference`, with
        per-slice maxima in log space and two exponentials per cell, spends most of its time in ``exp`` and
        in strided max reductions.)

        Exactness: a shifted ``exp`` loses only cells far below the clique's maximum. Whenever that could
        matter -- a separator slice whose sum is below ``SAFE`` (its cells are far below the clique's
        maximum: the message is then recomputed exactly, in log space with per-slice maxima) or a clique
        whose beliefs all fall below ``SAFE`` after the parent's message (the belief is then recomputed
        from the log table) -- the exact path is taken for that clique. The mass the fast path can drop is
        below ``cells * tiny / SAFE`` of a slice's or a clique's mass: < 1e-20 in float64, < 1e-10 in
        float32 for 10^8 cells.

        Parameters
        ----------
        theta : list of numpy.ndarray
            Log-potentials, one per tree clique (float64 or float32).
        overwrite : bool
            Let it reuse the ``theta`` arrays.
        normalize : bool
            False skips the final rescaling pass over every table (for callers that only need small
            marginals of the beliefs: two passes fewer over the largest table).

        Returns
        -------
        list of numpy.ndarray or tuple
            The beliefs; with ``normalize=False``, ``(tables, scales)``: the beliefs are
            ``tables[v] * scales[v]``.

        Raises
        ------
        FloatingPointError
            When a clique has no probability mass.
        """
        cl = self.cliques
        x = list(theta) if overwrite else [t.copy() for t in theta]
        n = len(cl)
        e: list = [None] * n
        top = [0.0] * n
        up = {}
        for v in reversed(self.order):  # collect: children before parents
            xv = x[v]
            m = float(xv.max())
            if not np.isfinite(m):
                raise FloatingPointError("a junction-tree clique has no probability mass")
            top[v] = m
            safe = _SAFE.get(xv.dtype.char, _SAFE["d"])
            ev = np.subtract(xv, m)
            np.exp(ev, out=ev)
            e[v] = ev
            p = self.parent[v]
            if p < 0:
                continue
            s = self.sep[(v, p)]
            ssum = sum_to(ev, cl[v], s)
            if s and float(np.min(ssum)) < safe:
                msg = logsumexp_to(xv, cl[v], s)  # exact: some slice lies far below the maximum
            else:
                with np.errstate(divide="ignore"):
                    msg = np.log(ssum) + m
            up[v] = msg
            x[p] += bcast(msg, s, cl[p])
        probs: list = [None] * n
        shift = [0.0] * n
        sepm: dict[int, dict[Clique, np.ndarray]] = {}
        for v in self.order:  # distribute: parents before children
            p = self.parent[v]
            if p < 0:
                probs[v], shift[v] = e[v], top[v]
                continue
            s, h = self._down_message(v, probs, shift, up, sepm)
            hmax = float(np.max(h))
            if not np.isfinite(hmax):
                raise FloatingPointError("a junction-tree clique has no probability mass")
            g = np.exp(h - hmax).astype(e[v].dtype, copy=False)
            pv = e[v]
            np.multiply(pv, bcast(g, s, cl[v]), out=pv)
            safe = _SAFE.get(pv.dtype.char, _SAFE["d"])
            if float(pv.max()) >= safe:
                probs[v], shift[v] = pv, top[v] + hmax
                continue
            # exact: the parent's message lands where this clique's own table is far below its max
            xv = x[v]
            xv += bcast(h, s, cl[v])
            m = float(xv.max())
            if not np.isfinite(m):
                raise FloatingPointError("a junction-tree clique has no probability mass")
            np.subtract(xv, m, out=pv)
            probs[v], shift[v] = np.exp(pv, out=pv), m
        for v in range(n):  # the log tables are no longer needed
            x[v] = None
        return self._finish(probs, shift, sepm, normalize)

    def calibrate_reference(
        self, theta: list[np.ndarray], overwrite: bool = False, normalize: bool = True
    ) -> list[np.ndarray] | tuple[list[np.ndarray], list[float]]:
        """The reference schedule :meth:`calibrate` is tested against.

        Every message in log space with per-slice maxima, every clique exponentiated twice: the collect
        pass in log space (exact), the distribute pass in probability space, each clique exponentiated
        relative to its own maximum. Mass that falls more than ~700 nats below a clique's maximum
        underflows to 0; such mass is below 1e-300 of the distribution either way.

        Parameters
        ----------
        theta : list of numpy.ndarray
            Log-potentials, one per tree clique.
        overwrite : bool
            Let it reuse the ``theta`` arrays.
        normalize : bool
            False skips the final rescaling pass over every table.

        Returns
        -------
        list of numpy.ndarray or tuple
            The beliefs; with ``normalize=False``, ``(tables, scales)``: the beliefs are
            ``tables[v] * scales[v]``.

        Raises
        ------
        FloatingPointError
            When a clique has no probability mass.
        """
        cl = self.cliques
        b = list(theta) if overwrite else [t.copy() for t in theta]
        up = {}
        for v in reversed(self.order[1:]):  # collect: children before parents
            p = self.parent[v]
            s = self.sep[(v, p)]
            msg = logsumexp_to(b[v], cl[v], s)
            up[v] = msg
            b[p] += bcast(msg, s, cl[p])
        probs: list = [None] * len(cl)
        shift = [0.0] * len(cl)
        sepm: dict[int, dict[Clique, np.ndarray]] = {}
        for v in self.order:  # distribute: parents before children
            p = self.parent[v]
            if p >= 0:
                s, msg = self._down_message(v, probs, shift, up, sepm)
                b[v] += bcast(msg, s, cl[v])
            m = float(b[v].max())
            if not np.isfinite(m):
                raise FloatingPointError("a junction-tree clique has no probability mass")
            shift[v] = m
            x = b[v]
            np.subtract(x, m, out=x)
            probs[v] = np.exp(x, out=x)
        return self._finish(probs, shift, sepm, normalize)


def _map_to_cliques(domain, maxcl: Sequence[Clique], cliques: Iterable[Clique]) -> dict[Clique, int]:
    """Each clique -> index of the smallest tree clique containing it."""
    out = {}
    sets = [set(c) for c in maxcl]
    for c in cliques:
        cand = [i for i, s in enumerate(sets) if set(c) <= s]
        if not cand:
            raise ReleaseFileError(f"clique {c} is not contained in any clique of the junction tree")
        out[c] = min(cand, key=lambda i: cells(domain, maxcl[i]))
    return out
