"""`ddssp schema`: drafting (with the not-private warning), --check, and every bad input from the CLI:
one 'ddssp: error:' line, non-zero exit, no traceback, nothing written."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.data import Column, Schema, load_schema
from ddssp.data.tables import read_table


def run_cli(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_clean_failure(rc, err, match=None):
    assert rc != 0
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("ddssp: error:")]
    assert len(errors) == 1, err
    assert "internal error" not in err
    if match:
        assert match in errors[0], errors[0]


def files_in(path):
    return sorted(p.name for p in path.iterdir())


@pytest.fixture()
def table(tmp_path):
    """A small CSV and a matching reviewed schema."""
    df = pd.DataFrame({"age": [23, 45, 67, 31], "sex": ["F", "M", "M", "F"], "k": [1, 2, 2, 1]})
    data = tmp_path / "data.csv"
    df.to_csv(data, index=False)
    schema = tmp_path / "data.schema.json"
    Schema(
        [Column.binned("age", [0, 30, 60, 100]), Column.categorical("sex", ["F", "M"]), Column.levels("k", [1, 2])]
    ).save(schema)
    return data, schema


# ------------------------------------------------------------------ drafting
def test_draft_census_warns_and_encodes_exactly(repo_root, tmp_path, capsys):
    data = repo_root / "examples" / "census.csv"
    out = tmp_path / "census.schema.json"
    rc, _, err = run_cli(["schema", data, "-o", out], capsys)
    assert rc == 0
    assert "NOT private" in err and "public knowledge" in err
    schema = load_schema(out)
    df = read_table(data)
    assert schema.names == list(df.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing clipped, nothing unknown
        codes = schema.encode(df)
    decoded = schema.decode(codes)
    np.testing.assert_array_equal(schema.encode(decoded).to_numpy(), codes.to_numpy())
    for name in schema.categorical:
        assert decoded[name].tolist() == df[name].tolist()
    for col in schema.columns:
        if col.kind == "numeric" and col.edges is None:  # explicit levels decode to the data values
            np.testing.assert_array_equal(decoded[col.name].to_numpy(), df[col.name].astype(float))
    assert {"sex", "race", "occupation"} <= set(schema.categorical)
    assert {"age", "income_score"} <= set(schema.numeric)
    assert max(schema.domain.values()) <= 10  # --bins 10


def test_draft_options(tmp_path, table, capsys):
    data, _ = table
    out = tmp_path / "draft.json"
    rc, _, err = run_cli(["schema", data, "-o", out, "--bins", "2", "--categorical", "k"], capsys)
    assert rc == 0, err
    s = load_schema(out)
    assert s.column("k").kind == "categorical" and s.column("k").labels == ["1", "2"]
    assert s.column("age").size == 2 and s.column("age").bounds == (23.0, 67.0)


def test_committed_census_schema_checks(repo_root, capsys):
    rc, _, err = run_cli(
        ["schema", repo_root / "examples" / "census.csv", "--check", repo_root / "examples" / "census.schema.json"],
        capsys,
    )
    assert rc == 0, err
    assert "24000 rows" in err and "warning" not in err


def test_check_reports_clipping(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("x\n-5\n3\n50\n")
    schema = tmp_path / "s.json"
    Schema([Column.binned("x", [0, 10, 20])]).save(schema)
    rc, _, err = run_cli(["schema", data, "--check", schema], capsys)
    assert rc == 0
    assert "2 of 3 value(s) outside the schema's range" in err


def test_adult_checks_through_domain_file(shared_data, capsys):
    rc, _, err = run_cli(
        [
            "schema",
            shared_data / "adult.csv",
            "--check",
            shared_data / "adult-domain.json",
            "--categorical",
            "workclass,race,sex,native-country",
        ],
        capsys,
    )
    assert rc == 0, err
    assert "48842 rows" in err


# ------------------------------------------------------------------ bad input
def test_missing_file(tmp_path, capsys):
    rc, _, err = run_cli(["schema", tmp_path / "nope.csv", "-o", tmp_path / "s.json"], capsys)
    assert_clean_failure(rc, err, "not found")
    assert files_in(tmp_path) == []


def test_directory_as_input(tmp_path, capsys):
    (tmp_path / "dir").mkdir()
    rc, _, err = run_cli(["schema", tmp_path / "dir", "-o", tmp_path / "s.json"], capsys)
    assert_clean_failure(rc, err, "directory")
    assert files_in(tmp_path) == ["dir"]


def test_not_a_csv(tmp_path, capsys):
    data = tmp_path / "img.csv"
    data.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")
    rc, _, err = run_cli(["schema", data, "-o", tmp_path / "s.json"], capsys)
    assert_clean_failure(rc, err, "not a CSV")
    assert files_in(tmp_path) == ["img.csv"]


def test_malformed_csv(tmp_path, capsys):
    data = tmp_path / "ragged.csv"
    data.write_text("a,b\n1,2\n3,4,5\n")
    rc, _, err = run_cli(["schema", data, "-o", tmp_path / "s.json"], capsys)
    assert_clean_failure(rc, err, "line 3")
    assert files_in(tmp_path) == ["ragged.csv"]


@pytest.mark.parametrize("content", ["", "a,b\n"])
def test_empty_table(tmp_path, capsys, content):
    data = tmp_path / "empty.csv"
    data.write_text(content)
    rc, _, err = run_cli(["schema", data, "-o", tmp_path / "s.json"], capsys)
    assert_clean_failure(rc, err)
    assert files_in(tmp_path) == ["empty.csv"]


def test_existing_output_refused_without_force(table, capsys):
    data, schema = table
    before = schema.read_text()
    rc, _, err = run_cli(["schema", data, "-o", schema], capsys)
    assert_clean_failure(rc, err, "--force")
    assert schema.read_text() == before
    rc, _, err = run_cli(["schema", data, "-o", schema, "--force"], capsys)
    assert rc == 0, err
    assert json.loads(schema.read_text())["format"] == "ddssp-schema/1"
    assert schema.read_text() != before


def test_output_equal_to_input_refused(table, capsys):
    data, _ = table
    before = data.read_text()
    rc, _, err = run_cli(["schema", data, "-o", data, "--force"], capsys)
    assert_clean_failure(rc, err, "input")
    assert data.read_text() == before


def test_column_in_data_not_in_schema(table, capsys):
    data, schema = table
    df = pd.read_csv(data).assign(extra=1)
    df.to_csv(data, index=False)
    rc, _, err = run_cli(["schema", data, "--check", schema], capsys)
    assert_clean_failure(rc, err, "'extra'")


def test_schema_column_not_in_data(table, capsys):
    data, schema = table
    pd.read_csv(data).drop(columns=["sex"]).to_csv(data, index=False)
    rc, _, err = run_cli(["schema", data, "--check", schema], capsys)
    assert_clean_failure(rc, err, "missing from the data: 'sex'")


def test_unknown_label(table, capsys):
    data, schema = table
    data.write_text("age,sex,k\n20,F,1\n30,X,2\n")
    rc, _, err = run_cli(["schema", data, "--check", schema], capsys)
    assert_clean_failure(rc, err, "column 'sex'")


def test_non_numeric_value_in_numeric_column(table, capsys):
    data, schema = table
    data.write_text("age,sex,k\n20,F,1\nforty,M,2\n")
    rc, _, err = run_cli(["schema", data, "--check", schema], capsys)
    assert_clean_failure(rc, err, "'forty'")


@pytest.mark.filterwarnings("ignore::ddssp.data.DomainKindsWarning")
@pytest.mark.parametrize("categorical", [None, "b"])
def test_domain_smaller_than_codes(tmp_path, capsys, categorical):
    data = tmp_path / "codes.csv"
    data.write_text("a,b\n0,1\n2,7\n")
    domain = tmp_path / "domain.json"
    domain.write_text(json.dumps({"a": 3, "b": 4}))
    argv = ["schema", data, "--check", domain] + (["--categorical", categorical] if categorical else [])
    rc, _, err = run_cli(argv, capsys)
    assert_clean_failure(rc, err, "column 'b'")
    assert "does not fit the data" in err


@pytest.mark.parametrize(
    "text",
    [
        '{"format": "ddssp-schema/1", "columns": [',
        "not json at all",
        '{"format": "ddssp-schema/1", "columns": [{"name": "a"}]}',
    ],
)
def test_malformed_schema_json(table, capsys, text):
    data, schema = table
    schema.write_text(text)
    rc, _, err = run_cli(["schema", data, "--check", schema], capsys)
    assert_clean_failure(rc, err, str(schema))


def test_missing_schema_file(table, tmp_path, capsys):
    data, _ = table
    rc, _, err = run_cli(["schema", data, "--check", tmp_path / "none.json"], capsys)
    assert_clean_failure(rc, err, "not found")


def test_too_many_levels_refused(tmp_path, capsys):
    data = tmp_path / "ids.csv"
    data.write_text("id\n" + "\n".join(f"p{i}" for i in range(30)) + "\n")
    rc, _, err = run_cli(["schema", data, "-o", tmp_path / "s.json", "--max-levels", "10"], capsys)
    assert_clean_failure(rc, err, "30 distinct")
    assert files_in(tmp_path) == ["ids.csv"]
