"""An end bin left at a column's end by the end-bin rules thins out as a tail
(:func:`ddssp.releasefile.tails.tail_end_bins`), and a within-bin entry cut at a point draws
nothing beyond it (:func:`ddssp.data.within.trimmed_entry`)."""

from __future__ import annotations

import numpy as np
import pytest

from ddssp.data import Column, Schema
from ddssp.data.within import Within, trimmed_entry
from ddssp.marginals.aim import Measurement
from ddssp.releasefile.tails import tail_end_bins

#: ages whose top bin [99, 100] the end-bin rule marked empty: [50, 99) is left at the end
EDGES = [18, 24, 28, 34, 39, 43, 50, 99, 100]
COUNTS = [100, 100, 150, 120, 100, 150, 300, 2]  # [50, 99) shows twice its neighbour [43, 50)


def _m(clique, values, sigma=20.0):
    return Measurement(tuple(clique), float(sigma), np.asarray(values, dtype=float), 0)


def _ages(edges=EDGES, empty_top=True, empty_bottom=False):
    col = Column.binned("age", edges)
    col.with_within(Within(tuple(((), (1.0,)) for _ in edges[1:]), whole=True))
    marked = ([col.labels[-1]] if empty_top else []) + ([col.labels[0]] if empty_bottom else [])
    if marked:
        col.with_empty(marked)
    return col


def _draws(col, code, n=4000, seed=0):
    codes = np.full((n, 1), code)
    return Schema([col]).decode(codes, rng=np.random.default_rng(seed))["age"].to_numpy(dtype=float)


def test_a_bin_left_at_the_top_draws_nothing_past_its_tail():
    # neighbour [43, 50) is 7 wide and the bin holds twice its rows: the tail ends 3 x 2 neighbour
    # widths past the inner edge, at 92
    col = _ages()
    schema = Schema([col])
    out = tail_end_bins(schema, [_m(["age"], COUNTS)], ["age"])
    assert out == {"age": [col.labels[6]]}
    cuts, weights = col.within.bins[6]
    assert cuts[-1] == 92 and weights[-1] == 0.0
    v = _draws(col, 6)
    assert v.min() >= 50 and v.max() < 92 and np.all(v == np.round(v))
    before = _draws(_ages(), 6)
    assert before.max() >= 95  # uniform over [50, 99) without the rule
    # the entry is a valid within of the column, written and read back unchanged
    again = Within.from_dict("age", col.within.to_dict())
    again.check("age", EDGES)
    assert again == col.within


def test_the_end_follows_the_bin_count():
    # the bin reads half its neighbour's rows: the tail ends 1.5 widths past the edge, at 61
    # (rounded up to a whole number)
    col = _ages()
    counts = [100, 100, 150, 120, 100, 150, 75, 2]
    assert tail_end_bins(Schema([col]), [_m(["age"], counts)], ["age"])
    v = _draws(col, 6)
    assert v.max() < 61 and v.min() >= 50 and v.max() >= 59


def test_the_bottom_side_is_the_mirror():
    edges = [0, 1, 40, 45, 50, 60]
    col = _ages(edges, empty_top=False, empty_bottom=True)
    out = tail_end_bins(Schema([col]), [_m(["age"], [1, 200, 150, 150, 150])], ["age"])
    assert out == {"age": [col.labels[1]]}
    v = _draws(col, 1)
    assert v.min() >= 20 and v.max() < 40  # 40 - 3 x (200 / 150) x 5


@pytest.mark.parametrize(
    "case",
    [
        "own end bin",
        "not discovered",
        "narrow bin",
        "point-mass neighbour",
        "one-number neighbour",
        "dense neighbour",
        "rows go on past",
        "no measurement",
    ],
)
def test_bins_the_rule_leaves_alone(case):
    edges, columns, meas = EDGES, ["age"], [_m(["age"], COUNTS)]
    col = _ages(empty_top=case != "own end bin")
    if case == "not discovered":  # a declared column's within is the publisher's
        columns = []
    if case == "narrow bin":  # [50, 55) is narrower than a tail of its neighbour's rows
        edges = [18, 24, 28, 34, 39, 43, 50, 55, 100]
        col = _ages(edges)
    if case == "point-mass neighbour":
        col.with_within(Within((*col.within.bins[:5], None, *col.within.bins[6:]), whole=True))
    if case == "one-number neighbour":  # [49, 50) holds 49 only: a spike, not a tail's start
        edges = [18, 24, 28, 34, 39, 49, 50, 99, 100]
        col = _ages(edges)
    if case == "dense neighbour":  # [43, 50) over 4 times as dense as [39, 43): a spike
        meas = [_m(["age"], [100, 100, 150, 120, 10, 150, 300, 2])]
    if case == "rows go on past":  # the emptied [99, 100] reads 30 at sd 20: over 1 sd
        meas = [_m(["age"], [*COUNTS[:-1], 30])]
    if case == "no measurement":
        meas = [_m(["other"], [1, 2])]
    before = col.within
    schema = Schema([col, Column.categorical("other", ["a", "b"])])
    assert tail_end_bins(schema, meas, columns) == {}
    assert col.within is before


def test_trimmed_entry_keeps_the_share_of_the_split_sub_cell():
    entry = ((2.0, 5.0), (0.2, 0.3, 0.5))
    cuts, weights = trimmed_entry(entry, 0.0, 10.0, 4.0, 1, whole=False)
    assert cuts == (2.0, 4.0) and np.allclose(weights, [0.5, 0.5, 0.0])
    cuts, weights = trimmed_entry(entry, 0.0, 10.0, 4.0, -1, whole=False)
    assert cuts == (4.0, 5.0) and np.allclose(weights, [0.0, 1 / 6, 5 / 6], atol=1e-5)
    # whole numbers: [0, 10) cut at 4 keeps 0..3
    cuts, weights = trimmed_entry(((), (1.0,)), 0.0, 10.0, 4.0, 1, whole=True)
    assert cuts == (4.0,) and weights == (1.0, 0.0)
    Within(((cuts, weights),), whole=True).check("x", [0.0, 10.0])
    # nothing left on the kept side, or a cut outside the bin: no entry
    assert trimmed_entry(((5.0,), (0.0, 1.0)), 0.0, 10.0, 4.0, 1, whole=False) is None
    assert trimmed_entry(((), (1.0,)), 0.0, 10.0, 10.0, 1, whole=False) is None


def _release(**kw):
    import warnings

    import pandas as pd

    from ddssp import release

    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"age": rng.integers(17, 70, n), "g": rng.choice(["a", "b"], n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release(df, eps=1.0, seed=1, insecure_seed=3, **kw)


def test_synthetic_rows_from_the_file_alone_follow_the_tail(tmp_path):
    """End to end, seeded: a discovered column whose top bin [60, 150) was left at the end (the bin
    above it, [150, 151], marked empty and read as 0; its neighbour [54, 60)) draws nothing past its
    tail's end, in the release and in rows drawn from its file alone;
    the file holds the release's own schema."""
    import dataclasses

    from ddssp.releasefile import Release
    from ddssp.releasefile.tails import drawing_schema

    rel = _release()
    old = rel.schema.column("age")
    assert old.edges is not None and old.within is not None and not old.empty
    m = len(old.edges) - 1
    edges = [float(e) for e in old.edges[: m - 1]] + [150.0, 151.0]
    assert edges[-4] < 54 and old.missing is None
    edges[-4:-2] = [54.0, 60.0]
    col = Column.binned("age", edges)
    col.with_within(Within(tuple(((), (1.0,)) for _ in range(m)), whole=True))
    col.with_empty([col.labels[-1]])
    schema = Schema([col if c.name == "age" else c for c in rel.schema.columns])
    measured = []  # AIM's counts read no row in the emptied bin [150, 151]
    for mm in rel.measurements:
        v = np.array(mm.values)
        if "age" in mm.clique:
            np.moveaxis(v, mm.clique.index("age"), 0)[m - 1] = 0
        measured.append(dataclasses.replace(mm, values=v))
    rel = dataclasses.replace(rel, schema=schema, measurements=measured)
    drawn = drawing_schema(rel)
    assert drawn is not rel.schema and rel.schema.column("age").within.bins[m - 2] == ((), (1.0,))
    cuts, weights = drawn.column("age").within.bins[m - 2]
    end = cuts[-1]
    assert 60 < end < 150 and weights[-1] == 0.0
    syn = rel.synthesize(3000, 5)["age"].to_numpy(dtype=float)
    assert syn.max() < end
    path = tmp_path / "r.release"
    rel.save(path)
    back = Release.load(path)
    assert back.schema.column("age").within == rel.schema.column("age").within  # the file keeps its schema
    assert back.synthesize(3000, 5).equals(rel.synthesize(3000, 5))


def test_a_release_whose_ends_were_not_cut_draws_by_its_own_schema():
    rel = _release()
    from ddssp.releasefile.tails import drawing_schema

    assert drawing_schema(rel) is rel.schema


def test_a_declared_within_keeps_priority():
    """The census example declares its columns and their within-bin spread: with its top three
    hours bins marked empty, the rule would cut [50, 60) (seeded counts), yet rows are drawn by the
    declared spread (no discovery paid for the column)."""
    import copy
    import dataclasses
    import warnings

    import pandas as pd

    from ddssp import release
    from ddssp.data import load_schema
    from ddssp.releasefile.tails import drawing_schema

    schema = load_schema("examples/census.schema.json")
    df = pd.read_csv("examples/census.csv").iloc[:300]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(df, schema, eps=1.0, seed=0, insecure_seed=9)
    hours = rel.schema.column("hours_per_week")
    assert hours.within is not None
    hours.with_empty(list(hours.labels[len(hours.edges) - 4 : len(hours.edges) - 1]))
    rel = dataclasses.replace(rel, schema=rel.schema)
    named = copy.deepcopy(rel.schema)
    assert tail_end_bins(named, rel.measurements, ["hours_per_week"]) == {"hours_per_week": ["[50, 60)"]}
    assert drawing_schema(rel) is rel.schema


def test_an_own_end_bin_spread_uniformly_gets_the_tail_unless_counts_shaped_it():
    # [50, 99] is the column's own top bin, spread uniformly (discovery's counts were noise there)
    edges = [18, 24, 28, 34, 39, 43, 50, 99]
    counts = [100, 100, 150, 120, 100, 150, 300]
    col = _ages(edges, empty_top=False)
    assert tail_end_bins(Schema([col]), [_m(["age"], counts)], ["age"]) == {"age": [col.labels[6]]}
    assert _draws(col, 6).max() < 92
    # a spread the counts shaped (not uniform by width) is discovery's reading: kept
    shaped = _ages(edges, empty_top=False)
    bins = list(shaped.within.bins)
    bins[6] = ((60.0, 80.0), (0.5, 0.4, 0.1))
    shaped.with_within(Within(tuple(bins), whole=True))
    assert tail_end_bins(Schema([shaped]), [_m(["age"], counts)], ["age"]) == {}
    # numbers above the range shown by discovery's noisy clipped share (1 sd or more): kept
    plain = _ages(edges, empty_top=False)
    clipped = {"age": (0.0, 0.05, 0.01, 0.02)}
    assert tail_end_bins(Schema([plain]), [_m(["age"], counts)], ["age"], clipped) == {}
    assert tail_end_bins(Schema([plain]), [_m(["age"], counts)], ["age"], {"age": (0.0, 0.01, 0.01, 0.02)})


def test_a_clipped_share_within_two_sds_of_noise_does_not_keep_the_spread():
    # discovery's noisy share above the range reads 1.5 sds: noise as often as one column end in
    # fifteen with nothing beyond, so the uniform top bin is cut; at 2 sds it is kept
    edges = [18, 24, 28, 34, 39, 43, 50, 99]
    counts = [100, 100, 150, 120, 100, 150, 300]
    col = _ages(edges, empty_top=False)
    assert tail_end_bins(Schema([col]), [_m(["age"], counts)], ["age"], {"age": (0.0, 0.15, 0.1, 0.1)})
    assert _draws(col, 6).max() < 92
    kept = _ages(edges, empty_top=False)
    assert tail_end_bins(Schema([kept]), [_m(["age"], counts)], ["age"], {"age": (0.0, 0.2, 0.1, 0.1)}) == {}
    assert _draws(kept, 6).max() >= 95


def test_an_own_end_bin_with_discoverys_tail_to_the_edge_is_cut_a_stopped_one_kept():
    from ddssp.data.discovery.bins import tail_prior

    edges = [18, 24, 28, 34, 39, 43, 50, 99]
    counts = [100, 100, 150, 120, 100, 150, 300]
    sub = np.arange(50.0, 100.0, 7.0)
    sub[-1] = 99.0
    to_edge = tail_prior(sub, 50.0, 99.0, 1)
    stopped = tail_prior(sub, 50.0, 99.0, 1, end=96.0)
    for weights, cut in ((to_edge, True), (stopped, False)):
        col = _ages(edges, empty_top=False)
        bins = list(col.within.bins)
        bins[6] = (tuple(sub[1:-1]), tuple(np.round(weights / weights.sum(), 5)))
        col.with_within(Within(tuple(bins), whole=True))
        out = tail_end_bins(Schema([col]), [_m(["age"], counts)], ["age"])
        assert out == ({"age": [col.labels[6]]} if cut else {})
        assert (_draws(col, 6).max() < 92) == cut


def test_an_own_end_bin_with_discoverys_stopped_tail_and_no_counts_is_cut():
    """Discovery stops an outer bin's tail where the bins' design shares end it (a cut at 96 in
    [50, 99], nothing beyond) and shrinks noise counts fully to that shape: the spread reads no
    counts, and its end, three neighbour widths out, lies far past rows that AIM's counts say thin
    out by 92. Such a bin is cut like a uniform one; a spread its counts shaped is kept."""
    from ddssp.data.discovery.bins import tail_prior

    edges = [18, 24, 28, 34, 39, 43, 50, 99]
    counts = [100, 100, 150, 120, 100, 150, 300]
    sub = np.array([50.0, 58.0, 66.0, 74.0, 82.0, 90.0, 96.0, 99.0])
    stopped = tail_prior(sub, 50.0, 99.0, 1, end=96.0)
    assert stopped[-1] == 0.0
    col = _ages(edges, empty_top=False)
    bins = list(col.within.bins)
    bins[6] = (tuple(sub[1:-1]), tuple(np.round(stopped / stopped.sum(), 5)))
    col.with_within(Within(tuple(bins), whole=True))
    assert _draws(col, 6).max() >= 93  # drawn up to discovery's stop
    assert tail_end_bins(Schema([col]), [_m(["age"], counts)], ["age"]) == {"age": [col.labels[6]]}
    assert _draws(col, 6).max() < 92
    # the same cells shaped by counts (rows piled in [58, 66)) are discovery's reading: kept
    shaped = _ages(edges, empty_top=False)
    bins = list(shaped.within.bins)
    weights = stopped / stopped.sum()
    weights[1] += 0.2
    bins[6] = (tuple(sub[1:-1]), tuple(np.round(weights / weights.sum(), 5)))
    shaped.with_within(Within(tuple(bins), whole=True))
    assert tail_end_bins(Schema([shaped]), [_m(["age"], counts)], ["age"]) == {}


def _read_top(beyond_rows, seed=3):
    """An age column whose own top bin [50, 99] was spread by discovery from noisy one-year counts
    (sd 5 a cell): 30 rows a year to 70, thinning to none at 80, and ``beyond_rows`` a year in
    92-98."""
    from ddssp.data.discovery.bins import within_coarse

    grid = np.arange(50.0, 100.0)
    rows = np.concatenate([np.full(20, 30.0), np.linspace(30, 0, 11)[1:], np.zeros(12), np.full(7, beyond_rows)])
    y = rows + np.random.default_rng(seed).normal(0, 5.0, rows.size)
    col = _ages([18, 24, 28, 34, 39, 43, 50, 99], empty_top=False)
    bins = list(col.within.bins)
    bins[6] = within_coarse(grid, y, 50.0, 99.0, 5.0, tail=1)
    col.with_within(Within(tuple(bins), whole=True))
    counts = [100, 100, 150, 120, 100, 375, float(rows.sum())]  # AIM: the tail ends at 92 without them
    return col, [_m(["age"], counts)]


def test_an_own_end_bin_spread_by_noise_counts_past_its_tail_is_cut_unless_they_show_rows():
    """Discovery keeps part of its noisy counts' deviation from its prior: noise cells past the rows
    then draw values there. Recovered from the spread, the counts beyond the tail's end sum to under
    2 sds of their noise: cut. Rows there, 20 a year, show: kept. Without the grid's sd the spread is
    kept as before."""
    col, meas = _read_top(0.0)
    assert _draws(col, 6).max() >= 92  # noise cells past the rows hold weight
    before = col.within
    assert tail_end_bins(Schema([col]), meas, ["age"]) == {} and col.within is before
    assert tail_end_bins(Schema([col]), meas, ["age"], sds={"age": 5.0}) == {"age": [col.labels[6]]}
    assert _draws(col, 6).max() < 92
    shown, meas = _read_top(20.0)
    before = shown.within
    assert tail_end_bins(Schema([shown]), meas, ["age"], sds={"age": 5.0}) == {} and shown.within is before
    assert _draws(shown, 6).max() >= 95


def test_a_wide_top_bin_on_a_log_axis_follows_its_tail():
    """Rain: dry days a point mass at 0, then [0.0004, 1.8), [1.8, 8.6) and an own top bin [8.6, 100]
    spread uniformly by width (discovery's counts were noise there). Uniform by width, half its draws
    lie above 54 (the wettest day: 56). Its neighbour is no spike: the bin below it starts at the
    point mass's offset, a log width set by the offset, so the densities compare on the linear axis.
    The spread follows the tail that thins out from the neighbour's density: most draws in the
    bin's lower part, a density that falls outwards, and still some draws past 56 (the tail reaches
    the edge, nothing cuts it). A top bin under a decade wide keeps a spread it is only cut by."""
    from ddssp.releasefile.tails import TAIL_CELLS

    edges = [0.0, 0.0004, 1.8, 8.6, 100.0]
    cuts = tuple(float(c) for c in np.geomspace(8.6, 100.0, 11)[1:-1])
    uniform = tuple(float(w) for w in np.diff([8.6, *cuts, 100.0]) / (100.0 - 8.6))
    col = Column.binned("rain", edges)
    col.with_within(Within((None, ((0.1,), (0.05, 0.95)), ((4.0,), (0.4, 0.6)), (cuts, uniform)), whole=False))
    before = Schema([col]).decode(np.full((4000, 1), 3), rng=np.random.default_rng(0))["rain"].to_numpy(dtype=float)
    assert np.mean(before > 54) > 0.45
    counts = [860, 185, 300, 207]
    assert tail_end_bins(Schema([col]), [_m(["rain"], counts)], ["rain"]) == {"rain": [col.labels[3]]}
    cut, w = col.within.bins[3]
    density = np.asarray(w) / np.diff(np.log([8.6, *cut, 100.0]))
    assert len(w) >= TAIL_CELLS and np.all(np.diff(density) <= 1e-9)  # falls outwards
    after = Schema([col]).decode(np.full((4000, 1), 3), rng=np.random.default_rng(0))["rain"].to_numpy(dtype=float)
    assert np.mean(after > 54) < 0.15 and np.median(after) < 30 and after.min() >= 8.6
    narrow = Column.binned("rain", [0.0, 0.0004, 1.8, 8.6, 60.0])
    narrow.with_within(Within((None, ((0.1,), (0.05, 0.95)), ((4.0,), (0.4, 0.6)), ((), (1.0,))), whole=False))
    tail_end_bins(Schema([narrow]), [_m(["rain"], counts)], ["rain"])
    assert len(narrow.within.bins[3][1]) <= 2  # kept, or cut at its tail's end: no tail shape
