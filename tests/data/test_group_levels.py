"""Levels of the grouping column (``--by``) that AIM's noisy counts do not show hold no rows
(:func:`ddssp.releasefile.conditions.group_levels_empty_from_measurements`): a codebook declares every
area, a table covers some, and no synthetic row lands in an area the table does not hold."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddssp.data import Column, Schema
from ddssp.marginals.aim import Measurement
from ddssp.releasefile.conditions import GROUP_LEVEL_SHOW_SDS, group_levels_empty_from_measurements

AREAS = ["25-1", "25-2", "48-1", "48-2", "01-1", "06-1"]


def _m(clique, values, sigma):
    return Measurement(tuple(clique), float(sigma), np.asarray(values, dtype=float), 0)


def test_areas_under_the_noise_are_marked_and_those_that_show_are_kept():
    schema = Schema([Column.categorical("PUMA", AREAS), Column.categorical("sex", ["a", "b"])])
    # sigma 20: 99 reads 4.95 sds (marked), 101 reads 5.05 (kept); a negative count is marked
    one = _m(["PUMA"], [500, 800, 99, 101, -12, 3], 20.0)
    assert GROUP_LEVEL_SHOW_SDS == 5.0
    marked = group_levels_empty_from_measurements(schema, [one], "PUMA")
    assert marked == {"PUMA": ["48-1", "01-1", "06-1"]}
    assert schema.column("PUMA").empty == ("48-1", "01-1", "06-1")
    assert schema.column("sex").empty == ()
    again = Schema([Column.categorical("PUMA", AREAS)])
    assert group_levels_empty_from_measurements(again, [one], None) == {}  # no grouping column: nothing
    assert again.column("PUMA").empty == ()
    # when no area shows, the one the counts show most is kept
    weak = Schema([Column.categorical("PUMA", AREAS)])
    marked = group_levels_empty_from_measurements(weak, [_m(["PUMA"], [5, 90, -4, 1, 0, 2], 20.0)], "PUMA")
    assert "25-2" not in marked["PUMA"] and len(marked["PUMA"]) == 5


def test_a_release_by_area_puts_no_synthetic_row_in_a_declared_area_the_table_does_not_hold():
    from ddssp import release
    from ddssp.pipeline.options import AimOptions

    rng = np.random.default_rng(7)
    n = 3000
    puma = rng.choice(AREAS[:3], n, p=[0.5, 0.3, 0.2])
    rows = pd.DataFrame({"PUMA": puma, "sex": rng.choice(["a", "b"], n), "k": rng.choice(["x", "y", "z"], n)})
    schema = Schema(
        [
            Column.categorical("PUMA", AREAS),
            Column.categorical("sex", ["a", "b"]),
            Column.categorical("k", ["x", "y", "z"]),
        ]
    )
    by_area = release(rows, schema, eps=1.0, insecure_seed=3, aim=AimOptions(by="PUMA"), progress=False)
    assert set(by_area.schema.column("PUMA").empty) == set(AREAS[3:])
    syn = by_area.synthesize(n, seed=1)
    assert set(syn.PUMA) == set(AREAS[:3])
    shares = syn.PUMA.value_counts(normalize=True)
    assert abs(shares["25-1"] - 0.5) < 0.05 and abs(shares["48-1"] - 0.2) < 0.05
    plain = release(rows, schema, eps=1.0, insecure_seed=3, progress=False)  # no grouping column: declared levels stand
    assert plain.schema.column("PUMA").empty == ()


def test_a_codebooks_levels_stand_when_no_grouping_column_names_them():
    """Only the grouping column is decided from the counts: a codebook's rare levels keep their rows."""
    from ddssp import release
    from ddssp.data.codebook import ColumnHint
    from ddssp.pipeline.options import DiscoveryOptions

    rng = np.random.default_rng(8)
    n = 3000
    rows = pd.DataFrame({"PUMA": rng.choice(AREAS[:3], n, p=[0.5, 0.3, 0.2]), "sex": rng.choice(["a", "b"], n)})
    hints = [ColumnHint("PUMA", levels=tuple(AREAS)), ColumnHint("sex", levels=("a", "b"))]
    rel = release(rows, eps=1.0, insecure_seed=4, discovery=DiscoveryOptions(hints=hints), progress=False)
    assert rel.schema.column("PUMA").empty == ()
