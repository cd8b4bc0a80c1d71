"""The mechanism parametric bootstrap (ddssp.estimators.mechanism_bootstrap; IntervalOptions(bootstrap=
"mechanism"), `ddssp fit --ci --boot-method mechanism`).

Releases are AIM runs on samples of the ci-coverage population with the INSECURE seeded noise, so
every test here is one fixed, reproducible draw (no statistical false alarms)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

from ddssp.bench import ci_coverage as cc
from ddssp.cli import main
from ddssp.dp import Ledger
from ddssp.dp.noise import SecureNoise
from ddssp.errors import DDSSPError
from ddssp.estimators import mechanism_bootstrap as mb
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.ddssp_intervals import IntervalOptions
from ddssp.estimators.suffstats import ExactMarginals
from ddssp.marginals.aim_rounds import MIN_ROUNDS_LEFT
from ddssp.pipeline import ReadOptions, release

FEATS = cc.FEATURES
MODELS = ((DDSSPLinearRegression, "y"), (DDSSPLogisticRegression, "z"))


def _release(codes, eps: float, noise_seed: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release(codes, cc.schema(), eps=eps, seed=0, insecure_seed=noise_seed, read=ReadOptions(encoded=True))


@pytest.fixture(scope="module")
def sample():
    return cc.sample_codes(cc.population(), 20000, np.random.default_rng(21))


@pytest.fixture(scope="module")
def releases(sample):
    """One 20,000-row sample released at eps 0.25, 1 and 4 (seeded noise)."""
    return {eps: _release(sample, eps, 5) for eps in (0.25, 1.0, 4.0)}


def _mech(cls, rel, target, boot=8, seed=0, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replicates = kw.pop("replicates", None)
        options = IntervalOptions(boot=boot, seed=seed, bootstrap="mechanism", **kw)
        return cls(features=FEATS, ci=0.95, intervals=options).fit(rel, target, replicates=replicates)


def test_aim_settings_are_the_releases_own(releases):
    rel = releases[1.0]
    s = mb.aim_settings(rel)
    rec = rel.info["settings"]
    assert s["rho"] == rec["rho"] and s["rounds"] == rec["rounds_T"]
    assert s["max_model_size"] == rec["max_model_size"] and s["final_tol"] == rec["final_tol"]
    # an old file without recorded settings: rho from the ledger's (non-discovery) entries
    bare = dataclasses.replace(rel, info={})
    assert mb.aim_settings(bare)["rho"] == pytest.approx(rel.ledger.spent, rel=1e-9)
    assert "rounds" not in mb.aim_settings(bare)
    # the anneal rule: the release's own, and the paper's for a file made before it was recorded
    assert s["min_rounds_left"] == rec["min_rounds_left"] == MIN_ROUNDS_LEFT
    older = {k: v for k, v in rec.items() if k != "min_rounds_left"}
    assert mb.aim_settings(dataclasses.replace(rel, info={"settings": older}))["min_rounds_left"] == 0


def test_replicates_reproducible_with_seed(releases):
    rel = releases[1.0]
    a = _mech(DDSSPLinearRegression, rel, "y", boot=4, seed=3).conf_int()
    b = _mech(DDSSPLinearRegression, rel, "y", boot=4, seed=3).conf_int()
    c = _mech(DDSSPLinearRegression, rel, "y", boot=4, seed=4).conf_int()
    assert a.equals(b)
    assert not np.allclose(a["stderr"], c["stderr"])
    # the point estimate is the plain fit, whatever the bootstrap
    plain = DDSSPLinearRegression(features=FEATS).fit(rel, "y")
    np.testing.assert_array_equal(a["estimate"].to_numpy()[1:], plain.coef_)


def test_never_touches_the_release_ledger_nor_the_secure_sampler(releases, monkeypatch):
    rel = releases[1.0]
    before = rel.ledger.to_dict()

    def secure_called(*a, **k):
        raise AssertionError("the mechanism bootstrap called the secure sampler")

    for name in ("gaussian_int", "noisy_max", "gaussian_float", "laplace_float", "bernoulli", "run_opendp"):
        monkeypatch.setattr(SecureNoise, name, secure_called)
    charge = Ledger.charge
    charged = []

    def guarded(self, entry):
        if self is rel.ledger:
            raise AssertionError("the release's ledger was charged")
        charged.append(self)
        return charge(self, entry)

    monkeypatch.setattr(Ledger, "charge", guarded)
    reps = mb.mechanism_replicates(rel, 3, np.random.default_rng(0))
    assert len(reps.models) == 3 and charged  # the simulated runs did charge (their own) ledgers
    assert all(led is not rel.ledger for led in charged)
    _mech(DDSSPLogisticRegression, rel, "z", replicates=reps)
    assert rel.ledger.to_dict() == before
    with pytest.raises(AssertionError, match="secure sampler"):  # the patch is live: a secure run trips it
        _release(cc.sample_codes(cc.population(), 500, np.random.default_rng(0)), 1.0, None)


def test_intervals_widen_as_eps_falls(releases):
    reps = {eps: mb.mechanism_replicates(rel, 8, np.random.default_rng(1)) for eps, rel in releases.items()}
    for cls, target in MODELS:
        widths = {}
        for eps, rel in releases.items():
            tab = _mech(cls, rel, target, replicates=reps[eps], interval="bc-normal", unmeasured="keep").conf_int()
            widths[eps] = float(np.mean(tab["ci_high"] - tab["ci_low"]))
        assert widths[0.25] > widths[1.0] > widths[4.0], (cls.__name__, widths)


def test_tiny_sigma_large_sample_shrinks_to_exact_fit():
    """eps = 200 (first-round sigma 0.3 counts) on 60,000 rows: the interval holds the data's
    exact-marginal fit, the DP part is small next to sampling, and the width is that of the sampling
    spread (1/sqrt(n))."""
    codes = cc.sample_codes(cc.population(), 60_000, np.random.default_rng(8))
    rel = _release(codes, 200.0, 9)
    small = _release(codes.iloc[:15_000], 200.0, 9)
    big_reps = mb.mechanism_replicates(rel, 10, np.random.default_rng(2))
    small_reps = mb.mechanism_replicates(small, 10, np.random.default_rng(2))
    for cls, target in MODELS:
        est = _mech(cls, rel, target, replicates=big_reps)
        exact = cls(features=FEATS).fit(ExactMarginals(codes, cc.schema()), target)
        theta_exact = np.concatenate([[exact.intercept_], exact.coef_])
        tab = est.conf_int()
        assert np.all(tab["ci_low"] <= theta_exact) and np.all(theta_exact <= tab["ci_high"])
        np.testing.assert_allclose(tab["estimate"], theta_exact, atol=0.2 * float(tab["stderr"].min()))
        assert np.all(tab["stderr_dp"] < 0.5 * tab["stderr_sampling"])
        ref = _mech(cls, small, target, replicates=small_reps).conf_int()
        ratio = (tab["stderr"] / ref["stderr"]).to_numpy()
        # 4x the rows -> about 1/sqrt(4) = 0.5 of the spread (10 replicates each: the mean of the 6
        # coefficients' ratios is within ~15% of it)
        assert 0.35 < ratio.mean() < 0.7 and np.all(ratio < 1.0), ratio


def test_sampling_only_variant_has_no_aim_runs(releases, monkeypatch):
    import ddssp.marginals.aim as aim

    monkeypatch.setattr(aim, "run_aim", lambda *a, **k: (_ for _ in ()).throw(AssertionError("AIM ran")))
    rel = releases[4.0]
    est = _mech(DDSSPLinearRegression, rel, "y", dp_noise=False)
    assert est.ci_info_["dp_noise"] is False and np.all(est.stderr_ > 0)
    np.testing.assert_allclose(est.stderr_dp_, 0.0)


def test_bootstrap_interval_constructions():
    rng = np.random.default_rng(0)
    theta = np.array([1.0, -2.0])
    reps = theta + 0.5 + rng.standard_normal((4000, 2)) * 0.1  # replicates biased by +0.5
    for how in ("bc-normal", "basic"):
        lo, hi = mb.bootstrap_interval(theta, reps, 0.95, how)
        np.testing.assert_allclose((lo + hi) / 2, theta - 0.5, atol=0.01)  # the bias is subtracted
        np.testing.assert_allclose(hi - lo, 2 * 1.96 * 0.1, rtol=0.08)
    lo, hi = mb.bootstrap_interval(theta, reps, 0.95, "normal")
    np.testing.assert_allclose((lo + hi) / 2, theta)
    lo, hi = mb.bootstrap_interval(theta, reps, 0.95, "percentile")
    np.testing.assert_allclose((lo + hi) / 2, theta + 0.5, atol=0.01)
    with pytest.raises(DDSSPError, match="interval must be one of"):
        mb.bootstrap_interval(theta, reps, 0.95, "studentized")


def test_bad_arguments(sample):
    with pytest.raises(DDSSPError, match="bootstrap must be"):
        IntervalOptions(bootstrap="jackknife")
    with pytest.raises(DDSSPError, match="needs bootstrap='mechanism'"):
        IntervalOptions(interval="basic")
    with pytest.raises(DDSSPError, match="boot must be an integer >= 2"):
        IntervalOptions(bootstrap="mechanism", boot=1)
    est = DDSSPLinearRegression(features=FEATS, ci=0.95, intervals=IntervalOptions(bootstrap="mechanism"))
    with pytest.raises(DDSSPError, match="needs a release"):
        est.fit(ExactMarginals(sample, cc.schema()), "y")


def test_cli_boot_method_mechanism(releases, tmp_path, capsys):
    path = tmp_path / "r.release"
    releases[1.0].save(path)
    argv = [
        "fit",
        str(path),
        "--target",
        "z",
        "--model",
        "logistic",
        "--features",
        ",".join(FEATS),
        "--ci",
        "0.9",
        "--boot",
        "4",
        "--seed",
        "2",
        "--boot-method",
        "mechanism",
    ]
    assert main(argv + ["--interval", "basic", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["ci"]["bootstrap"] == "mechanism" and res["ci"]["interval"] == "basic" and res["ci"]["boot"] == 4
    assert all(r["ci_low"] < r["ci_high"] for r in res["coefficients_scaled"])
    assert all(r["ci_low"] < r["ci_high"] for r in res["coefficients"] if r["ci_low"] is not None)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mechanism bootstrap, 4 simulated releases" in out and "std err" in out
    with pytest.raises(SystemExit):  # argparse's usage error
        main(argv + ["--interval", "median"])
    assert "invalid choice: 'median'" in capsys.readouterr().err
    bad = ["fit", str(path), "--target", "z", "--features", ",".join(FEATS), "--ci", "0.9", "--interval", "basic"]
    assert main(bad) == 1
    err = capsys.readouterr().err
    errors = [
        ln for ln in err.splitlines() if ln.startswith("ddssp: error:")
    ]  # (the other line: the seeded-noise stamp)
    assert len(errors) == 1 and "needs bootstrap='mechanism'" in errors[0] and "Traceback" not in err


def test_unmeasured_pairs_flagged_and_unbounded(sample, tmp_path, capsys):
    rel = _release(sample, 0.05, 3)  # at eps 0.05 AIM leaves pairs with the targets unmeasured
    cliques = [set(m.clique) for m in rel.measurements]
    for cls, target in MODELS:
        keep = _mech(cls, rel, target, boot=3, dp_noise=False, unmeasured="keep").conf_int()
        inf = _mech(cls, rel, target, boot=3, dp_noise=False, unmeasured="infinite").conf_int()
        expect = [n == "intercept" or any({n.split("=")[0], target} <= c for c in cliques) for n in keep["name"]]
        assert list(keep["pair_measured"]) == expect
        m = keep["pair_measured"].to_numpy()
        assert m[0] and not m.all(), (target, expect)  # this seeded release does leave some out
        np.testing.assert_array_equal(inf["ci_low"][m], keep["ci_low"][m])
        assert np.all(np.isneginf(inf["ci_low"][~m])) and np.all(np.isposinf(inf["ci_high"][~m]))
    exact = DDSSPLinearRegression(features=FEATS, ci=0.9, intervals=IntervalOptions(dp_noise=False)).fit(
        ExactMarginals(sample, cc.schema()), "y"
    )
    assert exact.conf_int()["pair_measured"].all()  # no measurements: nothing is imputed
    with pytest.raises(DDSSPError, match="unmeasured must be"):
        IntervalOptions(unmeasured="drop")
    path = tmp_path / "low.release"
    rel.save(path)
    argv = [
        "fit",
        str(path),
        "--target",
        "y",
        "--features",
        ",".join(FEATS),
        "--ci",
        "0.95",
        "--boot",
        "3",
        "--boot-method",
        "mechanism",
        "--no-dp-noise",
        "--unmeasured",
        "infinite",
    ]
    assert main(argv + ["--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["coefficients"]  # valid JSON: unbounded ends are null
    assert any(r["ci_low"] is None and not r["pair_measured"] for r in rows)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "unbounded" in out and "no released marginal holds this feature together with the target" in out
    assert main(argv[:-1] + ["keep"]) == 0
    out = capsys.readouterr().out
    assert "unbounded" not in out and "no released marginal holds this feature together with the target" in out
