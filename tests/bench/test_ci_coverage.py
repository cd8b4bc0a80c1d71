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
