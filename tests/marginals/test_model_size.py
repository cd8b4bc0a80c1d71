"""The component-wise model-size filter gives exactly the sizes of triangulating the whole graph."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ddssp.marginals.junction_tree import triangulated_cliques
from ddssp.marginals.model_size import SizeFilter
from ddssp.marginals.named_tables import cells


def direct_mb(domain, cliques):
    return sum(cells(domain, c) for c in triangulated_cliques(domain, cliques)) * 8 / 2**20


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_sizes_equal_whole_graph_triangulation(data):
    n = data.draw(st.integers(3, 12))
    sizes = data.draw(st.lists(st.integers(2, 9), min_size=n, max_size=n))
    domain = {f"c{i}": s for i, s in enumerate(sizes)}
    names = list(domain)
    pairs = list(itertools.combinations(names, 2))
    k = data.draw(st.integers(0, min(10, len(pairs))))
    measured = data.draw(st.lists(st.sampled_from(pairs), min_size=k, max_size=k, unique=True))
    triples = [t for t in itertools.combinations(names, 3)][:20]
    measured += data.draw(st.lists(st.sampled_from(triples), max_size=2, unique=True))
    candidates = pairs + triples[:5]
    f = SizeFilter(domain)
    got = f.sizes(measured, candidates)
    for c in candidates:
        assert got[c] == direct_mb(domain, measured + [c])
    # again after one more measurement: the remembered parts are reused, the sizes stay exact
    more = measured + [candidates[0]]
    got = f.sizes(more, candidates)
    for c in candidates:
        assert got[c] == direct_mb(domain, more + [c])


def test_rounds_of_a_growing_model_on_many_columns():
    """Thirty columns, cliques added one at a time as AIM would: every round exact."""
    rng = np.random.default_rng(0)
    domain = {f"x{i:02d}": int(rng.integers(2, 12)) for i in range(30)}
    names = list(domain)
    candidates = list(itertools.combinations(names, 2))
    f = SizeFilter(domain)
    measured: list = []
    for _ in range(12):
        got = f.sizes(measured, candidates)
        for c in candidates[::7]:
            assert got[c] == direct_mb(domain, measured + [c])
        measured.append(candidates[int(rng.integers(len(candidates)))])


def test_a_candidate_that_adds_no_edge_is_sized_without_a_triangulation(monkeypatch):
    """(a, b, c) after the pairs ab, bc, ac: no new edge, so the current size, with no triangulation;
    (a, d) adds an edge and is triangulated."""
    import ddssp.marginals.model_size as ms

    domain = {"a": 3, "b": 4, "c": 5, "d": 2}
    measured = [("a", "b"), ("b", "c"), ("a", "c")]
    f = SizeFilter(domain)
    f.sizes(measured, [])  # the components, sized once
    calls = []
    real = ms.model_cells
    monkeypatch.setattr(ms, "model_cells", lambda d, q: calls.append(q) or real(d, q))
    got = f.sizes(measured, [("a", "b", "c"), ("b",)])
    assert calls == []
    assert got[("a", "b", "c")] == direct_mb(domain, measured) == direct_mb(domain, measured + [("a", "b", "c")])
    assert got[("b",)] == direct_mb(domain, measured)
    got = f.sizes(measured, [("a", "d")])
    assert len(calls) == 1 and got[("a", "d")] == direct_mb(domain, measured + [("a", "d")])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_model_cells_is_the_cells_of_the_triangulation(data):
    """The bit-set elimination of model_cells gives the cells of triangulated_cliques exactly,
    including columns in no clique and repeated calls on the same column sizes (its memory)."""
    from ddssp.marginals.junction_tree import model_cells

    n = data.draw(st.integers(1, 11))
    sizes = data.draw(st.lists(st.integers(1, 7), min_size=n, max_size=n))
    domain = {f"v{i}": s for i, s in enumerate(sizes)}
    names = list(domain)
    cliques = data.draw(
        st.lists(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True).map(tuple), max_size=10)
    )
    want = sum(cells(domain, c) for c in triangulated_cliques(domain, cliques))
    assert model_cells(domain, cliques) == want
    assert model_cells(domain, cliques) == want
