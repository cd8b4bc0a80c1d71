"""`ddssp evaluate`: the data holder's report (release vs data; not private, and it says so)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from ddssp.bench import ci_coverage as cc
from ddssp.cli import main
from ddssp.evaluation import BANNER, compare, tv
from ddssp.pipeline import ReadOptions, release

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval")
    codes = cc.sample_codes(cc.population(), 5000, np.random.default_rng(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(codes, cc.schema(), eps=2.0, seed=3, read=ReadOptions(encoded=True))
    rel.save(d / "pop.release")
    codes.to_csv(d / "pop.csv", index=False)
    return d, codes, rel


def test_tv():
    assert tv([1, 2, 3], [2, 4, 6]) == pytest.approx(0.0)
    assert tv([1, 0], [0, 5]) == pytest.approx(1.0)
    assert tv([1, 1], [3, -1]) == pytest.approx(0.5)  # negative noisy counts clipped to 0


def test_evaluate_values(files):
    _, codes, rel = files
    res = compare(rel, codes, target="y", features=cc.FEATURES)
    assert len(res["two_way"]) == 15 and res["rows_data"] == 5000
    tvs = [p["tv"] for p in res["two_way"]]
    assert all(0 <= t <= 1 for t in tvs) and tvs == sorted(tvs, reverse=True)
    assert res["two_way_max_tv"] == tvs[0]
    # the one-way TV equals the direct computation
    d = np.bincount(codes["x1"], minlength=5) / len(codes)
    r = rel.marginal(["x1"])
    assert res["one_way"]["x1"]["tv"] == pytest.approx(0.5 * np.abs(d - r / r.sum()).sum())
    names = [c["name"] for c in res["regression"]["coefficients"]]
    assert names[0] == "intercept" and len(names) == 6


def test_cli_report(files, capsys):
    d, _, _ = files
    out = d / "report.html"
    argv = [
        "evaluate",
        str(d / "pop.release"),
        str(d / "pop.csv"),
        "-o",
        str(out),
        "--target",
        "z",
        "--features",
        ",".join(cc.FEATURES),
    ]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "NOT FOR PUBLICATION" in cap.err and "NOT FOR PUBLICATION" in cap.out
    page = out.read_text()
    assert page.count(BANNER) == 2 and page.count("<img") == 1 + 6  # heatmap + one bar chart per column
    assert "logistic regression of z" in page
    assert main(argv) == 1  # refuses to overwrite
    assert "exists" in capsys.readouterr().err
    assert main(argv + ["--force", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["not_for_publication"] is True and len(res["two_way"]) == 15


def test_cli_bad_target(files, capsys):
    d, _, _ = files
    argv = ["evaluate", str(d / "pop.release"), str(d / "pop.csv"), "-o", str(d / "r2.html"), "--target", "nope"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "ddssp: error:" in err and "nope" in err
    assert not (d / "r2.html").exists()


def test_report_object_equals_cli(files, capsys):
    """``ddssp.evaluate`` (the notebook path) gives the same scores as the CLI report's JSON."""
    import pandas as pd

    import ddssp

    d, _, rel = files
    argv = ["evaluate", str(d / "pop.release"), str(d / "pop.csv"), "-o", str(d / "r3.html"), "--json"]
    argv += ["--target", "z", "--features", ",".join(cc.FEATURES)]
    assert main(argv) == 0
    cli = json.loads(capsys.readouterr().out)
    report = ddssp.evaluate(rel, pd.read_csv(d / "pop.csv"), target="z", features=cc.FEATURES)
    assert report.two_way_tv == pytest.approx(cli["two_way_mean_tv"], abs=1e-12)
    assert report.max_two_way_tv == pytest.approx(cli["two_way_max_tv"], abs=1e-12)
    for c, row in zip(report.columns["column"], report.columns["tv"]):
        assert row == pytest.approx(cli["one_way"][c]["tv"], abs=1e-12)
    assert list(report.pairs["tv"]) == pytest.approx([p["tv"] for p in cli["two_way"]], abs=1e-12)
    assert list(report.regression["release"]) == pytest.approx(
        [c["release"] for c in cli["regression"]["coefficients"]], abs=1e-12
    )
    assert report.get_score() == pytest.approx(1 - cli["two_way_mean_tv"])
    # a path gives the same report as the frame; every view says it is not for publication
    assert ddssp.evaluate(d / "pop.release", d / "pop.csv").two_way_tv == pytest.approx(report.two_way_tv)
    assert BANNER in report._repr_html_() and "NOT FOR PUBLICATION" in repr(report)
    assert report.to_dict()["not_for_publication"] is True
    page = report.to_html(d / "obj.html")
    assert (d / "obj.html").read_text() == page and page.count(BANNER) == 2
    with pytest.raises(ddssp.DDSSPError):
        report.to_html(d / "obj.html")  # no silent overwrite


def test_report_rejects_unknown_column(files):
    import pandas as pd

    import ddssp

    d, _, rel = files
    df = pd.read_csv(d / "pop.csv").assign(extra=1)
    with pytest.raises(ddssp.DDSSPError, match="extra"):
        ddssp.evaluate(rel, df.drop(columns=["x1"]))


def test_agency_measures_only_when_asked(files, capsys):
    """Without agency options the report is as before; with them it gains the agency's measures."""
    import pandas as pd

    import ddssp

    pytest.importorskip("sklearn")
    d, codes, rel = files
    plain = ddssp.evaluate(rel, codes, encoded=True)
    assert plain.agency is None and plain.kmarginal is None and "agency" not in plain.to_dict()
    assert "Agency measures" not in plain.to_html()

    def married_child(df):
        return (df["x1"] == 0) & (df["y"] == 4)

    rep = ddssp.evaluate(
        rel,
        codes,
        encoded=True,
        group="x1",
        quasi_identifiers=["x1", "x2"],
        rules=[("x1=0,y=4", married_child)],
        seed=5,
    )
    ag = rep.agency
    assert rep.kmarginal == pytest.approx(ag["kmarginal"]["score"]) and 0 < rep.kmarginal < 1000
    assert ag["rows_synthetic"] == ag["rows_data"] == len(codes)
    assert [g["group"] for g in ag["kmarginal"]["groups"]] and ag["kmarginal"]["group"] == "x1"
    assert ag["rules"][0]["data"] == int(married_child(codes).sum())
    assert set(ag) >= {"unique_exact_matches", "pmse", "apparent_matches"}
    # the same seed gives the same sampled rows and sub-samples
    again = ddssp.evaluate(rel, codes, encoded=True, group="x1", quasi_identifiers=["x1", "x2"], seed=5)
    assert again.agency["kmarginal"] == ag["kmarginal"]
    # given synthetic rows: the data itself scores 1000, with no rows sampled
    same = ddssp.evaluate(rel, pd.read_csv(d / "pop.csv"), synthetic=d / "pop.csv", fractions=[0.1, 0.5])
    assert same.kmarginal == pytest.approx(1000.0) and same.agency["unique_exact_matches"]["matched_percent"] == 100
    page = rep.to_html()
    assert "Agency measures" in page and page.count("<img") == 1 + 1 + 6 and page.count(BANNER) == 2
    assert "k-marginal" in repr(rep) and "k-marginal" in rep._repr_html_()


def test_cli_agency(files, capsys):
    pytest.importorskip("sklearn")
    d, _, _ = files
    base = ["evaluate", str(d / "pop.release"), str(d / "pop.csv"), "--force"]
    argv = base + ["-o", str(d / "ag.html"), "--group", "x1", "--quasi-identifiers", "x1,x2", "--seed", "3"]
    assert main(argv + ["--synthetic-rows", "2000", "--fractions", "0.1,0.5"]) == 0
    out = capsys.readouterr().out
    assert "k-marginal score" in out and "sub-sample of the data" in out and "within x1" in out
    assert "unique exact matches" in out and "apparent matches on x1, x2" in out and "pMSE" in out
    assert main(argv + ["--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    ag = res["agency"]
    assert ag["rows_synthetic"] == 5000 and len(ag["kmarginal"]["calibration"]["fractions"]) == 11
    assert ag["kmarginal"]["features"] == ["x2", "x3", "x4", "y", "z"]
    # fixed bins merge levels of y: the k-marginal can only rise
    assert main(argv + ["--json", "--edges", "y=-1,2,9"]) == 0
    assert json.loads(capsys.readouterr().out)["agency"]["kmarginal"]["score"] >= ag["kmarginal"]["score"] - 1e-9
    # given synthetic rows: the data against itself
    assert main(base + ["-o", str(d / "ag2.html"), "--synthetic", str(d / "pop.csv"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agency"]["kmarginal"]["score"] == pytest.approx(1000.0)
    # bad input: one line, non-zero
    for bad, msg in [
        (["--fractions", "0.5,2"], "--fractions"),
        (["--synthetic-rows", "0"], "--synthetic-rows"),
        (["--group", "nope"], "nope"),
        (["--edges", "y=3,1"], "--edges"),
        (["--edges", "nope=1,2"], "nope"),
    ]:
        assert main(base + ["-o", str(d / "ag3.html")] + bad) == 1
        err = capsys.readouterr().err
        assert "ddssp: error:" in err and msg in err and "Traceback" not in err
