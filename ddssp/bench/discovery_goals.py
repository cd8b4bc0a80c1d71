"""Private schema discovery on raw Adult at small sizes: does a release exist, and what is it worth.

Samples ``--sizes`` rows of the raw table (fresh rows per trial), releases each sample with a
discovered schema (no flags but ``--na-values``; secure noise, so trials differ) and counts the
releases that succeed and the columns they leave out; on sizes listed in ``--tv-sizes`` it also
releases the sample with the declared public codebook (``--schema``) and draws as many synthetic rows
as the sample has, and reports the mean two-way total variation of synthetic vs real rows for both
(numeric columns cut at the real deciles, as the real-table suite does) and its ratio.

    python -m ddssp.bench.discovery_goals --data ../shared/data --trials 20 --tv-trials 3
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
DEFAULT_SCHEMA = Path(__file__).resolve().parents[2] / "workloads" / "adult-raw.schema.json"


def one_trial(
    df: pd.DataFrame, n: int, eps: float, rng: np.random.Generator, schema_path: Path | None, with_tv: bool
) -> dict:
    """Release an ``n``-row sample once (discovered, and declared when ``with_tv``) and score it.

    Parameters
    ----------
    df : pandas.DataFrame
        The raw table (strings; missing as NaN).
    n : int
        Rows to sample (the whole table when ``n >= len(df)``).
    eps : float
        The budget of each release.
    rng : numpy.random.Generator
        Chooses the sample and seeds the synthetic rows (not DP noise).
    schema_path : pathlib.Path or None
        The declared codebook.
    with_tv : bool
        Also score two-way TV of synthetic vs real rows.

    Returns
    -------
    dict
        ``ok``, ``dropped`` (columns left out), ``error`` and, with ``with_tv``, ``tv2_discovered``,
        ``tv2_declared``, ``cpu_s``.
    """
    from ddssp.bench.tv_distance import column_kind, tv_distances
    from ddssp.data.schemafile import load_schema
    from ddssp.errors import DDSSPError
    from ddssp.pipeline import release

    sample = df if n >= len(df) else df.iloc[np.sort(rng.choice(len(df), n, replace=False))].reset_index(drop=True)
    out: dict = {"ok": False, "dropped": [], "error": None}
    t = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rel = release(sample, eps=eps, progress=False)
        except DDSSPError as e:
            out["error"] = str(e).splitlines()[0][:160]
            return out
    out["ok"] = True
    out["cpu_s"] = time.process_time() - t
    out["dropped"] = [c for c in sample.columns if c not in rel.schema.names]
    out["warnings"] = len(caught)
    if not with_tv:
        return out
    kinds = {c: column_kind(sample[c], False) for c in sample.columns}
    seed = int(rng.integers(2**31))
    syn = rel.sample(len(sample), seed=seed)
    out["tv2_discovered"] = tv_distances(sample, syn, kinds, 300, "goals")[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        declared = release(sample, load_schema(schema_path), eps=eps, progress=False)
    syn_d = declared.sample(len(sample), seed=seed)
    out["tv2_declared"] = tv_distances(sample, syn_d, kinds, 300, "goals")[1]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the trials and print one line per size.

    Parameters
    ----------
    argv : list of str, optional
        The command line (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        The exit status.
    """
    ap = argparse.ArgumentParser(prog="python -m ddssp.bench.discovery_goals", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="folder with adult_raw.csv")
    ap.add_argument("--schema", default=str(DEFAULT_SCHEMA), help="the declared codebook (schema file)")
    ap.add_argument("--sizes", default="1000,2000,5000", help="sample sizes (rows); 'full' for the whole table")
    ap.add_argument("--tv-sizes", default="5000,full", help="sizes also scored by two-way TV against the codebook")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--trials", type=int, default=20, help="releases per size (success count)")
    ap.add_argument("--tv-trials", type=int, default=3, help="releases per size scored by TV")
    ap.add_argument("--seed", type=int, default=0, help="seeds the samples and synthetic rows (not DP noise)")
    args = ap.parse_args(argv)
    from ddssp.data.tables import read_table

    path = Path(args.data) / "adult_raw.csv"
    if not path.exists():
        print(f"ddssp: error: {path} not found; pass --data", flush=True)
        return 1
    df = read_table(path, na_values=["?"])
    rng = np.random.default_rng(args.seed)

    def size(s: str) -> int:
        return len(df) if s.strip() == "full" else int(s)

    tv_sizes = {size(s) for s in args.tv_sizes.split(",") if s.strip()}
    sizes = [size(s) for s in args.sizes.split(",") if s.strip()]
    sizes += [n for n in sorted(tv_sizes) if n not in sizes]
    print(f"# raw Adult, eps {args.eps:g}; discovered schema vs the declared codebook {Path(args.schema).name}")
    print(
        f"{'rows':>6} {'released':>9} {'TV2 disc':>9} {'TV2 decl':>9} {'ratio':>6} {'CPU s':>6}  dropped (count of runs)"
    )
    for n in sizes:
        scored = n in tv_sizes
        trials = args.tv_trials if (scored and n not in [size(s) for s in args.sizes.split(",")]) else args.trials
        rows = []
        for k in range(trials):
            rows.append(one_trial(df, n, args.eps, rng, Path(args.schema), scored and k < args.tv_trials))
        ok = sum(r["ok"] for r in rows)
        dropped: dict[str, int] = {}
        for r in rows:
            for c in r["dropped"]:
                dropped[c] = dropped.get(c, 0) + 1
        drop_txt = ", ".join(f"{c} ({m})" for c, m in sorted(dropped.items())) or "-"
        tvd = [r["tv2_discovered"] for r in rows if "tv2_discovered" in r]
        tvc = [r["tv2_declared"] for r in rows if "tv2_declared" in r]
        cpu = [r["cpu_s"] for r in rows if "cpu_s" in r]
        a, b = (float(np.mean(tvd)), float(np.mean(tvc))) if tvd else (float("nan"), float("nan"))
        print(
            f"{n:>6} {ok:>4} / {len(rows):<3} {a:>9.4f} {b:>9.4f} {a / b if tvd else float('nan'):>6.2f} "
            f"{np.mean(cpu) if cpu else float('nan'):>6.1f}  {drop_txt}",
            flush=True,
        )
        errors = sorted({r["error"] for r in rows if r["error"]})
        for e in errors:
            print(f"       refused: {e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
