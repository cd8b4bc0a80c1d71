"""The real-baselines bench kind: AdaSSP / objective perturbation on raw rows beside DD-SSP from a release."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp import bench
from ddssp.bench.baselines import eps_after_discovery, raw_row_baselines
from ddssp.bench.public_bounds import bounded_design, public_bounds_baselines
from ddssp.data.schema import Schema
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.errors import WorkloadError
from ddssp.estimators.design import Encoding


def _codes(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    x = rng.integers(0, 5, n)
    y = np.clip(np.rint(1.0 + 0.6 * x + np.where(a == 2, 1.5, 0.0) + rng.normal(0, 0.4, n)), 0, 4).astype(int)
    return pd.DataFrame({"a": a, "x": x, "y": y})


def _linear_r2(X_tr, y_tr, X_te, y_te) -> float:
    coef = np.linalg.lstsq(X_tr, y_tr, rcond=None)[0]
    return 1 - np.mean((X_te @ coef - y_te) ** 2) / np.var(y_te)


@pytest.mark.parametrize("task", ["linear", "logistic"])
def test_with_a_huge_eps_the_baselines_reach_the_non_private_fit_and_a_tiny_eps_costs_accuracy(task):
    schema = Schema.from_domain({"a": 3, "x": 5, "y": 5}, categorical=["a"])
    tr, te = _codes(3000, 1), _codes(1000, 2)
    if task == "linear":
        t = {"task": "linear"}
        enc = Encoding(schema, None, "y", "linear")
        y_tr, y_te = tr["y"].to_numpy(float), te["y"].to_numpy(float)  # level value = code here
    else:
        t = {"task": "logistic"}
        tr["y"], te["y"] = (tr["y"] >= 3).astype(int), (te["y"] >= 3).astype(int)
        schema = Schema.from_domain({"a": 3, "x": 5, "y": 2}, categorical=["a", "y"])
        enc = Encoding(schema, None, "y", "logistic", positive="1")
        y_tr, y_te = tr["y"].to_numpy(float), te["y"].to_numpy(float)

    def run(eps, seed):
        return raw_row_baselines(enc, tr, te, y_tr, y_te, t, eps, 1e-9, noise=InsecureSeededNoise(seed))

    big = run(1e7, 0)
    X_tr, X_te = enc.transform(tr), enc.transform(te)
    if task == "linear":
        ref = _linear_r2(X_tr, y_tr, X_te, y_te)
        assert set(big) == {"adassp"}
        assert big["adassp"]["r2"] == pytest.approx(ref, abs=0.01) and ref > 0.6
        small = [run(0.01, s)["adassp"]["r2"] for s in range(3)]
        assert np.mean(small) < ref - 0.1
    else:
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score

        ref = roc_auc_score(y_te, LogisticRegression(C=1e6).fit(X_tr[:, 1:], y_tr).decision_function(X_te[:, 1:]))
        assert set(big) == {"adassp", "objpert"}
        assert big["objpert"]["auc"] == pytest.approx(ref, abs=0.005) and ref > 0.8
        assert big["adassp"]["auc"] > ref - 0.02  # a linear probability model ranks nearly as well
        assert 0.5 < big["objpert"]["accuracy"] <= 1
        small = [run(0.01, s)["objpert"]["auc"] for s in range(3)]
        assert np.mean(small) < ref - 0.05


def _spec(tmp_path: Path, csv: Path, extra: str = "", trials: str = "1") -> Path:
    spec = tmp_path / "b.toml"
    spec.write_text(
        'name = "tiny"\nkind = "real-baselines"\nplot = false\neps = [2.0]\nsizes = ["full"]\ntrials = '
        + trials
        + "\n"
        + extra
        + f'[[tables]]\nname = "tiny"\nsource = "file:{csv}"\ntarget = "y"\ntask = "logistic"\npositive = "yes"\n'
    )
    return spec


def test_one_cell_has_every_method(tmp_path):
    rng = np.random.default_rng(5)
    n = 600
    a = rng.choice(["red", "green"], n, p=[0.6, 0.4])
    y = np.where(rng.random(n) < np.where(a == "red", 0.9, 0.1), "yes", "no")
    csv = tmp_path / "tiny.csv"
    pd.DataFrame({"a": a, "y": y}).to_csv(csv, index=False)
    results, _ = bench.run_bench(_spec(tmp_path, csv), tmp_path / "out", quiet=True)
    got = {(m, k): v for m, k, v in zip(results["method"], results["metric"], results["value"])}
    assert got[("release", "ok")] == 1.0, results["note"].iloc[0]
    for method in (
        "ddssp",
        "adassp",
        "objpert",
        "adassp_b",
        "objpert_b",
        "ddssp_pb",
        "adassp_pb",
        "objpert_pb",
        "synth_fit",
        "schema_public",
        "public",
        "majority",
    ):
        assert (method, "auc") in got and (method, "accuracy") in got, (method, results["note"].iloc[0])
    assert got[("majority", "auc")] == 0.5 and 0.4 < got[("majority", "accuracy")] < 0.7
    # one strong binary feature: every method that learns finds it (AUC 0.9 at the truth)
    for method in ("ddssp", "ddssp_pb", "objpert", "public"):
        assert got[(method, "auc")] > 0.8, method
    # the declared release is a second release; every column was declared, so it discovered nothing
    assert got[("release_pb", "ok")] == 1.0 and got[("release_pb", "columns_released")] == 2.0
    md = (tmp_path / "out" / "results.md").read_text()
    assert md.startswith("| table | rows | eps | metric |") and "| tiny | 600 | 2 | auc | 1/1 | 1/1 |" in md
    # option (b) runs at the eps the release had left after discovery: below 2, above 0
    from ddssp.releasefile import Release

    (rel_path,) = (p for p in (tmp_path / "out" / "releases").glob("*.release") if not p.stem.endswith("-pb"))
    rel = Release.load(rel_path)
    assert not Release.load(rel_path.with_name(rel_path.stem + "-pb.release")).ledger.discovery_entries
    assert rel.ledger.discovery_entries and 0.5 < eps_after_discovery(rel, 1e-9) < 2.0


def test_spec_errors(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("a,y\n1,yes\n")
    with pytest.raises(WorkloadError, match="trials"):
        bench.run_bench(_spec(tmp_path, csv, trials="0"), tmp_path / "o1", quiet=True)
    with pytest.raises(WorkloadError, match="delta"):
        bench.run_bench(_spec(tmp_path, csv, "delta = 2.0\n"), tmp_path / "o2", quiet=True)
    with pytest.raises(WorkloadError, match="declared"):
        bench.run_bench(_spec(tmp_path, csv, "declared = 1\n"), tmp_path / "o3", quiet=True)


def _raw(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 10, n)
    c = rng.choice(["p", "q", "r"], n)
    y = 3.0 + 0.2 * x + np.where(c == "r", 4.0, 0.0) + rng.normal(0, 1.0, n)
    df = pd.DataFrame({"x": x, "c": c, "y": y})
    df.loc[rng.random(n) < 0.1, "x"] = np.nan  # a missing indicator column
    return df


def test_bounded_design_rows_stay_inside_the_declared_norm_and_the_test_rows_are_clipped():
    tr, te = _raw(500, 1), _raw(200, 2)
    te.loc[0, "x"] = 1e6  # far outside the training range: clipped to 1
    kinds = {"x": "numeric", "c": "categorical", "y": "numeric"}
    X_tr, X_te, B = bounded_design(tr, te, {"target": "y"}, kinds, 50)
    assert X_tr.shape[1] == 1 + 1 + 1 + 2  # intercept, x, x missing, c one-hot without its first label
    assert B == pytest.approx(2.0)  # 1 + x + indicator + one one-hot group
    assert np.linalg.norm(X_tr, axis=1).max() <= B + 1e-12 and np.linalg.norm(X_te, axis=1).max() <= B + 1e-12
    assert X_te[0, 1] == 1.0


def test_public_bounds_baselines_reach_least_squares_at_a_huge_eps():
    tr, te = _raw(4000, 3), _raw(1000, 4)
    kinds = {"x": "numeric", "c": "categorical", "y": "numeric"}
    t = {"target": "y", "task": "linear"}
    got = public_bounds_baselines(tr, te, t, kinds, 50, 1e7, 1e-9, noise=InsecureSeededNoise(0))
    X_tr, X_te, _ = bounded_design(tr, te, t, kinds, 50)
    ref = _linear_r2(X_tr, tr["y"].to_numpy(), X_te, te["y"].to_numpy())
    assert ref > 0.8 and got["adassp_pb"]["r2"] == pytest.approx(ref, abs=0.01)
    low = public_bounds_baselines(tr, te, t, kinds, 50, 0.05, 1e-9, noise=InsecureSeededNoise(1))
    assert low["adassp_pb"]["r2"] < ref - 0.1


def test_declared_args_state_what_the_public_bounds_design_takes_as_public():
    from ddssp.bench.public_bounds import declared_args

    train = pd.DataFrame(
        {
            "x": [1.5, 3.0, np.nan, 2.0],
            "colour": ["red", "blue", None, "red"],
            "when": ["2020-01-01", "2020-02-01", "2020-03-01", "2020-04-01"],
            "a,b": [1, 2, 3, 4],
            "many": ["p", "q", "r", "s"],
            "y": [0.0, 1.0, 1.0, 0.0],
        }
    )
    kinds = {"x": "numeric", "colour": "categorical", "when": "date", "a,b": "numeric", "many": "categorical"}
    t = {"target": "y", "task": "logistic"}
    args, left = declared_args(train, t, {**kinds, "y": "numeric"}, max_onehot=3)
    pairs = list(zip(args[::2], args[1::2]))
    assert ("--bounds", "x=1.5:3.0") in pairs
    assert ("--levels", "colour=red,blue") in pairs and ("--missing", "colour=<missing>") in pairs
    assert ("--levels", "y=0.0,1.0") in pairs  # a logistic target's labels, not its range
    assert sorted(left) == ["a,b", "many", "when"]  # a comma in the name, too many labels, a date
    # a linear target is a numeric column like any other
    args, _ = declared_args(train, {"target": "y", "task": "linear"}, {**kinds, "y": "numeric"}, max_onehot=3)
    assert ("--bounds", "y=0.0:1.0") in list(zip(args[::2], args[1::2]))


def test_a_hold_out_label_a_declared_column_lacks_is_coded_like_the_public_bounds_design():
    from ddssp.bench.public_bounds import _seen_labels
    from ddssp.data.columns import Column

    schema = Schema(
        [
            Column.categorical("country", ["USA", "Canada"]),  # declared: no level for other labels
            Column.categorical("state", ["CA", "<other>"], missing="<other>"),  # discovered: has one
            Column.categorical("y", ["a", "b"]),
        ]
    )
    test = pd.DataFrame({"country": ["USA", "Micronesia", "Canada"], "state": ["CA", "ZZ", "CA"], "y": ["a", "b", "a"]})
    out = _seen_labels(test, schema, "y")
    assert out["country"].tolist() == ["USA", "USA", "Canada"]  # the first level: every indicator 0
    assert out["state"].tolist() == ["CA", "ZZ", "CA"]  # left to the column's own <other> level
    schema.encode(out)  # no unknown label left
    with pytest.raises(Exception, match="not among"):
        schema.encode(test)
