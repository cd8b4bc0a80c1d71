"""Workloads: all pairs, target pairs, cell caps, JSON loading, validation, downward closure."""

from __future__ import annotations

import json

import pytest

from ddssp.errors import WorkloadError
from ddssp.marginals.workload import (
    all_pairs,
    cap_cells,
    downward_closure,
    load_workload,
    target_pairs,
    validate_workload,
)

DOM = {"a": 2, "b": 3, "c": 40, "d": 50}


def test_all_pairs_in_domain_order_with_unit_weights():
    wl = all_pairs(DOM)
    assert [c for c, _ in wl] == [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]
    assert all(w == 1.0 for _, w in wl)


def test_all_pairs_cap_drops_large_marginals():
    wl = all_pairs(DOM, max_cells=150)
    assert ("c", "d") not in [c for c, _ in wl]  # 2000 cells
    assert ("b", "d") in [c for c, _ in wl]  # 150 cells: kept (cap is inclusive)
    assert len(wl) == 5


def test_all_pairs_needs_two_columns():
    with pytest.raises(WorkloadError):
        all_pairs({"a": 2})


def test_target_pairs():
    wl = target_pairs(DOM, "c")
    assert wl[0] == (("c",), 1.0)
    assert [c for c, _ in wl[1:]] == [("c", "a"), ("c", "b"), ("c", "d")]
    with pytest.raises(WorkloadError, match="zzz"):
        target_pairs(DOM, "zzz")
    assert [c for c, _ in target_pairs(DOM, "c", max_cells=100)] == [("c",), ("c", "a")]


def test_cap_cells_rejects_everything_removed_and_bad_cap():
    with pytest.raises(WorkloadError, match="no workload marginal"):
        cap_cells([(("c", "d"), 1.0)], DOM, 10)
    with pytest.raises(WorkloadError):
        cap_cells([(("a",), 1.0)], DOM, 0)


def test_load_workload_both_formats(tmp_path):
    p = tmp_path / "w.json"
    p.write_text(json.dumps([{"clique": ["a", "b"], "weight": 2.5}, {"clique": ["c"]}]))
    assert load_workload(p, DOM) == [(("a", "b"), 2.5), (("c",), 1.0)]
    p.write_text(json.dumps([["a", "b"], ["b", "d"], "c"]))
    assert load_workload(p, DOM) == [(("a", "b"), 1.0), (("b", "d"), 1.0), (("c",), 1.0)]


@pytest.mark.parametrize(
    "content, match",
    [
        ("[]", "empty"),
        ('[["a", "zz"]]', "zz"),
        ('[["a", "a"]]', "repeats"),
        ('{"a": 1}', "list"),
        ("not json", "cannot read"),
        ('[{"weight": 1}]', "clique"),
        ('[{"clique": ["a"], "weight": "x"}]', "weight"),
        ('[{"clique": ["a"], "weight": -1}]', "weight"),
        ("[[1, 2]]", "column names"),
    ],
)
def test_load_workload_errors(tmp_path, content, match):
    p = tmp_path / "w.json"
    p.write_text(content)
    with pytest.raises(WorkloadError, match=match):
        load_workload(p, DOM)


def test_load_workload_missing_file(tmp_path):
    with pytest.raises(WorkloadError, match="not found"):
        load_workload(tmp_path / "nope.json", DOM)


def test_validate_workload():
    with pytest.raises(WorkloadError, match="empty"):
        validate_workload([], DOM)
    with pytest.raises(WorkloadError, match="'x'"):
        validate_workload([(("a", "x"), 1.0)], DOM)
    with pytest.raises(WorkloadError, match="repeats"):
        validate_workload([(("b", "b"), 1.0)], DOM)
    with pytest.raises(WorkloadError, match="empty clique"):
        validate_workload([((), 1.0)], DOM)
    assert validate_workload([(["a", "b"], 1)], DOM) == [(("a", "b"), 1.0)]


def test_downward_closure_weights():
    wl = [(("a", "b"), 1.0), (("b", "c"), 2.0)]
    cands = downward_closure(wl)
    # w_r = sum_s c_s |r & s|
    assert cands == {
        ("a",): 1.0,
        ("b",): 3.0,
        ("c",): 2.0,
        ("a", "b"): 1.0 * 2 + 2.0 * 1,
        ("b", "c"): 1.0 * 1 + 2.0 * 2,
    }


def test_downward_closure_merges_permutations_and_three_way():
    cands = downward_closure([(("a", "b", "c"), 1.0), (("c", "a"), 1.0)])
    assert len(cands) == 7  # all non-empty subsets of {a, b, c}
    assert cands[("a", "c")] == 2 + 2
    assert cands[("a", "b", "c")] == 3 + 2
    assert ("c", "a") not in cands


def test_downward_closure_weights_equal_the_definition():
    """Each closure clique's weight is sum over workload entries s of w_s * |r & s|, for a mixed
    workload of 1-, 2- and 3-way entries with uneven weights."""
    import itertools
    import math

    import numpy as np

    from ddssp.marginals.workload import downward_closure

    cols = [f"c{i}" for i in range(7)]
    rng = np.random.default_rng(4)
    wl = [
        (tuple(rng.choice(cols, size=int(rng.integers(1, 4)), replace=False)), float(rng.uniform(0.1, 3)))
        for _ in range(15)
    ]
    got = downward_closure(wl)
    want = {}
    for s, _ in wl:
        for k in range(1, len(s) + 1):
            for sub in itertools.combinations(s, k):
                want.setdefault(frozenset(sub), sub)
    assert set(got) == set(want.values())
    for key, r in want.items():
        assert got[r] == math.fsum(w * len(key & set(s)) for s, w in wl)


@pytest.mark.parametrize("d", [142, 143, 150, 500, 10_000])
def test_wide_pair_workload_fits_the_release_file(d):
    from collections import Counter

    from ddssp.data.limits import MAX_CLIQUES

    dom = {f"c{i}": 2 for i in range(d)}
    wl = all_pairs(dom)
    keys = [frozenset(c) for c, _ in wl]
    assert len(wl) <= MAX_CLIQUES and len(set(keys)) == len(keys)
    pos = {a: i for i, a in enumerate(dom)}
    assert all(len(c) == 2 and pos[c[0]] < pos[c[1]] for c, _ in wl)
    if d * (d - 1) // 2 <= MAX_CLIQUES:
        assert len(wl) == d * (d - 1) // 2
    else:  # every column in the same number of pairs: 2k, k = cap // d
        k = MAX_CLIQUES // d
        assert set(Counter(a for c, _ in wl for a in c).values()) == {2 * k}


def test_circular_pairs_small_and_capped_release_plan():
    from ddssp.errors import DDSSPError
    from ddssp.marginals.workload import check_release_size, circular_pairs

    dom = {c: 3 for c in "abcde"}
    assert [c for c, _ in circular_pairs(dom, 1)] == [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("a", "e")]
    assert len(circular_pairs(dom, 4)) == 10  # every pair once
    wide = {f"c{i}": 2 for i in range(10_001)}
    with pytest.raises(DDSSPError, match="10,001 columns.*--drop"):
        check_release_size(wide, [], None)
    d2000 = {f"c{i}": 2 for i in range(2_500)}
    with pytest.raises(DDSSPError, match="--rounds 7,500 or less"):
        check_release_size(d2000, all_pairs(d2000), None)
    check_release_size(d2000, all_pairs(d2000), 7_000)
    with pytest.raises(DDSSPError, match="workload has 10,001 cliques"):
        check_release_size(dom, [(("a", "b"), 1.0)] * 10_001, None)
