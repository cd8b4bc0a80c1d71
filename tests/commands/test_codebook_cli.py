"""`--codebook`, `--bounds`, `--levels`, `--missing` and `ddssp schema --from-dictionary` from the CLI:
declared columns cost nothing, a codebook round trip, and every bad dictionary or hint is one
'ddssp: error:' line naming the flag, non-zero exit, no traceback."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ddssp.releasefile import Release
from tests.commands.test_schema import assert_clean_failure, run_cli

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")

NIST = {
    "SEX": {"description": "sex", "values": {"1": "Male", "2": "Female"}},
    "MSP": {"values": {"N": "N/A", "1": "married", "6": "never"}},
    "NOC": {"values": {"N": "N/A", "0": "none", "min": 1, "max": 5}},
    "AGEP": {"values": {"min": 0, "max": 99}},
    "PWGTP": {"values": {"min": 1, "max": 9999}},
}


@pytest.fixture()
def nist(tmp_path):
    """A small table of NIST-style codes (N = not applicable) and its dictionary."""
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame(
        {
            "SEX": rng.choice(["1", "2"], n),
            "MSP": rng.choice(["1", "6", "N"], n),
            "NOC": rng.choice(["N", "0", "1", "2", "3"], n),
            "AGEP": rng.integers(0, 99, n),
        }
    )
    data = tmp_path / "data.csv"
    df.to_csv(data, index=False)
    d = tmp_path / "dictionary.json"
    d.write_text(json.dumps(NIST))
    return data, d


def _release(argv, capsys):
    return run_cli(["release", *argv, "--eps", "1", "--rounds", "8", "--insecure-seed", "0", "--quiet"], capsys)


def test_from_dictionary_writes_a_reviewable_codebook_without_data(tmp_path, capsys):
    d = tmp_path / "dictionary.json"
    d.write_text(json.dumps(NIST))
    out = tmp_path / "codebook.json"
    rc, _, err = run_cli(["schema", "--from-dictionary", d, "-o", out], capsys)
    assert rc == 0, err
    text = out.read_text()
    cols = json.loads(text)["columns"]
    assert json.loads(text)["format"] == "ddssp-codebook/1"
    assert len(text.splitlines()) == len(cols) + 5  # one line per column
    by = {c["name"]: c for c in cols}
    assert by["NOC"] == {"name": "NOC", "kind": "numeric", "bounds": [0, 5], "whole": True, "missing": "N"}
    assert by["MSP"]["levels"] == ["1", "6"] and by["MSP"]["missing"] == "N"
    assert "5 columns" in err and "3 declared whole (free), 2 with bounds" in err


def test_codebook_release_declares_every_column_and_spends_nothing_on_discovery(nist, tmp_path, capsys):
    data, d = nist
    cb = tmp_path / "cb.json"
    assert run_cli(["schema", "--from-dictionary", d, "-o", cb, "--bounds", "AGEP=0:20"], capsys)[0] == 0
    rel_path = tmp_path / "r.release"
    rc, _, err = _release([data, "--codebook", cb, "-o", rel_path], capsys)
    assert rc == 0, err
    rel = Release.load(rel_path)
    assert rel.ledger.discovery_entries == []
    assert rel.schema.column("SEX").labels == ["1", "2"]
    assert rel.schema.column("MSP").labels == ["1", "6", "N"]
    assert rel.schema.column("NOC").labels == ["0", "1", "2", "3", "4", "5", "N"]
    assert rel.schema.column("AGEP").labels == [str(i) for i in range(21)]  # the flag won over the file
    # synthetic rows write the not-applicable code back as N
    syn = tmp_path / "s.csv"
    assert run_cli(["synth", rel_path, "--rows", "200", "--seed", "1", "-o", syn, "--allow-insecure"], capsys)[0] == 0
    out = next(tmp_path.glob("s*.csv"))
    written = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert set(written["MSP"]) <= {"1", "6", "N"}


def test_bounds_and_levels_flags_in_a_release(nist, tmp_path, capsys):
    data, _ = nist
    rel_path = tmp_path / "r.release"
    rc, _, err = _release(
        [data, "--bounds", "AGEP=0:120", "--levels", "SEX=1,2", "--levels", "MSP=1,6,N", "-o", rel_path], capsys
    )
    assert rc == 0, err
    rel = Release.load(rel_path)
    charged = {e.clique[0] for e in rel.ledger.discovery_entries if "row count" not in (e.note or "")}
    assert charged == {"AGEP", "NOC"}
    age = rel.schema.column("AGEP")
    assert age.bounds == (0.0, 120.0) and age.edges[0] == 0 and age.edges[-1] == 120
    assert not any("scan" in (e.note or "") for e in rel.ledger.discovery_entries if e.clique == ("AGEP",))


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--bounds", "AGEP=0-99"], "--bounds: expected COLUMN=LOW:HIGH"),
        (["--bounds", "AGE=0:99"], "--bounds 'AGE'"),
        (["--levels", "SEX="], "--levels: expected COLUMN=A,B"),
        (["--levels", "SX=1,2"], "--levels 'SX'"),
        (["--missing", "MSP"], "--missing: expected COLUMN="),
        (["--bounds", "AGEP=9:1"], "low < high"),
    ],
)
def test_bad_hints_fail_in_one_line(nist, tmp_path, capsys, flags, match):
    data, _ = nist
    rc, _, err = _release([data, *flags, "-o", tmp_path / "r.release"], capsys)
    assert_clean_failure(rc, err, match)
    assert not (tmp_path / "r.release").exists()


@pytest.mark.parametrize(
    "text, match",
    [("{oops", "not valid JSON"), ('{"a": 1}', "none of the formats"), ('{"A": {"values": {"min": 3}}}', "min")],
)
def test_bad_codebook_fails_in_one_line(nist, tmp_path, capsys, text, match):
    data, _ = nist
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    rc, _, err = _release([data, "--codebook", bad, "-o", tmp_path / "r.release"], capsys)
    assert_clean_failure(rc, err, match)
    rc, _, err = run_cli(["schema", "--from-dictionary", bad, "-o", tmp_path / "cb.json"], capsys)
    assert_clean_failure(rc, err, match)
    assert not (tmp_path / "cb.json").exists()


def test_a_dictionary_given_as_a_schema_points_to_codebook(nist, tmp_path, capsys):
    data, d = nist
    rc, _, err = _release([data, "--schema", d, "-o", tmp_path / "r.release"], capsys)
    assert_clean_failure(rc, err, "pass it with --codebook")


def test_a_schema_given_as_a_codebook_points_to_schema(nist, tmp_path, capsys):
    """A ddssp schema given as --codebook is refused in one line that says to pass it as --schema (it
    declares the columns, a codebook only hints), before anything is written."""
    data, _ = nist
    schema = tmp_path / "s.schema.json"
    schema.write_text(
        json.dumps(
            {"format": "ddssp-schema/1", "columns": [{"name": "SEX", "kind": "categorical", "levels": ["1", "2"]}]}
        )
    )
    rc, _, err = _release([data, "--codebook", schema, "-o", tmp_path / "r.release"], capsys)
    assert_clean_failure(rc, err, f"pass it as --schema {schema}")
    assert not (tmp_path / "r.release").exists()


def test_from_dictionary_takes_no_data(nist, tmp_path, capsys):
    data, d = nist
    rc, _, err = run_cli(["schema", data, "--from-dictionary", d, "-o", tmp_path / "cb.json"], capsys)
    assert_clean_failure(rc, err, "reads no data")
    rc, _, err = run_cli(["schema", "-o", tmp_path / "x.json"], capsys)
    assert_clean_failure(rc, err, "give DATA")


def test_schema_eps_with_a_codebook_records_only_the_discovered_columns(nist, tmp_path, capsys):
    data, d = nist
    out = tmp_path / "s.json"
    rc, _, err = run_cli(["schema", data, "--eps", "1", "--codebook", d, "-o", out], capsys)
    assert rc == 0, err
    doc = json.loads(out.read_text())
    assert [c["name"] for c in doc["columns"]] == ["SEX", "MSP", "NOC", "AGEP"]
    charged = {e["clique"][0] for e in doc["discovery"]["entries"] if "row count" not in e.get("note", "")}
    assert charged == {"AGEP"}


@pytest.mark.slow
def test_nist_codebook_round_trip_scores_every_feature_as_written(tmp_path, capsys):
    """The MA excerpt released with its reviewed dictionary: SDNist 2.4's own k-marginal scores the
    synthetic file as written (no post-processing) on every feature."""
    import subprocess

    from tests.conftest import SHARED_DATA
    from tests.test_agency_sdnist import DRIVER, _sdnist_python

    nist = SHARED_DATA / "nist"
    if not (nist / "ma2019.csv").exists():
        pytest.skip(f"NIST excerpts not found at {nist}")
    exe = _sdnist_python()
    features = "PUMA,AGEP,SEX,MSP,HISP,RAC1P,HOUSING_TYPE,OWN_RENT,EDU,PINCP_DECILE"
    full, cb = tmp_path / "full.json", tmp_path / "cb.json"
    assert run_cli(["schema", "--from-dictionary", nist / "data_dictionary.json", "-o", full], capsys)[0] == 0
    doc = json.loads(full.read_text())
    for c in doc["columns"]:  # the review: the extract is Massachusetts (public), keep its PUMAs
        if c["name"] == "PUMA":
            c["levels"] = [v for v in c["levels"] if v.startswith("25-")]
    cb.write_text(json.dumps(doc))
    rel, syn = tmp_path / "ma.release", tmp_path / "ma.csv"
    rc, _, err = run_cli(
        ["release", nist / "ma2019.csv", "--eps", "1", "--columns", features, "--codebook", cb, "-o", rel, "--quiet"],
        capsys,
    )
    assert rc == 0, err
    assert sum(e.rho for e in Release.load(rel).ledger.discovery_entries) > 0  # AGEP only: binned in 0..99
    assert run_cli(["synth", rel, "--rows", "7634", "-o", syn], capsys)[0] == 0
    target = pd.read_csv(nist / "ma2019.csv", dtype=str, keep_default_na=False)[[*features.split(","), "INDP"]]
    target.to_csv(tmp_path / "target.csv", index=False)
    done = subprocess.run(
        [exe, str(DRIVER), str(tmp_path / "target.csv"), str(syn), str(nist / "data_dictionary.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(scores["features"]) == sorted(features.split(","))
    print(f"codebook round trip: k-marginal {scores['score']:.1f}, grouped by PUMA {scores['score_grouped']:.1f}")
    assert scores["score"] > 900  # 945-947 measured (docs/benchmarks.md); a broken schema scores far lower


def test_a_whole_number_range_releases_and_synthesizes_only_its_whole_numbers(tmp_path, capsys):
    """A dictionary range of few whole numbers (0..19) is one level per number: the release holds
    exactly those levels (no bins, no within-bin draws), the levels AIM's noisy counts show no rows
    in are marked empty, and synthetic rows hold only whole numbers of the range that are not empty
    (or the declared code N). A schema declaring the same levels is the publisher's: nothing of it
    is marked."""
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame(
        {
            "SEX": rng.choice(["1", "2"], n),
            "NOC": rng.choice(["N", "0", "1", "2"], n, p=[0.1, 0.5, 0.25, 0.15]),
        }
    )
    data = tmp_path / "data.csv"
    df.to_csv(data, index=False)
    d = tmp_path / "dictionary.json"
    d.write_text(json.dumps({k: NIST[k] for k in ("SEX",)} | {"NOC": {"values": {"N": "N/A", "min": 0, "max": 19}}}))
    cb = tmp_path / "cb.json"
    assert run_cli(["schema", "--from-dictionary", d, "-o", cb], capsys)[0] == 0
    rel_path = tmp_path / "r.release"
    rc, _, err = _release([data, "--codebook", cb, "-o", rel_path], capsys)
    assert rc == 0, err
    col = Release.load(rel_path).schema.column("NOC")
    assert col.labels == [str(i) for i in range(20)] + ["N"] and col.edges is None and col.within is None
    assert "N" not in col.empty and set(col.empty) <= {str(i) for i in range(20)}
    assert {str(i) for i in range(10, 20)} <= set(col.empty)  # no row holds them; their noise does not show
    assert not {"0", "1"} & set(col.empty)  # 100 and more rows each show
    syn = tmp_path / "s.csv"
    assert run_cli(["synth", rel_path, "--rows", "2000", "--seed", "1", "-o", syn, "--allow-insecure"], capsys)[0] == 0
    written = pd.read_csv(next(tmp_path.glob("s*.csv")), dtype=str, keep_default_na=False)["NOC"]
    numbers = written[written != "N"]
    assert len(numbers) > 1000 and numbers.str.fullmatch(r"\d+").all()  # whole numbers, written as such
    assert set(numbers) <= {str(i) for i in range(20)} - set(col.empty)
    # the same levels declared by a schema: none is marked empty
    schema = tmp_path / "schema.json"
    levels = [{"name": "NOC", "kind": "numeric", "values": list(range(20)), "missing": "N"}]
    schema.write_text(json.dumps({"format": "ddssp-schema/1", "columns": levels}))
    rel2 = tmp_path / "r2.release"
    rc, _, err = _release([data, "--codebook", cb, "--schema", schema, "-o", rel2], capsys)
    assert rc == 0, err
    declared = Release.load(rel2).schema.column("NOC")
    assert declared.labels == col.labels and declared.empty == ()


def test_a_declared_label_with_a_comma_is_one_level_and_inspect_quotes_it(tmp_path, capsys):
    """`--levels` reads CSV quoting, so "Adult, 1 Egg Stage" is one label, not two; `inspect` lists it
    quoted, so the list of levels reads unambiguously."""
    rng = np.random.default_rng(1)
    stage = rng.choice(["Adult, 1 Egg Stage", "Juvenile"], 300)
    data = tmp_path / "p.csv"
    pd.DataFrame({"stage": stage, "x": rng.integers(0, 3, 300)}).to_csv(data, index=False)
    rel_path = tmp_path / "p.release"
    rc, _, err = _release(
        [data, "--levels", 'stage="Adult, 1 Egg Stage",Juvenile', "--levels", "x=0,1,2", "-o", rel_path], capsys
    )
    assert rc == 0, err
    assert list(Release.load(rel_path).schema.column("stage").labels) == ["Adult, 1 Egg Stage", "Juvenile"]
    rc, out, _ = run_cli(["inspect", rel_path], capsys)
    assert rc == 0
    assert 'levels: "Adult, 1 Egg Stage", Juvenile' in out
