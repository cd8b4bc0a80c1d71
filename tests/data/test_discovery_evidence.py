"""A discovered numeric range rests on evidence above the noise at its ends: numbers that show only
at the level of noise are dropped with their reason, a window of slots that shows keeps only the
slots that show at its ends, the values beside a single one are placed only when they clear the
noise of every decade tested, and synthetic values of whole numbers stay whole and inside what the
noisy counts support."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Schema
from ddssp.data.discovery import discover
from ddssp.data.discovery.scan import COARSE_POP_SDS, GROW_SDS, POP_SDS, ZERO_SDS, ScanResult, _numeric_range
from ddssp.data.discovery.slots import N_SLOTS, SLOT_HI, SLOT_LO, ZERO_SLOT, slot_index
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.errors import SchemaError

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")

SIGMA = 10.0  # noise sd of one whole / other cell; a slot (their sum) has sd SIGMA * sqrt(2)
SD = SIGMA * math.sqrt(2)


def _slot(v: float) -> int:
    return int(slot_index(np.array([float(v)]))[0])


def _range(whole: np.ndarray) -> ScanResult:
    res = ScanResult(kind="numeric", n_present=0.0, missing=0.0)
    _numeric_range(res, whole, np.zeros(N_SLOTS), SIGMA, "x")
    return res


def test_a_window_of_noise_alone_is_dropped_with_its_reason():
    """Eight empty negative slots whose noisy sum reaches POP_SDS sds of that sum (but not the union
    level): no range (all-negative ages at 300 rows), the column is refused with the reason."""
    whole = np.zeros(N_SLOTS)
    first = _slot(-1778.0)
    level = (POP_SDS + COARSE_POP_SDS) / 2 * SD * math.sqrt(8)
    whole[first : first + 8] = level / 8
    assert whole[first] < POP_SDS * SD  # no single slot shows
    with pytest.raises(SchemaError, match="only at the level of noise"):
        _range(whole)


def test_a_window_that_shows_keeps_only_the_slots_that_show_at_its_ends():
    """Rows in two slots (3 sds each, no slot alone at POP_SDS) and an 8-slot window around them that
    reaches the union level: the range is those two slots, not the window's empty ends."""
    whole = np.zeros(N_SLOTS)
    a = _slot(20.0)
    whole[a], whole[a + 1] = 3.8 * SD, 3.8 * SD
    res = _range(whole)
    assert res.lo == SLOT_LO[a] and res.hi == SLOT_HI[a + 1]
    assert res.lo > 0


def test_the_range_rests_on_a_segment_that_shows_on_its_own():
    """A window of four slots reaches the union level only by joining a weak run of rows (one slot at
    3.6 sds) to a run of noise two bands higher (two slots at 3.2 sds), across a slot below the
    trough. The noise run outscores the rows but shows on its own at 4.5 sds only, under the union
    level: the column is refused as noise, not placed a decade above every row (breast cancer's
    'worst texture', 12..50, came out [100, 316] so)."""
    whole = np.zeros(N_SLOTS)
    a = _slot(20.0)
    whole[a], whole[a + 1], whole[a + 2], whole[a + 3] = 3.6 * SD, 0.5 * SD, 3.2 * SD, 3.2 * SD
    with pytest.raises(SchemaError, match="only at the level of noise"):
        _range(whole)
    # a run of rows that shows on its own (four slots, 5.75 sds of their sum) keeps its range
    whole[a + 1] = 3.0 * SD
    whole[a + 4] = 2.5 * SD
    res = _range(whole)
    assert res.lo == SLOT_LO[a] and res.hi == SLOT_HI[a + 4]


def test_a_single_slot_that_shows_keeps_the_weak_evidence_growth():
    """A slot that shows on its own (POP_SDS) still takes a neighbour at 2 sds (a thin tail of a
    table with enough rows)."""
    whole = np.zeros(N_SLOTS)
    a = _slot(40.0)
    whole[a], whole[a + 1] = 10 * SD, 2.5 * SD
    res = _range(whole)
    assert res.lo == SLOT_LO[a] and res.hi == SLOT_HI[a + 1]


def _adult_like(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": np.clip(np.round(rng.gamma(6.0, 6.5, n) + 17), 17, 90).astype(int),
            "hours": np.where(rng.random(n) < 0.45, 40, rng.integers(1, 99, n)),
            "gain": np.where(rng.random(n) < 0.92, 0, rng.integers(1000, 99999, n)),
            "sex": rng.choice(["F", "M"], n),
            "work": rng.choice(["a", "b", "c", "d"], n),
        }
    )


def _release_columns(df: pd.DataFrame, seed: int) -> dict:
    rho = rho_from_eps_delta(1.0, 1e-9)
    cols, _, _ = discover(
        df,
        list(df.columns),
        ChargedMechanisms(Ledger(rho, delta_budget=1e-9), InsecureSeededNoise(seed)),
        rho=0.1 * rho,
        delta=5e-10,
        rho_max=rho,
        collect=True,
    )
    return cols


@pytest.mark.parametrize("n", [300, 600])
def test_positive_whole_columns_decode_to_whole_values_inside_the_evidence(n):
    """Over seeded releases of a small table of positive whole numbers, every synthetic value of a
    discovered column is a whole number, never negative, never above 10x the real maximum."""
    df = _adult_like(n)
    seen = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(25):
            cols = _release_columns(df, seed)
            rng = np.random.default_rng(seed)
            for name in ("age", "hours", "gain"):
                if name not in cols:
                    continue
                seen += 1
                col = cols[name]
                codes = pd.DataFrame({name: rng.integers(0, col.size, 500)})
                v = pd.to_numeric(Schema([col]).decode(codes, rng=rng)[name], errors="coerce").dropna()
                v = v.to_numpy(dtype=float)
                assert np.all(v == np.round(v)), (seed, name)
                assert v.min() >= 0, (seed, name, v.min())
                assert v.max() <= 10 * df[name].max(), (seed, name, v.max())
    assert seen > 0  # some columns are discovered at these sizes


def test_a_window_a_band_away_does_not_grow_the_range_by_a_decade():
    """Rows in two bands that show (education-num 1..16); the band above them holds noise of 0.9 sds
    (below TROUGH_SDS), the next two 2.6 sds each: the window of the four above the rows reaches GROW_SDS, but the band
    next to the rows shows nothing, so the range does not grow a decade (to 178) on them. With 1.8 sds
    in that band (a thin tail beside the rows) it does."""
    whole = np.zeros(N_SLOTS)
    a = _slot(6.0)
    whole[a : a + 5] = np.array([5.6, 6.9, 0.9, 2.6, 2.6]) * SD
    res = _range(whole)
    assert res.hi == SLOT_HI[a + 1]
    whole[a + 2] = 1.8 * SD
    assert _range(whole).hi > SLOT_HI[a + 1]


def test_outer_median_bins_thin_out_toward_their_outer_edge():
    """Counts that are noise alone inside a top bin [55, 100) (all zero here): an inner bin spreads
    its rows uniformly, the top bin by a density falling to zero at 100 (decreasing weights, the
    last sub-cell near 0), the bottom bin by one falling to zero at its lower edge."""
    from ddssp.data.discovery.bins import within_coarse

    grid = np.arange(55.0, 101.0, 5.0)
    y = np.zeros(len(grid) - 1)
    _, w_mid = within_coarse(grid, y, 55.0, 100.0, 10.0)
    _, w_top = within_coarse(grid, y, 55.0, 100.0, 10.0, tail=1)
    _, w_bottom = within_coarse(grid, y, 55.0, 100.0, 10.0, tail=-1)
    assert np.allclose(w_mid, w_mid[0])
    assert np.all(np.diff(w_top) < 0) and w_top[-1] < 0.05
    assert np.all(np.diff(w_bottom) > 0) and w_bottom[0] < 0.05


def test_an_outer_median_bin_with_no_cell_that_shows_drops_its_empty_outer_bands():
    """Ages from 17 (20 rows at 17, 30 an age above, no rows below) on a coarse grid of one cell an
    age over the scan's range [10, 40) at noise sd 25 a cell, and a first median bin [10, 23). In
    the draws where no coarse cell of that bin shows (the span starts at or above 23), the start
    was the scan's end 10, a band [10, 17.8) no noisy count shows rows in. It now moves to the band
    edge (18, as whole numbers) when the step fit places the rows above it (about half of the
    draws: one age's rows are about one sd), and never further in: the band [17.8, 31.6) holds the
    rows, and finer cells cannot overrule it."""
    from ddssp.data.discovery.bins import ends_shown
    from ddssp.data.discovery.spans import outer_span, span_sds

    grid = np.arange(10.0, 41.0)
    exact = np.where(grid[:-1] < 17, 0.0, np.where(grid[:-1] < 18, 20.0, 30.0))
    sd = 25.0
    rng = np.random.default_rng(0)
    starts = []
    for _ in range(400):
        y = exact + rng.normal(0, sd, len(exact))
        span = outer_span(y, sd, span_sds(len(y)), GROW_SDS)
        if span is None or grid[span[0]] < 23:
            continue
        starts.append(ends_shown([10.0, 23.0, 30.0, 40.0], set(), (grid, y, sd), whole=True)[0])
    starts = np.array(starts)
    assert starts.size >= 50
    assert set(starts.tolist()) <= {10.0, 18.0}
    assert np.mean(starts == 18.0) >= 0.35


@pytest.mark.parametrize("windows", [False, True])
def test_the_zero_slot_joins_the_range_at_the_level_of_one_test(windows):
    """Travel times 32..99 (one slot at 9 sds, or, with ``windows``, four slots at 3 sds that show
    only together) and exact zeros at 3.25 sds (modechoice's ``ttme``: a quarter of its rows are 0):
    zero is one cell named in advance, so it joins at ZERO_SDS (3.09 sds, noise alone reaches it in
    1e-3 of columns), not at the level of a detached run anywhere on the axis (5.2 sds), and the
    range is [0, ...] with the zero mass. Zeros at 2.5 sds stay out."""
    whole = np.zeros(N_SLOTS)
    a = _slot(32.0)
    if windows:
        whole[a : a + 4] = 3.0 * SD
    else:
        whole[a] = 9.0 * SD
    whole[ZERO_SLOT] = 3.25 * SD
    assert ZERO_SDS < 3.25 < 5.2
    res = _range(whole.copy())
    assert res.lo == 0.0 and res.hi == SLOT_HI[a + 3 * windows]
    assert res.zero == pytest.approx(3.25 * SD)
    whole[ZERO_SLOT] = 2.5 * SD
    res = _range(whole)
    assert res.lo == SLOT_LO[a] and res.zero == 0.0
