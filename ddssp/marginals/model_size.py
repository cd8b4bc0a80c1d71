"""AIM's model-size filter: the size a model would have with one more measured clique.

The size of a model is the number of cells of the maximal cliques of the triangulation
(:func:`~ddssp.marginals.junction_tree.triangulated_cliques`) of the graph of its cliques. The greedy
elimination never mixes connected components of that graph (an elimination changes only the
neighbourhood of its own component, and the rule's tie-break by domain order holds inside each
component), so the triangulation is the union of the components' triangulations. Adding a
candidate clique only merges the components it touches: its hypothetical size is the size of the
other components plus the triangulation of the touched ones with the candidate. Only that part is
computed, and it is remembered by the touched components' cliques, so a candidate whose components
did not change since the last round costs a lookup. A candidate whose every pair of columns is
already an edge of the graph adds no edge: the graph, hence its triangulation, is unchanged and its
size is the current size, found without a triangulation. Exact: the same sizes as triangulating
the whole graph for every candidate.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from ddssp.marginals.junction_tree import model_cells
from ddssp.types import Clique, Domain

_MB = 8 / 2**20


class SizeFilter:
    """Hypothetical model sizes of candidate cliques, component by component (see the module docstring).

    Parameters
    ----------
    domain : dict
        ``{column: size}``, in the order the triangulation's tie-break uses.
    cache_limit : int
        Remembered merged sizes before the memory is cleared.
    """

    def __init__(self, domain: Domain, cache_limit: int = 200_000):
        self.domain = dict(domain)
        self.cache_limit = int(cache_limit)
        self._merged: dict[tuple[tuple[frozenset, ...], Clique], int] = {}
        self._component: dict[frozenset, int] = {}
        self._last: tuple | None = None

    def sizes(self, measured: Sequence[Clique], candidates: Iterable[Clique]) -> dict[Clique, float]:
        """The model size (MB) with each candidate added to ``measured``.

        Parameters
        ----------
        measured : sequence of tuple of str
            The cliques measured so far.
        candidates : iterable of tuple of str
            The cliques to size.

        Returns
        -------
        dict
            ``{candidate: size in MB}``.
        """
        root, members, cliques_of, key_of, size_of, total, edges = self._components(tuple(measured))
        if len(self._merged) > self.cache_limit:
            self._merged.clear()
        out = {}
        for c in candidates:
            if all(frozenset(p) in edges for p in itertools.combinations(c, 2)):  # no new edge
                out[c] = total * _MB
                continue
            roots = sorted({root[a] for a in c})
            key = (tuple(key_of[r] for r in roots), c)
            merged = self._merged.get(key)
            if merged is None:
                attrs = set().union(*(members[r] for r in roots))
                sub = {a: n for a, n in self.domain.items() if a in attrs}
                merged = model_cells(sub, [*(q for r in roots for q in cliques_of[r]), c])
                self._merged[key] = merged
            out[c] = (total - sum(size_of[r] for r in roots) + merged) * _MB  # exact: integer cells x 2**-17
        return out

    def _components(self, measured: tuple[Clique, ...]):
        """The connected components of the measured cliques' graph and their sizes (kept for the
        last ``measured``: a round asks for many candidates against the same cliques)."""
        if self._last is not None and self._last[0] == measured:
            return self._last[1]
        parent = {a: a for a in self.domain}

        def find(a: str) -> str:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for c in measured:
            for a in c[1:]:
                ra, rb = find(c[0]), find(a)
                if ra != rb:
                    parent[rb] = ra
        members: dict[str, list[str]] = {}
        for a in self.domain:
            members.setdefault(find(a), []).append(a)
        cliques_of: dict[str, list[Clique]] = {r: [] for r in members}
        for c in measured:
            cliques_of[find(c[0])].append(c)
        key_of = {r: frozenset(cliques_of[r]) | {(a,) for a in members[r]} for r in members}
        size_of = {r: self._size(members[r], key_of[r]) for r in members}
        total = sum(size_of.values())
        root = {a: find(a) for a in self.domain}
        edges = {frozenset(p) for c in measured for p in itertools.combinations(c, 2)}
        self._last = (measured, (root, members, cliques_of, key_of, size_of, total, edges))
        return self._last[1]

    def _size(self, attrs: list[str], key: frozenset) -> int:
        hit = self._component.get(key)
        if hit is None:
            if len(self._component) > self.cache_limit:
                self._component.clear()
            hit = model_cells({a: self.domain[a] for a in attrs}, list(key))
            self._component[key] = hit
        return hit
