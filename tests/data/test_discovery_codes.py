"""Code columns (few small whole numbers) end on their own fine counts: a rare code 0 that the scan's
zero slot does not show is still a level, a code beyond the data's is never one; and a whole-number
column whose scan range starts just above 0 reaches 0 only when its rows do."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddssp.data.discovery.codes import CODE_ALPHA, code_span
from ddssp.data.discovery.spans import outer_span, span_sds
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.pipeline import DEFAULT_DELTA
from ddssp.pipeline.plan import plan_schema

SEEDS = range(20)


def _table(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    """A code column 0..3 with code 0 in 3% of the rows, a code column 1..12 (the scan's band of 12
    reaches 17), a column 1..2, and a categorical column."""
    rng = np.random.default_rng(seed)
    p12 = np.array([2, 3, 8, 6, 12, 2, 12, 6, 20, 14, 8, 7], dtype=float)
    return pd.DataFrame(
        {
            "own": rng.choice([0, 1, 2, 3], n, p=[0.03, 0.6, 0.27, 0.10]),
            "edu": rng.choice(np.arange(1, 13), n, p=p12 / p12.sum()),
            "sex": rng.choice([1, 2], n),
            "c": rng.choice(list("xyz"), n),
        }
    )


def _codes(plan, name: str) -> list[int]:
    return [int(v) for v in plan.schema.column(name).labels if v.lstrip("-").isdigit()]


def test_a_rare_code_zero_is_a_level_and_no_code_reaches_beyond_the_data():
    """At eps 1, 4,000 rows: code 0 in 3% of the rows (about 120, under the scan slot's 4.5-sd level
    of about 180 rows) makes ``own`` exactly 0..3 in 20 of 20 fixed draws; ``edu`` never reaches a
    code above 12 nor below 1, ``sex`` is exactly 1..2 in every draw."""
    df = _table()
    for seed in SEEDS:
        plan = plan_schema(df, None, eps=1.0, delta=DEFAULT_DELTA, noise=InsecureSeededNoise(seed))
        assert _codes(plan, "own") == [0, 1, 2, 3], seed
        edu = _codes(plan, "edu")
        assert edu[0] >= 1 and edu[-1] <= 12, (seed, edu)
        assert _codes(plan, "sex") == [1, 2], seed


def test_a_code_column_without_zeros_gets_no_zero():
    """The grid reaches down to 0 below a code range starting at 1, but the cell of 0 holds no row: in
    20 of 20 fixed draws the codes start at 1."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"k": rng.choice([1, 2, 3], 3000, p=[0.9, 0.07, 0.03]), "s": rng.choice([1, 2], 3000)})
    for seed in SEEDS:
        plan = plan_schema(df, None, eps=1.0, delta=DEFAULT_DELTA, noise=InsecureSeededNoise(seed))
        assert _codes(plan, "k")[0] == 1, seed


def test_an_end_code_must_show_on_its_own():
    """The window rule of the populated span keeps a cell of noise next to the codes (2.8 sds in a grid
    of 3, or the far cell of a pair whose sum shows); the code ends keep only cells whose own count
    reaches the level at ``CODE_ALPHA``, and a code that shows stays."""
    sd = 30.0
    y = np.array([124.5, 139.2, 2.8]) * sd  # codes 1, 2 and an empty 3
    assert outer_span(y, sd, span_sds(len(y)), 3.0) == (0, 2)
    assert code_span(y, sd, outer_span(y, sd, span_sds(len(y)), 3.0)) == (0, 1)
    y = np.array([20.0, 30.0, 25.0, 2.9, 3.1, 0.0]) * sd  # a pair of thin cells past the codes
    assert code_span(y, sd, outer_span(y, sd, span_sds(len(y)), 3.0)) == (0, 2)
    level = span_sds(len(y), CODE_ALPHA)
    y[3] = (level + 0.1) * sd  # a fourth code that shows
    assert code_span(y, sd, (0, 4)) == (0, 3)
    assert code_span(np.array([1.0, 0.5]) * sd, sd, (0, 1)) == (0, 1)  # nothing shows: span kept


def test_ages_from_zero_reach_zero_and_adult_ages_do_not():
    """Whole numbers 0..90 (ages, about 1% of the rows at each age): the scan's bands see ages 0 and 1
    at about one sd each, so its range starts above 0; the range now starts at 0 in at least 15 of 20
    fixed draws (at the scan's start in most before). Ages 17..90 never start below 12."""
    rng = np.random.default_rng(2)
    n = 6000
    kids = rng.integers(0, 91, n)
    adults = rng.integers(17, 91, n)
    zero = 0
    for seed in SEEDS:
        plan = plan_schema(
            pd.DataFrame({"age": kids, "s": rng.choice([1, 2], n)}),
            None,
            eps=1.0,
            delta=DEFAULT_DELTA,
            noise=InsecureSeededNoise(seed),
        )
        zero += plan.schema.column("age").edges[0] == 0
        plan = plan_schema(
            pd.DataFrame({"age": adults, "s": rng.choice([1, 2], n)}),
            None,
            eps=1.0,
            delta=DEFAULT_DELTA,
            noise=InsecureSeededNoise(seed),
        )
        assert plan.schema.column("age").edges[0] >= 12, seed
    assert zero >= 15, zero


def test_the_decade_next_to_a_single_value_shows_at_the_level_of_one_test():
    """A single whole value's next codes (housing types 2 and 3 beside a type 1 of 97% of the rows)
    lie in the decade of ``v + 1``: that decade alone needs one test's level at ``REST_ALPHA``
    (3.09 sds), not the 4.4 of all the windows of decades; a count under it, a negative value, or
    a count in another decade places nothing."""
    from ddssp.data.discovery.codes import next_decade
    from ddssp.data.discovery.slots import DECADE_GROUP, DECADE_HI, DECADE_LO, N_DECADES, slot_index

    sd = 40.0
    g = int(DECADE_GROUP[slot_index(np.array([2.0]))[0]])
    assert (DECADE_LO[g], DECADE_HI[g]) == (1.0, 10.0)
    y = np.zeros(N_DECADES)
    y[g] = 3.2 * sd
    assert next_decade(y, sd, 1.0) == (g, g)
    assert next_decade(y, sd, 0.0) == (g, g)
    assert next_decade(y, sd, -3.0) is None
    y[g] = 2.9 * sd
    assert next_decade(y, sd, 1.0) is None
    y[g], y[g + 1] = 0.0, 10.0 * sd  # rows in [10, 100): the decade of v + 1 is not where they are
    assert next_decade(y, sd, 1.0) is None


def test_the_fallback_code_is_the_next_one_not_a_cell_of_noise_further_out():
    """When only a value shows among codes placed by decades, its other code is the stronger of its
    neighbours (1..2 for housing types whose 2 and 3 are lost in the noise), not the strongest cell
    anywhere (a code 6 of noise at 2.5 sds made the levels 1..6)."""
    from ddssp.data.discovery.codes import with_strongest

    y = np.array([120.6, 1.4, 1.8, -1.4, 2.2, 2.5, 0.2])
    assert with_strongest(y, 0) == (0, 5)
    assert with_strongest(y, 0, np.abs(np.arange(len(y)) - 0) == 1) == (0, 1)
    assert with_strongest(y, 3, np.abs(np.arange(len(y)) - 3) == 1) == (3, 4)  # 2.2 beats 1.8
    assert with_strongest(y, 0, np.zeros(len(y), dtype=bool)) == (0, 5)  # no candidate: all


def _fine_start(exact: np.ndarray, sigma: float, keep: tuple[float, float], draws: int, seed: int) -> np.ndarray:
    """Where the fine cut starts over whole numbers 0..len(exact)-1 (one cell each) after a coarse
    pass that kept ``keep``, for ``draws`` fresh noisy counts (sd ``sigma``) of the exact ones."""
    from ddssp.data.discovery.numeric import _cut_to_span, _NumericPass
    from ddssp.data.discovery.scan import ScanResult

    rng = np.random.default_rng(seed)
    grid = np.arange(len(exact) + 1, dtype=float)
    out = []
    for _ in range(draws):
        scan = ScanResult(kind="numeric", n_present=float(exact.sum()), missing=0.0, whole=True, lo=2.0, hi=100.0)
        st = _NumericPass(
            x=np.zeros(1), name="age", rho=1.0, mech=None, scan=scan, bins=None, max_levels=32,
            sigma=sigma, n=float(exact.sum()), lo=0.0, hi=float(len(exact)),
            int_grid=True, grid=grid.copy(), y=exact + rng.normal(0.0, sigma, len(exact)), keep=keep,
        )  # fmt: skip
        _cut_to_span(st)
        out.append(st.grid[0])
    return np.array(out)


def test_the_step_fit_in_a_first_cell_that_reaches_zero_reads_its_level_above_it():
    """A first coarse cell [0, 18) whose rows are only at its top (ages from 17, about 150 rows at
    each age against a noise sd of 48: Adult's ages at 8,000 rows): the fine cut starts below 16 in
    under 3% of draws (the step fit over that cell alone, with one or two cells of level, put it
    there in about 10%, down to 0). Ages from 0 at the density of NIST AGEP in MA (70 rows each, sd 42, first
    coarse cell [0, 3)) still start at 0 in most draws. Seeded: a fixed outcome."""
    ages = np.r_[np.zeros(17), [118, 137, 154, 198, 176, 201, 210], np.full(70, 180.0)]
    starts = _fine_start(ages, 48.0, (18.0, 72.0), 600, 0)
    assert np.mean(starts <= 15) < 0.03, np.mean(starts <= 15)
    assert np.mean(starts >= 16) > 0.97
    kids = np.r_[np.full(91, 70.0), np.zeros(9)]
    starts = _fine_start(kids, 42.0, (3.0, 78.0), 600, 1)
    assert np.mean(starts == 0) > 0.65, np.mean(starts == 0)


def test_fractions_in_the_rest_of_a_single_value_make_the_column_not_whole():
    """A column that is 0 in two thirds of the rows and a thin spread of fractions elsewhere (0.04 to
    58, no slot of the scan shows them) was called whole numbers and released as levels 0 and 1: every
    positive value clipped to 1. The rest's decade counts show numbers in (0.1, 1): bins with a point
    mass at 0 in every draw; so do fractions over 1 only (rain to a tenth of a mm), which the scan's
    counts of non-whole numbers over the rest's slots show. Counts 1..9 in place of the fractions stay whole-number levels, and a
    decade (0.1, 1) under the level of one test among those decades shows nothing."""
    from ddssp.data.discovery.codes import fractions_show
    from ddssp.data.discovery.slots import DECADE_GROUP, N_DECADES, slot_index

    rng = np.random.default_rng(5)
    n = 3000
    rest = np.exp(rng.uniform(np.log(0.04), np.log(58.0), n))
    frac = np.where(rng.random(n) < 2 / 3, 0.0, rest)
    # rain in mm to one decimal, none under 1: no decade of the rest lies under 1, the scan's
    # counts of non-whole numbers over the rest's slots show them
    rain = np.where(rng.random(n) > 0.2, 0.0, np.round(np.exp(rng.uniform(0.0, np.log(56.0), n)), 1) + 0.05)
    counts = np.where(rng.random(n) < 2 / 3, 0, rng.integers(1, 10, n))
    for seed in range(5):
        kw = dict(eps=1.0, delta=DEFAULT_DELTA, noise=InsecureSeededNoise(seed))
        for x in (frac, rain):
            col = plan_schema(pd.DataFrame({"a": x, "s": rng.choice([1, 2], n)}), None, **kw).schema.column("a")
            assert col.edges is not None and col.edges[0] == 0.0 and col.edges[-1] > 1.0, (seed, col)
        col = plan_schema(pd.DataFrame({"a": counts, "s": rng.choice([1, 2], n)}), None, **kw).schema.column("a")
        assert col.edges is None and np.all(col.values[~np.isnan(col.values)] % 1 == 0), (seed, col)
    sd = 40.0
    g = int(DECADE_GROUP[slot_index(np.array([0.5]))[0]])
    y = np.zeros(N_DECADES)
    y[g], y[g + 1] = 3.2 * sd, 10.0 * sd
    assert fractions_show(y, sd, (g, g + 1))
    assert not fractions_show(y, sd, (g + 1, g + 1))  # the decade is outside the rest's span
    y[g] = 2.5 * sd
    assert not fractions_show(y, sd, (g, g + 1))
