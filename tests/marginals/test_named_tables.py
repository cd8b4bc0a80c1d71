"""Named-axis table helpers: sums down to subsets of axes, on both sides of the einsum threshold."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ddssp.marginals.named_tables import EINSUM_CELLS, marginals_from, sum_to

SMALL = {"a": 2, "b": 3, "c": 4, "d": 5}
LARGE = {"a": 2, "b": 7, "c": 30, "d": 41}  # 17,220 cells: over EINSUM_CELLS


@pytest.mark.parametrize("sizes", [SMALL, LARGE], ids=["small", "large"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_to_every_subset_equals_the_float64_reference(sizes, dtype):
    """Every subset of the axes, in the table's order: the float64 table summed in float64 (exact
    here: whole numbers), to float32's precision for float32 tables."""
    assert (math.prod(sizes.values()) >= EINSUM_CELLS) == (sizes is LARGE)
    attrs = tuple(sizes)
    ref = np.random.default_rng(3).integers(0, 1000, size=tuple(sizes.values())).astype(np.float64)
    arr = ref.astype(dtype)
    for k in range(len(attrs) + 1):
        for keep in itertools.combinations(attrs, k):
            got = sum_to(arr, attrs, keep)
            want = ref.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in keep))
            assert np.shape(got) == tuple(sizes[a] for a in keep)
            assert np.asarray(got).dtype == dtype
            np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == np.float64 else 1e-5)


def test_marginals_from_shares_sums_and_equals_sum_to():
    """Several queries at once on a table over the threshold: each equals sum_to's own answer."""
    attrs = tuple(LARGE)
    arr = np.random.default_rng(4).random(tuple(LARGE.values()))
    queries = [("a", "c"), ("c",), ("b", "d"), ("a", "b", "d"), attrs]
    got = marginals_from(arr, attrs, queries, LARGE)
    assert set(got) == set(queries)
    for q in queries:
        np.testing.assert_allclose(got[q], sum_to(arr, attrs, q), rtol=1e-12)
