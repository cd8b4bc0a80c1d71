"""The mathematics of NAPP-ERM (:mod:`ddssp.estimators.napp_erm`), as plain functions: the GLM losses
(linear, logistic, Poisson) with their derivatives and declared bounds (:func:`loss_terms`,
:func:`loss_grad_hess`, :func:`declared_constants`), the DP noise term b (:func:`sample_b`), the
augmented rows that realise it with the curvature M_j (:func:`augmented_rows`, :func:`penalty_weights`,
:func:`curvature`, :func:`dp_shift`), the retrieved budget of Proposition 6 (:func:`retrieved_budget`),
the damped-Newton GLM fit over a ball (:func:`fit_glm`) and the non-private penalised reference fit
(:func:`penalized_fit`). The method, its privacy argument and the corrections to the printed paper are
described in :mod:`ddssp.estimators.napp_erm`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg, optimize, special

from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.errors import DDSSPError, PrivacyParameterError

LOSSES = ("linear", "logistic", "poisson")
#: l''(0) of each loss: the augmented-row variance is V_j = 2 M_j / (n_e l''(0)).
L2_AT_ZERO = {"linear": 1.0, "logistic": 0.25, "poisson": 1.0}
#: smallest response of the linear augmented rows (any non-zero value gives gradient b; see linear_ey).
LINEAR_EY = 1.0
#: derivatives of the loss are capped here in the Newton model (see loss_grad_hess).
DERIV_CAP = 1e100
#: |theta_j| is floored here before it enters a weight |theta_j|^-gamma.
THETA_FLOOR = 1e-10


# --------------------------------------------------------------------------- losses
def loss_terms(loss: str, eta: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-row loss value, first and second derivative in eta.

    Parameters
    ----------
    loss : str
        ``"linear"``, ``"logistic"`` or ``"poisson"``.
    eta : numpy.ndarray
        The linear predictors.
    y : numpy.ndarray
        The responses.

    Returns
    -------
    tuple of numpy.ndarray
        (value, first derivative, second derivative).

    Raises
    ------
    DDSSPError
        For an unknown loss.
    """
    if loss == "linear":
        r = eta - y
        return 0.5 * r * r, r, np.ones_like(eta)
    if loss == "logistic":
        s = special.expit(eta)
        return np.logaddexp(0.0, eta) - y * eta, s - y, s * (1.0 - s)
    if loss == "poisson":
        with np.errstate(over="ignore"):
            m = np.exp(eta)
        return m - y * eta, m - y, m
    raise DDSSPError(f"unknown loss {loss!r}; use one of {', '.join(LOSSES)}")


def loss_value(loss: str, X: np.ndarray, y: np.ndarray, theta: np.ndarray) -> float:
    """The summed loss at theta.

    Parameters
    ----------
    loss : str
        The loss name.
    X : numpy.ndarray
        The rows.
    y : numpy.ndarray
        The responses.
    theta : numpy.ndarray
        The coefficients.

    Returns
    -------
    float
    """
    return float(np.sum(loss_terms(loss, X @ theta, y)[0]))


def loss_grad_hess(
    loss: str,
    X: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    terms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Summed loss, its gradient and Hessian in theta.

    The derivatives (not the value, which the line search uses) are capped so the Newton model stays
    finite far from the data.

    Parameters
    ----------
    loss : str
        The loss name.
    X : numpy.ndarray
        The rows.
    y : numpy.ndarray
        The responses.
    theta : numpy.ndarray
        The coefficients.
    terms : tuple, optional
        :func:`loss_terms` at theta, if already known.

    Returns
    -------
    tuple
        (value, gradient, Hessian).
    """
    v, d1, d2 = loss_terms(loss, X @ theta, y) if terms is None else terms
    # Poisson far from the data (huge DP noise) can reach e^eta ~ 1e300: cap the derivatives (not the
    # value, which the line search uses) so the Newton model stays finite.
    d1 = np.clip(d1, -DERIV_CAP, DERIV_CAP)
    d2 = np.minimum(d2, DERIV_CAP)
    Xw = X * np.sqrt(d2)[:, None]  # X^T diag(d2) X as a Gram matrix (much faster than a general product)
    return float(np.sum(v)), X.T @ d1, Xw.T @ Xw


def declared_constants(
    loss: str, zeta1: float, y_bound: float | None, theta_bound: float | None
) -> tuple[float, float]:
    """(zeta2, zeta3): bounds on abs(dl/deta) and abs(l'') ||x||^2 over admissible rows and coefficients.

    Rows have ||x|| <= zeta1 and abs(y) <= y_bound (Poisson: 0 <= y <= y_bound); coefficients
    ||theta|| <= theta_bound.

    Parameters
    ----------
    loss : str
        The loss name.
    zeta1 : float
        The declared row-norm bound.
    y_bound : float or None
        The declared response bound (not needed for logistic).
    theta_bound : float or None
        The parameter ball's radius (not needed for logistic).

    Returns
    -------
    tuple of float

    Raises
    ------
    PrivacyParameterError
        For a missing bound, or a Poisson bound so large that exp overflows.
    """
    if loss == "logistic":
        return 1.0, zeta1**2 / 4.0
    if theta_bound is None:
        raise PrivacyParameterError(
            f"the {loss} loss has an unbounded gradient unless theta is restricted: declare theta_bound "
            "(radius of the parameter ball; the fit is constrained to it)"
        )
    if y_bound is None:
        raise PrivacyParameterError(f"the {loss} loss needs a declared response bound: pass y_bound")
    B = zeta1 * theta_bound  # |eta| <= B
    if loss == "linear":
        return y_bound + B, zeta1**2
    if B > 700:
        raise PrivacyParameterError("zeta1 * theta_bound is too large for the Poisson loss (exp overflows)")
    return max(math.exp(B), y_bound), zeta1**2 * math.exp(B)


# --------------------------------------------------------------------------- DP noise
def gaussian_b_sigma(eps_b: float, delta: float, zeta1: float, zeta2: float) -> float:
    """sigma of the Gaussian DP term: sigma^2 = 2 (eps_b)^-2 zeta1^2 zeta2^2 (eps_b - log delta).

    Parameters
    ----------
    eps_b : float
        The budget of b.
    delta : float
        The delta.
    zeta1, zeta2 : float
        The declared constants.

    Returns
    -------
    float
    """
    return math.sqrt(2.0 * zeta1**2 * zeta2**2 * (eps_b - math.log(delta))) / eps_b


def sample_b(
    p: int, eps_b: float, zeta1: float, zeta2: float, delta: float | None, noise: NoiseSource, size: int | None = None
) -> np.ndarray:
    """The DP noise b for a budget eps_b (= r eps) on the r1 ratio.

    delta None: spherical Laplace, density ~ exp(-eps_b ||b|| / (zeta1 zeta2)), i.e.
    ``noise.l2_laplace(p, eta=eps_b / (zeta1 zeta2))``: radius ~ Gamma(shape=p, scale=zeta1 zeta2 /
    eps_b) (FIX: the paper's text says shape 1), direction uniform on the sphere. Otherwise
    N(0, sigma^2 I) with :func:`gaussian_b_sigma`: ``noise.gaussian_float(zeros(p), sigma)``.

    Parameters
    ----------
    p : int
        The dimension.
    eps_b : float
        The budget of b.
    zeta1, zeta2 : float
        The declared constants.
    delta : float or None
        None for the pure-DP (Laplace) version.
    noise : NoiseSource
        :class:`~ddssp.dp.noise.SecureNoise` for a private fit; a numpy Generator is refused.
    size : int, optional
        That many independent draws.

    Returns
    -------
    numpy.ndarray
        Shape (p,), or (size, p).
    """
    noise = resolve_noise(noise)
    shape = (p,) if size is None else (int(size), p)
    if delta is None:
        eta = eps_b / (zeta1 * zeta2)
        return noise.l2_laplace(p, eta, size=size)
    return noise.gaussian_float(np.zeros(shape), gaussian_b_sigma(eps_b, delta, zeta1, zeta2))


# --------------------------------------------------------------------------- augmented rows
def linear_ey(b: np.ndarray, n_e: int) -> float:
    """Response c0 of the linear augmented rows: max(1, 10 ||b|| / sqrt(n_e)).

    The linear augmented loss is exactly quadratic, but with e* = -b/(n_e c0) its Hessian carries an
    extra data-independent rank-one term b b^T / (n_e c0^2); this choice keeps that term's norm <= 0.01
    (with c0 = 1 it can be large at small eps and silently damp the DP noise).

    Parameters
    ----------
    b : numpy.ndarray
        The DP noise.
    n_e : int
        The number of augmented rows.

    Returns
    -------
    float
    """
    return max(LINEAR_EY, 10.0 * float(np.linalg.norm(b)) / math.sqrt(n_e))


def dp_shift(loss: str, b_eff: np.ndarray, theta: np.ndarray, n_e: int) -> float:
    """abs(e* . theta): how far the DP part moves the augmented rows' linear predictor.

    The augmented rows realise the DP term b^T theta only through a Taylor expansion in this shift
    (relative error ~ shift / 2 for the Poisson and logistic losses; for larger shifts the augmented
    loss saturates and the perturbation is no longer b^T theta). Linear: exact (see
    :func:`linear_ey`).

    Parameters
    ----------
    loss : str
        The loss name.
    b_eff : numpy.ndarray
        The DP noise in use.
    theta : numpy.ndarray
        The coefficients.
    n_e : int
        The number of augmented rows.

    Returns
    -------
    float
    """
    if loss == "linear":
        return float(abs(b_eff @ theta)) / (n_e * linear_ey(b_eff, n_e))
    return float(abs(b_eff @ theta)) * (2.0 if loss == "logistic" else 1.0) / n_e


def augmented_rows(
    loss: str, M: np.ndarray, b_eff: np.ndarray, n_e: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """n_e augmented rows whose summed loss has gradient b_eff and Hessian 2 diag(M) at theta = 0.

    The gradient is exact; the Hessian holds in expectation, up to O(n_e^-1/2) sampling error and an
    O(1/n_e) b b^T term. The regularisation noise etilde_j ~ N(0, V_j), V_j = 2 M_j / (n_e l''(0)),
    comes in +/- pairs (columns sum to zero); the DP part follows the FIX in the docstring of
    :mod:`ddssp.estimators.napp_erm`.

    Parameters
    ----------
    loss : str
        The loss name.
    M : numpy.ndarray
        The target curvature per coefficient.
    b_eff : numpy.ndarray
        The DP noise in use.
    n_e : int
        The number of augmented rows.
    rng : numpy.random.Generator
        Draws etilde (data-independent, not privacy noise).

    Returns
    -------
    E : numpy.ndarray
        The augmented rows, shape (n_e, p).
    e_y : numpy.ndarray
        Their responses.
    """
    M = np.asarray(M, dtype=float)
    p = M.size
    sd = np.sqrt(2.0 * M / (n_e * L2_AT_ZERO[loss]))
    if loss == "logistic":
        m = n_e // 2  # distinct etilde rows, each used once with y = 0 and once with y = 1
        Z = rng.standard_normal((m // 2, p)) * sd
        parts = [Z, -Z]
        if m % 2:
            parts.append(rng.standard_normal((1, p)) * sd)
        Et = np.vstack(parts)
        d = 2.0 * b_eff / n_e
        E = np.vstack([Et + d, Et - d])
        ey = np.concatenate([np.zeros(m), np.ones(m)])
        return E, ey
    Z = rng.standard_normal((n_e // 2, p)) * sd
    Et = np.vstack([Z, -Z])
    if loss == "linear":
        c0 = linear_ey(b_eff, n_e)
        return Et - b_eff / (n_e * c0), np.full(n_e, c0)
    return Et + b_eff / n_e, np.zeros(n_e)


def penalty_weights(penalty: str, theta_prev: np.ndarray | None, gamma: float, kappa: float) -> np.ndarray | None:
    """w_j with Lambda w_j the target curvature coefficient (R^(t) = sum_j Lambda w_j theta_j^2).

    At t = 1 (theta_prev None): ridge 1, elastic net kappa, bridge/lasso None (only Lambda0 acts).

    Parameters
    ----------
    penalty : str
        ``"ridge"``, ``"bridge"``, ``"lasso"`` or ``"elasticnet"``.
    theta_prev : numpy.ndarray or None
        The previous iterate.
    gamma : float
        The bridge exponent parameter.
    kappa : float
        The elastic-net ridge share.

    Returns
    -------
    numpy.ndarray or None
    """
    if penalty == "ridge":
        return None if theta_prev is None else np.ones_like(theta_prev)
    if theta_prev is None:
        return None
    a = np.maximum(np.abs(theta_prev), THETA_FLOOR)
    if penalty == "elasticnet":
        return 0.5 / a + kappa
    g = 1.0 if penalty == "lasso" else gamma
    return 0.5 * (2.0 - g) * a ** (-g)


def curvature(
    penalty: str, Lambda: float, Lambda0: float, w: np.ndarray | None, p: int, kappa: float, moor: bool
) -> np.ndarray:
    """M_j: with MOOR max(Lambda w_j, Lambda0); without MOOR Lambda w_j + Lambda0 (ridge always max).

    Parameters
    ----------
    penalty : str
        The penalty name.
    Lambda : float
        The penalty strength.
    Lambda0 : float
        The smallest curvature the privacy argument needs.
    w : numpy.ndarray or None
        The penalty weights (:func:`penalty_weights`); the penalty's first-step weights when None.
    p : int
        The dimension.
    kappa : float
        The elastic-net ridge share.
    moor : bool
        Use MOOR.

    Returns
    -------
    numpy.ndarray
    """
    if w is None:
        if penalty == "ridge":
            w = np.ones(p)
        elif penalty == "elasticnet":
            w = np.full(p, kappa)
        else:
            w = np.zeros(p)
    if moor or penalty == "ridge":
        return np.maximum(Lambda * w, Lambda0)
    return Lambda * w + Lambda0


def retrieved_budget(eps: float, r: float, Lambda0: float, M: np.ndarray) -> float:
    """Delta_eps = max(0, (1-r) eps (1 - Lambda0 / min_j M_j)) (FIX of Prop. 6: max, not min).

    Parameters
    ----------
    eps : float
        The planned budget.
    r : float
        The share of eps spent on b.
    Lambda0 : float
        The smallest curvature.
    M : numpy.ndarray
        The curvature per coefficient.

    Returns
    -------
    float
    """
    Mmin = float(np.min(M))
    return max(0.0, (1.0 - r) * eps * (1.0 - Lambda0 / Mmin))


# --------------------------------------------------------------------------- solvers
def ball_step(H: np.ndarray, a: np.ndarray, radius: float) -> np.ndarray:
    """argmin_z 1/2 z^T H z - a^T z subject to ||z|| <= radius (H positive definite).

    Parameters
    ----------
    H : numpy.ndarray
        A positive definite matrix.
    a : numpy.ndarray
        The linear term.
    radius : float
        The ball's radius.

    Returns
    -------
    numpy.ndarray
    """
    D, Q = np.linalg.eigh(H)
    D = np.maximum(D, 1e-300)
    at = Q.T @ a
    z = Q @ (at / D)
    if np.linalg.norm(z) <= radius:
        return z

    def excess(mu: float) -> float:
        return float(np.linalg.norm(at / (D + mu))) - radius

    hi = float(np.linalg.norm(a)) / radius + 1.0
    while excess(hi) > 0:  # pragma: no cover - hi is already large enough
        hi *= 2.0
    mu = optimize.brentq(excess, 0.0, hi, xtol=1e-14, rtol=1e-12)
    z = Q @ (at / (D + mu))
    nz = np.linalg.norm(z)
    return z * (radius / nz) if nz > radius else z


def newton_direction(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """H^-1 g by a Cholesky solve on the diagonally scaled H (least squares when that fails).

    Parameters
    ----------
    H : numpy.ndarray
        The Hessian.
    g : numpy.ndarray
        The gradient.

    Returns
    -------
    numpy.ndarray
    """
    d = 1.0 / np.sqrt(np.maximum(np.diag(H), 1e-300))
    Hs = H * d[:, None] * d[None, :]
    try:
        return d * linalg.cho_solve(linalg.cho_factor(Hs, check_finite=False), d * g, check_finite=False)
    except linalg.LinAlgError:
        return d * np.linalg.lstsq(Hs, d * g, rcond=None)[0]


def fit_glm(
    loss: str,
    X: np.ndarray,
    y: np.ndarray,
    theta0: np.ndarray,
    radius: float | None = None,
    max_newton: int = 100,
    tol: float = 1e-12,
) -> tuple[np.ndarray, float]:
    """Minimise the summed loss over theta (in the ball of ``radius`` if given) by damped Newton.

    With a ball the Newton model is minimised over the ball (exact trust-region subproblem) and the
    step is a line search along the feasible segment.

    Parameters
    ----------
    loss : str
        The loss name.
    X : numpy.ndarray
        The rows.
    y : numpy.ndarray
        The responses.
    theta0 : numpy.ndarray
        The starting point.
    radius : float, optional
        The ball's radius.
    max_newton : int
        At most this many Newton steps.
    tol : float
        The convergence tolerance.

    Returns
    -------
    theta : numpy.ndarray
    value : float
        The loss at theta.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # non-finite trials are rejected
        return _fit_glm(loss, X, y, theta0, radius, max_newton, tol)


def _fit_glm(
    loss: str, X: np.ndarray, y: np.ndarray, theta0: np.ndarray, radius: float | None, max_newton: int, tol: float
) -> tuple[np.ndarray, float]:
    theta = np.array(theta0, dtype=float)
    if radius is not None and np.linalg.norm(theta) > radius:
        theta *= radius / np.linalg.norm(theta)
    f, g, H = loss_grad_hess(loss, X, y, theta)
    for _ in range(max_newton):
        if not (np.all(np.isfinite(H)) and np.all(np.isfinite(g))):
            break  # the Newton model overflowed (only far outside the data's scale): keep the iterate
        if radius is None:
            step = -newton_direction(H, g)
        else:
            step = ball_step(H, H @ theta - g, radius) - theta
        dec = -float(g @ step)
        if not dec > tol * (1.0 + abs(f)):
            break
        t = 1.0
        while True:
            cand = theta + t * step
            terms = loss_terms(loss, X @ cand, y)
            fc = float(np.sum(terms[0]))
            if np.isfinite(fc) and fc <= f - 1e-4 * t * dec:
                break
            t *= 0.5
            if t < 1e-12:
                return theta, f
        theta = cand
        f, g, H = loss_grad_hess(loss, X, y, theta, terms)  # reuses the line search's terms at theta
        if loss == "linear" and radius is None:
            break  # quadratic: one Newton step is exact
    return theta, f


def penalized_fit(
    loss: str,
    X: np.ndarray,
    y: np.ndarray,
    Lambda: float,
    penalty: str = "lasso",
    kappa: float = 0.5,
    max_iter: int = 50000,
    tol: float = 1e-11,
) -> np.ndarray:
    """Non-private reference: argmin sum_i l(theta | x_i, y_i) + Lambda R(theta).

    ridge by Newton; lasso / elastic net by FISTA with backtracking (proximal gradient). Bridge
    (non-convex for gamma > 1) is not supported here.

    Parameters
    ----------
    loss : str
        The loss name.
    X : numpy.ndarray
        The rows.
    y : numpy.ndarray
        The responses.
    Lambda : float
        The penalty strength.
    penalty : str
        ``"ridge"``, ``"lasso"`` or ``"elasticnet"``.
    kappa : float
        The elastic-net ridge share.
    max_iter : int
        At most this many FISTA iterations.
    tol : float
        The convergence tolerance.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For an unsupported penalty.
    """
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    p = X.shape[1]
    if penalty == "ridge":
        Xa = np.vstack([X, math.sqrt(2.0 * Lambda) * np.eye(p)]) if loss == "linear" else X
        if loss == "linear":
            return fit_glm("linear", Xa, np.concatenate([y, np.zeros(p)]), np.zeros(p))[0]
        theta = np.zeros(p)
        for _ in range(200):
            _, g, H = loss_grad_hess(loss, X, y, theta)
            g = g + 2 * Lambda * theta
            step = np.linalg.solve(H + 2 * Lambda * np.eye(p), g)
            theta = theta - step
            if np.linalg.norm(step) < 1e-12 * (1 + np.linalg.norm(theta)):
                break
        return theta
    if penalty not in ("lasso", "elasticnet"):
        raise DDSSPError(f"penalized_fit supports ridge, lasso and elasticnet, not {penalty!r}")
    l1 = Lambda
    l2 = Lambda * kappa if penalty == "elasticnet" else 0.0

    def smooth(th: np.ndarray) -> tuple[float, np.ndarray]:
        v, d1, _ = loss_terms(loss, X @ th, y)
        return float(np.sum(v)) + l2 * float(th @ th), X.T @ d1 + 2 * l2 * th

    def prox(v: np.ndarray, s: float) -> np.ndarray:
        return np.sign(v) * np.maximum(np.abs(v) - s * l1, 0.0)

    L = max(float(np.linalg.norm(X, 2)) ** 2 * (0.25 if loss == "logistic" else 1.0) + 2 * l2, 1e-12)
    theta = np.zeros(p)
    z = theta.copy()
    tk = 1.0
    fz, gz = smooth(z)
    for _ in range(max_iter):
        while True:
            new = prox(z - gz / L, 1.0 / L)
            fn, _ = smooth(new)
            diff = new - z
            if np.isfinite(fn) and fn <= fz + gz @ diff + 0.5 * L * diff @ diff + 1e-12 * abs(fz):
                break
            L *= 2.0
        t_next = 0.5 * (1 + math.sqrt(1 + 4 * tk * tk))
        z = new + ((tk - 1) / t_next) * (new - theta)
        change = np.linalg.norm(new - theta)
        theta, tk = new, t_next
        fz, gz = smooth(z)
        if not np.isfinite(fz):  # restart from the last iterate
            z, tk = theta.copy(), 1.0
            fz, gz = smooth(z)
        if change <= tol * (1.0 + np.linalg.norm(theta)):
            break
    return theta
