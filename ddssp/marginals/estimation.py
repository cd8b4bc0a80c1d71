"""Estimation engines of AIM: the model that fits all noisy marginals measured so far.

:class:`MirrorDescentNumpy` (the default, ``engine="numpy"``) runs :func:`~ddssp.marginals.mirror_descent.mirror_descent`
in numpy on the junction tree of the measured cliques: nothing is compiled per round, so time and
memory stay bounded however the clique structure grows. :class:`MbiEngine` (``engine="mbi"``) runs
``mbi.estimation.MirrorDescent`` (JAX) on the same measurements: the reference path, compiled per
clique structure (seconds per compile).
"""

from __future__ import annotations

import math

import numpy as np

from ddssp.marginals.belief_propagation import CalibratedTree
from ddssp.marginals.junction_tree import junction_tree
from ddssp.marginals.mirror_descent import TOL_BLOCK, MirrorDescentOptions, Point, mirror_descent
from ddssp.marginals.model import GraphicalModel
from ddssp.marginals.named_tables import bcast, canonical, cells, expand_sum_into, marginals_from, sum_to
from ddssp.types import Clique, Domain

#: Momentum rule of :meth:`MirrorDescentNumpy.fit_accelerated` (AIM's round and final fits).
ACCEL_MOMENTUM = "heavy"
#: Step-size growth per accepted step of the heavy-ball rule.
ACCEL_GROW = 1.02


def _maximal_subset(cliques: list[Clique]) -> list[Clique]:
    out: list[Clique] = []
    for c in sorted(set(cliques), key=lambda c: (-len(c), c)):
        if not any(set(c) <= set(m) for m in out):
            out.append(c)
    return out


def _smallest_container(domain, containers: list[Clique], c: Clique) -> Clique:
    cand = [m for m in containers if set(c) <= set(m)]
    return min(cand, key=lambda m: (cells(domain, m), m))


def _canonical_measurement(domain: Domain, clique: Clique, y: np.ndarray) -> tuple[Clique, np.ndarray]:
    """A noisy marginal ``y`` over ``clique`` as (domain-ordered clique, ``y`` with its axes in that order)."""
    c = canonical(domain, clique)
    y = np.asarray(y, dtype=float)
    if tuple(clique) != c:
        y = np.transpose(y, [tuple(clique).index(a) for a in c])
    return c, y


def _pooled_mean(wsum: np.ndarray, prec: float | np.ndarray) -> np.ndarray:
    """The precision-weighted mean of a clique's measurements; 0 in a cell none of them measured."""
    if np.ndim(prec) == 0:
        return wsum / prec
    return np.divide(wsum, prec, out=np.zeros(np.shape(prec)), where=prec > 0)


def _noise_l1(prec: float | np.ndarray, size: int) -> float:
    """The expected L1 error ``sqrt(2 / pi) * sigma`` summed over a pooled measurement's measured cells."""
    if np.ndim(prec) == 0:
        return math.sqrt(2 / math.pi / prec) * size
    p = np.asarray(prec)[np.asarray(prec) > 0]
    return float(np.sum(np.sqrt(2 / math.pi / p)))


class MirrorDescentNumpy:
    """Private-PGM mirror descent (Armijo line search, as ``mbi.estimation.MirrorDescent``) in numpy.

    The loss is sum_i ||mu_{c_i} - y_i||^2 / (2 sigma_i^2). Measurements of the same clique are pooled
    (precision-weighted mean): same gradient, same minimiser. Potentials live on the maximal measured
    cliques and survive new measurements (warm start).

    Parameters
    ----------
    domain : dict
        ``{column: size}``; the order of the tables' axes.
    keep_beliefs : bool
        Keep the calibrated tables of the last accepted iterate so that :meth:`scoring_model` needs no
        new calibration (costs one more copy of the tree's tables).
    """

    def __init__(self, domain: Domain, *, keep_beliefs: bool = False):
        self.domain = domain
        self.prec: dict[Clique, float] = {}  # clique -> sum 1/sigma^2
        self.wsum: dict[Clique, np.ndarray] = {}  # clique -> sum y / sigma^2
        self.tot_est: list[tuple[float, float]] = []  # (estimate of N, variance)
        self.theta: dict[Clique, np.ndarray] = {}
        self.structure_changes = 0
        self._structure: tuple | None = None
        #: pending warm-start steps (clique -> log-ratio table), applied at the next build
        self._pending: list[tuple[Clique, np.ndarray]] = []
        #: keep the calibrated tables of the last accepted iterate so that :meth:`scoring_model`
        #: needs no new calibration (costs one more copy of the tree's tables)
        self.keep_beliefs = keep_beliefs
        self._beliefs: tuple | None = None
        #: junction tree of the current structure (set by :meth:`_build`)
        self._jt_key: tuple | None = None
        self.tree: CalibratedTree | None = None
        self.mcl: list[Clique] = []
        #: precision of the calibrations of the running fit
        self._dtype = np.dtype(np.float64)
        #: tables the expanded potentials are written into, reused while the tree and dtype stay
        self._xbuf: list[np.ndarray] = []
        self._xbuf_tree: CalibratedTree | None = None
        self._last_cal: tuple | None = None
        #: (junction-tree key, step size) at the end of the last run, for ``resume``
        self._last_alpha: tuple | None = None

    def add(self, clique: Clique, y: np.ndarray, sigma: float | np.ndarray) -> None:
        """Add a noisy measurement (applied at the next fit).

        Parameters
        ----------
        clique : tuple of str
            The columns measured, in the axes' order of ``y``.
        y : numpy.ndarray
            The noisy counts.
        sigma : float or numpy.ndarray
            Their noise scale: one for every cell, or one per cell (shaped like ``y``), ``inf`` for a
            cell the measurement says nothing about (it then weighs nothing in the fits). Such a
            partial measurement does not enter the estimate of the total (:attr:`total`).
        """
        if np.ndim(sigma):
            self._add_per_cell(clique, y, np.asarray(sigma, dtype=float))
            return
        c, y = _canonical_measurement(self.domain, clique, y)
        p = 1.0 / sigma**2
        self.prec[c] = self.prec.get(c, 0.0) + p
        self.wsum[c] = self.wsum.get(c, 0.0) + p * y
        self.tot_est.append((float(y.sum()), sigma**2 * y.size))
        self._structure = None

    def _add_per_cell(self, clique: Clique, y: np.ndarray, sigma: np.ndarray) -> None:
        """:meth:`add` with one noise scale per cell: the clique's pooled precision becomes a table."""
        c, y = _canonical_measurement(self.domain, clique, y)
        _, sd = _canonical_measurement(self.domain, clique, sigma)
        known = np.isfinite(sd)
        p = np.where(known, 1.0 / np.where(known, sd, 1.0) ** 2, 0.0)
        self.prec[c] = self.prec.get(c, 0.0) + p
        self.wsum[c] = self.wsum.get(c, 0.0) + p * np.where(known, y, 0.0)
        if known.all():
            self.tot_est.append((float(y.sum()), float(np.sum(sd**2))))
        self._structure = None

    @property
    def total(self) -> float:
        """Minimum-variance unbiased estimate of N from all measurements (as mbi), at least 1."""
        est = np.array([e for e, _ in self.tot_est])
        w = 1.0 / np.array([v for _, v in self.tot_est])
        return max(1.0, float(np.sum(est * w) / np.sum(w)))

    def warm_start(self, clique: Clique, model_marginal: np.ndarray, y: np.ndarray, floor: float) -> None:
        """One iterative-proportional-fitting step towards the noisy marginal ``y`` of ``clique``.

        The potentials get ``log(y+/sum y+) - log(mu/sum mu)`` added on ``clique`` (with
        ``y+ = max(y, floor)``), so the new model's marginal on ``clique`` equals ``y+`` normalised and
        nothing else changes but through ``clique``: the model becomes p(x) * y+(x_c) / p(x_c). When
        ``clique`` joins a decomposable model through one separator (a new leaf of the junction tree),
        this is the closed-form decomposable estimate (clique marginals over separator marginals). Cells
        where the model has no mass are left alone. Applied at the next fit; a start point only, never a
        change of the minimiser.

        Parameters
        ----------
        clique : tuple of str
            The columns measured.
        model_marginal : numpy.ndarray
            The current model's marginal on ``clique`` (counts, same axes as ``y``).
        y : numpy.ndarray
            The noisy counts.
        floor : float
            The smallest count ``y`` is raised to.
        """
        c, y = _canonical_measurement(self.domain, clique, y)
        _, mu = _canonical_measurement(self.domain, clique, model_marginal)
        yp = np.maximum(y, floor)
        with np.errstate(divide="ignore", invalid="ignore"):
            delta = np.log(yp / yp.sum()) - np.log(mu / mu.sum())
        delta = np.where(np.isfinite(delta), delta, 0.0)
        self._pending.append((c, delta))
        self._structure = None

    def _build(self) -> None:
        measured = list(self.prec)
        mcl = _maximal_subset(measured)
        old = self.theta
        theta = {m: np.zeros([self.domain[a] for a in m]) for m in mcl}
        for c, arr in old.items():
            m = _smallest_container(self.domain, mcl, c)
            theta[m] = theta[m] + bcast(arr, c, m)
        for c, delta in self._pending:  # warm-start steps (see :meth:`warm_start`)
            m = _smallest_container(self.domain, mcl, c)
            theta[m] = theta[m] + bcast(delta, c, m)
        self._pending = []
        self.theta = theta
        self.mcl = mcl
        self._beliefs = None
        maxcl, edges = junction_tree(self.domain, mcl)
        if (tuple(maxcl), tuple(edges)) != self._jt_key:
            self.structure_changes += 1
        self._jt_key = (tuple(maxcl), tuple(edges))
        self.tree = CalibratedTree(self.domain, maxcl, edges)
        self.jt_of = {c: maxcl.index(_smallest_container(self.domain, maxcl, c)) for c in set(measured) | set(mcl)}
        self.m_of = {c: _smallest_container(self.domain, mcl, c) for c in measured}
        self._jt_groups: dict[int, list[Clique]] = {}
        for m in mcl:
            self._jt_groups.setdefault(self.jt_of[m], []).append(m)
        self.ybar = {c: _pooled_mean(self.wsum[c], self.prec[c]) for c in measured}
        # Lipschitz constant of the gradient (exact for identity queries, as mbi computes it)
        blocks: dict[Clique, float] = {}
        for c in measured:
            m = self.m_of[c]
            blocks[m] = blocks.get(m, 0.0) + float(np.max(self.prec[c])) * cells(self.domain, m) / cells(self.domain, c)
        self.lipschitz = max(blocks.values())
        self._structure = True

    def _oracle(self, theta: dict[Clique, np.ndarray], total: float):
        tree = self.tree
        dt = self._dtype
        # the expanded potentials go into tables kept across calls (per structure and dtype):
        # calibrate only works in them, nothing outside this call holds them
        if self._xbuf_tree is not tree or self._xbuf[0].dtype != dt:
            self._xbuf = [np.empty([self.domain[a] for a in c], dtype=dt) for c in tree.cliques]
            self._xbuf_tree = tree
        th = [
            expand_sum_into(self._xbuf[i], [(m, theta[m]) for m in self._jt_groups.get(i, [])], c, self.domain)
            for i, c in enumerate(tree.cliques)
        ]
        probs, scales = tree.calibrate(th, overwrite=True, normalize=False)
        if self.keep_beliefs:
            self._last_cal = (probs, scales, total)
        mu = {}
        for i, group in self._jt_groups.items():  # maximal measured cliques, grouped by tree clique
            for m, arr in marginals_from(probs[i], tree.cliques[i], group, self.domain).items():
                mu[m] = arr.astype(np.float64) * (scales[i] * total)
        for c in self.prec:
            if c not in mu:
                m = self.m_of[c]
                mu[c] = sum_to(mu[m], m, c)
        return mu

    def _on_potentials(self, grad: dict[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """The mirror-descent direction on the potentials: each measured clique's gradient
        broadcast onto the maximal measured clique that holds its potential, summed."""
        gth = {m: np.zeros_like(a) for m, a in self.theta.items()}
        for c, g in grad.items():
            m = self.m_of[c]
            gth[m] = gth[m] + bcast(g, c, m)
        return gth

    def _loss_grad(self, mu):
        loss, grad = 0.0, {}
        for c, m in mu.items():
            r = m - self.ybar[c]
            p = self.prec[c]
            loss += 0.5 * (p * float(np.vdot(r, r)) if np.ndim(p) == 0 else float(np.vdot(p * r, r)))
            grad[c] = p * r
        return loss, grad

    def measured_maximal(self) -> list[Clique]:
        """The maximal measured cliques (where the potentials live).

        Returns
        -------
        list of tuple of str
        """
        return _maximal_subset(list(self.prec))

    def noise_l1(self) -> float:
        """The expected L1 error of the (pooled) noisy marginals: sum over measured cliques of
        ``sqrt(2 / pi) * sigma * cells``, ``sigma`` the pooled measurement's noise scale.

        Returns
        -------
        float
        """
        return float(sum(_noise_l1(p, np.size(self.wsum[c])) for c, p in self.prec.items()))

    def _run(self, iters: int, options: MirrorDescentOptions, dtype=np.float64, resume: bool = False) -> dict:
        """:func:`mirror_descent` from the current potentials with step size 2 / (L N) (``resume``: the
        step size the last run ended with, if that run had the same structure); keeps the result (and,
        with ``keep_beliefs``, the calibrated tables of the last accepted iterate)."""
        if self._structure is None:
            self._build()
        self._dtype = np.dtype(dtype)
        try:
            total = self.total
            alpha = 2.0 / (self.lipschitz * total)
            if resume and self._last_alpha is not None and self._last_alpha[0] == self._jt_key:
                alpha = self._last_alpha[1]
            res = mirror_descent(_Objective(self, total), self.theta, alpha, iters, options)
        finally:
            self._dtype = np.dtype(np.float64)
        self._last_alpha = (self._jt_key, res.alpha)
        self.theta = res.point.theta
        self._last_cal = None
        self._beliefs = res.point.extra
        return {"iterations": res.iterations, "loss": res.loss}

    def fit(self, iters: int, tol: float | None = None) -> dict:
        """Plain mirror descent (Armijo test; a rejected step halves the step size, an accepted one
        grows it by 1%) for at most ``iters`` iterations from the current potentials.

        Parameters
        ----------
        iters : int
            Iteration budget.
        tol : float or None
            Stop once the loss decreases by at most ``tol * max(loss, 1)`` over ``TOL_BLOCK``
            iterations.

        Returns
        -------
        dict
            ``{"iterations", "loss"}``.
        """
        return self._run(iters, MirrorDescentOptions(momentum=None, grow=1.01, tol=tol))

    def fit_accelerated(
        self,
        iters: int,
        tol: float | None = None,
        dtype=np.float64,
        grow: float | None = None,
        patience: int = 1,
        momentum: str = ACCEL_MOMENTUM,
        move_tol: float | None = None,
        loss_below: float | None = None,
        resume: bool = False,
    ) -> dict:
        """Accelerated mirror descent from the current potentials: same minimiser as :meth:`fit`,
        reached in far fewer steps on high-signal data.

        The default rule is heavy-ball momentum ``k / (k + 3)`` with restart: each step moves along
        the gradient at the current iterate plus a share of the previous step, so it evaluates one
        point (the Nesterov/FISTA rule evaluates the extrapolated point as well); a step that raises
        the loss is retried without momentum, then the step size halves; an accepted step grows it
        by ``ACCEL_GROW``. ``momentum="fista"`` selects FISTA with Armijo backtracking and adaptive
        restart (the step only shrinks unless ``grow`` is given).

        Parameters
        ----------
        iters : int
            Iteration budget.
        tol : float or None
            As in :meth:`fit`.
        dtype : numpy dtype
            Precision of the junction-tree calibrations (``float32``: half the memory traffic, for
            the per-round fits whose model only scores candidates and the first steps of the final
            fit where float32's rounding is far below the noise); potentials, marginals, loss and
            gradient stay float64.
        grow : float, optional
            Step-size factor after every accepted step (default ``ACCEL_GROW`` for the heavy-ball
            rule, 1 for FISTA, whose step then only shrinks by backtracking).
        patience : int
            With ``tol``: stop after this many consecutive blocks below the tolerance.
        momentum : {"heavy", "fista"}
            The momentum rule.
        move_tol : float or None
            Also stop once ``TOL_BLOCK`` accepted steps move the model's marginals on the measured
            cliques (L1, summed) by at most ``move_tol`` times :meth:`noise_l1`, the L1 error the
            measurements' noise alone makes: a fit more exact than the noise changes nothing a
            user can tell apart. Unlike ``tol``, the threshold does not tighten as the signal
            grows (the loss's scale grows with it, the noise's does not).
        loss_below : float or None
            Also stop once the loss is at most this.
        resume : bool
            Start from the step size the last fit ended with (same structure), not from 2 / (L N):
            a fit continued in several calls then runs as one (the step size grows across calls).

        Returns
        -------
        dict
            ``{"iterations", "loss"}``.
        """
        if momentum not in ("heavy", "fista"):
            raise ValueError(f"momentum must be 'heavy' or 'fista', got {momentum!r}")
        if grow is None:
            grow = ACCEL_GROW if momentum == "heavy" else 1.0
        watch = None
        if move_tol is not None:
            if self._structure is None:
                self._build()
            watch = _MoveStop(list(self.prec), move_tol * self.noise_l1())
        if loss_below is not None:
            move, limit = watch, float(loss_below)

            def watch(it: int, x: Point) -> bool:
                moved = move is not None and move(it, x)
                return bool(moved or x.loss <= limit)

        opts = MirrorDescentOptions(momentum=momentum, grow=grow, tol=tol, patience=patience, watch=watch)
        return self._run(iters, opts, dtype, resume=resume)

    def loss(self) -> float:
        """The loss at the current potentials (one calibration).

        Returns
        -------
        float
            sum over measured cliques of ||mu_c - ybar_c||^2 / (2 sigma_c^2), pooled as in the fits.
        """
        if self._structure is None:
            self._build()
        loss = _Objective(self, self.total).evaluate(self.theta).loss
        self._last_cal = None
        return loss

    def scoring_model(self) -> GraphicalModel:
        """The current model, from the calibrated tables of the last fit when they were kept (``keep_beliefs``).

        No new calibration is needed then; the model answers marginals like :meth:`model`.

        Returns
        -------
        GraphicalModel
        """
        if self._structure is None or self._beliefs is None:
            return self.model()
        probs, scales, total = self._beliefs
        self._beliefs = None  # the tables are scaled in place and handed over
        beliefs = [np.multiply(p, sc * total, out=p) for p, sc in zip(probs, scales)]
        return GraphicalModel.from_beliefs(
            self.domain, beliefs, total, cliques=self.tree.cliques, edges=self.tree.edges, tree=self.tree
        )

    def model(self, domain: Domain | None = None) -> GraphicalModel:
        """The fitted model.

        Parameters
        ----------
        domain : dict, optional
            The same columns in another order: the model's tables then have their axes in that order
            (one calibration, in that order).

        Returns
        -------
        GraphicalModel
        """
        if self._structure is None:
            self._build()
        domain = self.domain if domain is None else domain
        cliques = [canonical(domain, c) for c in self.tree.cliques]
        return GraphicalModel(domain, dict(self.theta), self.total, cliques=cliques, edges=self.tree.edges)


class _Objective:
    """:class:`~ddssp.marginals.mirror_descent.Problem` of a :class:`MirrorDescentNumpy` at a fixed total."""

    def __init__(self, est: MirrorDescentNumpy, total: float):
        self.est = est
        self.total = total

    def evaluate(self, theta: dict[Clique, np.ndarray]) -> Point:
        est = self.est
        mu = est._oracle(theta, self.total)
        loss, grad = est._loss_grad(mu)
        return Point(theta, mu, loss, grad, est._last_cal if est.keep_beliefs else None)

    def direction(self, point: Point, precondition: bool) -> dict[Clique, np.ndarray]:
        return self.est._on_potentials(point.grad)


class _MoveStop:
    """Stopping test of :meth:`MirrorDescentNumpy.fit_accelerated` with ``move_tol``: true once the
    marginals of the measured cliques moved by at most ``limit`` (L1, summed) over ``TOL_BLOCK``
    accepted steps."""

    def __init__(self, cliques: list[Clique], limit: float):
        self.cliques = cliques
        self.limit = limit
        self.accepted = 0
        self.seen: Point | None = None
        self.ref: dict[Clique, np.ndarray] | None = None

    def __call__(self, it: int, x: Point) -> bool:
        if x is self.seen:  # a rejected step: nothing moved
            return False
        self.seen = x
        if self.ref is None:  # the first accepted step: its start is the reference
            self.ref = {c: x.mu[c].copy() for c in self.cliques}
            return False
        self.accepted += 1
        if self.accepted % TOL_BLOCK:
            return False
        moved = sum(float(np.abs(x.mu[c] - self.ref[c]).sum()) for c in self.cliques)
        self.ref = {c: x.mu[c].copy() for c in self.cliques}
        return moved <= self.limit


def _in_domain_order(model: GraphicalModel, domain: Domain) -> GraphicalModel:
    """The same model (same potentials, same junction tree) with ``domain``'s column order: clique
    axes in that order, calibrated once more."""
    if list(model.domain) == list(domain):
        return model
    pots = dict(zip(model.cliques, model.log_potentials))
    cliques = [canonical(domain, c) for c in model.cliques]
    return GraphicalModel(domain, pots, model.total, cliques=cliques, edges=list(model.edges))


class MbiEngine:
    """The reference path: ``mbi.estimation.MirrorDescent`` (JAX) on all measurements.

    Warm-started from the previous model. Every new clique structure compiles a new XLA program
    (seconds per round); compiled programs are dropped after each fit (``jax.clear_caches``) so that
    memory maps do not pile up over a long run.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    """

    def __init__(self, domain: Domain):
        from ddssp.marginals.jaxconf import configure_jax

        configure_jax()
        import jax
        from mbi import Domain, LinearMeasurement
        from mbi.estimation import MirrorDescent, minimum_variance_unbiased_total

        self._jax = jax
        self._LM = LinearMeasurement
        self._MD = MirrorDescent
        self._mvu = minimum_variance_unbiased_total
        self.domain = domain
        self.mdomain = Domain.fromdict(domain)
        self.meas: list = []
        self.cliques: set[Clique] = set()
        self.mrf = None
        self.structure_changes = 0
        self._last_structure: frozenset | None = None

    def add(self, clique: Clique, y: np.ndarray, sigma: float) -> None:
        """Add a noisy measurement (used from the next fit).

        Parameters
        ----------
        clique : tuple of str
            The columns measured, in the axes' order of ``y``.
        y : numpy.ndarray
            The noisy counts.
        sigma : float
            Their noise scale.
        """
        c, y = _canonical_measurement(self.domain, clique, y)
        self.meas.append(self._LM(y.ravel(), c, float(sigma)))
        self.cliques.add(c)

    @property
    def total(self) -> float:
        """The minimum-variance unbiased estimate of the record count from all measurements."""
        return float(self._mvu(self.meas))

    def measured_maximal(self) -> list[Clique]:
        """The maximal measured cliques.

        Returns
        -------
        list of tuple of str
        """
        return _maximal_subset(list(self.cliques))

    def fit(self, iters: int, tol: float | None = None) -> dict:
        """Fit the model to all measurements, warm-started from the previous one.

        Parameters
        ----------
        iters : int
            Mirror-descent iterations.
        tol : float, optional
            Passed to mbi's ``estimate`` as its tolerance.

        Returns
        -------
        dict
            ``{"iterations": iters, "loss": nan}`` (mbi does not report its loss here).
        """
        structure = frozenset(self.measured_maximal())
        if structure != self._last_structure:
            self.structure_changes += 1
            self._last_structure = structure
        self.mrf = self._MD().estimate(
            self.mdomain, self.meas, self.total, iters=int(iters), warm_start=self.mrf, tol=tol
        )
        self._jax.clear_caches()
        return {"iterations": int(iters), "loss": float("nan")}

    def model(self, domain: Domain | None = None) -> GraphicalModel:
        """The fitted model, in numpy.

        Parameters
        ----------
        domain : dict, optional
            The same columns in another order: the model's tables then have their axes in that order.

        Returns
        -------
        GraphicalModel
        """
        m = GraphicalModel.from_mbi(self.mrf)
        return m if domain is None else _in_domain_order(m, domain)


def make_engine(engine: str, domain: Domain, keep_beliefs: bool = False):
    """The estimation engine ``"numpy"`` (:class:`MirrorDescentNumpy`) or ``"mbi"`` (:class:`MbiEngine`).

    Parameters
    ----------
    engine : str
        ``"numpy"`` or ``"mbi"``.
    domain : dict
        ``{column: size}``.
    keep_beliefs : bool
        For the numpy engine; see :class:`MirrorDescentNumpy`.

    Returns
    -------
    MirrorDescentNumpy or MbiEngine
    """
    return MirrorDescentNumpy(domain, keep_beliefs=keep_beliefs) if engine == "numpy" else MbiEngine(domain)
