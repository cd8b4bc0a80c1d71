"""Entry weights of multi-task learning: how much of a user's per-user budget beta each of their
entries may spend, with max_j sum_i w_ij^2 <= beta exactly (in floating point).

:func:`adaptive_weights` sets task weights omega_i ~ n_i^-mu from the (noisy) task sizes, with
sum_i n_i omega_i^2 = n beta_bar beta; :func:`per_user_weights` turns them into entry weights
w_ij = omega_i min(1, sqrt(beta / sum_{i' in Omega^j} omega_i'^2)), with a final safety rescale.
:func:`allocate_weights` also offers the uniform and tail sampling baselines, and
:func:`check_weights` is the guard every release runs before it spends.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.dp import check_bound, check_rho
from ddssp.errors import DDSSPError, PrivacyParameterError
from ddssp.estimators.multitask.model import MultiTaskData

ALLOCATIONS = ("adaptive", "uniform", "tail")
PER_USER_MODES = ("clip", "normalize")


def adaptive_weights(counts: Any, mu: float, beta: float, n_users: float, beta_bar: float = 1.0) -> np.ndarray:
    """Task weights omega_i ~ n_i^-mu with sum_i n_i omega_i^2 = n * beta_bar * beta.

    omega_i = n_i^-mu / sqrt(sum_i' n_i'^(1 - 2 mu) / (n beta_bar beta)). Counts are clamped to >= 1.
    mu = 0 gives uniform weights.

    Parameters
    ----------
    counts : array-like
        Task sizes (noisy or declared public).
    mu : float
        The weight exponent, in [0, 4].
    beta : float
        The per-user budget.
    n_users : float
        The (noisy) number of users.
    beta_bar : float
        The fraction of the per-user budget the weights are scaled to.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For invalid counts or mu.
    """
    counts = np.maximum(np.asarray(counts, dtype=float), 1.0)
    if counts.ndim != 1 or counts.size == 0 or not np.all(np.isfinite(counts)):
        raise DDSSPError("counts must be a non-empty 1-D array of finite numbers")
    try:
        mu = float(mu)
    except (TypeError, ValueError):
        raise DDSSPError(f"mu must be a number, got {mu!r}") from None
    if not (math.isfinite(mu) and 0.0 <= mu <= 4.0):
        raise DDSSPError(f"mu must lie in [0, 4] (0 = uniform, 1/4 or 1/2 recommended), got {mu!r}")
    beta = check_rho(beta, "beta")
    beta_bar = check_bound(beta_bar, "beta_bar")
    n_users = check_bound(n_users, "n_users")
    raw = counts ** (-mu)
    scale2 = n_users * beta_bar * beta / np.sum(counts * raw**2)
    return raw * math.sqrt(scale2)


def user_budgets(user_idx: np.ndarray, w: np.ndarray, n_users: int) -> np.ndarray:
    """sum_{i in Omega^j} w_ij^2 per user j.

    Parameters
    ----------
    user_idx : numpy.ndarray
        The user of each entry.
    w : numpy.ndarray
        The entry weights.
    n_users : int
        The number of users.

    Returns
    -------
    numpy.ndarray
    """
    return np.bincount(user_idx, weights=np.asarray(w, dtype=float) ** 2, minlength=n_users)


def per_user_weights(
    task_idx: np.ndarray,
    user_idx: np.ndarray,
    omega: np.ndarray,
    beta: float,
    n_users: int | None = None,
    mode: str = "clip",
) -> np.ndarray:
    """Entry weights w_ij with max_j sum_i w_ij^2 <= beta, exactly (in floating point).

    mode="clip": w_ij = omega_i * min(1, sqrt(beta / sum_{i' in Omega^j} omega_i'^2)) (the paper);
    mode="normalize": w_ij = omega_i * sqrt(beta / sum_{i' in Omega^j} omega_i'^2) (every user spends
    beta). A final rescale of any user whose float sum still exceeds beta makes the bound hold exactly.

    Parameters
    ----------
    task_idx, user_idx : numpy.ndarray
        The task and user of each entry.
    omega : numpy.ndarray
        Task weights, finite and non-negative.
    beta : float
        The per-user budget.
    n_users : int, optional
        The number of users (default: the largest index + 1).
    mode : str
        ``"clip"`` or ``"normalize"``.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For an unknown mode or invalid weights.
    """
    if mode not in PER_USER_MODES:
        raise DDSSPError(f"per-user mode must be one of {PER_USER_MODES}, got {mode!r}")
    beta = check_rho(beta, "beta")
    omega = np.asarray(omega, dtype=float)
    if omega.ndim != 1 or not np.all(np.isfinite(omega)) or np.any(omega < 0):
        raise DDSSPError("task weights omega must be finite and non-negative")
    task_idx = np.asarray(task_idx, dtype=np.int64)
    user_idx = np.asarray(user_idx, dtype=np.int64)
    n = int(n_users if n_users is not None else user_idx.max(initial=-1) + 1)
    w0 = omega[task_idx]
    S = user_budgets(user_idx, w0, n)
    with np.errstate(divide="ignore"):
        f = np.sqrt(beta / S)
    f[~np.isfinite(f)] = 0.0  # users with no (or zero-weight) entries
    if mode == "clip":
        f = np.minimum(1.0, f)
    w = w0 * f[user_idx]
    for _ in range(50):  # safety rescale against float rounding
        s = user_budgets(user_idx, w, n)
        over = s > beta
        if not np.any(over):
            return w
        g = np.ones(n)
        g[over] = np.sqrt(beta / s[over]) * (1.0 - 8 * np.finfo(float).eps)
        w = w * g[user_idx]
    raise AssertionError("per-user weights could not be brought under the budget")  # pragma: no cover


def allocate_weights(
    data: MultiTaskData,
    beta: float,
    *,
    allocation: str = "adaptive",
    mu: float = 0.5,
    counts: np.ndarray | None = None,
    n_users_hat: float | None = None,
    beta_bar: float = 1.0,
    per_user: str = "normalize",
    k: int | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Entry weights for one of the allocation strategies (all satisfy max_j sum_i w_ij^2 <= beta).

    - "adaptive": omega_i ~ n_hat_i^-mu (:func:`adaptive_weights`) then :func:`per_user_weights`;
    - "uniform": each user keeps ``k`` of their entries uniformly at random, weight sqrt(beta / k);
    - "tail": each user keeps their ``k`` entries of smallest noisy count, weight sqrt(beta / k).

    Dropped entries get weight 0.

    Parameters
    ----------
    data : MultiTaskData
        The data.
    beta : float
        The per-user budget.
    allocation : str
        ``"adaptive"``, ``"uniform"`` or ``"tail"``.
    mu : float
        Weight exponent (adaptive).
    counts : numpy.ndarray, optional
        Task sizes (noisy, or declared public); needed for "adaptive" (unless per_user="normalize"
        and mu=0) and "tail".
    n_users_hat : float, optional
        The noisy number of users (adaptive; the true one is public otherwise).
    beta_bar : float
        As in :func:`adaptive_weights`.
    per_user : str
        As ``mode`` in :func:`per_user_weights`.
    k : int, optional
        Entries kept per user (uniform / tail).
    rng : numpy.random.Generator, optional
        Sampling keys (uniform / tail; not privacy noise).

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For an unknown allocation, missing counts, or a missing k.
    """
    if allocation not in ALLOCATIONS:
        raise DDSSPError(f"allocation must be one of {ALLOCATIONS}, got {allocation!r}")
    beta = check_rho(beta, "beta")
    if allocation == "adaptive":
        if counts is None:
            if per_user == "normalize" and float(mu) == 0.0:
                omega = np.ones(data.n_tasks)
            else:
                raise DDSSPError("adaptive weights need task counts (noisy or declared public)")
        else:
            omega = adaptive_weights(counts, mu, beta, n_users_hat if n_users_hat else data.n_users, beta_bar)
        return per_user_weights(data.task_idx, data.user_idx, omega, beta, data.n_users, per_user)
    if k is None or not isinstance(k, (int, np.integer)) or k < 1:
        raise DDSSPError(f"{allocation} sampling needs k >= 1 entries per user, got {k!r}")
    if allocation == "uniform":
        if rng is None:
            raise DDSSPError("uniform sampling needs a random generator")
        key = rng.random(data.n_entries)
    else:
        if counts is None:
            raise DDSSPError("tail sampling needs task counts (noisy or declared public)")
        counts = np.asarray(counts, dtype=float)
        tie = rng.random(data.n_entries) * 1e-9 if rng is not None else 0.0
        key = counts[data.task_idx] + tie
    order = np.lexsort((key, data.user_idx))  # by user, then by key
    rank = np.empty(data.n_entries, dtype=np.int64)
    starts = np.searchsorted(data.user_idx[order], data.user_idx[order], side="left")
    rank[order] = np.arange(data.n_entries) - starts
    keep = rank < k
    w = np.where(keep, math.sqrt(beta / k), 0.0)
    return _exact_cap(data, w, beta)


def _exact_cap(data: MultiTaskData, w: np.ndarray, beta: float) -> np.ndarray:
    """Rescale users whose float sum of squares exceeds beta (rounding only)."""
    for _ in range(50):
        s = user_budgets(data.user_idx, w, data.n_users)
        over = s > beta
        if not np.any(over):
            return w
        g = np.ones(data.n_users)
        g[over] = np.sqrt(beta / s[over]) * (1.0 - 8 * np.finfo(float).eps)
        w = w * g[data.user_idx]
    raise AssertionError("weights could not be brought under the budget")  # pragma: no cover


def check_weights(data: MultiTaskData, w: np.ndarray, beta: float) -> None:
    """Raise unless the entry weights are finite, >= 0 and within the per-user budget beta.

    Parameters
    ----------
    data : MultiTaskData
        The data.
    w : numpy.ndarray
        One weight per entry.
    beta : float
        The per-user budget.

    Raises
    ------
    DDSSPError
        For a wrong shape, non-finite or negative weights.
    PrivacyParameterError
        When a user's sum of squared weights exceeds beta.
    """
    w = np.asarray(w, dtype=float)
    if w.shape != (data.n_entries,):
        raise DDSSPError(f"weights must have one value per entry ({data.n_entries}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise DDSSPError("weights must be finite and non-negative")
    s = user_budgets(data.user_idx, w, data.n_users)
    if s.size and s.max() > beta:
        raise PrivacyParameterError(
            f"weights exceed the per-user budget: max_j sum_i w_ij^2 = {s.max():.6g} > beta = {beta:.6g}"
        )
