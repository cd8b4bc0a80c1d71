"""AIM's settings object, the round plan and the shared mirror-descent loop's options."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from ddssp.dp import InsecureSeededNoise
from ddssp.errors import WorkloadError
from ddssp.marginals.aim import run_aim
from ddssp.marginals.aim_rounds import MIN_ROUNDS_LEFT, RoundBudget, may_anneal, plan_round
from ddssp.marginals.aim_settings import FINAL_TOL, AIMSettings
from ddssp.marginals.mirror_descent import MirrorDescentOptions
from ddssp.marginals.workload import all_pairs

DOM = {"a": 4, "b": 3, "c": 2, "d": 3}


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (b > 0).astype(int)
    d = (a + c) % 3
    return pd.DataFrame(dict(a=a, b=b, c=c, d=d))


def test_settings_object_and_keywords_give_the_same_run():
    df = _data()
    s = AIMSettings(rounds=10, final_iters=40)
    r1 = run_aim(df, DOM, all_pairs(DOM), 0.5, rng=np.random.default_rng(0), noise=InsecureSeededNoise(4), settings=s)
    r2 = run_aim(
        df,
        DOM,
        all_pairs(DOM),
        0.5,
        rng=np.random.default_rng(0),
        noise=InsecureSeededNoise(4),
        rounds=10,
        final_iters=40,
    )
    assert [m.clique for m in r1.measurements] == [m.clique for m in r2.measurements]
    for m1, m2 in zip(r1.measurements, r2.measurements):
        assert np.array_equal(m1.values, m2.values)
    for t1, t2 in zip(r1.model.log_potentials, r2.model.log_potentials):
        assert np.array_equal(t1, t2)
    assert r1.info["settings"] == r2.info["settings"]
    assert r1.info["settings"]["rounds_T"] == 10 and r1.info["settings"]["final_tol"] == FINAL_TOL


@pytest.mark.parametrize(
    "kw",
    [
        dict(engine="jax"),
        dict(fit="slow"),
        dict(max_model_size=0),
        dict(iters=0),
        dict(final_iters=0),
        dict(final_tol=-1.0),
        dict(final_tol="never"),
        dict(min_rounds_left=-1),
        dict(min_rounds_left=math.nan),
        dict(min_rounds_left=True),
        dict(min_rounds_left="6"),
    ],
)
def test_bad_settings_are_rejected(kw):
    with pytest.raises(WorkloadError):
        AIMSettings(**kw)


def test_settings_are_frozen_and_not_mixed_with_keywords():
    s = AIMSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.rounds = 3
    with pytest.raises(TypeError):
        run_aim(_data(), DOM, all_pairs(DOM), 0.5, rng=np.random.default_rng(0), settings=s, rounds=9)
    with pytest.raises(TypeError):
        run_aim(_data(), DOM, all_pairs(DOM), 0.5, rng=np.random.default_rng(0), round=9)
    with pytest.raises(WorkloadError):
        AIMSettings(rounds=4).rounds_for(4)


def test_final_tolerance_auto_depends_on_the_loop():
    assert AIMSettings().final_tolerance() == FINAL_TOL
    assert AIMSettings(iters=5).final_tolerance() is None
    assert AIMSettings(engine="mbi").final_tolerance() is None
    assert AIMSettings(final_tol=0).final_tolerance() == 0.0
    assert AIMSettings().fast and not AIMSettings(fit="legacy").fast and not AIMSettings(iters=3).fast


def test_round_plan_regular_and_last():
    b = RoundBudget(sigma=10.0, eps_em=0.1)
    regular = plan_round(b, rho=1.0, spent=0.2, max_model_size=80.0)
    assert not regular.last and regular.eps_em == 0.1 and regular.sigma_score == 10.0
    assert math.isclose(regular.size_limit, 80.0 * (0.2 + 0.1**2 / 8 + 1 / 200))
    remaining = 2 * (1 / 200 + 0.1**2 / 8) * 0.99
    last = plan_round(b, rho=1.0, spent=1.0 - remaining, max_model_size=80.0)
    assert last.last
    # selection and measurement of the last round spend exactly what remains
    assert math.isclose(last.eps_em**2 / 8 + 1 / (2 * last.sigma_score**2), remaining)
    assert math.isclose(last.size_limit, 80.0)
    assert b.annealed() == RoundBudget(5.0, 0.2)


@pytest.mark.parametrize("kw", [dict(momentum="adam"), dict(count="never"), dict(patience=0), dict(block=0)])
def test_mirror_descent_options_are_checked(kw):
    with pytest.raises(ValueError):
        MirrorDescentOptions(**kw)


def test_default_rounds_are_the_paper_s_up_to_20_columns_then_grow_slower():
    """T = 16 d up to 20 columns (Adult's releases unchanged), then max(320, 4 d): never falls as
    columns are added, always above d (the one-way marginals need less than the whole budget)."""
    from ddssp.marginals.aim_settings import default_rounds

    assert [default_rounds(d) for d in (1, 15, 20)] == [16, 240, 320]
    assert [default_rounds(d) for d in (21, 50, 80, 100)] == [320, 320, 320, 400]
    ts = [default_rounds(d) for d in range(1, 300)]
    assert all(b >= a for a, b in zip(ts, ts[1:]))
    assert all(t > d for d, t in zip(range(1, 300), ts))
    assert AIMSettings().rounds_for(100) == 400 and AIMSettings(rounds=1600).rounds_for(100) == 1600


def test_default_model_size_is_80_mb_up_to_25_columns_then_shrinks_with_width():
    """80 MB up to 25 columns (narrow releases unchanged), then 2000 / d: never grows with d, and
    a given limit always wins."""
    from ddssp.marginals.aim_settings import default_model_size

    assert [default_model_size(d) for d in (1, 15, 25, 26, 50, 100)] == [80.0, 80.0, 80.0, 2000 / 26, 40.0, 20.0]
    sizes = [default_model_size(d) for d in range(1, 300)]
    assert all(b <= a for a, b in zip(sizes, sizes[1:]))
    assert AIMSettings().model_size_for(100) == 20.0 and AIMSettings(max_model_size=80).model_size_for(100) == 80.0
    with pytest.raises(WorkloadError):
        AIMSettings(max_model_size=0)
    with pytest.raises(WorkloadError):
        AIMSettings(max_model_size="big")


def _anneals(res) -> list[tuple[float, float]]:
    """(budget left, cost of a round at the new scale) at every anneal of a run, read off its ledger.

    Regular rounds cost the same until an anneal quadruples the cost (half sigma, twice eps_em). An
    anneal just before the last round shows as a last round that began with at least two regular
    rounds' worth left: without it that round would have been last already.
    """
    rounds: dict[int, float] = {}
    for e in res.ledger.entries:
        if e.round:
            rounds[e.round] = rounds.get(e.round, 0.0) + e.rho
    rho = res.ledger.rho_budget
    spent = math.fsum(e.rho for e in res.ledger.entries if not e.round)
    order = sorted(rounds)
    out, cost = [], None
    for r in order:
        left = rho - spent
        if r == order[-1]:
            if cost is not None and left >= 2 * cost * (1 + 1e-9):
                out.append((left, 4 * cost))
        else:
            if cost is not None and rounds[r] > 2 * cost:
                assert math.isclose(rounds[r], 4 * cost, rel_tol=1e-9)
                out.append((left, rounds[r]))
            cost = rounds[r]
        spent += rounds[r]
    return out


def _anneal_runs(min_rounds_left):
    df = _data(n=3000, seed=1)
    runs = []
    for seed in range(3):
        res = run_aim(
            df,
            DOM,
            all_pairs(DOM),
            1.0,
            rng=np.random.default_rng(0),
            noise=InsecureSeededNoise(seed),
            rounds=40,
            final_iters=50,
            min_rounds_left=min_rounds_left,
        )
        assert math.isclose(res.ledger.spent, 1.0, rel_tol=1e-9)  # the budget is spent exactly all the same
        assert len(_anneals(res)) == res.info["annealed"]  # the ledger shows every anneal
        runs.append(res)
    return runs


def test_an_anneal_leaves_the_rounds_it_must_pay_for():
    """AIM's rule alone (0) anneals late, leaving less than the default's rounds; the default never does."""
    late = [a for res in _anneal_runs(0) for a in _anneals(res) if a[0] < MIN_ROUNDS_LEFT * a[1]]
    assert late  # the setting below is tested where the paper's rule anneals late
    runs = _anneal_runs(None)
    assert all(res.info["settings"]["min_rounds_left"] == MIN_ROUNDS_LEFT for res in runs)
    anneals = [a for res in runs for a in _anneals(res)]
    assert anneals and all(left >= MIN_ROUNDS_LEFT * cost * (1 - 1e-9) for left, cost in anneals)


def test_no_anneal_when_the_budget_can_never_pay_for_it():
    for res in _anneal_runs(1e9):
        assert res.info["annealed"] == 0 and _anneals(res) == []


def test_may_anneal_counts_rounds_at_the_annealed_scale():
    b = RoundBudget(sigma=10.0, eps_em=0.1)
    cost = b.annealed().cost
    assert math.isclose(cost, 4 * b.cost) and math.isclose(b.cost, 1 / 200 + 0.1**2 / 8)
    assert may_anneal(b, 6 * cost, 6) and not may_anneal(b, 6 * cost * (1 - 1e-9), 6)
    assert may_anneal(b, 0.0, 0)
