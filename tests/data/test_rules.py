"""Consistency rules: parsing, compiling to forbidden cells, sampling that never breaks one, storage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Schema
from ddssp.data.columns import Column
from ddssp.data.rules import (
    MAX_RULES,
    RuleError,
    broken_rows,
    compile_rules,
    load_rules,
    parse_rule,
    parse_rules,
    rule_counts,
)
from ddssp.marginals.model import GraphicalModel
from ddssp.marginals.rules_model import conditioned, sample_under_rules

RULES = """# the NIST excerpts' N is a level
child_MSP: AGEP < 15 -> MSP == N
adult_MSP: AGEP >= 15 -> MSP != N
gq: H > 1 -> NOC == N
kids: NOC != N and NPF != N -> NOC < NPF
"""


def schema() -> Schema:
    return Schema(
        [
            Column.binned("AGEP", [0, 15, 50, 100]),
            Column.categorical("MSP", ["N", "1", "2"]),
            Column.categorical("H", ["1", "2", "3"]),
            Column.categorical("NOC", ["N", "0", "1", "2"]),
            Column.categorical("NPF", ["N", "2", "3"]),
        ]
    )


def every_row(s: Schema) -> pd.DataFrame:
    grids = np.meshgrid(*[np.arange(n) for n in s.domain.values()], indexing="ij")
    return pd.DataFrame({c: g.ravel() for c, g in zip(s.names, grids)})


def by_hand(d: pd.DataFrame) -> np.ndarray:
    """The rules of RULES written out on decoded values."""
    age, msp, h = d.AGEP.astype(float), d.MSP.astype(str), d.H.astype(int)
    noc, npf = d.NOC.astype(str), d.NPF.astype(str)
    both = (noc != "N") & (npf != "N")
    kids = both & (pd.to_numeric(noc, errors="coerce") >= pd.to_numeric(npf, errors="coerce"))
    return (((age < 15) & (msp != "N")) | ((age >= 15) & (msp == "N")) | ((h > 1) & (noc != "N")) | kids).to_numpy()


def test_parse_names_conditions_and_canonical_text():
    r = parse_rule('x: AGEP < 15 and "H H" == "a b" -> MSP == N or MSP == 2')
    assert r.name == "x" and r.columns == ("AGEP", "H H", "MSP")
    assert [str(c) for c in r.when] == ["AGEP < 15", '"H H" == "a b"']
    assert r.text == 'x: AGEP < 15 and "H H" == "a b" -> MSP == N or MSP == 2'
    assert parse_rule(r.text) == r
    assert parse_rule("A == 1 -> B == 2", 7).name == "rule 7"
    assert len(parse_rules(RULES)) == 4


@pytest.mark.parametrize(
    "text, match",
    [
        ("A == 1", "exactly one '->'"),
        ("A == 1 -> B == 2 -> C == 3", "exactly one '->'"),
        ("A = 1 -> B == 2", "cannot read"),
        ("A == 1 or B == 2 -> C == 3", "expected 'and'"),
        ("A == 1 -> B == 2 and C == 3", "expected 'or'"),
        ("A == -> B == 2", "expected COLUMN OP VALUE"),
        ("A == 1 -> ", "expected COLUMN OP VALUE"),
        ("x" * 2000, "characters"),
        (" and ".join(["A == 1"] * 20) + " -> B == 1", "conditions"),
    ],
)
def test_parse_refuses_in_one_line(text, match):
    with pytest.raises(RuleError, match=match) as e:
        parse_rule(text)
    assert "\n" not in str(e.value)


def test_parse_refuses_repeated_names_and_too_many_rules():
    with pytest.raises(RuleError, match="two rules are named 'a'"):
        parse_rules(["a: X == 1 -> Y == 1", "a: X == 2 -> Y == 1"])
    with pytest.raises(RuleError, match="at most"):
        parse_rules([f"X == {i} -> Y == 1" for i in range(MAX_RULES + 1)])


def test_compiled_cells_are_exactly_the_rows_that_break_a_rule():
    s = schema()
    comp = compile_rules(RULES, s)
    rows = every_row(s)
    decoded = s.decode(rows)
    assert np.array_equal(broken_rows(rows, comp), by_hand(decoded))
    counts = {r["rule"]: r["rows"] for r in rule_counts(rows, comp)}
    assert counts["child_MSP"] == int(((decoded.AGEP < 15) & (decoded.MSP.astype(str) != "N")).sum()) > 0


@pytest.mark.parametrize(
    "text, match",
    [
        ("AGEP < 20 -> MSP == N", r"cuts the bin \[15, 50\)"),
        ("AGEP <= 15 -> MSP == N", "cuts the bin"),
        ("AGEP < 15 -> MSP == 7", "has no level '7'"),
        ("AGEP < 15 -> STATE == N", "not in the schema"),
        ("AGEP < 15 -> MSP < x", "not a number"),
        ("AGEP == AGEP -> MSP == N", "is binned"),
        ("AGEP >= 0 -> MSP == 9 or MSP == N and H == 1", "expected 'or'"),
        ("AGEP >= 0 and MSP != N -> MSP == N", None),  # fine: some rows can follow it
        ("AGEP >= 0 -> AGEP < 0", "forbids every combination"),
    ],
)
def test_compile_refuses_rules_that_do_not_fit_the_schema(text, match):
    if match is None:
        assert compile_rules(text, schema())[0].forbidden.any()
        return
    with pytest.raises(RuleError, match=match):
        compile_rules(text, schema())


def test_bin_edges_decide_order_comparisons_exactly():
    s = Schema([Column.binned("A", [0, 10, 20]), Column.categorical("B", ["x", "y"])])
    for rule, forbidden_a0 in [("A < 10 -> B == x", True), ("A >= 10 -> B == x", False), ("A <= 20 -> B == x", True)]:
        f = compile_rules(rule, s)[0].forbidden
        assert f[0, 1] == forbidden_a0 and not f[:, 0].any()
    assert compile_rules("A > 20 -> B == x", s)[0].forbidden.sum() == 0  # the last bin is [10, 20]


def _model(s: Schema, seed: int) -> GraphicalModel:
    rng = np.random.default_rng(seed)
    pots = {
        (a, b): rng.normal(size=(s.domain[a], s.domain[b])) for a, b in [("AGEP", "MSP"), ("H", "NOC"), ("NPF", "H")]
    }
    return GraphicalModel(s.domain, pots, 1000.0)


@pytest.mark.parametrize("method", ["rounded", "iid"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampled_rows_never_break_a_rule(seed, method):
    s = schema()
    comp = compile_rules(RULES, s)
    m = _model(s, seed)
    plain = m.sample(3000, np.random.default_rng(seed), method=method)
    assert broken_rows(plain, comp).any()  # the model alone breaks them
    codes = sample_under_rules(m, comp, 3000, np.random.default_rng(seed), method=method)
    assert len(codes) == 3000 and not broken_rows(codes, comp).any()
    assert not by_hand(s.decode(codes)).any()


def test_conditioned_model_is_the_model_given_no_broken_rule():
    s = schema()
    comp = compile_rules(RULES, s)
    m = _model(s, 3)
    c = conditioned(m, comp)
    rows = every_row(s)
    # the joint of the model, by brute force, restricted to the allowed rows and renormalised
    p = np.ones(len(rows))
    for clique, lp in zip(m.cliques, m.log_potentials):
        p *= np.exp(lp[tuple(rows[a].to_numpy() for a in clique)])
    p[broken_rows(rows, comp)] = 0.0
    p *= m.total / p.sum()
    for cols in [("AGEP", "MSP"), ("NOC", "NPF"), ("H",)]:
        want = rows.assign(p=p).groupby(list(cols))["p"].sum().to_numpy()
        assert np.allclose(c.marginal(cols).ravel(), want, atol=1e-6)


def test_load_rules_errors_are_one_line(tmp_path):
    with pytest.raises(RuleError, match="not found"):
        load_rules(tmp_path / "none.rules")
    f = tmp_path / "bad.rules"
    f.write_bytes(b"\xff\xfe A == 1 -> B == 1")
    with pytest.raises(RuleError, match="cannot read rules file"):
        load_rules(f)
    f.write_text("# comment\n\nok: A == 1 -> B == 2\nA ! 1 -> B == 2\n")
    with pytest.raises(RuleError, match=r"bad.rules: rule 'rule 2': cannot read"):
        load_rules(f)


@pytest.fixture(scope="module")
def ruled(tmp_path_factory):
    """A small release of raw values with declared rules, saved."""
    from ddssp import release

    s = schema()
    rng = np.random.default_rng(5)
    rows = s.decode(pd.DataFrame({c: rng.integers(0, n, 400) for c, n in s.domain.items()}))
    rows = rows[~by_hand(rows)].reset_index(drop=True)  # data that follows the rules
    rel = release(rows, s, eps=1.0, insecure_seed=3, rules=RULES, progress=False)
    path = tmp_path_factory.mktemp("rules") / "r.release"
    rel.save(path)
    return rel, path, rows


def test_release_stores_rules_and_synthetic_rows_follow_them(ruled):
    from ddssp.releasefile import Release

    rel, path, _ = ruled
    assert [r.split(":")[0] for r in rel.rules] == ["child_MSP", "adult_MSP", "gq", "kids"]
    again = Release.load(path)
    assert again.rules == rel.rules
    codes = again.synthesize_codes(2000, seed=1)
    assert not broken_rows(codes, again.compiled_rules()).any()
    assert not by_hand(again.sample(2000, seed=2)).any()
    assert rel.summary()["rules"] == rel.rules


@pytest.mark.parametrize(
    "stored, match",
    [
        ("AGEP < 15 -> MSP == N", "list of at most"),
        ([1, 2], "list of at most"),
        (["AGEP < 20 -> MSP == N"], "cuts the bin"),
        (["AGEP < 15 -> SECRET == 1"], "not in the schema"),
        (["x" * 5000], "characters"),
        (["AGEP < 15 -> MSP == N"] * (MAX_RULES + 1), "list of at most"),
    ],
)
def test_hostile_rules_in_a_release_are_refused_in_one_line(ruled, stored, match):
    from ddssp.errors import ReleaseFileError
    from ddssp.releasefile import Release

    doc, arrays = ruled[0].to_document()
    doc["rules"] = stored
    with pytest.raises(ReleaseFileError, match=match) as e:
        Release.from_document(doc, arrays)
    assert "\n" not in str(e.value)


def test_inspect_shows_rules_and_evaluate_counts_them(ruled, capsys):
    from ddssp import evaluate
    from ddssp.cli import main

    rel, path, rows = ruled
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "rules (4, declared" in out and "kids: NOC != N and NPF != N -> NOC < NPF" in out
    broken = rows.copy()
    broken.loc[:9, "AGEP"] = 5.0
    broken.loc[:9, "MSP"] = "1"
    rep = evaluate(rel, broken, seed=1)
    counts = {r["rule"]: (r["synthetic"], r["data"]) for r in rep.agency["rules"]}
    assert counts["declared child_MSP"] == (0, 10)
    assert all(syn == 0 for syn, _ in counts.values())


def test_cli_refuses_a_bad_rules_file_before_reading_the_data(tmp_path, capsys):
    from ddssp.cli import main

    f = tmp_path / "bad.rules"
    f.write_text("A => 1 -> B == 1\n")
    missing_data = tmp_path / "absent.csv"
    assert main(["release", str(missing_data), "--eps", "1", "--delta", "1e-9", "--rules", str(f)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.rules: rule 'rule 1'" in err[0]


def _loss(model, measurements) -> float:
    return sum(float(np.sum((model.marginal(m.clique) - m.values) ** 2)) / float(m.sigma) ** 2 for m in measurements)


def test_refit_with_the_zeros_fits_the_measurements_better_than_conditioning(ruled):
    """Fitting again with the rules' zeros keeps the measured marginals; conditioning the released
    model moves a forbidden cell's mass to the allowed cells in proportion, which does not."""
    from ddssp.marginals.rules_model import refitted

    rel = ruled[0]
    comp = rel.compiled_rules()
    refit, cond = refitted(rel.model, comp, rel.measurements), conditioned(rel.model, comp)
    rows = every_row(schema())
    for m in (refit, cond):  # both give the forbidden rows no mass
        p = np.ones(len(rows))
        for clique, b in zip(m.cliques, m.beliefs):
            p *= b[tuple(rows[a].to_numpy() for a in clique)] > 0
        assert not (p.astype(bool) & broken_rows(rows, comp)).any()
    assert _loss(refit, rel.measurements) < _loss(cond, rel.measurements)


def test_the_refit_starts_in_float32_ends_in_float64_and_fits_as_a_float64_refit(ruled, monkeypatch):
    """The refit under the rules takes AIM's final fit's two precisions (400 rows: float32's rounding
    of the counts is far below the noise) and fits the measurements as well as a float64-only refit."""
    from ddssp.marginals import aim_settings
    from ddssp.marginals.estimation import MirrorDescentNumpy
    from ddssp.marginals.rules_model import refitted

    rel = ruled[0]
    comp = rel.compiled_rules()
    seen = []
    real = MirrorDescentNumpy.fit_accelerated

    def spy(self, *args, **kw):
        seen.append(np.dtype(kw.get("dtype", np.float64)))
        return real(self, *args, **kw)

    monkeypatch.setattr(MirrorDescentNumpy, "fit_accelerated", spy)
    fast = refitted(rel.model, comp, rel.measurements)
    assert seen == [np.dtype(np.float32), np.dtype(np.float64)]
    seen.clear()
    monkeypatch.setattr(aim_settings, "F32_NOISE_SHARE", 0.0)  # no share of the noise: float64 only
    plain = refitted(rel.model, comp, rel.measurements)
    assert seen == [np.dtype(np.float64)]
    assert all(b.dtype == np.float64 for b in fast.beliefs)
    assert _loss(fast, rel.measurements) <= 1.01 * _loss(plain, rel.measurements)


def test_rules_spanning_too_many_cells_in_all_are_refused():
    big = Schema([Column.categorical(c, [str(i) for i in range(100)]) for c in "ABCD"])
    one = "A == 1 and B == 1 and C == 1 -> D == 1"  # 10^8 cells
    with pytest.raises(RuleError, match="spans 100000000 cells"):
        compile_rules(one, big)
    many = [f"r{i}: A == {i} and B == 1 -> C == 1" for i in range(20)]  # 20 x 10^6 cells
    with pytest.raises(RuleError, match="in all"):
        compile_rules(many, big)


def test_forbidden_mass_is_the_probability_of_a_broken_row_for_one_rule_and_bounds_it_for_many():
    from ddssp.marginals.rules_model import forbidden_mass

    s = schema()
    m = _model(s, 4)
    rows = every_row(s)
    p = np.ones(len(rows))
    for clique, lp in zip(m.cliques, m.log_potentials):
        p *= np.exp(lp[tuple(rows[a].to_numpy() for a in clique)])
    p /= p.sum()
    comp = compile_rules(RULES, s)
    assert forbidden_mass(m, comp[:1]) == pytest.approx(p[broken_rows(rows, comp[:1])].sum(), rel=1e-9)
    assert forbidden_mass(m, comp) >= p[broken_rows(rows, comp)].sum() - 1e-12


def test_the_word_missing_names_the_missing_level():
    s = Schema(
        [Column.binned("AGEP", [0, 15, 100], missing="<missing>"), Column.categorical("MSP", ["1", "2"], missing="?")]
    )
    f = compile_rules("AGEP < 15 -> MSP == missing", s)[0].forbidden
    assert f.tolist() == [[True, True, False], [False, False, False], [False, False, False]]
    with pytest.raises(RuleError, match="has no level 'missing'"):
        compile_rules('AGEP < 15 -> MSP == "missing"', s)  # quoted: a label, and there is none
    with pytest.raises(RuleError, match="has no level 'missing'"):
        compile_rules("AGEP < 15 -> MSP == missing", schema())  # MSP there has no missing level


# declared dependencies: one value of a column per group, the value read from the model


def test_a_dependency_parses_to_its_canonical_text_and_bad_ones_are_refused_in_one_line():
    from ddssp.data.rules import Dependency

    d = parse_rule('dens: DENSITY depends on PUMA and "H H"')
    assert d == Dependency("dens", "DENSITY", ("PUMA", "H H"))
    assert d.text == 'dens: DENSITY depends on PUMA and "H H"' and parse_rule(d.text) == d
    assert d.columns == ("DENSITY", "PUMA", "H H")
    assert parse_rule("A depends on B", 3).name == "rule 3"
    for text, match in [
        ("A depends on", "depends on COLUMN"),
        ("A depends on B or C", "depends on COLUMN"),
        ("A depends on B and", "depends on COLUMN"),
        ("A depends on B C", "depends on COLUMN"),
        ("A depends on A", "named once"),
        ("A depends on B and B", "named once"),
    ]:
        with pytest.raises(RuleError, match=match) as e:
            parse_rule(text)
        assert "\n" not in str(e.value)


def test_dependencies_are_checked_against_the_schema_and_not_compiled_to_cells():
    from ddssp.data.rules import dependencies

    s = schema()
    rules = RULES + "fam: NPF depends on H\n"
    assert len(compile_rules(rules, s)) == 4  # the rules; the dependency's cells come from a model
    assert [d.name for d in dependencies(rules)] == ["fam"]
    with pytest.raises(RuleError, match=r"not in the schema"):
        compile_rules("NPF depends on PUMA", s)


def test_dependency_violations_count_rows_away_from_their_groups_most_common_value():
    from ddssp.data.rules import dependency_violations

    d = parse_rules(["g: D depends on G"])
    rows = pd.DataFrame({"G": [0, 0, 0, 1, 1, 2], "D": [5, 5, 6, 7, 7, 9]})
    assert dependency_violations(rows, d) == [{"rule": "g", "text": "g: D depends on G", "rows": 1, "groups": 1}]
    assert dependency_violations(rows.iloc[3:], d)[0]["rows"] == 0


def test_dependency_zeros_keep_in_each_group_the_level_the_model_holds_most():
    from ddssp.marginals.rules_model import dependency_zeros

    s = schema()
    m = _model(s, 4)
    (comp,) = dependency_zeros(m, parse_rules(["x: NPF depends on AGEP and H"]))
    assert comp.columns == ("AGEP", "H", "NPF")
    joint = m.marginal(comp.columns)
    allowed = ~comp.forbidden
    assert (allowed.sum(axis=2) == 1).all()  # one level of NPF per (AGEP, H)
    assert np.array_equal(np.argmax(allowed, axis=2), np.argmax(joint, axis=2))


@pytest.fixture(scope="module")
def dependent(tmp_path_factory):
    """A release of data in which NPF is a function of H, declared as a dependency, saved."""
    from ddssp import release

    s = schema()
    rng = np.random.default_rng(8)
    codes = pd.DataFrame({c: rng.integers(0, n, 600) for c, n in s.domain.items()})
    codes["NPF"] = codes["H"].map({0: 1, 1: 2, 2: 0})  # H 1 -> NPF 2, H 2 -> NPF 3, H 3 -> N
    rows = s.decode(codes)
    rel = release(rows, s, eps=1.0, insecure_seed=4, rules="fam: NPF depends on H", progress=False)
    path = tmp_path_factory.mktemp("dep") / "d.release"
    rel.save(path)
    return rel, path


def test_a_release_stores_a_dependency_and_every_synthetic_group_holds_the_models_level(dependent, capsys):
    from ddssp.cli import main
    from ddssp.data.rules import dependencies, dependency_violations
    from ddssp.releasefile import Release

    rel, path = dependent
    assert rel.rules == ["fam: NPF depends on H"]
    again = Release.load(path)
    assert again.rules == rel.rules and again.compiled_rules() == []
    plain = rel.model.sample(3000, np.random.default_rng(0), method="rounded")
    assert dependency_violations(plain, dependencies(rel.rules))[0]["rows"] > 0  # the model alone mixes them
    codes = again.synthesize_codes(3000, seed=1)
    assert dependency_violations(codes, dependencies(rel.rules))[0]["rows"] == 0
    level = np.argmax(rel.model.marginal(("H", "NPF")), axis=1)
    assert (codes.groupby("H")["NPF"].first().to_numpy() == level[np.unique(codes["H"])]).all()
    assert main(["inspect", str(path)]) == 0
    assert "fam: NPF depends on H" in capsys.readouterr().out


def test_an_unnamed_rules_canonical_text_reads_back_and_its_release_synthesizes():
    """A rule given without a name is stored as ``rule N: ...``; that text reads back as the same
    rule, so a release with it synthesizes rows that keep it, with a grouping column too (reading
    it back raised before)."""
    import numpy as np
    import pandas as pd

    from ddssp import release
    from ddssp.data import Column, Schema
    from ddssp.data.rules import parse_rule, parse_rules
    from ddssp.pipeline.options import AimOptions

    rule = parse_rule("a == x -> b == u", 3)
    assert str(rule).startswith("rule 3: ") and parse_rules([str(rule)])[0] == rule
    rng = np.random.default_rng(1)
    rows = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 1000), "b": rng.choice(["u", "v"], 1000)})
    rows.loc[rows.a == "x", "b"] = "u"
    schema = Schema([Column.categorical("a", ["x", "y", "z"]), Column.categorical("b", ["u", "v"])])
    rel = release(
        rows, schema, eps=1.0, insecure_seed=1, rules=["a == x -> b == u"], aim=AimOptions(by="a"), progress=False
    )
    syn = rel.synthesize(500, seed=1)
    assert len(syn) == 500 and not ((syn.a == "x") & (syn.b != "u")).any()
