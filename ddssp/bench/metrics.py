"""Prediction metrics of the benchmarks on held-out rows: AUC, accuracy and log loss of a classifier's
decision values, mean squared error of a regression.

The AUC is the Mann-Whitney rank formula (ties count one half); labels may be 0/1 or -1/+1, the
positive class being the larger value. The experiment kinds (:mod:`.ddssp_paper`, :mod:`.realtables`)
score every method with these.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats


def auc_score(y: Any, score: Any) -> float:
    """Area under the ROC curve by the Mann-Whitney rank formula (ties count one half).

    Parameters
    ----------
    y : array-like
        Labels, the positive class being the larger value (0/1 or -1/+1).
    score : array-like
        Decision values.

    Returns
    -------
    float
        NaN when only one class is present.
    """
    y = np.asarray(y, dtype=float).reshape(-1)
    score = np.asarray(score, dtype=float).reshape(-1)
    if y.shape != score.shape:
        raise ValueError(f"y has {y.size} values, score has {score.size}")
    levels = np.unique(y)
    if levels.size != 2:
        return float("nan")
    pos = y == levels[1]
    n1 = int(pos.sum())
    n0 = y.size - n1
    ranks = stats.rankdata(score)  # average ranks for ties
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def accuracy(y: Any, score: Any) -> float:
    """Share of rows whose label has the sign of the score.

    Parameters
    ----------
    y : array-like
        Labels -1/+1 or 0/1 (positive = the larger value).
    score : array-like
        Decision values.

    Returns
    -------
    float
    """
    y = np.asarray(y, dtype=float).reshape(-1)
    score = np.asarray(score, dtype=float).reshape(-1)
    return float(np.mean((score > 0) == _positive(y)))


def log_loss(y: Any, score: Any) -> float:
    """Mean negative log-likelihood of a logistic model with decision values ``score`` (natural log).

    Parameters
    ----------
    y : array-like
        Labels -1/+1 or 0/1 (positive = the larger value).
    score : array-like
        Decision values.

    Returns
    -------
    float
    """
    y = np.asarray(y, dtype=float).reshape(-1)
    score = np.asarray(score, dtype=float).reshape(-1)
    sign = np.where(_positive(y), 1.0, -1.0)
    return float(np.mean(np.logaddexp(0.0, -sign * score)))


def _positive(y: np.ndarray) -> np.ndarray:
    """The rows of the positive class: the larger of two label values (0/1 or -1/+1), else y > 0."""
    return y == np.max(y) if np.unique(y).size == 2 else y > 0


def mse(y: Any, pred: Any) -> float:
    """Mean squared error.

    Parameters
    ----------
    y : array-like
        True values.
    pred : array-like
        Predictions.

    Returns
    -------
    float
    """
    y = np.asarray(y, dtype=float)
    pred = np.asarray(pred, dtype=float)
    return float(np.mean((y - pred) ** 2))
