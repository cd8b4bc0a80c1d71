"""What the intervals of a fit with the noise floor cover: the penalised coefficient, with the
floor held fixed, and how much of each coefficient the floor pulls toward 0 (``shrinkage``).

Releases are AIM runs on samples of the known population of the ci-coverage benchmark
(:mod:`ddssp.bench.ci_coverage`), with seeded noise (the tests check the algebra on a fixed release)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ddssp.bench import ci_coverage as cc
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.ddssp_intervals import IntervalOptions
from ddssp.estimators.ddssp_ridge import floor_shrinkage
from ddssp.estimators.suffstats import ExactMarginals, sufficient_statistics
from ddssp.pipeline import ReadOptions, release

MODELS = ((DDSSPLinearRegression, "y"), (DDSSPLogisticRegression, "z"))
OPTS = IntervalOptions(seed=0, sampling_rows=500)


@pytest.fixture(scope="module")
def small():
    """300 rows at eps 0.3: the floor lifts the noisy directions of X^T X."""
    codes = cc.sample_codes(cc.population(), 300, np.random.default_rng(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(codes, cc.schema(), eps=0.3, seed=105, insecure_seed=205, read=ReadOptions(encoded=True))
    return rel, codes


def _fit(cls, src, target, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(features=cc.FEATURES, **kw).fit(src, target)


def _theta(est):
    return np.concatenate([[est.intercept_], est.coef_])


@pytest.mark.parametrize("cls,target", MODELS)
def test_shrinkage_is_the_share_the_floor_removes(small, cls, target):
    """``shrinkage`` is the diagonal of (A + P)^+ P: 0 without a penalty, in [0, 1], large where
    the floor lifted."""
    rel, _ = small
    floor = _fit(cls, rel, target, ridge="floor", ci=0.95, intervals=OPTS)
    plain = _fit(cls, rel, target, ridge=0.0, ci=0.95, intervals=OPTS)
    assert floor.ridge_info_["directions"] > 0  # the case under test: the floor lifted something
    A, P = floor.suffstats_.xtx, floor.penalty_
    M = np.linalg.pinv((A + A.T) / 2 + P) @ P
    shrink = floor.conf_int()["shrinkage"].to_numpy()
    np.testing.assert_allclose(shrink, np.diag(M), atol=1e-10)
    np.testing.assert_array_equal(shrink, floor_shrinkage(floor))
    assert (shrink > -1e-9).all() and (shrink < 1 + 1e-9).all() and shrink.max() > 0.3
    assert shrink[0] == pytest.approx(0.0, abs=1e-9) or np.all(P[0] == 0)  # the intercept is never penalised
    assert (plain.conf_int()["shrinkage"] == 0).all()


@pytest.mark.parametrize("cls,target", MODELS)
def test_penalised_truth_is_the_exact_fit_at_the_release_penalty(small, cls, target):
    """The bench's truth for an interval at a fixed penalty: c (A0 + P)^-1 b0 from the exact
    marginals; with no penalty the plain exact-marginal fit; and it differs from that fit by the
    floor's shrinkage, which the interval at the floor does not include."""
    rel, codes = small
    exact = ExactMarginals(codes, rel.schema)
    floor = _fit(cls, rel, target)
    pen = cc.penalised_truth(floor, exact, target)
    stats = sufficient_statistics(exact, floor.encoding_)
    scale = 1.0 if cls is DDSSPLinearRegression else float(-floor.chebyshev_coef_[1] / (2 * floor.chebyshev_coef_[2]))
    ref = scale * np.linalg.solve(stats.xtx + floor.penalty_, stats.xty)
    np.testing.assert_allclose(pen, ref, rtol=1e-8, atol=1e-10)
    unpen = _theta(_fit(cls, exact, target))
    np.testing.assert_allclose(cc.penalised_truth(_fit(cls, rel, target, ridge=0.0), exact, target), unpen)
    # theta_P = theta_0 - (A0 + P)^-1 P theta_0: the floor's pull, which an interval at P does not include
    pull = scale * np.linalg.solve(stats.xtx + floor.penalty_, floor.penalty_ @ (unpen / scale))
    np.testing.assert_allclose(unpen - pen, pull, rtol=1e-6, atol=1e-10)
    assert np.max(np.abs(pen - unpen)) > 1e-3


@pytest.mark.parametrize("cls,target", MODELS)
def test_default_intervals_are_widened_by_the_floors_pull(small, cls, target):
    """With the default ridge the fit is floored and each interval is widened on both sides by
    |theta_0 - theta_P|, the ridge-0 fit of the same release minus the floored fit: (A + P) times
    it is P theta_0. So every interval holds the unpenalised estimate too; the stated standard errors
    are the floor's (P held fixed). A floor given explicitly keeps the narrower interval."""
    from scipy.stats import norm

    rel, _ = small
    default = _fit(cls, rel, target, ci=0.95, intervals=OPTS)
    given = _fit(cls, rel, target, ridge="floor", ci=0.95, intervals=OPTS)
    plain = _fit(cls, rel, target, ridge=0.0, ci=0.95, intervals=OPTS)
    assert default.ridge_info_["directions"] > 0
    t, g = default.conf_int(), given.conf_int()
    np.testing.assert_allclose(t["estimate"], g["estimate"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(t["stderr"], g["stderr"], rtol=0, atol=1e-12)
    pull = t["pull"].to_numpy()
    np.testing.assert_allclose(pull, _theta(plain) - _theta(default), atol=1e-8)
    A, P = default.suffstats_.xtx, default.penalty_
    scale = 1.0 if target == "y" else float(-default.chebyshev_coef_[1] / (2 * default.chebyshev_coef_[2]))
    np.testing.assert_allclose(((A + A.T) / 2 + P) @ pull / scale, P @ _theta(plain) / scale, atol=1e-6)
    assert np.abs(pull).max() > 0 and (g["pull"] == 0).all()
    z = norm.ppf(0.975)
    half = z * t["stderr"].to_numpy() + np.abs(pull)
    ok = np.isfinite(half)
    np.testing.assert_allclose((t["ci_high"] - t["ci_low"]).to_numpy()[ok], 2 * half[ok], rtol=1e-9)
    np.testing.assert_allclose(
        (g["ci_high"] - g["ci_low"]).to_numpy()[ok], 2 * z * g["stderr"].to_numpy()[ok], rtol=1e-9
    )
    inside = (t["ci_low"].to_numpy() <= _theta(plain) + 1e-9) & (_theta(plain) - 1e-9 <= t["ci_high"].to_numpy())
    assert inside[ok].all()
