"""AIM given a regression target: the first phase measures the target's one-way marginal and its pair
with every other column (round 0, ``target_share`` of the budget), then the adaptive rounds spend the
rest; the ledger stays exact and seeded runs reproduce."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddssp.dp import LEDGER_RTOL, InsecureSeededNoise
from ddssp.errors import WorkloadError
from ddssp.marginals.aim import run_aim
from ddssp.marginals.aim_settings import DEFAULT_TARGET_SHARE, AIMSettings
from ddssp.marginals.aim_target import MAX_TARGET_SHARE, TARGET_CELL_SD, first_phase_share, target_cliques
from ddssp.marginals.named_tables import canonical
from ddssp.marginals.workload import all_pairs
from tests.marginals.test_aim import exact
from tests.marginals.test_aim import make_data as chained_table

DOM = {"a": 6, "b": 5, "y": 2, "c": 4, "d": 3}


def make_data(seed: int, n: int = 3000, domain=DOM) -> pd.DataFrame:
    """The AIM tests' chained table (:func:`tests.marginals.test_aim.make_data`) on this file's domain."""
    return chained_table(seed, n, domain)


def check_target_run(res, domain: dict, target: str, rho: float, share: float) -> None:
    """The first phase's measurements, their charges and the ledger's total."""
    wanted = [(target,)] + [canonical(domain, (target, c)) for c in domain if c != target]
    first = res.measurements[: len(wanted)]
    assert [m.clique for m in first] == wanted
    assert all(m.round == 0 for m in first)
    assert len({m.sigma for m in first[1:]}) == 1 and first[0].sigma >= first[1].sigma
    measures = [e for e in res.ledger.entries if e.kind == "measure"]
    assert [e.clique for e in measures] == [m.clique for m in res.measurements]
    assert [e.round for e in measures] == [m.round for m in res.measurements]
    assert sum(e.rho for e in measures[: len(wanted)]) == pytest.approx(share * rho, rel=1e-9)
    # the first phase comes before every selection; one selection per adaptive round
    kinds = [e.kind for e in res.ledger.entries]
    assert "select" not in kinds[: len(wanted)]
    assert kinds.count("select") == res.rounds
    # every column is in a measured pair, so round 0 measures no other one-way marginal
    assert [m.clique for m in res.measurements if m.round == 0] == wanted
    budget = res.ledger.rho_budget
    assert budget == rho
    assert abs(res.ledger.spent - budget) <= 1e-9 * budget
    assert np.all(np.cumsum([e.rho for e in res.ledger.entries]) <= budget * (1 + LEDGER_RTOL))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(2, 4), min_size=2, max_size=5),
    rho=st.floats(1e-3, 50.0),
    share=st.floats(0.05, 0.95),
    seed=st.integers(0, 10_000),
    data=st.data(),
)
def test_target_phase_measures_every_pair_and_ledger_is_exact(sizes, rho, share, seed, data):
    domain = {f"c{i}": k for i, k in enumerate(sizes)}
    target = data.draw(st.sampled_from(list(domain)))
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({c: rng.integers(0, k, 200) for c, k in domain.items()})
    res = run_aim(
        df,
        domain,
        all_pairs(domain),
        rho,
        rng=np.random.default_rng(seed),
        noise=InsecureSeededNoise(seed),
        settings=AIMSettings(rounds=len(domain) + 4, iters=3, final_iters=5, target_share=share),
        target=target,
    )
    check_target_run(res, domain, target, rho, share)
    assert res.info["settings"]["target_share"] == share


def test_default_share_and_public_settings():
    df = make_data(0)
    res = run_aim(df, DOM, all_pairs(DOM), 0.5, rng=np.random.default_rng(1), noise=InsecureSeededNoise(1), target="y")
    check_target_run(res, DOM, "y", 0.5, DEFAULT_TARGET_SHARE)
    assert res.info["settings"]["target_measurements"] == len(DOM)
    plain = run_aim(df, DOM, all_pairs(DOM), 0.5, rng=np.random.default_rng(1), noise=InsecureSeededNoise(1))
    assert "target_share" not in plain.info["settings"]
    assert [m.clique for m in plain.measurements if m.round == 0] == [(a,) for a in DOM]


def test_no_target_is_the_plain_run():
    """target=None and an explicit share leave the run as it was, draw for draw."""
    df = make_data(2, n=800)
    kw = dict(rng=np.random.default_rng(5), rounds=12, final_iters=50)
    a = run_aim(df, DOM, all_pairs(DOM), 0.3, noise=InsecureSeededNoise(5), **kw)
    b = run_aim(df, DOM, all_pairs(DOM), 0.3, noise=InsecureSeededNoise(5), target=None, target_share=0.5, **kw)
    assert [m.clique for m in a.measurements] == [m.clique for m in b.measurements]
    assert all(np.array_equal(x.values, y.values) for x, y in zip(a.measurements, b.measurements))


def test_seeded_target_runs_reproduce_and_seeds_differ():
    df = make_data(3, n=1500)
    kw = dict(rng=np.random.default_rng(0), rounds=15, final_iters=50, target="y")
    r1, r2 = (run_aim(df, DOM, all_pairs(DOM), 0.4, noise=InsecureSeededNoise(8), **kw) for _ in range(2))
    r3 = run_aim(df, DOM, all_pairs(DOM), 0.4, noise=InsecureSeededNoise(9), **kw)
    assert [m.clique for m in r1.measurements] == [m.clique for m in r2.measurements]
    assert all(np.array_equal(x.values, y.values) for x, y in zip(r1.measurements, r2.measurements))
    assert np.array_equal(r1.model.marginal(["a", "y"]), r2.model.marginal(["a", "y"]))
    assert not np.array_equal(r1.measurements[1].values, r3.measurements[1].values)


def test_large_eps_target_pairs_match_the_data():
    df = make_data(4, n=4000)
    res = run_aim(
        df,
        DOM,
        all_pairs(DOM),
        1e6,
        rng=np.random.default_rng(0),
        noise=InsecureSeededNoise(0),
        rounds=12,
        target="y",
    )
    sigma = res.measurements[0].sigma
    assert sigma < 0.01
    for m in res.measurements[: len(DOM)]:
        truth = exact(df, DOM, m.clique)
        assert np.abs(m.values - truth).max() <= 1  # discrete Gaussian at sigma < 0.01
        fitted = res.model.marginal(list(m.clique))
        assert np.abs(fitted - truth).sum() / len(df) < 0.01


def test_two_targets_share_their_pair():
    domain = {"a": 3, "y": 2, "z": 2}
    assert target_cliques(domain, ["y", "z"]) == [("y",), ("z",), ("a", "y"), ("y", "z"), ("a", "z")]
    df = make_data(5, n=500, domain=domain)
    res = run_aim(df, domain, all_pairs(domain), 1.0, rng=np.random.default_rng(0), rounds=6, target=["y", "z"])
    assert [m.clique for m in res.measurements if m.round == 0] == target_cliques(domain, ["y", "z"])
    assert abs(res.ledger.spent - 1.0) <= 1e-9


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"target": "nope"}, "target column 'nope' is not in the domain"),
        ({"target": ["y", 3]}, "target column 3 is not in the domain"),
        ({"target": "y", "target_share": 0.0}, "target_share must be a number in"),
        ({"target": "y", "target_share": 1.0}, "target_share must be a number in"),
        ({"target": "y", "target_share": True}, "target_share must be a number in"),
    ],
)
def test_bad_target_refused(kwargs, match):
    df = make_data(6, n=200)
    with pytest.raises(WorkloadError, match=match):
        run_aim(df, DOM, all_pairs(DOM), 1.0, rng=np.random.default_rng(0), rounds=8, **kwargs)


def test_target_pairs_larger_than_the_model_limit_are_refused():
    domain = {"y": 50, "a": 60, "b": 60}
    df = pd.DataFrame({c: np.arange(300) % k for c, k in domain.items()})
    with pytest.raises(WorkloadError, match="target's pairs .* model size limit"):
        run_aim(df, domain, [(("a",), 1.0)], 1.0, rng=np.random.default_rng(0), max_model_size=0.04, target="y")


def test_first_phase_share_rule():
    """The default share on a table whose cells the default measures well, raised as the rows shrink
    (never above MAX_TARGET_SHARE), and the raised share's noise sd is TARGET_CELL_SD of the rows."""
    sigma, share = 40.0, DEFAULT_TARGET_SHARE
    rows = np.geomspace(10, 1e7, 200)
    got = np.array([first_phase_share(r, sigma, share) for r in rows])
    assert np.all(np.diff(got) <= 1e-15)
    assert got[-1] == share and got[0] == MAX_TARGET_SHARE
    mid = (got > share) & (got < MAX_TARGET_SHARE)
    assert mid.any()
    sd = sigma * np.sqrt(share / got[mid])  # the phase's sd at the raised share
    assert np.allclose(sd, TARGET_CELL_SD * rows[mid])
    assert first_phase_share(-5.0, sigma, share) == MAX_TARGET_SHARE  # a noisy count below zero


@pytest.mark.parametrize("seed", [1, 2])
def test_small_table_raises_the_target_phase(seed):
    """300 rows at a small budget: the one-way is measured at the default's noise, the pairs spend
    the rest of the raised share, the ledger sums to it exactly and the file records it; a share
    given by the caller is kept."""
    df, rho = make_data(seed, n=300), 0.002
    res = run_aim(
        df, DOM, all_pairs(DOM), rho, rng=np.random.default_rng(seed), noise=InsecureSeededNoise(seed), target="y"
    )
    share = res.info["settings"]["target_share"]
    assert share == MAX_TARGET_SHARE and res.info["settings"]["target_share_given"] is False
    check_target_run(res, DOM, "y", rho, share)
    one, pairs = res.measurements[0], res.measurements[1 : len(DOM)]
    assert one.sigma == pytest.approx(np.sqrt(len(DOM) / (2 * DEFAULT_TARGET_SHARE * rho)))
    assert pairs[0].sigma < one.sigma
    kept = run_aim(
        df,
        DOM,
        all_pairs(DOM),
        rho,
        rng=np.random.default_rng(seed),
        noise=InsecureSeededNoise(seed),
        settings=AIMSettings(target_share=DEFAULT_TARGET_SHARE),
        target="y",
    )
    assert kept.info["settings"]["target_share"] == DEFAULT_TARGET_SHARE and kept.info["settings"]["target_share_given"]
    check_target_run(kept, DOM, "y", rho, DEFAULT_TARGET_SHARE)
    assert len({m.sigma for m in kept.measurements[: len(DOM)]}) == 1
