"""The ci-coverage bench kind runs end to end (tiny settings), writes its rows cell by cell, resumes,
and draws its plot. Coverage numbers themselves are the bench's output, not asserted here."""

import pandas as pd

from ddssp.bench import runner as bench

SPEC = """
kind = "ci-coverage"
name = "ci-tiny"
rows = 3000
eps = [1.0]
trials = 2
boot = 3
boot_iters = 10
sampling_rows = 500
mechanism_boot = 3
mechanism_intervals = ["normal", "basic"]
"""


def test_ci_coverage_bench_rows_resume_and_plot(tmp_path):
    spec = tmp_path / "ci.toml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    results, _ = bench.run_bench(spec, out, quiet=True, trials=1)
    methods = set(results["method"])
    for m in (
        "linear/dp+sampling",
        "linear/boot-dp+sampling",
        "logistic/dp+sampling/measured",
        "logistic/boot-dp+sampling/model",
        "linear/sampling-only",
        "logistic/mech-normal",
        "logistic/mech-basic",
        "linear/mech-sampling-only-normal",
        "linear/mech-normal+unmeasured-inf",
        "linear/coef/x1",
        "cost",
        "release",
    ):
        assert m in methods, m
    cov = results[results["metric"].isin(["cover90", "cover95"])]["value"]
    assert cov.between(0, 1).all()
    # coverage by basis is kept as counts: per model and trial the two bases hold every coefficient
    counts = results[results["method"].str.match(r"^linear/dp\+sampling/(measured|model)$")]
    n = counts[counts["metric"] == "n"].groupby("trial")["value"].sum()
    assert (n == 6).all()
    hit = counts[counts["metric"] == "covered95"]["value"].to_numpy()
    assert (hit >= 0).all() and (hit <= counts[counts["metric"] == "n"]["value"].to_numpy()).all()
    assert set(results[results["method"] == "cost"]["metric"]) == {"cpu_fixed_bootstrap", "cpu_mechanism_bootstrap"}
    assert (out / "coverage.png").read_bytes()[:4] == b"\x89PNG"
    first = pd.read_csv(out / "results.csv")
    # extend the stopped run to 2 trials: trial 0 is read back, not recomputed (its secure-noise
    # release would differ), and trial 1 is added
    results2, _ = bench.run_bench(spec, out, quiet=True, trials=2, resume=True)
    again = pd.read_csv(out / "results.csv")
    assert sorted(again["trial"].unique()) == [0, 1]
    t0 = again[again["trial"] == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(t0, first, check_dtype=False)


def test_ci_coverage_bench_on_a_table(tmp_path):
    """With ``data`` the table is the population: trials resample its rows, the truth is DD-SSP on
    its exact marginals, and every coefficient gets its model-error sensitivity."""
    import json

    import numpy as np
    import pytest

    from ddssp.bench import ci_coverage as cc
    from ddssp.errors import WorkloadError

    codes = cc.sample_codes(cc.population(), 600, np.random.default_rng(0))
    codes.to_csv(tmp_path / "table.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps(cc.DOMAIN))
    spec = tmp_path / "ci.toml"
    spec.write_text(
        'kind = "ci-coverage"\nname = "ci-table"\ndata = "table.csv"\ndomain = "domain.json"\n'
        'categorical = ["x3", "x4", "z"]\ntargets = { logistic = "z" }\nfeatures = ["x1", "x2", "x3", "x4"]\n'
        "eps = [0.3]\ntrials = 1\nboot = 3\nboot_compare_trials = 0\nsampling_rows = 500\ncompare_ridge = 0.0\n"
    )
    results, _ = bench.run_bench(spec, tmp_path / "out", quiet=True, data_dir=tmp_path)
    methods = set(results["method"])
    assert "logistic/dp+sampling/model" in methods and not any(m.startswith("linear/") for m in methods)
    coef = results[results["method"].str.startswith("logistic/coef/")]
    assert {"err", "se_dp", "se_model", "se_sampling", "sens_e_t", "sens_e_o"} <= set(coef["metric"])
    n = results[(results["method"].str.match(r"^logistic/dp\+sampling/(measured|model)$")) & (results["metric"] == "n")]
    assert n["value"].sum() == 6
    assert (results[(results["method"] == "release") & (results["metric"] == "kappa_median")]["value"] >= 1).all()
    err = coef[coef["metric"] == "err"]["value"].abs()
    assert (err < 5).all()  # the truth is the table's own DD-SSP fit, not the built-in population's
    # the same release at ridge 0, and the truth at the fit's own penalty (the plain truth when the
    # floor lifted nothing)
    assert {"logistic/ridge0", "logistic/dp+sampling-vs-penalised/measured"} <= methods
    wide = coef.pivot_table(index="method", columns="metric", values="value")
    assert {"err_ridge0", "se_ridge0"} <= set(wide.columns) and wide["shrink"].between(-1e-9, 1 + 1e-9).all()
    assert np.isfinite(wide["err_penalised"]).all()
    # the ridge-0 fit's parts add up to its standard error, and both fits share the sample's own fit
    parts = wide["se_dp_ridge0"] ** 2 + wide["se_sampling_ridge0"] ** 2 + wide["se_model_ridge0"] ** 2
    np.testing.assert_allclose(parts, wide["se_ridge0"] ** 2, rtol=1e-9)
    sample_fit = wide["err_ridge0"] - wide["err_data_fit_ridge0"]
    np.testing.assert_allclose(sample_fit, wide["err"] - wide["err_data_fit"], atol=1e-9)
    if (wide["shrink"] == 0).all():
        np.testing.assert_allclose(wide["err_penalised"], wide["err"], atol=1e-9)
    spec.write_text(spec.read_text().replace("compare_ridge = 0.0", 'compare_ridge = "no"'))
    with pytest.raises(WorkloadError, match="compare_ridge"):
        bench.run_bench(spec, tmp_path / "out2", quiet=True, data_dir=tmp_path)


def test_ci_coverage_release_target_and_per_model_features(tmp_path):
    """``release_target`` releases with a declared target (AIM measures it with every other column, so
    every logistic pair is measured), ``features = {model = "others"}`` takes every column but the
    model's own target, and per-coefficient rows carry the DP part's error and the level's count."""
    import json

    import numpy as np
    import pytest

    from ddssp.bench import ci_coverage as cc
    from ddssp.errors import WorkloadError

    codes = cc.sample_codes(cc.population(), 600, np.random.default_rng(1))
    codes.to_csv(tmp_path / "table.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps(cc.DOMAIN))
    text = (
        'kind = "ci-coverage"\nname = "ci-target"\ndata = "table.csv"\ndomain = "domain.json"\n'
        'categorical = ["x3", "x4", "z"]\ntargets = { logistic = "z" }\nfeatures = { logistic = "others" }\n'
        'release_target = "z"\neps = [1.0]\ntrials = 1\nboot = 3\nboot_compare_trials = 0\nsampling_rows = 500\n'
    )
    spec = tmp_path / "ci.toml"
    spec.write_text(text)
    results, _ = bench.run_bench(spec, tmp_path / "out", quiet=True, data_dir=tmp_path)
    coef = results[results["method"].str.startswith("logistic/coef/")]
    names = {m.split("/")[2] for m in coef["method"]}
    assert names == {"intercept", "x1", "x2", "x3=1", "x3=2", "x4=1", "y"}  # y is a feature of the z model
    wide = coef.pivot_table(index="method", columns="metric", values="value")
    assert (wide["pair_measured"] == 1).all()  # the declared target's pairs are all measured
    assert np.isfinite(wide["err_data_fit"]).all()
    onehot = wide.index.str.contains("=")
    assert (wide.loc[onehot, "level_count"] > 0).all() and wide.loc[~onehot, "level_count"].isna().all()
    spec.write_text(text.replace('release_target = "z"', 'release_target = "nope"'))
    with pytest.raises(WorkloadError, match="release_target"):
        bench.run_bench(spec, tmp_path / "out2", quiet=True, data_dir=tmp_path)
