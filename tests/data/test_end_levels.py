"""Outer levels of discovered numeric columns that AIM's noisy counts do not show hold no rows
(:func:`ddssp.releasefile.conditions.end_levels_empty_from_measurements`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddssp.data import Column, Schema
from ddssp.marginals.aim import Measurement
from ddssp.releasefile.conditions import RANGE_LEVEL_SHOW_SDS, end_levels_empty_from_measurements

EDGES = [18, 23, 38, 47, 164, 212, 317]  # an age range whose top bins lie where no record is


def _m(clique, values, sigma):
    return Measurement(tuple(clique), float(sigma), np.asarray(values, dtype=float), 0)


def _ages(missing=None):
    return Column.binned("age", EDGES, missing=missing)


def test_outer_levels_under_the_level_are_marked_inner_ones_kept():
    schema = Schema([_ages(), Column.categorical("sex", ["a", "b"])])
    # sigma 20: the bin [38, 47) reads 10 (0.5 sds) between bins that show; the two top bins and the
    # bottom one stay under 2 sds
    one = _m(["age"], [30, 200, 10, 150, 12, -7], 20.0)
    marked = end_levels_empty_from_measurements(schema, [one], ["age", "sex"])
    assert RANGE_LEVEL_SHOW_SDS == 2.0
    labels = schema.column("age").labels
    assert marked == {"age": [labels[0], labels[4], labels[5]]}
    assert schema.column("age").empty == (labels[0], labels[4], labels[5])
    assert schema.column("sex").empty == ()  # categorical columns are not decided here


def test_counts_combine_over_measurements_by_inverse_variance():
    # alone, 35 at sd 20 is 1.75 sds; with a pair (sd 20 on 2 cells, a level's sd 28.3) reading 40,
    # the combined count is (35/400 + 40/800) / (1/400 + 1/800) = 36.7 at sd 16.3: 2.25 sds, shown
    schema = Schema([_ages(), Column.categorical("sex", ["a", "b"])])
    one = _m(["age"], [100, 200, 100, 150, 100, 35], 20.0)
    two = _m(["age", "sex"], [[50, 50], [100, 100], [50, 50], [75, 75], [50, 50], [20, 20]], 20.0)
    assert end_levels_empty_from_measurements(schema, [one], ["age"]) == {"age": [schema.column("age").labels[5]]}
    fresh = Schema([_ages(), Column.categorical("sex", ["a", "b"])])
    assert end_levels_empty_from_measurements(fresh, [one, two], ["age"]) == {}


def test_the_missing_level_and_the_level_of_empty_cells_are_never_emptied():
    col = _ages(missing="<missing>")
    schema = Schema([col])
    one = _m(["age"], [100, 200, 100, 150, 100, 3, 1], 20.0)  # the last cell: the missing level
    assert end_levels_empty_from_measurements(schema, [one], ["age"]) == {"age": [col.labels[5]]}
    col2 = _ages()
    col2.na = col2.labels[5]  # empty cells are coded to the top bin: it holds them whatever it reads
    schema2 = Schema([col2])
    assert end_levels_empty_from_measurements(schema2, [_m(["age"], [100, 200, 100, 150, 2, 3], 20.0)], ["age"]) == {}


def test_when_no_level_shows_nothing_is_marked_and_unnamed_columns_are_left_alone():
    """Counts under the noise everywhere (a small table at a small budget) cannot say where the rows
    are: marking all but the strongest level would collapse the column into one bin of noise."""
    schema = Schema([_ages()])
    one = _m(["age"], [5, 30, 10, -4, 2, 0], 20.0)
    assert end_levels_empty_from_measurements(schema, [one], ["age"]) == {}
    assert schema.column("age").empty == ()
    untouched = Schema([_ages()])
    assert end_levels_empty_from_measurements(untouched, [one], []) == {}
    assert end_levels_empty_from_measurements(untouched, [_m(["x"], [1.0], 1.0)], ["age"]) == {}


def test_a_release_draws_no_value_beyond_the_levels_its_counts_show():
    """End to end, seeded: a discovered numeric column's synthetic values lie inside its levels that
    are not marked empty, and the outer ones of those show in AIM's counts."""
    import warnings

    from ddssp import release
    from ddssp.releasefile.conditions import level_sums

    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"age": rng.integers(17, 70, n), "g": rng.choice(["a", "b"], n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(df, eps=1.0, seed=1, insecure_seed=3)
    col = rel.schema.column("age")
    keep = [i for i, lab in enumerate(col.labels) if lab not in col.empty and np.isfinite(col.values[i])]
    x, w, _, _ = level_sums("age", col.size, rel.measurements)
    sd = (1.0 / w) ** 0.5
    assert x[keep[0]] / w >= RANGE_LEVEL_SHOW_SDS * sd and x[keep[-1]] / w >= RANGE_LEVEL_SHOW_SDS * sd
    syn = rel.sample(2000, seed=0)["age"].dropna().to_numpy(dtype=float)
    edges = np.asarray(col.edges, dtype=float) if col.edges is not None else None
    lo = edges[keep[0]] if edges is not None else col.values[keep[0]]
    hi = edges[keep[-1] + 1] if edges is not None else col.values[keep[-1]]
    assert syn.min() >= lo and syn.max() <= hi


def test_whole_number_levels_are_left_alone():
    """A discovered whole-number level (a 0/1 outcome's 1) was released on its own count: a weak
    minority level is kept rather than erased."""
    schema = Schema([Column.levels("flag", [0, 1])])
    assert end_levels_empty_from_measurements(schema, [_m(["flag"], [880, 30], 60.0)], ["flag"]) == {}
    assert schema.column("flag").empty == ()


def test_a_declared_range_keeps_its_end_bins_at_a_small_budget():
    """End to end, seeded, a 300-row table at eps 0.3 with every numeric column's range declared
    (``--bounds``): discovery bins inside the public ranges, no noisy count narrows them, and no
    column is left with a single bin the model can put rows in."""
    import warnings

    from ddssp import DiscoveryOptions, release
    from ddssp.data.codebook import parse_bounds, parse_levels

    rng = np.random.default_rng(5)
    n = 300
    x = rng.normal(size=(n, 4))
    df = pd.DataFrame({f"x{j}": 10 + 3 * x[:, j] for j in range(4)})
    df["y"] = (x[:, 0] + rng.normal(size=n) > 0).astype(int)
    hints = parse_bounds([f"x{j}=-5.5:25.5" for j in range(4)]) + parse_levels(["y=0,1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(df, eps=0.3, seed=1, insecure_seed=4, target="y", discovery=DiscoveryOptions(hints=hints))
    for j in range(4):
        col = rel.schema.column(f"x{j}")
        assert col.edges is not None and len(col.empty) == 0, (col.name, col.empty)
