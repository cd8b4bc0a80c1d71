"""Private medians against noisy histograms for the bin edges of continuous columns.

Runs :func:`ddssp.data.discovery.discover` on generated tables of eight continuous columns (normal,
lognormal, bimodal, penguin-bill-like; two of each) twice per seed: with the private median tree at
every size (``MEDIANS_BELOW`` infinite) and never (0). Prints, per size, the share of rows clipped
outside the discovered range and the decile total variation of the data passed through the bins
(true bin shares, spread uniformly inside each bin) against its real deciles::

    python -m ddssp.bench.discovery_medians [--seeds 10] [--sizes 344,1000,2000,5000,48842]

Insecure seeded noise (a benchmark, not a release).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from ddssp.data.discovery import numeric
from ddssp.data.discovery.table import discover
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise


def _columns(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "normal": rng.normal(50, 10, n),
        "lognormal": rng.lognormal(3, 0.8, n),
        "bimodal": np.concatenate([rng.normal(20, 3, n // 2), rng.normal(60, 5, n - n // 2)]),
        "penguin_bill": rng.normal(43.9, 5.5, n),
    }


def bin_quality(x: np.ndarray, edges) -> tuple[float, float]:
    """Share of ``x`` outside the edges, and the decile total variation of ``x`` through the bins.

    Parameters
    ----------
    x : numpy.ndarray
        The real values.
    edges : sequence of float
        The bin edges.

    Returns
    -------
    clipped : float
    decile_tv : float
    """
    e = np.asarray(edges, dtype=float)
    clipped = float(np.mean((x < e[0]) | (x > e[-1])))
    share = np.histogram(np.clip(x, e[0], e[-1]), bins=e)[0] / len(x)
    dec = np.quantile(x, np.linspace(0, 1, 11))
    mass = np.zeros(10)
    for a, b, s in zip(e[:-1], e[1:], share):
        if s > 0 and b > a:
            mass += s * (np.clip(dec[1:], a, b) - np.clip(dec[:-1], a, b)) / (b - a)
    return clipped, float(0.5 * np.abs(mass - 0.1).sum() + 0.5 * (1 - mass.sum()))


def run(n: int, medians_below: float, seeds, eps: float = 1.0) -> pd.DataFrame:
    """One row per (seed, column): kept, clipped share, decile TV, bins, whether medians were used.

    Parameters
    ----------
    n : int
        Rows of each generated table.
    medians_below : float
        ``MEDIANS_BELOW`` for this run (0: never medians, inf: always, for numbers that are not whole).
    seeds : iterable of int
        Table and noise seeds.
    eps : float
        The release's eps (delta 1e-9; discovery's share from the noisy row count).

    Returns
    -------
    pandas.DataFrame
    """
    saved = numeric.MEDIANS_BELOW
    numeric.MEDIANS_BELOW = medians_below
    rows = []
    try:
        for seed in seeds:
            rng = np.random.default_rng(1000 + seed)
            df = pd.DataFrame({f"{k}{i}": np.round(v, 4) for i in range(2) for k, v in _columns(n, rng).items()})
            rho = rho_from_eps_delta(eps, 1e-9)
            mech = ChargedMechanisms(Ledger(rho), InsecureSeededNoise(seed))
            found, rep, _ = discover(df, list(df.columns), mech, rho=0.1 * rho, delta=1e-9, rho_max=rho, collect=True)
            for c in df.columns:
                kind = c.rstrip("0123456789")
                if c in found:
                    clipped, tv = bin_quality(df[c].to_numpy(), found[c].edges)
                    rows.append((kind, 1, clipped, tv, len(found[c].edges) - 1, "medians" in rep.notes[c]))
                else:
                    rows.append((kind, 0, math.nan, math.nan, 0, False))
    finally:
        numeric.MEDIANS_BELOW = saved
    return pd.DataFrame(rows, columns=["column", "kept", "clipped", "decile_tv", "bins", "medians"])


def main(argv=None) -> None:
    """Print the comparison table.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--sizes", default="344,1000,2000,5000,48842")
    ap.add_argument("--eps", type=float, default=1.0)
    args = ap.parse_args(argv)
    print("rows  kept(hist/med)  clipped(hist/med)  decile_tv(hist/med)  bins(hist/med)")
    for n in (int(v) for v in args.sizes.split(",")):
        h = run(n, 0.0, range(args.seeds), args.eps)
        m = run(n, math.inf, range(args.seeds), args.eps)
        print(
            f"{n:>6}  {h.kept.mean():.2f}/{m.kept.mean():.2f}  {h.clipped.mean():.3f}/{m.clipped.mean():.3f}  "
            f"{h.decile_tv.mean():.3f}/{m.decile_tv.mean():.3f}  {h.bins.mean():.1f}/{m.bins.mean():.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
