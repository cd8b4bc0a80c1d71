"""The impossible-values bench kind: its counts of values the real columns cannot hold, and one tiny
end-to-end run (a file table, one size, one release)."""

import numpy as np
import pandas as pd
import pytest

from ddssp.bench import runner as bench
from ddssp.bench.impossible import impossible_counts, parse_spec
from ddssp.data import Schema
from ddssp.data.columns import Column
from ddssp.errors import WorkloadError


def _schema():
    return Schema(
        [
            Column.binned("age", [17, 30, 50, 91], [24, 40, 60]),
            Column.binned("hhmm", [0, 800, 1600, 2400], [400, 1200, 2000]),
            Column.categorical("c", ["a", "b", "<other>"]),
        ]
    )


def test_counts_each_kind_of_impossible_value():
    real = pd.DataFrame({"age": [20, 40, 90], "hhmm": [5, 1230, 2359], "c": ["a", "b", "a"]})
    # age: real 20..90 in 3 bins, one bin width 70 / 3; -5 is negative, 950 above 10x the max and out of
    # range, 115 out of range only; hhmm: 1275 and 2400 are no clock times; c: all labels released
    synth = pd.DataFrame(
        {"age": [-5, 950, 115, 50], "hhmm": [1275, 2400, 1259, 0], "c": ["a", "<other>", "<other>", "b"]}
    )
    out = impossible_counts(real, synth, _schema(), ["hhmm"])
    assert out["negative"] == 1
    assert out["over_10x"] == 1
    assert out["out_of_range"] == 3  # -5, 950, 115 (hhmm: every value within one bin width)
    assert out["bad_clock"] == 2
    assert out["impossible"] == 1 + 1 + 2
    assert out["other_share"] == pytest.approx(0.5)
    assert out["other_columns"] == 1  # one all-released column draws <other>


def test_other_share_is_not_counted_where_a_real_label_was_not_released():
    real = pd.DataFrame({"age": [20, 40, 90], "hhmm": [5, 1230, 2359], "c": ["a", "b", "z"]})
    synth = pd.DataFrame({"age": [20, 40, 90, 50], "hhmm": [5, 10, 15, 20], "c": ["<other>"] * 4})
    out = impossible_counts(real, synth, _schema(), [])
    assert np.isnan(out["other_share"]) and out["other_columns"] == 0
    assert out["impossible"] == 0 and out["out_of_range"] == 0


def test_spec_errors_are_one_clear_line(tmp_path):
    ctx = bench.BenchContext(spec_path=tmp_path / "s.toml", outdir=tmp_path)
    with pytest.raises(WorkloadError, match="unknown key"):
        parse_spec({"kind": "impossible-values", "bogus": 1, "tables": [{"name": "t", "source": "file:x.csv"}]}, ctx)
    with pytest.raises(WorkloadError, match="sizes"):
        parse_spec({"tables": [{"name": "t", "source": "file:x.csv"}], "sizes": [3]}, ctx)
    with pytest.raises(WorkloadError, match="methods"):
        parse_spec({"tables": [{"name": "t", "source": "file:x.csv", "methods": ["bogus"]}]}, ctx)


def test_runs_end_to_end_on_a_small_file(tmp_path):
    # 1,000 rows: at 400 a release for the target c left age out in about half of the fresh draws
    # (measured 7 of 12), and a release whose features all drop is refused
    rng = np.random.default_rng(0)
    n = 1000
    pd.DataFrame(
        {
            "age": rng.integers(17, 91, n),
            "c": rng.choice(["a", "b"], n),
        }
    ).to_csv(tmp_path / "t.csv", index=False)
    spec = tmp_path / "imp.toml"
    spec.write_text(
        'kind = "impossible-values"\nname = "tiny"\nplot = false\neps = 1.0\nreleases = 1\nsizes = ["full"]\n'
        '[[tables]]\nname = "t"\nsource = "file:t.csv"\ntarget = "c"\nmethods = ["target"]\n'
    )
    results, _ = bench.run_bench(spec, tmp_path / "out", quiet=True)
    got = dict(zip(results["metric"], results["value"]))
    assert set(results["method"]) == {"target"}  # --target c, and only that method
    assert got["ok"] == 1.0
    assert got["target_labels"] == 2  # both of c's labels kept
    assert got["impossible"] == 0
    assert (tmp_path / "out" / "results.md").read_text().startswith("| table |")
