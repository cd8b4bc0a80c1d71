"""AIM takes its exact answers from the counting layer: one call with every clique it may measure, the
same numbers as Schema.encode + bincount; `ddssp release` counts files with --backend."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ddssp.cli import main
from ddssp.data.counting import count_marginals, counts_from_codes
from ddssp.data.schemafile import load_schema
from ddssp.data.tables import read_table
from ddssp.marginals.aim import run_aim
from ddssp.marginals.workload import all_pairs, downward_closure
from ddssp.pipeline import AimOptions, release
from ddssp.releasefile import Release


@pytest.fixture(scope="module")
def census(repo_root):
    data = repo_root / "examples" / "census.csv"
    schema = load_schema(repo_root / "examples" / "census.schema.json")
    small = schema.subset(schema.names[:5])
    return data, schema, small


def test_aim_calls_the_counter_once_with_every_clique(census, tmp_path):
    data, _, small = census
    df = read_table(data)[small.names]
    p = tmp_path / "small.parquet"
    df.to_parquet(p)
    calls = []

    def counter(cliques):
        calls.append(list(cliques))
        got = count_marginals(p, small, cliques, backend="duckdb")
        calls[-1] = (list(cliques), got)
        return got

    w = all_pairs(small.domain)
    res = run_aim(counter, small.domain, w, 0.5, rng=np.random.default_rng(0), rounds=8 * len(small.names))
    assert len(calls) == 1
    cliques, got = calls[0]
    need = {tuple(a for a in small.names if a in set(c)) for c in downward_closure(w)} | {(a,) for a in small.names}
    assert need <= set(cliques)
    enc = small.encode(df)
    ref = counts_from_codes({n: enc[n].to_numpy() for n in small.names}, small.domain, cliques)
    for c in cliques:
        assert np.array_equal(ref[c], got[c])
    assert math.isclose(res.ledger.spent, 0.5, rel_tol=1e-9)


def test_counter_output_is_checked(census):
    _, _, small = census
    w = all_pairs(small.domain)
    from ddssp.errors import DataError

    with pytest.raises(DataError, match="no .* array"):
        run_aim(lambda cl: {}, small.domain, w, 0.5, rng=np.random.default_rng(0))
    with pytest.raises(DataError, match="non-count"):
        run_aim(
            lambda cl: {c: -np.ones([small.domain[a] for a in c], dtype=np.int64) for c in cl},
            small.domain,
            w,
            0.5,
            rng=np.random.default_rng(0),
        )


def test_release_from_a_file_path(census):
    # a path goes through the counting layer (default backend duckdb)
    data, schema, _ = census
    rel = release(
        data,
        schema,
        eps=1.0,
        seed=0,
        aim=AimOptions(workload=[(("age", "sex"), 1.0)], rounds=2 * len(schema.names) + 1),
    )
    assert math.isclose(rel.rho_spent, rel.rho_budget, rel_tol=1e-9)
    assert rel.schema == schema


def test_cli_release_backends(census, tmp_path, capsys):
    data, _, _ = census
    schema_path = data.parent / "census.schema.json"
    out = tmp_path / "r.release"
    argv = [
        "release",
        str(data),
        "--schema",
        str(schema_path),
        "--eps",
        "1",
        "--quiet",
        "--workload",
        "target",
        "--target",
        "high_income",
        "--rounds",
        "40",
    ]
    assert main([*argv, "-o", str(out), "--backend", "duckdb", "--memory-limit", "256MB", "--na-values", "?"]) == 0
    rel = Release.load(out)
    assert math.isclose(rel.rho_spent, rel.rho_budget, rel_tol=1e-9)
    info = repr(rel.summary()["info"])
    assert "duckdb" not in info and "256MB" not in info  # nothing about the reading goes into the file
    assert main([*argv, "-o", str(tmp_path / "n.release"), "--backend", "numpy"]) == 0
    capsys.readouterr()
    for extra, msg in (
        (["--backend", "numpy", "--memory-limit", "1KB"], "the numpy backend would hold"),
        (["--backend", "spark", "--memory-limit", "1GB"], "duckdb or numpy"),
        (["--memory-limit", "lots"], "memory"),
        (["--spark-master", "local[1]"], "--backend spark"),
        (["--delimiter", ";;"], "delimiter"),
    ):
        assert main([*argv, "-o", str(tmp_path / "bad.release"), *extra]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("ddssp: error:") and msg in err[0], err
        assert not (tmp_path / "bad.release").exists()
