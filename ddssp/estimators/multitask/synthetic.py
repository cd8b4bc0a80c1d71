"""Synthetic multi-task data for tests and experiments: the paper's Appendix C regression tasks with
power-law task sizes (:func:`synthetic_multitask`) and a low-rank ratings matrix with long-tail item
popularity (:func:`synthetic_ratings`). Seeded by a numpy Generator; no privacy noise here.
"""

from __future__ import annotations

import math

import numpy as np

from ddssp.dp import clip_rows
from ddssp.errors import DDSSPError
from ddssp.estimators.multitask.model import MultiTaskData


def synthetic_multitask(
    n_tasks: int = 100,
    n_features: int = 5,
    n_users: int = 10_000,
    a: float = 1.0,
    tasks_per_user: float = 20.0,
    noise: float = 1e-3,
    rng: np.random.Generator | None = None,
) -> tuple[MultiTaskData, np.ndarray]:
    """The paper's Appendix C regression tasks with power-law task sizes.

    u_j, theta_i ~ N(0, I) projected to the unit ball; x_ij = u_j; y_ij = u_j.theta_i + N(0, noise^2);
    task inclusion probability q_i with pdf ~ a x^(a-1) on [0, 1], scaled so that
    sum_i q_i = tasks_per_user (capped at 1).

    Parameters
    ----------
    n_tasks, n_features, n_users : int
        The sizes.
    a : float
        The power-law parameter, positive.
    tasks_per_user : float
        The expected number of tasks per user, in (0, n_tasks].
    noise : float
        The label noise sd (not privacy noise).
    rng : numpy.random.Generator, optional
        The random source; fresh entropy by default.

    Returns
    -------
    data : MultiTaskData
    theta : numpy.ndarray
        The true coefficients, shape (n_tasks, n_features).

    Raises
    ------
    DDSSPError
        For an invalid ``a`` or ``tasks_per_user``.
    """
    rng = np.random.default_rng() if rng is None else rng
    if a <= 0:
        raise DDSSPError(f"power-law parameter a must be positive, got {a!r}")
    if not 0 < tasks_per_user <= n_tasks:
        raise DDSSPError("tasks_per_user must lie in (0, n_tasks]")
    U = clip_rows(rng.normal(size=(n_users, n_features)), 1.0)
    theta = clip_rows(rng.normal(size=(n_tasks, n_features)), 1.0)
    q = rng.random(n_tasks) ** (1.0 / a)
    q = np.minimum(q * tasks_per_user / q.sum(), 1.0)
    member = rng.random((n_tasks, n_users)) < q[:, None]
    t, u = np.nonzero(member)
    y = np.einsum("ed,ed->e", U[u], theta[t]) + rng.normal(0.0, noise, size=t.size)
    return MultiTaskData.from_entries(t, u, U[u], y, n_tasks=n_tasks, n_users=n_users), theta


def synthetic_ratings(
    n_items: int = 400,
    n_users: int = 3000,
    rank: int = 5,
    ratings_per_user: float = 25.0,
    zipf: float = 1.0,
    noise: float = 0.1,
    rng: np.random.Generator | None = None,
) -> MultiTaskData:
    """A low-rank ratings matrix with long-tail item popularity. Items are tasks; X has 0 columns.

    Item popularity p_i ~ (i+1)^-zipf (scaled so users rate ``ratings_per_user`` items on average),
    ratings y = u_i.v_j + N(0, noise^2) with u_i, v_j ~ N(0, I/rank) projected to the unit ball (so
    abs(y) <= 1 + noise tails).

    Parameters
    ----------
    n_items, n_users, rank : int
        The sizes.
    ratings_per_user : float
        The expected number of ratings per user.
    zipf : float
        The popularity exponent.
    noise : float
        The rating noise sd (not privacy noise).
    rng : numpy.random.Generator, optional
        The random source; fresh entropy by default.

    Returns
    -------
    MultiTaskData
    """
    rng = np.random.default_rng() if rng is None else rng
    p = (np.arange(n_items) + 1.0) ** (-zipf)
    p = np.minimum(p * ratings_per_user / p.sum(), 1.0)
    p = p[rng.permutation(n_items)]
    member = rng.random((n_items, n_users)) < p[:, None]
    t, u = np.nonzero(member)
    Ui = clip_rows(rng.normal(0.0, 1.0 / math.sqrt(rank), size=(n_items, rank)) * 1.5, 1.0)
    Vj = clip_rows(rng.normal(0.0, 1.0 / math.sqrt(rank), size=(n_users, rank)) * 1.5, 1.0)
    y = np.einsum("er,er->e", Ui[t], Vj[u]) + rng.normal(0.0, noise, size=t.size)
    return MultiTaskData.from_entries(t, u, np.zeros((t.size, 0)), y, n_tasks=n_items, n_users=n_users)
