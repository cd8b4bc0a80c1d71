"""The final fit's stopping rule on the measurements' noise (``move_tol``) and the ``watch`` hook."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from ddssp.marginals.aim_rounds import STRONG_SIGNAL
from ddssp.marginals.aim_settings import FINAL_MOVE_TOL, final_move_tolerance
from ddssp.marginals.estimation import MirrorDescentNumpy
from ddssp.marginals.mirror_descent import TOL_BLOCK, MirrorDescentOptions, mirror_descent

DOM = {"a": 4, "b": 3, "c": 5, "d": 2}
CLIQUES = [("a",), ("b",), ("c",), ("d",), ("a", "b"), ("b", "c"), ("c", "d")]


def _estimator(sigma: float, n: float = 1e6, seed: int = 0) -> MirrorDescentNumpy:
    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.full(math.prod(DOM.values()), 0.3)).reshape(list(DOM.values()))
    est = MirrorDescentNumpy(DOM)
    for c in CLIQUES:
        axes = tuple(i for i, a in enumerate(DOM) if a not in c)
        m = joint.sum(axis=axes) * n
        est.add(c, m + rng.normal(0, sigma, m.shape), sigma)
    return est


def _measured_marginals(est):
    model = est.model()
    return {c: model.marginal(c) for c in est.prec}


def test_noise_l1_is_the_expected_l1_error_of_the_pooled_measurements():
    est = _estimator(2.0)
    est.add(("a",), np.full(4, 1e6 / 4), 2.0)  # pooled with the first ("a",): sigma 2 / sqrt(2)
    cells = {c: math.prod(DOM[a] for a in c) for c in CLIQUES}
    want = sum(math.sqrt(2 / math.pi) * 2.0 * cells[c] for c in CLIQUES if c != ("a",))
    want += math.sqrt(2 / math.pi) * 2.0 / math.sqrt(2) * cells[("a",)]
    assert est.noise_l1() == pytest.approx(want, rel=1e-12)


def test_move_tol_stops_once_the_marginals_move_less_than_the_noise():
    """On a strong signal the movement rule stops well before the budget, where the loss rule with
    no tolerance runs it all; a further block from there moves the measured marginals by about the
    rule's limit, no more than a few times it."""
    full = _estimator(1.0)
    out_full = full.fit_accelerated(400, tol=None)
    assert out_full["iterations"] == 400
    est = _estimator(1.0)
    out = est.fit_accelerated(400, tol=None, move_tol=0.01)
    assert TOL_BLOCK < out["iterations"] < 400
    limit = 0.01 * est.noise_l1()
    before = _measured_marginals(est)
    est.fit_accelerated(TOL_BLOCK, tol=None)
    after = _measured_marginals(est)
    moved = sum(float(np.abs(after[c] - before[c]).sum()) for c in before)
    assert moved <= 5 * limit
    # the stopped fit is as close to the data as the noise allows: the full run's marginals differ
    # from it by far less than the noise's own L1 error
    ref = _measured_marginals(full)
    gap = sum(float(np.abs(ref[c] - after[c]).sum()) for c in ref)
    assert gap < 0.1 * est.noise_l1()


def test_move_tol_zero_or_none_leaves_the_fit_unchanged():
    a, b = _estimator(3.0), _estimator(3.0)
    oa = a.fit_accelerated(80, tol=1e-3)
    ob = b.fit_accelerated(80, tol=1e-3, move_tol=0.0)
    assert oa == ob
    for c in a.theta:
        np.testing.assert_array_equal(a.theta[c], b.theta[c])


def test_watch_sees_every_iteration_and_stops_the_run():
    est = _estimator(1.0)
    est._build()
    seen = []

    def watch(it, x):
        seen.append((it, x.loss))
        return it == 7

    from ddssp.marginals.estimation import _Objective

    res = mirror_descent(
        _Objective(est, est.total),
        est.theta,
        1.0 / (est.lipschitz * est.total),
        50,
        MirrorDescentOptions(momentum="heavy", grow=1.02, watch=watch),
    )
    assert res.iterations == 7 and [it for it, _ in seen] == list(range(1, 8))
    assert res.loss == seen[-1][1]


@pytest.mark.parametrize("ratio, strong", [(0.5, True), (2.0, False)])
def test_final_move_tolerance_only_where_the_noise_is_small_against_the_rows(ratio, strong):
    total = 1e6
    sig = ratio * STRONG_SIGNAL * total
    ms = [SimpleNamespace(sigma=sig / 4), SimpleNamespace(sigma=sig)]  # the noisiest decides
    assert final_move_tolerance(ms, total) == (FINAL_MOVE_TOL if strong else None)
    assert final_move_tolerance([], total) is None


def test_an_early_stop_goes_on_until_the_model_fits_its_measurements():
    """A fit stopped far from its optimum (5 steps) fails the release's model-fit check; the final
    fit's guard goes on until the statistic is under its early-stop limit, which is inside the
    check's bound, so the release it writes loads."""
    from ddssp.marginals.aim_settings import (
        early_stop_fit_limit,
        finish_early_stop,
        model_fit_bound,
        model_fit_statistic,
    )

    est = _estimator(1.0, seed=2)
    meas = [SimpleNamespace(clique=c, values=est.wsum[c] / est.prec[c], sigma=est.prec[c] ** -0.5) for c in CLIQUES]
    est.fit_accelerated(5, tol=None)
    stat, cells = model_fit_statistic(est.model(), meas)
    assert stat > model_fit_bound(cells)  # as stopped, a release of it would be refused
    model, more = finish_early_stop(est, meas, None, 1000)
    after, _ = model_fit_statistic(model, meas)
    assert 0 < more < 1000 and after <= early_stop_fit_limit(cells) < model_fit_bound(cells)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_guard_brings_a_strong_signal_fit_under_the_bound_within_its_budget(seed):
    """A billion rows, sigma 1, cells down to a millionth of the table (a thousand sigmas): cells whose
    mirror-descent rate is their tiny probability. From a fit stopped after 5 steps the guard goes on
    as one run (step size and momentum kept) and gets the fit statistic under its early-stop limit,
    inside the release check's bound, within 200 steps; restarted every 50 steps from the base step
    size it stayed orders of magnitude above it."""
    from ddssp.marginals.aim_settings import (
        early_stop_fit_limit,
        finish_early_stop,
        model_fit_bound,
        model_fit_statistic,
    )

    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.full(math.prod(DOM.values()), 0.2)).reshape(list(DOM.values()))
    joint[0, 0, 0, 0] = 1e-6  # a rare cell: a thousand sigmas at 1e9 rows
    joint /= joint.sum()
    est, meas = MirrorDescentNumpy(DOM), []
    for c in CLIQUES + [("a", "b"), ("b", "c")]:  # two cliques measured twice (pooled)
        axes = tuple(i for i, a in enumerate(DOM) if a not in c)
        y = joint.sum(axis=axes) * 1e9 + rng.normal(0, 1.0, [DOM[a] for a in c])
        est.add(c, y, 1.0)
        meas.append(SimpleNamespace(clique=c, values=y, sigma=1.0))
    est.fit_accelerated(5, tol=None)
    stat, cells = model_fit_statistic(est.model(), meas)
    assert stat > model_fit_bound(cells)
    model, more = finish_early_stop(est, meas, None, 200)
    after, _ = model_fit_statistic(model, meas)
    assert more <= 200 and after <= early_stop_fit_limit(cells) < model_fit_bound(cells)


def test_past_its_budget_the_guard_goes_on_to_the_files_check_or_refuses():
    """With no budget toward its own limit, the guard still brings the model under the release check's
    bound when it may take more steps (the file loads); with too few it refuses, so no file that would
    not load is written."""
    from ddssp.errors import DDSSPError
    from ddssp.marginals.aim_settings import finish_early_stop, model_fit_bound, model_fit_statistic

    def stopped():
        est = _estimator(1.0, seed=2)
        meas = [SimpleNamespace(clique=c, values=est.wsum[c] / est.prec[c], sigma=est.prec[c] ** -0.5) for c in CLIQUES]
        est.fit_accelerated(5, tol=None)
        return est, meas

    est, meas = stopped()
    stat, cells = model_fit_statistic(est.model(), meas)
    assert stat > model_fit_bound(cells)
    model, more = finish_early_stop(est, meas, None, 0, 1000)
    after, _ = model_fit_statistic(model, meas)
    assert 0 < more < 1000 and after <= model_fit_bound(cells)
    est, meas = stopped()
    with pytest.raises(DDSSPError, match="did not converge"):
        finish_early_stop(est, meas, None, 0, 1)


def _spy_dtypes(est, monkeypatch) -> list:
    """The calibration dtype of every accelerated fit ``est`` runs from now on."""
    seen = []
    real = est.fit_accelerated

    def spy(*args, **kw):
        seen.append(np.dtype(kw.get("dtype", np.float64)))
        return real(*args, **kw)

    monkeypatch.setattr(est, "fit_accelerated", spy)
    return seen


@pytest.mark.parametrize("sigma", [2.0, 20.0])
def test_fast_final_fit_starts_in_float32_where_it_is_far_below_the_noise_and_ends_in_float64(sigma, monkeypatch):
    """10^4 rows: float32's rounding of the counts (1e4 * 1.2e-7) is far below the noise, so the fit
    runs float32 steps, then at least one block of float64 steps. The model it ends with fits the
    measurements as well as a float64-only fit stopped by the same rules: the two differ on the
    measured marginals by a small share of the noise's own L1 error."""
    from ddssp.marginals.aim_settings import fast_final_fit

    meas = [SimpleNamespace(sigma=sigma)]
    est, ref = _estimator(sigma, n=1e4), _estimator(sigma, n=1e4)
    seen = _spy_dtypes(est, monkeypatch)
    steps = fast_final_fit(est, meas, 1000, 1e-3, 0.01)
    assert seen == [np.dtype(np.float32), np.dtype(np.float64)]
    assert steps >= TOL_BLOCK
    ref.fit_accelerated(1000, tol=1e-3, move_tol=0.01)
    got, want = _measured_marginals(est), _measured_marginals(ref)
    gap = sum(float(np.abs(got[c] - want[c]).sum()) for c in want)
    assert gap < 0.05 * est.noise_l1()
    assert abs(est.loss() - ref.loss()) <= 1e-2 * ref.loss()


def test_fast_final_fit_stays_in_float64_where_float32_rounding_reaches_the_noise(monkeypatch):
    """10^9 rows at noise scale 1: float32 rounds counts by ~100, so every step is float64, and the
    fit is the plain accelerated fit, step for step."""
    from ddssp.marginals.aim_settings import fast_final_fit

    est, ref = _estimator(1.0, n=1e9), _estimator(1.0, n=1e9)
    seen = _spy_dtypes(est, monkeypatch)
    steps = fast_final_fit(est, [SimpleNamespace(sigma=1.0)], 300, 1e-3, 0.01)
    assert seen == [np.dtype(np.float64)]
    assert steps == ref.fit_accelerated(300, tol=1e-3, move_tol=0.01)["iterations"]
    for c in est.theta:
        np.testing.assert_array_equal(est.theta[c], ref.theta[c])
