"""Private medians against noisy histograms for the bin edges of continuous columns.

Runs :func:`ddssp.data.discovery.discover` on generated tables of eight continuous columns (normal,
lognormal, bimodal, penguin-bill-like; two of each) twice per seed: with the private median tree at
every size (``MEDIANS_BELOW`` infinite) and never (0). Prints, per size, the share of rows clipped
outside the discovered range and the decile total variation of the data passed through the bins
(true bin shares, spread uniformly inside each bin) against its real deciles::

    python -m ddssp.bench.discovery_medians [--seeds 10] [--sizes 344,1000,2000,5000,48842]

With ``--real DIR`` it runs on real tables instead (:func:`run_real`): penguins and penguins-raw
(``palmerpenguins``), raw Adult sampled to ``--sizes`` rows; per numeric column the path taken
(medians, bins or levels), the share of rows clipped, and the one-way decile TV of the values
passed through the schema with the within-bin weights and with uniform spreading::

    python -m ddssp.bench.discovery_medians --real ../shared/data --sizes 1000,2000,5000,48842

Insecure seeded noise (a benchmark, not a release).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from ddssp.data.discovery import numeric
from ddssp.data.discovery.table import discover
from ddssp.dp import ChargedMechanisms, Ledger, rho_from_eps_delta
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
        ``MEDIANS_BELOW`` for this run (0: never medians, inf: always, for numbers that are not whole
        and whole numbers spread over many values).
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


def real_tables(data: str | None, sizes, seed: int) -> dict[str, pd.DataFrame]:
    """The real tables of the ``--real`` comparison: penguins and penguins-raw (when the
    ``palmerpenguins`` package is installed) and raw Adult sampled to ``sizes`` rows (when ``data``
    holds ``adult_raw.csv``; a fresh sample per ``seed``).

    Parameters
    ----------
    data : str or None
        Folder with ``adult_raw.csv``.
    sizes : iterable of int
        Adult sample sizes (at least the table's rows: the whole table).
    seed : int
        Chooses the Adult samples.

    Returns
    -------
    dict
        ``{name: table}``.
    """
    from pathlib import Path

    from ddssp.data.tables import read_table

    out = {}
    try:
        import palmerpenguins
    except ImportError:
        palmerpenguins = None
    if palmerpenguins is not None:
        out["penguins"] = palmerpenguins.load_penguins()
        out["penguins-raw"] = palmerpenguins.load_penguins_raw()
    path = Path(data) / "adult_raw.csv" if data else None
    if path is not None and path.exists():
        adult = read_table(path, na_values=["?"])
        rng = np.random.default_rng(seed)
        for n in sizes:
            if n >= len(adult):
                out["adult-full"] = adult
            else:
                out[f"adult-{n}"] = adult.iloc[np.sort(rng.choice(len(adult), n, replace=False))].reset_index(drop=True)
    return out


def passed_quality(col, x: np.ndarray, rng: np.random.Generator, draws: int = 20) -> tuple[float, float, float]:
    """A discovered numeric column's quality on its real values: the share clipped outside its range,
    and the one-way decile TV of the values passed through the schema (encoded, then decoded as
    synthetic rows draw them) against the real ones, with the column's within-bin weights and with
    uniform spreading inside each bin.

    Parameters
    ----------
    col : Column
        The discovered column (numeric, not a time axis).
    x : numpy.ndarray
        The real values (present ones only).
    rng : numpy.random.Generator
        Draws the decoded values (``draws`` per real value).
    draws : int
        Decoded values per real value.

    Returns
    -------
    clipped, tv_weights, tv_uniform : float
    """
    import copy
    import warnings

    from ddssp.bench.tv_distance import discretize
    from ddssp.data.schema import Schema
    from ddssp.data.within import Within

    vals = np.asarray(col.values, dtype=float)
    lo, hi = (col.edges[0], col.edges[-1]) if col.is_binned else (np.nanmin(vals), np.nanmax(vals))
    clipped = float(np.mean((x < lo) | (x > hi)))
    flat = copy.deepcopy(col)
    if col.is_binned and col.within is not None:
        flat.with_within(Within(tuple(None if b is None else ((), (1.0,)) for b in col.within.bins), col.within.whole))
    tvs = []
    frame = pd.DataFrame({col.name: np.tile(x, draws)})
    for c in (col, flat):
        schema = Schema([c])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dec = schema.decode(schema.encode(frame), rng=rng)[col.name]
        r, s, k = discretize(pd.Series(x), dec, "numeric")
        p = np.bincount(r, minlength=k) / len(r)
        q = np.bincount(s, minlength=k) / len(s)
        tvs.append(0.5 * float(np.abs(p - q).sum()))
    return clipped, tvs[0], tvs[1]


def run_real(tables: dict[str, pd.DataFrame], seeds, eps: float = 1.0) -> pd.DataFrame:
    """Discovery on real tables as a release runs it (the budget from the noisy row count), per seed
    and numeric column: its path, bins, share clipped and decile TV through the schema
    (:func:`passed_quality`); a column left out or found categorical is recorded as such.

    Parameters
    ----------
    tables : dict
        ``{name: table}``.
    seeds : iterable of int
        Noise seeds (insecure seeded noise).
    eps : float
        The release's eps (delta 1e-9).

    Returns
    -------
    pandas.DataFrame
    """
    import warnings

    from ddssp.data.discovery.slots import parse_numbers
    from ddssp.dp.noise import make_noise
    from ddssp.pipeline.plan import plan_schema

    rows = []
    for tname, df in tables.items():
        numeric_cols = [c for c in df.columns if np.mean(~np.isnan(parse_numbers(df[c])[0])) > 0.5]
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plan = plan_schema(df, None, eps=eps, delta=1e-9, noise=make_noise(seed))
            for c in numeric_cols:
                x = parse_numbers(df[c])[0]
                x = x[~np.isnan(x)]
                whole = bool(np.all(x == np.round(x)))
                if c not in plan.schema.names:
                    rows.append((tname, c, whole, seed, "dropped", 0, np.nan, np.nan, np.nan))
                    continue
                col = plan.schema.column(c)
                if col.kind != "numeric" or col.unit is not None:
                    rows.append((tname, c, whole, seed, col.kind if col.unit is None else "date", 0) + (np.nan,) * 3)
                    continue
                note = plan.notes.get(c, "")
                path = "medians" if "medians" in note else ("bins" if col.is_binned else "levels")
                q = passed_quality(col, x, np.random.default_rng(seed))
                rows.append((tname, c, whole, seed, path, col.size - (col.missing is not None)) + q)
    return pd.DataFrame(
        rows, columns=["table", "column", "whole", "seed", "path", "bins", "clipped", "tv_weights", "tv_uniform"]
    )


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
    ap.add_argument(
        "--real",
        metavar="DIR",
        help="instead: real tables (penguins, penguins-raw, raw Adult from DIR/adult_raw.csv sampled to "
        "--sizes), discovered as a release does; per column the path, bins, share clipped and decile TV "
        "through the schema with the within-bin weights and with uniform spreading",
    )
    ap.add_argument("--tables", default="", help="with --real: only these tables (comma-separated names)")
    args = ap.parse_args(argv)
    if args.real is not None:
        sizes = [int(v) for v in args.sizes.split(",") if v.strip()]
        tables = real_tables(args.real, sizes, 0)
        if args.tables:
            tables = {k: v for k, v in tables.items() if k in args.tables.split(",")}
        pd.set_option("display.width", 200)
        for name, df in tables.items():
            r = run_real({name: df}, range(args.seeds), args.eps)
            by = r.groupby("column", sort=False)
            print(
                f"# {name} ({len(df)} rows), eps {args.eps:g}, {args.seeds} seeds\n"
                + by.agg(
                    whole=("whole", "first"),
                    paths=("path", lambda p: ",".join(f"{k}:{v}" for k, v in p.value_counts().items())),
                    bins=("bins", "mean"),
                    clipped=("clipped", "mean"),
                    tv_weights=("tv_weights", "mean"),
                    tv_uniform=("tv_uniform", "mean"),
                )
                .round(3)
                .to_string(),
                flush=True,
            )
        return
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
