"""Quantile bins declared in a codebook (``bins``, ``cuts``, ``step``, ``points``): the hint's checks,
the public grid, the cut from noisy counts, and a release that keeps them."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Schema
from ddssp.data.codebook import Codebook, ColumnHint
from ddssp.data.dictionary import load_codebook
from ddssp.data.discovery.bounded import QuantileHint, discover_bounded, quantile_grid, rank_edges
from ddssp.data.discovery.numeric import grid_counts
from ddssp.dp import Ledger
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.errors import SchemaError
from ddssp.pipeline import DiscoveryOptions, plan_schema

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")


def _rank_bins(v: np.ndarray, bins: int) -> np.ndarray:
    """Percentile ranks with ties averaged, ``min(int(bins x rank), bins - 1)``: the bins the
    quantile cut follows (as SDNist bins a numeric column)."""
    pct = pd.Series(v).rank(method="average", pct=True).to_numpy()
    return np.minimum((bins * pct).astype(int), bins - 1)


def _incomes(n: int, seed: int = 0) -> np.ndarray:
    """Whole-dollar incomes, most of them reported to the thousand, a heap at zero."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(10.3, 0.9, n)
    rounded = rng.random(n) < 0.7
    x = np.where(rounded, np.round(x / 1000) * 1000, np.round(x))
    x[rng.random(n) < 0.08] = 0.0
    return np.clip(x, 0, 999_000)


# ------------------------------------------------------------------------------- the hint
def test_hint_fields_round_trip_through_a_codebook_file(tmp_path):
    h = ColumnHint("POVPIP", kind="numeric", bounds=(0, 501), whole=True, bins=20, points=(501,), step=5)
    book = Codebook((h, ColumnHint("AGEP", bounds=(0, 99), whole=True, bins=20, cuts=(15, 3, 5, 16))))
    path = tmp_path / "cb.json"
    path.write_text(book.to_json())
    assert json.loads(path.read_text())["columns"][0]["points"] == [501]
    back = {x.name: x for x in load_codebook(path).hints}
    assert back["POVPIP"].bins == 20 and back["POVPIP"].points == (501.0,) and back["POVPIP"].step == 5.0
    assert back["AGEP"].cuts == (3.0, 5.0, 15.0, 16.0)  # sorted
    assert back["AGEP"].column() is None  # a hint with bins is left to discovery, however few its values


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"bounds": (0, 9), "cuts": (3,)}, 'needs "bins"'),
        ({"bounds": (0, 9), "bins": 0}, '"bins" must be a whole number'),
        ({"bounds": (0, 9), "bins": 2.5}, '"bins" must be a whole number'),
        ({"bins": 4}, 'needs "bounds"'),
        ({"bounds": (0, 9), "bins": 4, "cuts": (12,)}, "outside the bounds"),
        ({"bounds": (0, 9), "bins": 4, "points": (-1,), "whole": True}, "outside the bounds"),
        ({"bounds": (0, 9), "bins": 4, "step": 2}, "need whole numbers"),
        ({"bounds": (0, 9), "bins": 4, "step": 0, "whole": True}, "positive"),
        ({"bounds": (0, 9), "bins": 4, "step": 2.5, "whole": True}, "must be a whole number"),
        ({"bounds": (0, 9), "bins": 4, "points": (2.5,), "whole": True}, "must be whole numbers"),
    ],
)
def test_bad_quantile_fields_are_refused_in_one_line(fields, match):
    with pytest.raises(SchemaError, match=match) as exc:
        ColumnHint("x", **fields)
    assert "\n" not in str(exc.value)


def test_a_codebook_entry_with_a_bad_list_is_refused():
    with pytest.raises(SchemaError, match='"cuts" must be a list of numbers'):
        ColumnHint.from_dict({"name": "x", "bounds": [0, 9], "bins": 3, "cuts": "3,5"}, "cb.json")


# ------------------------------------------------------------------------------- the grid
def test_a_step_ends_a_cell_just_above_every_multiple_of_it():
    q = QuantileHint(20, step=1000)
    g = quantile_grid(-9000.0, 1_341_001.0, 1024, True, q)
    assert g[0] == -9000.0 and g[-1] == 1_341_001.0 and np.all(np.diff(g) > 0)
    assert np.all(g == np.round(g)) and 0.0 in g and 1.0 in g  # zero keeps a cell of its own
    inner = g[1:-1]
    assert not np.any((inner % 1000 == 0) & (inner != 0))  # no heap at a multiple opens a cell
    wide = np.diff(g)[1:] >= 1000
    assert np.all((inner[wide] - 1) % 1000 == 0)  # a cell a step wide or wider opens just above one
    narrow = np.arange(-8000.0, 10_001.0, 1000.0)  # where the cells are narrower than the step
    assert set(narrow[narrow != 0] + 1) <= set(inner)
    # without the step the wide cells open anywhere: a percentile edge just above a heap falls inside one
    g0 = quantile_grid(-9000.0, 1_341_001.0, 1024, True, QuantileHint(20))
    wide0 = np.diff(g0)[1:] >= 1000
    assert np.mean((g0[1:-1][wide0] - 1) % 1000 == 0) < 0.1


def test_a_grid_of_few_whole_numbers_has_a_cell_per_number_with_cuts_and_points():
    g = quantile_grid(0.0, 100.0, 1024, True, QuantileHint(20, cuts=(15.0,), points=(99.0,)))
    assert np.array_equal(g, np.arange(0.0, 101.0))


# ------------------------------------------------------------------------------- the cut
def test_noise_free_counts_give_the_percentile_bins_with_ties_kept_whole():
    v = _incomes(20_000)
    g = quantile_grid(0.0, 1_000_000.0, 1024, True, QuantileHint(20, step=1000))
    y = grid_counts(v, g).astype(float)
    edges = np.asarray(rank_edges(g, y, 20, []))
    # every cell's rows, and so every heap, lie in one bin
    cell = np.searchsorted(g, v, side="right") - 1
    ours = np.searchsorted(edges, v, side="right") - 1
    for c in np.unique(cell):
        assert len(np.unique(ours[cell == c])) == 1
    # the rows of each of our bins lie in one percentile bin, but for the few the grid cannot
    # tell apart (a percentile edge inside a cell): under 1.5% of rows here, 1.5% on the grid
    # without the step and 3.6% on cells [k * 1000, (k + 1) * 1000) that split each heap from the
    # values below it
    ref = _rank_bins(v, 20)
    off = sum(int((ours == b).sum() - np.bincount(ref[ours == b]).max()) for b in np.unique(ours))
    assert off / len(v) < 0.012
    shares = np.bincount(ours) / len(v)
    assert shares.max() < 0.2 and len(edges) - 1 >= 15  # near-equal shares apart from the zero heap


def test_a_point_is_a_bin_of_its_own_and_takes_no_share():
    rng = np.random.default_rng(1)
    v = np.where(rng.random(10_000) < 0.6, 501.0, rng.integers(0, 501, 10_000).astype(float))
    g = quantile_grid(0.0, 502.0, 1024, True, QuantileHint(10, points=(501.0,)))
    y = grid_counts(v, g).astype(float)
    p = int(np.searchsorted(g, 501.0, side="right") - 1)
    edges = rank_edges(g, y, 10, [p])
    assert edges[-2:] == [501.0, 502.0]
    inner = np.histogram(v[v < 501], bins=edges[:-1])[0]
    assert len(inner) == 10 and inner.min() > 0.07 * (v < 501).sum()  # ten near-equal bins below the point


def test_the_cut_reads_the_raw_cumulative_count_not_clipped_cells():
    # 200 empty cells below the rows: clipping each at zero first would add the positive half of
    # their noise (about 200 x 0.4 sd) below every edge and move every edge down
    g = np.arange(0.0, 301.0)
    y = np.zeros(300)
    y[200:] = 100.0
    rng = np.random.default_rng(2)
    lows = []
    for _ in range(200):
        noisy = y + rng.normal(0, 10.0, 300)
        e = rank_edges(g, noisy, 4, [])
        lows.append([x for x in e if 200 < x < 300])
    mids = np.array([row[1] if len(row) == 3 else np.nan for row in lows])
    assert np.nanmean(mids) == pytest.approx(250.0, abs=3.0)


def test_discovery_charges_its_counts_and_keeps_the_declared_edges():
    rng = np.random.default_rng(3)
    ages = rng.integers(0, 100, 5000).astype(float)
    ledger = Ledger(1.0)
    mech = ChargedMechanisms(ledger, InsecureSeededNoise(0))
    q = QuantileHint(20, cuts=(3.0, 5.0, 15.0, 16.0))
    col, note = discover_bounded(ages, "AGEP", 0.01, mech, (0.0, 99.0), whole=True, quantiles=q)
    col.validate()
    assert {3.0, 5.0, 15.0, 16.0} <= set(col.edges) and col.edges[0] == 0.0 and col.edges[-1] == 100.0
    assert "quantile bins" in note
    spent = sum(e.rho for e in ledger.discovery_entries)
    assert spent == pytest.approx(0.01, rel=1e-9)  # the count of cells by kind and the grid, nothing else
    assert all(np.diff(col.edges) > 0) and all(float(x).is_integer() for x in col.edges)
    assert col.size >= 20
    codes = Schema([col]).encode(pd.DataFrame({"AGEP": [99.0, 15.0, 16.0]}))["AGEP"].to_numpy()
    assert codes[0] == col.size - 1  # the top age in the top bin
    i15 = col.edges.index(15.0)
    assert codes[1] == i15 and codes[2] == i15 + 1  # 15 alone in [15, 16), as the rules need


def test_a_release_plan_with_quantile_hints_bins_as_declared():
    rng = np.random.default_rng(4)
    n = 4000
    df = pd.DataFrame({"age": rng.integers(0, 100, n).astype(float), "income": _incomes(n, 5)})
    df.loc[df["age"] < 15, "income"] = np.nan
    hints = [
        ColumnHint("age", kind="numeric", bounds=(0, 99), whole=True, bins=10, cuts=(15.0,)),
        ColumnHint("income", kind="numeric", bounds=(0, 999_000), whole=True, bins=10, step=1000, missing="N"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_schema(
            df, None, eps=10.0, delta=1e-6, discovery=DiscoveryOptions(hints=hints), noise=InsecureSeededNoise(0)
        )
    age, income = plan.schema.column("age"), plan.schema.column("income")
    assert 15.0 in age.edges and age.is_binned
    inner = np.asarray(income.edges[1:-1])
    assert not np.any((inner % 1000 == 0) & (inner != 0))
    assert sorted(plan.discovered) == ["age", "income"]


def test_a_heap_holding_a_bins_share_is_a_bin_of_its_own_and_decodes_to_itself():
    # zero income for 8% of the rows, a few negative incomes: without its own bin the zero heap
    # shares a bin with the losses and its rows are drawn over the negative range
    v = _incomes(8000, 6)
    v[:16] = -np.arange(1, 17) * 400.0
    mech = ChargedMechanisms(Ledger(1.0), InsecureSeededNoise(1))
    q = QuantileHint(20, step=1000)
    col, _ = discover_bounded(v, "income", 0.02, mech, (-9000.0, 999_000.0), whole=True, quantiles=q)
    i = col.edges.index(0.0)
    assert col.edges[i + 1] == 1.0 and col.values[i] == 0.0
    assert col.within.bins[i] is None  # no spread: its rows decode to 0


@pytest.mark.parametrize("rho, mostly_noise", [(0.03, False), (7e-4, True)])
def test_the_note_says_how_far_noise_moves_an_edge(rho, mostly_noise):
    # about the NIST excerpts' noise at eps 10 (sd 4 per cell) and at eps 1 (sd 27)
    ages = np.random.default_rng(7).integers(0, 100, 7600).astype(float)
    mech = ChargedMechanisms(Ledger(1.0), InsecureSeededNoise(0))
    _, note = discover_bounded(ages, "AGEP", rho, mech, (0.0, 99.0), whole=True, quantiles=QuantileHint(20))
    assert "noise moves an edge by ~" in note and "a bin holds 5.0%" in note
    assert ("mostly noise" in note) is mostly_noise
