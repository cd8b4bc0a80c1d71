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
