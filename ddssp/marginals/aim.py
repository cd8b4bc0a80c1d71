"""AIM (McKenna et al. 2022): select - measure - reconstruct, under a zCDP budget.

The only step of ddssp that touches the sensitive data. Formulas: ../shared/notes/ddssp-method.md
sections 1-2 (with the FIX: the initial round charges for exactly the one-way marginals it measures).

Design (why it is fast):
- Exact answers of every candidate marginal are computed once, up front: numpy ``bincount`` on a
  codes DataFrame, or one scan of a table by the counting layer (:mod:`ddssp.data.counting`).
- Re-estimation after each measurement is Private-PGM mirror descent (Armijo step size, the same
  update as ``mbi.estimation.MirrorDescent``) written in numpy on the junction tree of the
  measured cliques: nothing is compiled per round, so wall time and memory maps stay bounded no
  matter how the clique structure grows. Each round warm-starts from the previous potentials and
  runs a short, tolerance-stopped number of iterations; the final model gets at most
  ``final_iters``, stopped on ``FINAL_TOL`` (fast mode; the workload error does not improve with
  more iterations: see ``FINAL_TOL``).
- Candidates are scored from numpy marginals of the current model (:class:`GraphicalModel`),
  never with one JAX inference per candidate.
- ``fit="fast"`` (default, issue 19): mirror descent converges slowly on high-signal data (on
  Adult, 3000 plain iterations from a cold start reach the loss that 250 accelerated ones do), so
  every per-round fit used to hit its 250-iteration cap: cost = rounds x 250 x model. Now
  (1) each new measurement gets a closed-form warm start: one iterative-proportional-fitting step
  p(x) * y+(x_c) / p(x_c) (:meth:`MirrorDescentNumpy.warm_start`), which is the exact decomposable
  estimate (clique marginals over separator marginals) when the clique joins the junction tree as
  a leaf; (2) rounds run at most ``FAST_ROUND_MAX_ITERS`` accelerated steps (Nesterov momentum with
  adaptive restart, :meth:`MirrorDescentNumpy.fit_accelerated`) with float32 calibrations; (3) the
  model that scores candidates is built from the fit's own calibrated tables (no recalibration);
  (4) the final fit is accelerated too (float64, same ``FINAL_TOL`` rule); (5) the model-size
  checks triangulate with plain adjacency sets (:func:`triangulated_cliques`) instead of networkx.
  ``fit="legacy"`` keeps the loop as it was, for before/after comparisons
  (``python -m ddssp.bench.aim --fit legacy``).
- ``engine="numpy"`` (default) never imports JAX. ``engine="mbi"`` runs every estimation (per
  round and final) on mbi 2.x ``MirrorDescent`` (JAX) - the reference path, compiled per clique
  structure (measured: 15-20 s per compile here, vs. tens of ms per numpy iteration).
  On an 11 MB Adult model one compiled mbi iteration took 37-100 ms (after a 16 s compile); one
  numpy iteration on a 1.3M-cell clique takes ~22 ms, so even the final fit does not gain from JAX
  on this machine.

Privacy: every noisy release goes through the :class:`~ddssp.dp.Ledger`, with noise from ``noise``
(:class:`~ddssp.dp.noise.SecureNoise`, OpenDP's exact samplers, unless a test passes the insecure
seeded source): discrete Gaussian noise on integer counts, Gumbel noisy max for selection. Each regular round
charges eps_em^2/8 (selection) + 1/(2 sigma^2) (measurement); the last round spends exactly what
remains, so the ledger total equals the budget.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from ddssp.errors import DataError, WorkloadError
from ddssp.marginals.model import (
    CalibratedTree,
    GraphicalModel,
    bcast,
    canonical,
    cells,
    expand_sum_into,
    junction_tree,
    marginals_from,
    sum_to,
    triangulated_cliques,
)
from ddssp.dp import Ledger, check_rho, make_rng
from ddssp.dp.noise import NoiseSource, SecureNoise
from ddssp.marginals.workload import Workload, downward_closure, validate_workload

Clique = tuple[str, ...]

#: Fast-mode defaults: at most this many mirror-descent iterations per round, stopping early when
#: the loss improves by less than ``ROUND_TOL`` (relative) over ``TOL_BLOCK`` iterations.
ROUND_MAX_ITERS = 250
ROUND_TOL = 1e-4
TOL_BLOCK = 10
#: Fast fit (``fit="fast"``): at most this many accelerated steps per round.
FAST_ROUND_MAX_ITERS = 10
#: Fast fit: precision of the per-round calibrations (the final fit is always float64).
FAST_ROUND_DTYPE = np.float32
#: Final-model default (fast mode): stop the final fit once the loss improves by less than
#: ``FINAL_TOL`` (relative) over ``TOL_BLOCK`` iterations, after at most ``final_iters``.
#: Measured on Adult (seed 0, eps 1 and 2): the workload error is flat (within 0.5%) from ~100
#: iterations on and slightly *rises* after ~250-450 (fitting the noise); this tolerance stopped
#: at 440 / 510 of 1000 iterations there, with a lower workload error than 1000 fixed iterations.
FINAL_TOL = 1e-3
#: ``fit_accelerated(grow=...)`` is 1 (no growth) by default. Measured (issue 19): letting the final
#: fit's step grow by 1.02 per accepted step (it otherwise only shrinks by backtracking) stopped the final
#: fit of an Adult eps-4 run at 320 instead of 560 steps with workload error 0.01384 vs 0.01393,
#: but at eps 8 it stopped at 170 of 640 steps with error 0.01099 vs 0.01064, and with the
#: tolerance rule's ``patience=2`` it ran 740 steps to a higher loss (1967 vs 1772): the growing
#: step makes the momentum restart often. Kept as an option for experiments.
#: Warm start (fast fit): noisy cells below ``WARM_FLOOR * sigma`` count as that much in the
#: closed-form start point (the log of a non-positive count is undefined).
WARM_FLOOR = 0.1


@dataclass
class Measurement:
    """One noisy marginal: ``values`` = exact counts + N(0, sigma^2) per cell, shaped like the
    marginal (axes in the order of ``clique``)."""

    clique: tuple[str, ...]
    sigma: float
    values: np.ndarray
    round: int


@dataclass
class AIMProgress:
    round: int
    max_rounds: int
    rho_spent: float
    rho_budget: float
    clique: tuple | None
    sigma: float


@dataclass
class AIMResult:
    model: GraphicalModel
    measurements: list[Measurement]
    ledger: Ledger
    workload: Workload
    rounds: int
    info: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- estimation (numpy)
def _maximal_subset(cliques: list[Clique]) -> list[Clique]:
    out: list[Clique] = []
    for c in sorted(set(cliques), key=lambda c: (-len(c), c)):
        if not any(set(c) <= set(m) for m in out):
            out.append(c)
    return out


def _smallest_container(domain, containers: list[Clique], c: Clique) -> Clique:
    cand = [m for m in containers if set(c) <= set(m)]
    return min(cand, key=lambda m: (cells(domain, m), m))


def _canonical_measurement(domain: dict[str, int], clique: Clique, y: np.ndarray) -> tuple[Clique, np.ndarray]:
    """A noisy marginal ``y`` over ``clique`` as (domain-ordered clique, ``y`` with its axes in that order)."""
    c = canonical(domain, clique)
    y = np.asarray(y, dtype=float)
    if tuple(clique) != c:
        y = np.transpose(y, [tuple(clique).index(a) for a in c])
    return c, y


class MirrorDescentNumpy:
    """Private-PGM mirror descent (Armijo line search, as ``mbi.estimation.MirrorDescent``) on
    the L2 loss sum_i ||mu_{c_i} - y_i||^2 / (2 sigma_i^2), in numpy.

    Measurements of the same clique are pooled (precision-weighted mean): same gradient, same
    minimiser. Potentials live on the maximal measured cliques and survive new measurements
    (warm start)."""

    def __init__(self, domain: dict[str, int], *, keep_beliefs: bool = False):
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

    def add(self, clique: Clique, y: np.ndarray, sigma: float) -> None:
        c, y = _canonical_measurement(self.domain, clique, y)
        p = 1.0 / sigma**2
        self.prec[c] = self.prec.get(c, 0.0) + p
        self.wsum[c] = self.wsum.get(c, 0.0) + p * y
        self.tot_est.append((float(y.sum()), sigma**2 * y.size))
        self._structure = None

    @property
    def total(self) -> float:
        """Minimum-variance unbiased estimate of N from all measurements (as mbi), at least 1."""
        est = np.array([e for e, _ in self.tot_est])
        w = 1.0 / np.array([v for _, v in self.tot_est])
        return max(1.0, float(np.sum(est * w) / np.sum(w)))

    def warm_start(self, clique: Clique, model_marginal: np.ndarray, y: np.ndarray, floor: float) -> None:
        """One iterative-proportional-fitting step towards the noisy marginal ``y`` of ``clique``.

        ``model_marginal`` is the current model's marginal on ``clique`` (counts, same axes as
        ``y``). The potentials get ``log(y+/sum y+) - log(mu/sum mu)`` added on ``clique`` (with
        ``y+ = max(y, floor)``), so the new model's marginal on ``clique`` equals ``y+``
        normalised and nothing else changes but through ``clique``: the model becomes
        p(x) * y+(x_c) / p(x_c). When ``clique`` joins a decomposable model through one separator
        (a new leaf of the junction tree), this is the closed-form decomposable estimate
        (clique marginals over separator marginals). Cells where the model has no mass are left
        alone. Applied at the next fit; a start point only, never a change of the minimiser."""
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
        if (tuple(maxcl), tuple(edges)) != getattr(self, "_jt_key", None):
            self.structure_changes += 1
        self._jt_key = (tuple(maxcl), tuple(edges))
        self.tree = CalibratedTree(self.domain, maxcl, edges)
        self.jt_of = {c: maxcl.index(_smallest_container(self.domain, maxcl, c)) for c in set(measured) | set(mcl)}
        self.m_of = {c: _smallest_container(self.domain, mcl, c) for c in measured}
        self._jt_groups: dict[int, list[Clique]] = {}
        for m in mcl:
            self._jt_groups.setdefault(self.jt_of[m], []).append(m)
        self.ybar = {c: self.wsum[c] / self.prec[c] for c in measured}
        # Lipschitz constant of the gradient (exact for identity queries, as mbi computes it)
        blocks: dict[Clique, float] = {}
        for c in measured:
            m = self.m_of[c]
            blocks[m] = blocks.get(m, 0.0) + self.prec[c] * cells(self.domain, m) / cells(self.domain, c)
        self.lipschitz = max(blocks.values())
        self._structure = True

    def _oracle(self, theta: dict[Clique, np.ndarray], total: float):
        tree = self.tree
        dt = getattr(self, "_dtype", np.float64)
        # the expanded potentials go into tables kept across calls (per structure and dtype):
        # calibrate only works in them, nothing outside this call holds them
        if getattr(self, "_xbuf_tree", None) is not tree or self._xbuf[0].dtype != np.dtype(dt):
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
            loss += 0.5 * self.prec[c] * float(np.vdot(r, r))
            grad[c] = self.prec[c] * r
        return loss, grad

    def fit(self, iters: int, tol: float | None = None) -> dict:
        """Run up to ``iters`` mirror-descent iterations from the current potentials.
        With ``tol``, stop once the relative loss decrease over ``TOL_BLOCK`` iterations is
        below ``tol``. Returns {'iterations', 'loss'}."""
        if self._structure is None:
            self._build()
        total = self.total
        alpha = 2.0 / (self.lipschitz * total)
        theta = self.theta
        mu = self._oracle(theta, total)
        cal = getattr(self, "_last_cal", None) if self.keep_beliefs else None
        loss, grad = self._loss_grad(mu)
        block_start = loss
        it = 0
        for it in range(1, iters + 1):
            gth = self._on_potentials(grad)
            theta2 = {m: theta[m] - alpha * gth[m] for m in theta}
            mu2 = self._oracle(theta2, total)
            loss2, grad2 = self._loss_grad(mu2)
            dot = sum(float(np.vdot(grad[c], mu[c] - mu2[c])) for c in grad)
            if loss - loss2 >= 0.5 * alpha * dot:
                theta, mu, loss, grad = theta2, mu2, loss2, grad2
                if self.keep_beliefs:
                    cal = self._last_cal
                alpha *= 1.01
            else:
                alpha *= 0.5
            if tol is not None and it % TOL_BLOCK == 0:
                if block_start - loss <= tol * max(abs(loss), 1.0):
                    break
                block_start = loss
        self.theta = theta
        self._last_cal = None
        self._beliefs = cal
        return {"iterations": it, "loss": loss}

    def fit_accelerated(self, iters: int, tol: float | None = None, dtype=np.float64, grow: float = 1.0,
                        patience: int = 1) -> dict:
        """Accelerated mirror descent: the same update as :meth:`fit` taken from an extrapolated
        point (Nesterov / FISTA momentum in the potentials), with Armijo backtracking and an
        adaptive restart (momentum dropped whenever the loss goes up). Same minimiser as
        :meth:`fit`; on Adult it reaches in ~250 steps the loss plain mirror descent reaches in
        3000. Each step costs one or two calibrations. ``tol`` as in :meth:`fit`.

        ``dtype=np.float32`` calibrates the junction tree in single precision (potentials,
        marginals, loss and gradient stay float64): about half the memory traffic, for the
        per-round fits whose model only scores candidates.

        ``grow``: the step is multiplied by this after every accepted step (1, the default: it only
        shrinks, by backtracking; measured with 1.02: see the note at ``FINAL_TOL``). ``patience``: with ``tol``, stop after
        this many consecutive blocks of ``TOL_BLOCK`` steps below the tolerance (default 1)."""
        if self._structure is None:
            self._build()
        self._dtype = np.dtype(dtype)
        try:
            return self._fit_accelerated(iters, tol, grow, patience)
        finally:
            self._dtype = np.dtype(np.float64)

    def _fit_accelerated(self, iters: int, tol: float | None, grow: float = 1.0, patience: int = 1) -> dict:
        total = self.total
        stalled = 0
        alpha = 2.0 / (self.lipschitz * total)
        x_prev = self.theta
        y = x_prev
        mu_y = self._oracle(y, total)
        cal_y = getattr(self, "_last_cal", None) if self.keep_beliefs else None
        loss_y, grad_y = self._loss_grad(mu_y)
        loss_x, cal = loss_y, cal_y
        t = 1.0
        block_start = loss_x
        it = 0
        for it in range(1, iters + 1):
            gth = self._on_potentials(grad_y)
            for _ in range(60):  # backtracking: halve the step until the Armijo test passes
                x = {m: y[m] - alpha * gth[m] for m in y}
                mu_x = self._oracle(x, total)
                loss_new, grad_x = self._loss_grad(mu_x)
                dot = sum(float(np.vdot(grad_y[c], mu_y[c] - mu_x[c])) for c in grad_y)
                if loss_y - loss_new >= 0.5 * alpha * dot:
                    break
                alpha *= 0.5
            alpha *= grow  # let the step grow back after backtracking (default 1: it does not)
            cal_x = getattr(self, "_last_cal", None) if self.keep_beliefs else None
            if loss_new > loss_x:  # adaptive restart: continue from x without momentum
                t = 1.0
                beta = 0.0
            else:
                t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
                beta = (t - 1.0) / t_new
                t = t_new
            if beta == 0.0:
                y, mu_y, loss_y, grad_y = x, mu_x, loss_new, grad_x
            else:
                y = {m: x[m] + beta * (x[m] - x_prev[m]) for m in x}
                mu_y = self._oracle(y, total)
                loss_y, grad_y = self._loss_grad(mu_y)
            x_prev, loss_x, cal = x, loss_new, cal_x
            if tol is not None and it % TOL_BLOCK == 0:
                if block_start - loss_x <= tol * max(abs(loss_x), 1.0):
                    stalled += 1
                    if stalled >= patience:
                        break
                else:
                    stalled = 0
                block_start = loss_x
        self.theta = x_prev
        self._last_cal = None
        self._beliefs = cal
        return {"iterations": it, "loss": loss_x}

    def scoring_model(self) -> GraphicalModel:
        """The current model, built from the calibrated tables of the last fit when they were
        kept (``keep_beliefs``): no new calibration. Answers marginals like :meth:`model`."""
        if self._structure is None or self._beliefs is None:
            return self.model()
        probs, scales, total = self._beliefs
        self._beliefs = None  # the tables are scaled in place and handed over
        beliefs = [np.multiply(p, sc * total, out=p) for p, sc in zip(probs, scales)]
        return GraphicalModel.from_beliefs(
            self.domain, beliefs, total, cliques=self.tree.cliques, edges=self.tree.edges, tree=self.tree
        )

    def model(self, domain: dict[str, int] | None = None) -> GraphicalModel:
        """The fitted model; with ``domain`` (the same columns in another order) its tables have
        their axes in that order (one calibration, in that order)."""
        if self._structure is None:
            self._build()
        domain = self.domain if domain is None else domain
        cliques = [canonical(domain, c) for c in self.tree.cliques]
        return GraphicalModel(domain, dict(self.theta), self.total, cliques=cliques, edges=self.tree.edges)


# --------------------------------------------------------------------------- helpers
def _validate_data(data: pd.DataFrame, domain: dict[str, int]) -> dict[str, np.ndarray]:
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame of integer codes, got {type(data).__name__}")
    if len(data) == 0:
        raise DataError("the data has no rows")
    missing = [a for a in domain if a not in data.columns]
    if missing:
        raise DataError(f"the data has no column(s) {missing} named in the domain")
    codes = {}
    for a, n in domain.items():
        series = data[a]
        if series.isna().any():
            raise DataError(f"column {a!r} has missing values; AIM needs integer codes 0..{n - 1}")
        if pd.api.types.is_integer_dtype(series.dtype):
            col = series.to_numpy(dtype=np.int64)
        else:
            col = series.to_numpy()
        if not np.issubdtype(col.dtype, np.integer):
            if np.issubdtype(col.dtype, np.floating) and np.all(np.isfinite(col)) and np.all(col == np.round(col)):
                col = col.astype(np.int64)
            else:
                raise DataError(f"column {a!r} must hold integer codes 0..{n - 1} (dtype {col.dtype})")
        lo, hi = int(col.min()), int(col.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise DataError(f"column {a!r} has code {bad} outside its domain 0..{n - 1}")
        codes[a] = col.astype(np.int64)
    return codes


def _exact(codes: dict[str, np.ndarray], domain: dict[str, int], clique: Clique) -> np.ndarray:
    shape = [domain[a] for a in clique]
    idx = np.ravel_multi_index([codes[a] for a in clique], shape)
    return np.bincount(idx, minlength=math.prod(shape)).astype(float).reshape(shape)


def _answers_from_counter(counter, domain: dict[str, int], needed: list[Clique]) -> dict[Clique, np.ndarray]:
    """Exact answers from a counting function; checked for shape and integrality."""
    got = counter(list(needed))
    answers = {}
    for c in needed:
        a = got.get(c) if hasattr(got, "get") else None
        shape = tuple(domain[x] for x in c)
        if a is None or np.shape(a) != shape:
            raise DataError(f"the counting function gave no {shape} array for clique {list(c)}")
        a = np.asarray(a)
        if a.dtype.kind not in "iu" or (a < 0).any():
            raise DataError(f"the counting function gave non-count values for clique {list(c)}")
        answers[c] = a.astype(float)
    if answers and len({float(a.sum()) for a in answers.values()}) > 1:
        raise DataError("the counting function gave marginals with different totals")
    return answers


def _hypothetical_size(domain, cliques: list[Clique]) -> float:
    maxcl = triangulated_cliques(domain, cliques)
    return sum(cells(domain, c) for c in maxcl) * 8 / 2**20


# --------------------------------------------------------------------------- AIM
def run_aim(
    data: pd.DataFrame | Callable[[list[Clique]], Mapping[Clique, np.ndarray]],
    domain: dict[str, int],
    workload: Workload,
    rho: float,
    *,
    rng: np.random.Generator,
    noise: NoiseSource | None = None,
    max_model_size: float = 80.0,
    rounds: int | None = None,
    iters: int | None = None,
    final_iters: int = 1000,
    final_tol: float | None | str = "auto",
    callback: Callable[[AIMProgress], None] | None = None,
    engine: str = "numpy",
    fit: str = "fast",
) -> AIMResult:
    """Run AIM on ``data`` spending exactly ``rho``.

    data: a DataFrame of integer codes (columns = ``domain`` keys), counted here with numpy; or a
        counting function ``cliques -> {clique: exact int64 counts}`` (axes in the clique's order),
        e.g. :func:`ddssp.data.counting.count_marginals` bound to a table and schema. It is called
        once, with every candidate clique of the workload's downward closure and every one-way
        marginal, so a file is scanned once.

    rounds: T (default 16 * d); sets the per-round sigma and eps_em, must exceed d.
    iters: None = fast mode (warm-started, tolerance-stopped, at most ROUND_MAX_ITERS per round,
        or FAST_ROUND_MAX_ITERS accelerated steps with ``fit="fast"``);
        an int = exactly that many mirror-descent iterations per round (1000 = reference setting).
    final_iters: at most this many mirror-descent iterations (accelerated steps with
        ``fit="fast"``) for the final model (exactly this many when ``final_tol`` is None).
    final_tol: relative-loss tolerance of the final fit: stop once the loss decreases by less than
        ``final_tol * max(loss, 1)`` over ``TOL_BLOCK`` (10) iterations. "auto" (default) =
        ``FINAL_TOL`` (1e-3) in fast mode (``iters`` None) and None (no early stop: exactly
        ``final_iters``, the reference setting) when ``iters`` is given or ``engine="mbi"``.
        Deterministic either way.
    engine: "numpy" (default; never imports JAX) or "mbi" (mbi MirrorDescent for every fit).
    rng: randomness that is not DP noise (none is drawn today); it never reaches the noise.
    noise: the DP noise source (default :class:`~ddssp.dp.noise.SecureNoise`).
    fit: per-round estimation of the numpy engine. "fast" (default): each new measurement first
        gets a closed-form warm start (one iterative-proportional-fitting step, exact for a
        decomposable model) and the model used for scoring reuses the fit's calibrated tables.
        "legacy": as before issue 19 (mirror descent from the previous potentials only, model
        recalibrated for scoring), kept for before/after comparisons. With ``iters`` given (the
        reference setting) or ``engine="mbi"`` the loop is the legacy one whatever ``fit`` says.
    """
    t_start = time.perf_counter()
    rho = check_rho(rho)
    rng = make_rng(rng)
    noise = SecureNoise() if noise is None else noise
    if not isinstance(domain, dict) or not domain:
        raise WorkloadError("the domain is empty")
    domain = {str(a): int(n) for a, n in domain.items()}
    bad = [a for a, n in domain.items() if n < 1]
    if bad:
        raise WorkloadError(f"domain sizes must be >= 1; bad column(s) {bad}")
    workload = validate_workload(workload, domain)
    if max_model_size is None or not max_model_size > 0:
        raise WorkloadError(f"max_model_size must be a positive number of MB, got {max_model_size!r}")
    if engine not in ("numpy", "mbi"):
        raise WorkloadError(f"unknown estimation engine {engine!r} (use 'numpy' or 'mbi')")
    if fit not in ("fast", "legacy"):
        raise WorkloadError(f"unknown fit mode {fit!r} (use 'fast' or 'legacy')")
    fast = fit == "fast" and engine == "numpy" and iters is None  # forced iters: the reference loop
    # Internal axis order (issue 19): every table inside the loop has its axes in order of
    # increasing column size (ties: domain order), so the small axes are the outer ones and the
    # reductions of calibration (sums over a clique's other axes) run over long contiguous
    # stretches. Measured on the 71 MB junction tree of an Adult eps-4 run: one oracle (calibrate +
    # measured marginals) 201 ms in domain order, 88 ms in this order (float32: 152 -> 55 ms);
    # small trailing axes (binary columns last in the domain) made numpy's reductions 10x slower.
    # Everything returned (model, measurements, ledger entries) is in the caller's domain order.
    user_domain = domain
    domain = dict(sorted(domain.items(), key=lambda kv: (kv[1], list(user_domain).index(kv[0]))))
    d = len(domain)
    T = 16 * d if rounds is None else int(rounds)
    if T <= d:
        raise WorkloadError(
            f"rounds={T} is too small: the one-way initialisation alone uses d/T of 90% of the budget "
            f"with d={d} columns; give rounds > {d} (default 16*d = {16 * d})"
        )
    if iters is not None and int(iters) < 1:
        raise WorkloadError(f"iters must be a positive integer, got {iters!r}")
    if int(final_iters) < 1:
        raise WorkloadError(f"final_iters must be a positive integer, got {final_iters!r}")
    if isinstance(final_tol, str):
        if final_tol != "auto":
            raise WorkloadError(f"final_tol must be a non-negative number, None or 'auto', got {final_tol!r}")
        final_tol = FINAL_TOL if iters is None and engine == "numpy" else None
    elif final_tol is not None:
        if not (isinstance(final_tol, (int, float)) and math.isfinite(final_tol) and final_tol >= 0):
            raise WorkloadError(f"final_tol must be a non-negative number, None or 'auto', got {final_tol!r}")
        final_tol = float(final_tol)

    candidates: dict[Clique, float] = {}
    for r, w in downward_closure(workload).items():
        c = canonical(domain, r)
        candidates[c] = candidates.get(c, 0.0) + w if c in candidates else w
    for c in candidates:
        mb = cells(domain, c) * 8 / 2**20
        if mb > max_model_size:
            raise WorkloadError(
                f"marginal {list(c)} alone has {cells(domain, c):,} cells = {mb:.1f} MB, more than the "
                f"model size limit of {max_model_size:g} MB; drop it from the workload, cap the cells "
                f"per marginal, or raise max_model_size"
            )
    one_ways = [(a,) for a in user_domain]  # measured in the caller's column order
    needed = sorted(set(candidates) | set(one_ways), key=lambda c: (len(c), c))
    if not isinstance(data, pd.DataFrame) and callable(data):
        t0 = time.perf_counter()
        # the counter sees the cliques in the caller's column order (its documented interface)
        user_needed = {c: canonical(user_domain, c) for c in needed}
        got = _answers_from_counter(data, user_domain, list(user_needed.values()))
        answers = {c: _reorder(got[cu], cu, c) for c, cu in user_needed.items()}
    else:
        codes = _validate_data(data, domain)
        t0 = time.perf_counter()
        answers = {c: _exact(codes, domain, c) for c in needed}
    t_answers = time.perf_counter() - t0

    ledger = Ledger(rho)
    measurements: list[Measurement] = []
    sigma = math.sqrt(T / (2 * 0.9 * rho))
    eps_em = math.sqrt(8 * 0.1 * rho / T)

    est = _make_engine(engine, domain, keep_beliefs=fast)
    timings = {"answers": t_answers, "estimate": 0.0, "select": 0.0, "filter": 0.0}
    iters_log: list[int] = []

    def measure(c: Clique, sig: float, rnd: int, model_marginal: np.ndarray | None = None) -> None:
        # noise is drawn in the caller's axis order (what is released and what the ledger names);
        # the loop works on the same numbers in its internal order
        cu = canonical(user_domain, c)
        yu = ledger.measure(_reorder(answers[c], c, cu), sig, noise, clique=cu, round=rnd).astype(float)
        measurements.append(Measurement(cu, float(sig), yu, rnd))
        y = _reorder(yu, cu, c)
        est.add(c, y, sig)
        if fast:  # post-processing of y: a start point for the next fit
            mm = np.ones(y.shape) if model_marginal is None else model_marginal
            est.warm_start(c, mm, y, floor=WARM_FLOOR * sig)

    def estimate(n_iters: int | None) -> None:
        t = time.perf_counter()
        if n_iters is None and fast:
            out = est.fit_accelerated(FAST_ROUND_MAX_ITERS, tol=ROUND_TOL, dtype=FAST_ROUND_DTYPE)
        elif n_iters is None:
            out = est.fit(ROUND_MAX_ITERS, tol=ROUND_TOL)
        else:
            out = est.fit(int(n_iters))
        iters_log.append(out["iterations"])
        timings["estimate"] += time.perf_counter() - t

    for c in one_ways:
        measure(c, sigma, 0)
    estimate(iters)
    model = est.scoring_model() if fast else est.model()
    if callback is not None:
        callback(AIMProgress(0, T, ledger.spent, rho, None, sigma))

    bias_factor = math.sqrt(2 / math.pi)
    rnd = 0
    terminate = False
    annealed = 0
    while not terminate:
        rnd += 1
        remaining = rho - ledger.spent
        if remaining < 2 * (1 / (2 * sigma**2) + eps_em**2 / 8):
            eps_em = math.sqrt(8 * 0.1 * remaining)
            terminate = True
        used_after = ledger.spent + (0.1 * remaining if terminate else eps_em**2 / 8)
        used_after += (0.9 * remaining) if terminate else 1 / (2 * sigma**2)
        size_limit = max_model_size * used_after / rho

        t = time.perf_counter()
        measured_cliques = est.measured_maximal()
        free = set()
        for m in measured_cliques:
            free |= {c for c in candidates if set(c) <= set(m)}
        small = []
        for c in candidates:
            if c in free or _hypothetical_size(domain, measured_cliques + [c]) <= size_limit:
                small.append(c)
        timings["filter"] += time.perf_counter() - t

        t = time.perf_counter()
        # The measurement noise of this round is only known after the selection charge in the
        # final round; the score uses the sigma it will be measured with.
        sig_score = sigma if not terminate else math.sqrt(1 / (2 * 0.9 * remaining))
        scores, est_marg = [], {}
        for c in small:
            z = model.marginal(c)
            est_marg[c] = z
            n = z.size
            scores.append(candidates[c] * (np.abs(answers[c] - z).sum() - bias_factor * sig_score * n))
        sens = max(abs(candidates[c]) for c in small)
        k = ledger.select(scores, eps_em, sens, noise, round=rnd)
        timings["select"] += time.perf_counter() - t
        chosen = small[k]
        if terminate:
            sigma = math.sqrt(1 / (2 * (rho - ledger.spent)))
        measure(chosen, sigma, rnd, est_marg[chosen])
        if not terminate:  # the last measurement is fitted by the final estimation below
            estimate(iters)
            model = est.scoring_model() if fast else est.model()
            w = model.marginal(chosen)
            if np.abs(w - est_marg[chosen]).sum() <= bias_factor * sigma * w.size:
                sigma /= 2
                eps_em *= 2
                annealed += 1
        if callback is not None:
            callback(AIMProgress(rnd, T, ledger.spent, rho, canonical(user_domain, chosen), measurements[-1].sigma))

    t = time.perf_counter()
    if fast:
        out = est.fit_accelerated(int(final_iters), tol=final_tol)
    else:
        out = est.fit(int(final_iters), tol=final_tol)
    model = est.model(user_domain)  # calibrated once, in the caller's column order
    timings["final"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_start
    info = {
        "timings": timings,
        "iterations": iters_log,
        "final_iterations": out["iterations"],
        "settings": {
            "rho": rho,
            "rounds_T": T,
            "max_model_size": max_model_size,
            "iters": iters,
            "final_iters": int(final_iters),
            "final_tol": final_tol,
            "engine": engine,
            "fit": fit,
            "round_max_iters": ROUND_MAX_ITERS if iters is None else int(iters),
            "round_tol": ROUND_TOL if iters is None else None,
        },
        "annealed": annealed,
        "candidates": len(candidates),
        "model_size_mb": model.size_mb,
        "structure_changes": getattr(est, "structure_changes", None),
    }
    return AIMResult(model, measurements, ledger, workload, rnd, info)


def _reorder(arr: np.ndarray, attrs: Clique, target: Clique) -> np.ndarray:
    """``arr`` (axes ``attrs``) with its axes in the order ``target`` (same attributes)."""
    if attrs == target:
        return arr
    return np.ascontiguousarray(np.transpose(arr, [attrs.index(a) for a in target]))


def _in_domain_order(model: GraphicalModel, domain: dict[str, int]) -> GraphicalModel:
    """The same model (same potentials, same junction tree) with ``domain``'s column order: clique
    axes in that order, calibrated once more."""
    if list(model.domain) == list(domain):
        return model
    pots = dict(zip(model.cliques, model.log_potentials))
    cliques = [canonical(domain, c) for c in model.cliques]
    return GraphicalModel(domain, pots, model.total, cliques=cliques, edges=list(model.edges))


def _make_engine(engine: str, domain: dict[str, int], keep_beliefs: bool = False):
    return _NumpyEngine(domain, keep_beliefs=keep_beliefs) if engine == "numpy" else _MbiEngine(domain)


class _NumpyEngine(MirrorDescentNumpy):
    def measured_maximal(self) -> list[Clique]:
        return _maximal_subset(list(self.prec))


class _MbiEngine:
    """The reference path: ``mbi.estimation.MirrorDescent`` (JAX) on all measurements, warm-started
    from the previous model. Every new clique structure compiles a new XLA program (seconds per
    round); compiled programs are dropped after each fit (``jax.clear_caches``) so that memory
    maps do not pile up over a long run."""

    def __init__(self, domain: dict[str, int]):
        from ddssp.jaxconf import configure_jax

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
        c, y = _canonical_measurement(self.domain, clique, y)
        self.meas.append(self._LM(y.ravel(), c, float(sigma)))
        self.cliques.add(c)

    @property
    def total(self) -> float:
        return float(self._mvu(self.meas))

    def measured_maximal(self) -> list[Clique]:
        return _maximal_subset(list(self.cliques))

    def fit(self, iters: int, tol: float | None = None) -> dict:
        structure = frozenset(self.measured_maximal())
        if structure != self._last_structure:
            self.structure_changes += 1
            self._last_structure = structure
        self.mrf = self._MD().estimate(
            self.mdomain, self.meas, self.total, iters=int(iters), warm_start=self.mrf, tol=tol
        )
        self._jax.clear_caches()
        return {"iterations": int(iters), "loss": float("nan")}

    def model(self, domain: dict[str, int] | None = None) -> GraphicalModel:
        m = GraphicalModel.from_mbi(self.mrf)
        return m if domain is None else _in_domain_order(m, domain)
