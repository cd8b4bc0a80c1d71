"""Discovered numeric ranges at small n: thin tails kept, hard ends not widened, a point mass with
the other values spread thinly becomes a binned column (seeded noise: these check the discovery
logic on fixed draws)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddssp.data.discovery import discover
from ddssp.data.discovery.spans import outer_span
from ddssp.data.encoding import decode
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.pipeline import DEFAULT_DELTA
from ddssp.pipeline.plan import plan_schema

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")

N = 3000


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    bulk = rng.normal(40, 5, int(N * 0.85))
    tail = rng.uniform(55, 95, N - bulk.size)  # 15% of the rows thinly over a range twice the bulk's
    gain = np.where(rng.random(N) < 0.9, 0.0, np.round(rng.lognormal(7.5, 0.6, N)))
    return pd.DataFrame(
        {
            "tail": np.round(rng.permutation(np.concatenate([bulk, tail])), 1),
            "hard": np.round(rng.uniform(0, 100, N), 2),
            "hard_int": rng.integers(0, 61, N),
            "gain": gain,
            "c": rng.choice(list("abc"), N),
        }
    )


def _plan(df, seed):
    return plan_schema(df, None, eps=1.0, delta=DEFAULT_DELTA, noise=InsecureSeededNoise(seed))


@pytest.fixture(scope="module")
def ends(table):
    """Over 24 fixed draws: per draw, the share of the tail column above its range and the upper
    bounds of the two hard-ended columns."""
    x = table["tail"].to_numpy()
    out = []
    for seed in range(1, 25):
        sch = _plan(table, seed).schema
        out.append(
            (np.mean(x > sch.column("tail").bounds[1]), sch.column("hard").bounds[1], sch.column("hard_int").bounds[1])
        )
    return np.array(out)


def test_thin_tail_is_kept_and_hard_ends_are_not_widened(ends):
    # the tail (15% of the rows, each cell of it lost in the noise) stays in range: about 3% of the
    # rows above it on average, a draw missing 6% or more as a scan false negative on the tail band;
    # hard ends: uniform 0..100 (whose top is a scan band edge) never gets a range past 100, and
    # whole numbers 0..60 (inside the band [56.2, 100)) get a range much wider than the data (past
    # 63) only where a 3-sd noise cell widens it: together 5 of these 24 draws miss a bound
    above, hard, hard_int = ends.T
    assert np.mean(above) < 0.04
    assert np.all(hard <= 100.0)
    assert int(np.sum((above >= 0.06) | (hard_int > 63))) <= 6


def test_point_mass_with_thin_rest_is_binned_and_decodes_to_numbers(table):
    plan = _plan(table, 0)
    col = plan.schema.column("gain")
    assert col.is_binned and "<other>" not in col.labels
    assert col.edges[0] == 0.0 and col.edges[1] == 1.0 and col.values[0] == 0.0  # exactly zero
    assert col.edges[-1] >= 3000  # the rest (10% of the rows, lognormal around 2,000) has bins
    x = table["gain"].to_numpy()
    assert np.mean((x > 0) & (x > col.edges[-1])) < 0.02
    # every code decodes to a number, inside the range, for fits and for synthetic rows
    codes = pd.DataFrame({"gain": np.arange(col.size)})
    for rng in (None, np.random.default_rng(0)):
        out = decode(plan.schema, codes, rng=rng)["gain"].to_numpy(dtype=float)
        assert np.isfinite(out).all() and out[0] == 0.0
        assert (out >= col.edges[0]).all() and (out <= col.edges[-1]).all()
    # the data encodes with no row on a missing level
    enc = plan.schema.encode(table)
    assert col.missing is None or not (enc["gain"] == col.missing_code).any()


def test_discovery_spends_exactly_its_budget(table):
    rho = rho_from_eps_delta(1.0, 1e-6)
    ledger = Ledger(rho, delta_budget=1e-7)
    share = 0.3 * rho
    discover(table, list(table.columns), ChargedMechanisms(ledger, InsecureSeededNoise(0)), rho=share, delta=1e-7)
    assert math.isclose(ledger.spent, share, rel_tol=1e-9)


@pytest.mark.filterwarnings("ignore::ddssp.pipeline.DroppedColumnsWarning")
def test_constant_code_column_is_one_level():
    """Noisy counts cannot tell a constant column from one whose other values are too few to show:
    whole numbers keep the one value as one level, and the note says the others were too few."""
    df = pd.DataFrame({"a": [7.0] * 20000, "b": np.arange(20000) % 2})
    plan = plan_schema(df, None, eps=4.0, delta=DEFAULT_DELTA, noise=InsecureSeededNoise(0))
    assert "a" not in plan.dropped and plan.schema.column("a").labels == ["7"]
    assert "too few to show" in plan.notes["a"]


def test_outer_span_grows_by_adjacent_windows_only_at_their_level():
    sd = 10.0
    y = np.array([0, 0, 0, 0, 0, 0, 20, 20, 20, 200, 300, 200, 0, 0, 0, 0], dtype=float)
    assert outer_span(y, sd, 3.5) == (9, 11)  # each tail cell is below 3.5 sds, and so is their sum
    # the two tail cells next to the span (40) reach 2.5 sds of their sum's noise (sd 10 * sqrt(2))
    assert outer_span(y, sd, 3.5, grow=2.5) == (7, 11)
    assert outer_span(np.zeros(8), sd, 3.5, grow=2.5) is None


def test_outer_span_grows_by_a_far_window_only_when_the_gap_holds_rows_too():
    """A window of cells beyond the span, clear of it, reaching the span's level (3.4 sds of its
    sum here) pulls the span out to its far end only when the cells from the span to it hold rows as
    well (their sum reaches the adjacent-window level): a thin tail fills the gap, a window of noise
    far out does not. A single cell far out that reaches the level on its own still counts."""
    sd, sds, grow = 10.0, 3.23, 3.0
    far = np.zeros(16)
    far[2], far[8:12] = 1000.0, 17.0  # cells 8..11 sum to 68 = 3.4 sds of a 4-cell sum; 3..7 hold none
    assert outer_span(far, sd, sds, grow) == (2, 2)
    tail = far.copy()
    tail[3:8] = 8.0  # the same window, with the gap thinly filled: cells 3..11 sum to 3.6 sds
    assert outer_span(tail, sd, sds, grow) == (2, 11)
    point = np.zeros(16)
    point[2], point[12] = 1000.0, 50.0  # one far cell at 5 sds is populated by itself
    assert outer_span(point, sd, sds, grow) == (2, 12)


def test_step_start_places_the_edge_where_a_threshold_cannot():
    """Fine cells of 16 rows under noise of sd 20 (each invisible to a 4-sd threshold): the step fit
    finds where the rows start to within a few cells; a run the rows fill from its first cell
    gives 0; a run of pure noise never places the edge past a real step."""
    from ddssp.data.discovery.spans import step_start

    rng = np.random.default_rng(0)
    errs, full = [], []
    for _ in range(200):
        k = int(rng.integers(0, 25))
        y = np.concatenate([np.zeros(k), np.full(31 - k, 16.0)]) + rng.normal(0, 20, 31)
        errs.append(abs(step_start(y) - k))
        full.append(step_start(np.full(31, 16.0) + rng.normal(0, 20, 31)))
    assert np.median(errs) <= 3 and np.mean(np.asarray(errs) <= 6) >= 0.8
    assert np.median(full) <= 2
    assert step_start(np.array([5.0])) == 0 and step_start(np.array([-3.0, -1.0])) == 0


class _Exact:
    """A stand-in for the charged mechanisms that returns every count exactly."""

    def counts(self, cells, sigma, column=None, note=None):
        return np.asarray(cells, dtype=float)


@pytest.mark.parametrize("lo", [-1e7, -31.6, -3.16])
@pytest.mark.parametrize("top", [1, 3, 56])
def test_largest_whole_number_keeps_its_level_after_a_coarse_pass(lo, top):
    """A whole-number column with zeros whose scan range reaches below zero (real negatives, or a noisy
    band far out) is discovered in a coarse pass first. Its top scan band ends at 1.78 (for 1), 3.16 (3)
    or 56.2 (56), not a whole number: the coarse grid's rounded top edge must still hold the largest
    value, and with exact counts every value keeps its own level. (Rounded down, or dropped when zero's
    edges were added, the edge left the largest value out: a 0/1 column came out as the one level '0'.)"""
    from ddssp.data.discovery.numeric import discover_numeric
    from ddssp.data.discovery.scan import ScanResult
    from ddssp.data.discovery.slots import SLOT_HI, SLOT_LO

    rng = np.random.default_rng(1)
    x = rng.integers(0, top + 1, N).astype(float)
    hi = float(SLOT_HI[np.flatnonzero((SLOT_LO <= top) & (top < SLOT_HI))[0]])
    assert hi > top and hi != math.ceil(hi)
    scan = ScanResult(
        kind="numeric", n_present=float(N), missing=0.0, lo=lo, hi=hi, lo_pos=1.0, whole=True,
        zero=float(np.sum(x == 0)), sigma=5.0,
    )  # fmt: skip
    # a budget whose noise sd is small next to the counts, and too small a table for the medians path
    col, _ = discover_numeric(x, "x", 0.5, _Exact(), scan, None, 32)
    values = col.values if col.edges is None else None
    if values is not None:
        assert values.min() == 0 and values.max() == top
    else:  # binned: no value is outside the range (the last bin is closed)
        assert col.bounds[0] <= 0 and col.bounds[1] >= top
