"""Rounds that measure several cliques when the noise is small against the table: how many, and
that such a run still spends its budget exactly and measures column-disjoint cliques per round."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddssp.dp import InsecureSeededNoise
from ddssp.marginals.aim import run_aim
from ddssp.marginals.aim_rounds import STRONG_SIGNAL, batch_size
from ddssp.marginals.aim_settings import fits_for
from ddssp.marginals.workload import all_pairs

DOM = {"a": 3, "b": 4, "c": 2, "d": 3, "e": 2, "f": 3}


def _data(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = (b > 1).astype(int) ^ (rng.random(n) < 0.1)
    d = (a + c + rng.integers(0, 2, n)) % 3
    e = rng.integers(0, 2, n)
    f = (d + e) % 3
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "e": e, "f": f})


def test_batch_size_is_one_when_the_noise_is_large():
    assert batch_size(sigma=100.0, total=50_000, rounds_left=200, fits_left=50) == 1
    # sigma / total just above STRONG_SIGNAL / 2: still one
    assert batch_size(sigma=STRONG_SIGNAL * 1e6 / 1.9, total=1e6, rounds_left=200, fits_left=5) == 1
    assert batch_size(sigma=STRONG_SIGNAL * 1e6 / 2.0, total=1e6, rounds_left=200, fits_left=5) == 2


def test_batch_size_grows_with_the_signal_up_to_the_fits_left():
    total = 1e6
    ks = [batch_size(sigma=s, total=total, rounds_left=200, fits_left=50) for s in (500.0, 250.0, 100.0, 10.0, 1.0)]
    assert ks == sorted(ks) and ks[0] == 2
    assert ks[-1] == math.ceil(200 / 50)  # bounded by the rounds left over the fits left
    assert batch_size(sigma=1.0, total=total, rounds_left=200, fits_left=0) == 1
    assert batch_size(sigma=1.0, total=total, rounds_left=3, fits_left=50) == 1


def test_fits_for_is_a_share_of_the_rounds():
    assert fits_for(240) == 60 and fits_for(1) == 1


def test_weak_signal_run_fits_after_every_measurement():
    df = _data(500)
    res = run_aim(df, DOM, all_pairs(DOM), 0.05, rng=np.random.default_rng(0), noise=InsecureSeededNoise(1))
    assert set(res.info["batches"]) == {1}
    assert res.info["fits"] == res.rounds  # round 0 and every regular round but the last
    assert res.ledger.spent == pytest.approx(0.05, rel=1e-9)


@pytest.mark.parametrize("seed", [1, 2])
def test_strong_signal_run_measures_disjoint_cliques_per_round_and_spends_the_budget(seed):
    df = _data(20_000, seed)
    rho = 50.0
    res = run_aim(df, DOM, all_pairs(DOM), rho, rng=np.random.default_rng(0), noise=InsecureSeededNoise(seed))
    batches = res.info["batches"]
    assert max(batches) > 1
    assert sum(batches) == res.rounds
    assert res.info["fits"] == len(batches)  # round 0's fit, then one per round but the last
    assert res.ledger.spent == pytest.approx(rho, rel=1e-9)
    regular = [m for m in res.measurements if m.round > 0]
    assert len(regular) == res.rounds
    i = 0
    for k in batches:
        cols = [a for m in regular[i : i + k] for a in m.clique]
        assert len(cols) == len(set(cols)), regular[i : i + k]
        i += k
    # every two-way marginal close to the data's at this budget
    for cl, _ in all_pairs(DOM):
        true = pd.crosstab(df[cl[0]], df[cl[1]]).reindex(
            index=range(DOM[cl[0]]), columns=range(DOM[cl[1]]), fill_value=0
        )
        assert 0.5 * np.abs(res.model.marginal(cl) - true.to_numpy()).sum() / len(df) < 0.03
