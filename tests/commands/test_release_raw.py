"""`ddssp release DATA --eps E` on a raw table: private schema discovery inside the budget, the default
output path, `ddssp schema --eps`, the draft stamp, fit / synth / predict on a discovered schema,
and bad raw input (one line, nothing written)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.data.discovery import MAX_AUTO_SHARE
from ddssp.dp import cks_delta
from ddssp.releasefile import SCHEMA_NOT_PRIVATE, Release
from tests.commands.test_schema import assert_clean_failure, run_cli
from tests.data.raw_table import make_raw_table


@pytest.fixture(scope="module")
def raw_csv(tmp_path_factory):
    d = tmp_path_factory.mktemp("raw")
    p = d / "people.csv"
    make_raw_table().to_csv(p, index=False)
    return p


@pytest.fixture(scope="module")
def discovered(raw_csv, tmp_path_factory):
    """One release of the raw table made with nothing but --eps (and --na-values)."""
    d = tmp_path_factory.mktemp("rel")
    data = d / "people.csv"
    data.write_bytes(raw_csv.read_bytes())
    rc = main(["release", str(data), "--eps", "2", "--na-values", "?", "--target", "income", "--quiet"])
    assert rc == 0
    out = d / "people.release"
    assert out.exists()
    return out


def test_release_with_only_eps_writes_beside_the_data_and_refuses_to_overwrite(raw_csv, tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_bytes(raw_csv.read_bytes())
    rc, out, err = run_cli(["release", data, "--eps", "1", "--rounds", "8"], capsys)
    assert rc == 0, err
    target = tmp_path / "t.release"
    assert target.exists() and str(target) in out
    assert "discovered 6 column(s) under DP" in err
    rc, out, err = run_cli(["release", data, "--eps", "1"], capsys)
    assert_clean_failure(rc, err, "already exists")
    rc, out, err = run_cli(
        ["release", data, "--eps", "1", "--rounds", "8", "-o", tmp_path / "other.release", "--quiet"], capsys
    )
    assert rc == 0 and (tmp_path / "other.release").exists()


def test_missing_eps_says_what_to_do(raw_csv, tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_bytes(raw_csv.read_bytes())
    rc, out, err = run_cli(["release", data], capsys)
    assert_clean_failure(rc, err, "--eps")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_discovered_release_ledger_inspect_and_post_processing(discovered, capsys):
    rel = Release.load(discovered)
    led = rel.ledger
    assert rel.schema_status == "discovered"
    assert math.isclose(led.spent, led.rho_budget, rel_tol=1e-9)
    assert math.isclose(led.delta_budget + cks_delta(led.rho_budget, rel.eps), rel.delta, rel_tol=1e-6)
    disc = led.discovery_entries
    assert {e.clique[0] for e in disc} == set(rel.schema.names)
    # the given share (0.1), raised for a small table by its noisy row count up to MAX_AUTO_SHARE
    assert 0.1 * led.rho_budget * (1 - 1e-9) <= sum(e.rho for e in disc) <= MAX_AUTO_SHARE * led.rho_budget * (1 + 1e-9)
    rc, out, err = run_cli(["inspect", discovered], capsys)
    assert rc == 0 and "schema: discovered under DP" in out and "discover-keys" in out
    s = json.loads(run_cli(["inspect", discovered, "--json"], capsys)[1])
    assert s["discovery"]["columns"] == sorted(rel.schema.names)
    assert math.isclose(s["discovery"]["rho"] + s["rho_aim"], s["rho_budget"], rel_tol=1e-9)
    # fit names the raw columns; synth decodes to the original labels and units
    rc, out, err = run_cli(["fit", discovered, "--target", "income", "--model", "logistic", "--json"], capsys)
    assert rc == 0, err
    res = json.loads(out)
    assert any(k.startswith("years_education") for k in res["coef"])
    syn = rel.synthesize(2000, seed=0)
    sector = rel.schema.column("sector")
    assert set(syn["sector"].dropna()) <= set(sector.labels) - {"<missing>"}  # missing comes out missing
    assert "Private" in set(syn["sector"])
    codes = rel.synthesize_codes(2000, seed=0)
    for c in rel.schema.columns:
        if c.is_binned:
            v = syn[c.name].to_numpy(dtype=float)
            k = codes[c.name].to_numpy()
            ok = ~np.isnan(v)
            assert np.all((v[ok] >= c.edges[0]) & (v[ok] <= c.edges[-1]))
            # drawn inside the bin of the code (the same codes as without values)
            b = np.clip(np.searchsorted(c.edges, v[ok], side="right") - 1, 0, len(c.edges) - 2)
            assert np.array_equal(b, k[ok])
            # fits and other decodes keep the bins' representative values
            rep = rel.schema.decode(codes)[c.name].dropna().to_numpy(dtype=float)
            assert np.isin(rep, c.values).all()
    # predict on a raw DataFrame encodes through the discovered schema
    from ddssp.estimators import DDSSPLogisticRegression

    est = DDSSPLogisticRegression().fit(rel, target="income")
    raw = make_raw_table(50, seed=3).replace("?", np.nan).drop(columns=["income"])
    p = est.predict(raw)
    assert len(p) == 50


def test_schema_eps_writes_a_dp_schema_that_a_release_pays_for(raw_csv, tmp_path, capsys):
    s_path = tmp_path / "s.json"
    rc, out, err = run_cli(["schema", raw_csv, "--eps", "0.5", "--na-values", "?", "-o", s_path], capsys)
    assert rc == 0, err
    doc = json.loads(s_path.read_text())
    # a noisy row count, then per column a scan and one or two grid counts (how many depends on the
    # noisy scan) or a key release
    entries = doc["discovery"]["entries"]
    assert "draft" not in doc and 13 <= len(entries) <= 19
    assert all(e["kind"] in ("discover-counts", "discover-keys") for e in entries)
    rho_schema = sum(e["rho"] for e in doc["discovery"]["entries"])
    out_rel = tmp_path / "r.release"
    rc, out, err = run_cli(
        [
            "release",
            raw_csv,
            "--schema",
            s_path,
            "--eps",
            "2",
            "--na-values",
            "?",
            "--rounds",
            "8",
            "-o",
            out_rel,
            "--quiet",
        ],
        capsys,
    )
    assert rc == 0, err
    rel = Release.load(out_rel)
    assert rel.schema_status == "discovered"
    assert math.isclose(sum(e.rho for e in rel.ledger.discovery_entries), rho_schema, rel_tol=1e-12)
    assert math.isclose(rel.ledger.spent, rel.ledger.rho_budget, rel_tol=1e-9)
    assert math.isclose(rel.ledger.delta_budget + cks_delta(rel.ledger.rho_budget, 2.0), rel.delta, rel_tol=1e-6)


def test_draft_schema_is_stamped_refused_and_marked_when_accepted(raw_csv, tmp_path, capsys):
    d_path = tmp_path / "draft.json"
    rc, out, err = run_cli(["schema", raw_csv, "-o", d_path], capsys)
    assert rc == 0 and "NOT" in err
    assert "draft" in json.loads(d_path.read_text())
    out_rel = tmp_path / "r.release"
    rc, out, err = run_cli(["release", raw_csv, "--schema", d_path, "--eps", "1", "-o", out_rel], capsys)
    assert_clean_failure(rc, err, "--accept-draft-schema")
    assert not out_rel.exists()
    rc, out, err = run_cli(
        ["release", raw_csv, "--schema", d_path, "--eps", "1", "-o", out_rel, "--rounds", "8", "--accept-draft-schema"],
        capsys,
    )
    assert rc == 0, err
    assert "schema not private" in err
    rel = Release.load(out_rel)
    assert rel.schema_status == SCHEMA_NOT_PRIVATE and not rel.schema_private
    rc, out, err = run_cli(["inspect", out_rel], capsys)
    assert "schema not private" in out
    rc, out, err = run_cli(["fit", out_rel, "--target", "income", "--model", "logistic"], capsys)
    assert rc == 0 and "schema not private" in out


def test_partial_schema_discovers_only_the_rest(raw_csv, tmp_path, capsys):
    s_path = tmp_path / "partial.json"
    s_path.write_text(
        json.dumps(
            {
                "format": "ddssp-schema/1",
                "columns": [
                    {"name": "income", "kind": "categorical", "levels": ["<=50K", ">50K"]},
                    {"name": "years_education", "kind": "numeric", "values": list(range(8, 21))},
                ],
            }
        )
    )
    out_rel = tmp_path / "p.release"
    rc, out, err = run_cli(
        [
            "release",
            raw_csv,
            "--schema",
            s_path,
            "--eps",
            "1",
            "--na-values",
            "?",
            "--rounds",
            "8",
            "-o",
            out_rel,
            "--quiet",
        ],
        capsys,
    )
    assert rc == 0, err
    rel = Release.load(out_rel)
    assert {e.clique[0] for e in rel.ledger.discovery_entries} == {"age", "hours", "gain", "sector"}
    assert rel.schema.column("income").labels == ["<=50K", ">50K"]


BAD = {
    "one_value": lambda n: pd.DataFrame({"a": ["same"] * n, "b": np.arange(n) % 2}),
    "all_missing": lambda n: pd.DataFrame({"a": [""] * n, "b": np.arange(n) % 2}),
    "ids": lambda n: pd.DataFrame({"a": [f"id{i:06d}" for i in range(100_000)], "b": np.arange(100_000) % 2}),
    "mixed": lambda n: pd.DataFrame({"a": [str(i) if i % 2 else f"w{i % 5}" for i in range(n)], "b": np.arange(n) % 2}),
    "header_only": lambda n: pd.DataFrame({"a": [], "b": []}),
}


@pytest.mark.parametrize(
    "kind,match",
    [
        ("one_value", "single value"),
        ("all_missing", "missing (or not applicable)"),
        ("ids", "identifier"),
        ("mixed", "mixes numbers and text"),
        ("header_only", "no rows"),
    ],
)
def test_bad_raw_input_one_line_nothing_written(kind, match, tmp_path, capsys):
    data = tmp_path / "bad.csv"
    BAD[kind](20000).to_csv(data, index=False)
    # --strict: a column discovery cannot resolve refuses the release (by default it is dropped).
    # Seeded noise: with fresh noise a constant text column passes as "one label + <other>" in about
    # 1 of 20 draws (the noisy count of the other labels clears 2 sds), which this test is not about
    rc, out, err = run_cli(["release", data, "--eps", "4", "--strict", "--insecure-seed", "3"], capsys)
    assert_clean_failure(rc, err, match)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


def test_inspect_lists_private_median_entries(tmp_path, capsys):
    # a small table of non-whole numbers takes discovery's private medians: an exponential-mechanism
    # entry with a Gumbel scale and no sigma, which inspect must list like the noisy counts
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame(
        {"a": rng.normal(20, 4, n).round(2), "b": rng.gamma(2, 3, n).round(3), "c": rng.choice(["x", "y"], n)}
    )
    data = tmp_path / "small.csv"
    df.to_csv(data, index=False)
    rel = tmp_path / "small.release"
    rc, out, err = run_cli(["release", data, "--eps", "1", "-o", rel, "--insecure-seed", "1", "--quiet"], capsys)
    assert rc == 0, err
    medians = [e for e in Release.load(rel).ledger.entries if e.kind == "discover-medians"]
    assert medians
    rc, out, err = run_cli(["inspect", rel], capsys)
    assert rc == 0, err
    lines = [ln for ln in out.splitlines() if "discover-medians" in ln]
    assert len(lines) == len(medians)
    assert all(f"Gumbel scale {e.params['scale']:.4g}" in ln for e, ln in zip(medians, lines))
