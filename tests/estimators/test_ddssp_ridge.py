"""``ridge="auto"``: DD-SSP's global ridge from the release's own (public) noise scale.

Releases are AIM runs on samples of the known population of the ci-coverage benchmark
(:mod:`ddssp.bench.ci_coverage`); the noise model is checked against the independent
implementation of it in ``test_ci_basis`` (``_Perturbed``)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from ddssp.bench import ci_coverage as cc
from ddssp.cli import main
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.ddssp_delta import delta_dp_variance, pooled_precisions
from ddssp.estimators.ddssp_intervals import IntervalOptions
from ddssp.estimators.ddssp_ridge import xtx_noise_bound
from ddssp.estimators.params import InvalidParameterError
from ddssp.estimators.suffstats import ExactMarginals, sufficient_statistics
from ddssp.pipeline import ReadOptions, release
from tests.estimators.test_ci_basis import _Perturbed

FEATS = cc.FEATURES
MODELS = ((DDSSPLinearRegression, "y"), (DDSSPLogisticRegression, "z"))


def _release(rows: int, eps: float, seed: int):
    codes = cc.sample_codes(cc.population(), rows, np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # seeded noise: the tests check the noise model on a fixed release, not the release's privacy
        rel = release(
            codes, cc.schema(), eps=eps, seed=seed + 100, insecure_seed=seed + 200, read=ReadOptions(encoded=True)
        )
    return rel, codes


@pytest.fixture(scope="module")
def large():
    """20,000 rows at eps 1: X^T X far above its noise."""
    return _release(20000, 1.0, 3)


@pytest.fixture(scope="module")
def small():
    """300 rows at eps 0.3: X^T X's small eigenvalues are noise."""
    return _release(300, 0.3, 5)


def _fit(cls, rel, target, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(features=FEATS, **kw).fit(rel, target)


def test_noise_bound_is_the_quantile_of_the_noise_model(small):
    """t is the 95% quantile of ||E||_2 under the delta method's noise model, as drawn by an
    independent implementation (cell noise per measured clique, pooled, pushed through Z^T Z)."""
    rel, _ = small
    est = _fit(DDSSPLinearRegression, rel, "y")
    # both sides are Monte Carlo quantiles: enough draws that their own error (about 5% at 200 and 400
    # draws) stays well inside the tolerance
    t = xtx_noise_bound(est.encoding_, list(rel.measurements), draws=2000)
    pooled = pooled_precisions(list(rel.measurements))
    dom = dict(rel.schema.domain)
    base = est.suffstats_.xtx
    rng = np.random.default_rng(1)
    norms = []
    for _ in range(1000):
        e = {k: rng.standard_normal([dom[c] for c in cols]) / math.sqrt(p) for k, (cols, p) in pooled.items()}
        moved = sufficient_statistics(_Perturbed(rel, pooled, e), est.encoding_).xtx
        norms.append(np.linalg.norm(moved - base, ord=2))
    ref = float(np.quantile(norms, 0.95))
    assert 0.9 < t / ref < 1.1, (t, ref)
    t200 = xtx_noise_bound(est.encoding_, list(rel.measurements))
    assert t200 == xtx_noise_bound(est.encoding_, list(rel.measurements))  # a function of the release alone


@pytest.mark.parametrize("cls,target", MODELS)
def test_auto_is_zero_without_noise_and_on_a_well_conditioned_release(large, cls, target):
    rel, codes = large
    exact = ExactMarginals(codes, rel.schema)
    auto, plain = _fit(cls, exact, target, ridge="auto"), _fit(cls, exact, target, ridge=0.0)
    assert auto.ridge_ == 0.0 and auto.ridge_info_["noise_bound"] == 0.0
    np.testing.assert_array_equal(auto.coef_, plain.coef_)
    auto, plain = _fit(cls, rel, target, ridge="auto"), _fit(cls, rel, target, ridge=0.0)
    info = auto.ridge_info_
    assert info["rule"] == "auto" and info["noise_bound"] > 0
    assert auto.ridge_ == 0.0 and info["min_eig"] > info["noise_bound"], info
    np.testing.assert_array_equal(auto.coef_, plain.coef_)


@pytest.mark.parametrize("cls,target", MODELS)
def test_auto_lifts_the_noisy_spectrum_to_the_noise_bound(small, cls, target):
    rel, _ = small
    auto = _fit(cls, rel, target, ridge="auto")
    info = auto.ridge_info_
    t, lmin = info["noise_bound"], info["min_eig"]
    assert t > lmin and auto.ridge_ == pytest.approx(t - lmin) and auto.ridge_ > 0
    given = _fit(cls, rel, target, ridge=auto.ridge_)
    np.testing.assert_allclose(auto.coef_, given.coef_)
    assert given.ridge_info_ == {"rule": "given", "ridge": auto.ridge_}
    plain = _fit(cls, rel, target, ridge=0.0)
    assert np.linalg.norm(auto.coef_) < np.linalg.norm(plain.coef_)  # a ridge shrinks


def test_intervals_are_around_the_ridge_solution(small):
    """With ridge="auto" the delta method and the refits use the ridge the fit chose."""
    rel, _ = small
    opts = IntervalOptions(boot=4, boot_iters=20, seed=0, dp_method="bootstrap")
    seeded = IntervalOptions(seed=0, sampling_rows=2000, dp_method="delta")
    auto = _fit(DDSSPLinearRegression, rel, "y", ridge="auto", ci=0.95, intervals=seeded)
    given = _fit(DDSSPLinearRegression, rel, "y", ridge=auto.ridge_, ci=0.95, intervals=seeded)
    np.testing.assert_allclose(delta_dp_variance(auto, list(rel.measurements)), auto.stderr_dp_**2)
    np.testing.assert_allclose(auto.conf_int()["ci_low"], given.conf_int()["ci_low"])
    assert auto.ci_info_["ridge"] == pytest.approx(auto.ridge_) and auto.ridge_ > 0
    boot_auto = _fit(DDSSPLinearRegression, rel, "y", ridge="auto", ci=0.95, intervals=opts)
    boot_given = _fit(DDSSPLinearRegression, rel, "y", ridge=auto.ridge_, ci=0.95, intervals=opts)
    np.testing.assert_allclose(boot_auto.boot_coefs_, boot_given.boot_coefs_)


@pytest.mark.parametrize("bad", ["Auto", "0.5", -1.0, float("inf"), "none"])
def test_ridge_accepts_a_rule_or_a_number(bad):
    with pytest.raises(InvalidParameterError, match="ridge must be >= 0 .* 'auto' or None"):
        DDSSPLinearRegression(ridge=bad).fit(None)


def test_the_default_ridge_is_the_floor_with_or_without_intervals(small):
    """The default (None) fit is floored whether or not intervals are asked (its intervals are widened
    by the floor's pull instead, tests/estimators/test_ci_floor.py); a given ridge is always used."""
    from ddssp.estimators.ddssp_ridge import default_ridge

    assert DDSSPLinearRegression().ridge is None
    assert default_ridge(None) == "floor" and default_ridge("floor") == "floor" and default_ridge(2.0) == 2.0
    rel, _ = small
    seeded = IntervalOptions(seed=0, sampling_rows=2000, dp_method="delta")
    floor = _fit(DDSSPLinearRegression, rel, "y", ridge="floor")
    plain = _fit(DDSSPLinearRegression, rel, "y", ridge=0.0)
    assert not np.allclose(floor.coef_, plain.coef_)  # the floor lifts something on this release
    for kw in ({}, {"ci": 0.95, "intervals": seeded}):
        np.testing.assert_allclose(_fit(DDSSPLinearRegression, rel, "y", **kw).coef_, floor.coef_)


def test_cli_ridge_auto(small, tmp_path, capsys):
    rel, _ = small
    path = tmp_path / "small.release"
    rel.save(path)
    argv = ["fit", str(path), "--target", "y", "--features", ",".join(FEATS)]
    assert main(argv + ["--ridge", "auto"]) == 0
    out = capsys.readouterr().out
    assert "ridge = " in out and "(auto: noise bound" in out
    assert main(argv + ["--ridge", "auto", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["ridge"]["rule"] == "auto" and res["ridge"]["ridge"] > 0
    assert main(argv + ["--ridge", "auto", "--ci", "0.95", "--seed", "0"]) == 0
    assert "the ridge held fixed" in capsys.readouterr().out
    assert main(argv + ["--ridge", "0", "--ci", "0.95", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "ridge held fixed" not in out and "ridge =" not in out  # ridge 0: no ridge line
    assert main(argv + ["--ridge", "2.5"]) == 0
    assert "  ridge = 2.5\n" in capsys.readouterr().out
    assert main(argv + ["--ridge", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ridge"] == {"rule": "given", "ridge": 0.0}
    with pytest.raises(SystemExit) as exc:
        main(argv + ["--ridge", "lots"])
    assert exc.value.code != 0
    assert "expected 'floor', 'auto' or a number" in capsys.readouterr().err
    assert main(argv + ["--ridge", "-1"]) != 0
    assert "--ridge must be >= 0 (a finite number), 'floor', 'auto' or None" in capsys.readouterr().err
