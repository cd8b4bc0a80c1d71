"""Discovery on small tables and narrow ranges: a noisy row count sets discovery's share of the
budget, coarse-to-fine grids keep years and coordinates in their range, every column discovery
cannot resolve is reported at once."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Schema
from ddssp.data.discovery import MAX_AUTO_SHARE, discover
from ddssp.data.discovery.bins import bin_median
from ddssp.data.discovery.budget import TARGET_WEIGHT
from ddssp.data.discovery.spans import outer_span, populated_span, populated_windows
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise, make_noise
from ddssp.errors import SchemaError
from ddssp.pipeline.plan import plan_schema

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "year": rng.integers(2003, 2010, n),
            "lat": np.round(rng.uniform(47.5, 47.7, n), 5),
            "age": rng.integers(17, 91, n),
            "hours": np.where(rng.random(n) < 0.45, 40, rng.integers(1, 99, n)),
            "c": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
        }
    )


def _run(df, eps=1.0, share=0.1, seed=0, rho_max=True, collect=True):
    rho = rho_from_eps_delta(eps, 1e-6)
    ledger = Ledger(rho, delta_budget=1e-7)
    noise = InsecureSeededNoise(seed) if seed is not None else None
    cols, rep, _ = discover(
        df,
        list(df.columns),
        ChargedMechanisms(ledger, noise),
        rho=share * rho,
        delta=1e-7,
        rho_max=rho if rho_max else None,
        collect=collect,
    )
    return cols, rep, ledger


def _decoded_range(col):
    return float(np.min(col.values)), float(np.max(col.values))


@pytest.mark.parametrize("seed", [2, 3])
def test_year_and_latitude_decode_inside_their_range(seed):
    """5,000 rows at eps 1: years 2003-2009 become levels inside 2003..2009, latitudes 47.5-47.7
    decode inside the city, never to the log bands' 1779 or 100 degrees.
    (Seeded draws that are not exactly 2003..2009 happen: 10 of seeds 1..600, 7 of them widening the
    year range.)"""
    cols, rep, ledger = _run(_table(5000), seed=seed)
    assert not rep.unresolved
    year, lat = cols["year"], cols["lat"]
    assert year.edges is None and _decoded_range(year) == (2003, 2009)
    lo, hi = _decoded_range(lat)
    assert 47.5 - 0.3 <= lo and hi <= 47.7 + 0.3
    assert lat.edges[0] >= 47.5 - 0.3 and lat.edges[-1] <= 47.7 + 0.3
    assert ledger.spent <= ledger.rho_budget * (1 + 1e-12)


def test_year_and_latitude_ranges_on_fresh_noise():
    """20 fresh draws of the table above. A noise false positive may widen a range by a coarse cell
    or more, and a column is rarely left unresolved: over seeded draws 1..600, 12 left 1900..2100
    (years) or the city by 1.6 degrees (latitude) and 2 had an unresolved column (2.3% a draw), so
    up to 4 of the 20 may miss (a false alarm about once in ten thousand runs). The budget holds in
    every draw."""
    missed = 0
    for _ in range(20):
        cols, rep, ledger = _run(_table(5000), seed=None)
        assert ledger.spent <= ledger.rho_budget * (1 + 1e-12)
        if rep.unresolved:
            missed += 1
            continue
        ylo, yhi = _decoded_range(cols["year"])
        llo, lhi = _decoded_range(cols["lat"])
        lat = cols["lat"]
        missed += not (
            1900 <= ylo
            and yhi <= 2100
            and 47.5 - 1.6 <= llo
            and lhi <= 47.7 + 1.6
            and lat.edges[0] >= 47.5 - 1.6
            and lat.edges[-1] <= 47.7 + 1.6
        )
    assert missed <= 4


def _check_small_table_run(cols, rep, ledger, fresh: bool) -> bool:
    """The invariants of one discovery of the 800-row table; returns whether age's range stays in
    [10, 100] (the real ages are 17..90)."""
    if fresh:  # a column whose counts show one narrow band only is left out (~15% of draws)
        assert all("one narrow band" in why for why in rep.unresolved.values())
        assert set(cols) | set(rep.unresolved) == {"year", "lat", "age", "hours", "c"}
    else:
        assert set(cols) == {"year", "lat", "age", "hours", "c"} and not rep.unresolved
    assert rep.rows is not None and 0.1 < rep.share <= MAX_AUTO_SHARE + 1e-12
    assert ledger.spent <= MAX_AUTO_SHARE * ledger.rho_budget * (1 + 1e-9)
    assert any("row count" in e.note for e in ledger.entries)
    age = cols.get("age")
    assert age is None or age.is_binned
    return age is None or (age.edges[0] >= 10 and age.edges[-1] <= 100)


@pytest.mark.parametrize("seed", [3, 4])
def test_small_table_discovers_every_column(seed):
    """800 rows at eps 1, 5 columns: the noisy row count raises discovery's share (to at most
    MAX_AUTO_SHARE) and every column is found; at the default 0.1 share the scans alone would miss them."""
    assert _check_small_table_run(*_run(_table(800), seed=seed), fresh=False)


def test_small_table_discovery_on_fresh_noise():
    """20 fresh draws of the test above. A column may be left out only for the one-narrow-band reason.
    The scan adds the band next to the data's on 2 sds of evidence (a thin tail lives there), so a
    draw in about 40 widens age's range past 100 to that band's edge (178; measured 10 of 400 fresh
    draws): at most 4 of 20 may (a false alarm about once in ten thousand runs)."""
    widened = sum(not _check_small_table_run(*_run(_table(800), seed=None), fresh=True) for _ in range(20))
    assert widened <= 4


def test_large_table_keeps_the_given_share():
    _cols, rep, ledger = _run(_table(40000), seed=5)
    assert math.isclose(rep.share, 0.1, rel_tol=1e-9)
    assert math.isclose(ledger.spent, 0.1 * ledger.rho_budget, rel_tol=1e-9)


def test_every_unresolved_column_is_reported_at_once():
    n = 3000
    df = pd.DataFrame(
        {"ok": np.arange(n) % 5, "empty": [None] * n, "ids": [f"id{i}" for i in range(n)], "const": ["x"] * n}
    )
    # seeded noise: the single-value refusal of "const" misses in a few % of draws (its noisy rest
    # is above 2 sds), then it is one label + <other>
    cols, rep, _ = _run(df, eps=8.0, share=0.5, seed=2)
    assert set(rep.unresolved) == {"empty", "ids", "const"} and set(cols) == {"ok"}
    assert "rows" in rep.unresolved["empty"] and "rows" in rep.unresolved["ids"]
    with pytest.raises(SchemaError) as exc:
        _run(df, eps=8.0, share=0.5, seed=2, collect=False)
    msg = str(exc.value)
    assert all(f"'{c}'" in msg for c in ("empty", "ids", "const")) and "--discovery-share" in msg


def test_populated_windows_and_span_are_post_processing_rules():
    y = np.array([0.0, 0, 0, 70, 70, 0, 0, 0])  # no cell passes 3 sds of 30, the pair 3..4 does
    pop = populated_windows(y, 30.0, 3.0)
    assert pop[3] and pop[4] and not pop[0] and not pop[7]
    assert not populated_windows(np.zeros(8), 1.0, 3.0).any()
    assert populated_span(np.array([0.0, 0, 100, 100, 0, 0]), 5.0) == (2, 3)
    assert populated_span(np.zeros(5), 1.0) == (0, 4)
    # a thin tail beside the bulk shows at a coarser scale and joins the span
    y = np.array([0.0, 0, 0, 0, 500, 500, 20, 20, 20, 20, 0, 0])
    assert outer_span(y, 10.0, 4.0) == (4, 9)
    assert outer_span(np.zeros(6), 1.0, 4.0) is None


def test_plan_schema_on_a_small_table_fits_the_budget():
    """The pipeline passes the release's budget, so a 900-row table gets a schema (not the old 'no
    values found') and the ledger still never exceeds the budget."""
    plan = plan_schema(_table(900, seed=7), None, eps=1.0, delta=1e-6, noise=make_noise(1))
    assert [c.name for c in plan.schema.columns] == ["year", "lat", "age", "hours", "c"]
    assert plan.ledger.spent <= plan.ledger.rho_budget * (1 + 1e-12)


def test_a_bin_decodes_where_its_noisy_counts_are():
    """The representative value of a bin is the median of the noisy grid counts inside it: rows in the
    bin's first cells pull it below the middle; counts lost in the noise leave the middle."""
    grid = np.arange(0.0, 11.0)
    y = np.array([400.0, 300, 20, 0, 0, 0, 0, 0, 0, 0])
    assert bin_median(grid, y, 0.0, 10.0, 10.0, whole=False) == 0.5
    assert bin_median(grid, y, 0.0, 10.0, 10.0, whole=True) == 0.0
    assert bin_median(grid, np.full(10, 5.0), 0.0, 10.0, 10.0, whole=False) is None


@pytest.mark.parametrize("seed", [None, 6])
def test_bins_decode_inside_their_bins(seed):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": np.round(rng.exponential(10.0, 20000) + 1.0, 3)})
    cols, rep, _ = _run(df, seed=seed)
    x = cols["x"]
    assert x.is_binned and not rep.unresolved
    e, v = np.asarray(x.edges), np.asarray(x.values)
    assert np.all((e[:-1] <= v) & (v < e[1:]))
    assert e[0] >= 0.5 and e[-1] <= 1.5 * df["x"].max()


@pytest.mark.parametrize("histograms", [True, False])
def test_numeric_column_found_in_one_band_only_is_dropped_not_one_bin(histograms, monkeypatch):
    """A numeric column whose noisy counts show one narrow band is dropped with its reason (a single
    bin would clip every row into it and say nothing), across seeds. At this size whole numbers this
    spread take the private medians, which never give one bin either; the histograms (the path of
    larger tables, forced here) meet the case."""
    from ddssp.data.discovery import numeric

    if histograms:
        monkeypatch.setattr(numeric, "MEDIANS_BELOW", 0.0)
    rng = np.random.default_rng(3)
    n = 344
    df = pd.DataFrame({f"x{i}": np.round(rng.normal(870, 55, n)) for i in range(12)})
    one_bin = 0
    for seed in range(10):
        cols, rep, _ = _run(df, eps=1.0, seed=seed)
        for c in cols.values():
            assert c.kind == "categorical" or c.size - (c.missing is not None) >= 2, (seed, c.name, c.edges)
        one_bin += sum("one narrow band" in why for why in rep.unresolved.values())
    if histograms:
        assert one_bin > 0  # at this size the case occurs, and is reported with its reason


def test_small_table_keeps_its_year_column_across_fresh_draws():
    """The range-edge step fit never trims more than the threshold cut: on the 900-row table the
    whole-number year column (spiky fine counts) is kept in about 97% of fresh draws (a step fit
    alone dropped it in 2 of 3 draws); at least 17 of 20 here (false alarm about 0.3%)."""
    df = _table(900, seed=7)
    kept = 0
    for _ in range(20):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = plan_schema(df, None, eps=1.0, delta=1e-6)
        kept += "year" in plan.schema.names
    assert kept >= 17


def test_few_rows_of_continuous_values_take_private_medians_and_clip_little():
    """At 344 rows and eight columns, numbers that are not whole get their inner edges from private
    medians inside the scan's range: fewer rows clipped than the noisy histograms' cut (measured 2% vs
    47% on this column), one charged entry per level."""
    rng = np.random.default_rng(5)
    n = 344
    df = pd.DataFrame({f"x{i}": np.round(rng.normal(43.9, 5.5, n), 1) for i in range(7)})
    df["w"] = np.round(rng.normal(200, 14, n))
    clipped, used = [], 0
    for seed in range(6):
        cols, rep, ledger = _run(df, eps=1.0, seed=seed)
        assert ledger.spent <= ledger.rho_budget * (1 + 1e-12)
        for name, c in cols.items():
            if name == "w":
                continue
            assert "private medians" in rep.notes[name] and c.size >= 2
            x = df[name].to_numpy()
            clipped.append(np.mean((x < c.edges[0]) | (x > c.edges[-1])))
            levels = [e for e in ledger.entries if e.kind == "discover-medians" and e.clique == (name,)]
            assert 1 <= len(levels) <= 3
            used += 1
    assert used >= 10 and np.mean(clipped) < 0.1


def _whole_table(n, seed=0):
    """Penguin-like whole numbers (flipper mm, body mass g in steps of 25, a year) beside continuous
    columns, eight in all."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"x{i}": np.round(rng.normal(43.9, 5.5, n), 1) for i in range(5)})
    df["flipper"] = np.round(np.concatenate([rng.normal(190, 6.5, n // 2), rng.normal(217, 6.5, n - n // 2)]))
    df["mass"] = np.round(rng.normal(4200, 800, n) / 25) * 25
    df["year"] = rng.choice([2007, 2008, 2009], n)
    return df


def test_few_rows_of_wide_whole_numbers_take_private_medians_and_clip_little():
    """At 344 rows, whole numbers spread over many values take the private medians (the histograms'
    fine cut kept 193..194 of a flipper column in one draw, most rows clipped): over seeds, under 10%
    of their rows fall outside the discovered range (7.7% here, most of it the scan's range of body
    mass; the histogram path clipped 39%)."""
    df = _whole_table(344)
    clipped, medians = [], 0
    for seed in range(8):
        cols, rep, ledger = _run(df, eps=1.0, seed=seed)
        assert ledger.spent <= ledger.rho_budget * (1 + 1e-12)
        for name in ("flipper", "mass"):
            if name not in cols:
                continue
            c, x = cols[name], df[name].to_numpy()
            clipped.append(np.mean((x < c.edges[0]) | (x > c.edges[-1])))
            medians += "private medians" in rep.notes[name]
    assert len(clipped) >= 10 and np.mean(clipped) < 0.1
    assert medians >= 0.7 * len(clipped)


def test_whole_number_medians_cut_between_whole_numbers():
    """The median path on whole numbers: every edge a whole number, so a bin [a, b) holds the whole
    numbers a..b-1 (at least one), each representative value one of them, synthetic values whole
    and inside their bin; the charged entries are the first grid's counts and one per median level."""
    df = _whole_table(344)
    seen = 0
    for seed in range(6):
        cols, rep, ledger = _run(df, eps=1.0, seed=seed)
        for name in ("flipper", "mass"):
            if name not in cols or "private medians" not in rep.notes[name]:
                continue
            seen += 1
            c = cols[name]
            e, v = np.asarray(c.edges), np.asarray(c.values)
            assert np.all(e == np.round(e)) and np.all(np.diff(e) >= 1)
            assert np.all(v == np.round(v)) and np.all((e[:-1] <= v) & (v < e[1:]))
            assert c.within is not None and c.within.whole
            codes = pd.DataFrame({name: np.arange(c.size).repeat(50)})
            out = Schema([c]).decode(codes, rng=np.random.default_rng(seed))[name].to_numpy(dtype=float)
            assert np.all(out == np.round(out))
            assert np.array_equal(np.clip(np.searchsorted(e, out, side="right") - 1, 0, len(e) - 2), codes[name])
            kinds = [x.kind for x in ledger.entries if x.clique == (name,)]
            assert kinds.count("discover-medians") == 3 and kinds.count("discover-counts") == 2
    assert seen >= 6


def test_few_whole_numbers_piled_up_keep_the_histograms():
    """Years 2007-2009 in a small table never take the medians (piled on three values, every cut
    inside a group of one year ties), and the first grid's cells, as fine as the second's, find
    them: inside 2000..2016 in most draws (seeded: 27 of 30; the 16-cell first grid of the
    histogram path left the column out in 5 of 6 draws, one narrow band)."""
    df = _whole_table(900, seed=1)
    inside = 0
    for seed in range(10):
        cols, rep, _ = _run(df, eps=1.0, seed=seed)
        if "year" in cols:
            assert "private medians" not in rep.notes["year"]
            y = cols["year"]
            lo, hi = (y.edges[0], y.edges[-1]) if y.is_binned else (min(y.values), max(y.values))
            inside += 2000 <= lo and hi <= 2016
    assert inside >= 7


def _entries_by_column(ledger):
    got: dict[str, float] = {}
    for e in ledger.entries:
        if e.kind == "discover-counts" and "row count" not in e.note:
            got[e.clique[0]] = got.get(e.clique[0], 0.0) + e.rho
    return got


def test_declared_bounds_do_not_raise_discoverys_budget():
    """The small-table raise pays for range searches: a table whose numeric columns all have declared
    bounds spends only the given share on discovery (on 800 rows at eps 1 the raise would take up to
    MAX_AUTO_SHARE), and with one searched column the raise goes to that column alone."""
    from ddssp.data.codebook import Codebook, ColumnHint

    df = _table(800).drop(columns=["c", "lat"])
    bounds = {"year": (2003, 2009), "age": (17, 90), "hours": (1, 98)}
    rho = rho_from_eps_delta(1.0, 1e-6)

    def run(declared, target=None):
        ledger = Ledger(rho, delta_budget=1e-7)
        hints = Codebook(tuple(ColumnHint(c, kind="numeric", bounds=bounds[c], whole=True) for c in declared))
        discover(
            df,
            list(df.columns),
            ChargedMechanisms(ledger, InsecureSeededNoise(5)),
            rho=0.1 * rho,
            delta=1e-7,
            rho_max=rho,
            collect=True,
            hints=hints,
            target=target,
        )
        return ledger

    every = run(["year", "age", "hours"])
    assert every.spent <= 0.1 * rho * (1 + 1e-9)
    spent = _entries_by_column(every)
    assert set(spent) == {"year", "age", "hours"} and max(spent.values()) <= 0.1 * rho / 3 * (1 + 1e-9)
    one = run(["year", "age"])
    assert 0.1 * rho * 1.5 < one.spent <= MAX_AUTO_SHARE * rho * (1 + 1e-9)
    raised = _entries_by_column(one)
    for c in ("year", "age"):  # the given share only, spent as when every column was declared
        assert math.isclose(raised[c], spent[c], rel_tol=1e-9)
    assert raised["hours"] > 3 * raised["age"]
    none = run([])  # no declared bounds: the raise covers every column, as before
    assert none.spent > one.spent
    # a declared target keeps its raised part: its bins' values enter every entry of X^T y
    targeted = _entries_by_column(run(["year", "age", "hours"], target="hours"))
    assert targeted["hours"] > 0.1 * rho  # more than the whole given budget
    assert targeted["age"] <= 0.1 * rho / (2 + TARGET_WEIGHT) * (1 + 1e-9)
