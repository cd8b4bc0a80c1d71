"""The statistical agency's scores of synthetic rows against the sensitive data (NOT private).

These are the measures of NIST's SDNist deidentified-data report (version 2.4), computed on rows:
the sensitive data and synthetic rows (sampled from a release, or any other file of the same
columns). Everything here is an exact statistic of the sensitive data and is for the data holder only.

- :func:`kmarginal`: NIST's k-marginal score, ``(2 - mean L1) x 500`` over every two-way marginal
  of the features (0 to 1000; 1000 when the two tables have the same distribution), and with a
  group column (PUMA in the NIST excerpts) the score within each group.
- :func:`subsample_calibration`: the score of random sub-samples of the data itself, and the
  sub-sample size whose score equals the synthetic rows' score ("like a 10% sub-sample").
- :func:`unique_exact_matches`, :func:`apparent_matches`: records unique in the data that the
  synthetic rows reproduce whole, or on declared quasi-identifiers.
- :func:`pmse`: the propensity mean squared error of a depth-6 CART classifier (SDNist's choice).
- :func:`rule_violations`: rows that break rules the caller states as predicates.

:func:`agency_scores` runs them all and returns one JSON-able dict.

The k-marginal and its calibration live in :mod:`ddssp.evaluation.marginals` (with SDNist's
binning of numeric features) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ddssp.evaluation.marginals import (
    DEFAULT_FRACTIONS,
    canonical,
    discretise,
    kmarginal,
    kmarginal_calibrated,
    scored_features,
    subsample_calibration,
)

__all__ = [
    "DEFAULT_FRACTIONS",
    "agency_scores",
    "apparent_matches",
    "canonical",
    "discretise",
    "kmarginal",
    "pmse",
    "rule_violations",
    "subsample_calibration",
    "unique_exact_matches",
]


def _row_codes(real: pd.DataFrame, synthetic: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """One integer per row, equal exactly when the rows are equal in every column (missing == missing)."""
    rc, sc = canonical(real, synthetic)
    n = len(rc)
    if not len(rc.columns):
        return np.zeros(n, np.int64), np.zeros(len(sc), np.int64)
    cols = []
    for c in rc.columns:
        both = np.concatenate([rc[c].to_numpy(), sc[c].to_numpy()]).astype(object)
        both = np.where(pd.isna(both), "\x00missing", both)
        cols.append(pd.factorize(both)[0])
    keys = np.unique(np.column_stack(cols), axis=0, return_inverse=True)[1].reshape(-1)
    return keys[:n], keys[n:]


def unique_exact_matches(real: pd.DataFrame, synthetic: pd.DataFrame) -> dict:
    """Records unique in the data that appear whole among the synthetic rows (SDNist's count).

    A data record is unique when no other data record equals it in every column; it is matched
    when at least one synthetic row equals it (missing equals missing). SDNist reports the matched
    unique records and their percentage of the unique records; ``synthetic_rows_matching`` also
    counts the synthetic rows equal to some unique data record (duplicates counted).

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Same columns, in their own values.

    Returns
    -------
    dict
        ``unique_records``, ``unique_percent`` (of the data's rows), ``matched``,
        ``matched_percent`` (of the unique records) and ``synthetic_rows_matching``.
    """
    kr, ks = _row_codes(real, synthetic)
    counts = np.bincount(kr, minlength=max(kr.max(initial=-1), ks.max(initial=-1)) + 1)
    unique_keys = np.flatnonzero(counts == 1)
    is_unique = np.zeros(len(counts), bool)
    is_unique[unique_keys] = True
    in_synth = np.zeros(len(counts), bool)
    in_synth[ks] = True
    matched = int((is_unique & in_synth).sum())
    n_unique = len(unique_keys)
    return {
        "unique_records": n_unique,
        "unique_percent": 100.0 * n_unique / max(len(kr), 1),
        "matched": matched,
        "matched_percent": 100.0 * matched / n_unique if n_unique else 0.0,
        "synthetic_rows_matching": int(is_unique[ks].sum()),
    }


def apparent_matches(
    real: pd.DataFrame, synthetic: pd.DataFrame, quasi_identifiers: Sequence[str], *, exclude: Iterable[str] = ()
) -> dict:
    """Apparent matches on quasi-identifiers (SDNist's apparent match distribution).

    A data record unique on the quasi-identifiers is apparently matched by a synthetic row unique
    on them with the same values; for each match, the percentage of the other columns (not
    ``exclude``) on which the two agree says how real the match is.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Same columns, in their own values.
    quasi_identifiers : sequence of str
        The columns an intruder could know.
    exclude : iterable of str
        Columns left out of the agreement percentage.

    Returns
    -------
    dict
        ``quasi_identifiers``, ``matched`` (records), ``matched_percent`` (of the data's rows),
        ``agreement`` (a list of percentages, one per match), its ``mean`` and ``median``,
        ``histogram`` (matches per 10-point band, 0-10 ... 90-100) and ``full_agreement`` (matches
        that agree on every other column).
    """
    qi = list(quasi_identifiers)
    kr, ks = _row_codes(real[qi], synthetic[qi])
    cr = np.bincount(kr, minlength=max(kr.max(initial=-1), ks.max(initial=-1)) + 1)
    cs = np.bincount(ks, minlength=len(cr))
    ur = np.flatnonzero(cr[kr] == 1)  # data rows unique on the quasi-identifiers
    us = np.flatnonzero(cs[ks] == 1)
    s_of_key = {int(ks[i]): i for i in us}
    pairs = [(i, s_of_key[int(kr[i])]) for i in ur if int(kr[i]) in s_of_key]
    others = [c for c in real.columns if c not in set(qi) | set(exclude)]
    agree = []
    if pairs and others:
        rc, sc = canonical(real[others], synthetic[others])
        ri = np.array([p[0] for p in pairs])
        si = np.array([p[1] for p in pairs])
        eq = np.zeros(len(pairs))
        for c in others:
            a, b = rc[c].to_numpy()[ri], sc[c].to_numpy()[si]
            same = (a == b) | (pd.isna(a) & pd.isna(b))
            eq += same.astype(float)
        agree = (100.0 * eq / len(others)).tolist()
    elif pairs:
        agree = [100.0] * len(pairs)
    hist = np.histogram(agree, bins=np.linspace(0, 100, 11))[0].tolist() if agree else [0] * 10
    return {
        "quasi_identifiers": qi,
        "matched": len(pairs),
        "matched_percent": 100.0 * len(pairs) / max(len(real), 1),
        "agreement": agree,
        "mean": float(np.mean(agree)) if agree else None,
        "median": float(np.median(agree)) if agree else None,
        "histogram": hist,
        "full_agreement": int(sum(a >= 100.0 - 1e-9 for a in agree)),
    }


def _classifier_inputs(
    real: pd.DataFrame, synthetic: pd.DataFrame, edges: dict[str, Sequence[float]] | None = None
) -> np.ndarray:
    """Both tables stacked as numbers for a tree: numeric columns as they are, others as codes.

    A column with fixed ``edges`` is its bin index; a missing numeric value becomes one below the
    column's smallest value (a tree can split it off).
    """
    rc, sc = canonical(real, synthetic)
    cols = []
    for c in rc.columns:
        both = np.concatenate([rc[c].to_numpy(), sc[c].to_numpy()])
        if both.dtype.kind == "f" and edges and c in edges:
            e = np.asarray(edges[c], dtype=np.float64)
            b = np.clip(np.searchsorted(e, both, side="left") - 1, 0, max(len(e) - 2, 0)).astype(np.float64)
            both = np.where(np.isnan(both), np.nan, b)
        if both.dtype.kind == "f":
            fill = np.nanmin(both) - 1.0 if np.isfinite(both).any() else 0.0
            cols.append(np.where(np.isnan(both), fill, both))
        else:
            both = np.where(pd.isna(both), "\x00missing", both.astype(object))
            cols.append(pd.factorize(both, sort=True)[0].astype(np.float64))
    return np.column_stack(cols) if cols else np.zeros((len(rc) + len(sc), 1))


def pmse(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    max_depth: int = 6,
    seed: int | None = 0,
    edges: dict[str, Sequence[float]] | None = None,
) -> dict:
    """Propensity mean squared error: how well a classifier tells synthetic rows from data rows.

    SDNist's definition (Woo et al. 2009; Snoke et al. 2018): stack both tables with a label
    (1 = synthetic), fit a CART decision tree of depth ``max_depth`` (SDNist: 6) on all columns,
    and average ``(p_i - c)^2`` over every row, where ``p_i`` is the tree's probability that row
    ``i`` is synthetic and ``c`` the synthetic share of the stacked rows. 0 when the tree cannot
    tell them apart, ``c (1 - c)`` (0.25 for equal sizes) when it separates them perfectly.
    Needs scikit-learn.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Same columns, in their own values.
    max_depth : int
        Depth of the tree.
    seed : int, optional
        The tree's random state (ties between equally good splits).
    edges : dict, optional
        Fixed bins of numeric columns (see :func:`discretise`): the tree sees the bin, not the
        value (SDNist's tree sees population density so).

    Returns
    -------
    dict
        ``pmse``, ``max`` (the value of a perfect separation, ``c (1 - c)``), ``ratio``
        (``pmse / max``, 0 to 1), ``classifier`` and ``synthetic_share`` (``c``).

    Raises
    ------
    DDSSPError
        When scikit-learn is not installed.
    """
    try:
        from sklearn.tree import DecisionTreeClassifier
    except ImportError:
        from ddssp.errors import DDSSPError

        raise DDSSPError("the propensity score (pMSE) needs scikit-learn: pip install 'ddssp[agency]'") from None
    X = _classifier_inputs(real, synthetic, edges)
    y = np.concatenate([np.zeros(len(real)), np.ones(len(synthetic))])
    clf = DecisionTreeClassifier(max_depth=max_depth, random_state=seed).fit(X, y)
    p = clf.predict_proba(X)[:, list(clf.classes_).index(1.0)] if len(clf.classes_) > 1 else np.full(len(y), y[0])
    c = len(synthetic) / max(len(y), 1)
    value = float(np.mean((p - c) ** 2))
    top = c * (1 - c)
    return {
        "pmse": value,
        "max": top,
        "ratio": value / top if top > 0 else 0.0,
        "classifier": f"CART decision tree, max_depth={max_depth} (SDNist)",
        "synthetic_share": c,
    }


Rule = tuple[str, Callable[[pd.DataFrame], Any]]


def _rule_list(rules: Any) -> list[Rule]:
    if callable(rules):
        return [(getattr(rules, "__name__", "rule"), rules)]
    if isinstance(rules, dict):
        return list(rules.items())
    out = []
    for r in rules:
        if callable(r):
            out.append((getattr(r, "__name__", "rule"), r))
        else:
            name, pred = r
            out.append((str(name), pred))
    return out


def rule_violations(real: pd.DataFrame, synthetic: pd.DataFrame, rules: Any) -> list[dict]:
    """Rows that break each rule, among the synthetic rows and (for reference) the data.

    A rule is a predicate on a DataFrame returning, for every row, True where the row VIOLATES
    the rule (an impossible combination, e.g. ``lambda d: (d.AGEP < 15) & (d.MSP == 1)``).
    A rule that holds in the data but not in the synthetic rows shows where the model invents
    impossible records.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        The data and the synthetic rows, in their own values.
    rules : callable or dict or sequence
        One predicate, a ``{name: predicate}`` dict, or a sequence of predicates or
        ``(name, predicate)`` pairs.

    Returns
    -------
    list of dict
        Per rule: ``rule``, ``synthetic`` and ``synthetic_percent`` (violating synthetic rows),
        ``data`` and ``data_percent``.

    Raises
    ------
    DDSSPError
        When a predicate fails or does not return one truth value per row.
    """
    from ddssp.errors import DDSSPError

    out = []
    for name, pred in _rule_list(rules):
        counts = {}
        for which, df in (("synthetic", synthetic), ("data", real)):
            try:
                mask = np.asarray(pred(df))
            except Exception as exc:  # the caller's code: say which rule failed
                raise DDSSPError(f"rule {name!r} failed on the {which} rows: {exc}") from None
            if mask.shape != (len(df),):
                raise DDSSPError(
                    f"rule {name!r} must return one truth value per row ({len(df)}), got shape {mask.shape}"
                )
            counts[which] = int(np.count_nonzero(mask.astype(bool)))
        out.append(
            {
                "rule": name,
                "synthetic": counts["synthetic"],
                "synthetic_percent": 100.0 * counts["synthetic"] / max(len(synthetic), 1),
                "data": counts["data"],
                "data_percent": 100.0 * counts["data"] / max(len(real), 1),
            }
        )
    return out


def agency_scores(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    group: str | None = None,
    quasi_identifiers: Sequence[str] | None = None,
    rules: Any = None,
    exclude: Iterable[str] = (),
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    bins: int = 20,
    categorical: Iterable[str] = (),
    seed: int | None = None,
    propensity: bool = True,
    edges: dict[str, Sequence[float]] | None = None,
) -> dict:
    """All the agency's scores of synthetic rows against the data, as one JSON-able dict (NOT private).

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        The data and the synthetic rows in their own values, with the same columns.
    group : str, optional
        Score the k-marginal within each value of this column too (PUMA in the NIST excerpts).
    quasi_identifiers : sequence of str, optional
        Columns for the apparent-match count (skipped without).
    rules : callable or dict or sequence, optional
        Predicates marking rows that violate a rule (see :func:`rule_violations`).
    exclude : iterable of str
        Columns left out of the k-marginal features.
    fractions : sequence of float
        Sub-sample fractions of the calibration.
    bins : int
        Percentile bins of a numeric column in the k-marginal.
    categorical : iterable of str
        Columns the k-marginal compares value for value even when they hold numbers.
    edges : dict, optional
        Fixed bin edges of numeric columns in the k-marginal and the pMSE (see :func:`discretise`).
    seed : int, optional
        Makes the sub-samples (and the tree) reproducible.
    propensity : bool
        Compute the pMSE (needs scikit-learn; without it the entry says so).

    Returns
    -------
    dict
        ``rows_data``, ``rows_synthetic``, ``kmarginal`` (with ``calibration``),
        ``unique_exact_matches``, ``pmse``, and when asked ``apparent_matches`` and ``rules``.

    Raises
    ------
    DDSSPError
        For a group, quasi-identifier, excluded or binned column that is not in the data, or
        synthetic rows without the data's columns.
    """
    from ddssp.errors import DDSSPError

    cols = [str(c) for c in real.columns]
    missing = [c for c in cols if c not in set(map(str, synthetic.columns))]
    if missing:
        raise DDSSPError(f"the synthetic rows lack the data's columns {missing}: give rows with the same columns")
    synthetic = synthetic[list(real.columns)]
    named = [("group", [group] if group is not None else []), ("quasi-identifier", quasi_identifiers or [])]
    named += [("excluded", list(exclude)), ("binned (edges)", list(edges or {}))]
    for what, names in named:
        bad = [c for c in names if c not in cols]
        if bad:
            raise DDSSPError(f"{what} column(s) {bad} not in the data (columns: {', '.join(cols)})")
    if len(real) == 0 or len(synthetic) == 0:
        raise DDSSPError("the agency scores need at least one data row and one synthetic row")
    feats = scored_features(real, group, exclude)
    if not feats:
        raise DDSSPError("no feature left for the k-marginal: exclude fewer columns")
    km = kmarginal_calibrated(
        real,
        synthetic,
        feats,
        group=group,
        bins=bins,
        categorical=categorical,
        edges=edges,
        fractions=fractions,
        seed=seed,
    )
    out: dict[str, Any] = {
        "rows_data": int(len(real)),
        "rows_synthetic": int(len(synthetic)),
        "kmarginal": km,
        "unique_exact_matches": unique_exact_matches(real, synthetic),
    }
    if propensity:
        try:
            out["pmse"] = pmse(real, synthetic, seed=0 if seed is None else seed, edges=edges)
        except DDSSPError as exc:
            out["pmse"] = {"error": str(exc)}
    if quasi_identifiers:
        out["apparent_matches"] = apparent_matches(real, synthetic, quasi_identifiers)
    if rules is not None:
        out["rules"] = rule_violations(real, synthetic, rules)
    return out


def score_files(
    target: str, files: Sequence[str], *, group: str | None = None, edges: dict | None = None, na: str = "N"
) -> list[dict]:
    """The k-marginal of CSV files of rows against a target CSV (NOT private), one dict per file.

    The files are read with ``na`` as the missing marker (the NIST excerpts' N); each score is
    :func:`kmarginal` grouped by ``group`` (with the lowest group's score) and without groups.

    Parameters
    ----------
    target : str
        The data (CSV).
    files : sequence of str
        Rows to score, with the target's columns.
    group : str, optional
        The group column (PUMA).
    edges : dict, optional
        Fixed bins of numeric columns.
    na : str
        The missing-value marker.

    Returns
    -------
    list of dict
        ``kmarginal`` (grouped; with a group), ``worst_group``, ``kmarginal_plain``.
    """
    real = pd.read_csv(target, na_values=[na], keep_default_na=False)
    e = {k: v for k, v in (edges or {}).items() if k in real.columns}
    out = []
    for path in files:
        syn = pd.read_csv(path, na_values=[na], keep_default_na=False)[list(real.columns)]
        r: dict[str, float] = {}
        if group is not None and group in real.columns:
            g = kmarginal(real, syn, group=group, edges=e)
            r["kmarginal"] = g["score"]
            r["worst_group"] = min(x["score"] for x in g["groups"])
        plain_drop = [group] if group is not None and group in real.columns else []
        r["kmarginal_plain"] = kmarginal(real, syn, exclude=plain_drop, edges=e)["score"]
        out.append(r)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ddssp.evaluation.agency TARGET.csv FILE.csv ... [--group PUMA] [--edges JSON]``.

    Prints one JSON line per file with :func:`score_files`'s scores (for benchmarks that score
    many files of rows in one process).

    Parameters
    ----------
    argv : sequence of str, optional
        The command line (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.
    """
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m ddssp.evaluation.agency", description="k-marginal of CSV files")
    p.add_argument("target")
    p.add_argument("files", nargs="+")
    p.add_argument("--group")
    p.add_argument("--edges", help='fixed bins as JSON, e.g. {"DENSITY": [0, 150, ...]}')
    p.add_argument("--na", default="N")
    a = p.parse_args(argv)
    edges = json.loads(a.edges) if a.edges else None
    for r in score_files(a.target, a.files, group=a.group, edges=edges, na=a.na):
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
