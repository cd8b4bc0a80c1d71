"""DP alternating least squares for ratings (the paper's Appendix D; tasks are items): exact per-user
solves that are never released (:func:`user_solve`), private item solves by task-weighted SSP
(:func:`~.regression.weighted_ssp`) under adaptive, uniform or tail weights (:func:`dp_als`), and the
predicted ratings u_i . v_j (:func:`als_predict`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse

from ddssp.dp import Ledger
from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.errors import DDSSPError
from ddssp.estimators.multitask.budget import BudgetPlan, plan_budget
from ddssp.estimators.multitask.counts import private_task_counts
from ddssp.estimators.multitask.model import MultiTaskData
from ddssp.estimators.multitask.options import ALSOptions, TaskWeighting
from ddssp.estimators.multitask.regression import solve_ridge, weighted_ssp, weighted_stats
from ddssp.estimators.multitask.weights import ALLOCATIONS, allocate_weights


def user_solve(data: MultiTaskData, U: np.ndarray, ridge: float) -> np.ndarray:
    """Exact per-user ridge solves (not private: the user embeddings are never released).

    v_j = (sum_{i in Omega^j} u_i u_i^T + ridge I)^-1 sum_i y_ij u_i.

    Parameters
    ----------
    data : MultiTaskData
        The ratings (tasks are items).
    U : numpy.ndarray
        Item embeddings, shape (m, rank).
    ridge : float
        The ridge of each user's solve.

    Returns
    -------
    numpy.ndarray
        User embeddings, shape (n, rank).
    """
    r = U.shape[1]
    Ue = U[data.task_idx]
    P = sparse.csr_matrix(
        (np.ones(data.n_entries), (data.user_idx, np.arange(data.n_entries))), shape=(data.n_users, data.n_entries)
    )
    G = np.asarray(P @ (Ue[:, :, None] * Ue[:, None, :]).reshape(-1, r * r)).reshape(-1, r, r)
    h = np.asarray(P @ (Ue * data.y[:, None]))
    return np.linalg.solve(G + ridge * np.eye(r), h[..., None])[..., 0]


def als_predict(U: np.ndarray, V: np.ndarray, task_idx: np.ndarray, user_idx: np.ndarray) -> np.ndarray:
    """Predicted ratings u_i . v_j for each (item, user) pair.

    Parameters
    ----------
    U : numpy.ndarray
        Item embeddings, shape (m, rank).
    V : numpy.ndarray
        User embeddings, shape (n, rank).
    task_idx, user_idx : numpy.ndarray
        Integer item and user positions, one pair per prediction.

    Returns
    -------
    numpy.ndarray
    """
    return np.einsum("er,er->e", U[task_idx], V[user_idx])


def dp_als(
    data: MultiTaskData,
    eps: float | None,
    delta: float,
    rng: np.random.Generator,
    *,
    als: ALSOptions | None = None,
    weighting: TaskWeighting | None = None,
    clip_x: float = 1.0,
    clip_star: float = 1.0,
    public_counts: np.ndarray | None = None,
    noise: NoiseSource | None = None,
) -> tuple[np.ndarray, Ledger, BudgetPlan]:
    """DP alternating least squares (Algorithm 3 of the paper's Appendix D). Tasks are items.

    Pre-processing: noisy item counts (cost rho_counts) when the allocation needs them. Then ``rounds``
    times: exact user solves V given U (never released), and a private item solve U = Algorithm 1 with
    x_ij = v_j (clipped to clip_x), labels y_ij (clipped to clip_x clip_star), per-user budget beta.
    Total zCDP: rho_counts + rounds * beta = rho(eps, delta).

    Parameters
    ----------
    data : MultiTaskData
        The ratings (y centred; X is ignored).
    eps : float or None
        User-level eps. None runs non-privately (exact weighted item solves with unit weights; for
        reference only).
    delta : float
        User-level delta.
    rng : numpy.random.Generator
        Draws only the initial U and the uniform / tail sampling keys (not privacy noise).
    als : ALSOptions, optional
        Rank, rounds, allocation (``"adaptive"``, ``"uniform"`` or ``"tail"``:
        :func:`~.weights.allocate_weights`), k, ridges, initial scale (default ``ALSOptions()``).
    weighting : TaskWeighting, optional
        mu, per_user, beta_bar, count_share, count_clip (default ``TaskWeighting(mu=0.25)``).
    clip_x, clip_star : float
        Declared bounds: embeddings clipped to norm clip_x, ratings to clip_x clip_star.
    public_counts : numpy.ndarray, optional
        Item sizes declared public (then nothing is spent on counts).
    noise : NoiseSource, optional
        The DP noise source (default :class:`~ddssp.dp.noise.SecureNoise`).

    Returns
    -------
    U : numpy.ndarray
        The item embeddings, shape (m, rank).
    ledger : Ledger
        Every charge.
    plan : BudgetPlan
        How the budget was split.

    Raises
    ------
    DDSSPError
        For invalid parameters.
    """
    als = ALSOptions() if als is None else als
    weighting = TaskWeighting(mu=0.25) if weighting is None else weighting
    rank, rounds, allocation = als.rank, als.rounds, als.allocation
    if not isinstance(rank, (int, np.integer)) or rank < 1:
        raise DDSSPError(f"rank must be a positive integer, got {rank!r}")
    if not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise DDSSPError(f"rounds must be a positive integer, got {rounds!r}")
    if allocation not in ALLOCATIONS:
        raise DDSSPError(f"allocation must be one of {ALLOCATIONS}, got {allocation!r}")
    item_ridge = clip_x**2 * math.sqrt(rank) if als.item_ridge is None else float(als.item_ridge)
    scale = als.init_scale if als.init_scale is not None else 1.0 / math.sqrt(rank)
    U = rng.normal(0.0, scale, size=(data.n_tasks, rank))
    if eps is None:
        w = np.ones(data.n_entries)
        for _ in range(rounds):
            V = user_solve(data, U, als.user_ridge)
            A, b = weighted_stats(data, w, V[data.user_idx], data.y)
            U = solve_ridge(A, b, als.user_ridge)
        return U, Ledger(1.0), BudgetPlan(math.inf, delta, math.inf, 0.0, math.inf, rounds)
    noise = resolve_noise(noise)
    w, ledger, plan = _als_weights(data, eps, delta, rng, als, weighting, public_counts, noise)
    for t in range(rounds):
        V = user_solve(data, U, als.user_ridge)
        U = weighted_ssp(data, w, plan.beta, clip_x, clip_star, item_ridge, noise, ledger, X=V[data.user_idx], round=t)
    return U, ledger, plan


def _als_weights(
    data: MultiTaskData,
    eps: float,
    delta: float,
    rng: np.random.Generator,
    als: ALSOptions,
    weighting: TaskWeighting,
    public_counts: np.ndarray | None,
    noise: NoiseSource,
) -> tuple[np.ndarray, Ledger, BudgetPlan]:
    """The budget plan, its ledger (charged for the noisy item counts when the allocation needs them)
    and the per-entry weights of :func:`dp_als`."""
    allocation, mu, per_user = als.allocation, weighting.mu, weighting.per_user
    needs_counts = public_counts is None and (
        allocation == "tail" or (allocation == "adaptive" and not (per_user == "normalize" and mu == 0))
    )
    plan = plan_budget(eps, delta, als.rounds, weighting.count_share if needs_counts else 0.0)
    ledger = Ledger(plan.rho_total)
    counts, n_hat = None, None
    if public_counts is not None:
        counts = np.maximum(np.asarray(public_counts, dtype=float), 1.0)
        if counts.shape != (data.n_tasks,):
            raise DDSSPError(f"public_counts must have one count per task ({data.n_tasks})")
        n_hat = float(data.n_users)
    elif needs_counts:
        counts, n_hat, _ = private_task_counts(data, plan.rho_counts, noise, ledger, weighting.count_clip)
    if allocation != "adaptive" and als.k is None:
        raise DDSSPError(f"allocation {allocation!r} needs k (entries kept per user)")
    w = allocate_weights(
        data,
        plan.beta,
        allocation=allocation,
        mu=mu,
        counts=counts,
        n_users_hat=n_hat,
        beta_bar=weighting.beta_bar,
        per_user=per_user,
        k=als.k,
        rng=rng,
    )
    return w, ledger, plan
