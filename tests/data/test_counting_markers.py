"""`--na-values` markers in a Parquet file's text columns are missing cells for counting as they are
for discovery and for the in-memory reader: every backend counts a typed text column's markers in
its missing level (before, DuckDB and the numpy backend read a Parquet file's `?` as a label and
counted it in `<other>`, a level discovery had marked empty)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from ddssp.data.counting import CsvOptions, count_marginals
from ddssp.dp.noise import make_noise
from ddssp.pipeline import DiscoveryOptions, ReadOptions, read_frame
from ddssp.pipeline.plan import plan_schema

OPTS = CsvOptions(na_values=("?", "N/A"))


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    rng = np.random.default_rng(7)
    n = 600
    sector = rng.choice(["Private", "Public", "Self", "?"], n, p=[0.5, 0.25, 0.15, 0.1]).astype(object)
    amount = np.where(rng.random(n) < 0.1, "N/A", rng.integers(0, 90, n).astype(str)).astype(object)
    day = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 400, n), unit="D")
    dates = np.where(rng.random(n) < 0.1, "?", day.strftime("%Y-%m-%d")).astype(object)
    df = pd.DataFrame({"sector": sector, "amount": amount, "day": dates, "y": rng.choice(["a", "b"], n)})
    path = tmp_path_factory.mktemp("markers") / "t.parquet"
    df.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_markers_of_a_parquet_text_column_count_as_missing(parquet, backend):
    frame = read_frame(parquet, ReadOptions(csv=OPTS))  # the markers masked, as discovery reads them
    plan = plan_schema(
        frame, None, eps=4.0, delta=1e-6, discovery=DiscoveryOptions(enabled=True, dates=["day"]), noise=make_noise(3)
    )
    schema = plan.schema
    assert schema.column("sector").empty  # nothing outside the labels: `<other>` marked empty
    cliques = [c for k in (1, 2) for c in itertools.combinations(schema.names, k)]
    want = count_marginals(frame, schema, cliques, backend="numpy")
    got = count_marginals(parquet, schema, cliques, backend=backend, csv_options=OPTS)
    for c in cliques:
        assert np.array_equal(got[c], want[c]), c
    sector = schema.column("sector")
    counts = got[("sector",)]
    for lev in sector.empty:
        assert counts[list(sector.labels).index(lev)] == 0
