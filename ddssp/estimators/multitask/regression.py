"""The two private multi-task regressions on task-weighted entries: Algorithm 1, task-weighted sufficient
statistics perturbation (:func:`weighted_ssp`: noisy per-task A_i = sum_j w_ij x x^T and b_i = sum_j w_ij y
x, then a ridge solve), and Algorithm 2, task-weighted noisy gradient descent (:func:`weighted_noisy_gd`),
each costing the per-user budget beta in zCDP; with the exact (non-private) weighted statistics and ridge
solves they rest on, and the OpenDP charge of a block of float Gaussian entries (:func:`ssp_charge`). The
data model, budget plan and weights they take are in :mod:`.model`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse

from ddssp.dp import Ledger, LedgerEntry, check_bound, check_rho, clip_rows
from ddssp.dp.measurements import gaussian_float_measurement, opendp_charge
from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.errors import DDSSPError
from ddssp.estimators.multitask.counts import opendp_sigma
from ddssp.estimators.multitask.model import MultiTaskData
from ddssp.estimators.multitask.weights import check_weights


def _task_matrix(task_idx: np.ndarray, values: np.ndarray, m: int) -> sparse.csr_matrix:
    """Sparse (m x E) matrix with ``values[e]`` at (task_idx[e], e): left-multiplying sums per task."""
    E = task_idx.shape[0]
    return sparse.csr_matrix((values, (task_idx, np.arange(E))), shape=(m, E))


# =========================================================================== Algorithm 1: weighted SSP
def psd_project(A: np.ndarray) -> np.ndarray:
    """Nearest PSD matrices (batched, Frobenius): negative eigenvalues set to 0.

    Parameters
    ----------
    A : numpy.ndarray
        Symmetric matrices, shape (..., d, d).

    Returns
    -------
    numpy.ndarray
    """
    vals, vecs = np.linalg.eigh(A)
    vals = np.maximum(vals, 0.0)
    return (vecs * vals[..., None, :]) @ np.swapaxes(vecs, -1, -2)


def weighted_stats(
    data: MultiTaskData, w: np.ndarray, X: np.ndarray | None = None, y: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A_i = sum_j w_ij x_ij x_ij^T and b_i = sum_j w_ij y_ij x_ij; exact, not private.

    Parameters
    ----------
    data : MultiTaskData
        The data.
    w : numpy.ndarray
        One weight per entry.
    X : numpy.ndarray, optional
        Replaces ``data.X``.
    y : numpy.ndarray, optional
        Replaces ``data.y``.

    Returns
    -------
    A : numpy.ndarray
        Shape (m, d, d).
    b : numpy.ndarray
        Shape (m, d).
    """
    X = data.X if X is None else X
    y = data.y if y is None else y
    d = X.shape[1]
    W = _task_matrix(data.task_idx, np.asarray(w, dtype=float), data.n_tasks)
    outer = (X[:, :, None] * X[:, None, :]).reshape(-1, d * d)
    A = np.asarray(W @ outer).reshape(data.n_tasks, d, d)
    b = np.asarray(W @ (X * y[:, None]))
    return A, b


def solve_ridge(A: np.ndarray, b: np.ndarray, ridge: float) -> np.ndarray:
    """theta_i = (A_i + ridge I)^+ b_i, batched.

    Parameters
    ----------
    A : numpy.ndarray
        Shape (m, d, d).
    b : numpy.ndarray
        Shape (m, d).
    ridge : float
        The ridge.

    Returns
    -------
    numpy.ndarray
        Shape (m, d).
    """
    d = A.shape[-1]
    M = A + ridge * np.eye(d)
    return np.einsum("mij,mj->mi", np.linalg.pinv(M, hermitian=True), b)


def weighted_ridge(data: MultiTaskData, w: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """Non-private weighted multi-task ridge: theta_i = (sum_j w_ij x x^T + ridge I)^+ sum_j w_ij y x.

    Parameters
    ----------
    data : MultiTaskData
        The data.
    w : numpy.ndarray
        One weight per entry.
    ridge : float
        The ridge.

    Returns
    -------
    numpy.ndarray
        Shape (m, d).
    """
    A, b = weighted_stats(data, w)
    return solve_ridge(A, b, ridge)


def noisy_symmetric(A: np.ndarray, sigma: float, noise: NoiseSource) -> np.ndarray:
    """Symmetric matrices with iid N(0, sigma^2) noise on each upper triangle (with the diagonal), mirrored below.

    One ``noise.gaussian_float`` call on the stacked triangles.

    Parameters
    ----------
    A : numpy.ndarray
        Shape (m, d, d).
    sigma : float
        The noise scale.
    noise : NoiseSource
        The DP noise source.

    Returns
    -------
    numpy.ndarray
    """
    d = A.shape[-1]
    iu = np.triu_indices(d)
    upper = noise.gaussian_float(A[:, iu[0], iu[1]], sigma)
    out = np.zeros_like(A, dtype=float)
    out[:, iu[0], iu[1]] = upper
    out[:, iu[1], iu[0]] = upper
    return out


def ssp_charge(sigma: float, size: int, sens: float) -> float:
    """OpenDP's rho for ``size`` float Gaussian entries at scale sigma and L2 sensitivity ``sens``.

    Parameters
    ----------
    sigma : float
        The noise scale.
    size : int
        The number of entries.
    sens : float
        The L2 sensitivity.

    Returns
    -------
    float
    """
    return opendp_charge(gaussian_float_measurement(sigma, size), float(sens))[0]


def weighted_ssp(
    data: MultiTaskData,
    w: np.ndarray,
    beta: float,
    clip_x: float,
    clip_star: float,
    ridge: float,
    noise: NoiseSource | None = None,
    ledger: Ledger | None = None,
    X: np.ndarray | None = None,
    round: int | None = None,
    return_stats: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 (task-weighted SSP), zCDP cost beta (charged to ``ledger`` before any noise is drawn).

    x clipped to ||x|| <= clip_x, y to abs(y) <= clip_x clip_star;
    A_i = sum_j w_ij x x^T + clip_x^2 Xi_i (Xi_i symmetric, upper triangle iid N(0, 1)),
    b_i = sum_j w_ij y x + clip_x^2 clip_star xi_i;
    theta_i = (PSD(A_i) + ridge I)^+ b_i (the ridge is data-independent and added after the noise).
    Sensitivity: removing user j moves the stacked upper triangles of (A_i) by at most
    sqrt(sum_i w_ij^2) clip_x^2 <= sqrt(beta) clip_x^2 in L2, so each release costs beta/2; the same
    for b. The sigmas are the textbook ones nudged by :func:`~.counts.opendp_sigma` so that OpenDP's
    maps give exactly beta/2 or less each.

    Parameters
    ----------
    data : MultiTaskData
        The data.
    w : numpy.ndarray
        Entry weights within the per-user budget.
    beta : float
        The per-user budget.
    clip_x, clip_star : float
        Declared bounds.
    ridge : float
        A finite ridge >= 0.
    noise : NoiseSource, optional
        The DP noise source (default secure; a numpy Generator is refused).
    ledger : Ledger, optional
        Charged before any noise is drawn.
    X : numpy.ndarray, optional
        Replaces ``data.X`` (DP-ALS passes the user embeddings here).
    round : int, optional
        The round, for the ledger entries.
    return_stats : bool
        Also return the noisy (A_hat, b_hat) (already released quantities; used by the calibration
        tests).

    Returns
    -------
    numpy.ndarray or tuple
        theta, shape (m, d); with ``return_stats``, (theta, A_hat, b_hat).

    Raises
    ------
    DDSSPError
        For an invalid ridge or weights.
    """
    beta = check_rho(beta, "beta")
    clip_x = check_bound(clip_x, "clip_x (declared bound on ||x||)")
    clip_star = check_bound(clip_star, "clip_star (declared bound: |y| <= clip_x * clip_star)")
    try:
        ridge = float(ridge)
    except (TypeError, ValueError):
        raise DDSSPError(f"ridge must be a number >= 0, got {ridge!r}") from None
    if not (math.isfinite(ridge) and ridge >= 0):
        raise DDSSPError(f"ridge must be a finite number >= 0, got {ridge!r}")
    check_weights(data, w, beta)
    X = data.X if X is None else np.asarray(X, dtype=float)
    if X.shape[1] == 0:
        raise DDSSPError("weighted SSP needs at least one feature")
    Xc = clip_rows(X, clip_x)
    yc = np.clip(data.y, -clip_x * clip_star, clip_x * clip_star)
    noise = resolve_noise(noise)
    A, b = weighted_stats(data, w, Xc, yc)
    m, d = data.n_tasks, X.shape[1]
    size_A, size_b = m * d * (d + 1) // 2, m * d
    sens_A = math.sqrt(beta) * clip_x**2
    sens_b = math.sqrt(beta) * clip_x * clip_x * clip_star
    sigma_A, rho_A = opendp_sigma(clip_x**2, lambda s: ssp_charge(s, size_A, sens_A), beta / 2.0)
    sigma_b, rho_b = opendp_sigma(clip_x**2 * clip_star, lambda s: ssp_charge(s, size_b, sens_b), beta / 2.0)
    if ledger is not None:
        ledger.charge(
            LedgerEntry(
                "ssp-round",
                rho_A + rho_b,
                sigma=sigma_A,
                round=round,
                note=f"A_i (sigma={sigma_A:.4g}) and b_i (sigma={sigma_b:.4g}), per-user beta={beta:.6g}",
                params={"sigma_b": sigma_b, "sens_A": sens_A, "sens_b": sens_b, "size_A": size_A, "size_b": size_b},
            )
        )
    A_hat = noisy_symmetric(A, sigma_A, noise)
    b_hat = noise.gaussian_float(b, sigma_b)
    theta = solve_ridge(psd_project(A_hat), b_hat, ridge)
    return (theta, A_hat, b_hat) if return_stats else theta


# =========================================================================== Algorithm 2: noisy GD
def weighted_noisy_gd(
    data: MultiTaskData,
    w: np.ndarray,
    beta: float,
    steps: int,
    grad_clip: float,
    step_sizes: np.ndarray,
    radius: float,
    noise: NoiseSource | None = None,
    ledger: Ledger | None = None,
    ridge: float = 0.0,
    theta0: np.ndarray | None = None,
    average_last: float = 0.5,
) -> np.ndarray:
    """Algorithm 2 (task-weighted noisy GD) for the squared loss 1/2 (theta_i . x - y)^2, zCDP cost beta.

    Every step: per-example gradients clipped to ``grad_clip``, weighted and summed per task, plus
    grad_clip sqrt(T/2) N(0, I) noise (each step costs beta/T: the stacked sum moves by at most
    sqrt(beta) grad_clip when one user is removed), plus the data-independent ridge gradient, then a
    step theta_i -= step_sizes[i] * g_i and projection onto the ball of radius ``radius``. Each step's
    noise is OpenDP's float Gaussian on the summed gradients themselves (one ``noise.gaussian_float``
    call of m d entries per step); its charge is OpenDP's map, sigma nudged by
    :func:`~.counts.opendp_sigma` so that T steps cost at most beta.

    Parameters
    ----------
    data : MultiTaskData
        The data (already clipped to the declared bounds).
    w : numpy.ndarray
        Entry weights within the per-user budget.
    beta : float
        The per-user budget.
    steps : int
        The number of steps T.
    grad_clip : float
        The per-example gradient clip.
    step_sizes : numpy.ndarray
        One step size per task.
    radius : float
        The parameter ball's radius.
    noise : NoiseSource, optional
        The DP noise source (default secure).
    ledger : Ledger, optional
        Charged before any noise is drawn.
    ridge : float
        L2 penalty of the squared loss.
    theta0 : numpy.ndarray, optional
        The starting point (zeros by default).
    average_last : float
        Return the average of this last fraction of iterates (post-processing).

    Returns
    -------
    numpy.ndarray
        Shape (m, d).

    Raises
    ------
    DDSSPError
        For invalid steps, weights, or no features.
    """
    beta = check_rho(beta, "beta")
    if not isinstance(steps, (int, np.integer)) or steps < 1:
        raise DDSSPError(f"steps must be a positive integer, got {steps!r}")
    grad_clip = check_bound(grad_clip, "grad_clip")
    radius = check_bound(radius, "radius")
    check_weights(data, w, beta)
    m, d = data.n_tasks, data.n_features
    if d == 0:
        raise DDSSPError("noisy GD needs at least one feature")
    noise = resolve_noise(noise)
    step_sizes = np.broadcast_to(np.asarray(step_sizes, dtype=float), (m,))
    sens = math.sqrt(beta) * grad_clip
    sigma, per = opendp_sigma(grad_clip * math.sqrt(steps / 2.0), lambda s: ssp_charge(s, m * d, sens), beta / steps)
    if ledger is not None:
        for t in range(steps):
            ledger.charge(LedgerEntry("gd-step", per, sigma=sigma, round=t, params={"sens": sens, "size": m * d}))
    W = _task_matrix(data.task_idx, np.asarray(w, dtype=float), m)
    theta = np.zeros((m, d)) if theta0 is None else np.array(theta0, dtype=float)
    X, y = data.X, data.y
    keep_from = steps - max(1, int(round(average_last * steps)))
    acc, nacc = np.zeros((m, d)), 0
    for t in range(steps):
        resid = np.einsum("ed,ed->e", X, theta[data.task_idx]) - y
        G = resid[:, None] * X
        G = clip_rows(G, grad_clip)
        g = noise.gaussian_float(np.asarray(W @ G), sigma) + ridge * theta
        theta = theta - step_sizes[:, None] * g
        norms = np.linalg.norm(theta, axis=1)
        theta *= np.minimum(1.0, radius / np.maximum(norms, 1e-300))[:, None]
        if t >= keep_from:
            acc += theta
            nacc += 1
    return acc / nacc
