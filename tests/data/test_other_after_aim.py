"""The catch-all level is decided again from AIM's noisy marginals (post-processing)."""

import numpy as np

from ddssp.data import Schema
from ddssp.data.columns import Column
from ddssp.marginals.aim import Measurement
from ddssp.releasefile.conditions import empty_from_measurements


def _schema():
    return Schema(
        [
            Column.categorical("sex", ["F", "M", "<other>"], missing="<other>"),
            Column.categorical("job", ["a", "b", "<other>"], missing="<other>"),
        ]
    )


def _measure(counts, sigma, rng):
    return np.asarray(counts, dtype=float) + rng.normal(0, sigma, np.shape(counts))


def test_an_other_level_bound_near_zero_is_marked_empty_and_one_with_rows_is_not():
    rng = np.random.default_rng(0)
    marked_sex = marked_job = 0
    for _ in range(200):
        s = _schema()
        sex = [1000, 1000, 0]  # both labels released, nothing else
        job = [800, 800, 400]  # a fifth of the rows in labels discovery did not release
        pair = np.outer([0.5, 0.5, 0.0], [0.4, 0.4, 0.2]) * 2000
        ms = [
            Measurement(("sex",), 10.0, _measure(sex, 10.0, rng), 0),
            Measurement(("job",), 10.0, _measure(job, 10.0, rng), 0),
            Measurement(("sex", "job"), 30.0, _measure(pair, 30.0, rng), 1),
        ]
        got = empty_from_measurements(s, ms, ["sex", "job"])
        marked_sex += "sex" in got and s.column("sex").empty == ("<other>",)
        marked_job += "job" in got
    # sd of the combined count ~9.5 rows: a true 0 shows at 3 sds in ~0.13% of draws
    assert marked_sex >= 197
    assert marked_job == 0


def test_only_discovered_columns_and_only_measured_ones_are_decided():
    rng = np.random.default_rng(1)
    s = _schema()
    ms = [Measurement(("sex",), 1.0, _measure([1000, 1000, 0], 1.0, rng), 0)]
    assert empty_from_measurements(s, ms, []) == []  # declared columns: the publisher's levels
    assert empty_from_measurements(s, ms, ["job"]) == []  # never measured: nothing to go on
    assert s.column("sex").empty == () and s.column("job").empty == ()


def test_on_a_small_table_other_keeps_rows_only_where_they_show():
    # 100 rows, noise sd 20 per cell: a count of 0 does not show and is marked empty, though it
    # cannot be bounded under 5% of the rows; a fifth of the rows (20, one sd) does not show either
    # and is zeroed with it; half of the rows of another column (50, ten sds of its noise) shows and stays
    rng = np.random.default_rng(2)
    marked = {"sex": 0, "job": 0}
    for _ in range(100):
        s = Schema(
            [
                Column.categorical("sex", ["F", "M", "<other>"], missing="<other>"),
                Column.categorical("job", ["a", "<other>"], missing="<other>"),
            ]
        )
        ms = [
            Measurement(("sex",), 20.0, _measure([50, 50, 0], 20.0, rng), 0),
            Measurement(("job",), 5.0, _measure([50, 50], 5.0, rng), 0),
        ]
        for c in empty_from_measurements(s, ms, ["sex", "job"]):
            marked[c] += 1
    assert marked["sex"] >= 97
    assert marked["job"] == 0


def test_the_rule_is_a_one_sided_test_at_three_sds():
    from ddssp.data.discovery.labels import OTHER_SHOW_SDS, other_shows_after

    assert OTHER_SHOW_SDS == 3.0
    assert other_shows_after(30.0, 10.0) and not other_shows_after(29.9, 10.0)
    assert not other_shows_after(-50.0, 10.0)
