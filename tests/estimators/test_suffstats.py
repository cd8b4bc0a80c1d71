"""Encodings A_j and Z^T Z from marginals (DD-SSP paper Prop 3.1, 3.2)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Column, Schema
from ddssp.errors import DataError, DDSSPError, SchemaError
from ddssp.estimators.suffstats import Encoding, ExactMarginals, sufficient_statistics, suffstats_from_codes


def mixed_schema() -> Schema:
    return Schema(
        [
            Column.categorical("color", ["red", "green", "blue", "yellow"]),
            Column.binned("age", edges=[0, 10, 25, 40, 70, 100]),  # values = midpoints, unequal spacing
            Column.levels("score", [1, 2, 5, 9]),
            Column.ordinal("rank", 3),
            Column.categorical("member", ["no", "yes"]),
            Column.levels("y", [0.0, 1.5, 2.0, 10.0]),
        ]
    )


def mixed_codes(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    color = rng.integers(0, 4, n)
    age = np.clip(color + rng.integers(0, 3, n), 0, 4)
    score = rng.integers(0, 4, n)
    rank = (score + rng.integers(0, 2, n)) % 3
    member = (rng.random(n) < 0.3 + 0.1 * rank).astype(int)
    y = np.clip(age // 2 + member + rng.integers(0, 2, n), 0, 3)
    return pd.DataFrame({"color": color, "age": age, "score": score, "rank": rank, "member": member, "y": y})


class CountingSource:
    """A marginal source that records every query (wraps ExactMarginals)."""

    def __init__(self, inner):
        self.inner, self.schema, self.total, self.queries = inner, inner.schema, inner.total, []

    def marginal(self, cols):
        self.queries.append(tuple(cols))
        return self.inner.marginal(cols)


def test_exact_marginals_match_crosstab():
    schema, codes = mixed_schema(), mixed_codes()
    src = ExactMarginals(codes, schema)
    assert src.total == len(codes)
    m = src.marginal(["color", "y"])
    assert m.shape == (4, 4)
    ct = pd.crosstab(codes["color"], codes["y"]).reindex(index=range(4), columns=range(4), fill_value=0)
    np.testing.assert_array_equal(m, ct.to_numpy())
    np.testing.assert_array_equal(src.marginal(["member"]), np.bincount(codes["member"], minlength=2))
    with pytest.raises(SchemaError, match="unknown column"):
        src.marginal(["color", "nope"])
    bad = codes.copy()
    bad.loc[0, "rank"] = 3
    with pytest.raises(DataError, match="rank"):
        ExactMarginals(bad, schema)


def test_encoding_names_and_matrices():
    schema = mixed_schema()
    enc = Encoding(schema, None, "y")
    assert enc.names == ["intercept", "color=green", "color=blue", "color=yellow", "age", "score", "rank", "member=yes"]
    A = enc.matrices
    np.testing.assert_array_equal(A["color"], np.hstack([np.zeros((3, 1)), np.eye(3)]))
    # numeric: level values rescaled linearly, min -> -1, max -> +1 (age midpoints 5, 17.5, 32.5, 55, 85)
    mid = np.array([5, 17.5, 32.5, 55, 85])
    np.testing.assert_allclose(A["age"][0], 2 * (mid - 5) / 80 - 1)
    np.testing.assert_allclose(A["score"][0], [-1, -0.75, 0, 1])
    np.testing.assert_allclose(A["rank"][0], [-1, 0, 1])
    np.testing.assert_allclose(A["y"][0], [-1, -0.7, -0.6, 1])
    assert enc.label_bound() == 1.0
    np.testing.assert_allclose(enc.decode_target(A["y"][0]), [0, 1.5, 2, 10])


def test_overrides_change_the_encoding():
    schema = mixed_schema()
    enc = Encoding(schema, ["color", "score"], "y", overrides={"color": "numeric", "score": "onehot"})
    assert enc.names == ["intercept", "color", "score=2", "score=5", "score=9"]
    np.testing.assert_allclose(enc.matrices["color"][0], [-1, -1 / 3, 1 / 3, 1])
    with pytest.raises(SchemaError, match="onehot"):
        Encoding(schema, ["color"], "y", overrides={"color": "spline"})
    with pytest.raises(SchemaError, match="neither a feature nor the target"):
        Encoding(schema, ["color"], "y", overrides={"score": "onehot"})


def test_transform_and_row_norm_bound():
    schema, codes = mixed_schema(), mixed_codes(50)
    enc = Encoding(schema, None, "y")
    X = enc.transform(codes)
    assert X.shape == (50, len(enc.names))
    np.testing.assert_array_equal(X[:, 0], 1.0)
    # row 0 by hand
    r = codes.iloc[0]
    expect = (
        [1.0]
        + list(np.eye(4)[r["color"]][1:])
        + [
            enc.matrices["age"][0, r["age"]],
            enc.matrices["score"][0, r["score"]],
            enc.matrices["rank"][0, r["rank"]],
            float(r["member"] == 1),
        ]
    )
    np.testing.assert_allclose(X[0], expect)
    # Prop 3.1: sqrt(||U||^2 + c) with 3 scalar features (|v| <= 1), 2 one-hot attributes and the intercept
    bound = enc.row_norm_bound()
    assert bound == pytest.approx(math.sqrt(3 + 2 + 1))
    # the bound holds for every possible row and is attained
    grid = pd.DataFrame(list(itertools.product(*[range(s) for s in schema.domain.values()])), columns=schema.names)
    norms = np.linalg.norm(enc.transform(grid), axis=1)
    assert norms.max() == pytest.approx(bound)
    assert enc.transform(codes, intercept=False).shape[1] == len(enc.names) - 1
    bad = codes.copy()
    bad.loc[3, "color"] = 7
    with pytest.raises(DataError, match="color"):
        enc.transform(bad)


def test_targets_and_bad_input():
    schema, codes = mixed_schema(), mixed_codes(100)
    enc = Encoding(schema, ["color", "age"], "member", kind="logistic")
    np.testing.assert_array_equal(enc.target_vector(codes), np.where(codes["member"] == 1, 1.0, -1.0))
    with pytest.raises(SchemaError, match="binary"):
        Encoding(schema, ["color"], "y", kind="logistic")
    with pytest.raises(SchemaError, match="numeric target"):
        Encoding(schema, ["age"], "color")
    # a categorical target may be declared numeric (its codes, rescaled)
    enc2 = Encoding(schema, ["age"], "color", overrides={"color": "numeric"})
    np.testing.assert_allclose(enc2.target_levels, [-1, -1 / 3, 1 / 3, 1])
    with pytest.raises(SchemaError, match="unknown target"):
        Encoding(schema, None, "nope")
    with pytest.raises(SchemaError, match="unknown feature"):
        Encoding(schema, ["age", "nope"], "y")
    with pytest.raises(SchemaError, match="cannot also be a feature"):
        Encoding(schema, ["age", "y"], "y")
    with pytest.raises(DDSSPError, match="model kind"):
        Encoding(schema, None, "y", kind="poisson")


@pytest.mark.parametrize("kind,target", [("linear", "y"), ("logistic", "member")])
def test_ztz_from_exact_marginals_equals_data(kind, target):
    schema, codes = mixed_schema(), mixed_codes()
    enc = Encoding(schema, None, target, kind=kind)
    src = CountingSource(ExactMarginals(codes, schema))
    stats = sufficient_statistics(src, enc)
    ref = suffstats_from_codes(codes, enc)
    assert stats.names == ref.names == enc.names + [target]
    rel = np.max(np.abs(stats.matrix - ref.matrix)) / np.max(np.abs(ref.matrix))
    assert rel < 1e-9
    assert stats.n == len(codes) and stats.matrix[0, 0] == len(codes)
    # every one-way and every pair marginal queried exactly once
    d = len(schema.names)
    assert len(src.queries) == d + d * (d - 1) // 2
    assert len({frozenset(q) for q in src.queries}) == len(src.queries)
    frame = stats.frame()
    assert frame.loc["color=blue", "age"] == pytest.approx(ref.matrix[2, 4])
    np.testing.assert_allclose(stats.xty, ref.matrix[:-1, -1])


def test_ztz_without_intercept_and_feature_subset():
    schema, codes = mixed_schema(), mixed_codes(500, seed=3)
    enc = Encoding(schema, ["score", "color"], "y", intercept=False)
    stats = sufficient_statistics(ExactMarginals(codes, schema), enc)
    np.testing.assert_allclose(stats.matrix, suffstats_from_codes(codes, enc).matrix, rtol=1e-12, atol=1e-9)
    assert stats.names[0] == "score"


def test_not_a_source_is_refused():
    enc = Encoding(mixed_schema(), None, "y")
    with pytest.raises(DDSSPError, match="not a marginal source"):
        sufficient_statistics(object(), enc)
