"""The fitted graphical model as plain numpy arrays (no JAX): marginals and sampling.

A :class:`GraphicalModel` is a discrete Markov random field given by log-potentials on the maximal
cliques of a junction tree (a tree of cliques with the running-intersection property). It is
calibrated once (log-space belief propagation, numpy); after that

- a marginal over attributes inside one clique is a sum over that clique's belief;
- a marginal spanning several cliques multiplies the beliefs of the smallest subtree that covers
  the attributes, divided by their separators (the junction-tree factorisation), and sums out the
  rest with ``numpy.einsum`` (results cached);
- sampling is forward sampling: the root clique jointly, then each clique's new attributes given
  its separator with the parent.

Everything here is post-processing of released numbers and runs in a fresh process from
:meth:`GraphicalModel.to_arrays` output. This module must not import JAX (or mbi).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from ddssp.data.drawing import strata_key
from ddssp.errors import ReleaseFileError
from ddssp.marginals.belief_propagation import CalibratedTree  # noqa: F401  (re-exported: the model's public helpers)
from ddssp.marginals.junction_tree import (  # noqa: F401  (re-exported: the model's public helpers)
    Clique,
    greedy_order,
    junction_tree,
    map_to_cliques,
    model_size_mb,
    tree_edges,
    triangulated_cliques,
)
from ddssp.marginals.named_tables import (  # noqa: F401  (re-exported: the model's public helpers)
    bcast,
    canonical,
    cells,
    contract,
    expand_sum,
    expand_sum_into,
    logsumexp_to,
    marginals_from,
    sum_to,
)
from ddssp.marginals.pairs import pair_marginals
from ddssp.marginals.triples import triple_marginals
from ddssp.types import Domain

#: Format tag of :meth:`GraphicalModel.to_arrays` metadata.
MODEL_FORMAT = "ddssp.graphical-model/1"


# --------------------------------------------------------------------------- the model
class GraphicalModel:
    """A fitted discrete graphical model (numpy only), calibrated on construction.

    Parameters
    ----------
    domain : dict
        Ordered ``{column: size}``.
    potentials : dict
        ``{clique: log-potential table}`` (axes in the clique's order; reordered to domain order).
    total : float
        The model's record count; every marginal sums to it.
    cliques : list of tuple of str, optional
        The junction tree's maximal cliques; built from the potentials' cliques when None.
    edges : list of (int, int), optional
        The junction tree's edges; a maximum spanning tree of ``cliques`` when None.

    Attributes
    ----------
    domain : dict
        Ordered ``{column: size}``.
    cliques : list of tuple of str
        The junction tree's maximal cliques, columns in domain order.
    edges : list of (int, int)
        The junction tree's edges, as index pairs.
    total : float
        The model's record count.
    beliefs : list of numpy.ndarray
        The calibrated counts on each clique (each sums to ``total``).
    """

    def __init__(
        self,
        domain: Domain,
        potentials: dict[Clique, np.ndarray],
        total: float,
        *,
        cliques: list[Clique] | None = None,
        edges: list[tuple[int, int]] | None = None,
    ):
        self.domain = {str(a): int(n) for a, n in domain.items()}
        self.total = float(total)
        pots = {}
        for c, arr in potentials.items():
            cc = canonical(self.domain, c)
            arr = np.asarray(arr, dtype=float)
            if tuple(c) != cc:  # reorder axes to domain order
                arr = np.transpose(arr, [tuple(c).index(a) for a in cc])
            pots[cc] = pots[cc] + arr if cc in pots else arr
        if cliques is None:
            cliques, edges = junction_tree(self.domain, list(pots))
        elif edges is None:
            edges = tree_edges(cliques)
        self.cliques: list[Clique] = [tuple(c) for c in cliques]
        self.edges: list[tuple[int, int]] = [tuple(e) for e in edges]
        self._tree = CalibratedTree(self.domain, self.cliques, self.edges)
        mapping = map_to_cliques(self.domain, self.cliques, pots)
        theta = [np.zeros([self.domain[a] for a in c]) for c in self.cliques]
        for c, arr in pots.items():
            i = mapping[c]
            theta[i] = theta[i] + bcast(arr, c, self.cliques[i])
        self._log_potentials = theta
        self.beliefs = [p * self.total for p in self._tree.calibrate(theta)]  # counts, sum to total
        self._cache: dict[Clique, np.ndarray] = {}
        self._cond: dict[tuple[int, int], np.ndarray] = {}

    @classmethod
    def from_beliefs(
        cls,
        domain: Domain,
        beliefs: list[np.ndarray],
        total: float,
        *,
        cliques: list[Clique],
        edges: list[tuple[int, int]],
        tree: CalibratedTree | None = None,
    ) -> GraphicalModel:
        """A model from calibrated beliefs, without a new calibration.

        Its log-potentials, when asked for, are the junction-tree factorisation log b_C - log b_S (S: the
        separator with the clique's parent).

        Parameters
        ----------
        domain : dict
            Ordered ``{column: size}``.
        beliefs : list of numpy.ndarray
            Counts on the junction tree's cliques, each summing to ``total``, consistent on separators.
        total : float
            The record count.
        cliques : list of tuple of str
            The junction tree's maximal cliques.
        edges : list of (int, int)
            The junction tree's edges.
        tree : CalibratedTree, optional
            The tree, when already built.

        Returns
        -------
        GraphicalModel
        """
        self = cls.__new__(cls)
        self.domain = {str(a): int(n) for a, n in domain.items()}
        self.total = float(total)
        self.cliques = [tuple(c) for c in cliques]
        self.edges = [tuple(e) for e in edges]
        self._tree = tree if tree is not None else CalibratedTree(self.domain, self.cliques, self.edges)
        self.beliefs = list(beliefs)
        self._log_potentials = None
        self._cache = {}
        self._cond = {}
        return self

    @property
    def log_potentials(self) -> list[np.ndarray]:
        """Log-potentials on the junction tree's cliques (one table per clique)."""
        if self._log_potentials is None:
            tree, out = self._tree, []
            with np.errstate(divide="ignore"):
                for v, c in enumerate(self.cliques):
                    lb = np.log(self.beliefs[v] / self.total)
                    p = tree.parent[v]
                    if p >= 0:
                        s = tree.sep[(v, p)]
                        sep = sum_to(self.beliefs[v], c, s) / self.total
                        lb = lb - bcast(np.log(sep), s, c)
                        lb = np.where(np.isnan(lb), -np.inf, lb)
                    out.append(lb)
            self._log_potentials = out
        return self._log_potentials

    # ------------------------------------------------------------------ queries
    def _check_attrs(self, attrs: Sequence[str]) -> tuple[str, ...]:
        if isinstance(attrs, str):
            attrs = (attrs,)
        attrs = tuple(attrs)
        unknown = [a for a in attrs if a not in self.domain]
        if unknown:
            raise KeyError(f"unknown column(s) {unknown}; the model has {list(self.domain)}")
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"repeated column in {attrs}")
        return attrs

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """Counts over some columns; they sum to :attr:`total`.

        Parameters
        ----------
        attrs : sequence of str
            The columns, in the order of the result's axes.

        Returns
        -------
        numpy.ndarray
            A copy (the model caches its marginals).
        """
        attrs = self._check_attrs(attrs)
        return self._answer(attrs, self._canonical(attrs))

    def _answer(self, attrs: Clique, cc: Clique, given: np.ndarray | None = None) -> np.ndarray:
        """A copy of the marginal on checked ``attrs`` (domain order ``cc``): ``given``, or from the
        cache, or made."""
        if given is None and cc not in self._cache:
            self._cache[cc] = self._marginal_canonical(cc)
        out = self._cache[cc] if given is None else given
        if attrs != cc:
            out = np.transpose(out, [cc.index(a) for a in attrs])
        return out.copy()

    def marginals(self, queries: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Many marginals at once: the same values as :meth:`marginal` for each query, computed together.

        Two-way queries share the work: a pair inside one clique is a sum over that clique's belief,
        and the pairs across cliques come from one pass up the junction tree
        (:func:`~ddssp.marginals.pairs.pair_marginals`); three-way queries that share a column, from
        one pass up the tree widened by that column (:func:`~ddssp.marginals.triples.triple_marginals`,
        kept apart from :meth:`marginal`'s cache, which computes each on its own). Other queries go
        through :meth:`marginal`.

        Parameters
        ----------
        queries : sequence of sequence of str
            The marginals wanted, each the columns of its result's axes in order.

        Returns
        -------
        list of numpy.ndarray
            One copy per query, in the order given.
        """
        checked = [self._check_attrs(q) for q in queries]
        canon = [self._canonical(q) for q in checked]
        batched = self.__dict__.setdefault("_triples", {})
        todo = [q for q in dict.fromkeys(canon) if len(q) == 3 and q not in self._cache and q not in batched]
        if len(todo) > 1:
            batched.update(triple_marginals(self.domain, self.cliques, self.edges, self.beliefs, self._tree.sep, todo))
        todo = [q for q in dict.fromkeys(canon) if q not in self._cache and len(q) == 2]
        if todo and batched:
            # a pair inside a triple at hand is that triple summed over its third column: a grouped
            # workload's candidates (g, a, b), (a, b) and (g, a) then cost one pass, not two
            within: dict[Clique, Clique] = {}
            for t in batched:
                for q in ((t[0], t[1]), (t[0], t[2]), (t[1], t[2])):
                    within.setdefault(q, t)
            for q in [q for q in todo if q in within]:
                self._cache[q] = sum_to(batched[within[q]], within[q], q)
            todo = [q for q in todo if q not in within]
        if todo:
            self._pair_marginals(todo)
        return [self._answer(q, cc, batched.get(cc)) for q, cc in zip(checked, canon)]

    def _canonical(self, attrs: Clique) -> Clique:
        """``attrs`` in domain order (distinct, known columns), by a position table kept on the model."""
        pos = self.__dict__.get("_pos")
        if pos is None:
            pos = self._pos = {a: i for i, a in enumerate(self.domain)}
        return tuple(sorted(attrs, key=pos.__getitem__))

    def _pair_marginals(self, pairs: list[Clique]) -> None:
        """Fill the cache with the two-way marginals ``pairs`` (canonical, not cached yet)."""
        size = [cells(self.domain, c) for c in self.cliques]
        holders: dict[str, set[int]] = {a: set() for a in self.domain}
        for i, c in enumerate(self.cliques):
            for a in c:
                holders[a].add(i)
        across = []
        for q in pairs:
            home = sorted(holders[q[0]] & holders[q[1]])
            if home:
                i = min(home, key=lambda i: size[i])
                self._cache[q] = sum_to(self.beliefs[i], self.cliques[i], q)
            else:
                across.append(q)
        if across:
            self._cache.update(
                pair_marginals(self.domain, self.cliques, self.edges, self.beliefs, self._tree.sep, across)
            )

    def _conditional(self, child: int, parent: int) -> np.ndarray:
        """belief_child / belief_sep (separator with ``parent``), 0 where the separator is 0."""
        key = (child, parent)
        if key not in self._cond:
            c = self.cliques[child]
            s = self._tree.sep[(child, parent)]
            b = self.beliefs[child]
            den = bcast(sum_to(b, c, s), s, c)
            with np.errstate(divide="ignore", invalid="ignore"):
                self._cond[key] = np.where(den > 0, b / np.where(den > 0, den, 1.0), 0.0)
        return self._cond[key]

    def _marginal_canonical(self, q: Clique) -> np.ndarray:
        qs = set(q)
        sets = [set(c) for c in self.cliques]
        home = [i for i, s in enumerate(sets) if qs <= s]
        if home:
            i = min(home, key=lambda i: cells(self.domain, self.cliques[i]))
            return sum_to(self.beliefs[i], self.cliques[i], q)
        # Smallest subtree covering q: root at the clique holding most of q, then for every other
        # attribute add the path to the nearest clique that holds it.
        root = max(range(len(sets)), key=lambda i: (len(qs & sets[i]), -cells(self.domain, self.cliques[i])))
        tree = nx.Graph()
        tree.add_nodes_from(range(len(sets)))
        tree.add_edges_from(self.edges)
        paths = nx.single_source_shortest_path(tree, root)
        nodes = {root}
        for a in q:
            if any(a in sets[i] for i in nodes):
                continue
            best = min((i for i in range(len(sets)) if a in sets[i]), key=lambda i: len(paths[i]))
            nodes.update(paths[best])
        parent = {}
        for i in nodes:
            if i != root:
                parent[i] = paths[i][-2]
        children: dict[int, list[int]] = {i: [] for i in nodes}
        for i, p in parent.items():
            children[p].append(i)

        def message(i: int) -> tuple[tuple[str, ...], np.ndarray]:
            # P(clique_i | separator) times the children's messages, summed down to the separator
            # and the queried attributes below: one small contraction per clique of the subtree
            below = [message(ch) for ch in children[i]]
            sep = set(self._tree.sep[(i, parent[i])])
            seen = set(self.cliques[i]).union(*[set(a) for a, _ in below])
            keep = tuple(a for a in self.domain if a in seen and (a in sep or a in qs))
            return keep, contract([(self.cliques[i], self._conditional(i, parent[i])), *below], keep)

        parts = [(self.cliques[root], self.beliefs[root])] + [message(ch) for ch in children[root]]
        return contract(parts, q)

    # ------------------------------------------------------------------ sampling
    def sample(self, rows: int, rng: np.random.Generator, method: str = "iid") -> pd.DataFrame:
        """Records drawn from the model (integer codes; columns in domain order).

        Parameters
        ----------
        rows : int
            The number of records (>= 0).
        rng : numpy.random.Generator
            The random source (not DP noise: sampling is post-processing).
        method : str
            ``"iid"``: independent draws (what a simulation of new data needs). ``"rounded"``: controlled
            rounding, for synthetic data. Tree clique by tree clique, the rows of each conditioning group
            get each value ``floor(k p)`` times plus one more for a systematic sample of the fractional
            parts (so every count is unbiased and within one of its expectation). The root clique's
            values go to the rows in random order; a later clique's values go to its group's rows
            sorted by the columns drawn before (strata), in an order that holds every value in
            proportion to its count along any stretch (:func:`_balanced`), so that each stratum too
            gets its share of every value within about one row instead of a random share. The
            sample's marginals then follow the model's closely, also between columns of different
            cliques (a grouping column and the rest): it adds much less two-way error to the model's
            own than iid draws do.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        ValueError
            For a negative ``rows`` or an unknown ``method``.
        """
        rows = int(rows)
        if rows < 0:
            raise ValueError(f"rows must be >= 0, got {rows}")
        if method not in ("iid", "rounded"):
            raise ValueError(f"method must be 'iid' or 'rounded', got {method!r}")
        draw = _draw if method == "iid" else _draw_rounded
        tree = self._tree
        out: dict[str, np.ndarray] = {}
        for v in tree.order:
            c = self.cliques[v]
            p = tree.parent[v]
            if p < 0:
                prob = self.beliefs[v].ravel()
                prob = prob / prob.sum()
                idx = draw(prob, rows, rng)
                for a, col in zip(c, np.unravel_index(idx, [self.domain[a] for a in c])):
                    out[a] = col.astype(np.int64)
                continue
            s = tree.sep[(v, p)]
            new = tuple(a for a in c if a not in s)
            if not new:
                continue
            # conditional table, axes (sep..., new...) flattened to (n_sep, n_new)
            b = self.beliefs[v]
            perm = [c.index(a) for a in s] + [c.index(a) for a in new]
            table = np.transpose(b, perm).reshape(cells(self.domain, s), cells(self.domain, new))
            if s:
                key = np.ravel_multi_index([out[a] for a in s], [self.domain[a] for a in s])
            else:
                key = np.zeros(rows, dtype=np.int64)
            draws = np.empty(rows, dtype=np.int64)
            if method == "rounded":  # each group's rows in strata of the columns drawn before
                order = _strata_order(key, [(out[a], self.domain[a]) for a in out if a not in s], rng)
            else:
                order = np.argsort(key, kind="stable")
            sk = key[order]
            bounds = np.flatnonzero(np.diff(sk)) + 1
            starts = np.concatenate([[0], bounds])
            ends = np.concatenate([bounds, [rows]])
            for st, en in zip(starts, ends):
                if en <= st:
                    continue
                row = table[sk[st]]
                tot = row.sum()
                prob = row / tot if tot > 0 else np.full(row.size, 1.0 / row.size)
                draws[order[st:en]] = draw(prob, en - st, rng) if method == "iid" else _balanced(prob, en - st, rng)
            for a, col in zip(new, np.unravel_index(draws, [self.domain[a] for a in new])):
                out[a] = col.astype(np.int64)
        return pd.DataFrame({a: out[a] for a in self.domain}, columns=list(self.domain))

    # ------------------------------------------------------------------ (de)serialisation
    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The model as JSON-able metadata and named float64 arrays.

        Returns
        -------
        meta : dict
            Format, domain, cliques, edges and total.
        arrays : dict
            ``theta_<i>``: the log-potential of clique i.
        """
        meta = {
            "format": MODEL_FORMAT,
            "domain": [[a, n] for a, n in self.domain.items()],
            "cliques": [list(c) for c in self.cliques],
            "edges": [list(e) for e in self.edges],
            "total": self.total,
        }
        arrays = {f"theta_{i}": np.asarray(t, dtype=np.float64) for i, t in enumerate(self.log_potentials)}
        return meta, arrays

    @classmethod
    def from_arrays(cls, meta: dict, arrays: dict[str, np.ndarray]) -> GraphicalModel:
        """Rebuild a model from :meth:`to_arrays` output.

        Parameters
        ----------
        meta : dict
            The metadata.
        arrays : dict
            The log-potentials ``theta_<i>``.

        Returns
        -------
        GraphicalModel

        Raises
        ------
        ReleaseFileError
            On any mismatch (format, domain, cliques, tree, array shapes or values).
        """
        try:
            if meta.get("format") != MODEL_FORMAT:
                raise ReleaseFileError(f"unknown model format {meta.get('format')!r} (expected {MODEL_FORMAT})")
            domain = {}
            for a, n in meta["domain"]:
                if not isinstance(a, str) or int(n) != n or int(n) < 1 or a in domain:
                    raise ReleaseFileError(f"bad domain entry {a!r}: {n!r}")
                domain[a] = int(n)
            cliques = [tuple(c) for c in meta["cliques"]]
            edges = [tuple(int(x) for x in e) for e in meta["edges"]]
            total = float(meta["total"])
        except ReleaseFileError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise ReleaseFileError(f"model metadata is malformed: {e!r}") from None
        if not math.isfinite(total) or total <= 0:
            raise ReleaseFileError(f"model total must be positive and finite, got {total}")
        covered = set()
        for c in cliques:
            if not c or any(a not in domain for a in c) or tuple(c) != canonical(domain, c):
                raise ReleaseFileError(f"model clique {list(c)} does not fit the domain")
            covered |= set(c)
        if covered != set(domain):
            raise ReleaseFileError(f"model cliques do not cover the columns {sorted(set(domain) - covered)}")
        n = len(cliques)
        if len(edges) != max(n - 1, 0) or any(not (0 <= i < n and 0 <= j < n and i != j) for i, j in edges):
            raise ReleaseFileError("model junction tree edges are malformed")
        g = nx.Graph()
        g.add_nodes_from(range(n))
        g.add_edges_from(edges)
        if n and not nx.is_tree(g):
            raise ReleaseFileError("model junction tree edges do not form a tree")
        for a in domain:
            holding = [i for i, c in enumerate(cliques) if a in c]
            if not nx.is_connected(g.subgraph(holding)):
                raise ReleaseFileError(f"model junction tree violates running intersection for {a!r}")
        pots = {}
        for i, c in enumerate(cliques):
            key = f"theta_{i}"
            if key not in arrays:
                raise ReleaseFileError(f"model array {key} is missing")
            arr = np.asarray(arrays[key])
            shape = tuple(domain[a] for a in c)
            if arr.shape != shape:
                raise ReleaseFileError(f"model array {key} has shape {arr.shape}, expected {shape} for {list(c)}")
            if not np.issubdtype(arr.dtype, np.floating) and not np.issubdtype(arr.dtype, np.integer):
                raise ReleaseFileError(f"model array {key} is not numeric")
            arr = arr.astype(np.float64)
            if np.isnan(arr).any() or np.isposinf(arr).any():
                raise ReleaseFileError(f"model array {key} has NaN or +inf values")
            if np.isneginf(arr).all():
                raise ReleaseFileError(f"model array {key} gives zero probability everywhere")
            pots[c] = arr
        try:
            model = cls(domain, pots, total, cliques=cliques, edges=edges)
        except FloatingPointError:
            raise ReleaseFileError("model potentials give zero probability to every record") from None
        if not all(np.isfinite(b).all() for b in model.beliefs):
            raise ReleaseFileError("model potentials give non-finite marginals")
        return model

    @classmethod
    def from_mbi(cls, mrf: Any) -> GraphicalModel:
        """Convert an ``mbi.MarkovRandomField`` (log-potentials on its cliques) to numpy.

        Parameters
        ----------
        mrf : mbi.MarkovRandomField
            The model.

        Returns
        -------
        GraphicalModel
        """
        domain = {a: int(n) for a, n in mrf.domain.config.items()}
        pots = {}
        for cl in mrf.potentials.cliques:
            f = mrf.potentials[cl]
            pots[tuple(f.domain.attributes)] = np.asarray(f.values, dtype=np.float64)
        return cls(domain, pots, float(mrf.total))

    # ------------------------------------------------------------------ info
    @property
    def size_mb(self) -> float:
        """Size in MB (float64) of the junction-tree tables."""
        return sum(cells(self.domain, c) for c in self.cliques) * 8 / 2**20

    def __repr__(self) -> str:
        return (
            f"GraphicalModel({len(self.domain)} columns, {len(self.cliques)} cliques, "
            f"{self.size_mb:.3g} MB, total={self.total:.6g})"
        )


def with_structural_zeros(model: GraphicalModel, zeros: dict[str, Sequence[int]]) -> GraphicalModel:
    """The model conditioned on every column staying off some of its levels (structural zeros).

    Each listed level gets log-potential ``-inf`` in one clique that holds its column, and the tree is
    calibrated again: every marginal that contains the column (every clique belief, so sampling too)
    is then exactly 0 on those levels, and the rest is the model's own distribution renormalised
    (conditioning on the event that no column takes a listed level), with the same total.
    Post-processing of the model.

    Parameters
    ----------
    model : GraphicalModel
        The fitted model.
    zeros : dict
        ``{column: codes}``: the levels of each column that hold no rows.

    Returns
    -------
    GraphicalModel
        ``model`` itself when no level is listed, else a new model whose ``unconditioned``
        attribute is the model it was made from (a new conditioning starts from that one).

    Raises
    ------
    ValueError
        For an unknown column, a code outside the column, or zeros that leave no mass.
    """
    zeros = {a: sorted({int(k) for k in ks}) for a, ks in zeros.items() if len(ks)}
    if not zeros:
        return model
    model = getattr(model, "unconditioned", model)
    theta = [np.array(t, dtype=float) for t in model.log_potentials]
    for a, codes in zeros.items():
        if a not in model.domain or not all(0 <= k < model.domain[a] for k in codes):
            raise ValueError(f"structural zeros {codes} do not fit column {a!r} of the model")
        i = next(i for i, c in enumerate(model.cliques) if a in c)
        index: list[Any] = [slice(None)] * len(model.cliques[i])
        index[model.cliques[i].index(a)] = codes
        theta[i][tuple(index)] = -np.inf
    try:
        out = GraphicalModel(
            model.domain, dict(zip(model.cliques, theta)), model.total, cliques=model.cliques, edges=model.edges
        )
    except FloatingPointError:
        raise ValueError("the structural zeros leave the model no probability mass") from None
    out.unconditioned = model
    return out


def _draw_rounded(prob: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n values whose counts are n * prob rounded without bias (floor plus a systematic sample of
    the fractional parts, which includes cell i with probability exactly its fractional part), in
    random order."""
    out = np.repeat(np.arange(prob.size), _rounded_counts(prob, n, rng))
    rng.shuffle(out)
    return out


def _rounded_counts(prob: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Counts summing to n that are n * prob rounded without bias: the floor, plus one for the cells
    of a systematic sample of the fractional parts (cell i is in it with probability exactly its
    fractional part)."""
    expected = n * (prob / prob.sum())
    counts = np.floor(expected).astype(np.int64)
    frac = expected - counts
    rest = n - int(counts.sum())
    if rest > 0:
        cum = np.cumsum(frac)
        cum *= rest / cum[-1]  # guards float drift: the fractional parts sum to ``rest``
        picks = np.searchsorted(cum, rng.random() + np.arange(rest), side="right")
        np.add.at(counts, np.minimum(picks, prob.size - 1), 1)
    return counts


def _balanced(prob: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n values with the counts of :func:`_rounded_counts`, in an order in which every stretch of
    rows holds each value in proportion to its count, within about one: value i's c_i copies sit at
    positions (k + u_i) / c_i, k = 0..c_i-1, with u_i uniform on [0, 1), and the values are listed
    by position. Rows sorted into strata then get each value in proportion within each stratum."""
    counts = _rounded_counts(prob, n, rng)
    values = np.repeat(np.arange(prob.size), counts)
    first = np.cumsum(counts) - counts
    pos = (np.arange(n) - first[values] + rng.random(prob.size)[values]) / np.maximum(counts[values], 1)
    return values[np.argsort(pos, kind="stable")]


def _strata_order(key: np.ndarray, drawn: list[tuple[np.ndarray, int]], rng: np.random.Generator) -> np.ndarray:
    """Row order for a rounded draw: by conditioning group ``key``, then by the columns drawn before
    (``(codes, size)`` in drawing order, as many as one int64 holds), ties in random order."""
    return np.lexsort((rng.random(key.size), strata_key(drawn, key.size), key))


def _draw(prob: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n iid draws from a categorical distribution (inverse CDF)."""
    cdf = np.cumsum(prob)
    cdf /= cdf[-1]
    idx = np.searchsorted(cdf, rng.random(n), side="right")
    return np.minimum(idx, prob.size - 1)
