"""Total variation distance between synthetic and real rows: of the one-way and two-way marginals,
on categories both tables share (:func:`tv_distances`).

Numeric columns are compared on the deciles of the REAL values, date columns on the deciles of their
time axis, other columns on their labels; missing is a category of its own, and a synthetic value
that is neither (e.g. a text label in a numeric column) is one more category (:func:`discretize`).
The pairs are a fixed-seed subset when there are more than asked for. The real-tables bench
(:mod:`.realtables`) and the discovery goals (:mod:`.discovery_goals`) score releases with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ddssp.bench.table_sources import named_rng

MISSING = "\x00missing"
OTHER = "\x00other"
#: labels the synthetic output writes for a missing value
SYNTH_MISSING = {"", "<missing>", "nan", "NaN", "None"}


def column_kind(values: pd.Series, dates: bool) -> str:
    """How a real column is compared: ``"date"`` when declared one, ``"numeric"`` when every present
    value parses as a number, else ``"categorical"``.

    Parameters
    ----------
    values : pandas.Series
        The column.
    dates : bool
        The column is declared a date column.

    Returns
    -------
    str
    """
    if dates:
        return "date"
    present = values.dropna()
    if len(present) and pd.to_numeric(present, errors="coerce").notna().all():
        return "numeric"
    return "categorical"


def to_axis(values: pd.Series, kind: str) -> pd.Series:
    """A column's values as numbers: seconds since 1970 for dates, else the numbers (NaN where a
    value does not parse).

    Parameters
    ----------
    values : pandas.Series
        The column.
    kind : str
        ``"date"`` or ``"numeric"``.

    Returns
    -------
    pandas.Series
    """
    if kind == "date":
        t = pd.to_datetime(values, errors="coerce", format="mixed")
        return (t - pd.Timestamp(0)).dt.total_seconds()  # NaN where the value is not a date
    return pd.to_numeric(values, errors="coerce")


def is_missing(values: pd.Series) -> np.ndarray:
    """The missing cells of a real or synthetic column: empty, or a missing label of the synthetic
    data (``SYNTH_MISSING``).

    Parameters
    ----------
    values : pandas.Series
        The column.

    Returns
    -------
    numpy.ndarray
        Boolean mask.
    """
    return (values.isna() | values.astype(str).isin(SYNTH_MISSING)).to_numpy()


def discretize(real: pd.Series, synth: pd.Series, kind: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer categories (shared by both) of a real and a synthetic column; see the module docstring.

    Parameters
    ----------
    real, synth : pandas.Series
        The columns.
    kind : str
        "categorical", "numeric" or "date".

    Returns
    -------
    real_codes, synth_codes : numpy.ndarray
    size : int
        The number of categories.
    """
    if kind == "categorical":
        r = np.where(is_missing(real), MISSING, real.astype(str).to_numpy(dtype=object))
        s = np.where(is_missing(synth), MISSING, synth.astype(str).to_numpy(dtype=object))
        cats, inv = np.unique(np.concatenate([r, s]), return_inverse=True)
        return inv[: len(r)], inv[len(r) :], len(cats)
    rv, sv = to_axis(real, kind).to_numpy(dtype=float), to_axis(synth, kind).to_numpy(dtype=float)
    finite = rv[np.isfinite(rv)]
    edges = np.unique(np.quantile(finite, np.linspace(0.1, 0.9, 9))) if finite.size else np.array([])
    k = len(edges) + 1  # value bins 0..k-1, then missing = k, other = k + 1

    def codes(v: np.ndarray, miss: np.ndarray) -> np.ndarray:
        c = np.searchsorted(edges, np.where(np.isfinite(v), v, 0.0), side="right")
        c = np.where(np.isfinite(v), c, k + 1)
        return np.where(miss, k, c)

    return codes(rv, is_missing(real)), codes(sv, is_missing(synth)), k + 2


def tv_distances(
    real: pd.DataFrame, synth: pd.DataFrame, kinds: dict[str, str], max_pairs: int, seed_key: Any
) -> tuple[float, float]:
    """(mean one-way TV, mean two-way TV) over the columns both frames hold.

    Parameters
    ----------
    real, synth : pandas.DataFrame
        The tables.
    kinds : dict
        ``{column: kind}`` (:func:`discretize`).
    max_pairs : int
        At most this many pairs (a fixed-seed subset when there are more).
    seed_key : any
        Part of the subset's seed.

    Returns
    -------
    tuple of float
    """
    cols = [c for c in real.columns if c in synth.columns]
    coded = {c: discretize(real[c], synth[c], kinds[c]) for c in cols}

    def tv(a: np.ndarray, b: np.ndarray, size: int) -> float:
        p = np.bincount(a, minlength=size) / max(len(a), 1)
        q = np.bincount(b, minlength=size) / max(len(b), 1)
        return 0.5 * float(np.abs(p - q).sum())

    tv1 = [tv(r, s, k) for r, s, k in coded.values()]
    pairs = [(a, b) for i, a in enumerate(cols) for b in cols[i + 1 :]]
    if len(pairs) > max_pairs:
        pairs = [pairs[i] for i in sorted(named_rng("pairs", seed_key).choice(len(pairs), max_pairs, replace=False))]
    tv2 = []
    for a, b in pairs:
        (ra, sa, ka), (rb, sb, kb) = coded[a], coded[b]
        tv2.append(tv(ra * kb + rb, sa * kb + sb, ka * kb))
    return (float(np.mean(tv1)) if tv1 else float("nan"), float(np.mean(tv2)) if tv2 else float("nan"))
