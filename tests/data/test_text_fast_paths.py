"""Text columns (pandas string dtype) take per-distinct fast paths in discovery and encoding; they
must give exactly what the general per-cell path gives on the same values as Python objects."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddssp.data.dates import parse_clock, parse_days
from ddssp.data.discovery.labels import label_counts
from ddssp.data.discovery.slots import parse_numbers
from ddssp.data.encoding import parse_numeric

# cells people have: numbers with spaces, ISO dates and timestamps, clock times, labels, blanks
CELL = st.one_of(
    st.none(),
    st.sampled_from(["1", " 2 ", "2.5", "-3", "1e3", "", " ", "x", "NaN", "inf", "2020-01-02", "2020-01-02T03:04"]),
    st.sampled_from(["12:30", "7:05:09", "25:00", "<missing>", "<other>", "Private", "  Private"]),
    st.text(max_size=4),
    st.integers(-50, 50).map(str),
)


def _pair(cells, dtype):
    fast = pd.Series(cells, dtype=dtype)
    general = pd.Series([None if pd.isna(v) else v for v in fast.tolist()], dtype=object)
    return fast, general


@pytest.mark.parametrize("dtype", ["str", "string", "string[pyarrow]"])
@settings(max_examples=60, deadline=None)
@given(cells=st.lists(CELL, max_size=40))
def test_string_dtype_fast_paths_equal_the_general_path(dtype, cells):
    fast, general = _pair(cells, dtype)
    assert isinstance(fast.dtype, pd.StringDtype)
    np.testing.assert_array_equal(parse_numeric(fast), parse_numeric(general))
    for f, g in zip(parse_numbers(fast), parse_numbers(general)):
        np.testing.assert_array_equal(f, g)
    assert label_counts(fast) == label_counts(general)
    for parse in (parse_days, parse_clock):
        for f, g in zip(parse(fast), parse(general)):
            np.testing.assert_array_equal(f, g)


def test_fast_path_keeps_first_appearance_order():
    # the key release draws its noise in the order of the labels: the order must not change
    s = pd.Series(["b", None, "a", "b", "c", "a"], dtype="str")
    assert list(label_counts(s)) == ["b", "a", "c", "<missing>"]
