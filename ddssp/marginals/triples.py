"""Many three-way marginals that share a column, from a calibrated junction-tree model in one pass.

A grouped workload (``--by g``) makes AIM score the triples ``(g, a, b)`` in every round. Adding
``g`` to every clique and separator of the model's junction tree gives a junction tree of the same
distribution: a separator ``S`` splits the tree's columns into ``A`` and ``B`` with
``A`` independent of ``B`` given ``S``, and with ``g`` on one side, say ``A``, the same holds given
``S`` and ``g`` (weak union). Its beliefs are ``P(C, g)``: the model's own where ``C`` holds ``g``,
and outward from those cliques ``P(C, g) = P(C | S) P(S, g)`` (``S`` the separator towards them;
``C`` is independent of ``g`` given ``S``). Every triple ``(g, a, b)`` is then the pair ``(a, b)``
of that tree with ``g`` kept (:func:`~ddssp.marginals.pairs.pair_marginals` with ``keep``).
Exact: the same factorisation, in another order of sums.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ddssp.marginals.named_tables import bcast, canonical, cells, contract, marginals_from, sum_to
from ddssp.marginals.pairs import MESSAGE_BYTES, pair_marginals
from ddssp.types import Clique, Domain


def triple_marginals(
    domain: Domain,
    cliques: Sequence[Clique],
    edges: Sequence[tuple[int, int]],
    beliefs: Sequence[np.ndarray],
    sep: dict[tuple[int, int], Clique],
    triples: Sequence[Clique],
) -> dict[Clique, np.ndarray]:
    """Three-way marginals, in groups that share a column (see the module docstring).

    The column most of the triples hold makes the first group, and so on; a group of one triple, or
    one whose widened beliefs would take more than :data:`~ddssp.marginals.pairs.MESSAGE_BYTES`,
    is left out (the caller computes those one at a time).

    Parameters
    ----------
    domain : dict
        Ordered ``{column: size}``.
    cliques : sequence of tuple of str
        The tree's cliques, columns in domain order.
    edges : sequence of (int, int)
        The tree's edges (a connected tree).
    beliefs : sequence of numpy.ndarray
        Calibrated counts on each clique.
    sep : dict
        ``{(i, j): separator}`` for both orders of every edge, in domain order.
    triples : sequence of tuple of str
        Three-way queries in domain order.

    Returns
    -------
    dict
        ``{triple: counts}`` (axes in the triple's order) for the triples computed here.
    """
    left = list(triples)
    out: dict[Clique, np.ndarray] = {}
    while left:
        g, n = Counter(a for q in left for a in q).most_common(1)[0]
        if n < 2:
            break
        group = [q for q in left if g in q]
        left = [q for q in left if g not in q]
        out.update(_with_column(domain, cliques, edges, beliefs, sep, g, group))
    return out


def _with_column(domain: Domain, cliques, edges, beliefs, sep, g: str, group: list[Clique]) -> dict:
    """The triples of ``group``, each holding ``g``, from the tree widened by ``g`` ({} if too large)."""
    n = len(cliques)
    home = next((i for i, c in enumerate(cliques) if g in c), None)
    if home is None:
        return {}
    itemsize = max(np.asarray(b).itemsize for b in beliefs)
    widened = sum(cells(domain, c) * (1 if g in c else domain[g]) for c in cliques) * itemsize
    if widened > MESSAGE_BYTES:
        return {}
    adjacent: list[list[int]] = [[] for _ in range(n)]
    for i, j in edges:
        adjacent[i].append(j)
        adjacent[j].append(i)
    # outward from a clique holding g: each clique's P(C, g) from its parent's
    wide_cliques: list[Clique] = [()] * n
    wide: list[np.ndarray | None] = [None] * n
    wide_cliques[home], wide[home] = cliques[home], beliefs[home]
    order, seen = [home], {home}
    for p in order:
        for i in adjacent[p]:
            if i in seen:
                continue
            seen.add(i)
            order.append(i)
            c = cliques[i]
            if g in c:
                wide_cliques[i], wide[i] = c, beliefs[i]
                continue
            s = sep[(i, p)]
            s_g = canonical(domain, (*s, g))
            den = bcast(sum_to(beliefs[i], c, s), s, c)
            with np.errstate(divide="ignore", invalid="ignore"):
                cond = np.where(den > 0, beliefs[i] / np.where(den > 0, den, 1.0), 0.0)
            wide_cliques[i] = canonical(domain, (*c, g))
            wide[i] = contract([(c, cond), (s_g, sum_to(wide[p], wide_cliques[p], s_g))], wide_cliques[i])
    wide_sep = {e: canonical(domain, (*s, g)) for e, s in sep.items()}

    out: dict[Clique, np.ndarray] = {}
    across: dict[Clique, Clique] = {}
    home_of: dict[int, list[Clique]] = {}
    sets = [set(c) for c in wide_cliques]
    for q in group:
        ab = tuple(a for a in q if a != g)
        inside = [i for i in range(n) if set(ab) <= sets[i]]
        if inside:
            home_of.setdefault(min(inside, key=lambda i: wide[i].size), []).append(q)
        else:
            across[ab] = q
    # the triples inside one clique: its belief summed down once, the partial sums shared
    for i, qs in home_of.items():
        out.update(marginals_from(wide[i], wide_cliques[i], qs, domain))
    if across:
        got = pair_marginals(domain, wide_cliques, edges, wide, wide_sep, list(across), keep=g)
        for ab, q in across.items():
            out[q] = np.transpose(got[ab], [(g, *ab).index(a) for a in q])
    return out


__all__ = ["triple_marginals"]
