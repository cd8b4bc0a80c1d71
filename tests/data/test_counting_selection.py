"""A file counted where it lives (DuckDB, Spark) is counted by the columns the release keeps: a
column left out by ``--columns`` / ``--drop`` or dropped by discovery is never read, and the table
is never read into memory; the seeded release is the in-memory one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.data.columns import Column
from ddssp.data.counting import count_marginals
from ddssp.data.schema import Schema
from ddssp.errors import SchemaError


def _table(rows: int = 400, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": [f"r{i:05d}" for i in range(rows)],
            "age": rng.integers(18, 90, rows),
            "sector": rng.choice(["a", "b", "c", "?"], rows, p=[0.45, 0.3, 0.15, 0.1]),
            "empty": [None] * rows,
            "income": rng.choice(["<=50K", ">50K"], rows, p=[0.7, 0.3]),
        }
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("selection")
    df = _table()
    csv, pq = d / "t.csv", d / "t.parquet"
    df.to_csv(csv, index=False)
    df.astype({"empty": "string"}).to_parquet(pq, index=False)
    return csv, pq


def _no_rows_in_memory(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the table was read into memory")

    monkeypatch.setattr("ddssp.pipeline.source.read_rows", refuse)
    monkeypatch.setattr("ddssp.data.tables.read_table", refuse)


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("select", [["--drop", "id"], ["--columns", "age,sector,empty,income"]])
def test_release_counts_only_the_kept_columns_where_the_file_lives(files, which, select, tmp_path, monkeypatch):
    """`empty` is dropped by discovery (no values), `id` by the user: the duckdb release reads
    neither, holds nothing in memory, and equals the seeded numpy release."""
    from ddssp.cli import main
    from ddssp.releasefile.reader import read_release

    out = {}
    for backend in ("numpy", "duckdb"):
        if backend == "duckdb":
            _no_rows_in_memory(monkeypatch)
        o = tmp_path / f"{backend}.release"
        argv = ["release", str(files[which]), "--eps", "2", "--na-values", "?", "--backend", backend, *select]
        argv += ["--rounds", "4", "-o", str(o), "--insecure-seed", "3", "--seed", "1", "--quiet"]
        assert main(argv) == 0
        doc, arrays = read_release(o)
        out[backend] = (doc["schema"], doc["ledger"], {k: np.asarray(v).tolist() for k, v in arrays.items()})
    names = [c["name"] for c in out["duckdb"][0]["columns"]]
    assert "id" not in names and "empty" not in names and "age" in names
    assert out["numpy"] == out["duckdb"]


@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_counts_of_selected_columns_are_the_frames(files, backend):
    df = _table()
    schema = Schema(
        [Column.categorical("sector", ["a", "b", "c", "?"]), Column.categorical("income", ["<=50K", ">50K"])]
    )
    got = count_marginals(files[1], schema, [("sector", "income")], backend=backend, columns=["sector", "income"])
    want = pd.crosstab(df["sector"], df["income"]).reindex(index=["a", "b", "c", "?"], columns=["<=50K", ">50K"])
    assert np.array_equal(got[("sector", "income")], want.to_numpy())
    with pytest.raises(SchemaError, match="not in the schema"):
        count_marginals(files[1], schema, [("sector", "income")], backend=backend)
    with pytest.raises(SchemaError, match="'nope'"):
        count_marginals(files[1], schema, [("sector",)], backend=backend, columns=["sector", "nope"])
