"""Declared orders (``A increases with B``): parsing, the monotone path read from a model, the
within-bin arrangement, the violation count, and synthetic rows that never break one."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Schema
from ddssp.data.columns import Column
from ddssp.data.orders import Order, arrange, order_violations, staircase
from ddssp.data.rules import RuleError, compile_rules, orders, parse_rule
from ddssp.data.within import Within

EDGES = [0.0, 10.0, 20.0, 30.0, 40.0]


def schema() -> Schema:
    spread = Within(tuple(((lo + 2.5, lo + 5.0, lo + 7.5), (1.0, 1.0, 1.0, 1.0)) for lo in EDGES[:-1]))
    return Schema(
        [
            Column.binned("INC", EDGES, missing="N").with_within(spread),
            Column.categorical("DEC", ["N", "4", "3", "2", "1", "0"]),  # labels not in their order
            Column.categorical("G", ["a", "b", "c"]),
        ]
    )


def test_an_order_parses_to_its_canonical_text_and_bad_ones_are_refused_in_one_line():
    o = parse_rule('dec: DEC increases with "IN C"')
    assert o == Order("dec", "DEC", "IN C")
    assert o.text == 'dec: DEC increases with "IN C"' and parse_rule(o.text) == o
    assert o.columns == ("DEC", "IN C")
    for text, match in [
        ("A increases with", "increases with COLUMN"),
        ("A increases with B and C", "increases with COLUMN"),
        ("A increases with A", "itself"),
    ]:
        with pytest.raises(RuleError, match=match) as e:
            parse_rule(text)
        assert "\n" not in str(e.value)


def test_orders_are_checked_against_the_schema_and_not_compiled_to_cells():
    s = schema()
    assert compile_rules("o: DEC increases with INC", s) == []
    assert [o.name for o in orders("o: DEC increases with INC\nG == a -> DEC != N\n")] == ["o"]
    for text, match in [
        ("DEC increases with NOPE", "not in the schema"),
        ("INC increases with DEC", "binned"),
        ("G increases with INC", "fewer than two levels that are numbers"),
        ("DEC increases with G", "fewer than two levels that are numbers or bins"),
    ]:
        with pytest.raises(RuleError, match=match):
            compile_rules(text, s)


def _monotone(kept: list[tuple[int, int]]) -> bool:
    return not any(a1 < a2 and b1 > b2 for (a1, b1), (a2, b2) in itertools.permutations(kept, 2))


def _paths(r: int, c: int):
    """Every monotone lattice path from (0, 0) to (r - 1, c - 1)."""

    def walk(i, j):
        if (i, j) == (r - 1, c - 1):
            yield [(i, j)]
            return
        for di, dj in ((1, 0), (0, 1), (1, 1)):
            if i + di < r and j + dj < c:
                for rest in walk(i + di, j + dj):
                    yield [(i, j), *rest]

    yield from walk(0, 0)


@pytest.mark.parametrize("seed", range(6))
def test_the_staircase_keeps_the_monotone_path_of_most_mass(seed):
    """Against every path of a small grid: the kept cells are monotone in the levels' numbers (not
    their codes) and hold as much of the model's mass as the best path."""
    rng = np.random.default_rng(seed)
    s = Schema([Column.binned("INC", [0, 1, 2, 3], missing="N"), Column.categorical("DEC", ["N", "2", "0", "1"])])
    table = rng.random((4, 4)) * (rng.random((4, 4)) < 0.7)  # (INC, DEC) codes
    comp = staircase(Order("o", "DEC", "INC"), s, table, ("INC", "DEC"))
    inc_rank, dec_rank = [0, 1, 2], {2: 0, 3: 1, 1: 2}  # code -> position in the order
    kept = [(i, dec_rank[d]) for i in inc_rank for d in dec_rank if not comp.forbidden[i, d]]
    assert _monotone(kept)
    assert not comp.forbidden[3, :].any() and not comp.forbidden[:, 0].any()  # missing levels are free
    grid = np.array([[table[i, d] for d in sorted(dec_rank, key=dec_rank.get)] for i in inc_rank])
    best = max(sum(grid[a, b] for a, b in p) for p in _paths(3, 3))
    assert sum(grid[a, b] for a, b in kept) == pytest.approx(best)


def test_arrange_sorts_a_bins_values_by_the_increasing_column_and_keeps_each_rows_bin():
    s = schema()
    codes = pd.DataFrame({"INC": [0, 0, 0, 1, 1, 4], "DEC": [5, 4, 5, 3, 4, 0], "G": [0] * 6})
    frame = pd.DataFrame({"INC": [9.0, 1.0, 5.0, 12.0, 18.0, np.nan], "DEC": ["0", "1", "0", "2", "1", "N"]})
    out = arrange(frame.copy(), codes, [Order("o", "DEC", "INC")], s, np.random.default_rng(0))
    assert sorted(out.INC[:3]) == [1.0, 5.0, 9.0] and out.INC[1] == 9.0  # decile 1 gets the bin's top
    assert list(out.INC[3:5]) == [18.0, 12.0] and np.isnan(out.INC[5])
    assert order_violations(frame, [Order("o", "DEC", "INC")], s)[0]["rows"] > 0
    assert order_violations(out, [Order("o", "DEC", "INC")], s)[0]["rows"] == 0


def test_order_violations_count_the_rows_above_a_smaller_value_of_a_larger_row():
    s = schema()
    o = [Order("o", "DEC", "INC")]
    rows = pd.DataFrame({"INC": [1.0, 2.0, 3.0, 4.0, 4.0, np.nan], "DEC": ["0", "2", "1", "3", "3", "0"]})
    assert order_violations(rows, o, s) == [{"rule": "o", "text": "o: DEC increases with INC", "rows": 1}]
    ties = pd.DataFrame({"INC": [5.0, 5.0, 6.0], "DEC": ["2", "1", "2"]})  # equal values may differ
    assert order_violations(ties, o, s)[0]["rows"] == 0
    assert order_violations(rows.iloc[:0], o, s)[0]["rows"] == 0


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    """A release of data whose DEC is the fifth of INC (edges every 8, inside the bins of 10)."""
    from ddssp import release

    rng = np.random.default_rng(3)
    inc = np.floor(rng.random(3000) * 40)
    g = np.where(inc > 20, rng.choice(["b", "c"], 3000), "a")
    rows = pd.DataFrame({"INC": inc, "DEC": (inc // 8).astype(int).astype(str), "G": g})
    rel = release(rows, schema(), eps=2.0, insecure_seed=5, rules="o: DEC increases with INC", progress=False)
    path = tmp_path_factory.mktemp("ord") / "o.release"
    rel.save(path)
    return rel, path, rows


def test_synthetic_rows_follow_a_declared_order_that_the_model_alone_breaks(ranked, capsys):
    from ddssp.cli import main
    from ddssp.releasefile import Release

    rel, path, data = ranked
    declared = orders(rel.rules)
    assert order_violations(data, declared, rel.schema)[0]["rows"] == 0  # the data follow it
    again = Release.load(path)
    assert again.rules == ["o: DEC increases with INC"] and again.compiled_rules() == []
    plain = rel.schema.decode(
        rel.model.sample(3000, np.random.default_rng(0), method="rounded"), rng=np.random.default_rng(0)
    )
    assert order_violations(plain, declared, rel.schema)[0]["rows"] > 0  # the model alone mixes them
    for seed in (1, 2):
        rows = again.synthesize(3000, seed=seed)
        assert order_violations(rows, declared, rel.schema)[0]["rows"] == 0
        # every decile's incomes form one interval, in the deciles' order
        ranked_rows = rows[rows.DEC != "N"].dropna()  # N, DEC's declared level outside the order, is free
        spans = ranked_rows.astype({"DEC": int}).groupby("DEC").INC.agg(["min", "max"]).sort_index()
        assert (spans["min"].to_numpy()[1:] >= spans["max"].to_numpy()[:-1]).all()
    assert main(["inspect", str(path)]) == 0
    assert "o: DEC increases with INC" in capsys.readouterr().out


def test_a_release_with_an_order_naming_an_unknown_column_is_refused_on_load(ranked, tmp_path):
    from ddssp.errors import ReleaseFileError
    from ddssp.releasefile import Release
    from tests.hostile import edit_doc

    _, path, _ = ranked

    def edit(doc):
        doc["rules"] = ["o: DEC increases with NOPE"]

    bad = edit_doc(path, tmp_path / "bad.release", edit)
    with pytest.raises(ReleaseFileError, match="NOPE") as e:
        Release.load(bad)
    assert "\n" not in str(e.value)


def test_evaluate_counts_a_declared_order_on_the_synthetic_rows_and_the_data(ranked):
    from ddssp import evaluate

    rel, _, data = ranked
    broken = data.copy()
    top = broken.INC.idxmax()
    broken.loc[top, "DEC"] = "0"  # the largest income ranked lowest: every other ranked row is above it
    rep = evaluate(rel, broken, seed=1)
    counts = {r["rule"]: (r["synthetic"], r["data"]) for r in rep.agency["rules"]}
    assert counts["declared o"][0] == 0
    assert counts["declared o"][1] == (broken.INC < broken.INC.max()).sum() - (broken.DEC == "0").sum() + 1


def test_an_order_within_a_group_parses_checks_and_round_trips():
    o = parse_rule("dec: DEC increases with INC within G")
    assert o == Order("dec", "DEC", "INC", "G") and o.columns == ("DEC", "INC", "G")
    assert o.text == "dec: DEC increases with INC within G" and parse_rule(o.text) == o
    s = schema()
    assert compile_rules(o.text, s) == []
    for text, match in [
        ("A increases with B within", "within COLUMN"),
        ("A increases with B within C D", "within COLUMN"),
        ("A increases with B within A", "must differ"),
        ("A increases with B within B", "must differ"),
    ]:
        with pytest.raises(RuleError, match=match) as e:
            parse_rule(text)
        assert "\n" not in str(e.value)
    with pytest.raises(RuleError, match="not in the schema"):
        compile_rules("DEC increases with INC within NOPE", s)


@pytest.mark.parametrize("seed", range(4))
def test_the_staircase_within_a_group_keeps_each_groups_own_best_path(seed):
    """Each group level gets the best monotone path of its own slice, whatever the table's axis order."""
    rng = np.random.default_rng(seed)
    s = Schema(
        [
            Column.binned("INC", [0, 1, 2, 3], missing="N"),
            Column.categorical("DEC", ["N", "2", "0", "1"]),
            Column.categorical("G", ["a", "b", "c"]),
        ]
    )
    table = rng.random((3, 4, 4)) * (rng.random((3, 4, 4)) < 0.7)  # (G, INC, DEC)
    comp = staircase(Order("o", "DEC", "INC", "G"), s, table, ("G", "INC", "DEC"))
    assert comp.columns == ("G", "INC", "DEC") and comp.forbidden.shape == table.shape
    inc_rank, dec_rank = [0, 1, 2], {2: 0, 3: 1, 1: 2}
    for g in range(3):
        kept = [(i, dec_rank[d]) for i in inc_rank for d in dec_rank if not comp.forbidden[g, i, d]]
        assert _monotone(kept)
        grid = np.array([[table[g, i, d] for d in sorted(dec_rank, key=dec_rank.get)] for i in inc_rank])
        assert sum(grid[a, b] for a, b in kept) == pytest.approx(
            max(sum(grid[a, b] for a, b in p) for p in _paths(3, 3))
        )
        alone = staircase(Order("o", "DEC", "INC"), s, table[g], ("INC", "DEC"))
        assert (comp.forbidden[g] == alone.forbidden).all()


def test_violations_and_arrange_within_a_group_compare_rows_of_the_same_group_only():
    s = schema()
    within, across = [Order("o", "DEC", "INC", "G")], [Order("o", "DEC", "INC")]
    # group b ranks the same incomes higher than group a: an order in each group, none across them
    rows = pd.DataFrame({"INC": [1.0, 11.0, 21.0, 1.0, 11.0, 21.0], "DEC": ["0", "1", "2", "2", "3", "4"]})
    rows["G"] = ["a", "a", "a", "b", "b", "b"]
    assert order_violations(rows, within, s)[0]["rows"] == 0
    assert order_violations(rows, across, s)[0]["rows"] > 0
    codes = pd.DataFrame({"INC": [0, 0, 0, 0], "DEC": [5, 4, 3, 2], "G": [0, 0, 1, 1]})  # deciles 0, 1 | 2, 3
    frame = pd.DataFrame({"INC": [9.0, 1.0, 8.0, 2.0], "DEC": ["0", "1", "2", "3"], "G": ["a", "a", "b", "b"]})
    out = arrange(frame.copy(), codes, within, s, np.random.default_rng(0))
    assert list(out.INC) == [1.0, 9.0, 2.0, 8.0]  # each group's values stay in the group, sorted by DEC
    assert order_violations(out, within, s)[0]["rows"] == 0


@pytest.mark.parametrize("seed", range(3))
def test_violations_within_a_group_are_those_of_each_groups_rows_alone(seed):
    from ddssp.data.orders import broken_by_order

    rng = np.random.default_rng(seed)
    s = schema()
    n = 200
    rows = pd.DataFrame(
        {
            "INC": np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 40, n).astype(float)),
            "DEC": rng.choice(["N", "0", "1", "2", "3", "4"], n),
            "G": rng.choice(["a", "b", "c"], n),
        }
    )
    within = broken_by_order(rows, Order("o", "DEC", "INC", "G"), s)
    for _, part in rows.groupby("G"):
        assert (within[part.index] == broken_by_order(part, Order("o", "DEC", "INC"), s)).all()
    assert within.sum() <= broken_by_order(rows, Order("o", "DEC", "INC"), s).sum()


def test_synthetic_rows_follow_an_order_within_each_group_where_one_order_across_groups_is_false():
    """The deciles rank incomes within each group (as the NIST deciles within each state): declared
    within the group, every group keeps its own ranking; declared across groups, one ranking is
    forced on both and many of group b's low incomes lose their decile."""
    from ddssp import release
    from ddssp.pipeline.options import AimOptions

    rng = np.random.default_rng(4)
    inc = np.floor(rng.random(4000) * 40)
    g = rng.choice(["a", "b"], 4000)
    dec = np.where(g == "a", inc // 8, np.minimum(4, (inc + 16) // 8)).astype(int).astype(str)
    rows = pd.DataFrame({"INC": inc, "DEC": dec, "G": g})
    aim = AimOptions(workload=[(("G", "INC", "DEC"), 1.0)])
    s = Schema(
        [
            Column.binned("INC", [0.0, 8.0, 16.0, 24.0, 32.0, 40.0], missing="N"),
            Column.categorical("DEC", ["N", "4", "3", "2", "1", "0"]),
            Column.categorical("G", ["a", "b"]),
        ]
    )
    within, across = "o: DEC increases with INC within G", "o: DEC increases with INC"
    assert order_violations(rows, orders(within), s)[0]["rows"] == 0
    assert order_violations(rows, orders(across), s)[0]["rows"] > 0
    low_b = {}
    for text in (within, across):
        rel = release(rows, s, eps=20.0, insecure_seed=2, aim=aim, rules=text, progress=False)
        syn = rel.synthesize(4000, seed=1)
        assert order_violations(syn, orders(text), rel.schema)[0]["rows"] == 0
        b = syn[(syn.G == "b") & (syn.INC < 8)]
        low_b[text] = float((b.DEC == "2").mean())
    assert low_b[within] > 0.9 and low_b[across] < 0.75
