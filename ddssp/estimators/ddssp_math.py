"""The numerical parts of DD-SSP as plain functions: the log-sigmoid, its Chebyshev approximation
(coefficients and error bound) and the solve of the (possibly noisy, indefinite) normal equations.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.polynomial import Chebyshev, Polynomial

from ddssp.errors import DDSSPError

#: relative eigenvalue tolerance: |lambda| <= EIG_TOL * max|lambda| counts as zero
EIG_TOL = 1e-11


# ------------------------------------------------------------------------------------- Chebyshev
def log_sigmoid(s: Any) -> np.ndarray:
    """phi(s) = -log(1 + exp(-s)) = log(sigmoid(s)), computed stably.

    Parameters
    ----------
    s : array-like
        The values.

    Returns
    -------
    numpy.ndarray
    """
    return -np.logaddexp(0.0, -np.asarray(s, dtype=float))


def chebyshev_coefficients(degree: int = 2, R: float = 6.0) -> np.ndarray:
    """Power-basis coefficients [b0, ..., b_degree] of the Chebyshev interpolant of phi on [-R, R].

    The interpolant is taken at the degree+1 Chebyshev points of the first kind (numpy's
    ``Chebyshev.interpolate``) and converted to the power basis in s itself (not in s / R).

    Parameters
    ----------
    degree : int
        The polynomial degree, positive.
    R : float
        The half-width of the approximation range, positive.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For an invalid degree or R.
    """
    if not isinstance(degree, (int, np.integer)) or isinstance(degree, bool) or degree < 1:
        raise DDSSPError(f"Chebyshev degree must be a positive integer, got {degree!r}")
    R = float(R)
    if not math.isfinite(R) or R <= 0:
        raise DDSSPError(f"the approximation range R must be a positive number, got {R}")
    cheb = Chebyshev.interpolate(log_sigmoid, int(degree), domain=[-R, R])
    poly = cheb.convert(kind=Polynomial, domain=[-1.0, 1.0], window=[-1.0, 1.0])
    coef = np.zeros(int(degree) + 1)
    coef[: len(poly.coef)] = poly.coef
    return coef


def chebyshev_error_bound(degree: int, R: float) -> float:
    """Interpolation-error bound at Chebyshev nodes on [-R, R] for degree 2.

    The bound is max|phi'''| / (3! 2^2) * R^3, with max|phi'''| = max_p p(1-p)|1-2p| = 1/(6 sqrt 3).

    Parameters
    ----------
    degree : int
        Must be 2.
    R : float
        The half-width of the approximation range.

    Returns
    -------
    float

    Raises
    ------
    DDSSPError
        For a degree other than 2.
    """
    if degree != 2:
        raise DDSSPError("the closed-form error bound is implemented for degree 2 only")
    return (1.0 / (6.0 * math.sqrt(3.0))) / (math.factorial(3) * 2**2) * float(R) ** 3


# ------------------------------------------------------------------------------------- solving
def solve_normal_equations(
    xtx: np.ndarray,
    xty: np.ndarray,
    ridge: float = 0.0,
    penalized: np.ndarray | None = None,
    psd: str = "clip",
    penalty: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """theta solving (xtx + ridge * diag(penalized) + penalty) theta = xty, robust to a noisy indefinite xtx.

    A PSD but singular matrix gives the minimum-norm solution (as numpy's lstsq on the rows would).

    Parameters
    ----------
    xtx : numpy.ndarray
        The (possibly noisy) X^T X; symmetrised first.
    xty : numpy.ndarray
        X^T y.
    ridge : float
        A non-negative ridge.
    penalized : numpy.ndarray, optional
        Per-coefficient ridge factors (e.g. 0 for the intercept); all 1 by default.
    psd : str
        For an indefinite matrix: ``"clip"`` (negative eigenvalues set to 0) or ``"ridge"`` (the
        smallest ridge that makes it positive definite).
    penalty : numpy.ndarray, optional
        A symmetric matrix added to xtx (e.g. the noise floor of
        :func:`~ddssp.estimators.ddssp_ridge.floor_penalty`), before the repair of an indefinite matrix.

    Returns
    -------
    theta : numpy.ndarray
    info : dict
        ``min_eig``, ``max_eig``, ``rank``, ``action`` (and ``extra_ridge`` when one was added).

    Raises
    ------
    DDSSPError
        For an unknown ``psd`` or an invalid ridge.
    """
    if psd not in ("clip", "ridge"):
        raise DDSSPError(f"psd must be 'clip' or 'ridge', got {psd!r}")
    ridge = float(ridge)
    if not math.isfinite(ridge) or ridge < 0:
        raise DDSSPError(f"ridge must be a non-negative number, got {ridge}")
    A = np.array(xtx, dtype=float)
    b = np.asarray(xty, dtype=float)
    p = A.shape[0]
    if p == 0:
        return np.zeros(0), {"action": "none", "rank": 0, "min_eig": 0.0, "max_eig": 0.0}
    A = (A + A.T) / 2.0
    if ridge:
        pen = np.ones(p) if penalized is None else np.asarray(penalized, dtype=float)
        A = A + ridge * np.diag(pen)
    if penalty is not None:
        A = A + np.asarray(penalty, dtype=float)
    w, V = np.linalg.eigh(A)
    scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny)
    tol = EIG_TOL * scale * p
    info: dict[str, Any] = {"min_eig": float(w[0]), "max_eig": float(w[-1]), "action": "none"}
    if w[0] < -tol:
        neg = int(np.sum(w < -tol))
        if psd == "clip":
            info["action"] = f"clipped {neg} negative eigenvalue(s) to 0 (PSD projection), minimum-norm solution"
            w = np.where(w < 0, 0.0, w)
        else:
            shift = -float(w[0]) * (1 + 1e-6) + tol
            info["action"] = f"added ridge {shift:.6g} (the smallest that makes it positive definite)"
            info["extra_ridge"] = shift
            w = w + shift
        warnings.warn(
            f"X^T X from the marginals is not positive semi-definite (smallest eigenvalue {info['min_eig']:.4g}, "
            f"largest {info['max_eig']:.4g}; noise does this): {info['action']}",
            stacklevel=3,
        )
    keep = w > tol
    info["rank"] = int(keep.sum())
    if info["rank"] < p and info["action"] == "none":
        info["action"] = "singular: minimum-norm solution"
        warnings.warn(
            f"X^T X is singular (rank {info['rank']} of {p}; e.g. a level that never occurs or collinear "
            "features); using the minimum-norm solution",
            stacklevel=3,
        )
    coef = V[:, keep].T @ b
    theta = V[:, keep] @ (coef / w[keep])
    return theta, info


def psd_pinv(A: np.ndarray) -> np.ndarray:
    """The pseudo-inverse of the PSD part of a symmetric matrix: eigenvalues at most ``EIG_TOL``
    times the largest (by magnitude) times the size, negative ones included, are dropped.

    Parameters
    ----------
    A : numpy.ndarray
        A symmetric matrix (X^T X plus the fit's penalty).

    Returns
    -------
    numpy.ndarray
    """
    w, V = np.linalg.eigh(A)
    keep = w > EIG_TOL * max(float(np.max(np.abs(w))), np.finfo(float).tiny) * len(w)
    return (V[:, keep] / w[keep]) @ V[:, keep].T


def coefficient_scale(est: Any) -> float:
    """c in theta = c * (the least-squares solution): 1 for linear regression, -b1 / (2 b2) of the
    Chebyshev approximation for logistic.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted.

    Returns
    -------
    float
    """
    b = getattr(est, "chebyshev_coef_", None)
    return 1.0 if b is None else float(-b[1] / (2.0 * b[2]))
