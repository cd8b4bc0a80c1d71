"""The raw-row baselines that need no release (AdaSSP / objective perturbation on a design whose bounds
are the training rows' ranges and labels, taken as public), the release flags that declare the same
knowledge to ``ddssp release``, and DD-SSP's scores on a release: the ``adassp_pb`` / ``objpert_pb`` and
``ddssp_pb`` arms of the real-baselines bench (:mod:`.baselines`)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.bench.realtables import _auc, _r2, _truth
from ddssp.bench.release_process import run_release
from ddssp.bench.tv_distance import column_kind


def _scores(y: np.ndarray, score: np.ndarray, task: str) -> dict[str, float]:
    """R^2 of a prediction, or AUC and accuracy (class 1 where the score is positive) of a score."""
    if task == "linear":
        return {"r2": _r2(y, score)}
    return {"auc": _auc(y, score), "accuracy": float(np.mean((score > 0) == (y == 1)))}


def bounded_design(train: pd.DataFrame, test: pd.DataFrame, t: dict, kinds: dict[str, str], max_onehot: int):
    """A design of the raw rows with the training rows' ranges taken as public bounds, for AdaSSP / ObjPert.

    Intercept 1; a numeric or date column clipped to its training [min, max] and mapped to [-1, 1]
    (missing: 0, and a 0/1 missing indicator where the training rows have a missing value); a text
    column of 2 to ``max_onehot`` training labels one-hot without its first label (missing is a label);
    other text columns left out. Every row then has ``||x|| <= B`` with B^2 = 1 + the number of numeric
    columns + indicators + one-hot columns groups.

    Parameters
    ----------
    train, test : pandas.DataFrame
        The split, missing cells as NaN.
    t : dict
        The table entry.
    kinds : dict
        ``{column: kind}``.
    max_onehot : int
        Most labels of a one-hot column.

    Returns
    -------
    tuple
        (X_train, X_test, B).
    """
    from ddssp.bench.tv_distance import MISSING, is_missing, to_axis

    parts_tr, parts_te, sq = [np.ones((len(train), 1))], [np.ones((len(test), 1))], 1.0
    for c in (c for c in train.columns if c != t["target"]):
        if kinds[c] in ("numeric", "date"):
            a_tr = to_axis(train[c].where(~is_missing(train[c])), kinds[c]).to_numpy(dtype=float)
            a_te = to_axis(test[c].where(~is_missing(test[c])), kinds[c]).to_numpy(dtype=float)
            if not np.isfinite(a_tr).any():
                continue
            lo, hi = float(np.nanmin(a_tr)), float(np.nanmax(a_tr))
            span = (hi - lo) or 1.0
            for a, parts in ((a_tr, parts_tr), (a_te, parts_te)):
                v = np.clip((a - lo) / span * 2.0 - 1.0, -1.0, 1.0)
                parts.append(np.where(np.isfinite(v), v, 0.0)[:, None])
            sq += 1.0
            if not np.isfinite(a_tr).all():
                parts_tr.append((~np.isfinite(a_tr)).astype(float)[:, None])
                parts_te.append((~np.isfinite(a_te)).astype(float)[:, None])
                sq += 1.0
        else:
            lab_tr = np.where(is_missing(train[c]), MISSING, train[c].astype(str).to_numpy(dtype=object))
            labels = np.array(list(dict.fromkeys(lab_tr)), dtype=object)
            if 1 < len(labels) <= max_onehot:
                lab_te = np.where(is_missing(test[c]), MISSING, test[c].astype(str).to_numpy(dtype=object))
                parts_tr.append((lab_tr[:, None] == labels[None, 1:]).astype(float))
                parts_te.append((lab_te[:, None] == labels[None, 1:]).astype(float))
                sq += 1.0
    return np.hstack(parts_tr), np.hstack(parts_te), math.sqrt(sq)


def public_bounds_baselines(train, test, t, kinds, max_onehot, eps, delta, noise=None) -> dict[str, dict[str, float]]:
    """AdaSSP (and, logistic, objective perturbation) on :func:`bounded_design`: no release, no schema.

    The training rows' ranges and labels stand in for public bounds (they are not private: this is
    the mechanism at its best, as papers that assume public bounds run it). A linear target is clipped
    to its training [min, max], mapped to [-1, 1] and mapped back for the prediction.

    Parameters
    ----------
    train, test : pandas.DataFrame
        The split, missing cells as NaN.
    t : dict
        The table entry.
    kinds : dict
        ``{column: kind}``.
    max_onehot : int
        Most labels of a one-hot column.
    eps, delta : float
        The budget, spent whole on each mechanism.
    noise : NoiseSource, optional
        For tests; the secure sampler by default.

    Returns
    -------
    dict
        ``{"adassp_pb": ..., "objpert_pb": ...}`` (``objpert_pb`` for a logistic target only).
    """
    from ddssp.estimators.adassp import AdaSSP
    from ddssp.estimators.objpert import ObjectivePerturbation

    X_tr, X_te, B = bounded_design(train, test, t, kinds, max_onehot)
    y_tr, known_tr = _truth(train, t)
    y_te, known_te = _truth(test, t)
    X_tr, y_tr, X_te, y_te = X_tr[known_tr], y_tr[known_tr], X_te[known_te], y_te[known_te]
    if t["task"] == "linear":
        lo, hi = float(np.min(y_tr)), float(np.max(y_tr))
        span = (hi - lo) or 1.0
        m = AdaSSP(eps, delta, x_bound=B, y_bound=1.0, noise=noise).fit(X_tr, (y_tr - lo) / span * 2.0 - 1.0)
        return {"adassp_pb": _scores(y_te, lo + (X_te @ m.coef_ + 1.0) * span / 2.0, "linear")}
    ypm = 2.0 * y_tr - 1.0
    m = AdaSSP(eps, delta, x_bound=B, y_bound=1.0, noise=noise).fit(X_tr, ypm)
    o = ObjectivePerturbation(eps, delta, x_bound=B, noise=noise).fit(X_tr, ypm)
    return {
        "adassp_pb": _scores(y_te, X_te @ m.coef_, "logistic"),
        "objpert_pb": _scores(y_te, X_te @ o.coef_, "logistic"),
    }


def declared_args(train: pd.DataFrame, t: dict, kinds: dict[str, str], max_onehot: int) -> tuple[list[str], list[str]]:
    """The release flags that declare what :func:`bounded_design` takes as public: ``--bounds``
    COL=min:max for each numeric column (the training rows' range) and ``--levels`` COL=a,b,... for each
    text column of 2 to ``max_onehot`` labels (the training rows' labels), plus ``--missing`` for a
    declared text column with missing cells; a logistic target's labels as ``--levels``.

    Date columns (whose bounds the flags cannot state), text columns of more labels, and columns
    whose name or labels hold a comma or a colon (which the flags cannot carry) are left to discovery.

    Parameters
    ----------
    train : pandas.DataFrame
        The training rows, missing cells as NaN.
    t : dict
        The table entry.
    kinds : dict
        ``{column: kind}``.
    max_onehot : int
        Most labels of a declared text column.

    Returns
    -------
    tuple
        (the flags, the columns left to discovery).
    """
    from ddssp.bench.tv_distance import is_missing, to_axis

    args: list[str] = []
    left: list[str] = []
    for c in train.columns:
        miss = is_missing(train[c])
        if "," in c or ":" in c or "=" in c:
            left.append(c)
            continue
        if kinds[c] == "numeric" and not (c == t["target"] and t["task"] == "logistic"):
            a = to_axis(train[c].where(~miss), "numeric").to_numpy(dtype=float)
            a = a[np.isfinite(a)]
            if a.size == 0:
                left.append(c)
                continue
            lo, hi = float(a.min()), float(a.max())
            hi = hi if hi > lo else lo + 1.0
            args += ["--bounds", f"{c}={lo!r}:{hi!r}"]
            continue
        labels = list(dict.fromkeys(train[c][~miss].astype(str).str.strip()))
        if kinds[c] == "date" or not 1 < len(labels) <= max_onehot or any("," in v for v in labels):
            left.append(c)
            continue
        args += ["--levels", f"{c}={','.join(labels)}"]
        if miss.any():
            args += ["--missing", f"{c}=<missing>"]
    return args, left


def _seen_labels(test: pd.DataFrame, schema: Any, target: str) -> pd.DataFrame:
    """The hold-out with a label that a text column without a level for other labels lacks (a declared
    column; the training rows never had the label) replaced by the column's first level, as
    :func:`bounded_design` codes it (every one-hot indicator 0, the first label's row); missing
    cells, other columns and columns with such a level unchanged."""
    out = test.copy()
    for name in test.columns:
        col = schema.column(name)
        if name == target or col.kind != "categorical" or col.missing is not None:
            continue  # a column with a level for other labels codes them itself
        s = test[name]
        text = s.astype(str).str.strip()
        unseen = s.notna() & ~text.isin(col.labels)
        if unseen.any():
            out[name] = s.astype(object).where(~unseen, col.labels[0])
    return out


def ddssp_scores(rel: Any, test: pd.DataFrame, t: dict) -> tuple[dict[str, float] | None, str]:
    """DD-SSP (no options) fitted on the release, scored on the hold-out rows with a known target.

    Parameters
    ----------
    rel : Release
        The release.
    test : pandas.DataFrame
        The hold-out, read as the release read it.
    t : dict
        The table entry.

    Returns
    -------
    tuple
        (``{metric: value}``, "") or (None, why the fit failed).
    """
    from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

    task = t["task"]
    y_te, known_te = _truth(test, t)
    try:
        est = (DDSSPLinearRegression() if task == "linear" else DDSSPLogisticRegression(positive=t["positive"])).fit(
            rel, target=t["target"]
        )
        codes = rel.schema.encode(_seen_labels(test[list(rel.schema.names)], rel.schema, t["target"]))
        if task == "linear":
            pred = est.predict_original(codes, codes=True)
        else:
            pred = est.decision_function(codes, codes=True)  # positive: class 1 is the table's positive label
        return _scores(y_te[known_te], pred[known_te], task), ""
    except Exception as exc:  # noqa: BLE001 - a failed fit is a finding of the bench
        return None, f"{type(exc).__name__}: {exc}"


def raw_bounds_methods(train: pd.DataFrame, test: pd.DataFrame, t: dict, s: dict, eps: float):
    """:func:`public_bounds_baselines` on the raw split (the table's missing markers read as missing).

    Parameters
    ----------
    train, test : pandas.DataFrame
        The split as sampled.
    t : dict
        The table entry.
    s : dict
        The parsed spec.
    eps : float
        The budget.

    Returns
    -------
    dict
        ``{method: {metric: value}}``.
    """
    na = set(t["na_values"]) | {""}
    real_tr, real_te = train.where(~train.isin(na)), test.where(~test.isin(na))
    kinds = {c: column_kind(real_tr[c], c in t["dates"]) for c in real_tr.columns}
    return public_bounds_baselines(real_tr, real_te, t, kinds, s["max_onehot"], eps, s["delta"])


def declared_release(train_csv: Path, test_csv: Path, train: pd.DataFrame, t: dict, s: dict, eps: float, out: Path):
    """The ``ddssp_pb`` arm: a release of the same training rows with the public-bounds baselines'
    knowledge declared (:func:`declared_args`), DD-SSP fitted on it and scored on the hold-out.

    Parameters
    ----------
    train_csv, test_csv : pathlib.Path
        The split as written for the releases.
    train : pandas.DataFrame
        The training rows as sampled (the table's missing markers still in them).
    t : dict
        The table entry.
    s : dict
        The parsed spec.
    eps : float
        The budget.
    out : pathlib.Path
        The release file.

    Returns
    -------
    tuple
        (``{"release_pb": {...}, "ddssp_pb": {...}}``, notes).
    """
    from ddssp.data.tables import read_table
    from ddssp.releasefile import Release

    na = set(t["na_values"]) | {""}
    real_tr = train.where(~train.isin(na))
    kinds = {c: column_kind(real_tr[c], c in t["dates"]) for c in real_tr.columns}
    declared, _left = declared_args(real_tr, t, kinds, s["max_onehot"])
    out.unlink(missing_ok=True)
    extra = [*s["release_args"], "--target", t["target"], "--delta", repr(s["delta"]), *declared]
    r = run_release(train_csv, out, eps, t["na_values"], s["timeout"], extra)
    got: dict[str, dict[str, float]] = {"release_pb": {"ok": float(r["ok"]), "cpu_s": r["cpu_s"]}}
    notes = [f"declared release: {r['error']}"] if r["error"] else []
    if r["ok"]:
        rel = Release.load(out)
        got["release_pb"]["columns_released"] = float(len(rel.schema.names))
        te = read_table(test_csv, na_values=t["na_values"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores, why = ddssp_scores(rel, te, t)
        if scores is None:
            notes.append(f"ddssp_pb: {why}")
        else:
            got["ddssp_pb"] = scores
    return got, notes


__all__ = [
    "bounded_design",
    "ddssp_scores",
    "declared_args",
    "declared_release",
    "public_bounds_baselines",
    "raw_bounds_methods",
]
