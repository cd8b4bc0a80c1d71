"""Many two-way marginals of a calibrated junction-tree model in one pass up the tree.

AIM scores every candidate pair of columns in every round, and on a wide table most pairs lie in
different cliques of the model. Asking for them one at a time contracts the path between the two
cliques for each pair; here every clique is visited once.

Root the tree; a column's *top* is the clique nearest the root that holds it. Going up from the
leaves, each clique ``i`` passes to its parent one table ``M_i`` of the conditionals
``P(x | S_i)`` (``S_i`` its separator with the parent), stacked along one "rows" axis for every
column ``x`` whose top lies below or at ``i``: a column of the clique's own (top at ``i``) from its
belief, a column from a child ``k`` by ``P(x | S_i) = sum_s P(x | S_k = s) P(S_k = s | S_i)``
(``x`` is independent of the clique given ``S_k``). Every pair of columns that no clique holds
meets at exactly one clique, the lowest one above both tops, where it is

- ``sum_s P(a | S_k = s) b(s, y)`` for ``a`` from child ``k`` and ``y`` a column with its top here
  (``b`` the clique's belief summed to ``S_k`` and ``y``), or
- ``sum_{s, t} P(a | S_k = s) b(s, t) P(c | S_l = t)`` for ``a`` and ``c`` from two children,

a few tensor contractions per clique for whole blocks of pairs. A column leaves the pass once all
its wanted partners are below it. Exact: the junction-tree factorisation, in another order of sums.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ddssp.marginals.named_tables import contract, sum_to
from ddssp.types import Clique, Domain

#: the most bytes of stacked messages held at once in one pass; beyond it the columns go in groups
MESSAGE_BYTES = 512 * 2**20

#: the name of a message's stacked axis (not a column name: column names are never empty strings
#: with a NUL)
_ROWS = "\x00rows"


def pair_marginals(
    domain: Domain,
    cliques: Sequence[Clique],
    edges: Iterable[tuple[int, int]],
    beliefs: Sequence[np.ndarray],
    sep: dict[tuple[int, int], Clique],
    pairs: Iterable[Clique],
    keep: str | None = None,
) -> dict[Clique, np.ndarray]:
    """Two-way marginals of a calibrated junction tree (see the module docstring).

    With ``keep``, a column held by every clique (so in every separator), each result keeps that
    column as its first axis instead of summing it out: the three-way marginals ``(keep, a, b)``
    (:mod:`ddssp.marginals.triples` builds such a tree).

    Parameters
    ----------
    domain : dict
        Ordered ``{column: size}``.
    cliques : sequence of tuple of str
        The tree's cliques, columns in domain order.
    edges : iterable of (int, int)
        The tree's edges (a connected tree; empty separators allowed).
    beliefs : sequence of numpy.ndarray
        Calibrated counts on each clique.
    sep : dict
        ``{(i, j): separator}`` for both orders of every edge, in domain order.
    pairs : iterable of tuple of str
        Pairs ``(a, b)`` in domain order, neither inside one clique.
    keep : str, optional
        A column in every clique, kept as the first axis of every result.

    Returns
    -------
    dict
        ``{pair: counts}``, axes in the pair's order (after ``keep``, when given).
    """
    pairs, edges = list(pairs), list(edges)
    itemsize = max((np.asarray(b).itemsize for b in beliefs), default=8)
    tree = _setup(cliques, edges, pairs)
    peak = _peak_bytes(domain, cliques, sep, tree, itemsize)
    if peak <= MESSAGE_BYTES:
        return _one_pass(domain, cliques, beliefs, sep, tree, keep)
    # too much at once: the columns in groups, one pass per pair of groups (each carries the
    # conditionals of two groups only)
    cols = list(dict.fromkeys(a for q in pairs for a in q))
    groups = min(len(cols), math.ceil(2 * peak / MESSAGE_BYTES))
    group = {a: j * groups // len(cols) for j, a in enumerate(cols)}
    by_groups: dict[tuple[int, int], list[Clique]] = {}
    for q in pairs:
        by_groups.setdefault(tuple(sorted((group[q[0]], group[q[1]]))), []).append(q)
    out: dict[Clique, np.ndarray] = {}
    for sub in by_groups.values():
        out.update(_one_pass(domain, cliques, beliefs, sep, _setup(cliques, edges, sub), keep))
    return out


def _setup(cliques: Sequence[Clique], edges: Iterable[tuple[int, int]], pairs: list[Clique]):
    """The wanted partners of each column and the tree rooted at its centre."""
    partners: dict[str, set[str]] = {}
    for a, b in pairs:
        partners.setdefault(a, set()).add(b)
        partners.setdefault(b, set()).add(a)
    n = len(cliques)
    adjacent: list[list[int]] = [[] for _ in range(n)]
    for i, j in edges:
        adjacent[i].append(j)
        adjacent[j].append(i)
    parent, order = _rooted(adjacent, _centre(cliques, adjacent, partners)) if partners else ({}, [])
    children: list[list[int]] = [[] for _ in range(n)]
    for i in order[1:]:
        children[parent[i]].append(i)
    return partners, parent, order, children


def _peak_bytes(domain: Domain, cliques, sep, tree, itemsize: int) -> int:
    """The largest total size of the messages that wait at once for their parent in one pass over
    ``tree`` (from :func:`_setup`)."""
    partners, parent, order, children = tree
    below: dict[int, set[str]] = {}
    size: dict[int, int] = {}
    alive = peak = 0
    for i in reversed(order):
        s_up = sep[(i, parent[i])] if parent[i] >= 0 else ()
        own = {x for x in cliques[i] if x not in s_up and x in partners}
        below[i] = own.union(*(below[k] for k in children[i]))
        if parent[i] >= 0:
            rows = sum(domain[x] for x in below[i] if not partners[x] <= below[i])
            size[i] = rows * math.prod(domain[x] for x in s_up) * itemsize
            alive += size[i]
            peak = max(peak, alive)
        alive -= sum(size.pop(k, 0) for k in children[i])
    return peak


def _one_pass(domain: Domain, cliques, beliefs, sep, tree, keep: str | None = None) -> dict[Clique, np.ndarray]:
    """:func:`pair_marginals` in one pass up ``tree`` (from :func:`_setup`), keeping ``keep`` if given."""
    pos = {a: i for i, a in enumerate(domain)}

    def canon(attrs) -> Clique:
        return tuple(sorted(set(attrs), key=pos.__getitem__))

    out: dict[Clique, np.ndarray] = {}
    partners, parent, order, children = tree
    if not partners:
        return out

    # per clique: the message to its parent, as (rows, table over (_ROWS, *separator)); rows are
    # (column, start, stop) slices of the stacked axis; and the columns whose top is below or at it
    message: dict[int, tuple[list[tuple[str, int, int]], Clique, np.ndarray]] = {}
    below: dict[int, set[str]] = {}

    def record(a: str, b: str, table: np.ndarray) -> None:
        # table axes (a, b), or (a, keep, b): store in domain order, after keep
        q = canon((a, b))
        if keep is None:
            out[q] = table if q == (a, b) else table.T
        else:
            out[q] = np.transpose(table, (1, 0, 2) if q == (a, b) else (1, 2, 0))

    def product(left: np.ndarray, s_left: Clique, right: np.ndarray) -> np.ndarray:
        # sum over s_left of left[r, s_left] * right[r2, s_left]: (r, r2), or (r, keep, r2) with keep
        if keep is None:
            return left.reshape(left.shape[0], -1) @ right.reshape(right.shape[0], -1).T
        j = 1 + s_left.index(keep)
        lk = np.moveaxis(left, j, 0).reshape(domain[keep], left.shape[0], -1)
        rk = np.moveaxis(right, j, 0).reshape(domain[keep], right.shape[0], -1)
        return np.transpose(lk @ np.transpose(rk, (0, 2, 1)), (1, 0, 2))

    for i in reversed(order):
        c = cliques[i]
        s_up = sep[(i, parent[i])] if parent[i] >= 0 else ()
        own = [x for x in c if x not in s_up and x in partners]
        kids = [k for k in children[i] if message.get(k) and message[k][0]]
        below[i] = set(own).union(*(below[k] for k in children[i]))

        # pairs of a column from a child and a column with its top here
        for k in kids:
            rows, s_k, m_k = message[k]
            for y in own:
                hits = [(a, lo, hi) for a, lo, hi in rows if y in partners[a]]
                if not hits:
                    continue
                t_attrs = canon((*s_k, y))
                block = _through(m_k, s_k, sum_to(beliefs[i], c, t_attrs), t_attrs, (y,) if keep is None else (keep, y))
                for a, lo, hi in hits:
                    record(a, y, block[lo:hi])
        # pairs of columns from two children
        for u, k in enumerate(kids):
            rows_k, s_k, m_k = message[k]
            for k2 in kids[u + 1 :]:
                rows_l, s_l, m_l = message[k2]
                hits = [(a, lo, hi, x, lo2, hi2) for a, lo, hi in rows_k for x, lo2, hi2 in rows_l if x in partners[a]]
                if not hits:
                    continue
                t_attrs = canon((*s_k, *s_l))
                # one side through b(S_k, S_l) first, then one matrix product with the other side,
                # whose separator is the inner dimension: the smaller one
                t = sum_to(beliefs[i], c, t_attrs)
                if m_l[0].size <= m_k[0].size:
                    block = product(_through(m_k, s_k, t, t_attrs, s_l), s_l, m_l)
                else:
                    block = product(m_k, s_k, _through(m_l, s_l, t, t_attrs, s_k))
                for a, lo, hi, x, lo2, hi2 in hits:
                    record(a, x, block[lo:hi, ..., lo2:hi2])
        if parent[i] < 0:
            break
        # the message up: every column below or at i with a partner not below i
        b_up = sum_to(beliefs[i], c, s_up)
        # 1 / b for the separator's cells of at least the smallest normal number of the dtype, 0 below:
        # in float32 the reciprocal of a subnormal count overflows to inf, and inf * 0 would put NaN
        # in every pair through this separator
        ok = b_up >= np.finfo(b_up.dtype).tiny
        inv = np.where(ok, 1.0 / np.where(ok, b_up, 1.0), 0.0)
        rows: list[tuple[str, int, int]] = []
        parts: list[np.ndarray] = []
        start = 0
        for y in own:
            if partners[y] <= below[i]:
                continue
            t_attrs = canon((*s_up, y))
            cond = contract([(t_attrs, sum_to(beliefs[i], c, t_attrs)), (s_up, inv)], (y, *s_up))
            rows.append((y, start, start + cond.shape[0]))
            parts.append(cond)
            start += cond.shape[0]
        for k in kids:
            rows_k, s_k, m_k = message.pop(k)
            staying = [(a, lo, hi) for a, lo, hi in rows_k if not partners[a] <= below[i]]
            if not staying:
                continue
            if len(staying) < len(rows_k):
                m_k = m_k[np.concatenate([np.arange(lo, hi) for _, lo, hi in staying])]
            t_attrs = canon((*s_k, *s_up))
            step = contract([(t_attrs, sum_to(beliefs[i], c, t_attrs)), (s_up, inv)], t_attrs)  # P(S_k | S_up)
            moved = _through(m_k, s_k, step, t_attrs, s_up)
            at = 0
            for a, lo, hi in staying:
                rows.append((a, start + at, start + at + hi - lo))
                at += hi - lo
            parts.append(moved)
            start += moved.shape[0]
        if parts:
            message[i] = (rows, s_up, np.concatenate(parts, axis=0))
        for k in kids:
            message.pop(k, None)
    return out


def _rooted(adjacent: list[list[int]], root: int) -> tuple[dict[int, int], list[int]]:
    """Parents (the root's is -1) and a breadth-first order (parents before children)."""
    parent = {root: -1}
    order = [root]
    for i in order:
        for j in adjacent[i]:
            if j not in parent:
                parent[j] = i
                order.append(j)
    return parent, order


def _centre(cliques: Sequence[Clique], adjacent: list[list[int]], partners: dict[str, set[str]]) -> int:
    """The clique whose removal leaves the fewest wanted columns in any one part of the tree: the
    root that keeps the stacked messages short (each column travels from its top to the root)."""
    parent, order = _rooted(adjacent, 0)
    seen: set[str] = set()
    weight = [0] * len(cliques)
    for i in order:  # a column counts at its top, the first clique from the root that holds it
        new = [x for x in cliques[i] if x in partners and x not in seen]
        seen.update(new)
        weight[i] = len(new)
    below = list(weight)
    for i in reversed(order[1:]):
        below[parent[i]] += below[i]
    total = below[order[0]]
    best, best_part = order[0], total
    for i in order:
        part = max([total - below[i]] + [below[j] for j in adjacent[i] if parent.get(j) == i])
        if part < best_part:
            best, best_part = i, part
    return best


def _through(m: np.ndarray, s_in: Clique, table: np.ndarray, t_attrs: Clique, s_out: Clique) -> np.ndarray:
    """``out[r, s_out] = sum over s_in - s_out of m[r, s_in] * table[s_in + s_out]`` as one (batched)
    matrix product: the columns shared by ``s_in`` and ``s_out`` are the batch, the rest of ``s_in``
    the inner dimension. ``m`` has axes (rows, *s_in), ``table`` axes ``t_attrs`` (= s_in + s_out),
    the result (rows, *s_out). Explicit, because einsum's own path copies ``m`` twice here."""
    shared = [x for x in s_in if x in s_out]
    inner = [x for x in s_in if x not in s_out]
    outer = [x for x in s_out if x not in s_in]
    size = dict(zip(t_attrs, table.shape))
    rows = m.shape[0]
    b = int(np.prod([size[x] for x in shared], dtype=np.int64))
    k = int(np.prod([size[x] for x in inner], dtype=np.int64))
    o = int(np.prod([size[x] for x in outer], dtype=np.int64))
    t = np.transpose(table, [t_attrs.index(x) for x in shared + inner + outer]).reshape(b, k, o)
    if not shared:
        return (m.reshape(rows, k) @ t[0]).reshape((rows, *(size[x] for x in outer)))
    axes = [1 + s_in.index(x) for x in shared] + [0] + [1 + s_in.index(x) for x in inner]
    out = np.matmul(np.transpose(m, axes).reshape(b, rows, k), t)  # (shared, rows, outer)
    out = out.reshape((*(size[x] for x in shared), rows, *(size[x] for x in outer)))
    now = [*shared, _ROWS, *outer]
    return np.ascontiguousarray(np.transpose(out, [now.index(_ROWS)] + [now.index(x) for x in s_out]))
