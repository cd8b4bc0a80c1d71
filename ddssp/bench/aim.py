"""Benchmark AIM on an integer-coded table (default: UCI Adult from ../shared/data).

    python -m ddssp.bench.aim [--data ../shared/data/adult.csv --domain ../shared/data/adult-domain.json]
        [--eps 1] [--delta 1e-9] [--iters N] [--final-iters 1000] [--max-model-size 80] [--seed 0]
        [--engine numpy|mbi] [--rounds T] [--quiet]
        [--scale K] [--scale-seed 0] [--fit fast|legacy] [--min-rounds-left K] [--noise-seed S]

``--scale K`` resamples the table to round(K * rows) rows (with replacement, fixed ``--scale-seed``)
before the run: a high-signal setting (Adult x 20 = 976,840 rows). ``--fit legacy`` runs the
per-round estimation of the legacy loop (cold mirror descent warm-started from the previous
potentials, up to 250 iterations per round, model rebuilt for scoring) for before/after comparisons.

Prints wall time, rounds, rho budget / spent, peak memory (ru_maxrss) and the workload error:
the mean over all two-way marginals of 0.5 * || true/N - model/N ||_1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ddssp.types import Domain

DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def workload_error(model, data: pd.DataFrame, domain: Domain, workload) -> float:
    """The mean over the workload's cliques of 0.5 * || true/N - model/N ||_1.

    Parameters
    ----------
    model : GraphicalModel
        The fitted model.
    data : pandas.DataFrame
        The integer-coded table.
    domain : dict
        ``{column: size}``.
    workload : Workload
        The cliques (weights ignored).

    Returns
    -------
    float
    """
    n = len(data)
    errs = []
    for cl, _ in workload:
        shape = [domain[a] for a in cl]
        idx = np.ravel_multi_index([data[a].to_numpy() for a in cl], shape)
        true = np.bincount(idx, minlength=int(np.prod(shape))).reshape(shape)
        errs.append(0.5 * np.abs(true / n - model.marginal(cl) / n).sum())
    return float(np.mean(errs))


def count_maps() -> int | None:
    """The number of memory maps of this process (lines of /proc/self/maps), or None where there is none.

    Returns
    -------
    int or None
    """
    try:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    """Run the AIM benchmark and print its numbers (see the module docstring).

    Parameters
    ----------
    argv : list of str, optional
        The command line (``sys.argv[1:]`` by default); see ``python -m ddssp.bench.aim --help``.

    Returns
    -------
    int
        The exit status.
    """
    p = argparse.ArgumentParser(prog="python -m ddssp.bench.aim", description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DEFAULT_DATA / "adult.csv"))
    p.add_argument("--domain", default=str(DEFAULT_DATA / "adult-domain.json"))
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-9)
    p.add_argument("--iters", type=int, default=None, help="iterations per round (default: fast mode)")
    p.add_argument("--final-iters", type=int, default=1000)
    p.add_argument("--max-model-size", type=float, default=80.0)
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--engine", choices=["numpy", "mbi"], default="numpy")
    p.add_argument("--quiet", action="store_true", help="no per-round lines")
    p.add_argument(
        "--noise-seed",
        type=int,
        default=None,
        help="benchmark only, NOT PRIVATE: draw the DP noise from a seeded generator so that two "
        "settings see the same noise (default: the secure source)",
    )
    p.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="resample the table to round(scale * rows) rows with replacement (default 1: as is)",
    )
    p.add_argument("--scale-seed", type=int, default=0, help="seed of the --scale resampling (default 0)")
    p.add_argument(
        "--fit",
        choices=["fast", "legacy"],
        default="fast",
        help="per-round estimation: fast (default) or legacy (plain mirror descent per round, for comparisons)",
    )
    p.add_argument(
        "--min-rounds-left",
        type=float,
        default=None,
        help="anneal only while the budget left pays for this many rounds after it (0: the AIM paper's rule; "
        "default: ddssp's MIN_ROUNDS_LEFT)",
    )
    args = p.parse_args(argv)

    from ddssp.dp import make_rng, rho_from_eps_delta
    from ddssp.marginals.aim import run_aim
    from ddssp.marginals.workload import all_pairs

    domain = json.loads(Path(args.domain).read_text())
    data = pd.read_csv(args.data)[list(domain)]
    if not args.scale > 0:
        p.error("--scale must be positive")
    if args.scale != 1.0:
        rs = np.random.default_rng(args.scale_seed)
        n_new = max(1, int(round(args.scale * len(data))))
        data = data.iloc[rs.integers(0, len(data), n_new)].reset_index(drop=True)
    rho = rho_from_eps_delta(args.eps, args.delta)
    workload = all_pairs(domain)

    def progress(pr):
        if not args.quiet:
            print(
                f"  round {pr.round:3d}/{pr.max_rounds}  rho {pr.rho_spent:.6f}/{pr.rho_budget:.6f}  "
                f"sigma {pr.sigma:9.3f}  {pr.clique}  [{time.perf_counter() - t0:7.1f} s]",
                flush=True,
            )

    noise = None
    if args.noise_seed is not None:
        from ddssp.dp import InsecureSeededNoise

        noise = InsecureSeededNoise(args.noise_seed)
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = run_aim(
        data,
        domain,
        workload,
        rho,
        rng=make_rng(args.seed),
        max_model_size=args.max_model_size,
        rounds=args.rounds,
        iters=args.iters,
        final_iters=args.final_iters,
        callback=progress,
        engine=args.engine,
        fit=args.fit,
        noise=noise,
        min_rounds_left=args.min_rounds_left,
    )
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    err = workload_error(res.model, data, domain, workload)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    tm = res.info["timings"]
    print(f"data            {args.data} ({len(data)} rows, {len(domain)} columns, {len(workload)} pairs)")
    print(
        f"setting         eps={args.eps} delta={args.delta} seed={args.seed} engine={args.engine} "
        f"iters={'fast' if args.iters is None else args.iters} final_iters={args.final_iters} "
        f"max_model_size={args.max_model_size} MB scale={args.scale:g} fit={args.fit} "
        f"min_rounds_left={res.info['settings']['min_rounds_left']:g} "
        f"noise={'secure' if args.noise_seed is None else f'INSECURE seeded {args.noise_seed}'}"
    )
    print(
        f"wall time       {wall:.1f} s  (estimate {tm['estimate']:.1f} s, final {tm['final']:.1f} s, "
        f"filter {tm['filter']:.1f} s, select {tm['select']:.1f} s)"
    )
    print(f"cpu time        {cpu:.1f} s  (this process, all threads: wall time on a busy machine overstates)")
    print(f"rounds          {res.rounds} (T={res.info['settings']['rounds_T']}, annealed {res.info['annealed']}x)")
    print(
        f"iterations      per round mean {np.mean(res.info['iterations']):.0f}, "
        f"total {int(np.sum(res.info['iterations']))}, final {res.info['final_iterations']}"
    )
    print(f"rho             budget {res.ledger.rho_budget:.9g}  spent {res.ledger.spent:.9g}")
    print(f"model           {len(res.model.cliques)} cliques, {res.info['model_size_mb']:.2f} MB")
    print(f"peak memory     {peak_mb:.0f} MB (ru_maxrss)")
    print(f"memory maps     {count_maps()}")
    print(f"workload error  {err:.5f}  (mean over {len(workload)} pairs of 0.5*||true/N - model/N||_1)")
    print(
        f"summary         rows={len(data)} eps={args.eps:g} fit={args.fit} wall_s={wall:.1f} cpu_s={cpu:.1f} "
        f"peak_rss_mb={peak_mb:.0f} workload_error={err:.5f} rounds={res.rounds}"
    )
    try:
        print(f"load average    {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
