"""Balanced within-bin draws: a bin's rows, sorted by the codes of the columns the workload pairs
with it, get values at evenly spread quantiles of the bin's distribution. Each row's value still
follows that distribution; each stratum gets its share of every part of the bin within a few rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chisquare

from ddssp.data import Column, Schema
from ddssp.data.within import Within
from ddssp.releasefile.tails import balance_strata

WEIGHTS = (0.2, 0.5, 0.3)


def _schema(whole: bool = False, missing: str | None = None) -> Schema:
    x = Column.binned("x", [0.0, 30.0, 60.0], missing=missing)
    x.with_within(Within((((10.0, 20.0), WEIGHTS), ((40.0, 50.0), (0.6, 0.3, 0.1))), whole=whole))
    return Schema([x, Column.categorical("g", list("abcd")), Column.categorical("h", list("xyz"))])


def _codes(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({"x": rng.integers(0, 2, n), "g": rng.integers(0, 4, n), "h": rng.integers(0, 3, n)})


def _subcell(v: np.ndarray) -> np.ndarray:
    return np.searchsorted([10.0, 20.0, 30.0, 40.0, 50.0], v, side="right")  # 0-2 in bin 0, 3-5 in bin 1


def test_each_row_still_follows_the_bins_distribution():
    """The balanced draw changes how values are shared out, not any row's distribution: the value of
    one fixed row, over many draws, falls in the sub-cells with the bin's weights (chi-square)."""
    sch = _schema()
    codes = pd.DataFrame({"x": [0] * 9, "g": [0, 0, 1, 1, 1, 2, 3, 3, 3], "h": [0] * 9})
    strata = {"x": ["g"]}
    hits = np.zeros((3, 3))
    for s in range(3000):
        v = sch.decode(codes, rng=np.random.default_rng(s), strata=strata)["x"].to_numpy()
        for row, k in enumerate((0, 4, 8)):
            hits[row, _subcell(v[k : k + 1])[0]] += 1
    for row in range(3):
        assert chisquare(hits[row], np.asarray(WEIGHTS) * 3000).pvalue > 1e-3


@pytest.mark.parametrize("whole", [False, True])
def test_every_stratum_gets_its_share_of_each_part_of_the_bin(whole):
    """Rows of one bin and one stratum (g, h) get each sub-cell within a few rows of their share;
    independent draws of the same rows miss by far more (so the bound can fail)."""
    sch = _schema(whole)
    codes = _codes(np.random.default_rng(1), 20_000)
    worst = {}
    for mode, strata in (("balanced", {"x": ["g", "h"]}), ("independent", None)):
        v = sch.decode(codes, rng=np.random.default_rng(2), strata=strata)["x"].to_numpy()
        sub = _subcell(v)
        dev = 0.0
        for (x, _g, _h), idx in codes.groupby(["x", "g", "h"]).groups.items():
            w = np.asarray(WEIGHTS if x == 0 else (0.6, 0.3, 0.1))
            got = np.bincount(sub[idx] - 3 * x, minlength=3)
            dev = max(dev, float(np.abs(got - len(idx) * w).max()))
        worst[mode] = dev
        assert np.all((v >= 0) & (v < 60))
        assert np.array_equal(sch.encode(pd.DataFrame({"x": v, "g": "a", "h": "x"}))["x"], codes["x"])
    assert worst["balanced"] <= 5.0  # the golden-ratio sequence's discrepancy on ~830 rows: a few rows
    assert worst["independent"] > 15.0  # binomial spread: sd ~13 rows per cell


def test_balance_strata_puts_the_group_first_and_skips_columns_never_paired():
    sch = _schema()
    by_group = [(("g", "x", "h"), 1.0), (("g", "x"), 1.0), (("g", "h"), 1.0)]
    assert balance_strata(sch, by_group) == {"x": ["g", "h"]}
    assert balance_strata(sch, [(("x", "h"), 1.0), (("x", "g"), 1.0)]) == {"x": ["g", "h"]}  # ties: schema order
    assert balance_strata(sch, [(("g", "h"), 1.0)]) == {"x": []}


def test_a_column_strata_does_not_name_draws_as_before():
    """Without ``strata`` (or for a column it does not list) the draw is the independent one."""
    sch = _schema()
    codes = _codes(np.random.default_rng(3), 500)
    a = sch.decode(codes, rng=np.random.default_rng(4))["x"].to_numpy()
    b = sch.decode(codes, rng=np.random.default_rng(4), strata={"y": ["g"]})["x"].to_numpy()
    assert np.array_equal(a, b)


def _spread_distance(v: np.ndarray, codes: pd.DataFrame, by: str) -> float:
    """L1 over (bin, ``by``) strata between each stratum's counts in the sub-cells and its share."""
    sub = _subcell(v)
    total = 0.0
    for (x, _g), idx in codes.groupby(["x", by]).groups.items():
        w = np.asarray(WEIGHTS if x == 0 else (0.6, 0.3, 0.1))
        total += float(np.abs(np.bincount(sub[idx] - 3 * x, minlength=3) - len(idx) * w).sum())
    return total


def test_exchanges_inside_bins_keep_codes_and_values_and_spread_every_stratum_evenly():
    """balance_values only exchanges values between rows of one bin: every row keeps its code, each
    bin keeps its values (as a multiset), a missing value stays missing; and the strata of the
    workload's columns get a far more even spread than independent draws gave them."""
    from ddssp.releasefile.balance import balance_values

    sch = _schema(missing="<missing>")
    rng = np.random.default_rng(5)
    codes = _codes(rng, 6000)
    codes.loc[:9, "x"] = 2  # the missing level
    frame = sch.decode(codes, rng=np.random.default_rng(6))  # independent draws
    before = frame["x"].to_numpy().copy()
    workload = [(("x", "h"), 1.0), (("x", "g"), 1.0)]
    out = balance_values(frame.copy(), codes, sch, workload, np.random.default_rng(7))["x"].to_numpy()
    assert np.isnan(out[:10]).all() and np.isnan(before[:10]).all()
    for b in (0, 1):
        idx = np.flatnonzero(codes["x"].to_numpy() == b)
        assert np.array_equal(np.sort(out[idx]), np.sort(before[idx]))
    rest = codes.iloc[10:].reset_index(drop=True)
    for by in ("g", "h"):  # 193 -> 120 for g here
        assert _spread_distance(out[10:], rest, by) < 0.75 * _spread_distance(before[10:], rest, by)


def test_a_column_past_the_memory_bound_is_left_as_drawn(monkeypatch):
    """Rows x strata sets over ``MAX_ENTRIES``: the values come back unchanged (no large arrays)."""
    import ddssp.releasefile.balance as balance

    sch = _schema()
    codes = _codes(np.random.default_rng(8), 3000)
    frame = sch.decode(codes, rng=np.random.default_rng(9))
    before = frame["x"].to_numpy().copy()
    monkeypatch.setattr(balance, "MAX_ENTRIES", 2 * 3000 - 1)
    out = balance.balance_values(frame, codes, sch, [(("x", "h"), 1.0), (("x", "g"), 1.0)], np.random.default_rng(1))
    assert np.array_equal(out["x"].to_numpy(), before)
    monkeypatch.setattr(balance, "MAX_ENTRIES", 2 * 3000)
    out = balance.balance_values(frame, codes, sch, [(("x", "h"), 1.0), (("x", "g"), 1.0)], np.random.default_rng(1))
    assert not np.array_equal(out["x"].to_numpy(), before)
