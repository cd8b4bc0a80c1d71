"""The agency's measures of synthetic rows (ddssp.evaluation.agency) on small generated tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.errors import DDSSPError
from ddssp.evaluation.agency import (
    agency_scores,
    apparent_matches,
    discretise,
    kmarginal,
    pmse,
    rule_violations,
    subsample_calibration,
    unique_exact_matches,
)


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    """Correlated columns: a group, two categorical codes, a text column and a continuous one."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["p1", "p2", "p3"], n, p=[0.5, 0.3, 0.2])
    a = rng.integers(0, 5, n) + (g == "p1")
    b = (a + rng.integers(0, 2, n)) % 6
    c = np.where(a > 2, "hi", "lo")
    x = rng.normal(size=n) + a
    return pd.DataFrame({"g": g, "a": a, "b": b, "c": c, "x": x})


def _shuffled(df: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.permutation(df[c].to_numpy()) for c in df.columns})


def test_kmarginal_of_the_data_itself_is_1000():
    df = _table(2000)
    assert kmarginal(df, df)["score"] == pytest.approx(1000.0)
    res = kmarginal(df, df.sample(frac=1.0, random_state=2), group="g")  # row order does not matter
    assert res["score"] == pytest.approx(1000.0)
    assert [g["score"] for g in res["groups"]] == pytest.approx([1000.0] * 3)
    assert sorted(g["group"] for g in res["groups"]) == ["p1", "p2", "p3"]
    assert res["features"] == ["a", "b", "c", "x"] and res["pairs"] == 6


def test_kmarginal_of_independent_shuffled_columns_is_lower():
    df = _table(4000)
    sh = _shuffled(df)
    plain = kmarginal(df, sh)["score"]
    assert plain < 900  # a and b, a and c, a and x are strongly dependent in the data
    # a second sample of the same distribution scores far higher than the shuffled columns
    assert kmarginal(df, _table(4000, seed=9))["score"] > plain + 50


def test_kmarginal_by_hand_and_disjoint():
    real = pd.DataFrame({"a": ["u", "u", "v", "v"], "b": ["s", "t", "s", "t"]})
    syn = pd.DataFrame({"a": ["u", "u", "u", "v"], "b": ["s", "s", "t", "t"]})
    # real: us .25 ut .25 vs .25 vt .25; synthetic: us .5 ut .25 vt .25 -> L1 = .25 + .25 = .5
    assert kmarginal(real, syn)["score"] == pytest.approx((2 - 0.5) * 500)
    other = pd.DataFrame({"a": ["w"] * 3, "b": ["z"] * 3})
    assert kmarginal(real, other)["score"] == pytest.approx(0.0)
    # one feature: its one-way histogram
    assert kmarginal(real[["a"]], syn[["a"]])["score"] == pytest.approx((2 - 0.5) * 500)


def test_grouped_kmarginal_by_hand():
    """Within a group: the L1 of the joint densities inside it, capped at its share, scaled by it."""
    real = pd.DataFrame({"g": [1, 1, 2, 2], "a": ["u", "v", "u", "v"], "b": ["s", "s", "s", "t"]})
    syn = pd.DataFrame({"g": [1, 1, 1, 2], "a": ["u", "u", "v", "v"], "b": ["s", "s", "s", "t"]})
    res = kmarginal(real, syn, group="g")
    # (g,a,b) densities: real 1us .25 1vs .25 2us .25 2vt .25; synthetic 1us .5 1vs .25 2vt .25
    assert res["score"] == pytest.approx((2 - 0.5) * 500)
    by = {r["group"]: r["score"] for r in res["groups"]}
    # group 1: |.25-.5| = .25, share .5 -> .5; group 2: |.25-0| = .25, share .5 -> .5
    assert by == pytest.approx({1: 500.0, 2: 500.0})


def test_numeric_bins_follow_the_data_percentiles():
    rng = np.random.default_rng(3)
    real = pd.DataFrame({"x": rng.normal(size=1000)})
    R, S, sizes = discretise(real, pd.DataFrame({"x": [-100.0, 100.0, real["x"].median(), np.nan]}))
    assert sizes[0] == 21  # 20 percentile bins and the missing bin
    counts = np.bincount(R[:, 0], minlength=21)
    # SDNist's rule min(int(20 x rank / n), 19): ranks 1-49 in the first bin, 950-1000 in the last
    assert counts[0] == 0 and counts[1] == 49 and (counts[2:20] == 50).all() and counts[20] == 51
    # below all -> first bin, above all -> last, the median (between ranks 500 and 501) -> the bin
    # of ranks 500-549, missing -> code 0 (sorted first)
    assert list(S[:, 0]) == [1, 20, 11, 0]
    # a value tied by many rows (a top code) gets a bin of its own
    top = pd.DataFrame({"x": np.concatenate([np.arange(400.0), np.full(600, 501.0)])})
    R, _, _ = discretise(top, top)
    assert (R[:, 0][400:] == R[400, 0]).all() and not (R[:400, 0] == R[400, 0]).any()
    # text and numbers that spell the same value compare equal
    R, S, _ = discretise(pd.DataFrame({"k": [1, 2, 2]}), pd.DataFrame({"k": ["1", "2", "2"]}))
    assert (R == S).all()


def test_fixed_edges():
    real = pd.DataFrame({"d": [10.0, 100.0, 1000.0]})
    R, S, sizes = discretise(real, pd.DataFrame({"d": [5.0, 150.0, 5000.0]}), edges={"d": [0, 50, 500, 2000]})
    assert list(R[:, 0]) == [0, 1, 2] and list(S[:, 0]) == [0, 1, 2] and sizes == [3]


def test_calibration_is_monotone_and_finds_the_sub_sample():
    df = _table(4000)
    fr = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
    half = df.sample(frac=0.3, random_state=5)
    score = kmarginal(df, half)["score"]
    cal = subsample_calibration(df, score, fractions=fr, seed=1, repeats=3)
    scores = [f["score"] for f in cal["fractions"]]
    assert all(s0 < s1 for s0, s1 in zip(scores, scores[1:])), scores
    assert 0.2 <= cal["equivalent"] <= 0.4 and cal["nearest"] in (0.2, 0.3, 0.4)
    # the shuffled columns score below every sub-sample: no equivalent size
    low = subsample_calibration(df, kmarginal(df, _shuffled(df))["score"], fractions=fr, seed=1)
    assert low["equivalent"] is None and low["nearest"] == 0.05
    assert subsample_calibration(df, 1000.0, fractions=fr, seed=1)["equivalent"] == pytest.approx(1.0)


def test_unique_exact_matches_by_hand():
    real = pd.DataFrame({"a": [1, 1, 2, 3, 4], "b": ["x", "x", "y", "z", None]})
    syn = pd.DataFrame({"a": ["2", "2", "1", "5", "4"], "b": ["y", "y", "x", "z", None]})
    res = unique_exact_matches(real, syn)
    # unique data records: (2,y), (3,z), (4,missing); (1,x) is there twice
    assert res["unique_records"] == 3 and res["unique_percent"] == pytest.approx(60.0)
    # (2,y) is matched (by two synthetic rows), (4,missing) by one; (1,x) is not unique
    assert res["matched"] == 2 and res["synthetic_rows_matching"] == 3
    assert res["matched_percent"] == pytest.approx(200 / 3)


def test_apparent_matches_by_hand():
    real = pd.DataFrame({"q": [1, 2, 3, 3], "u": ["a", "b", "c", "d"], "v": [0, 0, 0, 0]})
    syn = pd.DataFrame({"q": [1, 2, 2, 3], "u": ["a", "b", "b", "c"], "v": [0, 1, 1, 0]})
    res = apparent_matches(real, syn, ["q"])
    # unique on q in the data: 1, 2; in the synthetic rows: 1, 3 -> one apparent match (q=1)
    assert res["matched"] == 1 and res["matched_percent"] == pytest.approx(25.0)
    assert res["agreement"] == [100.0] and res["full_agreement"] == 1 and sum(res["histogram"]) == 1
    syn2 = syn.assign(v=[1, 1, 1, 0])
    assert apparent_matches(real, syn2, ["q"])["agreement"] == [50.0]


def test_pmse_same_and_disjoint():
    pytest.importorskip("sklearn")
    a, b = _table(3000, seed=1), _table(3000, seed=2)
    same = pmse(a, b)
    assert same["pmse"] < 0.01 and same["max"] == pytest.approx(0.25)
    far = pmse(a, a.assign(x=a["x"] + 1000.0))
    assert far["pmse"] == pytest.approx(0.25) and far["ratio"] == pytest.approx(1.0)
    assert "CART" in far["classifier"]
    # data on five exact values, synthetic values spread around them: the tree separates them on the
    # raw values, not on fixed bins that hold one data value each
    rng = np.random.default_rng(4)
    pts = rng.choice([100.0, 200.0, 300.0, 400.0, 500.0], 3000)
    real, syn = pd.DataFrame({"d": pts}), pd.DataFrame({"d": pts + rng.uniform(-20, 20, 3000)})
    assert pmse(real, syn)["ratio"] > 0.3
    assert pmse(real, syn, edges={"d": [0, 150, 250, 350, 450, 600]})["pmse"] < 0.01


def test_rule_violations_by_hand():
    real = pd.DataFrame({"age": [5, 30, 40, 12], "married": [0, 1, 0, 0]})
    syn = pd.DataFrame({"age": [5, 8, 30, 10, 50], "married": [1, 1, 1, 0, 0]})
    res = rule_violations(real, syn, [("married child", lambda d: (d.age < 15) & (d.married == 1))])
    assert res == [{"rule": "married child", "synthetic": 2, "synthetic_percent": 40.0, "data": 0, "data_percent": 0.0}]

    def old(d):
        return d.age > 35

    res = rule_violations(real, syn, {"old": old, "any": lambda d: d.age >= 0})
    assert [(r["rule"], r["synthetic"], r["data"]) for r in res] == [("old", 1, 1), ("any", 5, 4)]
    assert rule_violations(real, syn, old)[0]["rule"] == "old"
    with pytest.raises(DDSSPError, match="'broken'"):
        rule_violations(real, syn, [("broken", lambda d: d.nope > 1)])
    with pytest.raises(DDSSPError, match="one truth value per row"):
        rule_violations(real, syn, [("short", lambda d: [True])])


def test_agency_scores_together_and_bad_input():
    pytest.importorskip("sklearn")
    df = _table(1500)
    res = agency_scores(df, df.sample(frac=0.5, random_state=1), group="g", quasi_identifiers=["g", "a"], seed=2)
    assert res["kmarginal"]["score"] > res["kmarginal"]["calibration"]["fractions"][0]["score"]
    assert res["unique_exact_matches"]["matched"] > 0 and "apparent_matches" in res and "rules" not in res
    assert 0 <= res["pmse"]["pmse"] < 0.05
    # reproducible with a seed
    again = agency_scores(df, df.sample(frac=0.5, random_state=1), group="g", quasi_identifiers=["g", "a"], seed=2)
    assert again["kmarginal"]["calibration"] == res["kmarginal"]["calibration"]
    with pytest.raises(DDSSPError, match="lack the data's columns"):
        agency_scores(df, df.drop(columns=["a"]))
    with pytest.raises(DDSSPError, match="group column"):
        agency_scores(df, df, group="PUMA")
    with pytest.raises(DDSSPError, match="quasi-identifier"):
        agency_scores(df, df, quasi_identifiers=["nope"])
    with pytest.raises(DDSSPError, match="no feature left"):
        agency_scores(df, df, group="g", exclude=["a", "b", "c", "x"])
