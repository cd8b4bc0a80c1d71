"""A declared target's discovery gets priority: a larger share of discovery's budget (taken from the
other columns), one key release of its own with a larger share of delta, and a target of few whole
numbers discovered as categorical labels, so that a binary outcome keeps both labels."""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ddssp.data.discovery import discover
from ddssp.data.discovery.budget import TARGET_WEIGHT
from ddssp.data.discovery.table import target_levels
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.errors import SchemaError
from ddssp.pipeline.options import DiscoveryOptions
from ddssp.pipeline.plan import plan_schema

RHO = rho_from_eps_delta(1.0, 1e-9)
DELTA = 5e-10
N, MINORITY = 4000, 200  # 5% of the rows hold the minority label


def _table(target_values, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue", "grey"], N, p=[0.4, 0.3, 0.2, 0.1]),
            "size": rng.choice(["s", "m", "l"], N),
            "x": rng.normal(50, 10, N).round(1),
            "y": target_values,
        }
    )


def _discover(df, seed, target="y"):
    ledger = Ledger(RHO, delta_budget=DELTA)
    cols, rep, used = discover(
        df,
        list(df.columns),
        ChargedMechanisms(ledger, InsecureSeededNoise(seed)),
        rho=0.1 * RHO,
        delta=DELTA,
        rho_max=RHO,
        collect=True,
        target=target,
    )
    return cols, rep, used, ledger


def _miss_probability(ledger, rep, name="y"):
    """The chance that a label of ``MINORITY`` rows stays under the target's threshold, from its one
    key release's noise sd (rho = 1 / (2 sigma^2)) and threshold (in the report's note)."""
    (entry,) = [e for e in ledger.entries if e.kind == "discover-keys" and e.clique == (name,)]
    sigma = math.sqrt(1 / (2 * entry.rho))
    threshold = int(re.search(r"threshold (\d+)", rep.notes[name]).group(1))
    return float(stats.norm.cdf((threshold - MINORITY) / sigma))


@pytest.mark.parametrize(
    "values, labels, kind",
    [
        (np.array(["no"] * (N - MINORITY) + ["yes"] * MINORITY), {"no", "yes"}, "categorical"),
        # 0/1 read as numbers: the two released labels become two ordered numeric levels
        (np.array([0] * (N - MINORITY) + [1] * MINORITY), {"0", "1"}, "numeric"),
    ],
    ids=["text", "zero-one"],
)
def test_a_binary_target_with_a_five_percent_minority_keeps_both_labels(values, labels, kind):
    """20 seeded discoveries of a 4,000-row table whose target has 5% of its rows on one label: both
    labels are released every time (the miss chance per run, from the release's noise sd and
    threshold, is below 1e-12: about 70 rows against 200), the target is categorical, and the ledger
    holds exactly discovery's share of the budget and at most its delta."""
    df = _table(values)
    for seed in range(20):
        cols, rep, used, ledger = _discover(df, seed)
        assert "y" in rep.categorical  # discovered by key release
        assert cols["y"].kind == kind
        assert labels <= set(cols["y"].labels), (seed, cols["y"].labels)
        assert _miss_probability(ledger, rep) < 1e-12
        assert math.isclose(ledger.spent, rep.share * RHO, rel_tol=1e-9)
        keys = [e for e in ledger.entries if e.kind == "discover-keys"]
        assert used == DELTA and sum(e.delta for e in keys) <= DELTA * (1 + 1e-12)
        # one key release for the target, at most its part of delta
        target_keys = [e for e in keys if e.clique == ("y",)]
        assert len(target_keys) == 1
        cats = len(rep.categorical)
        assert target_keys[0].delta <= DELTA * TARGET_WEIGHT / (cats - 1 + TARGET_WEIGHT) * (1 + 1e-12)


def test_the_target_gets_its_weight_of_the_budget_taken_from_the_others():
    """The scans (the same pass for every column) cost the target ``TARGET_WEIGHT`` times another
    column's; with or without a target discovery spends the same budget."""
    df = _table(np.array([0] * (N - MINORITY) + [1] * MINORITY))
    _, rep_t, _, led_t = _discover(df, 3)
    _, rep_n, _, led_n = _discover(df, 3, target=None)
    scans = {}  # each column's first entry is its scan
    for e in led_t.entries:
        if e.kind == "discover-counts" and e.clique in (("x",), ("y",)):
            scans.setdefault(e.clique, e.rho)
    assert math.isclose(scans[("y",)], TARGET_WEIGHT * scans[("x",)], rel_tol=1e-12)
    assert math.isclose(led_t.spent, led_n.spent, rel_tol=1e-9)
    assert math.isclose(rep_t.share, rep_n.share, rel_tol=1e-12)


def test_a_declared_target_reaches_discovery_through_the_options():
    """``DiscoveryOptions.target`` (set by ``release(..., target=)``) gives the target its key release."""
    df = _table(np.array(["no"] * (N - MINORITY) + ["yes"] * MINORITY))
    plan = plan_schema(df, eps=1.0, delta=1e-9, discovery=DiscoveryOptions(target="y"), noise=InsecureSeededNoise(5))
    assert "target" in plan.notes["y"]
    assert {"no", "yes"} <= set(plan.schema.column("y").labels)
    assert math.isclose(plan.ledger.spent + plan.ledger.remaining, plan.ledger.rho_budget, rel_tol=1e-12)


def _fingerprint(cols, ledger):
    text = repr(sorted((n, repr(c)) for n, c in cols.items())) + repr(
        [(e.kind, e.clique, e.rho, e.delta) for e in ledger.entries]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_without_a_target_seeded_discovery_is_unchanged():
    """Without a target, seeded discovery of a mixed table gives the columns and ledger entries it
    gave before targets were known to discovery (a fingerprint taken from that code, then re-taken
    when whole numbers placed by decades began to keep only the values that show: ``y`` became
    levels 0..1 instead of 0..9, and when a binned column's number of bins came from the release's
    budget (:func:`~ddssp.data.discovery.table.release_bins`): ``x`` became 8 bins instead of 4, its
    4 edges among them; every other column and entry unchanged)."""
    df = _table(np.array([0] * (N - MINORITY) + [1] * MINORITY))
    cols, _rep, _used, ledger = _discover(df, 11, target=None)
    assert _fingerprint(cols, ledger) == FINGERPRINT


FINGERPRINT = "da0e90167964a059"


@pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")
def test_release_passes_its_target_to_discovery_and_spends_its_budget_exactly():
    """``release(..., target="y")`` discovers the target with priority (a 0/1 target keeps its two
    levels) and the release's ledger spends its whole budget, no more."""
    from ddssp.pipeline.run import release

    df = _table(np.array([0] * (N - MINORITY) + [1] * MINORITY))
    rel = release(df, eps=1.0, delta=1e-9, target="y", insecure_seed=2, seed=0)
    # exactly its two values
    assert [lab for lab in rel.schema.column("y").labels if lab != "<missing>"] == ["0", "1"]
    assert math.isclose(rel.ledger.spent, rel.ledger.rho_budget, rel_tol=1e-9)
    assert sum(e.delta for e in rel.ledger.entries) <= 1e-9


def _small(y, n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(50, 10, n).round(1), "y": y})


def test_a_target_whose_values_do_not_show_refuses_the_release_and_says_what_to_declare():
    # 60 rows at eps 1: nothing shows above the noise; without a target the column would be left out
    rng = np.random.default_rng(3)
    df = _small(rng.integers(0, 2, 60), 60)
    with pytest.raises(SchemaError, match=r"target 'y' cannot be kept .*--bounds y=LO:HI.*--levels y=A,B"):
        _discover(df, 1)
    cols, rep, _, _ = _discover(df, 1, target=None)  # the same table without a target: collected, no error
    assert "y" in rep.unresolved


def test_a_numeric_target_kept_as_one_value_and_other_is_refused():
    # 70% zeros, the rest spread thinly over three decades: the scan shows only 0, and a key release
    # of the target's few whole numbers releases '0' and <other>, which has no value for a fit
    rng = np.random.default_rng(4)
    n = 800
    y = np.where(rng.random(n) < 0.7, 0.0, np.exp(rng.uniform(np.log(0.1), np.log(100.0), n)).round(3))
    df = _small(y, n)
    refused = 0
    for seed in range(4):
        try:
            cols, _, _, _ = _discover(df, seed)
        except SchemaError as exc:
            assert "--bounds y=LO:HI" in str(exc) and "--levels" not in str(exc), str(exc)
            refused += 1
            continue
        assert target_levels(cols["y"]) >= 2  # kept only with two values to fit on
    assert refused >= 1


def test_target_levels_counts_what_a_fit_can_use():
    from ddssp.data.columns import Column

    # the catch-all <other> and a level of missing cells are in neither class of a fit
    one = Column.categorical("y", ["<=50K", "<other>"], missing="<other>").with_na("<other>")
    assert target_levels(one) == 1
    two = Column.categorical("y", ["a", "b", "<missing>", "<other>"], missing="<other>").with_na("<missing>")
    assert target_levels(two) == 2
    assert target_levels(Column.categorical("y", ["a", "b", "<other>"], missing="<other>").with_empty(["b"])) == 1
    assert target_levels(Column.levels("y", [0, 1, 2])) == 3
    assert target_levels(Column.levels("y", [0.0])) == 1
    assert target_levels(Column.categorical("y", ["0.0", "<other>"], missing="<other>")) == 1
    assert target_levels(Column.binned("y", [0.0, 1.0, 2.0])) == 2


def test_a_release_for_a_target_whose_features_all_drop_is_refused(tmp_path, capsys):
    """40 rows at eps 0.3: the declared target is kept, neither feature shows above the noise. A
    release for a regression with no feature is refused in one line that says what to declare, and
    writes nothing."""
    from ddssp.cli import main

    rng = np.random.default_rng(0)
    csv, out = tmp_path / "t.csv", tmp_path / "t.release"
    pd.DataFrame(
        {"x": rng.normal(50, 10, 40).round(1), "z": rng.normal(5, 1, 40).round(2), "y": rng.integers(0, 2, 40)}
    ).to_csv(csv, index=False)
    args = ["release", str(csv), "--eps", "0.3", "--levels", "y=0,1", "-o", str(out), "--insecure-seed", "1", "--quiet"]
    assert main([*args, "--target", "y"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if "error" in line]) == 1
    assert "no column besides the target 'y'" in err[-1] and "--bounds COL=LO:HI" in err[-1]
    assert not out.exists()
    assert main(args) == 0  # without a target the same table releases (its label column alone)
