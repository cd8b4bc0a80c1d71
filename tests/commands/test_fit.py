"""`ddssp fit`: coefficient table, --json, bad input as one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ddssp.cli import main
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.suffstats import ExactMarginals
from ddssp.pipeline import AimOptions, ReadOptions, release
from ddssp.releasefile import Release
from tests.estimators.test_suffstats import mixed_codes, mixed_schema


class FakeRelease(ExactMarginals):
    eps, delta = 1.0, 1e-9


@pytest.fixture
def fake_release(monkeypatch, tmp_path):
    src = FakeRelease(mixed_codes(seed=11), mixed_schema())
    path = tmp_path / "x.release"
    path.write_bytes(b"not used")
    loaded = []

    def load(p):
        loaded.append(str(p))
        return src

    monkeypatch.setattr(Release, "load", staticmethod(load))
    return src, str(path), loaded


def test_fit_json_linear(fake_release, capsys):
    src, path, loaded = fake_release
    assert main(["fit", path, "--target", "y", "--model", "linear", "--json"]) == 0
    assert loaded == [path]
    out = json.loads(capsys.readouterr().out)
    est = DDSSPLinearRegression().fit(src, target="y")
    assert out["model"] == "linear" and out["target"] == "y" and out["n"] == len(mixed_codes(seed=11))
    assert list(out["coef"]) == est.feature_names_in_
    np.testing.assert_allclose(list(out["coef_scaled"].values()), est.coef_, rtol=1e-12)
    np.testing.assert_allclose(list(out["coef"].values()), est.coef_data_, rtol=1e-12)
    assert out["intercept_scaled"] == pytest.approx(est.intercept_)
    assert out["intercept"] == pytest.approx(est.intercept_data_)
    assert out["privacy"]["details"] == {"post_processing": True}
    assert (out["privacy"]["eps"], out["privacy"]["delta"]) == (1.0, 1e-9) and "entries" not in out["privacy"]


def test_fit_json_logistic_with_options(fake_release, capsys):
    src, path, _ = fake_release
    argv = [
        "fit",
        path,
        "--target",
        "member",
        "--model",
        "logistic",
        "--features",
        "age,score,color",
        "--categorical",
        "score",
        "--numeric",
        "color",
        "--ridge",
        "2.5",
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    est = DDSSPLogisticRegression(
        ridge=2.5, features=["age", "score", "color"], encoding={"score": "onehot", "color": "numeric"}
    ).fit(src, target="member")
    assert list(out["coef"]) == ["age", "score=2", "score=5", "score=9", "color"]
    np.testing.assert_allclose(list(out["coef_scaled"].values()), est.coef_, rtol=1e-12)
    assert out["positive_class"] == "yes"
    assert out["chebyshev"]["coef"][1] == pytest.approx(0.5)


def test_fit_table(fake_release, capsys):
    _, path, _ = fake_release
    assert main(["fit", path, "--target", "y"]) == 0
    out = capsys.readouterr().out
    assert "intercept" in out and "color=green" in out and "eps=1" in out
    est_lines = [ln for ln in out.splitlines() if ln.strip().startswith("age ")]
    assert len(est_lines) == 1


def test_fit_json_is_enough_to_predict(fake_release, capsys):
    """From the JSON alone (schema entries + data-unit coefficients), raw rows give the estimator's
    predictions."""
    import pandas as pd

    src, path, _ = fake_release
    assert main(["fit", path, "--target", "y", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    codes = mixed_codes(50, seed=3)
    raw = src.schema.decode(codes)
    pred = np.full(len(raw), out["intercept"])
    for c in out["coefficients"][1:]:
        name = c["name"]
        if c["unit"].startswith("per 1 "):
            col = out["columns"][name]
            edges, values = col.get("edges"), col.get("values")
            x = pd.to_numeric(raw[name]).to_numpy(dtype=float)
            if edges is not None:  # a raw value stands for its bin's representative value
                x = np.asarray(values)[np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(values) - 1)]
            pred += c["coef"] * x
        else:
            col, level = name.split("=", 1)
            pred += c["coef"] * (raw[col].astype(str).to_numpy() == level)
    est = DDSSPLinearRegression().fit(src, target="y")
    np.testing.assert_allclose(pred, est.predict(raw.drop(columns="y")), atol=1e-9)


def test_fit_marks_unmeasured_pairs(monkeypatch, fake_release, capsys):
    src, path, _ = fake_release
    from ddssp.marginals.aim import Measurement

    monkeypatch.setattr(
        FakeRelease, "measurements", [Measurement(("age", "y"), 1.0, np.zeros((5, 4)), 1)], raising=False
    )
    assert main(["fit", path, "--target", "y"]) == 0
    out = capsys.readouterr().out
    marked = [ln for ln in out.splitlines() if ln.rstrip().endswith("*")]
    assert marked and all(not ln.strip().startswith("age ") for ln in marked)
    assert any(ln.strip().startswith("color=") for ln in marked)
    assert "no released marginal holds this feature together with the target" in out


def test_categorical_target_suggests_logistic(fake_release, capsys):
    _, path, _ = fake_release
    assert main(["fit", path, "--target", "member"]) == 1
    err = capsys.readouterr().err
    assert "--model logistic" in err and "--numeric" not in err


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--target", "nope"], "unknown target column 'nope'"),
        (["--target", "y", "--features", "age,nope"], "unknown feature column"),
        (["--target", "y", "--model", "logistic"], "binary target"),
        (["--target", "y", "--categorical", "age", "--numeric", "age"], "both in --categorical and --numeric"),
        (["--target", "y", "--ridge", "-1"], "--ridge must be >= 0"),
    ],
)
def test_fit_bad_input_one_line_error(fake_release, capsys, argv, msg):
    _, path, _ = fake_release
    assert main(["fit", path, *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ddssp: error:") and msg in err
    assert len(err.strip().splitlines()) == 1


def test_fit_missing_release_file(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "absent.release"), "--target", "y"]) == 1
    err = capsys.readouterr().err
    assert "not found" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_fit_real_release_end_to_end(tmp_path, capsys):
    """A real (small) AIM release saved to disk, then `ddssp fit` on the file alone."""
    schema, codes = mixed_schema(), mixed_codes(4000, seed=12)
    rel = release(
        codes,
        schema,
        eps=4.0,
        delta=1e-6,
        seed=0,
        target="member",
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=24),
    )
    path = tmp_path / "mixed.release"
    rel.save(path)
    assert main(["fit", str(path), "--target", "member", "--model", "logistic", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    est = DDSSPLogisticRegression().fit(Release.load(path), target="member")
    np.testing.assert_allclose(list(out["coef_scaled"].values()), est.coef_, rtol=1e-9)
    assert out["privacy"]["eps"] == 4.0 and out["privacy"]["details"]["post_processing"] is True
    # the release's model total is a noisy estimate of the number of rows
    assert abs(out["n"] - len(codes)) < 0.1 * len(codes)
    exact = DDSSPLogisticRegression().fit(ExactMarginals(codes, schema), target="member")
    # the strong effects (age, rank, y drive member) are recovered close to the exact-marginal fit
    idx = [est.feature_names_in_.index(c) for c in ("age", "rank", "y")]
    assert np.max(np.abs(est.coef_[idx] - exact.coef_[idx])) < 0.4


def test_predict_command_matches_the_estimator(fake_release, tmp_path, capsys):
    import pandas as pd

    src, path, _ = fake_release
    raw = src.schema.decode(mixed_codes(40, seed=8))
    data = tmp_path / "new.csv"
    raw.drop(columns=["member"]).to_csv(data, index=False)
    src.reading = {"na_values": [], "delimiter": ",", "encoding": "utf-8"}
    out = tmp_path / "pred.csv"
    argv = ["predict", path, str(data), "--target", "member", "--model", "logistic", "-o", str(out)]
    assert main(argv) == 0
    got = pd.read_csv(out)
    est = DDSSPLogisticRegression().fit(src, target="member")
    X = raw.drop(columns=["member"])
    np.testing.assert_allclose(got["probability"], est.predict_proba(X)[:, 1], atol=1e-12)
    assert set(got["prediction"]) <= {"no", "yes"} and list(got.columns[:-2]) == list(X.columns)
    assert main(argv) == 1 and "exists" in capsys.readouterr().err  # no silent overwrite
    # linear: predictions in the target's units
    raw.drop(columns=["y"]).to_csv(tmp_path / "lin_in.csv", index=False)
    assert main(["predict", path, str(tmp_path / "lin_in.csv"), "--target", "y", "-o", str(tmp_path / "lin.csv")]) == 0
    lin = DDSSPLinearRegression().fit(src, target="y")
    pred = lin.predict(raw.drop(columns=["y"]))
    np.testing.assert_allclose(pd.read_csv(tmp_path / "lin.csv")["prediction"], pred, atol=1e-9)
    # a table without a feature column: one line saying what to do
    raw.drop(columns=["y", "age"]).to_csv(tmp_path / "bad.csv", index=False)
    argv = ["predict", path, str(tmp_path / "bad.csv"), "--target", "y", "-o", str(tmp_path / "bad_out.csv")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("ddssp: error:") and "'age'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad_out.csv").exists()


def test_fit_positive_level_one_vs_rest(fake_release, capsys):
    """`--positive 2` fits y = 2 against y's other levels (y has four), in the JSON and the table."""
    src, path, _ = fake_release
    argv = ["fit", path, "--target", "y", "--model", "logistic", "--positive", "2"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    est = DDSSPLogisticRegression(positive="2").fit(src, target="y")
    np.testing.assert_allclose(list(out["coef_scaled"].values()), est.coef_, rtol=1e-12)
    assert out["positive_class"] == "2" and out["one_vs_rest"] is True
    assert out["negative_levels"] == ["0", "1.5", "10"]
    assert "log-odds of y = '2' against all its other levels" in out["how_to_predict"]
    assert out["coefficients"][0]["unit"] == "log-odds of y='2' vs the other levels"
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "positive class: y = '2' (vs '0', '1.5', '10')" in text
    assert [ln.split()[2] for ln in text.splitlines() if ln.strip().startswith("intercept ")] == ["log-odds"]
    # a binary target: --positive chooses which label is class 1
    assert main(["fit", path, "--target", "member", "--model", "logistic", "--positive", "no", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    default = DDSSPLogisticRegression().fit(src, target="member")
    np.testing.assert_allclose(list(out["coef_scaled"].values()), -default.coef_, rtol=1e-12)
    assert out["positive_class"] == "no" and out["negative_levels"] == ["yes"] and out["one_vs_rest"] is False


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--target", "y", "--model", "logistic", "--positive", "7"], "--positive level '7' is not a level of 'y'; "),
        (["--target", "member", "--model", "logistic", "--positive", "Yes"], "its levels are 'no', 'yes'"),
        (["--target", "y", "--positive", "2"], "--positive applies to --model logistic only"),
        (["--target", "y", "--model", "logistic"], "--positive LEVEL"),
    ],
)
def test_fit_positive_bad_input_one_line_error(fake_release, capsys, argv, msg):
    _, path, _ = fake_release
    assert main(["fit", path, *argv]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("ddssp: error:") and msg in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err
    assert captured.out == ""


def test_predict_command_positive_level(fake_release, tmp_path, capsys):
    import pandas as pd

    src, path, _ = fake_release
    raw = src.schema.decode(mixed_codes(40, seed=8))
    data = tmp_path / "new.csv"
    raw.drop(columns=["y"]).to_csv(data, index=False)
    src.reading = {"na_values": [], "delimiter": ",", "encoding": "utf-8"}
    out = tmp_path / "pred.csv"
    argv = ["predict", path, str(data), "--target", "y", "--model", "logistic", "--positive", "1.5", "-o", str(out)]
    assert main(argv) == 0
    assert "probability of y = '1.5'" in capsys.readouterr().out
    got = pd.read_csv(out, dtype={"prediction": str})
    est = DDSSPLogisticRegression(positive="1.5").fit(src, target="y")
    proba = est.predict_proba(raw.drop(columns=["y"]))[:, 1]
    np.testing.assert_allclose(got["probability"], proba, atol=1e-12)
    np.testing.assert_array_equal(got["prediction"], np.where(proba > 0.5, "1.5", "not 1.5"))
    assert set(got["prediction"]) == {"1.5", "not 1.5"}
