"""ObjPert: (eps, delta)-DP logistic regression by generalised objective perturbation.

Kifer, Smith and Thakurta (2012), Theorem 2, as used by the DD-SSP paper (Appendix C, Algorithm 3;
usage: docs/reference/estimators.md). With the per-row loss l(theta; x, y) = log(1 + exp(-y x.theta)), y in {-1, +1}:

    Delta = B^2 / (2 eps)
    b ~ N(0, B^2 (8 log(2/delta) + 4 eps) / eps^2 * I_d)
    theta = argmin (1/n) sum_i l(theta; x_i, y_i) + (1/n) r(theta) + Delta/(2n) ||theta||^2 + b.theta / n

where B = ``x_bound`` is the declared bound on the row norm ||x|| (rows beyond it are scaled down to
it, never measured on the data) and r(theta) = ``ridge``/2 ||theta||^2 an optional extra convex
regulariser.

Smoothness constant (checked against the paper's Appendix C): Kifer et al. require
Delta >= 2 lambda / eps, where lambda bounds the eigenvalues of the Hessian of one row's loss, and
the gradient norm ||grad l|| <= zeta. For the logistic loss, Hessian = phi''(s) x x^T with
phi'' <= 1/4, so lambda = B^2 / 4 and Delta >= 2 (B^2/4) / eps = B^2 / (2 eps): the
Delta above already contains the 1/4 factor (without it one would use 2 B^2 / eps, four times more
regularisation than needed). The gradient bound is zeta = |phi'| |y| ||x|| <= B, giving the noise
variance zeta^2 (8 log(2/delta) + 4 eps) / eps^2 above. Both bounds need |y| = 1 (labels are mapped
to -1/+1) and a Hessian of rank at most one (true for any linear model loss).

Intercept: as for AdaSSP, the caller decides. No separate intercept is fitted (``intercept_`` = 0);
include a constant column in X, counted in ``x_bound``, to fit one.

Noise. b is drawn by OpenDP's float Gaussian sampler (``noise.gaussian_float(zeros(d), sigma)``, see
:mod:`ddssp.dp.noise`): secret, no seed reaches it. ``insecure_seed=N`` (or
``noise=InsecureSeededNoise(N)``) makes it reproducible for tests, NOT PRIVATE. There is no OpenDP
privacy map for objective perturbation (b enters an optimisation, not a released sum), so the charge
is Kifer et al.'s theorem as stated above; OpenDP only supplies the draws. The released theta is the
output of a float optimiser, so it is no more floating-point exact than any ERM solution.

The noise vector b is not stored: together with theta and the data it would reveal the exact
(non-private) gradient sum; only theta is released.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special

from ddssp.dp import PrivacyRecord, check_bound, check_delta, check_eps, clip_rows
from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.errors import DDSSPError
from ddssp.estimators.base import DPClassifier, as_matrix


def binary_labels(y: Any, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(classes_, labels in {-1, +1}) for y coded 0/1, -1/+1 or boolean.

    ``classes_`` is [0, 1] or [-1, 1] following the coding (a y holding only 1s counts as 0/1); the
    larger label is the positive class.

    Parameters
    ----------
    y : array-like
        The labels.
    n : int, optional
        The expected length (the rows of X).

    Returns
    -------
    classes : numpy.ndarray
    labels : numpy.ndarray
        -1.0 / +1.0.

    Raises
    ------
    DDSSPError
        For a wrong length, non-numeric or non-finite labels, or other codings.
    """
    arr = np.asarray(y).reshape(-1)
    if n is not None and arr.shape[0] != n:
        raise DDSSPError(f"y has {arr.shape[0]} values but X has {n} rows")
    if arr.dtype == bool:
        arr = arr.astype(int)
    try:
        vals = arr.astype(float)
    except (TypeError, ValueError):
        raise DDSSPError("logistic regression needs labels coded 0/1 or -1/+1 (numbers)") from None
    if not np.all(np.isfinite(vals)):
        raise DDSSPError("y contains NaN or infinite values")
    levels = set(np.unique(vals).tolist())
    if levels <= {0.0, 1.0}:
        classes = np.array([0, 1])
    elif levels <= {-1.0, 1.0}:
        classes = np.array([-1, 1])
    else:
        shown = sorted(levels)[:5]
        raise DDSSPError(f"logistic regression needs labels coded 0/1 or -1/+1, got values {shown}")
    return classes, np.where(vals == 1.0, 1.0, -1.0)


def logistic_objective(theta: np.ndarray, X: np.ndarray, ypm: np.ndarray, reg, lin: np.ndarray | None):
    """sum_i log(1 + exp(-y_i x_i.theta)) + 1/2 sum_j reg_j theta_j^2 + lin.theta, and its gradient.

    Parameters
    ----------
    theta : numpy.ndarray
        The coefficients.
    X : numpy.ndarray
        The rows.
    ypm : numpy.ndarray
        Labels in {-1, +1}.
    reg : float or numpy.ndarray
        A number or one penalty per coordinate.
    lin : numpy.ndarray or None
        The linear term.

    Returns
    -------
    value : float
    gradient : numpy.ndarray
    """
    m = ypm * (X @ theta)
    val = float(np.sum(np.logaddexp(0.0, -m))) + 0.5 * float(theta @ (reg * theta))
    grad = -(X.T @ (ypm * special.expit(-m))) + reg * theta
    if lin is not None:
        val += float(lin @ theta)
        grad = grad + lin
    return val, grad


def minimize_logistic(
    X: np.ndarray, ypm: np.ndarray, reg, lin: np.ndarray | None = None, *, max_iter: int = 2000, tol: float = 1e-10
) -> np.ndarray:
    """Minimise :func:`logistic_objective` (scaled by 1/n for conditioning) from theta = 0.

    Newton's method in a trust region (scipy ``trust-exact``, exact Hessian X^T W X + diag(reg)) for up
    to ``NEWTON_MAX_DIM`` coefficients, else L-BFGS with the gradient.

    Parameters
    ----------
    X : numpy.ndarray
        The rows.
    ypm : numpy.ndarray
        Labels in {-1, +1}.
    reg : float or numpy.ndarray
        A number or one penalty per coordinate.
    lin : numpy.ndarray, optional
        The linear term.
    max_iter : int
        Iteration limit of each optimiser.
    tol : float
        Bound on the gradient norm of the scaled objective at the solution.

    Returns
    -------
    numpy.ndarray
    """
    n = max(X.shape[0], 1)
    d = X.shape[1]
    regv = np.broadcast_to(np.asarray(reg, dtype=float), (d,))

    def f(theta):
        v, g = logistic_objective(theta, X, ypm, regv, lin)
        return v / n, g / n

    theta0 = np.zeros(d)
    if d <= NEWTON_MAX_DIM:

        def hess(theta):
            m = ypm * (X @ theta)
            w = special.expit(m) * special.expit(-m)
            return ((X.T * w) @ X + np.diag(regv)) / n

        res = optimize.minimize(
            f, theta0, jac=True, hess=hess, method="trust-exact", options={"maxiter": max_iter, "gtol": tol}
        )
        if np.all(np.isfinite(res.x)) and np.linalg.norm(f(res.x)[1]) <= max(tol, 1e-7):
            return np.asarray(res.x, dtype=float)
        theta0 = np.asarray(res.x, dtype=float) if np.all(np.isfinite(res.x)) else theta0
    res = optimize.minimize(
        f, theta0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15}
    )
    return np.asarray(res.x, dtype=float)


#: largest number of coefficients for which :func:`minimize_logistic` uses Newton's method
NEWTON_MAX_DIM = 400


class ObjectivePerturbation(DPClassifier):
    """(eps, delta)-DP logistic regression (generalised objective perturbation, Kifer et al. 2012).

    Parameters
    ----------
    eps, delta : float
        Privacy budget of the fit.
    x_bound : float
        Declared bound B on the Euclidean norm of a row of X (rows beyond it are clipped).
    ridge : float
        Extra convex regulariser r(theta) = ridge/2 ||theta||^2 (default 0; the mechanism's own
        Delta/2 ||theta||^2 is always added).
    noise : NoiseSource or None
        The DP noise source (default :class:`~ddssp.dp.noise.SecureNoise`: OpenDP, no seed).
    insecure_seed : int or None
        FOR TESTS ONLY: reproducible noise from ``numpy.random.default_rng(insecure_seed)``, NOT
        PRIVATE (``privacy_.stamp`` says so). Give at most one of ``noise`` and ``insecure_seed``.
    max_iter, tol : int, float
        Optimiser settings.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
        The released coefficients.
    intercept_ : float
        Always 0.0 (include a constant column to fit an intercept).
    classes_ : ndarray
        The two labels, following the coding of y (0/1, -1/+1 or boolean).
    feature_names_in_ : list of str or None
        Column names of a DataFrame X.
    privacy_ : PrivacyRecord
        eps, delta (Kifer et al.'s theorem; no zCDP ledger, so rho is None and there are no
        entries); ``details["x_bound"]``.
    Delta_ : float
        The mechanism's regularisation strength.
    sigma_ : float
        Standard deviation of each entry of b.
    """

    def __init__(
        self,
        eps: float,
        delta: float,
        x_bound: float,
        ridge: float = 0.0,
        noise: NoiseSource | None = None,
        insecure_seed: int | None = None,
        max_iter: int = 2000,
        tol: float = 1e-10,
    ) -> None:
        self.eps = eps
        self.delta = delta
        self.x_bound = x_bound
        self.ridge = ridge
        self.noise = noise
        self.insecure_seed = insecure_seed
        self.max_iter = max_iter
        self.tol = tol
        self._checked_params()

    def _checked_params(self) -> tuple[float, float, float, float]:
        eps = check_eps(self.eps)
        delta = check_delta(self.delta)
        xb = check_bound(self.x_bound, "x_bound")
        try:
            ridge = float(self.ridge)
        except (TypeError, ValueError):
            ridge = float("nan")
        if not (math.isfinite(ridge) and ridge >= 0):
            raise DDSSPError(f"ridge must be a non-negative number, got {self.ridge!r}")
        return eps, delta, xb, ridge

    @staticmethod
    def mechanism_parameters(eps: float, delta: float, x_bound: float) -> tuple[float, float]:
        """(Delta, sigma): the regularisation B^2/(2 eps) and the std of each entry of b.

        Parameters
        ----------
        eps, delta : float
            The budget.
        x_bound : float
            The declared row-norm bound B.

        Returns
        -------
        tuple of float
        """
        Delta = x_bound**2 / (2.0 * eps)
        sigma = x_bound * math.sqrt(8.0 * math.log(2.0 / delta) + 4.0 * eps) / eps
        return Delta, sigma

    def fit(self, X: Any, y: Any) -> ObjectivePerturbation:
        """Fit by objective perturbation.

        Rows are clipped to the declared bound, the noise b is drawn, and the perturbed objective is
        minimised.

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            Features, one row per record (an array or a DataFrame, whose column names become ``feature_names_in_``).
        y : array-like
            Binary labels coded 0/1, -1/+1 or boolean.

        Returns
        -------
        self

        Raises
        ------
        DDSSPError
            For X without columns, invalid labels or values.
        PrivacyParameterError
            For invalid privacy parameters or bounds.
        """
        eps, delta, xb, ridge = self._checked_params()
        arr, names = as_matrix(X)
        n, d = arr.shape
        if d == 0:
            raise DDSSPError("X has no columns")
        classes, ypm = binary_labels(y, n)
        noise = resolve_noise(self.noise, self.insecure_seed)
        Xc = clip_rows(arr, xb)
        Delta, sigma = self.mechanism_parameters(eps, delta, xb)
        b = noise.gaussian_float(np.zeros(d), sigma)
        theta = minimize_logistic(Xc, ypm, Delta + ridge, b, max_iter=int(self.max_iter), tol=float(self.tol))
        self.coef_ = theta
        self.intercept_ = 0.0
        self.classes_ = classes
        self.feature_names_in_ = names
        self.n_features_in_ = d
        self.Delta_ = Delta
        self.sigma_ = sigma
        self.privacy_ = PrivacyRecord.for_noise(
            "objective perturbation (Kifer et al. 2012, Gaussian; b from OpenDP's sampler)",
            noise,
            eps=eps,
            delta=delta,
            details={"x_bound": xb},
        )
        return self


__all__ = ["ObjectivePerturbation", "binary_labels", "minimize_logistic"]
