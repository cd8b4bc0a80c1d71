"""The fast AIM fit: closed-form warm start, accelerated mirror descent, the model
built from the fit's calibrated tables, and the networkx-free triangulation behind the model-size
checks. Properties, not timings (timings are printed by ``python -m ddssp.bench_aim``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddssp.errors import WorkloadError
from ddssp.marginals.aim import MirrorDescentNumpy, run_aim
from ddssp.marginals.model import GraphicalModel, junction_tree, triangulated_cliques
from ddssp.marginals.workload import all_pairs

DOM = {"a": 3, "b": 4, "c": 2, "d": 3, "e": 2}


def joint_of(domain, seed):
    rng = np.random.default_rng(seed)
    p = rng.gamma(0.7, size=[domain[a] for a in domain]) + 1e-3
    return p / p.sum()


def marg(joint, domain, clique):
    cols = list(domain)
    out = joint.sum(axis=tuple(i for i, a in enumerate(cols) if a not in clique))
    return out


def decomposable_joint(domain, joint, cliques, separators):
    """prod_C p_C / prod_S p_S over the full grid (cliques and separators domain-ordered)."""
    cols = list(domain)
    logp = np.zeros([domain[a] for a in cols])
    for sign, group in ((1.0, cliques), (-1.0, separators)):
        for c in group:
            shape = [domain[a] if a in c else 1 for a in cols]
            logp = logp + sign * np.log(marg(joint, domain, c)).reshape(shape)
    return np.exp(logp)


def model_joint(model: GraphicalModel):
    return model.marginal(tuple(model.domain)) / model.total


# --------------------------------------------------------------------------- warm start
# junction trees given by their cliques in a running-intersection order and the separators
DECOMPOSABLE = {
    "chain": ([("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")], [("b",), ("c",), ("d",)]),
    "star": ([("a", "b"), ("a", "c"), ("a", "d"), ("d", "e")], [("a",), ("a",), ("d",)]),
    "triples": ([("a", "b", "c"), ("b", "c", "d"), ("d", "e")], [("b", "c"), ("d",)]),
    "forest": ([("a", "b"), ("c", "d"), ("e",)], []),
}


@pytest.mark.parametrize("name", sorted(DECOMPOSABLE))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_warm_start_is_the_decomposable_estimate(name, seed):
    """Exact marginals of the junction tree's cliques, added one by one in running-intersection
    order with a warm start each: the model is prod p_C / prod p_S (the decomposable MLE) to
    1e-9 before any iteration, and the fit's loss there is 0 (up to rounding)."""
    cliques, seps = DECOMPOSABLE[name]
    joint = joint_of(DOM, seed)
    total = 5000.0
    est = MirrorDescentNumpy(DOM, keep_beliefs=True)
    for a in DOM:  # one-way measurements first, from the uniform model (as AIM's round 0)
        y = marg(joint, DOM, (a,)) * total
        est.add((a,), y, 1.0)
        est.warm_start((a,), np.ones(y.shape), y, floor=1e-12)
    est.fit(0)
    for c in cliques:
        model = est.scoring_model()
        y = marg(joint, DOM, c) * total
        est.add(c, y, 1.0)
        est.warm_start(c, model.marginal(c), y, floor=1e-12)
        est.fit(0)
    want = decomposable_joint(DOM, joint, cliques, seps)
    got = model_joint(est.model())
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    out = est.fit(1)
    assert out["loss"] <= 1e-12 * total**2


def test_warm_start_reordered_axes_and_noisy_floor():
    """A clique given in non-domain order, with negative noisy cells: the warm-started model's
    marginal on it is max(y, floor) normalised (axes in the order given)."""
    joint = joint_of(DOM, 5)
    est = MirrorDescentNumpy(DOM, keep_beliefs=True)
    for a in DOM:
        y = marg(joint, DOM, (a,)) * 100
        est.add((a,), y, 1.0)
        est.warm_start((a,), np.ones(y.shape), y, floor=1e-12)
    est.fit(0)
    model = est.scoring_model()
    y = np.transpose(marg(joint, DOM, ("b", "d")) * 100, (1, 0))  # axes (d, b)
    y[0, 0] = -3.0
    est.add(("d", "b"), y, 2.0)
    est.warm_start(("d", "b"), model.marginal(("d", "b")), y, floor=0.2)
    est.fit(0)
    yp = np.maximum(y, 0.2)
    got = est.model().marginal(("d", "b"))
    np.testing.assert_allclose(got / got.sum(), yp / yp.sum(), rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- accelerated fit
def _noisy_problem(seed):
    rng = np.random.default_rng(seed)
    joint = joint_of(DOM, seed)
    meas = []
    for c in [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("d", "e")]:
        s = float(rng.uniform(1, 4))
        y = marg(joint, DOM, c) * 2000 + rng.normal(0, s, marg(joint, DOM, c).shape)
        meas.append((c, y, s))
    return meas


@pytest.mark.parametrize("momentum", ["heavy", "fista"])
def test_accelerated_fit_reaches_the_same_minimiser(momentum, seed=0):
    """Accelerated (heavy-ball, the default, or FISTA) and plain mirror descent minimise the same
    loss: run long, they agree on every measured marginal, and in a short budget the accelerated
    one is at least as low."""
    meas = _noisy_problem(seed)

    def make():
        est = MirrorDescentNumpy(DOM)
        for c, y, s in meas:
            est.add(c, y, s)
        return est

    plain, acc = make(), make()
    short_plain = make().fit(60)["loss"]
    short_acc = make().fit_accelerated(60, momentum=momentum)["loss"]
    assert short_acc <= short_plain * (1 + 1e-9)
    lp = plain.fit(6000)["loss"]
    la = acc.fit_accelerated(1500, momentum=momentum)["loss"]
    assert la == pytest.approx(lp, rel=1e-3)
    mp, ma = plain.model(), acc.model()
    for c, _y, _ in meas:
        np.testing.assert_allclose(ma.marginal(c), mp.marginal(c), atol=0.05 * math.sqrt(mp.total))


def test_scoring_model_equals_recalibrated_model():
    """The model built from the fit's calibrated tables answers like a freshly calibrated one,
    and its log-potentials (junction-tree factorisation) round-trip through to/from_arrays."""
    est = MirrorDescentNumpy(DOM, keep_beliefs=True)
    for c, y, s in _noisy_problem(3):
        est.add(c, y, s)
    est.fit_accelerated(30)
    fast = est.scoring_model()
    ref = est.model()
    again = GraphicalModel.from_arrays(*fast.to_arrays())
    for c in [("a", "b"), ("a", "e"), ("b", "d", "e"), tuple(DOM)]:
        np.testing.assert_allclose(fast.marginal(c), ref.marginal(c), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(again.marginal(c), ref.marginal(c), rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- triangulation
@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    data=st.data(),
)
def test_triangulated_cliques_equal_junction_tree_cliques(sizes, data):
    dom = {f"x{i}": n for i, n in enumerate(sizes)}
    names = list(dom)
    cliques = data.draw(
        st.lists(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True).map(tuple), max_size=8)
    )
    assert triangulated_cliques(dom, cliques) == junction_tree(dom, cliques)[0]


# --------------------------------------------------------------------------- the AIM loop
def make_data(seed: int, n: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols, prev = {}, rng.integers(0, 6, n)
    for i, (name, k) in enumerate(DOM.items()):
        cur = np.where(rng.random(n) < 0.6, (prev + i) % k, rng.integers(0, k, n))
        cols[name] = cur
        prev = cur
    return pd.DataFrame(cols)


def test_fit_modes_both_spend_the_budget_and_legacy_stays_reachable():
    df = make_data(0)
    fast = run_aim(df, DOM, all_pairs(DOM), 1.0, rng=np.random.default_rng(1), final_iters=100)
    legacy = run_aim(df, DOM, all_pairs(DOM), 1.0, rng=np.random.default_rng(1), final_iters=100, fit="legacy")
    for res in (fast, legacy):
        assert res.ledger.spent == pytest.approx(1.0, rel=1e-9)
        assert res.model.total > 0
    assert fast.info["settings"]["fit"] == "fast" and legacy.info["settings"]["fit"] == "legacy"
    with pytest.raises(WorkloadError, match="fit mode"):
        run_aim(df, DOM, all_pairs(DOM), 1.0, rng=np.random.default_rng(1), fit="quick")


def test_fast_fit_converges_to_exact_at_huge_eps():
    """With negligible noise the fast loop recovers every two-way marginal of a tree-shaped table."""
    df = make_data(2, n=4000)
    res = run_aim(df, DOM, all_pairs(DOM), 1e7, rng=np.random.default_rng(0))
    for cl, _ in all_pairs(DOM):
        shape = [DOM[a] for a in cl]
        idx = np.ravel_multi_index([df[a].to_numpy() for a in cl], shape)
        true = np.bincount(idx, minlength=math.prod(shape)).reshape(shape)
        assert 0.5 * np.abs(res.model.marginal(cl) - true).sum() / len(df) < 0.02


def test_heavy_ball_evaluates_one_point_per_step():
    """The default accelerated rule evaluates the model once per step (plus retries), FISTA at
    least twice per step (the extrapolated point and the trial); both lower the loss."""
    meas = _noisy_problem(4)
    counts = {}
    for momentum in ("heavy", "fista"):
        est = MirrorDescentNumpy(DOM)
        for c, y, s in meas:
            est.add(c, y, s)
        est._build()
        calls = {"n": 0}
        inner = est._oracle

        def oracle(theta, total, inner=inner, calls=calls):
            calls["n"] += 1
            return inner(theta, total)

        est._oracle = oracle
        out = est.fit_accelerated(50, momentum=momentum)
        counts[momentum] = calls["n"] / out["iterations"]
    assert counts["heavy"] < 1.5 <= counts["fista"]
    with pytest.raises(ValueError, match="momentum must be"):
        MirrorDescentNumpy(DOM).fit_accelerated(5, momentum="k3")
