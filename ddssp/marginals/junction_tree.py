"""Junction trees in numpy: the triangulation of the graph of some cliques and a tree of its maximal
cliques (:func:`junction_tree`, :func:`triangulated_cliques`), and the size of the tables such a tree
needs (:func:`model_size_mb`).

The tables on a tree are :mod:`ddssp.marginals.named_tables`; belief propagation on it is
:mod:`ddssp.marginals.belief_propagation`. This module must not import JAX (or mbi).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Sequence

import networkx as nx

from ddssp.errors import ReleaseFileError
from ddssp.marginals.named_tables import canonical, cells
from ddssp.types import Clique, Domain

#: :func:`model_cells` remembers the cells of the neighbourhoods it met, per tuple of column sizes
#: (AIM sizes the same graph with one more clique for every candidate), up to this many per tuple
_CELLS_MEMO = 200_000
_NEIGHBOURHOOD_CELLS: dict[tuple[int, ...], dict[int, int]] = {}


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
        The cells of :func:`triangulated_cliques`, found by the same elimination on bit sets of
        columns (AIM's size filter calls this for many candidates every round): each column is one
        bit, a neighbourhood one integer, and a neighbourhood's table size is remembered across
        calls on the same column sizes.
    """
    names = list(domain)
    bit = {a: 1 << i for i, a in enumerate(names)}
    size = tuple(int(domain[a]) for a in names)
    table = _NEIGHBOURHOOD_CELLS.get(size)
    if table is None or len(table) > _CELLS_MEMO:
        if len(_NEIGHBOURHOOD_CELLS) > 64:
            _NEIGHBOURHOOD_CELLS.clear()
        table = _NEIGHBOURHOOD_CELLS[size] = {}

    def cells_of(mask: int) -> int:
        out, m = 1, mask
        while m:
            low = m & -m
            out *= size[low.bit_length() - 1]
            m ^= low
        table[mask] = out
        return out

    adj = [0] * len(names)
    for cl in cliques:
        m = 0
        for a in cl:
            m |= bit[a]
        for a in cl:
            adj[bit[a].bit_length() - 1] |= m
    for i in range(len(names)):
        adj[i] &= ~(1 << i)
    # triangulated_cliques' elimination: smallest neighbourhood table first, ties by domain order
    current = [cells_of(adj[i] | 1 << i) for i in range(len(names))]
    heap = [(c, i) for i, c in enumerate(current)]
    heapq.heapify(heap)
    left = (1 << len(names)) - 1
    holding: list[list[int]] = [[] for _ in names]  # earlier elimination cliques per column
    maximal: set[int] = set()
    while heap:
        c, best = heapq.heappop(heap)
        if not left >> best & 1 or current[best] != c:
            continue
        left &= ~(1 << best)
        nb = adj[best]
        clique = nb | 1 << best
        if not any(clique & ~o == 0 and clique != o for o in holding[best]):
            maximal.add(clique)
        m = nb
        while m:
            low = m & -m
            x = low.bit_length() - 1
            m ^= low
            holding[x].append(clique)
            adj[x] = q = (adj[x] | nb) & ~low & ~(1 << best)
            q |= low
            current[x] = table[q] if q in table else cells_of(q)
            heapq.heappush(heap, (current[x], x))
    return sum(table[q] if q in table else cells_of(q) for q in maximal)


def map_to_cliques(domain, maxcl: Sequence[Clique], cliques: Iterable[Clique]) -> dict[Clique, int]:
    """Each clique -> index of the smallest tree clique containing it.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    maxcl : sequence of tuple of str
        The junction tree's cliques.
    cliques : iterable of tuple of str
        The cliques to place.

    Returns
    -------
    dict
        ``{clique: index into maxcl}``.

    Raises
    ------
    ReleaseFileError
        When a clique is inside no tree clique.
    """
    out = {}
    sets = [set(c) for c in maxcl]
    for c in cliques:
        cand = [i for i, s in enumerate(sets) if set(c) <= s]
        if not cand:
            raise ReleaseFileError(f"clique {c} is not contained in any clique of the junction tree")
        out[c] = min(cand, key=lambda i: cells(domain, maxcl[i]))
    return out
