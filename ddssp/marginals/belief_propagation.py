"""Log-space belief propagation on a junction tree, in numpy (:class:`CalibratedTree`).

Log-potentials on the tree's cliques go in, calibrated beliefs (each clique's table sums to 1) come
out, in one collect and one distribute pass (HUGIN schedule). The fitted
:class:`~ddssp.marginals.model.GraphicalModel` and AIM's estimation engine calibrate through it; the
tree itself comes from :mod:`ddssp.marginals.junction_tree`.

This module must not import JAX (or mbi).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from ddssp.errors import ReleaseFileError
from ddssp.marginals.named_tables import bcast, cells, logsumexp_to, marginals_from, sum_to
from ddssp.types import Clique, Domain

#: :meth:`CalibratedTree.calibrate`: a slice sum or a clique's largest belief below this (by dtype)
#: sends that clique down the exact (log-space, per-slice maxima) path.
_SAFE = {"d": 1e-280, "f": 1e-20}


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
