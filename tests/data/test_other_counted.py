"""A catch-all level AIM's marginals leave undecided is counted on a share of the budget held back
from AIM: where every label was released it then draws no synthetic rows, and a level that holds a
real share of the rows keeps it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddssp import release
from ddssp.data import Schema
from ddssp.data.columns import Column
from ddssp.data.discovery.labels import OTHER_AFTER_SHARE, OTHER_SDS, OUTSIDE_CAP, OUTSIDE_COUNTS, OUTSIDE_SD
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.marginals.aim import Measurement
from ddssp.releasefile.conditions import count_outside, empty_from_measurements, outside_reserve

RHO = rho_from_eps_delta(1.0, 1e-9)


def _schema():
    return Schema(
        [
            Column.categorical("sex", ["F", "M", "<other>"], missing="<other>"),
            Column.categorical("job", ["a", "b", "<other>"], missing="<other>"),
        ]
    )


def test_the_budget_held_back_follows_the_rows_and_is_none_where_it_cannot_decide():
    s = _schema()
    need = OUTSIDE_COUNTS / (2 * (OUTSIDE_SD * 20_000) ** 2)
    assert math.isclose(outside_reserve(s, ["sex", "job"], 20_000.0, RHO), need)  # the sd asked for
    assert math.isclose(outside_reserve(s, ["sex"], 1_500.0, RHO), OUTSIDE_CAP * RHO)  # capped
    # 500 rows: even one count on all of it has 2 sds above a tenth of the rows: nothing held back
    assert OTHER_SDS / math.sqrt(2 * OUTSIDE_CAP * RHO) > OTHER_AFTER_SHARE * 500
    assert outside_reserve(s, ["sex"], 500.0, RHO) == 0.0
    assert outside_reserve(s, [], 2_000.0, RHO) == 0.0  # declared columns: the publisher's levels
    assert outside_reserve(s, ["sex"], None, RHO) == 0.0
    s.column("sex").with_empty(["<other>"])
    assert outside_reserve(s, ["sex"], 2_000.0, RHO) == 0.0  # nothing left to decide


def _aim(rng, sex_other=0, job_other=400, sigma=90.0):
    """AIM's one-way marginals on 2,000 rows: sex measured once at a large noise (undecided), job's
    unreleased fifth at a small one (it shows)."""
    sex = np.array([1200, 800 - sex_other, sex_other], dtype=float)
    job = np.array([800, 800, job_other], dtype=float)
    return [
        Measurement(("sex",), sigma, sex + rng.normal(0, sigma, 3), 0),
        Measurement(("job",), 10.0, job + rng.normal(0, 10.0, 3), 0),
    ]


def _counts(truth):
    return lambda columns: {c: truth[c] for c in columns}


def test_the_budget_is_spent_in_full_on_the_undecided_levels_and_charged():
    rng = np.random.default_rng(0)
    s = _schema()
    ledger = Ledger(1.0)
    rho = outside_reserve(s, ["sex", "job"], 2_000.0, RHO)
    got = count_outside(
        _counts({"sex": 0, "job": 400}),
        s,
        _aim(rng),
        ["sex", "job"],
        rho,
        ChargedMechanisms(ledger, InsecureSeededNoise(1)),
    )
    assert set(got) == {"sex"}  # job's level shows in AIM's marginal: no count
    assert math.isclose(ledger.spent, rho, rel_tol=1e-12)
    assert [e.clique for e in ledger.entries] == [("sex",)] and math.isclose(got["sex"][1], ledger.entries[0].sigma)
    # when AIM decided every level, the budget still goes somewhere: to every level that may hold rows
    ledger = Ledger(1.0)
    ms = [
        Measurement(("sex",), 5.0, np.array([1200.0, 800.0, 0.0]), 0),
        Measurement(("job",), 5.0, np.array([800.0, 800.0, 400.0]), 0),
    ]
    got = count_outside(
        _counts({"sex": 0, "job": 400}), s, ms, ["sex", "job"], rho, ChargedMechanisms(ledger, InsecureSeededNoise(2))
    )
    assert set(got) == {"sex", "job"} and math.isclose(ledger.spent, rho, rel_tol=1e-12)
    assert (
        count_outside(_counts({}), s, ms, ["sex", "job"], 0.0, ChargedMechanisms(Ledger(1.0), InsecureSeededNoise(3)))
        == {}
    )


def test_a_level_with_no_rows_is_marked_with_the_count_and_one_with_a_fifth_of_the_rows_is_kept():
    """2,000 rows, AIM's one-way of sex at sd 90 per cell. With the count on the held-back budget
    (sd 50) the empty level is marked in at least 97% of 300 fixed draws, and a level holding a
    fifth of the rows (400) never is. Without a count (as below the floor, where none is bought)
    the level is decided by whether it shows at 3 sds: the empty one is marked as often, the fifth
    (4.4 sds) kept in most draws but not all (noise can pull it under 3 sds)."""
    rng = np.random.default_rng(4)
    rho = outside_reserve(_schema(), ["sex"], 2_000.0, RHO)
    with_count = alone = kept_marked = alone_kept = 0
    for i in range(300):
        for truth, tally in ((0, "zero"), (400, "fifth")):
            ms = _aim(rng, sex_other=truth)
            s1, s2 = _schema(), _schema()
            mech = ChargedMechanisms(Ledger(1.0), InsecureSeededNoise(10_000 * (truth > 0) + i))
            out = count_outside(_counts({"sex": truth, "job": 400}), s1, ms, ["sex", "job"], rho, mech)
            m1 = "sex" in empty_from_measurements(s1, ms, ["sex", "job"], out)
            m2 = "sex" in empty_from_measurements(s2, ms, ["sex", "job"])
            if tally == "zero":
                with_count += m1
                alone += m2
            else:
                kept_marked += m1
                alone_kept += not m2
    assert with_count >= 0.97 * 300
    assert alone >= 0.97 * 300
    assert kept_marked == 0
    assert 0.8 * 300 <= alone_kept < 300


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    rare = [f"r{i:02d}" for i in range(40)]  # 40 labels of ~0.75% each: none is released
    g = np.where(rng.random(n) < 0.3, rng.choice(rare, n), rng.choice(["big", "large"], n))
    d = {"s": rng.choice(["Male", "Female"], n, p=[0.6, 0.4]), "g": g}
    for j in range(4):
        d[f"c{j}"] = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    return pd.DataFrame(d)


def test_releases_draw_no_other_where_every_label_was_released_and_keep_a_real_share():
    """1,200 rows, six categorical columns, eps 1, six fixed seeds: the binary column, both labels
    released, draws no ``<other>`` row; the column whose rare labels (30% of the rows) were not
    released keeps its ``<other>`` with a share near it; the budget is spent in full, the counts
    of ``<other>`` levels charged to the ledger."""
    df = _table(1200)
    counted = 0
    for seed in range(1, 7):
        rel = release(df, eps=1.0, insecure_seed=seed, progress=False)
        assert math.isclose(rel.ledger.spent, rel.ledger.rho_budget, rel_tol=1e-9)
        counted += sum(e.note == "rows in <other>" for e in rel.ledger.entries)
        s, g = rel.schema.column("s"), rel.schema.column("g")
        syn = rel.synthesize(len(df), seed=seed)
        assert {"Male", "Female"} <= set(s.labels)
        assert not (syn["s"] == "<other>").any(), seed
        assert not g.empty and 0.15 < (syn["g"] == "<other>").mean() < 0.45
    assert counted >= 6


def test_a_level_that_shows_only_by_a_little_is_counted_too():
    """A combined count at 3.5 sds shows (the rule would keep the level) but noise alone gets there
    in 2e-4 of columns: it is counted; one at 40 sds is not."""
    s = _schema()
    ms = [
        Measurement(("sex",), 30.0, np.array([1200.0, 800.0, 105.0]), 0),  # 3.5 sds of 30
        Measurement(("job",), 10.0, np.array([800.0, 800.0, 400.0]), 0),  # 40 sds of 10
    ]
    rho = outside_reserve(s, ["sex", "job"], 2_000.0, RHO)
    got = count_outside(
        _counts({"sex": 0, "job": 400}),
        s,
        ms,
        ["sex", "job"],
        rho,
        ChargedMechanisms(Ledger(1.0), InsecureSeededNoise(5)),
    )
    assert set(got) == {"sex"}
