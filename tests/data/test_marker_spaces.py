"""A ``--na-values`` marker written with leading spaces (``" ?"``) is read as the CSV reader reads a
cell (leading spaces skipped): it marks the same cells as ``"?"`` in every path, labels, marginals,
binned numbers and discovery, over every backend. Trailing spaces are kept, in cells and markers."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from ddssp.data.counting import CsvOptions, count_histograms, count_labels
from ddssp.data.discovery.source import open_table
from ddssp.data.tables import read_table
from ddssp.dp.noise import make_noise
from ddssp.pipeline import DiscoveryOptions, ReadOptions, read_frame
from ddssp.pipeline.plan import plan_schema


def _spark_ready() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return shutil.which("java") is not None


BACKENDS = [
    "numpy",
    "duckdb",
    pytest.param("spark", marks=pytest.mark.skipif(not _spark_ready(), reason="needs pyspark and Java")),
]
MARKERS = [" ?", "   ?"]


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 300
    sector = rng.choice(["Private", "Public", "?"], n, p=[0.5, 0.3, 0.2])
    amount = np.where(rng.random(n) < 0.15, "?", rng.integers(0, 50, n).astype(str))
    y = rng.choice(["a", "b"], n)
    path = tmp_path_factory.mktemp("spaces") / "t.csv"
    # a space after each delimiter, as raw Adult has them; one trailing-space "? " cell, not a marker
    rows = [", ".join(r) for r in zip(sector, amount, y)] + ["? , 3, a"]
    path.write_text("sector,amount,y\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("marker", MARKERS)
def test_a_spaced_marker_counts_the_cells_of_the_bare_one(csv, backend, marker):
    want_labels = count_labels(csv, ["sector", "amount"], backend=backend, csv_options=CsvOptions(na_values=("?",)))
    assert want_labels["sector"][None] > 0 and want_labels["amount"][None] > 0
    assert want_labels["sector"]["? "] == 1  # trailing spaces are part of a cell
    got_labels = count_labels(csv, ["sector", "amount"], backend=backend, csv_options=CsvOptions(na_values=(marker,)))
    assert got_labels == want_labels
    edges = {"amount": [0.0, 10.0, 50.0]}
    want = count_histograms(csv, edges, backend=backend, csv_options=CsvOptions(na_values=("?",)))["amount"]
    got = count_histograms(csv, edges, backend=backend, csv_options=CsvOptions(na_values=(marker,)))["amount"]
    assert (got.missing, got.non_numeric, got.counts.tolist()) == (want.missing, want.non_numeric, want.counts.tolist())
    assert want.missing > 0 and want.non_numeric == 0


@pytest.mark.parametrize("marker", MARKERS)
def test_the_in_memory_readers_mask_the_cells_of_the_bare_marker(csv, marker):
    bare = read_table(csv, na_values=["?"])
    assert bare["sector"].isna().sum() > 0
    pd.testing.assert_frame_equal(read_table(csv, na_values=[marker]), bare)
    pd.testing.assert_frame_equal(
        read_frame(csv, ReadOptions(csv=CsvOptions(na_values=(marker,)))),
        read_frame(csv, ReadOptions(csv=CsvOptions(na_values=("?",)))),
    )


def _plan(table):
    p = plan_schema(table, None, eps=2.0, delta=1e-6, discovery=DiscoveryOptions(enabled=True), noise=make_noise(11))
    return json.dumps(p.schema.to_dict(), sort_keys=True), [e.to_dict() for e in p.ledger.entries]


@pytest.mark.parametrize("marker", MARKERS)
def test_discovery_finds_the_schema_of_the_bare_marker(csv, marker):
    def sql_plan(opts):
        table = open_table(csv, "duckdb", csv_options=opts)
        try:
            return _plan(table)
        finally:
            table.close()

    bare = CsvOptions(na_values=("?",))
    spaced = CsvOptions(na_values=(marker,))
    want = _plan(read_frame(csv, ReadOptions(csv=bare)))
    assert "?" not in json.loads(want[0])["columns"][0].get("levels", [])
    assert _plan(read_frame(csv, ReadOptions(csv=spaced))) == want
    assert sql_plan(spaced) == sql_plan(bare)
