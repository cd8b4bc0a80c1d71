"""A whole-number column whose scan shows one value, and whose other values are too few to show at
the budget, is released as that one value (plus the missing level when it shows), not dropped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.dp.noise import InsecureSeededNoise
from ddssp.pipeline import DEFAULT_DELTA
from ddssp.pipeline.plan import plan_schema

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.pipeline.DroppedColumnsWarning")


def _table(n: int = 3000, seed: int = 0, missing: int = 0) -> pd.DataFrame:
    """``code`` is 1 on 99% of the rows, 2 and 3 on the rest (as a housing type); ``b`` is 0/1."""
    rng = np.random.default_rng(seed)
    code = np.ones(n)
    code[rng.choice(n, n // 100, replace=False)] = rng.choice([2.0, 3.0], n // 100)
    col = pd.Series(code.astype(int).astype(str), dtype=object)
    col[:missing] = None
    return pd.DataFrame({"code": col, "b": (np.arange(n) % 2).astype(str)})


def _plans(df: pd.DataFrame, eps: float, seeds: int = 8):
    return [plan_schema(df, None, eps=eps, delta=DEFAULT_DELTA, noise=InsecureSeededNoise(s)) for s in range(seeds)]


def test_a_code_of_99_percent_is_one_level_not_dropped():
    """At a budget where the 30 rows of codes 2 and 3 do not show, the column keeps code 1 alone: its
    note says the other values were too few, and the rows of 2 and 3 clip (encode) to it."""
    df = _table()
    plans = _plans(df, eps=0.3)
    assert all("code" not in p.dropped for p in plans)
    ones = [p for p in plans if p.schema.column("code").size == 1]
    assert ones, "no draw at this budget hid codes 2 and 3"
    for p in ones:
        col = p.schema.column("code")
        assert col.labels == ["1"] and col.missing is None
        assert "one value 1 as 1 level" in p.notes["code"] and "too few to show" in p.notes["code"]
        enc = p.schema.encode(df)
        assert (enc["code"] == 0).all()  # every row, 2 and 3 included, codes to the one level
        below, above = p.clipped["code"][:2]
        assert 0.0 <= below <= 1.0 and 0.0 <= above <= 1.0


def test_one_level_keeps_the_missing_level_when_it_shows():
    """A fifth of the cells empty: the one value and the missing level, two levels."""
    df = _table(missing=600)
    for p in _plans(df, eps=0.3):
        col = p.schema.column("code")
        if col.size - (col.missing is not None) == 1:
            assert col.missing is not None and col.labels[0] == "1"
            enc = p.schema.encode(df)
            assert (enc["code"][df["code"].isna()] == col.missing_code).all()
            return
    pytest.fail("no draw kept code 1 alone")


def test_one_level_column_survives_a_more_generous_budget_as_its_codes():
    """With budget to spare the codes show: levels 1..3 (or 1..2), never a single level."""
    df = _table(n=20000)
    for p in _plans(df, eps=8.0, seeds=3):
        assert p.schema.column("code").labels[:2] == ["1", "2"]


@pytest.mark.parametrize(
    "values,match",
    [
        (["same"] * 3000, "single value"),  # text: one label is refused by key release
        ([None] * 3000, "missing"),  # nothing but empty cells
    ],
)
def test_columns_with_no_code_to_keep_are_still_dropped(values, match):
    df = pd.DataFrame({"a": pd.Series(values, dtype=object), "b": (np.arange(3000) % 2).astype(str)})
    for p in _plans(df, eps=4.0, seeds=3):
        assert match in p.dropped["a"] and "b" not in p.dropped


def test_a_constant_code_is_one_level():
    df = pd.DataFrame({"a": ["7"] * 3000, "b": list("pq") * 1500})
    for p in _plans(df, eps=8.0, seeds=3):
        assert "a" not in p.dropped and p.schema.column("a").labels == ["7"]
