"""The mathematics of PDP-OP (:mod:`ddssp.estimators.pdp_op`), as plain functions: the bound on
||theta_bar|| and the sensitivity constant C (:func:`theta_norm_bound`, :func:`sensitivity_constant`),
the weights w_i = eps_i / sum_j eps_j (:func:`pdp_weights`), the weighted ridge in closed form
(:func:`weighted_ridge`), the L2-Laplace noise (:func:`sample_l2_laplace`) and the sampling
probabilities of the Jorgensen et al. (2015) baseline (:func:`jorgensen_probabilities`). The method
and its privacy argument are described in :mod:`ddssp.estimators.pdp_op`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.dp.noise import NoiseSource
from ddssp.errors import PrivacyParameterError


def theta_norm_bound(lam: float, R: float, y_bound: float = 1.0, theta_bound: float | None = None) -> float:
    """A bound on ||theta_bar|| valid for every admissible dataset.

    ``Y min(1/sqrt(lam), R/lam)`` (Thm 3.2), or the smaller of that and the declared ``theta_bound``
    (Thm 3.4).

    Parameters
    ----------
    lam : float
        The ridge.
    R : float
        The declared feature-norm bound.
    y_bound : float
        The declared label bound Y.
    theta_bound : float, optional
        The declared bound of Assumption 3.3.

    Returns
    -------
    float
    """
    b = y_bound * min(1.0 / math.sqrt(lam), R / lam)
    if theta_bound is not None:
        b = min(b, float(theta_bound))
    return b


def sensitivity_constant(lam: float, R: float, y_bound: float = 1.0, theta_bound: float | None = None) -> float:
    """``C`` with per-row sensitivity ``Delta_i <= w_i * C``: ``C = 2 R (Y + R Bt) / lam``.

    For R = sqrt(d), Y = 1 this is the paper's ``2 sqrt(d) (sqrt(d) B + 1) / lam``.

    Parameters
    ----------
    lam : float
        The ridge.
    R : float
        The declared feature-norm bound.
    y_bound : float
        The declared label bound Y.
    theta_bound : float, optional
        The declared bound of Assumption 3.3.

    Returns
    -------
    float
    """
    bt = theta_norm_bound(lam, R, y_bound, theta_bound)
    return 2.0 * R * (y_bound + R * bt) / lam


def pdp_weights(eps: np.ndarray) -> np.ndarray:
    """``w_i = eps_i / sum_j eps_j`` along the last axis.

    Parameters
    ----------
    eps : numpy.ndarray
        Per-row privacy levels.

    Returns
    -------
    numpy.ndarray
    """
    eps = np.asarray(eps, dtype=float)
    return eps / eps.sum(axis=-1, keepdims=True)


def weighted_ridge(X: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float) -> np.ndarray:
    """``argmin sum_i w_i (y_i - theta.x_i)^2 + lam ||theta||^2`` in closed form, batched over leading axes.

    Rows with weight 0 do not count.

    Parameters
    ----------
    X : numpy.ndarray
        Shape (..., n, d).
    y : numpy.ndarray
        Shape (..., n).
    w : numpy.ndarray
        Shape (..., n).
    lam : float
        The ridge.

    Returns
    -------
    numpy.ndarray
        Shape (..., d).
    """
    X = np.asarray(X, dtype=float)
    Xw = X * np.asarray(w, dtype=float)[..., :, None]
    A = np.swapaxes(Xw, -1, -2) @ X
    d = X.shape[-1]
    A = A + lam * np.eye(d)
    b = np.swapaxes(Xw, -1, -2) @ np.asarray(y, dtype=float)[..., :, None]
    return np.linalg.solve(A, b)[..., 0]


def sample_l2_laplace(d: int, eta: float | np.ndarray, noise: NoiseSource, size: Any = None) -> np.ndarray:
    """Draws from the density proportional to ``exp(-eta ||z||_2)`` on R^d.

    Radius ~ Gamma(shape=d, scale=1/eta) (mean d/eta, variance d/eta^2) times a direction uniform on the
    sphere (a normalised standard Gaussian), from ``noise``
    (:meth:`~ddssp.dp.noise.NoiseSource.l2_laplace`).

    Parameters
    ----------
    d : int
        The dimension.
    eta : float or numpy.ndarray
        The rate; an array gives one rate per draw.
    noise : NoiseSource
        The DP noise source. A numpy Generator is refused: DP noise never comes from a seed (use
        ``InsecureSeededNoise(seed)`` for reproducible, NOT PRIVATE draws).
    size : int or tuple of int, optional
        The batch shape.

    Returns
    -------
    numpy.ndarray
        Shape ``broadcast(size, eta.shape) + (d,)``.

    Raises
    ------
    PrivacyParameterError
        When ``noise`` is not a NoiseSource.
    """
    if not isinstance(noise, NoiseSource):
        raise PrivacyParameterError(
            f"sample_l2_laplace needs a NoiseSource (SecureNoise() or InsecureSeededNoise(seed)), got {type(noise).__name__}"
        )
    return noise.l2_laplace(d, eta, size)


def jorgensen_probabilities(eps: np.ndarray, t: float) -> np.ndarray:
    """Sampling probabilities of the Jorgensen et al. (2015) sample mechanism with threshold t.

    ``(exp(eps_i) - 1) / (exp(t) - 1)`` if eps_i < t, else 1.

    Parameters
    ----------
    eps : numpy.ndarray
        Per-row privacy levels.
    t : float or numpy.ndarray
        The threshold (one per profile when an array).

    Returns
    -------
    numpy.ndarray
    """
    eps = np.asarray(eps, dtype=float)
    t = np.asarray(t, dtype=float)
    if t.ndim:
        t = t[..., None]
    return np.where(eps < t, np.expm1(eps) / np.expm1(t), 1.0)
