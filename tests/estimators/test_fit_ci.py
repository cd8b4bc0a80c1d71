"""Confidence intervals from a release: DD-SSP estimators with ``ci``, `ddssp fit --ci`.

Releases are AIM runs on samples of the known population of the ci-coverage benchmark
(:mod:`ddssp.bench.ci_coverage`), built once per module."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from ddssp.bench import ci_coverage as cc
from ddssp.cli import main
from ddssp.dp import Ledger
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.ddssp_intervals import IntervalOptions
from ddssp.estimators.suffstats import ExactMarginals
from ddssp.pipeline import ReadOptions, release
from ddssp.releasefile import Release

FEATS = cc.FEATURES
BOOT = dict(boot=15, boot_iters=60)


def _release(rows: int, eps: float, seed: int):
    codes = cc.sample_codes(cc.population(), rows, np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(codes, cc.schema(), eps=eps, seed=seed + 100, read=ReadOptions(encoded=True))
    return codes, rel


@pytest.fixture(scope="module")
def releases():
    """The same 20,000-row sample released at eps 0.25, 1 and 4."""
    codes = cc.sample_codes(cc.population(), 20000, np.random.default_rng(3))
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for eps in (0.25, 1.0, 4.0):
            out[eps] = release(codes, cc.schema(), eps=eps, seed=7, read=ReadOptions(encoded=True))
    return codes, out


@pytest.fixture(scope="module")
def release_file(releases, tmp_path_factory):
    path = tmp_path_factory.mktemp("ci") / "pop.release"
    releases[1][1.0].save(path)
    return path


def _ci(est_cls, rel, target, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replicates = kw.pop("replicates", None)
        est = est_cls(features=FEATS, ci=0.95, intervals=IntervalOptions(**{**BOOT, **kw}))
        return est.fit(rel, target, replicates=replicates)


def test_table_shape_and_point_estimate_unchanged(releases):
    _, rels = releases
    rel = rels[1.0]
    est = _ci(DDSSPLogisticRegression, rel, "z", seed=0)
    plain = DDSSPLogisticRegression(features=FEATS).fit(rel, "z")
    np.testing.assert_array_equal(est.coef_, plain.coef_)
    assert est.intercept_ == plain.intercept_
    tab = est.conf_int()
    assert list(tab["name"]) == ["intercept"] + plain.feature_names_in_
    assert est.stderr_.shape == est.coef_.shape
    assert (
        np.all(tab["stderr"] > 0)
        and np.all(tab["ci_low"] < tab["estimate"])
        and np.all(tab["estimate"] < tab["ci_high"])
    )
    np.testing.assert_allclose(tab["stderr"] ** 2, tab["stderr_dp"] ** 2 + tab["stderr_sampling"] ** 2)
    # a wider level gives wider intervals around the same centre
    t90 = est.conf_int(0.90)
    assert np.all(t90["ci_high"] - t90["ci_low"] < tab["ci_high"] - tab["ci_low"])


def test_bootstrap_reproducible_with_seed(releases):
    rel = releases[1][1.0]
    a = _ci(DDSSPLinearRegression, rel, "y", seed=5, dp_method="bootstrap").conf_int()
    b = _ci(DDSSPLinearRegression, rel, "y", seed=5, dp_method="bootstrap").conf_int()
    c = _ci(DDSSPLinearRegression, rel, "y", seed=6, dp_method="bootstrap").conf_int()
    assert a.equals(b)
    assert not np.allclose(a["stderr_dp"], c["stderr_dp"])


def test_intervals_widen_as_eps_falls(releases):
    _, rels = releases
    for cls, target in ((DDSSPLinearRegression, "y"), (DDSSPLogisticRegression, "z")):
        widths = {}
        for eps, rel in rels.items():
            tab = _ci(cls, rel, target, seed=1, unmeasured="keep").conf_int()  # finite widths
            widths[eps] = float(np.mean(tab["ci_high"] - tab["ci_low"]))
        assert widths[0.25] > widths[1.0] > widths[4.0], (cls.__name__, widths)


def test_sigma_to_zero_and_large_sample_shrink_to_exact_fit():
    """eps = 1e5 on 100,000 rows: the intervals are narrow, the DP part is negligible next to the
    sampling part, and they hold the exact-marginal fit of the data."""
    codes, rel = _release(100_000, 1e5, seed=11)
    small_codes, small = _release(20_000, 1.0, seed=11)
    for cls, target in ((DDSSPLinearRegression, "y"), (DDSSPLogisticRegression, "z")):
        est = _ci(cls, rel, target, seed=2)
        exact = cls(features=FEATS).fit(ExactMarginals(codes, cc.schema()), target)
        tab = est.conf_int()
        theta_exact = np.concatenate([[exact.intercept_], exact.coef_])
        assert np.all(tab["ci_low"] <= theta_exact) and np.all(theta_exact <= tab["ci_high"])
        assert np.all(tab["stderr_dp"] < 0.1 * tab["stderr_sampling"])
        ref = _ci(cls, small, target, seed=2).conf_int()
        # sampling part scales like 1/sqrt(n): 5x the rows -> about 1/sqrt(5) = 0.45 of the width
        ratio = tab["stderr_sampling"] / ref["stderr_sampling"]
        assert np.all((ratio > 0.3) & (ratio < 0.6)), ratio
        assert float(np.max(tab["ci_high"] - tab["ci_low"])) < 0.5 * float(np.max(ref["ci_high"] - ref["ci_low"]))


def test_intervals_never_touch_a_ledger(releases, monkeypatch):
    rel = releases[1][1.0]
    before = rel.ledger.to_dict()

    def boom(*a, **k):
        raise AssertionError("a fit charged the ledger")

    for write in ("charge", "charge_opendp"):  # every way a mechanism writes to a ledger
        monkeypatch.setattr(Ledger, write, boom)
    _ci(DDSSPLogisticRegression, rel, "z", seed=0)
    _ci(DDSSPLinearRegression, rel, "y", seed=0, sampling="ols")
    assert rel.ledger.to_dict() == before


def test_no_dp_noise_and_exact_source():
    codes = cc.sample_codes(cc.population(), 5000, np.random.default_rng(0))
    src = ExactMarginals(codes, cc.schema())
    no_dp = IntervalOptions(dp_noise=False)
    est = DDSSPLinearRegression(features=FEATS, ci=0.9, intervals=no_dp).fit(src, "y")
    assert np.all(est.stderr_dp_ == 0) and np.all(est.stderr_ > 0)  # homoskedastic: no model to sample
    with pytest.raises(Exception, match="needs a release"):
        DDSSPLinearRegression(features=FEATS, ci=0.9).fit(src, "y")
    for bad in (0, 1, 1.5, "x"):
        with pytest.raises(Exception, match="confidence level"):
            DDSSPLinearRegression(features=FEATS, ci=bad, intervals=no_dp).fit(src, "y")
    with pytest.raises(Exception, match="no standard errors"):
        DDSSPLinearRegression(features=FEATS).fit(src, "y").conf_int()


def test_cli_fit_ci_json_csv_and_unchanged_without_ci(release_file, tmp_path, capsys):
    path = str(release_file)
    data = release_file.read_bytes()
    argv = ["fit", path, "--target", "z", "--model", "logistic", "--features", ",".join(FEATS)]
    assert main(argv + ["--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "ci" not in plain and "stderr" not in plain["coefficients"][0]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "std err" not in out and "coef" in out
    csv = tmp_path / "coef.csv"
    assert (
        main(
            argv
            + ["--ci", "0.9", "--boot", "10", "--boot-iters", "50", "--seed", "3", "--dp-method", "bootstrap"]
            + ["--json", "-o", str(csv)]
        )
        == 0
    )
    res = json.loads(capsys.readouterr().out)
    rows = res["coefficients"]
    assert [r["name"] for r in rows] == ["intercept"] + list(plain["coef"])
    assert set(rows[0]) >= {
        "name", "coef", "unit", "coef_scaled", "stderr", "ci_low", "ci_high", "pair_measured", "basis"
    }  # fmt: skip
    np.testing.assert_allclose([r["coef"] for r in rows[1:]], list(plain["coef"].values()))
    scaled = res["coefficients_scaled"]
    np.testing.assert_allclose([r["estimate"] for r in scaled[1:]], list(plain["coef_scaled"].values()))
    for r in rows[1:]:  # data units: the interval brackets the estimate (a positive rescaling)
        if r["ci_low"] is not None:
            assert r["ci_low"] <= r["coef"] <= r["ci_high"]
    assert res["ci"]["level"] == 0.9 and res["ci"]["boot"] == 10
    import pandas as pd

    tab = pd.read_csv(csv)
    assert list(tab.columns) == [
        "name", "coef", "unit", "coef_scaled", "pair_measured", "level_share", "stderr", "ci_low", "ci_high", "basis"
    ]  # fmt: skip
    np.testing.assert_allclose(tab["stderr"][1:], [r["stderr"] for r in rows][1:], rtol=1e-12)
    # refuses to overwrite; table print
    assert main(argv + ["--ci", "0.95", "--boot", "5", "-o", str(csv)]) == 1
    assert "exists" in capsys.readouterr().err
    assert (
        main(argv + ["--ci", "0.95", "--boot", "5", "--boot-iters", "20", "--seed", "1", "--dp-method", "bootstrap"])
        == 0
    )
    out = capsys.readouterr().out
    assert "std err" in out and "[0.025" in out and "bootstrap, 5 replicates" in out
    assert main(argv + ["--ci", "0.95"]) == 0  # the default: the delta method, no replicates
    out = capsys.readouterr().out
    assert "delta method" in out and "replicates" not in out
    assert release_file.read_bytes() == data  # the release is read, never written


@pytest.mark.parametrize(
    "extra,msg",
    [
        (["--ci", "1.5"], "--ci must be a confidence level"),
        (["--ci", "0.95", "--boot", "1"], "--boot must be an integer >= 2"),
        (["--ci", "0.95", "--boot-iters", "0"], "--boot-iters must be an integer >= 1"),
        (["--ci", "0.95", "--seed", "-1"], "--seed must be a non-negative integer"),
        (["--ci", "0.95", "--interval", "basic"], "--interval 'basic' needs bootstrap='mechanism'"),
        (["--ci", "0.95", "--interval", "bc-normal"], "give dp_method='bootstrap' (--dp-method bootstrap)"),
    ],
)
def test_cli_fit_ci_bad_input(release_file, capsys, extra, msg):
    argv = ["fit", str(release_file), "--target", "y", "--features", ",".join(FEATS)] + extra
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("ddssp: error:") and msg in err and len(err.strip().splitlines()) == 1


def test_release_load_roundtrip_gives_same_intervals(releases, release_file):
    rel = releases[1][1.0]
    a = _ci(DDSSPLinearRegression, rel, "y", seed=4).conf_int()
    b = _ci(DDSSPLinearRegression, Release.load(release_file), "y", seed=4).conf_int()
    np.testing.assert_allclose(a[["estimate", "stderr"]].to_numpy(), b[["estimate", "stderr"]].to_numpy(), rtol=1e-9)


def test_unconverged_dp_bootstrap_warns_and_says_so(releases):
    """A re-estimation stopped before it settles (3 iterations: fewer than one tolerance block) must
    not pass silently: the DP part would be understated. The fit warns, names the remedy, and
    records dp_converged=False; a converged-enough run records the measured decrease instead."""
    from ddssp.estimators.ddssp import BootstrapConvergenceWarning

    rel = releases[1][1.0]
    with pytest.warns(BootstrapConvergenceWarning, match="--boot-iters"):
        opts = IntervalOptions(boot=3, boot_iters=3, seed=0, dp_method="bootstrap")
        m = DDSSPLinearRegression(features=FEATS, ci=0.95, intervals=opts)
        m.fit(rel, "y")
    assert m.ci_info_["dp_converged"] is False and m.ci_info_["dp_last_drop"] == float("inf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapConvergenceWarning)
        opts = IntervalOptions(boot=3, boot_iters=400, seed=0, dp_method="bootstrap")
        m = DDSSPLinearRegression(features=FEATS, ci=0.95, intervals=opts)
        m.fit(rel, "y")
    drop = m.ci_info_["dp_last_drop"]
    assert np.isfinite(drop) and drop >= 0 and m.ci_info_["dp_converged"] == (drop <= 1e-3)
