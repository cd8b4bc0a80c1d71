"""`ddssp fit`: coefficient table, --json, bad input as one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ddssp.cli import main
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.suffstats import ExactMarginals
from ddssp.pipeline import release
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
    np.testing.assert_allclose(list(out["coef"].values()), est.coef_, rtol=1e-12)
    assert out["intercept"] == pytest.approx(est.intercept_)
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
    np.testing.assert_allclose(list(out["coef"].values()), est.coef_, rtol=1e-12)
    assert out["positive_class"] == "yes"
    assert out["chebyshev"]["coef"][1] == pytest.approx(0.5)


def test_fit_table(fake_release, capsys):
    _, path, _ = fake_release
    assert main(["fit", path, "--target", "y"]) == 0
    out = capsys.readouterr().out
    assert "intercept" in out and "color=green" in out and "eps=1" in out
    est_lines = [ln for ln in out.splitlines() if ln.strip().startswith("age ")]
    assert len(est_lines) == 1


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
    rel = release(codes, schema, eps=4.0, delta=1e-6, seed=0, rounds=24, target="member", encoded=True)
    path = tmp_path / "mixed.release"
    rel.save(path)
    assert main(["fit", str(path), "--target", "member", "--model", "logistic", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    est = DDSSPLogisticRegression().fit(Release.load(path), target="member")
    np.testing.assert_allclose(list(out["coef"].values()), est.coef_, rtol=1e-9)
    assert out["privacy"]["eps"] == 4.0 and out["privacy"]["details"]["post_processing"] is True
    # the release's model total is a noisy estimate of the number of rows
    assert abs(out["n"] - len(codes)) < 0.1 * len(codes)
    exact = DDSSPLogisticRegression().fit(ExactMarginals(codes, schema), target="member")
    # the strong effects (age, rank, y drive member) are recovered close to the exact-marginal fit
    idx = [est.feature_names_in_.index(c) for c in ("age", "rank", "y")]
    assert np.max(np.abs(est.coef_[idx] - exact.coef_[idx])) < 0.4
