"""Seeded discoveries of one table: how often a numeric column's synthetic values leave the data's range.

Runs :func:`ddssp.data.discovery.discover` on a CSV file once per seed (insecure seeded noise, the
budget of ``ddssp release --eps 1`` with discovery's share raised for a small table), and per numeric
column that discovery bins, decodes the real rows' own codes with within-bin draws (what a model that
fits the one-way marginal exactly would give). Prints, per column, the releases that binned it, those
with values beyond the real range by more than one of its equal-width bins ("out"), the number of such
values, those with a value that is impossible (negative for a column of values >= 0, or above 10x
the real maximum), the largest value drawn, and the mean share of real rows clipped outside the
discovered range; seeds whose out share exceeds 2% are listed first::

    python -m ddssp.bench.discovery_seeded FILE [--seeds 0:200] [--share 0.57] [--na-values '?']

A benchmark, not a release: the noise is seeded.
"""

from __future__ import annotations

import argparse
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ddssp.bench.discovery_medians import bin_quality
from ddssp.data.discovery.table import discover
from ddssp.data.encoding import decode, encode
from ddssp.dp import ChargedMechanisms, Ledger, rho_from_eps_delta
from ddssp.dp.noise import InsecureSeededNoise

COLUMNS = ["column", "binned", "releases_out", "values_out", "releases_impossible", "max", "clipped"]


def run(df: pd.DataFrame, seeds, share: float = 0.57, eps: float = 1.0, delta: float = 1e-9):
    """Per numeric column, the counts described in the module docstring, and the listed seeds.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    seeds : iterable of int
        Noise seeds (one discovery each).
    share : float
        Discovery's share of the release's rho.
    eps, delta : float
        The release's budget.

    Returns
    -------
    table : pandas.DataFrame
        One row per column binned at least once.
    listed : list of str
        One line per (seed, column) whose out share exceeds 2%.
    """
    rho = rho_from_eps_delta(eps, delta)
    tot: dict[str, list] = {}
    listed = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in seeds:
            mech = ChargedMechanisms(Ledger(rho, delta_budget=delta), InsecureSeededNoise(s))
            found, rep, _ = discover(
                df, list(df.columns), mech, rho=share * rho, delta=delta, rho_max=rho, collect=True
            )
            for name, c in found.items():
                if c.edges is None or not pd.api.types.is_numeric_dtype(df[name]):
                    continue
                real = df[[name]].dropna()
                x = real[name].to_numpy(float)
                schema = SimpleNamespace(columns=[c], names=[name], _by_name={name: c})
                v = decode(schema, encode(schema, real), rng=np.random.default_rng(s))[name].to_numpy(float)
                v = v[~np.isnan(v)]
                w = (x.max() - x.min()) / max(1, len(c.edges) - 1)
                out = int(np.sum((v > x.max() + w) | (v < x.min() - w)))
                bad = bool(np.any((v > 10 * max(x.max(), 1)) | ((v < 0) & (x.min() >= 0))))
                t = tot.setdefault(name, [0, 0, 0, 0, -np.inf, 0.0])
                t[0] += 1
                t[1] += out > 0
                t[2] += out
                t[3] += bad
                t[4] = max(t[4], float(v.max()))
                t[5] += bin_quality(x, c.edges)[0]
                if out > 0.02 * len(v):
                    listed.append(
                        f"{s} {name}: {rep.notes[name]}; out {out}, max {v.max():.6g}, real max {x.max():.6g}"
                    )
    rows = [[k, *t[:5], round(t[5] / t[0], 4)] for k, t in tot.items()]
    return pd.DataFrame(rows, columns=COLUMNS), listed


def main(argv=None) -> None:
    """Print the listed seeds and the table of :func:`run`.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments.
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("--seeds", default="0:200", help="first:last (last excluded)")
    p.add_argument("--share", type=float, default=0.57)
    p.add_argument("--na-values", nargs="*", default=[])
    a = p.parse_args(argv)
    lo, hi = (int(v) for v in a.seeds.split(":"))
    df = pd.read_csv(a.file, na_values=a.na_values, skipinitialspace=True)
    table, listed = run(df, range(lo, hi), a.share)
    print("\n".join(listed))
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
