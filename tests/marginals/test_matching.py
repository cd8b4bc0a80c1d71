"""Synthetic rows matched to the model's answers on a workload (ddssp.marginals.matching)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ddssp.marginals.matching import match_workload
from ddssp.marginals.model import GraphicalModel

DOM = {"g": 3, "a": 4, "b": 3, "c": 5, "d": 2}
CLIQUES = [("g", "a"), ("a", "b"), ("b", "c"), ("c", "d")]


def _model(seed):
    rng = np.random.default_rng(seed)
    return GraphicalModel(DOM, {c: rng.normal(0, 1.5, [DOM[a] for a in c]) for c in CLIQUES}, 1.0)


def _distance(codes, model, cliques):
    total = 0.0
    for q in cliques:
        count = np.zeros([DOM[a] for a in q])
        np.add.at(count, tuple(codes[a].to_numpy() for a in q), 1)
        p = model.marginal(q)
        total += float(np.abs(count - len(codes) * p / p.sum()).sum())
    return total


def test_matching_brings_every_workload_marginal_closer_and_moves_add_to_the_swaps(monkeypatch):
    """The matched rows' L1 distance to the model's expected counts on the workload (triples across
    cliques) falls by more than half from the drawn rows'; the value moves after the swaps take it
    well below what the swaps alone reach; the row count and dtypes stay."""
    import ddssp.marginals.matching as matching

    model = _model(0)
    workload = [("g", x, y) for x, y in itertools.combinations(["a", "b", "c", "d"], 2)]
    n = 3000
    codes = model.sample(n, np.random.default_rng(1), method="rounded")
    pool = model.sample(n, np.random.default_rng(2), method="rounded")
    out = match_workload(codes.copy(), pool, model, workload, np.random.default_rng(3))
    monkeypatch.setattr(matching, "MOVE_SWEEPS", 0)
    swapped = match_workload(codes.copy(), pool, model, workload, np.random.default_rng(3))
    before, after = _distance(codes, model, workload), _distance(out, model, workload)
    assert len(out) == n and list(out.columns) == list(codes.columns)
    assert (out.dtypes == codes.dtypes).all()
    assert set(map(tuple, swapped.to_numpy())) <= set(map(tuple, pd.concat([codes, pool]).to_numpy()))
    assert after < 0.5 * before
    assert after < 0.9 * _distance(swapped, model, workload)  # 66 against 78 here; the floor of rounding is near


def test_moves_keep_the_callers_check():
    """A change that ``allowed`` refuses is never made (here: no row with d == 1 and c == 4), though
    the counts would gain from it."""
    model = _model(11)
    workload = [("g", x, y) for x, y in itertools.combinations(["a", "b", "c", "d"], 2)]

    def allowed(rows):
        return ~((rows["d"] == 1) & (rows["c"] == 4)).to_numpy()

    codes = model.sample(4000, np.random.default_rng(12), method="rounded")
    pool = model.sample(4000, np.random.default_rng(13), method="rounded")
    codes, pool = codes[allowed(codes)].reset_index(drop=True), pool[allowed(pool)].reset_index(drop=True)
    out = match_workload(codes, pool, model, workload, np.random.default_rng(14), allowed=allowed)
    assert allowed(out).all()
    free = match_workload(codes, pool, model, workload, np.random.default_rng(14))
    assert not allowed(free).all()  # without the check, the moves do fill those cells


def test_matching_never_fills_a_cell_without_mass():
    """Cells the model gives no mass (a zero in a potential, in a clique the workload does not
    hold) stay empty: swaps take rows from the model's draws, and moves keep every row's
    probability under the model positive."""
    rng = np.random.default_rng(4)
    pots = {c: rng.normal(0, 1.0, [DOM[a] for a in c]) for c in CLIQUES}
    pots[("a", "b")][1, 2] = -np.inf
    model = GraphicalModel(DOM, pots, 1.0)
    codes = model.sample(2000, np.random.default_rng(5), method="rounded")
    pool = model.sample(2000, np.random.default_rng(6), method="rounded")
    out = match_workload(codes, pool, model, [("g", "a", "c"), ("a", "d")], np.random.default_rng(7))
    assert not ((out["a"] == 1) & (out["b"] == 2)).any()


def test_matching_without_a_usable_workload_returns_the_rows():
    """No clique whose columns the model has: the rows come back unchanged."""
    model = _model(8)
    codes = model.sample(100, np.random.default_rng(9), method="rounded")
    out = match_workload(codes, codes.copy(), model, [("zzz", "a")], np.random.default_rng(0))
    pd.testing.assert_frame_equal(out, codes)
