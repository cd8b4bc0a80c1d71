"""The seeded discovery bench counts what it says on a generated table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddssp.bench.discovery_seeded import COLUMNS, run


def test_counts_are_bounded_by_the_releases_and_the_draws_stay_in_the_bins():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": np.round(rng.normal(40, 12, 3000).clip(17, 90)), "g": rng.choice(["a", "b"], 3000)})
    table, listed = run(df, range(3))
    assert list(table.columns) == COLUMNS
    row = table.set_index("column").loc["age"]
    assert 1 <= row["binned"] <= 3
    assert 0 <= row["releases_out"] <= row["binned"] and 0 <= row["releases_impossible"] <= row["binned"]
    assert 0.0 <= row["clipped"] <= 1.0
    assert row["max"] <= 100  # whole ages, bins inside the scan's quarter-decade band [56, 100)
    assert all(line.split()[0] in {"0", "1", "2"} for line in listed)
