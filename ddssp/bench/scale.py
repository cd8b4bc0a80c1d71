"""Scale benchmark: read + count and the AIM loop on Adult resampled to millions of rows.

    python -m ddssp.bench.scale [--rows 1e6,1e7] [--formats csv,parquet] [--backends duckdb,numpy]
        [--eps 1] [--aim] [--aim-timeout 900] [--reference] [--memory-limit 2GB] [--tmp /tmp]

For each row count, UCI Adult (``../shared/data/adult.csv`` with ``adult-domain.json``) is resampled
with replacement (a hash of the row number picks the source row) into a temporary CSV and Parquet file
(under ``--tmp``; deleted afterwards, never kept). Each measurement runs in a fresh subprocess, so its
peak RSS (``ru_maxrss``) is its own:

* ``count``: the counting layer, :func:`ddssp.data.counting.count_marginals` on every clique a release
  of all pairs needs (105 pairs + 15 one-way marginals), per backend and format: seconds and peak MB;
* ``release`` (with ``--aim``): the whole ``ddssp release`` path (count, then AIM select / measure /
  reconstruct at ``--eps``, delta 1e-9, all pairs), timing the count and the AIM loop separately;
* ``raw`` (with ``--raw``): raw Adult (``adult_raw.csv``, ``?`` = missing) resampled to typed Parquet,
  no schema: private discovery (:func:`ddssp.pipeline.plan.plan_source`, secure noise) read where the
  table lives by each backend of ``--raw-backends``, then the counting of every one-way and pair
  marginal of the discovered schema, and with ``--aim`` the AIM loop: CPU seconds of each phase
  (this process and its children, DuckDB's threads and Spark's JVM included) and peak RSS (Spark: the
  driver's and the JVM's), with the load average when the phase ended;
* ``reference`` (with ``--reference``): pair counting alone in pandas, polars (if installed) and plain
  DuckDB ``GROUPING SETS`` on the integer columns, the yardsticks for the counting step.

Then a ``counting curve`` line per backend: seconds and MB per million rows across sizes (linear in
rows and flat in memory is the goal). Timings on a shared machine are noisy; nothing is asserted.
Nothing here writes a release file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- data generation
def generate(source: Path, rows: int, out: Path, fmt: str) -> float:
    """Adult resampled to ``rows`` rows (with replacement) into a CSV or Parquet file.

    Parameters
    ----------
    source : pathlib.Path
        adult.csv.
    rows : int
        The number of rows.
    out : pathlib.Path
        The file to write.
    fmt : str
        ``"csv"`` or ``"parquet"`` (typed integer columns).

    Returns
    -------
    float
        Seconds taken.
    """
    import duckdb

    t = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(
        f"CREATE TABLE a AS SELECT row_number() OVER () - 1 AS ddssp_rid, * "
        f"FROM read_csv('{source}', all_varchar = true)"
    )
    m = con.execute("SELECT count(*) FROM a").fetchone()[0]
    cols = [r[0] for r in con.execute("DESCRIBE a").fetchall()][1:]
    sel = ", ".join(f'a."{c}"' for c in cols)
    if fmt == "parquet":  # typed columns, as a data warehouse would hold them
        sel = ", ".join(f'CAST(a."{c}" AS INTEGER) AS "{c}"' for c in cols)
    q = f"SELECT {sel} FROM range({rows}) r JOIN a ON a.ddssp_rid = hash(r.range, 20261123) % {m}"
    opts = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER"
    con.execute(f"COPY ({q}) TO '{out}' ({opts})")
    con.close()
    return time.perf_counter() - t


# --------------------------------------------------------------------------- child measurements
def _child_count(args) -> dict:
    from ddssp.data.counting import count_marginals
    from ddssp.data.schemafile import load_schema

    schema = load_schema(args.domain, categorical=args.categorical)
    cliques = [(a,) for a in schema.names] + list(itertools.combinations(schema.names, 2))
    t = time.perf_counter()
    counts = count_marginals(args.path, schema, cliques, backend=args.backend, memory_limit=args.memory_limit)
    sec = time.perf_counter() - t
    nonzero = sum(int((counts[c] > 0).sum()) for c in cliques if len(c) == 2)
    return {"count_s": sec, "peak_mb": _peak_mb(), "nonzero_pair_cells": nonzero}


def _child_release(args) -> dict:
    import numpy as np

    from ddssp.data.counting import count_marginals
    from ddssp.data.schemafile import load_schema
    from ddssp.dp import rho_from_eps_delta
    from ddssp.marginals.aim import run_aim
    from ddssp.marginals.workload import all_pairs

    t0 = time.perf_counter()
    schema = load_schema(args.domain, categorical=args.categorical)
    timing: dict[str, float] = {}

    def counter(cliques):
        t = time.perf_counter()
        out = count_marginals(args.path, schema, cliques, backend=args.backend, memory_limit=args.memory_limit)
        timing["count_s"] = time.perf_counter() - t
        timing["count_peak_mb"] = _peak_mb()
        return out

    rho = rho_from_eps_delta(args.eps, 1e-9)
    t = time.perf_counter()
    res = run_aim(counter, schema.domain, all_pairs(schema.domain), rho, rng=np.random.default_rng(0))
    total = time.perf_counter() - t
    return {
        **timing,
        "aim_s": total - timing.get("count_s", 0.0),
        "release_s": time.perf_counter() - t0,
        "rounds": int(res.rounds),
        "peak_mb": _peak_mb(),
    }


def _cpu_s() -> float:
    """CPU seconds of this process and of its descendants (live ones read from /proc, e.g. Spark's
    JVM; finished ones from ``RUSAGE_CHILDREN``)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + done.ru_utime + done.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for pid in _descendants(os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return total


def _descendants(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def _children_peak_mb() -> float:
    """The largest peak RSS (VmHWM) among live descendants (Spark's JVM), in MB."""
    peak = 0.0
    for pid in _descendants(os.getpid()):
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except (OSError, ValueError):
            continue
    return peak


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _child_raw(args) -> dict:
    """Discovery (no schema), counting and (with ``--eps`` > 0 and ``--aim``) AIM of a raw table."""
    import numpy as np

    from ddssp.data.counting import CsvOptions, count_marginals
    from ddssp.dp.noise import make_noise
    from ddssp.marginals.aim import run_aim
    from ddssp.marginals.workload import all_pairs
    from ddssp.pipeline import DiscoveryOptions, ReadOptions
    from ddssp.pipeline.plan import plan_source
    from ddssp.pipeline.source import open_source

    out: dict = {}
    csv = CsvOptions(na_values=("?",))
    read = ReadOptions(
        backend=args.backend, csv=csv, memory_limit=args.memory_limit, spark_master=args.spark_master or None
    )
    c0 = _cpu_s()
    source = open_source(args.path, read)
    source, plan = plan_source(
        source,
        None,
        eps=args.eps,
        delta=1e-9,
        discovery=DiscoveryOptions(enabled=True),
        noise=make_noise(None),
        tell=lambda e: None,
    )
    c1 = _cpu_s()
    out.update(discover_cpu_s=c1 - c0, discover_peak_mb=_peak_mb(), discover_load=_load(), columns=len(plan.schema))
    schema = plan.schema
    table, backend, columns = source.counted(list(plan.dropped))
    cliques = [(a,) for a in schema.names] + list(itertools.combinations(schema.names, 2))
    counts = count_marginals(
        table,
        schema,
        cliques,
        backend=backend,
        csv_options=csv,
        memory_limit=args.memory_limit,
        spark_master=args.spark_master or None,
        columns=columns,
    )
    c2 = _cpu_s()
    out.update(count_cpu_s=c2 - c1, count_peak_mb=_peak_mb(), count_load=_load())
    if args.aim:
        rho = plan.ledger.rho_budget - plan.ledger.spent
        res = run_aim(
            lambda cl: {c: counts[c] for c in cl},
            schema.domain,
            all_pairs(schema.domain),
            rho,
            rng=np.random.default_rng(0),
        )
        out.update(aim_cpu_s=_cpu_s() - c2, rounds=int(res.rounds), aim_load=_load())
    out.update(peak_mb=_peak_mb(), jvm_peak_mb=_children_peak_mb())
    return out


def generate_raw(source: Path, rows: int, out: Path) -> float:
    """Raw Adult resampled to ``rows`` rows (with replacement) into a Parquet file with the types
    DuckDB reads from the CSV (whole numbers as BIGINT, text as VARCHAR with ``?`` for missing).

    Parameters
    ----------
    source : pathlib.Path
        adult_raw.csv.
    rows : int
        The number of rows.
    out : pathlib.Path
        The Parquet file to write.

    Returns
    -------
    float
        Seconds taken.
    """
    import duckdb

    t = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"CREATE TABLE a AS SELECT row_number() OVER () - 1 AS ddssp_rid, * FROM read_csv('{source}')")
    m = con.execute("SELECT count(*) FROM a").fetchone()[0]
    cols = [r[0] for r in con.execute("DESCRIBE a").fetchall()][1:]
    sel = ", ".join(f'a."{c}"' for c in cols)
    q = f"SELECT {sel} FROM range({rows}) r JOIN a ON a.ddssp_rid = hash(r.range, 20261127) % {m}"
    con.execute(f"COPY ({q}) TO '{out}' (FORMAT parquet)")
    con.close()
    return time.perf_counter() - t


def _child_reference(args) -> dict:
    """Pair counting alone with a general tool, on the integer-coded table."""
    names = None
    t = time.perf_counter()
    if args.tool == "pandas":
        import pandas as pd

        df = pd.read_parquet(args.path) if args.path.endswith(".parquet") else pd.read_csv(args.path)
        read = time.perf_counter() - t
        names = list(df.columns)
        cells = sum(len(df.groupby([a, b]).size()) for a, b in itertools.combinations(names, 2))
    elif args.tool == "polars":
        import polars as pl

        df = pl.read_parquet(args.path) if args.path.endswith(".parquet") else pl.read_csv(args.path)
        read = time.perf_counter() - t
        names = df.columns
        cells = sum(df.group_by([a, b]).len().height for a, b in itertools.combinations(names, 2))
    else:  # duckdb: read into a table, then one GROUPING SETS query
        import duckdb

        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        src = f"read_parquet('{args.path}')" if args.path.endswith(".parquet") else f"read_csv('{args.path}')"
        con.execute(f"CREATE TABLE t AS SELECT * FROM {src}")
        read = time.perf_counter() - t
        names = [r[0] for r in con.execute("DESCRIBE t").fetchall()]
        sets = ", ".join(f'("{a}", "{b}")' for a, b in itertools.combinations(names, 2))
        cols = ", ".join(f'"{c}"' for c in names)
        rows = con.execute(f"SELECT {cols}, count(*) FROM t GROUP BY GROUPING SETS ({sets})").fetchall()
        cells = len(rows)
    total = time.perf_counter() - t
    return {"read_s": read, "count_s": total - read, "peak_mb": _peak_mb(), "nonzero_pair_cells": cells}


def _run_child(kind: str, extra: list[str], timeout: float | None) -> dict:
    cmd = [sys.executable, "-m", "ddssp.bench.scale", "--child", kind, *extra]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout:.0f} s"}
    wall = time.perf_counter() - t
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": last[:200]}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


# --------------------------------------------------------------------------- driver
def _parse_rows(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    """Run the scale benchmark (or, internally, one measurement in a child process).

    Parameters
    ----------
    argv : list of str, optional
        The command line (``sys.argv[1:]`` by default); see ``python -m ddssp.bench.scale --help``.

    Returns
    -------
    int
        The exit status.
    """
    ap = argparse.ArgumentParser(prog="python -m ddssp.bench.scale", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="1e6,1e7", help="row counts, comma-separated (default 1e6,1e7)")
    ap.add_argument("--formats", default="csv,parquet", help="csv, parquet or both (default both)")
    ap.add_argument("--backends", default="duckdb,numpy", help="counting backends (duckdb, numpy, spark)")
    ap.add_argument("--eps", type=float, default=1.0, help="epsilon of the --aim release (default 1)")
    ap.add_argument("--aim", action="store_true", help="also run the whole release (count + AIM loop)")
    ap.add_argument("--aim-formats", default="csv", help="formats for --aim (default csv)")
    ap.add_argument("--aim-backends", default="duckdb", help="backends for --aim (default duckdb)")
    ap.add_argument("--aim-timeout", type=float, default=900, help="stop a release after this many s")
    ap.add_argument("--reference", action="store_true", help="pair counting in pandas / polars / DuckDB")
    ap.add_argument(
        "--numpy-max-rows",
        type=float,
        default=2e7,
        help="skip the in-memory backends above this many rows (default 2e7)",
    )
    ap.add_argument("--memory-limit", help="DuckDB memory limit for the duckdb backend, e.g. 2GB")
    ap.add_argument("--raw", action="store_true", help="raw Adult, no schema: discovery + counting (+ AIM with --aim)")
    ap.add_argument("--raw-backends", default="duckdb", help="backends of --raw (duckdb, spark, numpy)")
    ap.add_argument("--spark-master", default="", help="Spark master of --raw-backends spark, e.g. local[2]")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="folder with adult.csv and adult-domain.json")
    ap.add_argument("--tmp", default=tempfile.gettempdir(), help="where the temporary tables go")
    # child mode (internal)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    ap.add_argument("--tool", help=argparse.SUPPRESS)
    ap.add_argument("--domain", help=argparse.SUPPRESS)
    ap.add_argument("--categorical", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        import warnings

        warnings.simplefilter("ignore")
        fn = {"count": _child_count, "release": _child_release, "reference": _child_reference, "raw": _child_raw}[
            args.child
        ]
        print(json.dumps(fn(args)))
        return 0

    data = Path(args.data)
    source, domain = data / "adult.csv", data / "adult-domain.json"
    if not source.exists() or not domain.exists():
        print(f"ddssp: error: {source} or {domain} not found; pass --data", file=sys.stderr)
        return 1
    rows_list = _parse_rows(args.rows)
    if args.raw:
        return _run_raw(args, data / "adult_raw.csv", rows_list)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results = []
    print(f"# ddssp scale benchmark: Adult resampled; 2 shared cores, timings are noisy. cpu={os.cpu_count()}")
    print(
        f"{'rows':>11} {'format':>7} {'step':>9} {'backend':>8} {'count s':>8} {'AIM s':>8} {'total s':>8} "
        f"{'peak MB':>8}  note"
    )
    for rows in rows_list:
        work = Path(tempfile.mkdtemp(prefix="ddssp-scale-", dir=args.tmp))
        try:
            for fmt in formats:
                path = work / f"adult_{rows}.{fmt}"
                g = generate(source, rows, path, fmt)
                size_mb = path.stat().st_size / 2**20
                print(
                    f"{rows:>11,} {fmt:>7} {'generate':>9} {'':>8} {'':>8} {'':>8} {g:>8.1f} {'':>8}  "
                    f"{size_mb:.0f} MB file",
                    flush=True,
                )
                common = ["--path", str(path), "--domain", str(domain)]
                for be in backends:
                    if be != "duckdb" and be != "spark" and rows > args.numpy_max_rows:
                        continue
                    extra = [*common, "--backend", be]
                    if be == "duckdb" and args.memory_limit:
                        extra += ["--memory-limit", args.memory_limit]
                    r = _run_child("count", extra, None)
                    results.append({"rows": rows, "format": fmt, "step": "count", "backend": be, **r})
                    _print_row(results[-1])
                if args.aim and fmt in args.aim_formats.split(","):
                    for be in args.aim_backends.split(","):
                        extra = [*common, "--backend", be, "--eps", str(args.eps)]
                        if be == "duckdb" and args.memory_limit:
                            extra += ["--memory-limit", args.memory_limit]
                        r = _run_child("release", extra, args.aim_timeout)
                        results.append({"rows": rows, "format": fmt, "step": "release", "backend": be, **r})
                        _print_row(results[-1])
                if args.reference and rows <= args.numpy_max_rows:
                    for tool in ("pandas", "polars", "duckdb-sql"):
                        if tool == "polars":
                            try:
                                import polars  # noqa: F401
                            except ImportError:
                                print(f"{rows:>11,} {fmt:>7} {'reference':>9} {'polars':>8}  not installed")
                                continue
                        r = _run_child("reference", ["--path", str(path), "--tool", tool], None)
                        results.append({"rows": rows, "format": fmt, "step": "reference", "backend": tool, **r})
                        _print_row(results[-1])
                path.unlink()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    _print_curve(results)
    return 0


def _run_raw(args, source: Path, rows_list: list[int]) -> int:
    """The ``--raw`` case: one child per row count and backend, a line each."""
    print(f"# ddssp scale benchmark, raw Adult without a schema (discovery where the data lives); cpu={os.cpu_count()}")
    print(
        f"{'rows':>11} {'backend':>8} {'disc cpu':>9} {'count cpu':>9} {'AIM cpu':>9} {'wall s':>8} "
        f"{'peak MB':>8} {'JVM MB':>7}  load (1/5/15 min) at the end of discovery / counting"
    )
    for rows in rows_list:
        work = Path(tempfile.mkdtemp(prefix="ddssp-scale-", dir=args.tmp))
        try:
            path = work / f"adult_raw_{rows}.parquet"
            generate_raw(source, rows, path)
            for be in [b.strip() for b in args.raw_backends.split(",") if b.strip()]:
                extra = ["--path", str(path), "--backend", be, "--eps", str(args.eps)]
                if be == "duckdb" and args.memory_limit:
                    extra += ["--memory-limit", args.memory_limit]
                if be == "spark" and args.spark_master:
                    extra += ["--spark-master", args.spark_master]
                if args.aim:
                    extra.append("--aim")
                r = _run_child("raw", extra, args.aim_timeout)
                if "error" in r:
                    print(f"{rows:>11,} {be:>8}  {r['error']}", flush=True)
                    continue
                print(
                    f"{rows:>11,} {be:>8} {r['discover_cpu_s']:>9.1f} {r['count_cpu_s']:>9.1f} "
                    f"{r.get('aim_cpu_s', float('nan')):>9.1f} {r['wall_s']:>8.1f} {r['peak_mb']:>8.0f} "
                    f"{r['jvm_peak_mb']:>7.0f}  {r['discover_load']} / {r['count_load']}",
                    flush=True,
                )
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def _print_row(r: dict) -> None:
    if "error" in r:
        print(f"{r['rows']:>11,} {r['format']:>7} {r['step']:>9} {r['backend']:>8}  {r['error']}", flush=True)
        return
    count = r.get("count_s", float("nan"))
    aim = r.get("aim_s", float("nan"))
    note = ""
    if r["step"] == "reference":
        note = f"read {r['read_s']:.1f} s + count {r['count_s']:.1f} s"
        count = r["read_s"] + r["count_s"]
    if r["step"] == "release":
        note = f"{r['rounds']} rounds; peak after counting {r.get('count_peak_mb', float('nan')):.0f} MB"
    if "nonzero_pair_cells" in r:
        note += f"{'; ' if note else ''}{r['nonzero_pair_cells']} non-zero pair cells"
    print(
        f"{r['rows']:>11,} {r['format']:>7} {r['step']:>9} {r['backend']:>8} {count:>8.1f} {aim:>8.1f} "
        f"{r['wall_s']:>8.1f} {r['peak_mb']:>8.0f}  {note}",
        flush=True,
    )


def _print_curve(results: list[dict]) -> None:
    keys = sorted({(r["format"], r["backend"]) for r in results if r["step"] == "count" and "error" not in r})
    if not keys:
        return
    print("\n# counting curve (count step, fresh process): seconds per million rows and peak MB by size")
    for fmt, be in keys:
        pts = sorted(
            (r["rows"], r["count_s"], r["peak_mb"])
            for r in results
            if r["step"] == "count" and r["format"] == fmt and r["backend"] == be and "error" not in r
        )
        text = "  ".join(f"{n / 1e6:g}M: {s:.1f} s ({s / (n / 1e6):.2f} s/M), {m:.0f} MB" for n, s, m in pts)
        print(f"{fmt:>7} {be:>8}  {text}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
