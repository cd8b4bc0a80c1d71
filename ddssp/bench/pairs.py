"""Scoring benchmark: all two-way marginals of a wide model, one at a time and in one call.

    python -m ddssp.bench.pairs [--columns 100] [--size-mb 20] [--seed 0] [--single]

Builds a model of ``--columns`` columns (sizes drawn from 3 to 25) on a random tree of pair
cliques plus random extra pairs while the triangulated model stays under ``--size-mb``, with
random potentials, and prints the CPU seconds of :meth:`GraphicalModel.marginals` on every pair
(what AIM scores each round) and, with ``--single``, of one :meth:`GraphicalModel.marginal` call
per pair. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from ddssp.marginals.model import GraphicalModel, model_size_mb


def wide_model(columns: int, size_mb: float, seed: int = 0) -> GraphicalModel:
    """A random model of ``columns`` columns whose junction tree stays under ``size_mb`` (see above).

    Parameters
    ----------
    columns : int
        The number of columns (at least 2).
    size_mb : float
        The model-size limit, MB of float64 tables.
    seed : int
        Seeds the structure and the potentials.

    Returns
    -------
    GraphicalModel
    """
    rng = np.random.default_rng(seed)
    dom = {f"v{i:03d}": int(rng.choice([3, 4, 5, 6, 8, 15, 20, 25])) for i in range(columns)}
    names = list(dom)
    cliques = [(names[i], names[int(rng.integers(0, i))]) for i in range(1, columns)]
    misses = 0
    while misses < 20:
        a, b = rng.choice(names, 2, replace=False)
        if model_size_mb(dom, [*cliques, (a, b)]) > size_mb:
            misses += 1
            continue
        cliques.append((a, b))
    pots = {c: rng.normal(0, 1, [dom[x] for x in c]) for c in cliques}
    return GraphicalModel(dom, pots, 1e5)


def main(argv: list[str] | None = None) -> int:
    """Print the model and the CPU seconds of scoring every pair.

    Parameters
    ----------
    argv : list of str, optional
        The command line.

    Returns
    -------
    int
        The exit status.
    """
    ap = argparse.ArgumentParser(prog="python -m ddssp.bench.pairs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--columns", type=int, default=100)
    ap.add_argument("--size-mb", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--single", action="store_true", help="also time one marginal() call per pair")
    args = ap.parse_args(argv)
    model = wide_model(args.columns, args.size_mb, args.seed)
    pairs = list(itertools.combinations(model.domain, 2))
    print(f"model: {args.columns} columns, {len(model.cliques)} cliques, {model.size_mb:.1f} MB; {len(pairs)} pairs")
    t = time.process_time()
    model.marginals(pairs)
    print(f"marginals(), one call: {time.process_time() - t:.2f} CPU s")
    if args.single:
        fresh = GraphicalModel.from_beliefs(
            model.domain, model.beliefs, model.total, cliques=model.cliques, edges=model.edges
        )
        t = time.process_time()
        for q in pairs:
            fresh.marginal(q)
        print(f"marginal(), one call per pair: {time.process_time() - t:.2f} CPU s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
