"""Mixed-table release benchmark: generated tables with correlated continuous columns, and Adult.

    python -m ddssp.bench.mixed [--cases a,d1,d4,e] [--tmp /tmp] [--timeout 1800] [--data DIR]
    python -m ddssp.bench.mixed --generate ROWS,COLUMNS,NUMERIC --seed 0 -o table.csv

A *mixed* table (:func:`generate_mixed`) has ``numeric`` continuous columns of several shapes (normal,
lognormal / right-skewed, bimodal, a point mass at 0 plus a skewed tail, whole numbers) driven by a few
shared latent Gaussian factors, so every pair is dependent to a different degree, and
``columns - numeric`` categorical columns whose levels depend on the same factors. Nothing in it is
public: the benchmark releases it through private discovery (``ddssp release FILE --eps E``), as a
data holder would release a raw table.

Each case runs ``python -m ddssp release`` in a fresh subprocess (its CPU seconds are the child's
user + sys time, its peak RSS the child's ``ru_maxrss``), then scores the release against the table it
came from: the workload error is the mean over the release's workload pairs of
``0.5 * || true / N - model / N' ||_1`` (each normalised by its own total), the same TV that
``ddssp evaluate`` reports. The table has one row per case:

    case  rows  columns  numeric  eps  CPU s  peak MB  rounds  workload error  load

``load`` is the 1-minute load average when the case finished (on a shared machine CPU seconds, not
wall time, are the comparable number; a high load still inflates them). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

#: shapes of the numeric columns, cycled in this order
SHAPES = ("normal", "lognormal", "bimodal", "zero-inflated", "integer", "skewed", "uniform")


def generate_mixed(rows: int, columns: int, numeric: int, seed: int = 0) -> pd.DataFrame:
    """A table with ``numeric`` continuous columns and the rest categorical, driven by shared latent factors.

    Three latent standard-normal factors drive everything: column ``j`` loads on factor ``j % 3``
    (weight 0.5 to 0.9) plus a weaker second factor and its own noise, so neighbouring columns are
    correlated and distant ones only weakly. Each numeric column then takes one of :data:`SHAPES`
    (normal; lognormal income-like; bimodal; 0 with a probability that falls with the latent, else
    lognormal; whole numbers 0..60; gamma-like skew; uniform through the normal CDF). Categorical
    columns cut a latent into 3 to 8 unequal levels (labels ``c<j>_<k>``), the last one with an extra
    level chosen at random in 2% of rows.

    Parameters
    ----------
    rows, columns, numeric : int
        The table's size and its number of numeric columns (0 <= numeric <= columns).
    seed : int
        Seeds the generator.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ValueError
        For an impossible size.
    """
    from scipy.special import ndtr

    if not (0 <= numeric <= columns) or rows < 1:
        raise ValueError("need rows >= 1 and 0 <= numeric <= columns")
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((3, rows))
    out: dict[str, np.ndarray] = {}
    for j in range(columns):
        w1 = 0.5 + 0.4 * ((j * 7919) % 11) / 10
        w2 = 0.3 * ((j * 104729) % 7) / 6
        z = w1 * f[j % 3] + w2 * f[(j + 1) % 3]
        z = (z + np.sqrt(max(1e-6, 1 - w1**2 - w2**2)) * rng.standard_normal(rows)) / np.sqrt(
            w1**2 + w2**2 + max(1e-6, 1 - w1**2 - w2**2)
        )
        if j < numeric:
            shape = SHAPES[j % len(SHAPES)]
            if shape == "normal":
                v = np.round(50 + 12 * z, 2)
            elif shape == "lognormal":
                v = np.round(np.exp(10 + 0.8 * z), 0)
            elif shape == "bimodal":
                mode = rng.random(rows) < ndtr(1.5 * z)
                v = np.round(np.where(mode, 120 + 8 * z, 40 + 6 * z) + rng.normal(0, 4, rows), 1)
            elif shape == "zero-inflated":
                zero = rng.random(rows) < 1 - ndtr(z - 0.3)
                v = np.where(zero, 0.0, np.round(np.exp(6 + 1.2 * z + rng.normal(0, 0.5, rows)), 0))
            elif shape == "integer":
                v = np.clip(np.round(30 + 10 * z), 0, 60).astype(np.int64)
            elif shape == "skewed":
                v = np.round(rng.gamma(2.0, 1.0, rows) * np.exp(0.5 * z) * 15, 1)
            else:
                v = np.round(ndtr(z) * 1000, 1)
            out[f"x{j}"] = v
        else:
            k = 3 + j % 6
            cuts = np.quantile(z, np.cumsum(np.linspace(1.0, 2.0, k))[:-1] / np.linspace(1.0, 2.0, k).sum())
            lev = np.searchsorted(cuts, z)
            if j == columns - 1:
                lev = np.where(rng.random(rows) < 0.02, k, lev)
            out[f"c{j}"] = np.array([f"c{j}_{i}" for i in range(k + 1)], dtype=object)[lev]
    return pd.DataFrame(out)


def write_mixed(path: str | Path, rows: int, columns: int, numeric: int, seed: int = 0) -> Path:
    """:func:`generate_mixed` written as CSV (in chunks of 100k rows, so 1M-row tables fit).

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    rows, columns, numeric : int
        As for :func:`generate_mixed`.
    seed : int
        Seeds the generator.

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    chunk = 100_000
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for i, start in enumerate(range(0, rows, chunk)):
            n = min(chunk, rows - start)
            generate_mixed(n, columns, numeric, seed=seed * 1_000_003 + i).to_csv(fh, index=False, header=(i == 0))
    return path


# --------------------------------------------------------------------------- cases
@dataclass
class Case:
    """One benchmark case.

    Attributes
    ----------
    name : str
        Its name (the method column).
    kind : str
        "mixed" (a generated table), "adult" (discretized, public domain), "adult-rows" (the same,
        resampled to ``rows`` rows, counted by DuckDB) or "adult-raw" (discovery).
    eps : float
        The release's eps.
    rows, columns, numeric : int
        The generated table's size (mixed).
    extra : list of str
        Extra ``ddssp release`` arguments.
    """

    name: str
    kind: str
    eps: float
    rows: int = 0
    columns: int = 0
    numeric: int = 0
    extra: list[str] = field(default_factory=list)


CASES = {
    "a": Case("a mixed 50k x 10", "mixed", 1.0, 50_000, 10, 7),
    "b": Case("b mixed 500k x 20", "mixed", 1.0, 500_000, 20, 10),
    "c": Case("c wide 100k x 100", "mixed", 1.0, 100_000, 100, 50),
    "w50": Case("w wide 100k x 50", "mixed", 1.0, 100_000, 50, 25),
    "w50m": Case("w wide 1M x 50", "mixed", 1.0, 1_000_000, 50, 25),
    "c1m": Case("c wide 1M x 100", "mixed", 1.0, 1_000_000, 100, 50),
    "s1m": Case("s Adult 1M rows", "adult-rows", 1.0, 1_000_000),
    "s10m": Case("s Adult 10M rows", "adult-rows", 1.0, 10_000_000),
    "d1": Case("d Adult eps 1", "adult", 1.0),
    "d4": Case("d Adult eps 4", "adult", 4.0),
    "d8": Case("d Adult eps 8", "adult", 8.0),
    "e": Case("e raw Adult eps 1", "adult-raw", 1.0),
}


def _workload_error(release_path: Path, data_path: Path, domain_path: Path | None) -> tuple[float, int]:
    """Mean TV over the release's workload cliques of the model's marginal vs the data's (and rounds)."""
    from ddssp.data.tables import read_table
    from ddssp.estimators.suffstats import ExactMarginals
    from ddssp.marginals.workload import total_variation as tv
    from ddssp.releasefile import Release

    rel = Release.load(release_path)
    if domain_path is not None:  # integer codes under a public domain file
        codes = pd.read_csv(data_path)[list(rel.schema.names)]
    else:
        import warnings

        from ddssp.data.encoding import ClipWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClipWarning)  # the release's own clipping, said by the release
            codes = rel.schema.encode(read_table(str(data_path)))
    exact = ExactMarginals(codes, rel.schema)
    errs = [tv(exact.marginal(list(c)), rel.marginal(list(c))) for c, _w in rel.workload]
    rounds = max((int(m.round) for m in rel.measurements), default=0)
    return float(np.mean(errs)), rounds


#: runs its arguments as a command and writes that command's CPU seconds and peak RSS as the last
#: line of stderr (the wrapper's own children are only that command)
_USAGE = (
    "import json, resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:])\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps({'cpu_s': u.ru_utime + u.ru_stime, 'maxrss_kb': u.ru_maxrss}), file=sys.stderr)\n"
    "sys.exit(p.returncode)\n"
)


def run_case(
    case: Case, data_dir: Path, tmp: Path, timeout: float | None, seed: int = 0, insecure_seed: int | None = None
) -> dict:
    """Release one case in a subprocess and score it.

    Parameters
    ----------
    case : Case
        The case.
    data_dir : pathlib.Path
        The folder with the Adult files.
    tmp : pathlib.Path
        Where the table and the release go.
    timeout : float or None
        Stop the release after this many seconds.
    seed : int
        Seeds the generated table and the release.
    insecure_seed : int, optional
        Seeded (NOT private) noise, for before/after comparisons on the same noise draws.

    Returns
    -------
    dict
        The table's fields, or ``{"error": why}``.
    """
    out = tmp / f"{case.name.split()[0]}-{case.kind}-{case.eps:g}.release"
    domain = None
    if case.kind == "mixed":
        data = tmp / f"mixed_{case.rows}_{case.columns}_{case.numeric}_{seed}.csv"
        if not data.exists():
            write_mixed(data, case.rows, case.columns, case.numeric, seed=seed)
        args = [str(data)]
    elif case.kind == "adult":
        data, domain = data_dir / "adult.csv", data_dir / "adult-domain.json"
        args = [str(data), "--domain", str(domain)]
        case.rows, case.columns = len(pd.read_csv(data, usecols=[0])), len(json.loads(domain.read_text()))
    elif case.kind == "adult-rows":  # Adult resampled to case.rows rows, counted by DuckDB
        from ddssp.bench.scale import generate

        domain = data_dir / "adult-domain.json"
        data = tmp / f"adult_{case.rows}.csv"
        if not data.exists():
            generate(data_dir / "adult.csv", case.rows, data, "csv")
        args = [str(data), "--domain", str(domain), "--backend", "duckdb"]
        case.columns = len(json.loads(domain.read_text()))
    else:
        data = data_dir / "adult_raw.csv"
        args = [str(data), "--na-values", "?"]
        case.rows, case.columns = len(pd.read_csv(data, usecols=[0])), len(pd.read_csv(data, nrows=1).columns)
    cmd = [
        sys.executable,
        "-m",
        "ddssp",
        "release",
        *args,
        "--eps",
        str(case.eps),
        "-o",
        str(out),
        "--force",
        "--quiet",
        "--seed",
        str(seed),
        *(["--insecure-seed", str(insecure_seed)] if insecure_seed is not None else []),
        *case.extra,
    ]
    t = time.perf_counter()
    # through a wrapper process, so that the peak RSS is this release's, not the largest so far; in
    # a session of its own, so that a timeout stops the release too, not only the wrapper
    p = subprocess.Popen(
        [sys.executable, "-c", _USAGE, *cmd],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"error": f"stopped after {timeout:.0f} s"}
    wall = time.perf_counter() - t
    lines = err.strip().splitlines() or ["?"]
    if p.returncode != 0:
        return {"error": (lines[-2] if len(lines) > 1 else lines[-1])[:200]}
    usage = json.loads(lines[-1])
    cpu = usage["cpu_s"]
    err, rounds = _workload_error(out, data, domain)
    from ddssp.releasefile import Release

    rel = Release.load(out)
    numeric = len(rel.schema.numeric) if case.kind != "adult" else 0
    out.unlink(missing_ok=True)
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "peak_mb": usage["maxrss_kb"] / 1024,
        "rounds": rounds,
        "error": None,
        "tv": err,
        "numeric_found": numeric,
        "load": os.getloadavg()[0],
    }


HEADER = (
    f"{'case':<20} {'rows':>9} {'cols':>5} {'num':>4} {'eps':>4} {'CPU s':>8} {'peak MB':>8} "
    f"{'rounds':>6} {'wl error':>9} {'load':>5}"
)


def format_row(case: Case, r: dict) -> str:
    """One line of the printed table for a case's result.

    Parameters
    ----------
    case : Case
        The case.
    r : dict
        Its result (:func:`run_case`).

    Returns
    -------
    str
    """
    head = f"{case.name:<20} {case.rows:>9,} {case.columns:>5} "
    if r.get("error"):
        return head + f"{case.numeric:>4} {case.eps:>4g}  {r['error']}"
    num = f"{case.numeric}/{r['numeric_found']}" if case.kind == "mixed" else str(r["numeric_found"])
    return head + (
        f"{num:>4} {case.eps:>4g} {r['cpu_s']:>8.1f} {r['peak_mb']:>8.0f} {r['rounds']:>6} "
        f"{r['tv']:>9.4f} {r['load']:>5.1f}"
    )


def _spec_cases(spec: dict, eps_override: list[float] | None) -> list[Case]:
    """The spec's ``cases``: names from :data:`CASES` or tables ``{name, kind, rows, columns, numeric,
    eps}`` (``kind`` mixed, adult, adult-rows or adult-raw); ``--eps`` replaces each case's eps by every value given."""
    from ddssp.errors import WorkloadError

    out: list[Case] = []
    for c in spec.get("cases", ["a", "d1", "d4", "e"]):
        if isinstance(c, str):
            if c not in CASES:
                raise WorkloadError(f"mixed-release: unknown case {c!r}; known: {', '.join(CASES)}")
            base = CASES[c]
        elif isinstance(c, dict) and c.get("kind", "mixed") in ("mixed", "adult", "adult-rows", "adult-raw"):
            base = Case(
                str(c.get("name", c.get("kind", "mixed"))),
                c.get("kind", "mixed"),
                float(c.get("eps", 1.0)),
                int(c.get("rows", 0)),
                int(c.get("columns", 0)),
                int(c.get("numeric", 0)),
                [str(x) for x in c.get("release_args", [])],
            )
            if base.kind == "mixed" and (base.rows < 1 or not 0 <= base.numeric <= base.columns):
                raise WorkloadError(f"mixed-release: case {base.name!r} needs rows >= 1, 0 <= numeric <= columns")
        else:
            raise WorkloadError(
                f"mixed-release: a case is a name or a table with kind mixed/adult/adult-rows/adult-raw: {c!r}"
            )
        for e in eps_override or [base.eps]:
            out.append(Case(base.name, base.kind, float(e), base.rows, base.columns, base.numeric, list(base.extra)))
    return out


def run(spec: dict, ctx) -> pd.DataFrame:
    """``kind = "mixed-release"`` for ``ddssp bench``: one release per case and trial. Prints the table.

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        Overrides and the data folder.

    Returns
    -------
    pandas.DataFrame
        Metrics ``cpu_s``, ``peak_mb``, ``rounds``, ``workload_tv`` (method = the case's name).
    """
    import shutil

    cases = _spec_cases(spec, ctx.eps)
    trials = int(ctx.setting(spec, "trials", ctx.trials, 1))
    timeout = float(spec.get("timeout", 1800))
    data_dir = ctx.data_dir or DEFAULT_DATA
    work = Path(tempfile.mkdtemp(prefix="ddssp-mixed-"))
    rows: list[dict] = []
    print(HEADER, flush=True)
    try:
        for case in cases:
            for trial in range(trials):
                key = {"method": case.name, "epsilon": case.eps, "trial": trial}
                done = ctx.cell(key)
                if done is not None:
                    rows.extend(done)
                    continue
                r = run_case(case, data_dir, work, timeout, seed=(ctx.seed or 0) + trial)
                print(format_row(case, r), flush=True)
                if r.get("error"):
                    ctx.log(f"mixed-release: {case.name} eps {case.eps:g}: {r['error']}")
                    continue
                cell = [
                    {**key, "metric": m, "value": float(r[k]), "seconds": r["wall_s"]}
                    for m, k in (
                        ("cpu_s", "cpu_s"),
                        ("peak_mb", "peak_mb"),
                        ("rounds", "rounds"),
                        ("workload_tv", "tv"),
                        ("numeric_discovered", "numeric_found"),
                        ("load", "load"),
                    )
                ]
                rows.extend(cell)
                ctx.save_cell(cell)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not rows:
        from ddssp.errors import WorkloadError

        raise WorkloadError("mixed-release: no case finished (see the table above for each case's error)")
    return pd.DataFrame(rows, columns=["method", "epsilon", "trial", "metric", "value", "seconds"])


def main(argv: list[str] | None = None) -> int:
    """Run the mixed-table cases (or only generate a table) and print the table.

    Parameters
    ----------
    argv : list of str, optional
        The command line (``sys.argv[1:]`` by default); see ``python -m ddssp.bench.mixed --help``.

    Returns
    -------
    int
        The exit status.
    """
    ap = argparse.ArgumentParser(prog="python -m ddssp.bench.mixed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="a,d1,d4,e", help=f"comma-separated among {', '.join(CASES)}")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="folder with adult.csv, adult-domain.json, adult_raw.csv")
    ap.add_argument("--tmp", default=tempfile.gettempdir(), help="where generated tables and releases go")
    ap.add_argument("--timeout", type=float, default=1800, help="stop a release after this many s")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generated tables and the release")
    ap.add_argument(
        "--insecure-seed",
        type=int,
        default=None,
        help="seeded, NOT private noise in every release: compare code versions on the same noise draws",
    )
    ap.add_argument("--generate", metavar="ROWS,COLUMNS,NUMERIC", help="only write a mixed table to -o")
    ap.add_argument("-o", "--output", help="CSV for --generate")
    args = ap.parse_args(argv)
    if args.generate:
        rows, cols, num = (int(float(x)) for x in args.generate.split(","))
        write_mixed(args.output, rows, cols, num, seed=args.seed)
        return 0
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        print(f"ddssp: error: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}", file=sys.stderr)
        return 1
    if args.tmp:
        Path(args.tmp).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ddssp-mixed-", dir=args.tmp))
    print(f"# ddssp mixed-table benchmark; cpu={os.cpu_count()}; num = numeric columns generated/discovered")
    print(HEADER, flush=True)
    for n in names:
        case = CASES[n]
        r = run_case(case, Path(args.data), work, args.timeout, seed=args.seed, insecure_seed=args.insecure_seed)
        print(format_row(case, r), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
