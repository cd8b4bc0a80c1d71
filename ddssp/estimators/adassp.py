"""AdaSSP: adaptive sufficient statistic perturbation for linear regression (Wang 2018).

The algorithm as given in the DD-SSP paper (Appendix B, Algorithm 2) and ddssp-method.md section 7.
The budget (eps, delta) is split in thirds, one third each for

1. a noisy minimum eigenvalue   lmin~ = max(lmin(X^T X) + sqrt(log(6/delta))/(eps/3) * B^2 * Z
                                                 - log(6/delta)/(eps/3) * B^2, 0),   Z ~ N(0, 1)
2. the noisy Gram matrix        X^T X^ = X^T X + sqrt(log(6/delta)) * B^2 / (eps/3) * Zsym
                                (Zsym symmetric, its upper triangle incl. the diagonal iid N(0, 1))
3. the noisy moment vector      X^T y^ = X^T y + sqrt(log(6/delta)) * B * Y / (eps/3) * z,  z ~ N(0, I_d)

and the ridge  lambda = max(0, sqrt(d log(6/delta) log(2 d^2 / rho_fail)) * B^2 / (eps/3) - lmin~)
(post-processing of lmin~), giving  theta = (X^T X^ + lambda I)^{-1} X^T y^.

B = ``x_bound`` bounds the Euclidean norm of a row of X, Y = ``y_bound`` bounds |y|. Both are
*declared* by the caller (for an encoded table, ``Encoding.row_norm_bound()`` and the declared target
range; paper Prop 3.1) and never computed from the data: rows of X whose norm exceeds B are scaled
down to norm B, and y is clipped to [-Y, Y], before any statistic is computed, so the sensitivities
B^2 (of X^T X, Frobenius) and B * Y (of X^T y) hold for every input.

Intercept: AdaSSP fits ``theta`` on the columns it is given, with no separate intercept
(``intercept_`` is 0). To fit an intercept, include a constant column in X (e.g. the encoding's
intercept column) and count it in ``x_bound`` (a column of ones adds 1 to ||x||^2).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.errors import DDSSPError, PrivacyParameterError
from ddssp.estimators.base import DPRegressor, as_matrix, as_vector
from ddssp.dp import check_bound, check_delta, check_eps, clip_rows, make_rng


class AdaSSP(DPRegressor):
    """(eps, delta)-DP linear regression by adaptive sufficient statistic perturbation.

    Parameters
    ----------
    eps, delta : the privacy budget of the whole fit (split in thirds internally).
    x_bound : declared bound B on the Euclidean norm of a row of X (rows beyond it are clipped).
    y_bound : declared bound Y on |y| (values beyond it are clipped).
    rho_fail : failure probability of the eigenvalue bound used to set the ridge (0.05 in the paper).
    seed : int, numpy Generator, or None (fresh OS entropy).

    Fitted attributes: ``coef_``, ``intercept_`` (0.0), ``feature_names_in_``, ``privacy_``, and the
    released (noisy, hence public) quantities ``xtx_`` (X^T X^), ``xty_`` (X^T y^), ``lambda_min_``
    (lmin~), ``lambda_`` (the ridge used), and the noise scales ``sigma_xtx_``, ``sigma_xty_``,
    ``sigma_lambda_``.
    """

    def __init__(
        self,
        eps: float,
        delta: float,
        x_bound: float,
        y_bound: float,
        rho_fail: float = 0.05,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        self.eps = eps
        self.delta = delta
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.rho_fail = rho_fail
        self.seed = seed
        self._checked_params()

    def _checked_params(self) -> tuple[float, float, float, float, float]:
        eps = check_eps(self.eps)
        delta = check_delta(self.delta)
        xb = check_bound(self.x_bound, "x_bound")
        yb = check_bound(self.y_bound, "y_bound")
        try:
            rho = float(self.rho_fail)
        except (TypeError, ValueError):
            rho = float("nan")
        if not (0.0 < rho < 1.0):
            raise PrivacyParameterError(f"rho_fail must lie strictly between 0 and 1, got {self.rho_fail!r}")
        return eps, delta, xb, yb, rho

    @staticmethod
    def noise_scales(eps: float, delta: float, x_bound: float, y_bound: float) -> dict[str, float]:
        """Standard deviations of the three Gaussian noises (lmin~, entries of X^T X^, of X^T y^)."""
        e3 = eps / 3.0
        log_term = math.log(6.0 / delta)
        return {
            "lambda_min": math.sqrt(log_term) / e3 * x_bound**2,
            "xtx": math.sqrt(log_term) * x_bound**2 / e3,
            "xty": math.sqrt(log_term) * x_bound * y_bound / e3,
        }

    def fit(self, X: Any, y: Any) -> "AdaSSP":
        eps, delta, xb, yb, rho_fail = self._checked_params()
        arr, names = as_matrix(X)
        yv = as_vector(y, arr.shape[0])
        n, d = arr.shape
        if d == 0:
            raise DDSSPError("X has no columns")
        rng = make_rng(self.seed)

        Xc = clip_rows(arr, xb)
        yc = np.clip(yv, -yb, yb)
        xtx = Xc.T @ Xc
        xty = Xc.T @ yc

        e3 = eps / 3.0
        log_term = math.log(6.0 / delta)
        s = self.noise_scales(eps, delta, xb, yb)

        # 1. noisy minimum eigenvalue (eps/3, delta/3)
        lmin = float(np.linalg.eigvalsh(xtx)[0]) if d > 0 else 0.0
        lmin_t = max(lmin + s["lambda_min"] * rng.standard_normal() - log_term / e3 * xb**2, 0.0)
        # 2. ridge from the noisy eigenvalue (post-processing)
        lam = max(0.0, math.sqrt(d * log_term * math.log(2.0 * d**2 / rho_fail)) * xb**2 / e3 - lmin_t)
        # 3. noisy Gram matrix: symmetric noise, upper triangle (with diagonal) iid N(0, 1)
        upper = np.triu(rng.standard_normal((d, d)))
        zsym = upper + np.triu(upper, 1).T
        xtx_hat = xtx + s["xtx"] * zsym
        # 4. noisy moments
        xty_hat = xty + s["xty"] * rng.standard_normal(d)
        # 5. the estimate
        A = xtx_hat + lam * np.eye(d)
        try:
            theta = np.linalg.solve(A, xty_hat)
        except np.linalg.LinAlgError:
            theta = np.linalg.lstsq(A, xty_hat, rcond=None)[0]

        self.coef_ = theta
        self.intercept_ = 0.0
        self.feature_names_in_ = names
        self.n_features_in_ = d
        self.xtx_ = xtx_hat
        self.xty_ = xty_hat
        self.lambda_min_ = lmin_t
        self.lambda_ = lam
        self.sigma_lambda_ = s["lambda_min"]
        self.sigma_xtx_ = s["xtx"]
        self.sigma_xty_ = s["xty"]
        self.privacy_ = {
            "eps": eps,
            "delta": delta,
            "mechanism": "AdaSSP (Gaussian; eps/3, delta/3 each for lambda_min, X^T X, X^T y)",
            "x_bound": xb,
            "y_bound": yb,
        }
        return self
