"""The DP-noise bootstrap's re-estimation (:class:`ddssp.estimators.bootstrap.MeasurementRefit`).

One seeded AIM release (the ci-coverage population, 20,000 rows, eps 1) for the module; every
randomness below is seeded, so the assertions are deterministic (no false-alarm rate to state)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ddssp.bench import ci_coverage as cc
from ddssp.errors import DDSSPError
from ddssp.estimators.bootstrap import TOL_BLOCK, MeasurementRefit, bootstrap_models
from ddssp.pipeline import ReadOptions, release


@pytest.fixture(scope="module")
def rel():
    codes = cc.sample_codes(cc.population(), 20000, np.random.default_rng(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release(codes, cc.schema(), eps=1.0, seed=7, insecure_seed=7, read=ReadOptions(encoded=True))


@pytest.fixture(scope="module")
def refit(rel):
    return MeasurementRefit(rel.model, list(rel.measurements))


def test_refit_of_the_released_marginals_returns_the_released_model(rel, refit):
    """A redraw without noise (y* = the released model's own marginals) is fitted exactly by the
    released model, so the warm-started re-estimation must stay there."""
    ybar = {c: refit.mu0[c].copy() for c in refit.cliques}
    model, info = refit.refit(ybar, refit.total0, iters=40, alpha=refit.step_size(ybar, refit.total0))
    assert info["loss"] <= info["start_loss"] <= 1e-12 * refit.total0
    for c in refit.cliques:
        np.testing.assert_allclose(model.marginal(c), rel.model.marginal(c), rtol=1e-9, atol=1e-9 * refit.total0)


def test_tolerance_stop(refit):
    ybar, total = refit.draw(np.random.default_rng(0))
    alpha = refit.step_size(ybar, total)
    _, full = refit.refit(ybar, total, iters=200, alpha=alpha)
    _, early = refit.refit(ybar, total, iters=200, alpha=alpha, tol=1e-2)
    _, zero = refit.refit(ybar, total, iters=200, alpha=alpha, tol=0.0)
    assert full["iterations"] == 200 and zero["iterations"] == 200  # tol 0 only stops on a flat block
    assert TOL_BLOCK <= early["iterations"] < 200
    # each run only lowers the loss, and the longer run lowers it at least as much
    assert full["loss"] <= early["loss"] < early["start_loss"] == full["start_loss"]


def test_bootstrap_models_reproducible_and_reports_iterations(rel):
    info_a: list = []
    a = bootstrap_models(rel, 3, np.random.default_rng(11), iters=30, tol=1e-3, info=info_a)
    b = bootstrap_models(rel, 3, np.random.default_rng(11), iters=30, tol=1e-3)
    c = bootstrap_models(rel, 3, np.random.default_rng(12), iters=30, tol=1e-3)
    pair = tuple(rel.model.cliques[0][:2])
    for ma, mb in zip(a, b):
        np.testing.assert_array_equal(ma.marginal(pair), mb.marginal(pair))
    assert not np.allclose(a[0].marginal(pair), c[0].marginal(pair))
    assert len(info_a) == 3 and all(1 <= i["iterations"] <= 30 and i["loss"] <= i["start_loss"] for i in info_a)
    for bad in (-1.0, float("nan"), "x", True):
        with pytest.raises(DDSSPError, match="tol must be"):
            bootstrap_models(rel, 2, np.random.default_rng(0), iters=5, tol=bad)


def _counting(refit):
    """Count the model evaluations (calibrations) of ``refit``."""
    calls = {"n": 0}
    inner = refit._oracle

    def oracle(theta, total):
        calls["n"] += 1
        return inner(theta, total)

    refit._oracle = oracle
    return calls


def test_heavy_ball_and_nesterov_reach_the_same_minimum(rel):
    """Both momentum rules minimise the same loss: run long, they agree on the loss and on the
    fitted marginals; the heavy-ball rule evaluates at most one point per step plus its retries."""
    refit = MeasurementRefit(rel.model, list(rel.measurements))
    ybar, total = refit.draw(np.random.default_rng(5))
    alpha = refit.step_size(ybar, total)
    calls = _counting(refit)
    heavy, hi = refit.refit(ybar, total, iters=1500, alpha=alpha, momentum="heavy")
    heavy_calls = calls["n"]
    calls["n"] = 0
    nest, ni = refit.refit(ybar, total, iters=1500, alpha=alpha, momentum="k3")
    nest_calls = calls["n"]
    assert hi["loss"] < hi["start_loss"] and ni["loss"] < ni["start_loss"]
    assert abs(hi["loss"] - ni["loss"]) <= 1e-3 * max(hi["loss"], ni["loss"])
    for c in refit.cliques:
        np.testing.assert_allclose(heavy.marginal(c), nest.marginal(c), rtol=0, atol=0.02 * total / refit.mu0[c].size)
    assert heavy_calls < 0.75 * nest_calls


def test_heavy_ball_is_no_worse_at_a_short_budget(rel):
    """At the bootstrap's default budget (150 steps) the heavy-ball rule lowers the loss at least as
    far as the Nesterov-style rule on seeded redraws (the reason it is the default)."""
    refit = MeasurementRefit(rel.model, list(rel.measurements))
    rng = np.random.default_rng(9)
    for _ in range(3):
        ybar, total = refit.draw(rng)
        alpha = refit.step_size(ybar, total)
        _, h = refit.refit(ybar, total, iters=150, alpha=alpha, momentum="heavy")
        _, k = refit.refit(ybar, total, iters=150, alpha=alpha, momentum="k3")
        assert h["loss"] <= k["loss"]


def test_models_one_at_a_time_equal_the_list(rel):
    """The generator makes the same models as the list, and checks its arguments before the first."""
    from ddssp.estimators.bootstrap import iter_bootstrap_models

    listed = bootstrap_models(rel, 3, np.random.default_rng(21), iters=10)
    it = iter_bootstrap_models(rel, 3, np.random.default_rng(21), iters=10)
    pair = tuple(rel.model.cliques[0][:2])
    for a, b in zip(listed, it, strict=True):
        np.testing.assert_array_equal(a.marginal(pair), b.marginal(pair))
    with pytest.raises(DDSSPError, match="tol must be"):
        iter_bootstrap_models(rel, 2, np.random.default_rng(0), tol=-1.0)
