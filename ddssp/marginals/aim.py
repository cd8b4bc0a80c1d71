"""AIM (McKenna et al. 2022): select - measure - reconstruct, under a zCDP budget.

The only step of ddssp that touches the sensitive data. The initial round charges for exactly the
one-way marginals it measures.

How a run goes (:func:`run_aim`):

- Exact answers of every candidate marginal are computed once, up front: numpy ``bincount`` on a
  codes DataFrame, or one scan of a table by the counting layer (:mod:`ddssp.data.counting`); see
  :mod:`ddssp.marginals.aim_answers`.
- Every round selects a clique (:func:`select_round`: exponential mechanism, scores from numpy
  marginals of the current model) and measures it (:func:`measure_clique`: discrete Gaussian noise);
  the model is then re-estimated by mirror descent (:mod:`ddssp.marginals.estimation`) warm-started
  from the previous potentials. When the noise scale is small against the number of rows (strong
  signal: many rows or a large budget), a round selects and measures several column-disjoint
  cliques from the same model before the one fit (:func:`run_rounds`,
  :func:`~ddssp.marginals.aim_rounds.batch_size`), so that the number of fits, each as costly as the
  model is large, stays near ``fits_for(T)`` however strong the signal.
- In the default fast mode each new measurement first gets a closed-form warm start (one
  iterative-proportional-fitting step, :meth:`MirrorDescentNumpy.warm_start`, the exact decomposable
  estimate when the clique joins the junction tree as a leaf); rounds run at most
  ``FAST_ROUND_MAX_ITERS`` accelerated steps with float32 calibrations, and the model that scores
  candidates reuses the fit's calibrated tables. The final fit (float32 first where that is far below
  the noise, then float64: :func:`~ddssp.marginals.aim_settings.fast_final_fit`) is warm-started from
  the last round's potentials, stopped on ``FINAL_TOL`` or, when the noise is small against the table,
  once its steps move the measured marginals by far less than their noise (``final_move_tolerance``).
- Every table inside the loop has its axes in order of increasing column size, so the reductions of
  calibration run over long contiguous stretches (faster than domain order on large trees);
  everything returned is in the caller's order.

Given a regression target Y (``target``), the run starts with a first phase that measures Y's
one-way marginal and every pair (Y, X), one Gaussian measurement each at one noise scale, with
``settings.target_share`` of the budget (:func:`measure_target_phase`): a regression on Y then rests
on a measured pair for every feature. Those measurements are recorded in round 0 with the one-way
marginals of the columns no pair covers; the adaptive rounds spend the rest on the whole workload,
their model estimated from every measurement, the first phase's included.

The run's parameters and their defaults are :class:`~ddssp.marginals.aim_settings.AIMSettings`;
the budget of each round is :mod:`ddssp.marginals.aim_rounds`.

Kept for tests and benchmarks only (no default uses them): ``fit="legacy"`` (plain mirror descent
per round, model recalibrated for scoring; ``python -m ddssp.bench.aim --fit legacy``), a fixed
``iters`` per round (the reference setting, which also runs the legacy loop) and ``engine="mbi"``
(every fit on ``mbi.estimation.MirrorDescent``, the estimation reference).

Privacy: every noisy release is run by one :class:`~ddssp.dp.ChargedMechanisms`, which charges the
run's :class:`~ddssp.dp.Ledger` before it draws from ``noise`` (:class:`~ddssp.dp.noise.SecureNoise`,
OpenDP's exact samplers, unless a test passes the insecure seeded source): discrete Gaussian noise
on integer counts, Gumbel noisy max for selection. Each first-phase measurement charges 1/(2 sigma_Y^2),
their sum the target share of the budget; each regular round eps_em^2/8 (selection) + 1/(2 sigma^2)
(measurement); the last round spends exactly what remains, so the ledger total equals the budget.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ddssp.dp import ChargedMechanisms, Ledger, check_rho, make_rng
from ddssp.dp.noise import NoiseSource, SecureNoise
from ddssp.errors import WorkloadError
from ddssp.marginals.aim_answers import answers_from_counter, exact_marginal, validate_codes
from ddssp.marginals.aim_rounds import RoundBudget, RoundPlan, batch_size, may_anneal, plan_round
from ddssp.marginals.aim_settings import (
    DEFAULT_TARGET_SHARE,
    FINISH_ITERS_FACTOR,
    LOADABLE_ITERS_FACTOR,
    AIMSettings,
    fast_final_fit,
    final_move_tolerance,
    finish_early_stop,
    fits_for,
    public_settings,
    settings_from,
)
from ddssp.marginals.aim_settings import FINAL_TOL as FINAL_TOL  # re-exported (ddssp.estimators.ddssp_intervals)
from ddssp.marginals.aim_target import (
    check_target_phase,
    first_phase_share,
    pair_sigma,
    target_cliques,
    target_columns,
)
from ddssp.marginals.estimation import MbiEngine, MirrorDescentNumpy, make_engine  # noqa: F401 (re-exported)
from ddssp.marginals.mirror_descent import TOL_BLOCK  # noqa: F401 (re-exported)
from ddssp.marginals.model import GraphicalModel
from ddssp.marginals.model_size import SizeFilter
from ddssp.marginals.named_tables import canonical
from ddssp.marginals.recycled import add_recycled, round_zero
from ddssp.marginals.threads import one_blas_thread
from ddssp.marginals.workload import Workload, inside_measured, validate_workload, workload_candidates
from ddssp.types import Clique, Domain

#: Legacy loop: at most this many plain mirror-descent iterations per round, stopping early when
#: the loss improves by less than ``ROUND_TOL`` (relative) over ``TOL_BLOCK`` iterations.
ROUND_MAX_ITERS = 250
ROUND_TOL = 1e-4
#: Fast loop: at most this many accelerated steps per round.
FAST_ROUND_MAX_ITERS = 10
#: Fast loop: precision of the per-round calibrations (the final fit ends in float64: ``fast_final_fit``).
FAST_ROUND_DTYPE = np.float32
#: Up to this many candidates every one is sized each round and only the allowed ones are scored
#: (cheap for narrow tables); beyond it, the selection sizes only the candidates it needs
#: (:meth:`~ddssp.dp.charged.ChargedMechanisms.select` with ``allowed``) and every candidate is scored.
SIZE_EVERY = 1000
#: Warm start (fast loop): noisy cells below ``WARM_FLOOR * sigma`` count as that much in the
#: closed-form start point (the log of a non-positive count is undefined).
WARM_FLOOR = 0.1


@dataclass
class Measurement:
    """One noisy marginal.

    Attributes
    ----------
    clique : tuple of str
        The columns measured.
    sigma : float
        The noise scale: ``values`` = exact counts + discrete Gaussian noise N_Z(0, sigma^2) per cell.
    values : numpy.ndarray
        The noisy counts, shaped like the marginal (axes in the order of ``clique``).
    round : int
        The AIM round that measured it (0: the one-way marginals).
    """

    clique: tuple[str, ...]
    sigma: float
    values: np.ndarray
    round: int


@dataclass
class AIMProgress:
    """What :func:`run_aim` reports to its callback.

    Attributes
    ----------
    round : int
        The round just ended (round 0: the one-way marginals).
    max_rounds : int
        The round count the per-round budget was sized for; the run can end sooner or later than that.
    rho_spent, rho_budget : float
        zCDP spent so far, and the run's budget.
    clique : tuple or None
        The clique measured this round.
    sigma : float
        The noise scale of that measurement.
    phase : str
        What starts or just ended: ``"counting"`` before the exact marginals are counted (nothing
        spent yet), ``"round"`` after every round, ``"final"`` before the final estimation on all
        measurements (often the longest step).
    """

    round: int
    max_rounds: int
    rho_spent: float
    rho_budget: float
    clique: tuple | None
    sigma: float
    phase: str = "round"


@dataclass
class AIMResult:
    """Outcome of :func:`run_aim`.

    Attributes
    ----------
    model : GraphicalModel
        The fitted model.
    measurements : list of Measurement
        The noisy measurements.
    ledger : Ledger
        The ledger that charged them.
    workload : Workload
        The workload the run served.
    rounds : int
        The number of rounds run (a round that measured several cliques counts once per clique, as
        its ledger entries do).
    info : dict
        Diagnostics: timings, iteration counts, the number of per-round ``fits``, the cliques each
        round measured (``batches``), the public ``settings``.
    """

    model: GraphicalModel
    measurements: list[Measurement]
    ledger: Ledger
    workload: Workload
    rounds: int
    info: dict = field(default_factory=dict)


@dataclass
class _Run:
    """What the steps of one :func:`run_aim` share (fixed for the run, except the measurements,
    the estimation engine and the counters they append to)."""

    domain: Domain  # internal order: increasing column size
    user_domain: dict[str, int]  # the caller's order: what is released
    answers: dict[Clique, np.ndarray]
    candidates: dict[Clique, float]
    mech: ChargedMechanisms  # the ledger and the noise: charges, then draws
    est: Any
    settings: AIMSettings
    sizes: SizeFilter | None = None
    measurements: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    iters_log: list = field(default_factory=list)
    report: Callable[[AIMProgress], None] = lambda progress: None
    rounds_T: int = 0
    max_fits: int = 0  # the per-round fits a run should take at most (several measurements a round beyond)
    batches: list = field(default_factory=list)  # the number of cliques each round measured

    @property
    def rho(self) -> float:
        """The run's zCDP budget."""
        return self.mech.ledger.rho_budget

    def progress(self, rnd: int, clique: Clique | None, sigma: float, phase: str = "round") -> None:
        """Report the run's progress to the caller's callback.

        Parameters
        ----------
        rnd : int
            The round.
        clique : tuple or None
            The clique just measured (caller's column order).
        sigma : float
            Its noise scale.
        phase : str
            See :class:`AIMProgress`.
        """
        ledger = self.mech.ledger
        self.report(AIMProgress(rnd, self.rounds_T, ledger.spent, ledger.rho_budget, clique, sigma, phase=phase))


# --------------------------------------------------------------------------- AIM
def measure_clique(run: _Run, c: Clique, sigma: float, rnd: int, model_marginal: np.ndarray | None = None) -> None:
    """Measure the exact marginal on ``c`` with Gaussian noise of scale ``sigma`` (charged to the
    ledger), record it and give it to the estimation engine.

    Parameters
    ----------
    run : _Run
        The run's shared state.
    c : tuple of str
        The clique, in the run's internal column order.
    sigma : float
        Noise scale.
    rnd : int
        Round number (recorded with the measurement and the ledger entry).
    model_marginal : numpy.ndarray or None
        The current model's marginal on ``c`` (fast loop: the warm start's reference; None: uniform).
    """
    # noise is drawn in the caller's axis order (what is released and what the ledger names);
    # the loop works on the same numbers in its internal order
    cu = canonical(run.user_domain, c)
    yu = run.mech.measure(_reorder(run.answers[c], c, cu), sigma, clique=cu, round=rnd).astype(float)
    run.measurements.append(Measurement(cu, float(sigma), yu, rnd))
    y = _reorder(yu, cu, c)
    run.est.add(c, y, sigma)
    if run.settings.fast:  # post-processing of y: a start point for the next fit
        mm = np.ones(y.shape) if model_marginal is None else model_marginal
        run.est.warm_start(c, mm, y, floor=WARM_FLOOR * sigma)


def estimate_round(run: _Run) -> GraphicalModel:
    """Re-estimate the model after a round's measurement.

    Parameters
    ----------
    run : _Run
        The run's shared state (settings, estimation engine, logs).

    Returns
    -------
    GraphicalModel
        The model that scores the next candidates.
    """
    t = time.perf_counter()
    s, est = run.settings, run.est
    if s.fast:
        out = est.fit_accelerated(FAST_ROUND_MAX_ITERS, tol=ROUND_TOL, dtype=FAST_ROUND_DTYPE)
    elif s.iters is None:
        out = est.fit(ROUND_MAX_ITERS, tol=ROUND_TOL)
    else:
        out = est.fit(int(s.iters))
    run.iters_log.append(out["iterations"])
    run.timings["estimate"] += time.perf_counter() - t
    return est.scoring_model() if s.fast else est.model()


def select_round(
    run: _Run, model: GraphicalModel, plan: RoundPlan, rnd: int, exclude: set[Clique] | frozenset = frozenset()
) -> tuple[Clique, np.ndarray]:
    """Choose the next clique by the exponential mechanism (charged to the ledger, then drawn).

    Candidates are those already inside a measured clique or small enough for ``plan.size_limit``;
    each scores its workload weight times (L1 error of the model's marginal - the error the noise
    alone would make). With at most :data:`SIZE_EVERY` candidates all are sized and the allowed ones
    scored. With more, every candidate is scored but the model size is computed only for the
    candidates the selection needs: the exponential mechanism runs on the allowed candidates by
    redrawing over all of them (see :meth:`~ddssp.dp.charged.ChargedMechanisms.select`), and its
    sensitivity, the largest weight of an allowed candidate, is found from the heaviest weights down.

    Parameters
    ----------
    run : _Run
        The run's shared state (candidates, exact answers, charged mechanisms).
    model : GraphicalModel
        The current model.
    plan : RoundPlan
        The round's charges.
    rnd : int
        The round number, for the ledger.
    exclude : set of tuple of str
        Candidates not to select (they overlap a clique chosen earlier in the same round), unless
        no other candidate is left.

    Returns
    -------
    clique : tuple of str
        The chosen candidate.
    marginal : numpy.ndarray
        The model's marginal on it (before it is measured).
    """
    t = time.perf_counter()
    candidates = run.candidates
    cands = [c for c in candidates if c not in exclude] or list(candidates)
    measured = run.est.measured_maximal()
    free = inside_measured(measured, candidates)
    if len(cands) <= SIZE_EVERY:
        # few candidates: size them all, then score only the allowed ones
        sizes = run.sizes.sizes(measured, [c for c in cands if c not in free])
        cands = [c for c in cands if c in free or sizes[c] <= plan.size_limit]
        allowed = None
        sens = max(abs(candidates[c]) for c in cands)
    else:
        fits: dict[Clique, bool] = {}

        def allowed(c: Clique) -> bool:
            if c in free:
                return True
            if c not in fits:
                fits[c] = run.sizes.sizes(measured, [c])[c] <= plan.size_limit
            return fits[c]

        by_weight: dict[float, list[Clique]] = {}
        for c in cands:
            by_weight.setdefault(abs(candidates[c]), []).append(c)
        # the heaviest weight with an allowed candidate (those inside a measured clique first: no sizing)
        sens = next(
            w
            for w in sorted(by_weight, reverse=True)
            if any(c in free for c in by_weight[w]) or any(map(allowed, by_weight[w]))
        )
    run.timings["filter"] += time.perf_counter() - t

    t = time.perf_counter()
    bias_factor = math.sqrt(2 / math.pi)
    marginals = model.marginals(cands)
    scores = [
        candidates[c] * (np.abs(run.answers[c] - z).sum() - bias_factor * plan.sigma_score * z.size)
        for c, z in zip(cands, marginals)
    ]
    if allowed is None:  # every candidate left is allowed (sized above)
        k = run.mech.select(scores, plan.eps_em, sens, round=rnd)
    else:
        k = run.mech.select(scores, plan.eps_em, sens, round=rnd, allowed=lambda i: allowed(cands[i]))
    run.timings["select"] += time.perf_counter() - t
    return cands[k], model.marginal(cands[k])  # as measured alone: the warm start does not depend on batching


def _check_domain(domain) -> dict[str, int]:
    if not isinstance(domain, dict) or not domain:
        raise WorkloadError("the domain is empty")
    domain = {str(a): int(n) for a, n in domain.items()}
    bad = [a for a, n in domain.items() if n < 1]
    if bad:
        raise WorkloadError(f"domain sizes must be >= 1; bad column(s) {bad}")
    return domain


@one_blas_thread
def run_aim(
    data: pd.DataFrame | Callable[[list[Clique]], Mapping[Clique, np.ndarray]],
    domain: Domain,
    workload: Workload,
    rho: float,
    *,
    rng: np.random.Generator,
    noise: NoiseSource | None = None,
    settings: AIMSettings | None = None,
    callback: Callable[[AIMProgress], None] | None = None,
    target: str | Sequence[str] | None = None,
    prior: Sequence[Any] = (),
    **options: Any,
) -> AIMResult:
    """Run AIM on ``data`` spending exactly ``rho``.

    Parameters
    ----------
    data : pandas.DataFrame or callable
        A DataFrame of integer codes (columns = ``domain`` keys), counted here with numpy; or a
        counting function ``cliques -> {clique: exact int64 counts}`` (axes in the clique's order),
        e.g. :func:`ddssp.data.counting.count_marginals` bound to a table and schema. It is called
        once, with every candidate clique of the workload's downward closure and every one-way
        marginal, so a file is scanned once.
    domain : dict
        ``{column: number of codes}``; its order is the order of everything returned.
    workload : Workload
        Weighted cliques the model should answer well.
    rho : float
        zCDP budget, spent exactly.
    rng : numpy.random.Generator
        Randomness that is not DP noise (none is drawn today); it never reaches the noise.
    noise : NoiseSource or None
        The DP noise source (default :class:`~ddssp.dp.noise.SecureNoise`).
    settings : AIMSettings or None
        The run's parameters; the same fields may be given as keywords instead (``max_model_size``,
        ``rounds``, ``iters``, ``final_iters``, ``final_tol``, ``engine``, ``fit``), not both.
    callback : callable or None
        Called with an :class:`AIMProgress` when counting starts, after every round and before the
        final estimation (see its ``phase``).
    target : str, sequence of str or None
        Regression target column(s): a first phase measures each one's one-way marginal and its
        pair with every other column, with ``settings.target_share`` of ``rho``
        (:func:`measure_target_phase`). None: no first phase.
    prior : sequence of RecycledMeasurement
        Noisy one-way marginals paid for before AIM (:mod:`ddssp.marginals.recycled`): fitted with
        AIM's measurements from the first fit on, charged nothing here, not in the result's measurements.
        Round 0 does not measure again the columns they cover (:func:`~ddssp.marginals.recycled.round_zero`).
    **options
        The fields of :class:`AIMSettings`, instead of ``settings``.

    Returns
    -------
    AIMResult
    """
    t_start = time.perf_counter()
    s = settings_from(settings, options)
    rho = check_rho(rho)
    rng = make_rng(rng)
    noise = SecureNoise() if noise is None else noise
    user_domain = _check_domain(domain)
    workload = validate_workload(workload, user_domain)
    # internal order: increasing column size (ties: domain order), so the small axes are the outer ones
    domain = dict(sorted(user_domain.items(), key=lambda kv: (kv[1], list(user_domain).index(kv[0]))))
    T = s.rounds_for(len(domain))
    final_tol = s.final_tolerance()
    cap = s.model_size_for(len(domain))
    candidates = workload_candidates(workload, domain, cap)
    first = target_cliques(user_domain, target_columns(target, user_domain))  # the caller's column order
    check_target_phase(first, user_domain, cap)
    covered = {a for c in first for a in c}
    one_ways = [(a,) for a in user_domain if a not in covered]  # measured in the caller's column order
    one_ways = round_zero(one_ways, prior, user_domain, total_known=bool(first))
    report = callback if callback is not None else _no_report
    report(AIMProgress(0, T, 0.0, rho, None, math.nan, phase="counting"))

    t0 = time.perf_counter()
    needed = set(candidates) | {canonical(domain, c) for c in first + one_ways}
    answers = count_answers(data, user_domain, domain, sorted(needed, key=lambda c: (len(c), c)))
    ledger = Ledger(rho)
    run = _Run(
        domain,
        user_domain,
        answers,
        candidates,
        ChargedMechanisms(ledger, noise),
        make_engine(s.engine, domain, keep_beliefs=s.fast),
        s,
        sizes=SizeFilter(domain),
        timings={"answers": time.perf_counter() - t0, "estimate": 0.0, "select": 0.0, "filter": 0.0},
        report=report,
        rounds_T=T,
        max_fits=fits_for(T) if s.fast else 0,
    )
    add_recycled(run.est, prior)
    rho_adaptive, share = rho, None
    if first:
        share = measure_target_phase(run, [canonical(domain, c) for c in first], rho)
        rho_adaptive = rho - share * rho
    budget = RoundBudget(math.sqrt(T / (2 * 0.9 * rho_adaptive)), math.sqrt(8 * 0.1 * rho_adaptive / T))
    rnd, annealed = run_rounds(run, budget, one_ways, cap)
    run.progress(rnd, None, math.nan, phase="final")
    model, final_iterations = final_fit(run, final_tol)
    run.timings["total"] = time.perf_counter() - t_start
    info = {
        "timings": run.timings,
        "iterations": run.iters_log,
        "final_iterations": final_iterations,
        "settings": public_settings(s, (rho, T, cap, final_tol), first, (ROUND_MAX_ITERS, ROUND_TOL), share),
        "annealed": annealed,
        "candidates": len(candidates),
        "model_size_mb": model.size_mb,
        "structure_changes": run.est.structure_changes,
        "fits": len(run.iters_log),
        "batches": run.batches,
    }
    return AIMResult(model, run.measurements, ledger, workload, rnd, info)


def _no_report(progress: AIMProgress) -> None:
    """The callback of a run that has none."""


def count_answers(data: Any, user_domain: dict[str, int], domain: Domain, needed: list[Clique]) -> dict:
    """The exact answers of every clique AIM may measure, counted once, axes in the internal order.

    Parameters
    ----------
    data : pandas.DataFrame or callable
        Integer codes, or a counting function (see :func:`run_aim`); the function sees the cliques
        in the caller's column order (its documented interface).
    user_domain : dict
        The caller's domain (its column order).
    domain : dict
        The same domain in the run's internal column order.
    needed : list of tuple of str
        The cliques, in the internal column order.

    Returns
    -------
    dict
        ``{clique: exact counts (float)}``.

    Raises
    ------
    DataError
        For data that is not integer codes of the domain, or a counting function's bad answer.
    """
    if not isinstance(data, pd.DataFrame) and callable(data):
        user_needed = {c: canonical(user_domain, c) for c in needed}
        got = answers_from_counter(data, user_domain, list(user_needed.values()))
        return {c: _reorder(got[cu], cu, c) for c, cu in user_needed.items()}
    codes = validate_codes(data, domain)
    return {c: exact_marginal(codes, domain, c) for c in needed}


def measure_target_phase(run: _Run, first: list[Clique], rho: float) -> float:
    """The first phase of a run given a target: every clique of ``first`` measured once (round 0).

    The target's one-way marginals come first, at the noise of ``settings.target_share`` of ``rho``;
    the pairs too when a share is given. Without one, the share is the default raised for a small
    table (:func:`~ddssp.marginals.aim_target.first_phase_share` of the one-ways' noisy total), and
    the pairs spend what the one-ways leave of it.

    Parameters
    ----------
    run : _Run
        The run's shared state.
    first : list of tuple of str
        The target's one-way marginals and pairs (:func:`target_cliques`), in the internal column order.
    rho : float
        AIM's zCDP budget.

    Returns
    -------
    float
        The share of ``rho`` the phase spent.
    """
    given = run.settings.target_share
    share = DEFAULT_TARGET_SHARE if given is None else given
    sigma = math.sqrt(len(first) / (2 * share * rho))
    ones = [c for c in first if len(c) == 1]
    for c in ones:
        measure_clique(run, c, sigma, 0)
    pairs = len(first) - len(ones)
    chosen = share
    if given is None and pairs:  # the table's size: the noisy total of the one-ways just measured
        rows = float(np.mean([m.values.sum() for m in run.measurements[-len(ones) :]]))
        chosen = first_phase_share(rows, sigma, share)
    pair = sigma if chosen == share else pair_sigma(pairs, len(ones), sigma, chosen * rho)
    for c in first[len(ones) :]:
        measure_clique(run, c, pair, 0)
    return chosen


def run_rounds(run: _Run, budget: RoundBudget, one_ways: list[Clique], max_model_size: float) -> tuple[int, int]:
    """Round 0 (the one-way marginals not measured yet), then select-measure-estimate rounds until the
    budget is spent.

    A round selects and measures one clique, or several when the noise is small against the table
    (:func:`~ddssp.marginals.aim_rounds.batch_size`): each selection is its own charged exponential
    mechanism on the scores of the same model, among the candidates that share no column with a
    clique the round already chose (while any is left); the model is fitted once after the round. Every measurement is numbered as a
    round of its own (its ledger entries and the returned count); ``run.fits`` counts the fits.

    After a round whose measurements moved the model's marginals by no more than the noise would
    (summed over the round's cliques), the regular budget is annealed (:meth:`RoundBudget.annealed`)
    while what remains pays for ``settings.min_rounds_left`` rounds after it (``may_anneal``).
    The last round spends exactly what remains; its measurement is left to the final fit.

    Parameters
    ----------
    run : _Run
        The run's shared state.
    budget : RoundBudget
        The regular round's budget at the start.
    one_ways : list of tuple of str
        The one-way marginals to measure, in the caller's column order (every column's, unless a
        target phase covered some).
    max_model_size : float
        The model size limit (MB) at the full budget.

    Returns
    -------
    rounds : int
        The last round's number.
    annealed : int
        How many times the budget was annealed.
    """
    for c in one_ways:
        measure_clique(run, c, budget.sigma, 0)
    model = estimate_round(run)
    run.progress(0, None, budget.sigma)
    ledger, rho = run.mech.ledger, run.rho
    bias_factor = math.sqrt(2 / math.pi)
    rnd = annealed = 0
    last = False
    while not last:
        k = _batch(run, budget, rho - ledger.spent)
        batch: list[tuple[Clique, np.ndarray, float]] = []
        taken: set[Clique] = set()
        while len(batch) < k and not last and not taken.issuperset(run.candidates):
            rnd += 1
            plan = plan_round(budget, rho, ledger.spent, max_model_size)
            last = plan.last
            chosen, before = select_round(run, model, plan, rnd, exclude=taken)
            sigma = math.sqrt(1 / (2 * (rho - ledger.spent))) if last else budget.sigma
            measure_clique(run, chosen, sigma, rnd, before)
            batch.append((chosen, before, sigma))
            # the round's cliques share no column: each warm start is a step from the same model,
            # and two steps on overlapping cliques would count their shared columns twice
            taken.update(c for c in run.candidates if not set(c).isdisjoint(chosen))
            run.progress(rnd, canonical(run.user_domain, chosen), sigma)
        run.batches.append(len(batch))
        if not last:  # the last measurement is fitted by the final estimation
            model = estimate_round(run)
            moved = sum(float(np.abs(model.marginal(c) - b).sum()) for c, b, _ in batch)
            stalled = moved <= sum(bias_factor * sg * b.size for _, b, sg in batch)
            if stalled and may_anneal(budget, rho - ledger.spent, run.settings.anneal_floor):
                budget = budget.annealed()
                annealed += 1
    return rnd, annealed


def _batch(run: _Run, budget: RoundBudget, remaining: float) -> int:
    """The number of cliques the next round measures (:func:`~ddssp.marginals.aim_rounds.batch_size`)."""
    fits_left = run.max_fits - len(run.iters_log)
    return batch_size(budget.sigma, run.est.total, remaining / budget.cost, fits_left)


def final_fit(run: _Run, final_tol: float) -> tuple[GraphicalModel, int]:
    """The final estimation on every measurement, calibrated once in the caller's column order.

    Parameters
    ----------
    run : _Run
        The run's shared state (its ``timings["final"]`` is set).
    final_tol : float
        The fit's stopping tolerance.

    Returns
    -------
    model : GraphicalModel
        The released model.
    iterations : int
        The fit's iterations.
    """
    t = time.perf_counter()
    s, est = run.settings, run.est
    move_tol = final_move_tolerance(run.measurements, est.total) if s.fast else None
    if s.fast:
        steps = fast_final_fit(est, run.measurements, int(s.final_iters), final_tol, move_tol)
    else:
        steps = int(est.fit(int(s.final_iters), tol=final_tol)["iterations"])
    if move_tol is not None:  # an early stop must leave a model that fits its measurements
        extra = (FINISH_ITERS_FACTOR * int(s.final_iters), LOADABLE_ITERS_FACTOR * int(s.final_iters))
        model, more = finish_early_stop(est, run.measurements, run.user_domain, *extra)  # a file must load
        steps += more
    else:
        model = est.model(run.user_domain)
    run.timings["final"] = time.perf_counter() - t
    return model, steps


def _reorder(arr: np.ndarray, attrs: Clique, target: Clique) -> np.ndarray:
    """``arr`` (axes ``attrs``) with its axes in the order ``target`` (same attributes)."""
    if attrs == target:
        return arr
    return np.ascontiguousarray(np.transpose(arr, [attrs.index(a) for a in target]))
