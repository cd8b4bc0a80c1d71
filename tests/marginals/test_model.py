"""GraphicalModel (numpy): exact marginals vs a brute-force joint, sampling, serialisation."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ddssp.errors import ReleaseFileError
from ddssp.marginals.model import GraphicalModel, junction_tree, model_size_mb

DOM = {"a": 3, "b": 2, "c": 4, "d": 2, "e": 3}


def random_potentials(domain, cliques, seed):
    rng = np.random.default_rng(seed)
    return {c: rng.normal(0, 1.5, [domain[a] for a in c]) for c in cliques}


def brute_joint(domain, pots, total):
    """The joint table (axes in domain order) by summing every potential over the full grid."""
    cols = list(domain)
    logp = np.zeros([domain[a] for a in cols])
    for c, arr in pots.items():
        perm = sorted(range(len(c)), key=lambda i: cols.index(c[i]))
        sorted_c = [c[i] for i in perm]
        shape = [domain[a] if a in c else 1 for a in cols]
        logp = logp + np.transpose(arr, perm).reshape(shape)
        assert sorted_c == [a for a in cols if a in c]
    p = np.exp(logp - logp.max())
    return p / p.sum() * total


def brute_marginal(joint, domain, attrs):
    cols = list(domain)
    out = joint.sum(axis=tuple(i for i, a in enumerate(cols) if a not in attrs))
    kept = [a for a in cols if a in attrs]
    return np.transpose(out, [kept.index(a) for a in attrs])


STRUCTURES = {
    "chain": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")],
    "tree": [("a", "b"), ("a", "c"), ("a", "d"), ("d", "e")],
    "cycle": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("e",)],  # needs triangulation
    "forest": [("b", "a"), ("e", "c")],  # reversed axis order, d in no clique, two components
    "triple": [("a", "b", "c"), ("c", "d"), ("b", "e")],
}


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_marginals_match_brute_force(name):
    pots = random_potentials(DOM, STRUCTURES[name], seed=len(name))
    total = 1234.5
    model = GraphicalModel(DOM, pots, total)
    joint = brute_joint(DOM, pots, total)
    cols = list(DOM)
    for k in (1, 2, 3):
        for attrs in itertools.permutations(cols, k):
            got = model.marginal(attrs)
            assert got.shape == tuple(DOM[a] for a in attrs)
            np.testing.assert_allclose(got, brute_marginal(joint, DOM, attrs), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.marginal(tuple(cols)), joint, rtol=1e-9, atol=1e-9)
    assert model.marginal(("e", "a")).sum() == pytest.approx(total)


def test_junction_tree_running_intersection_and_size():
    cliques, edges = junction_tree(DOM, STRUCTURES["cycle"])
    assert len(edges) == len(cliques) - 1
    # the 4-cycle a-b-c-d needs one chord: two triangles
    assert sorted(len(c) for c in cliques if len(c) > 1) == [3, 3]
    assert model_size_mb(DOM, [("a", "b")]) == pytest.approx((3 * 2 + 4 + 2 + 3) * 8 / 2**20)


def test_marginal_rejects_unknown_or_repeated_columns():
    model = GraphicalModel(DOM, random_potentials(DOM, STRUCTURES["chain"], 0), 10.0)
    with pytest.raises(KeyError, match="zz"):
        model.marginal(("a", "zz"))
    with pytest.raises(ValueError):
        model.marginal(("a", "a"))


def test_zero_probability_cells_are_handled():
    pots = random_potentials(DOM, STRUCTURES["chain"], 3)
    pots[("b", "c")][1, :] = -np.inf  # b = 1 impossible
    model = GraphicalModel(DOM, pots, 100.0)
    joint = brute_joint(DOM, {k: np.where(np.isinf(v), -1e300, v) for k, v in pots.items()}, 100.0)
    for attrs in [("a", "e"), ("b", "d"), ("a", "b", "e")]:
        np.testing.assert_allclose(model.marginal(attrs), brute_marginal(joint, DOM, attrs), atol=1e-9)
    df = model.sample(2000, np.random.default_rng(0))
    assert (df["b"] == 0).all()


@pytest.mark.parametrize("name", ["tree", "cycle", "forest"])
def test_sample_frequencies_match_chi_square(name):
    pots = random_potentials(DOM, STRUCTURES[name], seed=11)
    model = GraphicalModel(DOM, pots, 1.0)
    rows = 30_000
    df = model.sample(rows, np.random.default_rng(5))
    assert list(df.columns) == list(DOM)
    assert len(df) == rows
    for a, n in DOM.items():
        assert df[a].min() >= 0 and df[a].max() < n
    joint = brute_joint(DOM, pots, 1.0).ravel()
    idx = np.ravel_multi_index([df[a].to_numpy() for a in DOM], list(DOM.values()))
    observed = np.bincount(idx, minlength=joint.size)
    expected = joint * rows
    keep = expected >= 5  # pool the rare cells into one bin
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    _, pval = stats.chisquare(obs, exp)
    assert pval > 1e-4


def test_sample_is_reproducible():
    model = GraphicalModel(DOM, random_potentials(DOM, STRUCTURES["triple"], 2), 1.0)
    a = model.sample(500, np.random.default_rng(1))
    b = model.sample(500, np.random.default_rng(1))
    c = model.sample(500, np.random.default_rng(2))
    assert a.equals(b)
    assert not a.equals(c)


def roundtrip(model):
    meta, arrays = model.to_arrays()
    meta = json.loads(json.dumps(meta))
    return meta, arrays


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_to_from_arrays_round_trip(name):
    model = GraphicalModel(DOM, random_potentials(DOM, STRUCTURES[name], 4), 77.0)
    meta, arrays = roundtrip(model)
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float64 for v in arrays.values())
    back = GraphicalModel.from_arrays(meta, arrays)
    assert back.domain == model.domain and list(back.domain) == list(model.domain)
    assert back.cliques == model.cliques and back.total == model.total
    for attrs in [("a",), ("e", "b"), ("a", "c", "e"), tuple(DOM)]:
        np.testing.assert_allclose(back.marginal(attrs), model.marginal(attrs), rtol=1e-12, atol=1e-12)


def test_from_arrays_rejects_corruption():
    model = GraphicalModel(DOM, random_potentials(DOM, STRUCTURES["chain"], 4), 77.0)
    meta, arrays = roundtrip(model)

    def bad(change_meta=None, change_arrays=None, match=None):
        m, a = json.loads(json.dumps(meta)), dict(arrays)
        if change_meta:
            change_meta(m)
        if change_arrays:
            change_arrays(a)
        with pytest.raises(ReleaseFileError, match=match):
            GraphicalModel.from_arrays(m, a)

    bad(lambda m: m.update(format="other/9"), match="format")
    bad(lambda m: m["domain"][0].__setitem__(1, 4), match="shape")
    bad(lambda m: m.update(total=float("nan")), match="total")
    bad(lambda m: m.update(total=-1.0), match="total")
    bad(lambda m: m.update(edges=m["edges"][:-1]), match="edges")
    bad(lambda m: m.update(edges=[[0, 0]] * (len(m["cliques"]) - 1)), match="edges")
    bad(lambda m: m["cliques"].append(["zz"]), match="zz")
    bad(lambda m: m.pop("cliques"), match="malformed")
    bad(change_arrays=lambda a: a.pop("theta_0"), match="missing")
    bad(change_arrays=lambda a: a.__setitem__("theta_1", np.full(a["theta_1"].shape, np.nan)), match="NaN")
    bad(change_arrays=lambda a: a.__setitem__("theta_1", np.zeros((1, 1))), match="shape")
    bad(change_arrays=lambda a: a.__setitem__("theta_1", np.full(a["theta_1"].shape, -np.inf)), match="zero")


def test_model_module_does_not_import_jax():
    code = "import sys, ddssp.marginals.model; sys.exit(1 if 'jax' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("name", sorted(STRUCTURES))
@pytest.mark.parametrize("spread", [1.5, 400.0])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_single_exp_calibration_matches_log_space_reference(name, spread, dtype):
    """The one-exponential schedule of CalibratedTree.calibrate gives the beliefs of the log-space
    reference schedule (per-slice maxima, two exponentials) and of the brute-force joint, also when
    potentials span hundreds of nats (spread 400: slices and whole cliques far below a clique's
    maximum, which must take the exact path instead of underflowing to zero)."""
    from ddssp.marginals.model import CalibratedTree

    pots = {c: np.random.default_rng(7).normal(0, spread, [DOM[a] for a in c]) for c in STRUCTURES[name]}
    model = GraphicalModel(DOM, pots, 1.0)  # builds the tree; its own beliefs use calibrate()
    tree = CalibratedTree(DOM, model.cliques, model.edges)
    theta = [t.astype(dtype) for t in model.log_potentials]
    fast = tree.calibrate([t.copy() for t in theta])
    ref = tree.calibrate_reference([t.astype(np.float64) for t in theta])
    joint = brute_joint(DOM, pots, 1.0)
    # probabilities: relative accuracy where they matter, absolute accuracy (of a total of 1) below
    tol = {"rtol": 1e-10, "atol": 1e-14} if dtype is np.float64 else {"rtol": 2e-4, "atol": 1e-6}
    for c, f, r in zip(model.cliques, fast, ref):
        assert f.dtype == dtype
        np.testing.assert_allclose(f, r, **tol)
        np.testing.assert_allclose(f, brute_marginal(joint, DOM, c), **tol)
    probs, scales = tree.calibrate([t.copy() for t in theta], normalize=False)
    for p, sc, r in zip(probs, scales, ref):
        np.testing.assert_allclose(p * sc, r, **tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_single_exp_calibration_keeps_mass_far_below_a_clique_maximum(dtype):
    """Adversarial potentials for the one-exponential schedule: the child clique (b, c) puts every
    cell with b = 0 800 nats below its maximum (exp underflows to 0 in any float), while the parent
    (a, b) favours b = 0 by 1000 nats, so nearly all the mass sits on b = 0. Shifted exponentials
    alone would give b = 0 probability 0 (collect) or zero the whole child (distribute); the exact
    fallbacks must return the true beliefs."""
    from ddssp.marginals.model import CalibratedTree

    dom = {"a": 4, "b": 2, "c": 3}  # (a, b) is the larger clique: the root, (b, c) its child
    child = np.array([[-800.0, -801.0, -799.5], [0.0, 0.5, -0.5]])  # axes (b, c)
    parent = np.array([[1000.0, 0.0], [999.0, 0.0], [998.0, 1.0], [1000.5, -1.0]])  # axes (a, b)
    pots = {("a", "b"): parent, ("b", "c"): child}
    joint = brute_joint(dom, pots, 1.0)
    for cliques, edges in ([[("a", "b"), ("b", "c")], [(0, 1)]], [[("b", "c"), ("a", "b")], [(0, 1)]]):
        tree = CalibratedTree(dom, cliques, edges)
        assert cliques[tree.order[0]] == ("a", "b")
        theta = [pots[c].astype(dtype) for c in cliques]
        got = tree.calibrate(theta)
        for c, g in zip(cliques, got):
            want = brute_marginal(joint, dom, c)
            assert want[(0,) * len(c)] > 0.1 or c == ("b", "c")  # the mass is where the child is tiny
            np.testing.assert_allclose(g, want, rtol=1e-3 if dtype is np.float32 else 1e-9, atol=1e-6)


# ------------------------------------------------------------------ synthetic sampling
def _tv(p, q):
    return 0.5 * np.abs(p / p.sum() - q / q.sum()).sum()


def test_rounded_sample_root_counts_within_one_and_reproducible():
    """Controlled rounding: the root clique's cell counts are floor or ceil of n * p, never further."""
    model = GraphicalModel(DOM, random_potentials(DOM, STRUCTURES["chain"], 4), 1.0)
    n = 1013
    s = model.sample(n, np.random.default_rng(3), method="rounded")
    root = model._tree.order[0]
    c = model.cliques[root]
    prob = model.beliefs[root] / model.beliefs[root].sum()
    counts = np.zeros([DOM[a] for a in c])
    np.add.at(counts, tuple(s[a].to_numpy() for a in c), 1)
    assert len(s) == n and np.all(np.abs(counts - n * prob) < 1.0)
    again = model.sample(n, np.random.default_rng(3), method="rounded")
    pd.testing.assert_frame_equal(s, again)
    with pytest.raises(ValueError, match="method"):
        model.sample(5, np.random.default_rng(0), method="exact")


def test_rounded_sample_is_unbiased_and_closer_than_iid():
    """Over many draws the mean count of every cell of every pair is n * p (unbiased rounding), and
    the two-way marginals of one draw are closer to the model's than iid draws are."""
    model = GraphicalModel(DOM, random_potentials(DOM, STRUCTURES["tree"], 5), 1.0)
    n, reps = 200, 300
    pairs = [("a", "c"), ("b", "e"), ("c", "d")]
    mean = {p: np.zeros([DOM[a] for a in p]) for p in pairs}
    tv = {"iid": [], "rounded": []}
    for r in range(reps):
        for method in ("iid", "rounded"):
            s = model.sample(n, np.random.default_rng(r), method=method)
            for p in pairs:
                m = np.zeros([DOM[a] for a in p])
                np.add.at(m, (s[p[0]].to_numpy(), s[p[1]].to_numpy()), 1)
                tv[method].append(_tv(m, model.marginal(p)))
                if method == "rounded":
                    mean[p] += m / reps
    for p in pairs:
        expect = n * model.marginal(p) / model.total
        # sd of a mean of `reps` counts is at most sqrt(n p (1-p) / reps) <= sqrt(n / (4 reps))
        assert np.max(np.abs(mean[p] - expect)) < 5 * np.sqrt(n / (4 * reps))
    assert np.mean(tv["rounded"]) < 0.8 * np.mean(tv["iid"])


def _stratum_errors(model, s, n):
    """Per non-root clique: the largest |count - expectation| over the cells of (separator, the
    first column drawn before that is not in it, the clique's new columns), where the expectation
    is the sample's count of (separator, that column) times the model's P(new | separator)."""
    tree, drawn, out = model._tree, [], []
    for v in tree.order:
        c = model.cliques[v]
        if tree.parent[v] < 0:
            drawn += list(c)
            continue
        sep = tree.sep[(v, tree.parent[v])]
        new = [a for a in c if a not in sep]
        prior = [a for a in drawn if a not in sep and model.domain[a] > 1]
        if new and prior:
            a = prior[0]
            dims = [model.domain[x] for x in (*sep, a, *new)]
            count = np.zeros(dims)
            np.add.at(count, tuple(s[x].to_numpy() for x in (*sep, a, *new)), 1)
            cond = model.marginal((*sep, *new))
            cond = cond / np.maximum(cond.sum(axis=tuple(range(len(sep), cond.ndim)), keepdims=True), 1e-300)
            expect = np.expand_dims(count.sum(axis=tuple(range(len(sep) + 1, count.ndim))), -1)
            expect = expect.reshape(dims[: len(sep) + 1] + [1] * len(new)) * np.expand_dims(cond, len(sep))
            out.append(float(np.abs(count - expect).max()))
        drawn += new
    return out


@pytest.mark.parametrize("name", ["chain", "tree", "triple"])
def test_rounded_sample_gives_each_stratum_of_earlier_columns_its_share(name):
    """A later clique's values are spread over the strata of the columns drawn before in proportion:
    within each (separator, earlier column) stratum every new value's count is within a few rows of
    the stratum's size times the model's conditional probability, where random order misses by the
    sd of a hypergeometric draw (tens of rows at this size)."""
    model = GraphicalModel(DOM, random_potentials(DOM, STRUCTURES[name], 6), 1.0)
    n = 20000
    rounded = _stratum_errors(model, model.sample(n, np.random.default_rng(1), method="rounded"), n)
    iid = _stratum_errors(model, model.sample(n, np.random.default_rng(1), method="iid"), n)
    assert rounded and max(rounded) < 4.0
    assert max(iid) > 3 * max(rounded)


def test_marginals_across_a_chain_of_more_columns_than_einsum_letters():
    """A chain of 70 binary columns (more than einsum's 52 letters): the marginal of the two ends
    and of three spread-out columns equal the product of the chain's transition matrices."""
    n = 70
    dom = {f"x{i:02d}": 2 for i in range(n)}
    names = list(dom)
    rng = np.random.default_rng(5)
    pots = {(names[i], names[i + 1]): rng.normal(0, 1.0, (2, 2)) for i in range(n - 1)}
    model = GraphicalModel(dom, pots, 1.0)
    # forward pass: P(x_0, x_k) from the normalised chain (messages from the right end first)
    back = [np.ones(2)]
    for i in range(n - 2, -1, -1):
        back.insert(0, np.exp(pots[(names[i], names[i + 1])]) @ back[0])
    z = back[0].sum()

    def pair(j: int, k: int) -> np.ndarray:
        # P(x_j, x_k) for j < k: left message to j, transitions j..k, right message from k
        left = np.ones(2)
        for i in range(j):
            left = left @ np.exp(pots[(names[i], names[i + 1])])
        mid = np.eye(2)
        for i in range(j, k):
            mid = mid @ np.exp(pots[(names[i], names[i + 1])])
        return left[:, None] * mid * back[k][None, :] / z

    np.testing.assert_allclose(model.marginal((names[0], names[-1])), pair(0, n - 1), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.marginal((names[10], names[55])), pair(10, 55), rtol=1e-9, atol=1e-12)
    # a triple: contract the pair (10, 40) and (40, 65) through x40
    p1040, p4065 = pair(10, 40), pair(40, 65)
    triple = p1040[:, :, None] * p4065[None, :, :] / p1040.sum(axis=0)[None, :, None]
    np.testing.assert_allclose(model.marginal((names[10], names[40], names[65])), triple, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_batched_marginals_match_brute_force(name):
    """marginals() (pairs shared across one pass per first column) equals the brute-force joint's
    marginals for every ordered pair and some triples, on fresh models (nothing cached)."""
    pots = random_potentials(DOM, STRUCTURES[name], seed=len(name) + 7)
    model = GraphicalModel(DOM, pots, 99.0)
    joint = brute_joint(DOM, pots, 99.0)
    queries = list(itertools.permutations(DOM, 2)) + [("e", "a", "c"), ("d",)]
    got = model.marginals(queries)
    assert len(got) == len(queries)
    for q, g in zip(queries, got):
        np.testing.assert_allclose(g, brute_marginal(joint, DOM, q), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed,groups,per_group", [(11, 3, 9), (12, 1, 40), (13, 2, 25)])
def test_batched_marginals_on_a_wide_random_junction_tree(seed, groups, per_group):
    """30 columns, random overlapping cliques of 1-3 columns in unconnected groups (deep and bushy
    junction trees, separators of one and two columns): every pair from marginals() equals the
    one-at-a-time marginal() of a second, identical model."""
    rng = np.random.default_rng(seed)
    dom = {f"v{i:02d}": int(rng.integers(2, 5)) for i in range(30)}
    names = list(dom)
    cliques = []
    width = len(names) // groups
    for g in range(groups):
        group = names[g * width : (g + 1) * width]
        for _ in range(per_group):
            k = int(rng.integers(1, 4))
            cliques.append(tuple(rng.choice(group, size=k, replace=False)))
    pots = random_potentials(dom, cliques, seed=3)
    batched, single = GraphicalModel(dom, pots, 1000.0), GraphicalModel(dom, pots, 1000.0)
    pairs = list(itertools.combinations(names, 2))
    for q, g in zip(pairs, batched.marginals(pairs)):
        np.testing.assert_allclose(g, single.marginal(q), rtol=1e-10, atol=1e-10)
        assert g.sum() == pytest.approx(1000.0)


def test_batched_marginals_in_groups_when_messages_would_be_large(monkeypatch):
    """With a tiny message budget the pairs are computed in passes over groups of columns: the same
    values as one pass."""
    import ddssp.marginals.pairs as pairs_module

    rng = np.random.default_rng(21)
    dom = {f"v{i:02d}": int(rng.integers(2, 5)) for i in range(24)}
    names = list(dom)
    cliques = [(names[i], names[int(rng.integers(0, i))]) for i in range(1, 24)]
    pots = random_potentials(dom, cliques, seed=5)
    pairs = list(itertools.combinations(names, 2))
    whole = GraphicalModel(dom, pots, 500.0).marginals(pairs)
    calls = []
    one_pass = pairs_module._one_pass
    monkeypatch.setattr(pairs_module, "MESSAGE_BYTES", 64)
    monkeypatch.setattr(pairs_module, "_one_pass", lambda *a: calls.append(1) or one_pass(*a))
    grouped = GraphicalModel(dom, pots, 500.0).marginals(pairs)
    assert len(calls) > 3
    for g, w in zip(grouped, whole):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_a_subnormal_float32_separator_count_gives_finite_pairs():
    from ddssp.marginals.pairs import pair_marginals

    # b's second level holds a subnormal float32 count: 1 / it overflows float32 to inf, and the
    # pair (a, c) through that separator must still be finite, with the mass of the normal cells
    domain = {"a": 2, "b": 2, "c": 2}
    cliques, edges = [("a", "b"), ("b", "c")], [(0, 1)]
    sep = {(0, 1): ("b",), (1, 0): ("b",)}
    tiny = np.float32(1e-44)
    beliefs = [
        np.array([[10.0, tiny], [10.0, 0.0]], dtype=np.float32),
        np.array([[15.0, 5.0], [tiny, 0.0]], dtype=np.float32),
    ]
    got = pair_marginals(domain, cliques, edges, beliefs, sep, [("a", "c")])[("a", "c")]
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, [[7.5, 2.5], [7.5, 2.5]], rtol=1e-6)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_batched_triples_match_brute_force(name):
    """marginals() of the three-way queries that share a column (any order of axes, two groups)
    equals the brute-force joint's marginals."""
    pots = random_potentials(DOM, STRUCTURES[name], seed=len(name) + 3)
    model = GraphicalModel(DOM, pots, 50.0)
    joint = brute_joint(DOM, pots, 50.0)
    triples = [q for q in itertools.permutations(DOM, 3) if q[1] == "c" or q[2] == "a"]
    for q, g in zip(triples, model.marginals(triples)):
        np.testing.assert_allclose(g, brute_marginal(joint, DOM, q), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed,groups,per_group", [(21, 3, 9), (22, 1, 40), (23, 2, 25)])
def test_batched_grouped_triples_equal_one_at_a_time(seed, groups, per_group):
    """The triples of a grouped workload ((g, a, b) for every pair of the other columns, g in or
    outside the model's cliques) on wide random junction trees: each from marginals() equals the
    one-at-a-time marginal() of a second, identical model to 1e-9, and they were computed in one
    batch (:func:`~ddssp.marginals.triples.triple_marginals` answers every triple)."""
    from ddssp.marginals.triples import triple_marginals

    rng = np.random.default_rng(seed)
    dom = {f"v{i:02d}": int(rng.integers(2, 5)) for i in range(16)}
    names = list(dom)
    width = len(names) // groups
    cliques = []
    for grp in range(groups):
        members = names[grp * width : (grp + 1) * width]
        for _ in range(per_group):
            cliques.append(tuple(rng.choice(members, size=int(rng.integers(1, 4)), replace=False)))
    pots = random_potentials(dom, cliques, seed=seed)
    for g in (names[0], names[-1]):
        batched, single = GraphicalModel(dom, pots, 1000.0), GraphicalModel(dom, pots, 1000.0)
        triples = [(g, a, b) for a, b in itertools.combinations([x for x in names if x != g], 2)]
        canon = [tuple(sorted(q, key=names.index)) for q in triples]
        tree = batched._tree
        assert len(triple_marginals(dom, batched.cliques, batched.edges, batched.beliefs, tree.sep, canon)) == len(
            canon
        )
        for q, m in zip(triples, batched.marginals(triples)):
            np.testing.assert_allclose(m, single.marginal(q), rtol=1e-9, atol=1e-9)
            assert m.sum() == pytest.approx(1000.0)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_pairs_inside_batched_triples_come_from_them(name, monkeypatch):
    """A grouped workload's candidates in one marginals() call: the triples (g, a, b), their pairs
    (a, b) and (g, a), and pairs no triple holds. Each equals the brute-force joint's marginal, and
    only the pairs outside every triple take the pass up the tree."""
    import ddssp.marginals.model as model_mod

    pots = random_potentials(DOM, STRUCTURES[name], seed=len(name) + 11)
    joint = brute_joint(DOM, pots, 80.0)
    g, rest = "c", [x for x in DOM if x != "c"]
    triples = [(g, a, b) for a, b in itertools.combinations(rest[:-1], 2)]  # the last column in no triple
    inside = [(b, a) for _, a, b in triples] + [(a, g) for a in rest[:-1]]
    outside = [(a, rest[-1]) for a in rest[:-1]]
    asked: list = []
    real = model_mod.pair_marginals

    def spy(domain, cliques, edges, beliefs, sep, pairs, keep=None):
        pairs = list(pairs)
        if keep is None:
            asked.extend(pairs)
        return real(domain, cliques, edges, beliefs, sep, pairs, keep)

    monkeypatch.setattr(model_mod, "pair_marginals", spy)
    queries = triples + inside + outside
    for q, m in zip(queries, GraphicalModel(DOM, pots, 80.0).marginals(queries)):
        np.testing.assert_allclose(m, brute_marginal(joint, DOM, q), rtol=1e-9, atol=1e-9)
    assert not {tuple(sorted(q)) for q in asked} & {tuple(sorted(q)) for q in inside}
