"""The generic part of `ddssp bench`: spec loading, summary, output files, CLI errors."""

import numpy as np
import pandas as pd
import pytest

from ddssp.bench import runner as bench
from ddssp.cli import main
from ddssp.errors import WorkloadError


def fake_runner(spec, ctx):
    rows = []
    for method in ctx.methods or spec["methods"]:
        for eps in ctx.eps or spec["eps"]:
            for t in range(ctx.trials or spec["trials"]):
                rows.append(dict(method=method, epsilon=eps, trial=t, metric="mse", value=eps + t, seconds=0.1))
    return pd.DataFrame(rows)


@pytest.fixture
def spec(tmp_path, monkeypatch):
    monkeypatch.setitem(bench.RUNNERS, "fake", "tests.bench.test_runner:fake_runner")
    p = tmp_path / "s.toml"
    p.write_text('kind = "fake"\nname = "t"\nmethods = ["a", "b"]\neps = [0.1, 1.0]\ntrials = 3\n')
    return p


def test_run_bench_writes_results_and_summary(spec, tmp_path, capsys):
    out = tmp_path / "out"
    results, summary = bench.run_bench(spec, out, quiet=True)
    assert len(results) == 2 * 2 * 3
    assert (out / "results.csv").exists() and (out / "summary.csv").exists()
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    back = pd.read_csv(out / "results.csv")
    assert list(back.columns[:6]) == ["method", "epsilon", "trial", "metric", "value", "seconds"]
    row = summary[(summary.method == "a") & (summary.epsilon == 0.1)].iloc[0]
    assert row["mean"] == pytest.approx(1.1) and row["count"] == 3
    assert row["se"] == pytest.approx(np.std([0.1, 1.1, 2.1], ddof=1) / np.sqrt(3))
    assert "mean" in capsys.readouterr().out
    # refuses to overwrite results without force; overrides are passed through
    with pytest.raises(WorkloadError):
        bench.run_bench(spec, out, quiet=True)
    results, _ = bench.run_bench(spec, out, quiet=True, force=True, trials=1, eps=[2.0], methods=["b"])
    assert len(results) == 1 and results.iloc[0]["method"] == "b"


def test_bad_specs(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("kind = [unclosed\n")
    with pytest.raises(WorkloadError, match="TOML"):
        bench.load_spec(bad)
    bad.write_text('kind = "nope"\n')
    with pytest.raises(WorkloadError, match="unknown kind"):
        bench.load_spec(bad)
    with pytest.raises(WorkloadError, match="not found"):
        bench.load_spec(tmp_path / "missing.toml")
    code = main(["bench", str(bad), "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("ddssp: error:") and "Traceback" not in err


def test_bad_overrides(spec, tmp_path):
    with pytest.raises(WorkloadError):
        bench.run_bench(spec, tmp_path / "o", trials=0, quiet=True)
    with pytest.raises(WorkloadError):
        bench.run_bench(spec, tmp_path / "o", eps=[0.0], quiet=True)


# ------------------------------------------------------------------ incremental results and --resume
NAPP_SPEC = """
kind = "napp-erm-simulation"
eps = [0.5, 1.0]
trials = 3
n_e = 200
max_iter = 12
n_test = 200
methods = ["NAPP-ERM", "NAPP-VS+", "lasso"]
[[designs]]
loss = "linear"
n = 80
Lambda = [1.0, 4.0]
y_bound = 1.7
theta_bound = 2.0
"""


def _without_seconds(path):
    return pd.read_csv(path).drop(columns="seconds")


def _assert_same_cells(a: pd.DataFrame, b: pd.DataFrame, value: str = "value") -> None:
    """Same rows (every column but the values), and the same values for the non-private lasso, which
    depends only on the seeded data. The DP methods' values differ: their noise comes from the secure
    source, which no seed reaches."""
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    keys = [c for c in a.columns if c not in (value, "seconds")]
    pd.testing.assert_frame_equal(a[keys], b[keys])
    lasso = a.method == "lasso"
    assert lasso.any()
    np.testing.assert_array_equal(a.loc[lasso, value].to_numpy(), b.loc[lasso, value].to_numpy())


def test_killed_run_resumes_to_the_uninterrupted_results(tmp_path, monkeypatch):
    """A bench run killed after its first trial (cell) resumes with --resume: the finished cell is kept as it
    is on disk, the others are computed, and the result has the same cells as an uninterrupted run with the
    same seed (identical seeded data: identical lasso numbers; the DP noise is secure, so not bit-equal)."""
    spec = tmp_path / "napp.toml"
    spec.write_text(NAPP_SPEC)
    full_out, out = tmp_path / "full", tmp_path / "stopped"
    bench.run_bench(spec, full_out, quiet=True, seed=7)

    real_save, saved = bench.BenchContext.save_cell, []

    def save_then_die(self, rows):
        real_save(self, rows)
        saved.append(len(rows))
        raise KeyboardInterrupt  # killed right after the first trial is on disk

    monkeypatch.setattr(bench.BenchContext, "save_cell", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        bench.run_bench(spec, out, quiet=True, seed=7)
    monkeypatch.setattr(bench.BenchContext, "save_cell", real_save)
    first = pd.read_csv(out / "results.csv")
    assert len(saved) == 1 and len(first) == saved[0] and set(first.trial) == {0}
    assert not (out / "summary.csv").exists()

    # a plain rerun refuses (and says what to do); a resume with another seed refuses
    with pytest.raises(WorkloadError, match="--resume"):
        bench.run_bench(spec, out, quiet=True, seed=7)
    with pytest.raises(WorkloadError, match="different seed"):
        bench.run_bench(spec, out, quiet=True, seed=8, resume=True)

    computed = []

    def counting_save(self, rows):
        computed.append(len(rows))
        real_save(self, rows)

    monkeypatch.setattr(bench.BenchContext, "save_cell", counting_save)
    bench.run_bench(spec, out, quiet=True, seed=7, resume=True)
    assert len(computed) == 2 * 3 - 1  # every cell but the finished one
    resumed = _without_seconds(out / "results.csv")
    cell = (resumed.trial == 0) & resumed["lambda"].isin(first["lambda"].unique())
    # the finished cell, read back as is (its DP values included)
    order = ["method", "epsilon", "metric"]
    pd.testing.assert_frame_equal(
        resumed[cell].sort_values(order).reset_index(drop=True),
        first.drop(columns="seconds")[list(resumed.columns)].sort_values(order).reset_index(drop=True),
    )
    _assert_same_cells(resumed, _without_seconds(full_out / "results.csv"))
    _assert_same_cells(
        pd.read_csv(out / "summary.csv").drop(columns=["seconds", "se"]),
        pd.read_csv(full_out / "summary.csv").drop(columns=["seconds", "se"]),
        value="mean",
    )
    with pytest.raises(WorkloadError, match="already finished"):
        bench.run_bench(spec, out, quiet=True, seed=7, resume=True)
    # --resume --trials N shrinks or extends a run; the trials it keeps are unchanged
    computed.clear()
    results, _ = bench.run_bench(spec, out, quiet=True, seed=7, resume=True, trials=2)
    assert computed == [] and set(results.trial) == {0, 1}
    pd.testing.assert_frame_equal(results.drop(columns="seconds"), resumed[resumed.trial < 2].reset_index(drop=True))


def test_resume_errors_and_default_outdir(spec, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(WorkloadError, match="nothing to resume"):
        bench.run_bench(spec, resume=True, quiet=True)
    with pytest.raises(WorkloadError, match="exclude"):
        bench.run_bench(spec, force=True, resume=True, quiet=True)
    assert main(["bench", str(spec), "--quiet"]) == 0  # -o defaults to bench-out/<spec stem>
    assert (tmp_path / "bench-out" / "s" / "results.csv").exists()
    capsys.readouterr()


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path, capsys):
    ctx = bench.BenchContext(spec_path=tmp_path / "s.toml", outdir=tmp_path)
    bar = ctx.progress(100, "work")
    for _ in range(100):
        bar.update(1)
    bar.close()
    assert capsys.readouterr().err == ""  # pytest's captured stderr is not a tty


def test_renamed_spec_keys_still_read_with_a_warning(tmp_path):
    """Spec keys follow the package's spelling (``eps``); a spec with the former spelling still runs
    for one release, with a DeprecationWarning, and a spec giving both is refused."""
    from ddssp.bench import BenchContext

    ctx = BenchContext(spec_path=tmp_path / "x.toml", outdir=tmp_path, quiet=True, seed=0)
    assert ctx.setting({"eps": [1.0]}, "eps", None, [9.0], old="epsilon") == [1.0]
    with pytest.warns(DeprecationWarning, match="'epsilon' is deprecated"):
        assert ctx.setting({"epsilon": [2.0]}, "eps", None, [9.0], old="epsilon") == [2.0]
    assert ctx.setting({}, "eps", None, [9.0], old="epsilon") == [9.0]
    assert ctx.setting({"epsilon": [2.0]}, "eps", [3.0], None, old="epsilon") == [3.0]  # --eps overrides
    with pytest.raises(WorkloadError, match="both"):
        ctx.setting({"eps": [1.0], "epsilon": [2.0]}, "eps", None, old="epsilon")
