"""The projected DP variance (``dp_method="projected"``, the default): its projections solve their
least-squares problems, it is the delta method where positivity does not bind, and where it binds
it follows the spread of the re-estimated model, which the delta method overstates."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import chi2

from ddssp.cli import main
from ddssp.estimators.ddssp import DDSSPLinearRegression
from ddssp.estimators.ddssp_delta import (
    delta_dp_variance,
    project_margins,
    project_total,
    projected_dp_draws,
)
from ddssp.estimators.ddssp_intervals import IntervalOptions
from ddssp.estimators.params import InvalidParameterError
from tests.estimators.test_ddssp_ridge import FEATS, MODELS, _fit, _release


@pytest.fixture(scope="module")
def small():
    """The ridge tests' small release (300 rows, eps 0.3): many cells near 0 against the noise."""
    return _release(300, 0.3, 5)


@pytest.fixture(scope="module")
def large():
    """The ridge tests' large release (20,000 rows, eps 1), whose cells all hold rows."""
    return _release(20000, 1.0, 3)


class _Scaled:
    """A measurement with its sigma multiplied by ``k`` (the noise model at another scale)."""

    def __init__(self, m, k: float):
        self.clique, self.sigma = m.clique, float(m.sigma) * k


def test_project_total_is_the_closest_nonnegative_vector_with_the_sum():
    rng = np.random.default_rng(0)
    y = rng.normal(3.0, 10.0, size=(50, 7))
    y[0] = [-5, -1, 0.5, 2, 40, -3, 0]
    m = project_total(y)
    assert np.all(m >= 0)
    np.testing.assert_allclose(m.sum(axis=1), np.clip(y.sum(axis=1), 0, None), atol=1e-9)
    # optimality: y - m is one shift t on the positive cells, and at most t on the zero ones
    for yr, mr in zip(y, m):
        if mr.sum() == 0:
            continue
        t = (yr - mr)[mr > 0]
        assert np.ptp(t) < 1e-9
        assert np.all(yr[mr == 0] <= t[0] + 1e-9)


def test_project_margins_solves_the_least_squares_problem():
    """The optimality conditions of the projection onto {m >= 0, margins fixed}: the residual
    y - m is u_i + v_j (the margins' multipliers) on the positive cells and at most that on the
    cells at 0; on small tables with cells forced below 0."""
    rng = np.random.default_rng(1)
    for _ in range(5):
        target = rng.gamma(0.7, 8.0, size=(1, 3, 4))
        y = target + rng.normal(0.0, 10.0, size=target.shape)
        m = project_margins(y, target, iters=5000)[0]
        t = target[0]
        np.testing.assert_allclose(m.sum(axis=1), t.sum(axis=1), atol=1e-8)
        np.testing.assert_allclose(m.sum(axis=0), t.sum(axis=0), atol=1e-8)
        assert m.min() > -1e-2
        pos = m > 1e-2
        r = (y[0] - m)[pos]
        rows, cols = np.nonzero(pos)
        design = np.zeros((len(r), 7))
        design[np.arange(len(r)), rows] = 1.0
        design[np.arange(len(r)), 3 + cols] = 1.0
        uv, *_ = np.linalg.lstsq(design, r, rcond=None)
        assert np.max(np.abs(design @ uv - r)) < 1e-2
        bound = uv[:3, None] + uv[None, 3:]
        assert np.all((y[0] - m)[~pos] <= bound[~pos] + 1e-2)
        assert m.min() < 1e-2 < m.max() and np.any(y < 0)  # the constraint bound somewhere


@pytest.mark.parametrize(("cls", "target"), MODELS)
def test_it_is_the_delta_method_where_the_noise_is_small_against_the_cells(large, cls, target):
    """At 1/100 of the release's noise no projection binds (every cell holds rows): the draws'
    variance estimates the delta method's, to within the chi-square bounds of ``draws`` draws."""
    rel, _ = large
    est = _fit(cls, rel, target)
    meas = [_Scaled(m, 1e-2) for m in rel.measurements]
    smallest = min(float(np.min(rel.marginal(list(m.clique)))) for m in rel.measurements)
    assert smallest > 6 * max(m.sigma for m in meas)  # no cell within 6 noise sds of 0
    draws = 400
    vp = projected_dp_draws(est, meas, rel, np.random.default_rng(0), draws=draws).var(axis=0, ddof=1)
    vd = delta_dp_variance(est, meas)
    keep = vd > 0
    assert keep.sum() >= 2
    ratio = vp[keep] / vd[keep]
    alpha = 1e-3 / keep.sum()  # every coefficient inside, Bonferroni
    lo, hi = chi2.ppf([alpha / 2, 1 - alpha / 2], draws - 1) / (draws - 1)
    assert np.all((lo < ratio) & (ratio < hi)), (ratio, lo, hi)
    np.testing.assert_array_equal(vp[~keep], 0.0)


def test_the_draws_are_seeded_and_the_default(small):
    rel, _ = small
    a = _fit(DDSSPLinearRegression, rel, "y", ci=0.95, intervals=IntervalOptions(seed=3))
    b = _fit(DDSSPLinearRegression, rel, "y", ci=0.95, intervals=IntervalOptions(seed=3, dp_method="projected"))
    d = _fit(DDSSPLinearRegression, rel, "y", ci=0.95, intervals=IntervalOptions(seed=3, dp_method="delta"))
    assert a.ci_info_["dp_method"] == "projected"
    np.testing.assert_array_equal(a.stderr_dp_, b.stderr_dp_)
    # positivity binds on this release: the projected DP part is narrower than the delta method's
    measured = a.pair_measured_ & (d.stderr_dp_ > 0)
    assert np.all(a.stderr_dp_[measured] < d.stderr_dp_[measured])


def test_bc_normal_still_needs_replicates():
    with pytest.raises(InvalidParameterError, match="needs replicates"):
        IntervalOptions(interval="bc-normal")


def test_cli_takes_the_projected_and_the_delta_method(small, tmp_path, capsys):
    rel, _ = small
    path = tmp_path / "small.release"
    rel.save(path)
    argv = ["fit", str(path), "--target", "y", "--features", ",".join(FEATS), "--ci", "0.95", "--seed", "0"]
    assert main(argv) == 0
    assert "kept nonnegative" in capsys.readouterr().out
    assert main(argv + ["--dp-method", "delta"]) == 0
    out = capsys.readouterr().out
    assert "delta method" in out and "kept nonnegative" not in out


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "target"), MODELS)
def test_it_follows_the_spread_of_the_re_estimated_model(small, cls, target):
    """On the small release (positivity binds), the spread of 40 converged re-estimations of the
    model from redrawn measurements (the parametric bootstrap: the estimator itself, with AIM's
    selection fixed) against each DP part, for the coefficient whose (feature, target) pair the
    release measured: the projected one agrees within the chi-square bounds of 40 replicates, the
    delta method's is outside them (too wide)."""
    rel, _ = small
    R = 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opts = IntervalOptions(dp_method="bootstrap", boot=R, boot_iters=1000, seed=1, sampling="none")
        # unpenalised: the DP parts are compared as the test was calibrated (the default's noise floor
        # adds a penalty that the bootstrap's refits hold fixed, and a pull the DP parts leave out)
        est = cls(features=FEATS, ci=0.95, intervals=opts, ridge=0.0).fit(rel, target)
    assert est.ci_info_["dp_converged"]
    meas = list(rel.measurements)
    vb = est.boot_coefs_.var(axis=0, ddof=1)
    vp = projected_dp_draws(est, meas, rel, np.random.default_rng(2), draws=1000).var(axis=0, ddof=1)
    vd = delta_dp_variance(est, meas)
    j = [i for i, n in enumerate(["intercept", *est.feature_names_in_]) if n != "intercept" and est.pair_measured_[i]]
    assert j
    lo, hi = chi2.ppf([5e-4, 1 - 5e-4], R - 1) / (R - 1)
    assert np.all((lo < vb[j] / vp[j]) & (vb[j] / vp[j] < hi)), (vb[j] / vp[j], lo, hi)
    assert np.all(vb[j] / vd[j] < lo), (vb[j] / vd[j], lo)
