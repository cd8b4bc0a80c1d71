"""NIST's k-marginal score of synthetic rows against the data, and its sub-sample calibration (NOT private).

SDNist 2.4's definitions: :func:`kmarginal` is ``(2 - mean L1) x 500`` over every two-way marginal
of the features (0 to 1000), with a group column also within each group;
:func:`subsample_calibration` scores random sub-samples of the data itself, to say which sub-sample
size the synthetic rows resemble. :func:`discretise` bins numeric features as SDNist bins them: the
data's non-missing values by percentile rank into ``bins`` bins (tied values share a bin, so a
top-coded value with many ties is a bin of its own), each bin reaching up to the largest data value
in it; a synthetic value goes to the first bin whose largest data value is at least as large (values
above every bin go to the top bin). Missing values are one more bin. Other columns are compared as
they are. :mod:`ddssp.evaluation.agency` gathers these with the other measures.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "DEFAULT_FRACTIONS",
    "canonical",
    "discretise",
    "kmarginal",
    "kmarginal_calibrated",
    "scored_features",
    "subsample_calibration",
]

DEFAULT_FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

_MISSING = -1  # the bin of a missing value in a numeric column


def _numbers(s: pd.Series) -> pd.Series | None:
    """``s`` as float64 when every non-missing value is a number, else None."""
    if pd.api.types.is_bool_dtype(s):
        return None
    if pd.api.types.is_numeric_dtype(s):
        return s.astype("float64")
    v = pd.to_numeric(s, errors="coerce")
    if (v.isna() & s.notna()).any():
        return None
    return v.astype("float64")


def canonical(real: pd.DataFrame, synthetic: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables in comparable values: a column numeric in both as float64, else as text.

    A CSV column of codes read as integers in one table and as text in the other compares equal
    value for value; a missing value is NaN (numeric) or None (text) in both.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Tables with the same columns.

    Returns
    -------
    tuple of pandas.DataFrame
    """
    r_out, s_out = {}, {}
    for c in real.columns:
        r, s = real[c], synthetic[c]
        rn, sn = _numbers(r), _numbers(s)
        if rn is not None and sn is not None:
            r_out[c], s_out[c] = rn.to_numpy(), sn.to_numpy()
        else:
            r_out[c] = np.array([None if pd.isna(x) else str(x) for x in r], dtype=object)
            s_out[c] = np.array([None if pd.isna(x) else str(x) for x in s], dtype=object)
    return pd.DataFrame(r_out, index=real.index), pd.DataFrame(s_out, index=synthetic.index)


def _percentile_bins(v: np.ndarray, bins: int) -> np.ndarray:
    """SDNist's bins of the non-missing data values: ``min(int(bins x percentile rank), bins - 1)``."""
    pct = pd.Series(v).rank(method="average", pct=True).to_numpy()
    return np.minimum((bins * pct).astype(np.int64), bins - 1)


def discretise(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    bins: int = 20,
    categorical: Iterable[str] = (),
    edges: dict[str, Sequence[float]] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Integer codes of both tables for the k-marginal: numeric columns binned as SDNist bins them.

    A column numeric in both tables is binned by the data's percentile ranks (see the module
    docstring); a column with at most ``bins`` distinct data values keeps one bin per value. Other
    columns, and those named in ``categorical``, are compared value for value.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        The data and the synthetic rows, same columns (in their own values).
    bins : int
        Number of percentile bins of a numeric column (SDNist: 20).
    categorical : iterable of str
        Columns compared value for value even when they hold numbers.
    edges : dict, optional
        Fixed bins of a numeric column: increasing edges, bin ``i`` is ``(edges[i], edges[i+1]]``;
        values below the first edge go to the first bin and above the last to the last (SDNist
        bins population density so, on a log scale).

    Returns
    -------
    real_codes, synthetic_codes : numpy.ndarray
        int64 arrays, one column per input column, codes ``0 .. size - 1``.
    sizes : list of int
        Number of codes of each column.
    """
    cat = set(categorical)
    fixed = dict(edges or {})
    rc, sc = canonical(real, synthetic)
    n_r = len(rc)
    R = np.empty((n_r, len(rc.columns)), dtype=np.int64)
    S = np.empty((len(sc), len(rc.columns)), dtype=np.int64)
    sizes = []
    for j, c in enumerate(rc.columns):
        r, s = rc[c].to_numpy(), sc[c].to_numpy()
        if r.dtype.kind == "f" and c in fixed:
            e = np.asarray(fixed[c], dtype=np.float64)
            both = np.concatenate([r, s])
            b = np.clip(np.searchsorted(e, both, side="left") - 1, 0, max(len(e) - 2, 0))
            codes, uniq = pd.factorize(np.where(np.isnan(both), _MISSING, b), sort=True)
        elif r.dtype.kind == "f" and c not in cat:
            rb = np.full(len(r), _MISSING, dtype=np.int64)
            sb = np.full(len(s), _MISSING, dtype=np.int64)
            ok_r, ok_s = ~np.isnan(r), ~np.isnan(s)
            vals = r[ok_r]
            if len(vals):
                distinct = np.unique(vals)
                if len(distinct) <= bins:
                    rb[ok_r] = np.searchsorted(distinct, vals)
                    tops = distinct
                else:
                    b = _percentile_bins(vals, bins)
                    order = np.unique(b)
                    tops = np.array([vals[b == k].max() for k in order])
                    rb[ok_r] = np.searchsorted(order, b)
                # a synthetic value goes to the first bin whose largest data value is >= it
                sb[ok_s] = np.minimum(np.searchsorted(tops, s[ok_s], side="left"), len(tops) - 1)
            elif ok_s.any():
                sb[ok_s] = 0
            codes, uniq = pd.factorize(np.concatenate([rb, sb]), sort=True)
        else:
            both = np.concatenate([r, s]).astype(object)
            both = np.where(pd.isna(both), "\x00missing", both.astype(str))
            codes, uniq = pd.factorize(both, sort=True)
        R[:, j], S[:, j] = codes[:n_r], codes[n_r:]
        sizes.append(len(uniq))
    return R, S, sizes


def _l1_parts(
    R: np.ndarray, S: np.ndarray, gr: np.ndarray, gs: np.ndarray, n_groups: int, ka: int, kb: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per group: sum |t - s| of the densities of one pair, and the data's share of the group."""
    size = n_groups * ka * kb
    ir = (gr * ka + R[:, 0]) * kb + R[:, 1]
    is_ = (gs * ka + S[:, 0]) * kb + S[:, 1]
    nr, ns = max(len(R), 1), max(len(S), 1)
    if size <= 5_000_000:
        t = np.bincount(ir, minlength=size) / nr
        s = np.bincount(is_, minlength=size) / ns
        d = np.abs(t - s).reshape(n_groups, ka * kb).sum(axis=1)
        share = t.reshape(n_groups, ka * kb).sum(axis=1)
        return d, share
    keys = np.union1d(ir, is_)
    t = np.zeros(len(keys))
    s = np.zeros(len(keys))
    u, cnt = np.unique(ir, return_counts=True)
    t[np.searchsorted(keys, u)] = cnt / nr
    u, cnt = np.unique(is_, return_counts=True)
    s[np.searchsorted(keys, u)] = cnt / ns
    g = keys // (ka * kb)
    d = np.bincount(g, weights=np.abs(t - s), minlength=n_groups)
    share = np.bincount(g, weights=t, minlength=n_groups)
    return d, share


def _pairs(k: int) -> list[tuple[int, int]]:
    return [(0, 0)] if k == 1 else list(itertools.combinations(range(k), 2))


def _kmarginal_codes(
    R: np.ndarray, S: np.ndarray, sizes: Sequence[int], gr: np.ndarray | None, gs: np.ndarray | None, n_groups: int
) -> tuple[float, np.ndarray | None]:
    """The k-marginal score of coded tables and, with groups, the score within each group."""
    grouped = gr is not None
    if not grouped:
        gr, gs, n_groups = np.zeros(len(R), np.int64), np.zeros(len(S), np.int64), 1
    pairs = _pairs(R.shape[1])
    total = 0.0
    group_sum = np.zeros(n_groups)
    for a, b in pairs:
        d, share = _l1_parts(R[:, [a, b]], S[:, [a, b]], gr, gs, n_groups, sizes[a], sizes[b])
        total += d.sum()
        if grouped:
            # SDNist: a group's difference is capped at the data's share of the group, then scaled by it
            with np.errstate(invalid="ignore", divide="ignore"):
                group_sum += np.minimum(d, share) / share
    score = (2.0 - total / len(pairs)) * 500.0
    if not grouped:
        return float(score), None
    return float(score), (1.0 - group_sum / len(pairs)) * 1000.0


class _Coded:
    """Both tables coded for the k-marginal: features, optional group, with the group's labels."""

    def __init__(self, real, synthetic, features, group, bins, categorical, edges=None):
        self.features = list(features)
        self.R, self.S, self.sizes = discretise(
            real[self.features], synthetic[self.features], bins=bins, categorical=categorical, edges=edges
        )
        self.group = group
        self.gr = self.gs = None
        self.group_labels: list = []
        self.n_groups = 1
        if group is not None:
            rc, sc = canonical(real[[group]], synthetic[[group]])
            both = np.concatenate([rc[group].to_numpy(), sc[group].to_numpy()])
            if both.dtype.kind != "f":
                both = np.where(pd.isna(both), "\x00missing", both.astype(object))
            codes, uniq = pd.factorize(both, sort=True, use_na_sentinel=False)
            self.gr, self.gs = codes[: len(rc)].astype(np.int64), codes[len(rc) :].astype(np.int64)
            self.group_labels = [None if (isinstance(x, str) and x == "\x00missing") else x for x in uniq]
            self.n_groups = len(uniq)

    def score(self, rows: np.ndarray | None = None) -> tuple[float, np.ndarray | None]:
        """The score of the synthetic rows, or of the data rows ``rows`` in their place."""
        S, gs = (self.S, self.gs) if rows is None else (self.R[rows], None if self.gr is None else self.gr[rows])
        return _kmarginal_codes(self.R, S, self.sizes, self.gr, gs, self.n_groups)

    @staticmethod
    def label(x) -> Any:
        """A group's label as JSON wants it: whole numbers as int, missing as None."""
        if isinstance(x, float):
            return None if np.isnan(x) else int(x) if x.is_integer() else x
        return x


def scored_features(real: pd.DataFrame, group: str | None, exclude: Iterable[str]) -> list[str]:
    """The columns the k-marginal scores: all but the group column and the excluded ones.

    Parameters
    ----------
    real : pandas.DataFrame
        The data.
    group : str, optional
        The group column (scored within, not as a feature).
    exclude : iterable of str
        Columns left out of the score.

    Returns
    -------
    list of str
    """
    drop = set(exclude) | ({group} if group is not None else set())
    return [c for c in real.columns if c not in drop]


def kmarginal(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    group: str | None = None,
    exclude: Iterable[str] = (),
    bins: int = 20,
    categorical: Iterable[str] = (),
    edges: dict[str, Sequence[float]] | None = None,
) -> dict:
    """NIST's k-marginal score of synthetic rows against the data (SDNist 2.4's definition).

    For every pair of features, the L1 distance between the two tables' normalised two-way
    histograms (0 to 2); the score is ``(2 - mean L1) x 500``: 1000 for the same distribution, 0
    for disjoint ones. With ``group`` (e.g. PUMA), the group is left out of the features and each
    histogram is the three-way one of (group, a, b), as SDNist computes its headline score; the
    score within a group ``g`` is ``(1 - mean over pairs of min(share_g, L1_g) / share_g) x 1000``,
    where ``L1_g`` sums the absolute density differences inside ``g`` and ``share_g`` is the data's
    share of rows in ``g`` (SDNist's capping and scaling).

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        The data and the synthetic rows in their own values (same columns).
    group : str, optional
        Column to score within (listed per group).
    exclude : iterable of str
        Columns left out of the features (SDNist leaves out INDP, the detailed industry code).
    bins : int
        Percentile bins of a numeric column.
    categorical : iterable of str
        Columns compared value for value even when they hold numbers.
    edges : dict, optional
        Fixed bin edges of numeric columns (see :func:`discretise`).

    Returns
    -------
    dict
        ``score``, ``features``, ``pairs`` and with a group ``group`` and ``groups`` (a list of
        ``{"group", "rows_data", "score"}``, worst first, groups present in the data only).
    """
    coded = _Coded(real, synthetic, scored_features(real, group, exclude), group, bins, categorical, edges)
    return _kmarginal_result(coded, *coded.score())


def _kmarginal_result(coded: _Coded, score: float, per_group: np.ndarray | None) -> dict:
    out: dict[str, Any] = {
        "score": score,
        "features": coded.features,
        "pairs": len(_pairs(len(coded.features))),
    }
    if per_group is not None:
        rows = np.bincount(coded.gr, minlength=coded.n_groups)
        groups = [
            {"group": coded.label(g), "rows_data": int(rows[i]), "score": float(per_group[i])}
            for i, g in enumerate(coded.group_labels)
            if rows[i] > 0
        ]
        out["group"] = coded.group
        out["groups"] = sorted(groups, key=lambda r: r["score"])
    return out


def _interpolate(fracs: Sequence[float], scores: Sequence[float], target: float) -> float | None:
    """The fraction whose score is ``target`` on the piecewise-linear curve (None below the first)."""
    f = list(fracs) + [1.0]
    s = list(scores) + [1000.0]  # the whole data against itself scores 1000
    if target < s[0]:
        return None
    for i in range(len(f) - 1):
        lo, hi = s[i], s[i + 1]
        if lo <= target <= hi:
            return float(f[i] if hi == lo else f[i] + (target - lo) / (hi - lo) * (f[i + 1] - f[i]))
    return 1.0


def subsample_calibration(
    real: pd.DataFrame,
    synthetic_score: float,
    *,
    group: str | None = None,
    exclude: Iterable[str] = (),
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    seed: int | np.random.Generator | None = None,
    repeats: int = 1,
    bins: int = 20,
    categorical: Iterable[str] = (),
    edges: dict[str, Sequence[float]] | None = None,
) -> dict:
    """The k-marginal of random sub-samples of the data, and the size the synthetic score matches.

    As SDNist: each fraction's sub-sample (without replacement, ``round(fraction x rows)`` rows)
    is scored against the whole data in place of the synthetic rows; ``nearest`` is the fraction
    whose score is closest to the synthetic score (SDNist's "closely resembles a 10% sub-sample"),
    ``equivalent`` interpolates linearly between the two fractions whose scores bracket it (the
    whole data scores 1000 at fraction 1; None when the synthetic score is below the smallest
    fraction's). With a group, also ``groups_40``: each group's mean score over five 40%
    sub-samples (SDNist's per-group baseline).

    Parameters
    ----------
    real : pandas.DataFrame
        The data.
    synthetic_score : float
        The synthetic rows' k-marginal score (from :func:`kmarginal` with the same options).
    group, exclude, bins, categorical, edges
        As for :func:`kmarginal`.
    fractions : sequence of float
        Sub-sample fractions in (0, 1).
    seed : int or numpy.random.Generator, optional
        Makes the sub-samples reproducible.
    repeats : int
        Sub-samples per fraction; the score is their mean.

    Returns
    -------
    dict
        ``fractions`` (a list of ``{"fraction", "score"}``, increasing), ``nearest`` and
        ``equivalent``.
    """
    coded = _Coded(real, real, scored_features(real, group, exclude), group, bins, categorical, edges)
    return _calibrate(coded, synthetic_score, fractions=fractions, seed=seed, repeats=repeats)


def _calibrate(
    coded: _Coded,
    synthetic_score: float,
    *,
    fractions: Sequence[float],
    seed: int | np.random.Generator | None,
    repeats: int = 1,
) -> dict:
    rng = np.random.default_rng(seed)
    n = len(coded.R)
    fr = sorted(float(f) for f in fractions)
    scores = []
    for f in fr:
        k = max(1, int(round(f * n)))
        scores.append(float(np.mean([coded.score(rng.choice(n, k, replace=False))[0] for _ in range(repeats)])))
    nearest = fr[int(np.argmin([abs(s - synthetic_score) for s in scores]))]
    out: dict[str, Any] = {
        "fractions": [{"fraction": f, "score": s} for f, s in zip(fr, scores)],
        "nearest": nearest,
        "equivalent": _interpolate(fr, scores, synthetic_score),
    }
    if coded.gr is not None:
        k = max(1, int(round(0.4 * n)))
        per = np.mean([coded.score(rng.choice(n, k, replace=False))[1] for _ in range(5)], axis=0)
        rows = np.bincount(coded.gr, minlength=coded.n_groups)
        out["groups_40"] = {str(coded.label(g)): float(per[i]) for i, g in enumerate(coded.group_labels) if rows[i]}
    return out


def kmarginal_calibrated(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    features: Sequence[str],
    *,
    group: str | None,
    bins: int,
    categorical: Iterable[str],
    edges: dict | None,
    fractions: Sequence[float],
    seed: int | np.random.Generator | None,
) -> dict:
    """The k-marginal of ``synthetic`` against ``real`` over ``features`` with its sub-sample calibration.

    The tables are coded once for both.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        The data and the synthetic rows, with the same columns.
    features : sequence of str
        The columns scored (:func:`scored_features`).
    group : str, optional
        The group column: scores within each group, averaged.
    bins : int
        Percentile bins of a numeric column without fixed ``edges``.
    categorical : iterable of str
        Columns compared by value, never binned.
    edges : dict, optional
        Fixed bin edges of numeric columns.
    fractions : sequence of float
        The sub-sample fractions of the calibration.
    seed : int or numpy.random.Generator, optional
        The sub-samples' randomness.

    Returns
    -------
    dict
        :func:`kmarginal`'s dictionary with a ``"calibration"`` entry as
        :func:`subsample_calibration` returns it.
    """
    coded = _Coded(real, synthetic, features, group, bins, categorical, edges)
    km = _kmarginal_result(coded, *coded.score())
    km["calibration"] = _calibrate(coded, km["score"], fractions=fractions, seed=seed)
    return km
