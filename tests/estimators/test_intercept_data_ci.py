"""The data-unit intercept's standard error and interval: ``c * (u . theta) + d``, its variance
``c^2 u' Sigma u`` summed part by part (DP draws or replicates projected on u, the delta method's and
the model part's gradient of the combination, the sandwich's ``u' S u``).

Releases are AIM runs on samples of the ci-coverage benchmark's known population
(:mod:`ddssp.bench.ci_coverage`): x1, x2 numeric (they shift the intercept), x3, x4 categorical."""

from __future__ import annotations

import csv
import itertools
import json
import math
import warnings

import numpy as np
import pytest
from scipy.stats import binom

from ddssp.bench import ci_coverage as cc
from ddssp.cli import main
from ddssp.dp import make_rng
from ddssp.estimators.ddssp import DDSSPLinearRegression
from ddssp.estimators.ddssp_delta import (
    delta_dp_variance,
    model_error_weight,
    projected_dp_draws,
    unmeasured_sensitivity,
)
from ddssp.estimators.ddssp_intervals import IntervalOptions, intercept_weights
from ddssp.pipeline import ReadOptions, release
from tests.estimators.test_ci_basis import FEATS, MODELS, _release


@pytest.fixture(scope="module")
def rel():
    return _release(3000, 1.0, 5)


@pytest.fixture(scope="module")
def partial():
    """A low-eps release that leaves some (feature, target) pairs unmeasured: a model part."""
    return _release(3000, 0.05, 3)


def _fit(cls, source, target, features=FEATS, **kw):
    opts = IntervalOptions(**{"boot": 8, "boot_iters": 60, "seed": 0, "sampling_rows": 2000, **kw})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(features=features, ci=0.95, intervals=opts).fit(source, target)


@pytest.mark.parametrize("cls,target", MODELS)
@pytest.mark.parametrize("method", ["projected", "delta", "bootstrap"])
def test_without_numeric_features_the_interval_is_the_encoded_one_rescaled(rel, cls, target, method):
    """b = 0: the data-unit intercept is c * theta_0 + d, its interval the encoded one mapped."""
    est = _fit(cls, rel, target, features=["x3", "x4"], dp_method=method, interval="normal")
    assert not np.any(intercept_weights(est)[1:])
    _, _, c, _, _ = est._units()
    enc = est.conf_int().iloc[0]
    row = est.coef_table().iloc[0]
    shift = est.intercept_data_ - c * est.intercept_
    assert np.isfinite(enc.stderr) and enc.stderr > 0
    np.testing.assert_allclose(row.stderr, enc.stderr * abs(c), rtol=1e-12)
    np.testing.assert_allclose(row.ci_low, enc.ci_low * c + shift, rtol=1e-12)
    np.testing.assert_allclose(row.ci_high, enc.ci_high * c + shift, rtol=1e-12)


@pytest.mark.parametrize("cls,target", MODELS)
def test_projected_draws_part_is_the_draws_covariance_on_u(rel, cls, target):
    est = _fit(cls, rel, target, sampling="none")
    u = intercept_weights(est)
    assert np.any(u[1:])  # x1, x2 shift it
    boot_rng, _ = make_rng(0).spawn(2)  # the stream fit_intervals gives the DP part
    draws = projected_dp_draws(est, list(rel.measurements), rel, boot_rng)
    brute = float(u @ np.cov(draws, rowvar=False) @ u)
    np.testing.assert_allclose(est.intercept_data_var_["dp"], brute, rtol=1e-10)
    np.testing.assert_allclose(np.diag(np.cov(draws, rowvar=False)), est.stderr_dp_**2, rtol=1e-10)
    # no sampling part asked: the stderr is the DP and model parts', in data units
    _, _, c, _, _ = est._units()
    total = brute + est.intercept_data_var_["model"]
    np.testing.assert_allclose(est.coef_table().iloc[0].stderr, abs(c) * math.sqrt(total), rtol=1e-10)


@pytest.mark.parametrize("cls,target", MODELS)
def test_bootstrap_part_is_the_replicates_covariance_on_u(rel, cls, target):
    est = _fit(cls, rel, target, dp_method="bootstrap", sampling="none")
    u = intercept_weights(est)
    brute = float(u @ np.cov(est.boot_coefs_, rowvar=False) @ u)
    assert brute > 0
    np.testing.assert_allclose(est.intercept_data_var_["dp"], brute, rtol=1e-10)


def _polarized(fn, P: int) -> np.ndarray:
    """The covariance matrix a variance-of-combinations function implies: C_ij from the variances of
    e_i, e_j and e_i + e_j (exact when fn is a quadratic form)."""
    pairs = list(itertools.combinations(range(P), 2))
    W = np.zeros((len(pairs), P))
    for r, (i, j) in enumerate(pairs):
        W[r, [i, j]] = 1.0
    v = fn(W)
    d, both = v[:P], v[P:]
    C = np.diag(d)
    for r, (i, j) in enumerate(pairs):
        C[i, j] = C[j, i] = (both[r] - d[i] - d[j]) / 2.0
    return C


@pytest.mark.parametrize("cls,target", MODELS)
def test_delta_and_model_parts_are_the_quadratic_form_of_their_covariance(partial, cls, target):
    est = _fit(cls, partial, target, dp_method="delta", sampling="none")
    assert est.intercept_data_var_["model"] > 0  # the release leaves pairs to the model
    u = intercept_weights(est)
    meas = list(partial.measurements)
    P = len(u)
    C_dp = _polarized(lambda W: delta_dp_variance(est, meas, W), P)
    np.testing.assert_allclose(np.diag(C_dp), est.stderr_dp_**2, rtol=1e-10)
    np.testing.assert_allclose(est.intercept_data_var_["dp"], u @ C_dp @ u, rtol=1e-8)
    weight = model_error_weight(partial, meas)
    C_m = _polarized(lambda W: unmeasured_sensitivity(est, meas, weight, W)[0], P)
    np.testing.assert_allclose(np.diag(C_m), est.stderr_model_**2, rtol=1e-10)
    np.testing.assert_allclose(est.intercept_data_var_["model"], u @ C_m @ u, rtol=1e-8)


@pytest.mark.parametrize("cls,target", MODELS)
def test_sandwich_part_is_u_s_u_of_a_psd_covariance(rel, cls, target):
    est = _fit(cls, rel, target, dp_noise=False)
    assert est.intercept_data_var_["dp"] == 0.0 and est.intercept_data_var_["sampling"] > 0
    # the same model rows as the fit drew (its sampling stream)
    from ddssp.estimators.ddssp_intervals import sampling_covariance

    _, samp_rng = make_rng(0).spawn(2)
    S = sampling_covariance(est, rel, "sandwich", samp_rng, 2000)
    assert np.linalg.eigvalsh((S + S.T) / 2).min() > -1e-12 * np.abs(S).max()
    u = intercept_weights(est)
    np.testing.assert_allclose(est.intercept_data_var_["sampling"], u @ S @ u, rtol=1e-12)
    np.testing.assert_allclose(np.diag(S), est.stderr_sampling_**2, rtol=1e-12)


def test_unmeasured_infinite_and_mechanism_bootstrap(partial, rel):
    est = _fit(DDSSPLinearRegression, partial, "y", unmeasured="infinite")
    u = intercept_weights(est)
    row = est.coef_table().iloc[0]
    if np.any((u != 0) & ~est.pair_measured_):  # it weighs an unmeasured coefficient: unbounded too
        assert row.ci_low == -np.inf and row.ci_high == np.inf
    else:
        assert np.isfinite([row.ci_low, row.ci_high]).all()
    est = _fit(DDSSPLinearRegression, rel, "y", bootstrap="mechanism", boot=4, interval="percentile")
    row = est.coef_table().iloc[0]
    reps = est.boot_coefs_ @ intercept_weights(est)
    np.testing.assert_allclose(est.intercept_data_var_["total"], reps.var(ddof=1), rtol=1e-10)
    assert np.isfinite([row.stderr, row.ci_low, row.ci_high]).all() and row.ci_low <= row.ci_high


@pytest.mark.slow
@pytest.mark.parametrize("cls,target", MODELS)
def test_data_unit_intercept_interval_is_calibrated(cls, target):
    """Over seeded releases of the benchmark's population (20,000 rows, eps 1, its own setting), the
    95% interval of the data-unit intercept covers the population's within binomial bounds."""
    joint, sch = cc.population(), cc.schema()
    truth = cls(features=FEATS).fit(cc._PopulationMarginals(joint, sch, total=1e6), target).intercept_data_
    trials, hits = 100, 0
    for i in range(trials):
        codes = cc.sample_codes(joint, 20000, np.random.default_rng(1000 + i))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rel = release(codes, sch, eps=1.0, seed=2000 + i, read=ReadOptions(encoded=True))
            est = cls(features=FEATS, ci=0.95, intervals=IntervalOptions(seed=i, sampling_rows=5000)).fit(rel, target)
        row = est.coef_table().iloc[0]
        hits += bool(row.ci_low <= truth <= row.ci_high)
    lo, hi = binom.ppf(0.0005, trials, 0.95), binom.ppf(0.9995, trials, 0.95)
    assert lo <= hits <= hi, (hits, lo, hi)


def test_cli_prints_a_finite_intercept_interval(shared_data, tmp_path, capsys):
    """Numeric features (age, hours-per-week) shift the logistic intercept: text and --json show it."""
    lines = (shared_data / "adult_raw.csv").read_text().splitlines()[:401]
    rows = list(csv.reader(lines))
    keep = [rows[0].index(c) for c in ("age", "education", "sex", "hours-per-week", "income")]
    data = tmp_path / "a400.csv"
    data.write_text("\n".join(",".join(r[k].strip() for k in keep) for r in rows) + "\n")
    out = tmp_path / "a400.release"
    argv = ["release", str(data), "--eps", "1", "--na-values", "?", "--target", "income", "-o", str(out)]
    assert main(argv + ["--insecure-seed", "1"]) == 0
    capsys.readouterr()
    fit = ["fit", str(out), "--target", "income", "--model", "logistic", "--ci", "0.95", "--seed", "0"]
    assert main(fit + ["--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    icept = res["coefficients"][0]
    assert icept["name"] == "intercept"
    assert all(icept[k] is not None and math.isfinite(icept[k]) for k in ("stderr", "ci_low", "ci_high"))
    assert icept["ci_low"] < icept["coef"] < icept["ci_high"]
    assert main(fit) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("intercept")]
    assert "n/a" not in line and f"{icept['ci_low']:.6g}" in line
