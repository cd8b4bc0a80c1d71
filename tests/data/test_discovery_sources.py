"""Discovery read where the table lives (DuckDB over CSV / Parquet, Spark) gives the seeded schema
and ledger of the pandas path, cell for cell; a column SQL cannot read falls back alone."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from ddssp.data.counting import CsvOptions
from ddssp.data.discovery.slots import parse_numbers as parse_numbers_of
from ddssp.data.discovery.source import SqlColumn, open_table
from ddssp.dp.noise import make_noise
from ddssp.pipeline import DiscoveryOptions, ReadOptions, read_frame
from ddssp.pipeline.plan import plan_schema


def _table(rows: int = 300, seed: int = 3) -> pd.DataFrame:
    """Text with a marker and rare labels, numbers with missing cells, exact zeros and decimals,
    ISO dates, clock times, a column mixing a few odd texts into numbers."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, rows).astype(object)
    age[rng.random(rows) < 0.1] = ""
    gain = np.where(rng.random(rows) < 0.6, "0", [f"{v:.2f}" for v in rng.lognormal(6, 1, rows)])
    gain = np.where(rng.random(rows) < 0.05, "?", gain)
    day = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, rows), unit="D")
    dates = np.where(rng.random(rows) < 0.05, "", day.strftime("%Y-%m-%d"))
    clock = [f"{h:02d}:{m:02d}" for h, m in zip(rng.integers(6, 22, rows), rng.integers(0, 60, rows))]
    sector = rng.choice(["Private", "Public", "Self-employed", "?", "Nonprofit", "Other Öl"], rows)
    score = np.where(rng.random(rows) < 0.3, rng.choice(["inf", "1e3", " 7", "nan"], rows), rng.integers(0, 100, rows))
    return pd.DataFrame(
        {
            "age": age,
            "gain": gain,
            "day": dates,
            "clock": clock,
            "sector": sector,
            "score": score,
            "income": rng.choice(["<=50K", ">50K"], rows, p=[0.7, 0.3]),
        }
    )


OPTS = CsvOptions(na_values=("?",))


def _plan(table, **kw):
    p = plan_schema(
        table, None, eps=2.0, delta=1e-6, discovery=DiscoveryOptions(enabled=True, **kw), noise=make_noise(11)
    )
    recycled = [(m.clique, m.values.tolist(), m.cells.tolist(), m.entry) for m in p.recycled]
    return json.dumps(p.schema.to_dict(), sort_keys=True), [e.to_dict() for e in p.ledger.entries], recycled


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sources")
    df = _table()
    csv = d / "t.csv"
    # leading spaces after the delimiter, as raw Adult has them: skipped by both readers
    csv.write_text(
        ",".join(df.columns) + "\n" + "\n".join(", ".join(map(str, r)) for r in df.itertuples(index=False)) + "\n"
    )
    typed = read_frame(csv, ReadOptions(csv=OPTS)).assign(
        age=lambda f: pd.to_numeric(f["age"]), income=lambda f: f["income"].astype("str")
    )
    pq = d / "t.parquet"
    typed.to_parquet(pq, index=False)
    return csv, pq


@pytest.mark.parametrize("which", ["csv", "parquet"])
def test_duckdb_discovery_is_the_pandas_discovery(files, which):
    path = files[0] if which == "csv" else files[1]
    pandas_side = _plan(read_frame(path, ReadOptions(csv=OPTS)), dates=["day"])
    table = open_table(path, "duckdb", csv_options=OPTS)
    try:
        assert not table._memory
        sql_side = _plan(table, dates=["day"])
        assert isinstance(table["sector"], SqlColumn)  # counted by SQL, not read in memory
    finally:
        table.close()
    assert sql_side[0] == pandas_side[0]
    assert sql_side[1] == pandas_side[1]
    assert any(e["kind"] == "discover-keys" for e in sql_side[1])
    assert sql_side[2] == pandas_side[2] and sql_side[2]  # the same grid counts, recycled alike


def test_counts_match_cell_for_cell(files):
    """Each reader's exact counts, not only the schema they lead to."""
    from ddssp.data.dates import hhmm_cells
    from ddssp.data.discovery.labels import label_counts
    from ddssp.data.discovery.numeric import grid_counts
    from ddssp.data.discovery.scan import rest_cells
    from ddssp.data.discovery.slots import parse_numbers, parse_times_of_text, scan_cells, slot_cells

    csv = files[0]
    df = read_frame(csv, ReadOptions(csv=OPTS))
    table = open_table(csv, "duckdb", csv_options=OPTS)
    try:
        edges = np.array([-1.0, 0.0, 0.5, 1.0, 10.0, 99.5, 1e3, 1e4])
        for name in df.columns:
            x, isna = parse_numbers(df[name])
            times = parse_times_of_text(df[name], x, isna)
            xs, isnas = parse_numbers(table[name])
            ts = parse_times_of_text(table[name], xs, isnas)
            assert np.array_equal(scan_cells(x, isna, times), scan_cells(xs, isnas, ts)), name
            assert np.array_equal(scan_cells(x, isna), scan_cells(xs, isnas)), name
            assert np.array_equal(grid_counts(x, edges), grid_counts(xs, edges)), name
            assert np.array_equal(rest_cells(x, 0.0), rest_cells(xs, 0.0)), name
            assert np.array_equal(hhmm_cells(x), hhmm_cells(xs)), name
            assert np.array_equal(slot_cells(times["days"]), slot_cells(ts["days"])), name
            assert np.array_equal(grid_counts(times["minutes"], edges * 100), grid_counts(ts["minutes"], edges * 100))
            assert list(label_counts(df[name]).items()) == list(label_counts(table[name]).items()), name
            assert np.array_equal(np.asarray(xs), x, equal_nan=True)  # the per-column fallback
    finally:
        table.close()


def _spark_ready() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return shutil.which("java") is not None


@pytest.mark.parametrize(
    "backend",
    ["duckdb", pytest.param("spark", marks=pytest.mark.skipif(not _spark_ready(), reason="needs pyspark and Java"))],
)
def test_hhmm_clock_numbers_read_where_the_table_lives(tmp_path, backend):
    """Whole numbers 500..2259 whose minutes stay below 60 make discovery count the clock times HHMM
    among them; over DuckDB or Spark that count is asked of the column's number view (which cannot be indexed
    like an array), and gives the pandas path's schema and ledger, clock-time bins and all."""
    from ddssp.data.dates import hhmm_cells

    rng = np.random.default_rng(4)
    n = 400
    hhmm = rng.integers(5, 23, n) * 100 + rng.integers(0, 60, n)
    dep = np.where(rng.random(n) < 0.05, "?", hhmm.astype(str))
    dep[:3] = ["1275", "12.5", " 0930"]  # minutes of 75, not whole, a leading space (read by Python)
    path = tmp_path / "hhmm.csv"
    pd.DataFrame({"dep": dep, "g": rng.choice(["a", "b"], n)}).to_csv(path, index=False)
    df = read_frame(path, ReadOptions(csv=OPTS))
    x, _ = parse_numbers_of(df["dep"])
    extra = {"spark_master": "local[1]"} if backend == "spark" else {}
    table = open_table(str(path), backend, csv_options=OPTS, **extra)
    try:
        xs, _ = parse_numbers_of(table["dep"])
        assert not isinstance(xs, np.ndarray)
        assert np.array_equal(hhmm_cells(xs), hhmm_cells(x))
        assert hhmm_cells(x).tolist() == [int(np.sum(dep != "?")) - 2, 2]
        sql_side = _plan(table)
    finally:
        table.close()
    assert sql_side == _plan(df)
    assert any("HHMM" in e.get("note", "") for e in sql_side[1])  # the clock-time count was made


def test_cli_release_seeded_same_schema_and_ledger(files, tmp_path):
    from ddssp.cli import main
    from ddssp.releasefile.reader import read_release

    out = {}
    for backend in ("numpy", "duckdb"):
        o = tmp_path / f"{backend}.json"
        argv = ["release", str(files[1]), "--eps", "2", "--na-values", "?", "--backend", backend]
        argv += ["--rounds", "6", "-o", str(o), "--insecure-seed", "5"]
        assert main(argv) == 0
        doc, _ = read_release(o)
        out[backend] = (doc["schema"], doc["ledger"])
    assert out["numpy"] == out["duckdb"]


def test_numpy_memory_limit_refuses_big_tables(files, capsys):
    from ddssp.cli import main

    argv = ["schema", str(files[0]), "--eps", "1", "--memory-limit", "1KB", "-o", "x.json"]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("ddssp: error: --memory-limit 1KB: the numpy backend would hold")
    assert "Traceback" not in "".join(err)


@pytest.mark.skipif(not _spark_ready(), reason="needs pyspark and Java")
def test_spark_discovery_is_the_pandas_discovery(files):
    pandas_side = _plan(read_frame(files[1], ReadOptions(csv=OPTS)), dates=["day"])
    table = open_table(str(files[1]), "spark", csv_options=OPTS, spark_master="local[1]")
    try:
        sql_side = _plan(table, dates=["day"])
    finally:
        table.close()
    assert sql_side == pandas_side


def test_duckdb_draws_no_progress_bar_of_its_own(tmp_path):
    """DuckDB's bar writes to stdout whether or not it is a terminal (its default is on in a plain
    process; pytest's capture hides that, so the counter is opened in a child process)."""
    import subprocess
    import sys

    path = tmp_path / "t.csv"
    pd.DataFrame({"a": np.arange(50) % 7, "b": ["x", "y"] * 25}).to_csv(path, index=False)
    code = (
        "import duckdb, pathlib\n"
        "from ddssp.data.counting import CsvOptions\n"
        "from ddssp.data.counting.duckdb_backend import DuckDBCounter\n"
        "print(duckdb.connect().execute(\"SELECT current_setting('enable_progress_bar')\").fetchone()[0])\n"
        f"c = DuckDBCounter(pathlib.Path({str(path)!r}), CsvOptions())\n"
        "print(c.con.execute(\"SELECT current_setting('enable_progress_bar')\").fetchone()[0])\n"
        "c.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False"], out  # DuckDB's default is on; the counter's connection has it off
