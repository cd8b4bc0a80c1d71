"""``DDSSPLogisticRegression(positive=LEVEL)``: which level is the positive class, and one level against
the rest for a target with more than two levels (post-processing of the same marginals)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Column, Schema
from ddssp.errors import DDSSPError
from ddssp.estimators.ddssp import DDSSPLogisticRegression
from ddssp.estimators.params import InvalidParameterError
from ddssp.estimators.suffstats import Encoding, ExactMarginals, sufficient_statistics, suffstats_from_codes

LABELS = ["low", "mid", "high"]


def _features() -> list[Column]:
    return [
        Column.categorical("color", ["red", "green", "blue"]),
        Column.binned("age", edges=[0, 10, 25, 40, 70]),
        Column.levels("score", [1, 2, 5, 9]),
    ]


def three_level(n: int = 2500, seed: int = 0, target: Column | None = None) -> tuple[Schema, pd.DataFrame]:
    """A table whose target has three levels that each depend on the features."""
    rng = np.random.default_rng(seed)
    color = rng.integers(0, 3, n)
    age = rng.integers(0, 4, n)
    score = rng.integers(0, 4, n)
    logits = np.stack([np.zeros(n), 0.6 * color - 0.4 * age, 0.5 * score - 0.3 * color], axis=1)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    schema = Schema([*_features(), target or Column.categorical("y", LABELS)])
    return schema, pd.DataFrame({"color": color, "age": age, "score": score, "y": y})


def recoded(codes: pd.DataFrame, level: int) -> tuple[Schema, pd.DataFrame]:
    """The same table with the target recoded to a binary (y == level)."""
    schema = Schema([*_features(), Column.categorical("y", ["rest", "pos"])])
    return schema, codes.assign(y=(codes["y"] == level).astype(int))


@pytest.mark.parametrize("level", [0, 1, 2])
def test_one_vs_rest_ztz_is_that_of_the_recoded_target(level):
    """From exact marginals, Z^T Z with the target's blocks summed over the rest equals Z^T Z of the
    rows with the target recoded to (y == level), computed row by row."""
    schema, codes = three_level()
    enc = Encoding(schema, None, "y", kind="logistic", positive=LABELS[level])
    got = sufficient_statistics(ExactMarginals(codes, schema), enc)
    bin_schema, bin_codes = recoded(codes, level)
    bin_enc = Encoding(bin_schema, None, "y", kind="logistic")
    want = suffstats_from_codes(bin_codes, bin_enc)
    assert got.names == want.names
    np.testing.assert_allclose(got.matrix, want.matrix, rtol=1e-12, atol=1e-9)
    assert got.n == want.n == len(codes)
    # the recoded target is not constant: the test compares a real +1 / -1 split
    assert 0 < (codes["y"] == level).sum() < len(codes)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_one_vs_rest_fit_equals_the_fit_on_the_recoded_table(level):
    schema, codes = three_level()
    est = DDSSPLogisticRegression(positive=LABELS[level]).fit(ExactMarginals(codes, schema), target="y")
    bin_schema, bin_codes = recoded(codes, level)
    ref = DDSSPLogisticRegression().fit(ExactMarginals(bin_codes, bin_schema), target="y")
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    assert est.intercept_ == pytest.approx(ref.intercept_, rel=1e-10)
    np.testing.assert_allclose(est.chebyshev_coef_, ref.chebyshev_coef_)
    assert np.max(np.abs(est.coef_)) > 0.05  # the levels differ: coefficients that are not all ~0
    # what the classes are, and predictions / scores in those terms
    assert list(est.classes_) == [0, 1]
    assert est.target_labels_ == [f"not {LABELS[level]}", LABELS[level]]
    assert est.positive_ == LABELS[level] and est.negative_levels_ == [x for x in LABELS if x != LABELS[level]]
    raw = schema.decode(codes)
    X = raw.drop(columns="y")
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(bin_schema.decode(bin_codes).drop(columns="y")))
    pred = est.predict(X)
    assert set(np.unique(pred)) <= {0, 1}
    np.testing.assert_array_equal(pred, (est.decision_function(X) > 0).astype(int))
    truth = (raw["y"] == LABELS[level]).to_numpy()
    assert est.score(X, raw["y"]) == pytest.approx(np.mean(pred == truth))
    assert est.score(codes, codes["y"], codes=True) == pytest.approx(np.mean(pred == truth))
    tab = est.coef_table()
    assert tab["unit"].iloc[0] == f"log-odds of y={LABELS[level]!r} vs the other levels"


def test_numeric_target_level_given_by_its_value():
    """A 0/1/2 outcome released as a number: positive=2, '2' and 2.0 name the same level."""
    target = Column.levels("y", [0, 1, 2])
    schema, codes = three_level(target=target)
    src = ExactMarginals(codes, schema)
    fits = [DDSSPLogisticRegression(positive=p).fit(src, target="y") for p in (2, "2", 2.0)]
    for est in fits:
        np.testing.assert_array_equal(est.coef_, fits[0].coef_)
        assert est.positive_ == "2" and est.target_labels_ == ["not 2", "2"]
    bin_schema, bin_codes = recoded(codes, 2)
    ref = DDSSPLogisticRegression().fit(ExactMarginals(bin_codes, bin_schema), target="y")
    np.testing.assert_allclose(fits[0].coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    with pytest.raises(DDSSPError, match="binary target; 'y' has 3 levels .*--positive LEVEL"):
        DDSSPLogisticRegression().fit(src, target="y")


def test_binary_target_positive_chooses_class_one():
    schema, codes = three_level()
    bin_schema, bin_codes = recoded(codes, 1)
    src = ExactMarginals(bin_codes, bin_schema)
    default = DDSSPLogisticRegression().fit(src, target="y")
    same = DDSSPLogisticRegression(positive="pos").fit(src, target="y")
    flipped = DDSSPLogisticRegression(positive="rest").fit(src, target="y")
    np.testing.assert_array_equal(same.coef_, default.coef_)
    assert list(default.classes_) == [0, 1] and default.target_labels_ == ["rest", "pos"]
    assert list(flipped.classes_) == [1, 0] and flipped.target_labels_ == ["pos", "rest"]
    assert flipped.positive_ == "rest" and flipped.negative_levels_ == ["pos"]
    np.testing.assert_allclose(flipped.coef_, -default.coef_, rtol=1e-12)
    assert flipped.intercept_ == pytest.approx(-default.intercept_)
    X = bin_schema.decode(bin_codes).drop(columns="y")
    np.testing.assert_allclose(flipped.predict_proba(X), default.predict_proba(X)[:, ::-1], atol=1e-12)
    assert flipped.score(bin_codes, bin_codes["y"], codes=True) == default.score(bin_codes, bin_codes["y"], codes=True)
    assert flipped.coef_table()["unit"].iloc[0] == "log-odds of y='rest' vs 'pos'"
    assert (
        Encoding(bin_schema, None, "y", kind="logistic", positive="rest")
        .describe()["y"]
        .startswith("target(+1: 'rest'")
    )


def test_other_level_stays_out_of_both_classes():
    """'<other>' (labels that were not released) is in neither class: one vs the rest equals the fit
    on the rows whose label was released."""
    target = Column.categorical("y", LABELS, missing="<other>")
    schema, codes = three_level(target=target)
    codes.loc[codes.index[::7], "y"] = 3  # some rows in '<other>'
    est = DDSSPLogisticRegression(positive="high").fit(ExactMarginals(codes, schema), target="y")
    kept = codes[codes["y"] != 3]
    bin_schema, bin_codes = recoded(kept, 2)
    ref = DDSSPLogisticRegression().fit(ExactMarginals(bin_codes, bin_schema), target="y")
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    assert est.negative_levels_ == ["low", "mid"]
    with pytest.raises(InvalidParameterError, match="'<other>'") as err:
        DDSSPLogisticRegression(positive="<other>").fit(ExactMarginals(codes, schema), target="y")
    assert "its levels are 'low', 'mid', 'high'" in str(err.value)


@pytest.mark.parametrize("bad", ["nope", 7, "Low"])
def test_unknown_level_one_error_listing_the_levels(bad):
    schema, codes = three_level(200)
    with pytest.raises(InvalidParameterError) as err:
        DDSSPLogisticRegression(positive=bad).fit(ExactMarginals(codes, schema), target="y")
    msg = str(err.value)
    assert err.value.parameter == "positive" and msg.startswith("positive")
    assert f"{bad!r} is not a level of 'y'; its levels are 'low', 'mid', 'high'" in msg
    assert "\n" not in msg


def test_positive_in_the_constraint_table():
    schema, codes = three_level(200)
    for bad in (True, ["low"], 1 + 2j):
        with pytest.raises(InvalidParameterError, match="positive must be a level of the target"):
            DDSSPLogisticRegression(positive=bad).fit(ExactMarginals(codes, schema), target="y")
    est = DDSSPLogisticRegression(positive="mid")
    assert est.get_params()["positive"] == "mid"
    assert est.set_params(positive="low").positive == "low"


def test_a_given_encoding_must_agree_with_positive():
    schema, codes = three_level(300)
    src = ExactMarginals(codes, schema)
    enc = Encoding(schema, None, "y", kind="logistic", positive="mid")
    a = DDSSPLogisticRegression(encoding=enc).fit(src)
    b = DDSSPLogisticRegression(encoding=enc, positive="mid").fit(src)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.positive_ == "mid"
    with pytest.raises(DDSSPError, match="differs from the encoding's positive level 'mid'"):
        DDSSPLogisticRegression(encoding=enc, positive="high").fit(src)
    with pytest.raises(InvalidParameterError, match="logistic model only"):
        Encoding(schema, None, "score", kind="linear", positive="2")


def test_refits_for_intervals_keep_the_positive_level():
    """The sampling-variance intervals of a one-vs-rest fit are those of the recoded binary fit."""
    from ddssp.estimators.ddssp_intervals import IntervalOptions

    schema, codes = three_level()
    opts = IntervalOptions(dp_noise=False)
    est = DDSSPLogisticRegression(positive="mid", ci=0.9, intervals=opts).fit(ExactMarginals(codes, schema), "y")
    bin_schema, bin_codes = recoded(codes, 1)
    ref = DDSSPLogisticRegression(ci=0.9, intervals=opts).fit(ExactMarginals(bin_codes, bin_schema), "y")
    assert np.all(ref.stderr_ > 0)
    np.testing.assert_allclose(est.stderr_, ref.stderr_, rtol=1e-9)
