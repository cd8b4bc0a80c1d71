"""The agency bench (ddssp.bench.agency): the codebook review, the declared bins, the rules a release
keeps, the sub-sample reading, one small run end to end, and (slow, with SDNist installed) SDNist's
own k-marginal beside ddssp's on the MA excerpt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp import bench
from ddssp.bench import agency, agency_report
from ddssp.data import Schema
from ddssp.data.rules import broken_rows, compile_rules
from ddssp.errors import DDSSPError, WorkloadError
from tests.conftest import SHARED_DATA

DICTIONARY = {
    "PUMA": {"description": "area", "values": {"25-00001": "a", "25-00002": "b", "48-00001": "c"}},
    "AGEP": {"description": "age", "values": {"min": 0, "max": 99}},
    "SEX": {"description": "sex", "values": {"1": "m", "2": "f"}},
    "MSP": {"description": "marital", "values": {"N": "child", "1": "married", "6": "never"}},
    "NOC": {"description": "children", "values": {"N": "gq", "0": "none", "min": 1, "max": 19}},
    "DENSITY": {"description": "density", "values": {"min": 16.3, "max": 52864.7}},
}
RULES = "child_MSP: AGEP < 15 -> MSP == N\nadult_MSP: AGEP >= 16 -> MSP != N\ngq_NOC: HOUSING_TYPE > 1 -> NOC == N\n"


def _ctx(tmp_path: Path, **extra) -> bench.BenchContext:
    return bench.BenchContext(spec_path=tmp_path / "s.toml", outdir=tmp_path, quiet=True, extra=extra)


def _spec(**over) -> dict:
    spec = {
        "kind": "agency",
        "dictionary": "d.json",
        "releases": 1,
        "draws": 1,
        "fractions": [0.2, 0.5],
        "features": {"f": ["PUMA", "AGEP", "SEX", "MSP"]},
        "states": [{"name": "A", "source": "a.csv", "puma_prefix": "25-"}],
        "configs": [{"name": "all-pairs", "features": "f", "eps": 1.0}],
    }
    spec.update(over)
    return spec


def test_parse_spec_refuses_bad_entries(tmp_path):
    ctx = _ctx(tmp_path)
    assert agency.parse_spec(_spec(), ctx)["configs"][0]["rules"] is True
    with pytest.raises(WorkloadError, match="unknown key"):
        agency.parse_spec(_spec(colour=1), ctx)
    with pytest.raises(WorkloadError, match="features must name"):
        agency.parse_spec(_spec(configs=[{"name": "x", "features": "g", "eps": 1.0}]), ctx)
    with pytest.raises(WorkloadError, match="eps must be positive"):
        agency.parse_spec(_spec(configs=[{"name": "x", "features": "f", "eps": 0}]), ctx)
    with pytest.raises(WorkloadError, match="fractions"):
        agency.parse_spec(_spec(fractions=[1.5]), ctx)
    with pytest.raises(WorkloadError, match="bins must name"):
        agency.parse_spec(_spec(configs=[{"name": "x", "features": "f", "eps": 1.0, "bins": "no"}]), ctx)
    assert agency.parse_spec(_spec(), _ctx(tmp_path, sdnist_python="/x/python"))["sdnist_python"] == "/x/python"
    with pytest.raises(WorkloadError, match="dependent = true needs by"):
        agency.parse_spec(_spec(configs=[{"name": "x", "features": "f", "eps": 1.0, "dependent": True}]), ctx)
    dep = {"name": "x", "features": "f", "eps": 1.0, "by": "PUMA", "dependent": True}
    assert agency.parse_spec(_spec(configs=[dep]), ctx)["configs"][0]["dependent"] is True


def test_review_keeps_the_states_pumas_and_leaves_declared_bins_to_the_schema():
    codebook = {
        "format": "ddssp-codebook/1",
        "columns": [
            {"name": "PUMA", "kind": "categorical", "levels": ["25-00001", "25-00002", "48-00001"]},
            {"name": "AGEP", "kind": "numeric", "bounds": [0, 99], "whole": True},
            {"name": "SEX", "kind": "categorical", "levels": ["1", "2"]},
            {"name": "INDP", "description": "industry"},
        ],
    }
    out = agency.review_codebook(codebook, ["PUMA", "AGEP", "SEX"], "25-", ("AGEP",))
    assert [c["name"] for c in out["columns"]] == ["PUMA", "SEX"]
    assert out["columns"][0]["levels"] == ["25-00001", "25-00002"]
    with pytest.raises(WorkloadError, match="no PUMA level"):
        agency.review_codebook(codebook, ["PUMA"], "99-")
    # an excerpt of several states lists their prefixes: the other states' PUMAs stay out
    several = agency.review_codebook(codebook, ["PUMA"], ["48-", "25-"])
    assert several["columns"][0]["levels"] == ["25-00001", "25-00002", "48-00001"]
    assert agency.review_codebook(codebook, ["PUMA"], ["48-"])["columns"][0]["levels"] == ["48-00001"]


def test_a_state_entry_takes_one_prefix_or_a_list_of_them(tmp_path):
    ctx = _ctx(tmp_path)
    us = {"name": "US", "source": "us.csv", "puma_prefix": ["01-", "06-"]}
    assert agency.parse_spec(_spec(states=[us]), ctx)["states"][0]["puma_prefix"] == ["01-", "06-"]
    for bad in ([], ["01-", 6], [""], 25):
        with pytest.raises(WorkloadError, match="puma_prefix"):
            agency.parse_spec(_spec(states=[{**us, "puma_prefix": bad}]), ctx)


def test_a_quantiles_recipe_leaves_its_columns_to_the_release_as_codebook_fields(tmp_path):
    from ddssp.data.dictionary import load_codebook

    codebook = {
        "format": "ddssp-codebook/1",
        "columns": [
            {"name": "AGEP", "kind": "numeric", "bounds": [0, 99], "whole": True},
            {"name": "PINCP", "kind": "numeric", "bounds": [-9000, 1341000], "whole": True, "missing": "N"},
            {"name": "POVPIP", "kind": "numeric", "bounds": [0, 501], "whole": True, "missing": "N"},
        ],
    }
    cols = ["AGEP", "PINCP", "POVPIP"]
    spec = _spec(bins={"q": {"quantiles": True}, "a": {"quantiles": ["AGEP"]}})
    recipes = agency.parse_spec(spec, _ctx(tmp_path))["bins"]
    assert agency.binned_columns(cols, recipes["q"]) == ()
    assert agency.binned_columns(cols, recipes["a"]) == ("PINCP", "POVPIP")  # declared edges as before
    out = agency.review_codebook(codebook, cols, "25-", (), None, agency.quantile_hints(recipes["q"]))
    by = {c["name"]: c for c in out["columns"]}
    assert by["AGEP"]["bins"] == 20 and by["AGEP"]["cuts"] == [3, 5, 15, 16, 18]  # the ages the rules name
    assert by["PINCP"]["step"] == 1000 and by["POVPIP"]["bins"] == 20 and "points" not in by["POVPIP"]
    (tmp_path / "cb.json").write_text(json.dumps(out))
    assert load_codebook(tmp_path / "cb.json").get("PINCP").step == 1000.0  # a codebook the release reads
    assert "bins" not in codebook["columns"][0]  # the codebook as written is left alone
    with pytest.raises(WorkloadError, match="quantiles"):
        agency.parse_spec(_spec(bins={"r": {"quantiles": ["NOC"]}}), _ctx(tmp_path))


def test_reviewed_ranges_top_code_the_counts_as_codebook_bounds(tmp_path):
    codebook = {
        "format": "ddssp-codebook/1",
        "columns": [{"name": "NOC", "kind": "numeric", "bounds": [0, 19], "whole": True, "missing": "N"}],
    }
    recipe = agency.parse_spec(_spec(), _ctx(tmp_path))["bins"]["topcoded-range"]
    assert agency.binned_columns(["NOC"], recipe) == ()  # a range, not declared bins
    out = agency.review_codebook(codebook, ["NOC"], "25-", (), recipe["ranges"])
    assert out["columns"] == [{"name": "NOC", "kind": "numeric", "bounds": [0, 10], "whole": True, "missing": "N"}]
    assert codebook["columns"][0]["bounds"] == [0, 19]  # the codebook as written is left alone
    with pytest.raises(WorkloadError, match="ranges"):
        agency.parse_spec(_spec(bins={"r": {"ranges": {"NOC": [5, 1]}}}), _ctx(tmp_path))


def test_declared_bins_carry_the_rules_thresholds_and_spread_ages_evenly():
    cols = ["PUMA", "AGEP", "MSP", "NOC", "DENSITY"]
    recipe = dict(agency.DEFAULT_BINS)
    d = agency.bins_schema(cols, recipe, DICTIONARY)
    by = {c["name"]: c for c in d["columns"]}
    assert set(by) == {"AGEP", "DENSITY"}
    assert by["AGEP"]["edges"][:6] == [0, 3, 5, 10, 15, 16]
    # each age bin's values are spread over the whole numbers inside it, equally
    first = by["AGEP"]["within"]["bins"][0]
    assert first["cuts"] == [1, 2] and first["weights"] == [1.0, 1.0, 1.0]
    assert by["AGEP"]["within"]["bins"][4] is None  # [15, 16) holds one age
    assert by["DENSITY"]["edges"] == agency.density_edges(DICTIONARY)
    assert "missing" not in by["AGEP"]
    # with MSP declared (as the codebook would), the rules compile against the bins
    schema = Schema.from_dict(
        {
            "format": "ddssp-schema/1",
            "columns": d["columns"]
            + [{"name": "MSP", "kind": "categorical", "levels": ["1", "6", "N"], "missing": "N"}],
        }
    )
    assert len(compile_rules("AGEP < 15 -> MSP == N\nAGEP >= 16 -> MSP != N", schema)) == 2
    # a threshold inside a bin is refused, which is why the recipe puts an edge at 15 and 16
    with pytest.raises(DDSSPError):
        compile_rules("AGEP < 12 -> MSP == N", schema)
    # a top-coded count decodes to each bin's lowest value and keeps N as its missing level
    counts = agency.bins_schema(["NOC"], {**recipe, "NOC": [0, 1, 2, 5, 20]}, DICTIONARY)["columns"][0]
    assert counts["values"] == [0, 1, 2, 5] and counts["missing"] == "N" and "within" not in counts
    none = agency.bins_schema(["AGEP"], {**recipe, "within": "none"}, DICTIONARY)["columns"][0]
    assert "within" not in none


def test_rules_for_keeps_the_rules_whose_columns_are_released():
    out = agency.rules_for("# comment\n" + RULES, ["AGEP", "MSP", "NOC"])
    assert out.splitlines() == ["child_MSP: AGEP < 15 -> MSP == N", "adult_MSP: AGEP >= 16 -> MSP != N"]


def test_like_a_subsample_interpolates_between_fractions():
    curve = [(0.1, 800.0), (0.2, 900.0), (0.5, 950.0)]
    assert agency_report._like(curve, 850.0) == "15%"
    assert agency_report._like(curve, 700.0) == "< 10%"
    assert agency_report._like(curve, 975.0) == "75%"  # between 50% and the whole data (1000)


def _excerpt(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 90, n)
    msp = np.where(age < 15, "N", rng.choice(["1", "6"], n))
    msp = np.where((age == 15) & (rng.random(n) < 0.5), "6", msp)
    return pd.DataFrame(
        {
            "PUMA": rng.choice(["25-00001", "25-00002"], n),
            "AGEP": age,
            "SEX": rng.choice(["1", "2"], n),
            "MSP": msp,
        }
    )


def test_a_small_run_scores_releases_beside_subsamples_and_breaks_no_rule(tmp_path, monkeypatch):
    monkeypatch.delenv("DDSSP_SDNIST_PYTHON", raising=False)  # ddssp's scores only
    (tmp_path / "d.json").write_text(json.dumps(DICTIONARY))
    (tmp_path / "r.rules").write_text(RULES)
    _excerpt(400, 1).to_csv(tmp_path / "a.csv", index=False)
    ctx = bench.BenchContext(spec_path=tmp_path / "s.toml", outdir=tmp_path / "out", quiet=True, seed=3)
    ctx.outdir.mkdir()
    res = agency.run(_spec(rules="r.rules"), ctx)
    rel = res[res["method"] == "all-pairs"].set_index("metric")["value"]
    assert rel["ok"] == 1.0
    assert rel["rule_violations"] == 0.0
    assert 0.0 < rel["kmarginal"] <= 1000.0 and rel["worst_puma"] <= rel["kmarginal"] + 1e-9
    sub = res[res["method"] == "subsample"]
    assert sorted(sub["fraction"].unique()) == [0.2, 0.5]
    assert set(sub["metric"]) == {"kmarginal", "kmarginal_plain", "worst_puma"}
    # the release was made from the reviewed codebook: the other state's PUMA is not a level
    cb = json.loads((ctx.outdir / "files" / "A-f-all-pairs-e1.codebook.json").read_text())
    assert [c["levels"] for c in cb["columns"] if c["name"] == "PUMA"] == [["25-00001", "25-00002"]]
    syn = pd.read_csv(ctx.outdir / "files" / "A-f-all-pairs-e1-0.csv", dtype=str, keep_default_na=False)
    assert len(syn) == 400 and set(syn["PUMA"]) <= {"25-00001", "25-00002"}
    age = syn["AGEP"].astype(int)
    assert (syn.loc[age < 15, "MSP"] == "N").all() and (syn.loc[age >= 16, "MSP"] != "N").all()
    assert "| A | f | 1 | all-pairs | 1 |" in (ctx.outdir / "results.md").read_text()


@pytest.mark.slow
def test_sdnist_and_ddssp_kmarginal_agree_on_a_subsample_of_the_ma_excerpt(tmp_path):
    python = os.environ.get("DDSSP_SDNIST_PYTHON")
    data = SHARED_DATA / "nist" / "ma2019.csv"
    if not python or not data.exists():
        pytest.skip("set DDSSP_SDNIST_PYTHON (a python with sdnist==2.4) and DDSSP_SHARED_DATA (with nist/)")
    dict_path = SHARED_DATA / "nist" / "data_dictionary.json"
    cols = ["PUMA", "AGEP", "SEX", "MSP", "RAC1P", "NOC", "NPF", "DENSITY", "PINCP", "POVPIP"]
    full = pd.read_csv(data, dtype=str, keep_default_na=False)[cols]
    target, sub = tmp_path / "t.csv", tmp_path / "s.csv"
    full.to_csv(target, index=False)
    full.sample(frac=0.2, random_state=1).to_csv(sub, index=False)
    (r,) = agency.sdnist_scores(python, target, dict_path, [sub], False)
    dictionary = json.loads(dict_path.read_text())
    (ours,) = agency.ddssp_scores(target, [sub], {"DENSITY": agency.density_edges(dictionary)})
    assert abs(r["score_grouped"] - ours["kmarginal"]) < 1.0
    assert abs(r["score"] - ours["kmarginal_plain"]) < 1.0


def test_the_topcoded_rules_forbid_exactly_too_many_children():
    """Written per count, the rules break a row exactly when NOC >= NPF (both applicable), as SDNist's
    too_many_children; N on either side breaks none of them."""
    spec_dir = Path(__file__).resolve().parents[2] / "workloads"
    text = (spec_dir / "agency-nist-topcoded.rules").read_text()
    dictionary = {
        "NOC": DICTIONARY["NOC"],
        "NPF": {"description": "persons", "values": {"N": "gq", "min": 2, "max": 20}},
    }
    recipe = {**agency.DEFAULT_BINS, **agency.TOPCODED_COUNTS}
    schema = Schema.from_dict(
        {"format": "ddssp-schema/1", "columns": agency.bins_schema(["NOC", "NPF"], recipe, dictionary)["columns"]}
    )
    compiled = compile_rules(agency.rules_for(text, ["NOC", "NPF"]), schema)
    assert len(compiled) == 10
    noc, npf = schema.column("NOC"), schema.column("NPF")
    grid = pd.DataFrame([(i, j) for i in range(noc.size) for j in range(npf.size)], columns=["NOC", "NPF"])
    broken = broken_rows(grid, compiled)
    v_noc = np.array([noc.values[i] if i < len(noc.values) else np.nan for i in grid["NOC"]], dtype=float)
    v_npf = np.array([npf.values[j] if j < len(npf.values) else np.nan for j in grid["NPF"]], dtype=float)
    expected = ~np.isnan(v_noc) & ~np.isnan(v_npf) & (v_noc >= v_npf)
    assert expected.any() and (broken == expected).all()


def test_the_round5_rules_are_round4s_and_the_dictionarys_density_dependency():
    from ddssp.data.rules import Dependency, parse_rules

    spec_dir = Path(__file__).resolve().parents[2] / "workloads"
    round4 = parse_rules((spec_dir / "agency-nist-topcoded.rules").read_text())
    round5 = parse_rules((spec_dir / "agency-nist-round5.rules").read_text())
    assert round5 == [*round4, Dependency("density_by_puma", "DENSITY", ("PUMA",))]
    text = (spec_dir / "agency-nist-round5.rules").read_text()
    assert "depends on" not in agency.rules_for(text, ["PUMA", "AGEP", "MSP"])  # DENSITY not released
    assert "DENSITY depends on PUMA" in agency.rules_for(text, ["PUMA", "DENSITY"])


def test_the_grouped_workload_asks_for_a_column_fixed_by_the_group_only_with_the_group():
    from ddssp.marginals.workload import grouped_pairs
    from ddssp.pipeline.plan import build_workload

    domain = {"PUMA": 3, "AGEP": 4, "DENSITY": 3, "SEX": 2, "MSP": 3}
    w = [c for c, _ in grouped_pairs(domain, "PUMA", fixed=["DENSITY", "NOPE"])]
    assert w == [("PUMA", "AGEP", "SEX"), ("PUMA", "AGEP", "MSP"), ("PUMA", "SEX", "MSP"), ("PUMA", "DENSITY")]
    assert len(grouped_pairs(domain, "PUMA")) == 6  # no dependency: every triple (PUMA, a, b)
    assert [c for c, _ in grouped_pairs({"PUMA": 3, "DENSITY": 2}, "PUMA", fixed=["DENSITY"])] == [("PUMA", "DENSITY")]
    built = build_workload("all-pairs", domain, None, by="PUMA", fixed=["DENSITY"])
    assert [tuple(c) for c, _ in built] == w[:3] + [("PUMA", "DENSITY")]


def test_a_release_by_group_reads_the_rules_dependency_on_the_group_into_its_workload():
    from ddssp import release
    from ddssp.data.columns import Column
    from ddssp.pipeline.options import AimOptions

    rng = np.random.default_rng(2)
    puma = rng.choice(["p1", "p2", "p3"], 2000)
    rows = pd.DataFrame(
        {
            "PUMA": puma,
            "DENSITY": np.select([puma == "p1", puma == "p2"], ["lo", "mid"], "hi"),
            "SEX": rng.choice(["1", "2"], 2000),
            "MSP": rng.choice(["1", "2", "3"], 2000),
        }
    )
    schema = Schema([Column.categorical(c, sorted(rows[c].unique())) for c in rows.columns])
    rules = "density_by_puma: DENSITY depends on PUMA"
    rel = release(rows, schema, eps=1.0, insecure_seed=1, aim=AimOptions(by="PUMA"), rules=rules, progress=False)
    cliques = {tuple(sorted(c)) for c, _ in rel.workload}
    assert cliques == {("MSP", "PUMA", "SEX"), ("DENSITY", "PUMA")}
    plain = release(rows, schema, eps=1.0, insecure_seed=1, aim=AimOptions(by="PUMA"), progress=False)
    assert len(plain.workload) == 3  # without the declaration: every triple (PUMA, a, b)


def _nist_schema(agep_edges: list[float], povpip_edges: list[float] | None = None) -> Schema:
    """The 21 released columns as the agency recipe declares them, AGEP binned at ``agep_edges``
    (and POVPIP at ``povpip_edges``, else the default recipe's)."""
    from ddssp.data.columns import Column

    def cat(name, levels):
        return Column.categorical(name, [str(x) for x in levels])

    bins = agency.DEFAULT_BINS
    return Schema(
        [
            cat("PUMA", ["25-00503", "25-00703"]),
            Column.binned("AGEP", agep_edges),
            cat("SEX", [1, 2]),
            cat("MSP", [1, 2, 3, 4, 5, 6, "N"]),
            cat("HISP", range(5)),
            cat("RAC1P", range(1, 10)),
            cat("NOC", [*range(11), "N"]),
            cat("NPF", [*range(2, 15), "N"]),
            cat("HOUSING_TYPE", [1, 2, 3]),
            cat("OWN_RENT", [0, 1, 2]),
            cat("DENSITY", ["a", "b"]),
            cat("INDP_CAT", [*range(19), "N"]),
            cat("EDU", [*range(1, 13), "N"]),
            Column.binned("PINCP", bins["PINCP"], missing="N"),
            cat("PINCP_DECILE", [*range(9, -1, -1), "N"]),
            Column.binned("POVPIP", povpip_edges or bins["POVPIP"], missing="N"),
            *[cat(c, [1, 2, 3, 4, 5, 6, "N"] if c == "DVET" else [1, 2, "N"]) for c in ("DVET", "DREM", "DPHY")],
            cat("DEYE", [1, 2]),
            cat("DEAR", [1, 2]),
        ]
    )


def test_the_round8_rules_add_the_universes_and_the_deciles_order_and_fit_both_recipes_bins():
    from ddssp.data.orders import Order
    from ddssp.data.rules import Rule, orders, parse_rules

    spec_dir = Path(__file__).resolve().parents[2] / "workloads"
    text = (spec_dir / "agency-nist-round8.rules").read_text()
    round5 = {r.name: r for r in parse_rules((spec_dir / "agency-nist-round5.rules").read_text())}
    round8 = {r.name: r for r in parse_rules(text)}
    assert set(round8) == set(round5) | {"institution_POVPIP", "decile_of_income"}
    changed = {n for n in round5 if round8[n] != round5[n]}
    assert changed == {"child_DVET", "child_INDP_CAT", "adult_MSP", "adult_PINCP", "adult_PINCP_DECILE"}
    assert orders(text) == [Order("decile_of_income", "PINCP_DECILE", "PINCP")]
    rules = [r for r in round8.values() if isinstance(r, Rule)]
    # the eps-1 recipe's round-number ages, and quantile ages that keep only the hints' cuts
    cuts = agency.QUANTILE_HINTS["AGEP"]["cuts"]
    for edges in (agency.DEFAULT_BINS["AGEP"], sorted({0, 100, 9, 24, 41, 63, *cuts})):
        assert len(compile_rules(text, _nist_schema(edges))) == len(rules)
    with pytest.raises(DDSSPError, match="18"):  # without an edge at 18 the DVET rule is refused
        compile_rules(text, _nist_schema([0, 3, 5, 15, 16, 20, 100]))


def test_round10_changes_only_the_eps1_poverty_bins_and_the_rules_still_compile(tmp_path):
    import tomllib

    spec_dir = Path(__file__).resolve().parents[2] / "workloads"
    spec = agency.parse_spec(tomllib.loads((spec_dir / "agency-nist-round10.toml").read_text()), _ctx(tmp_path))
    by_eps = {c["eps"]: spec["bins"][c["bins"]] for c in spec["configs"]}
    assert sorted(by_eps) == [1.0, 10.0]
    eps1, builtin = by_eps[1.0], spec["bins"]["topcoded-range"]
    # round 8's eps-1 recipe (topcoded-range) but for POVPIP, which is cut more coarsely
    assert {k: v for k, v in eps1.items() if k != "POVPIP"} == {k: v for k, v in builtin.items() if k != "POVPIP"}
    assert len(eps1["POVPIP"]) < len(builtin["POVPIP"])
    assert eps1["POVPIP"][-2:] == builtin["POVPIP"][-2:]  # the top-code 501 stays a bin of its own
    # the eps-10 recipe still leaves POVPIP to the release's quantile bins
    assert "POVPIP" in agency.quantile_hints(by_eps[10.0])
    dictionary = {**DICTIONARY, "POVPIP": {"description": "ratio", "values": {"N": "gq", "min": 0, "max": 501}}}
    col = {c["name"]: c for c in agency.bins_schema(["POVPIP"], eps1, dictionary)["columns"]}["POVPIP"]
    assert col["missing"] == "N"
    edges = col["edges"]
    for (lo, hi), within in zip(zip(edges[:-1], edges[1:]), col["within"]["bins"]):
        # each bin's values spread evenly over the whole numbers inside it (the top-code is one)
        cuts = [] if within is None else within["cuts"]
        assert cuts == [float(x) for x in range(int(lo) + 1, int(hi))]
        assert within is None or set(within["weights"]) == {1.0}
    rules = (spec_dir / spec["rules"]).read_text()
    n_rules = len(compile_rules(rules, _nist_schema(agency.DEFAULT_BINS["AGEP"])))
    assert len(compile_rules(rules, _nist_schema(agency.DEFAULT_BINS["AGEP"], edges))) == n_rules


def test_round11_rules_are_round8s_with_the_deciles_order_inside_each_puma():
    from ddssp.data.orders import Order
    from ddssp.data.rules import orders, parse_rules

    spec_dir = Path(__file__).resolve().parents[2] / "workloads"
    round8 = {r.name: r for r in parse_rules((spec_dir / "agency-nist-round8.rules").read_text())}
    text = (spec_dir / "agency-nist-round11.rules").read_text()
    round11 = {r.name: r for r in parse_rules(text)}
    assert set(round11) == set(round8)
    assert {n for n in round8 if round11[n] != round8[n]} == {"decile_of_income"}
    assert orders(text) == [Order("decile_of_income", "PINCP_DECILE", "PINCP", "PUMA")]
    assert len(compile_rules(text, _nist_schema(agency.DEFAULT_BINS["AGEP"]))) == len(
        compile_rules((spec_dir / "agency-nist-round8.rules").read_text(), _nist_schema(agency.DEFAULT_BINS["AGEP"]))
    )


def test_round11_spec_is_round10s_with_the_round11_rules_and_by_puma(tmp_path):
    import tomllib

    spec_dir = Path(__file__).resolve().parents[2] / "workloads"
    r10 = agency.parse_spec(tomllib.loads((spec_dir / "agency-nist-round10.toml").read_text()), _ctx(tmp_path))
    r11 = agency.parse_spec(tomllib.loads((spec_dir / "agency-nist-round11.toml").read_text()), _ctx(tmp_path))
    assert r11["rules"] == "agency-nist-round11.rules" and r10["rules"] == "agency-nist-round8.rules"
    assert [(c["eps"], c["by"], r11["bins"][c["bins"]]) for c in r11["configs"]] == [
        (c["eps"], c["by"], r10["bins"][c["bins"]]) for c in r10["configs"]
    ]
    assert r11["states"] == r10["states"]
