"""Discovery's budget: the share chosen from the noisy row count, and the two rounds of key release
(a first small share per categorical column, the pooled rest by the share of rows left out)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ddssp.data.discovery import MAX_AUTO_SHARE, ScanResult, discover, discovery_budget
from ddssp.data.discovery.labels import KEY_FLOOR, unreleased_share
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise


def test_the_budget_rule_is_non_increasing_in_rows_and_bounded():
    rho_max = rho_from_eps_delta(1.0, 1e-9)
    for cols in (1, 5, 15, 60):
        for given in (0.1 * rho_max, 0.9 * rho_max):
            rows = np.geomspace(1, 1e7, 200)
            got = np.array([discovery_budget(r, cols, given, rho_max) for r in rows])
            assert np.all(np.diff(got) <= 1e-15)
            assert np.all(got >= given * (1 - 1e-12))
            assert np.all(got <= max(given, MAX_AUTO_SHARE * rho_max) * (1 + 1e-12))
            assert math.isclose(got[-1], given, rel_tol=1e-12)  # a large table keeps the given share
    # a small table gets the most, and more columns never get less
    assert math.isclose(discovery_budget(500, 15, 0.1 * rho_max, rho_max), MAX_AUTO_SHARE * rho_max)
    assert discovery_budget(20000, 30, 0.1 * rho_max, rho_max) >= discovery_budget(20000, 15, 0.1 * rho_max, rho_max)


def testunreleased_share_share_is_a_weight_in_its_range():
    scan = ScanResult(kind="categorical", n_present=900.0, missing=100.0, sigma=5.0)
    assert math.isclose(unreleased_share(scan, {"a": 600.0, "b": 100.0}, None), 0.3)
    assert unreleased_share(scan, {"a": 1200.0}, None) == KEY_FLOOR  # noisy counts above the total
    assert unreleased_share(scan, {}, None) == 1.0
    assert math.isclose(unreleased_share(None, {"a": 250.0}, 1000.0), 0.75)  # no scan: the noisy row count
    assert unreleased_share(None, {"a": 250.0}, None) == 1.0


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    many = [f"m{i:02d}" for i in range(16)]
    return pd.DataFrame(
        {
            "binary": rng.choice(["yes", "no"], n, p=[0.6, 0.4]),
            "many": rng.choice(many, n),  # 16 labels of ~6% each
            "x": rng.normal(50, 10, n).round(1),
        }
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_second_round_goes_where_labels_were_left_out_and_the_ledger_sums(seed):
    rho = rho_from_eps_delta(1.0, 1e-9)
    ledger = Ledger(rho, delta_budget=5e-10)
    cols, rep, used = discover(
        _table(5000),
        ["binary", "many", "x"],
        ChargedMechanisms(ledger, InsecureSeededNoise(seed)),
        rho=0.1 * rho,
        delta=5e-10,
        rho_max=rho,
        collect=True,
    )
    assert set(cols) == {"binary", "many", "x"}
    # every noisy count is charged: discovery spends exactly its share of the budget, and the key
    # releases exactly the thresholding delta
    assert math.isclose(ledger.spent, rep.share * rho, rel_tol=1e-9)
    keys = [e for e in ledger.entries if e.kind == "discover-keys"]
    assert sum(e.delta for e in keys) <= used * (1 + 1e-12) and used == 5e-10
    rounds = {c: [e.rho for e in keys if e.clique == (c,)] for c in ("binary", "many")}
    assert len(rounds["binary"]) == len(rounds["many"]) == 2
    # the first rounds cost the same; the binary column (both labels out in round one) gets a
    # fraction of the second round's pool, the many-label column the rest
    assert math.isclose(rounds["binary"][0], rounds["many"][0], rel_tol=1e-12)
    assert rounds["many"][1] > 100 * rounds["binary"][1]
    assert {"yes", "no"} <= set(cols["binary"].labels)
    assert len(cols["many"].labels) >= 12  # most of the 16 labels, plus <other>


# seeded draws of the delta tests below: 400 by default, the first 1,000 with -m slow
RUNS = [400, pytest.param(1000, marks=pytest.mark.slow)]


@pytest.mark.parametrize("runs", RUNS)
def test_a_one_row_label_passes_two_rounds_at_most_at_their_delta(runs):
    """``runs`` discoveries of a column {a: 99 rows, one: 1 row} with a large delta (0.02 for the two
    rounds together): the one-row label's release count stays under the binomial(runs, delta)
    upper quantile at 1e-6 (false-alarm rate 1e-6), and 'a' is always released."""
    df = pd.DataFrame({"c": ["a"] * 99 + ["one"]})
    hits, charged = 0, 0.0
    for seed in range(runs):
        ledger = Ledger(4.0, delta_budget=0.02)
        cols, _rep, _ = discover(df, ["c"], ChargedMechanisms(ledger, InsecureSeededNoise(seed)), rho=2.0, delta=0.02)
        labels = cols["c"].labels
        assert "a" in labels
        hits += "one" in labels
        charged = max(charged, sum(e.delta for e in ledger.entries))
    assert 0 < charged <= 0.02 * (1 + 1e-12)
    assert hits <= stats.binom.isf(1e-6, runs, charged)


def test_a_first_round_that_cannot_release_is_not_run_and_gives_its_share_to_the_second():
    """At 200 rows and eight categorical columns the first round's threshold (about 360) is above
    every column's noisy row count (200 +- 43): it is not run (one key release per categorical
    column, charged), discovery spends at most its share, and no key release's delta exceeds the
    column's two rounds' part."""
    rng = np.random.default_rng(4)
    n, names = 200, list("uvwzpqrs")
    df = pd.DataFrame({c: rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]) for c in names})
    rho = rho_from_eps_delta(1.0, 1e-9)
    checked = 0
    for seed in range(1, 6):
        ledger = Ledger(rho, delta_budget=5e-10)
        cols, rep, used = discover(
            df,
            names,
            ChargedMechanisms(ledger, InsecureSeededNoise(seed)),
            rho=0.1 * rho,
            delta=5e-10,
            rho_max=rho,
            collect=True,
        )
        assert ledger.spent <= rep.share * rho * (1 + 1e-9)
        keys = [e for e in ledger.entries if e.kind == "discover-keys"]
        per_column = {c: [e for e in keys if e.clique == (c,)] for c in rep.categorical}
        assert all(len(v) == 1 for v in per_column.values()), {c: len(v) for c, v in per_column.items()}
        assert all(e.delta <= 2 * 5e-10 / (2 * len(rep.categorical)) * (1 + 1e-12) for e in keys)
        assert sum(e.delta for e in keys) <= used * (1 + 1e-12)
        checked += len(per_column)
    assert checked >= 20


@pytest.mark.parametrize("runs", RUNS)
def test_a_one_row_label_under_a_skipped_first_round_passes_at_most_at_its_delta(runs):
    """As the two-round test above, with a budget so small that the first round's threshold (about
    260) is above the column's noisy row count (100 +- 500) in about two runs of three: the second
    round alone, at the delta of both rounds, releases the one-row label at most at the charged
    delta."""
    df = pd.DataFrame({"c": ["a"] * 99 + ["one"]})
    hits, charged, single = 0, 0.0, 0
    for seed in range(runs):
        ledger = Ledger(1.0, delta_budget=0.02)
        cols, _rep, _ = discover(
            df,
            ["c"],
            ChargedMechanisms(ledger, InsecureSeededNoise(seed)),
            rho=2.03e-4,
            delta=0.02,
            kinds={"c": "categorical"},
            rho_max=2.03e-4 / 0.6,
            collect=True,
        )
        keys = [e for e in ledger.entries if e.kind == "discover-keys"]
        single += len(keys) == 1
        hits += "c" in cols and "one" in cols["c"].labels
        charged = max(charged, sum(e.delta for e in keys))
    assert single >= 0.5 * runs  # the first round is skipped in most runs
    assert 0 < charged <= 0.02 * (1 + 1e-12)
    assert hits <= stats.binom.isf(1e-6, runs, charged)
