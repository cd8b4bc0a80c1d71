"""The real-tables benchmark kind: its distances, and one release cell on a small generated table."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp import bench
from ddssp.bench.realtables import markdown_table
from ddssp.bench.tv_distance import discretize, tv_distances
from ddssp.errors import WorkloadError


def test_tv_identical_and_disjoint_labels():
    real = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["p"] * 100})
    kinds = {"a": "categorical", "b": "categorical"}
    assert tv_distances(real, real.copy(), kinds, 10, 0) == (0.0, 0.0)
    other = pd.DataFrame({"a": ["z"] * 100, "b": ["p"] * 100})
    tv1, tv2 = tv_distances(real, other, kinds, 10, 0)
    assert tv1 == pytest.approx(0.5)  # a: disjoint (1), b: equal (0)
    assert tv2 == pytest.approx(1.0)


def test_numeric_columns_compare_on_real_deciles_and_missing_is_a_category():
    real = pd.Series(np.arange(100, dtype=float).astype(str))
    far = pd.Series(["1000"] * 100)  # every synthetic value above the real maximum: the top decile bin only
    r, _, k = discretize(real, far, "numeric")
    assert k == 12  # 10 decile bins + missing + other
    assert np.bincount(r, minlength=k)[:10].tolist() == [10] * 10
    assert tv_distances(pd.DataFrame({"v": real}), pd.DataFrame({"v": far}), {"v": "numeric"}, 1, 0)[
        0
    ] == pytest.approx(0.9)
    half = pd.Series([None] * 50 + [str(i) for i in range(50)])
    full = pd.Series([str(i) for i in range(100)])
    tv1, _ = tv_distances(pd.DataFrame({"v": half}), pd.DataFrame({"v": full}), {"v": "numeric"}, 1, 0)
    assert tv1 >= 0.5  # half the real rows are missing, no synthetic row is
    text = pd.Series(["<other>"] * 100)  # a label in a numeric column is its own category
    assert tv_distances(pd.DataFrame({"v": full}), pd.DataFrame({"v": text}), {"v": "numeric"}, 1, 0)[0] == 1.0


def test_dates_compare_on_the_time_axis():
    real = pd.Series(pd.date_range("2012-01-01", periods=100).strftime("%Y-%m-%d"))
    assert (
        tv_distances(
            pd.DataFrame({"d": real}), pd.DataFrame({"d": real.iloc[::-1].reset_index(drop=True)}), {"d": "date"}, 1, 0
        )[0]
        == 0.0
    )
    late = pd.Series(["2030-01-01"] * 100)
    assert tv_distances(pd.DataFrame({"d": real}), pd.DataFrame({"d": late}), {"d": "date"}, 1, 0)[0] == pytest.approx(
        0.9
    )


def _spec(tmp_path: Path, csv: Path, extra: str = "") -> Path:
    spec = tmp_path / "real.toml"
    spec.write_text(
        'name = "tiny"\nkind = "real-tables"\neps = [1.0]\nsizes = ["full"]\n'
        + extra
        + f'[[tables]]\nname = "tiny"\nsource = "file:{csv}"\ntarget = "y"\ntask = "logistic"\npositive = "yes"\n'
    )
    return spec


def test_one_cell_on_a_generated_table(tmp_path):
    rng = np.random.default_rng(3)
    n = 4000
    a = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2])
    b = rng.choice(["left", "right"], n)
    y = np.where(rng.random(n) < np.where(a == "red", 0.85, 0.15), "yes", "no")
    csv = tmp_path / "tiny.csv"
    pd.DataFrame({"a": a, "b": b, "y": y}).to_csv(csv, index=False)
    results, _ = bench.run_bench(_spec(tmp_path, csv), tmp_path / "out", quiet=True)
    got = dict(zip(results["metric"], results["value"]))
    assert set(results["table"]) == {"tiny"} and set(results["rows"]) == {n}
    assert got["ok"] == 1.0, results["note"].iloc[0]
    assert got["cpu_s"] > 0 and 10 < got["peak_rss_mb"] < 5000
    assert got["columns"] == 3 and got["columns_dropped"] == 0
    assert 0 <= got["tv1"] < 0.05 and 0 <= got["tv2"] < 0.1  # three big labels, 3,200 rows, eps 1
    assert got["public_auc"] > 0.75
    assert got["ddssp_auc"] > 0.7 and got["schema_public_auc"] > 0.75  # a's effect on y survives the release
    md = (tmp_path / "out" / "results.md").read_text()
    assert md.startswith("| table | sample |") and "| tiny | full | 4000 | 1 | 1 |" in md


def test_a_failed_release_records_its_error_line(tmp_path):
    csv = tmp_path / "tiny.csv"
    pd.DataFrame({"a": ["u", "v"] * 10, "y": ["yes", "no"] * 10}).to_csv(csv, index=False)
    results, _ = bench.run_bench(_spec(tmp_path, csv), tmp_path / "out", quiet=True, eps=[1e-3])
    got = dict(zip(results["metric"], results["value"]))
    # 20 rows at eps 0.001 cannot support a release of discovered columns: today an error, later
    # perhaps a release with every column dropped; either way the cell says so
    if got["ok"] == 0.0:
        assert results["note"].iloc[0].startswith("ddssp: error: ")
        assert "tv1" not in got
    else:
        assert got["columns_dropped"] >= 1 and results["note"].iloc[0]
    assert markdown_table(results).count("\n") == 3


def test_spec_errors(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("a,y\n1,yes\n")
    with pytest.raises(WorkloadError, match="unknown key"):
        bench.run_bench(_spec(tmp_path, csv, "bogus = 1\n"), tmp_path / "o1", quiet=True)
    spec = tmp_path / "bad.toml"
    spec.write_text(
        'kind = "real-tables"\n[[tables]]\nname = "t"\nsource = "file:x.csv"\ntarget = "y"\ntask = "logistic"\n'
    )
    with pytest.raises(WorkloadError, match="positive"):
        bench.run_bench(spec, tmp_path / "o2", quiet=True)


def test_peak_rss_is_the_release_process_own(tmp_path):
    """The bench holds a large table in memory; the release's peak RSS must not include it."""
    from ddssp.bench.release_process import run_release

    ballast = bytearray(400 * 2**20)  # 400 MB resident in this process (every page written below)
    ballast[::4096] = b"x" * len(ballast[::4096])
    csv = tmp_path / "t.csv"
    csv.write_text("a\nx\n")
    r = run_release(csv, tmp_path / "t.release", 1.0, [], 600)
    assert r["ok"] or r["error"].startswith("ddssp: error: ")
    assert 5 < r["peak_rss_mb"] < 350 and r["cpu_s"] > 0


def test_release_args_must_be_a_list_of_flags(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("a,y\n1,yes\n")
    with pytest.raises(WorkloadError, match="release_args"):
        bench.run_bench(_spec(tmp_path, csv, 'release_args = "--discovery-share 0.5"\n'), tmp_path / "o", quiet=True)


def test_the_positive_label_matches_a_level_by_value():
    # a raw file's "1.0" is the discovered whole-number level "1"; text must match exactly
    from ddssp.bench.realtables import _orient

    assert _orient(["0", "1"], "1.0") == 1.0
    assert _orient(["1", "0"], "1.0") == -1.0
    assert _orient(["<=50K", ">50K"], ">50K") == 1.0
    with pytest.raises(ValueError, match="not among"):
        _orient(["0", "1"], "yes")
