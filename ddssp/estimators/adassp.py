"""AdaSSP: adaptive sufficient statistic perturbation for linear regression (Wang 2018).

The algorithm as given in the DD-SSP paper (Appendix B, Algorithm 2); its use: docs/reference/estimators.md.
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

Noise. Every Gaussian draw is OpenDP's floating-point-safe float Gaussian mechanism run on the
statistic itself (``noise.gaussian_float(value, sigma)``, see :mod:`ddssp.dp.noise`): lmin(X^T X), the
upper triangle of X^T X (with the diagonal) and X^T y. No seed reaches it; ``insecure_seed=N`` (or
``noise=InsecureSeededNoise(N)``) makes it reproducible for tests, and NOT PRIVATE.

Privacy accounting (checked against OpenDP). The paper states (eps/3, delta/3) per part. With the
paper's scale sigma = sqrt(log(6/delta)) Delta / (eps/3), the exact (analytic) Gaussian mechanism does
*not* give (eps/3, delta/3) per part for eps >~ 1 (e.g. eps = 1, delta = 1e-5: delta_part = 3.5e-6 >
delta/3). What holds is the guarantee of the whole fit through zCDP: the three parts (sensitivities B^2
for lmin and for the upper triangle of X^T X, B Y for X^T y, add/remove-one-row neighbours) are each
rho_k-zCDP by OpenDP's map, and sum(rho_k) converts to (eps', delta) with eps' <= eps for the eps and
delta of practice (eps' = 0.62 at eps = 1, delta = 1e-5; 8.1 at eps = 10). Where it would not
(eps >~ 23 at delta = 1e-5, ~18 at 1e-3, ~34 at 1e-9), all three sigmas are multiplied by the
smallest factor ``noise_factor_`` >= 1 that makes eps' <= eps; otherwise the noise is exactly the
paper's. The noisy eigenvalue's shift and the ridge
are written in terms of the sigmas (shift sqrt(log(6/delta)) sigma_lmin, ridge
sqrt(d log(2 d^2 / rho_fail)) sigma_xtx - lmin~), which is the paper's formula when the factor is 1.
``privacy_`` (a :class:`~ddssp.dp.PrivacyRecord`) holds the budget (eps, delta), rho (from OpenDP's
maps, one entry per part) and, in ``details["eps_from_opendp"]``, the eps' it converts to.

Intercept: AdaSSP fits ``theta`` on the columns it is given, with no separate intercept
(``intercept_`` is 0). To fit an intercept, include a constant column in X (e.g. the encoding's
intercept column) and count it in ``x_bound`` (a column of ones adds 1 to ||x||^2).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from ddssp.dp import check_bound, check_delta, check_eps, clip_rows
from ddssp.dp.accounting import PrivacyRecord
from ddssp.dp.entries import LedgerEntry
from ddssp.dp.measurements import gaussian_float_measurement, opendp, opendp_charge
from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.dp.zcdp import bisect_bracket
from ddssp.errors import DDSSPError, PrivacyParameterError
from ddssp.estimators.base import DPRegressor, as_matrix, as_vector


@lru_cache(maxsize=4096)
def zcdp_to_eps(rho: float, delta: float) -> float:
    """eps of (eps, delta)-DP implied by rho-zCDP, by OpenDP's conversion (``make_zCDP_to_approxDP``).

    OpenDP's conversion overflows for very large rho; from rho > 1000 on (and on any OpenDP error) the
    looser, always valid bound eps = rho + 2 sqrt(rho log(1/delta)) of Bun and Steinke (2016) is
    returned instead.

    Parameters
    ----------
    rho : float
        The zCDP parameter.
    delta : float
        The target delta.

    Returns
    -------
    float
    """
    dp = opendp()
    if rho > 1000.0:
        return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    try:
        meas = dp.m.make_gaussian(
            dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1.0 / math.sqrt(2.0 * rho)
        )
        return float(dp.c.make_zCDP_to_approxDP(meas).map(1.0).epsilon(float(delta)))
    except dp.OpenDPException:
        return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


@lru_cache(maxsize=256)
def calibration_factor(eps: float, delta: float) -> float:
    """Smallest c >= 1 such that the paper's three sigmas times c are (eps, delta)-DP together.

    Checked by OpenDP's zCDP map and conversion; 1.0 whenever the paper's calibration already is.

    Parameters
    ----------
    eps, delta : float
        The fit's budget.

    Returns
    -------
    float
    """
    rho_paper = eps**2 / (6.0 * math.log(6.0 / delta))  # 3 parts, each (Delta/sigma)^2 / 2
    if zcdp_to_eps(rho_paper * (1 + 1e-6), delta) <= eps:
        return 1.0
    # zcdp_to_eps(rho_paper) > eps here; the largest rho with eps' <= eps
    lo, _ = bisect_bracket(lambda r: zcdp_to_eps(r, delta) <= eps, 0.0, rho_paper, iters=80)
    rho_ok = lo * (1 - 1e-6)  # margin for the float grid's rounding term in OpenDP's map
    return math.sqrt(rho_paper / rho_ok)


class AdaSSP(DPRegressor):
    """(eps, delta)-DP linear regression by adaptive sufficient statistic perturbation.

    Parameters
    ----------
    eps, delta : float
        The privacy budget of the whole fit (split in thirds internally).
    x_bound : float
        Declared bound B on the Euclidean norm of a row of X (rows beyond it are clipped).
    y_bound : float
        Declared bound Y on |y| (values beyond it are clipped).
    rho_fail : float
        Failure probability of the eigenvalue bound used to set the ridge (0.05 in the paper).
    noise : NoiseSource or None
        The DP noise source (default :class:`~ddssp.dp.noise.SecureNoise`: OpenDP, no seed).
    insecure_seed : int or None
        FOR TESTS ONLY: reproducible noise from ``numpy.random.default_rng(insecure_seed)``, NOT
        PRIVATE (``privacy_.stamp`` says so). Give at most one of ``noise`` and ``insecure_seed``.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
        The released coefficients.
    intercept_ : float
        Always 0.0 (include a constant column to fit an intercept).
    feature_names_in_ : list of str or None
        Column names of a DataFrame X.
    privacy_ : PrivacyRecord
        eps, delta, rho (OpenDP's maps), one ledger entry per noisy part; ``details`` holds
        ``eps_from_opendp``, ``noise_factor``, ``x_bound``, ``y_bound``.
    xtx_, xty_ : ndarray
        The released noisy X^T X and X^T y.
    lambda_min_, lambda_ : float
        The noisy minimum eigenvalue (shifted) and the ridge used.
    sigma_xtx_, sigma_xty_, sigma_lambda_ : float
        The noise scales.
    noise_factor_ : float
        >= 1, see the module docstring.
    """

    def __init__(
        self,
        eps: float,
        delta: float,
        x_bound: float,
        y_bound: float,
        rho_fail: float = 0.05,
        noise: NoiseSource | None = None,
        insecure_seed: int | None = None,
    ) -> None:
        self.eps = eps
        self.delta = delta
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.rho_fail = rho_fail
        self.noise = noise
        self.insecure_seed = insecure_seed
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
        """Standard deviations of the three Gaussian noises: the paper's, times :func:`calibration_factor`.

        Parameters
        ----------
        eps, delta : float
            The fit's budget.
        x_bound : float
            The declared bound B on a row's norm.
        y_bound : float
            The declared bound Y on abs(y).

        Returns
        -------
        dict
            ``lambda_min`` (of lmin~), ``xtx`` (of each entry of X^T X^), ``xty`` (of each entry of X^T y^)
            and ``factor`` (the calibration factor: 1 unless eps is very large).
        """
        e3 = eps / 3.0
        log_term = math.log(6.0 / delta)
        c = calibration_factor(float(eps), float(delta))
        return {
            "lambda_min": c * math.sqrt(log_term) / e3 * x_bound**2,
            "xtx": c * math.sqrt(log_term) * x_bound**2 / e3,
            "xty": c * math.sqrt(log_term) * x_bound * y_bound / e3,
            "factor": c,
        }

    @staticmethod
    def opendp_charges(d: int, scales: dict[str, float], x_bound: float, y_bound: float) -> tuple[LedgerEntry, ...]:
        """The three parts as ledger entries, each charged by OpenDP's map of the measurement the fit runs.

        The measurements are float Gaussians on vectors of length 1, d(d+1)/2 and d, with sensitivities
        B^2, B^2 and B Y.

        Parameters
        ----------
        d : int
            The number of columns of X.
        scales : dict
            The noise scales (:meth:`noise_scales`).
        x_bound, y_bound : float
            The declared bounds B and Y.

        Returns
        -------
        tuple of LedgerEntry
        """
        parts = (
            ("lambda_min", scales["lambda_min"], 1, x_bound**2),
            ("xtx", scales["xtx"], d * (d + 1) // 2, x_bound**2),
            ("xty", scales["xty"], d, x_bound * y_bound),
        )
        out = []
        for name, s, n, sens in parts:
            rho, delta = opendp_charge(gaussian_float_measurement(s, n), float(sens))
            out.append(
                LedgerEntry(
                    "gaussian-float",
                    rho,
                    sigma=s,
                    note=name,
                    delta=delta,
                    params={"sensitivity": float(sens), "size": n},
                )
            )
        return tuple(out)

    @staticmethod
    def opendp_rho(d: int, scales: dict[str, float], x_bound: float, y_bound: float) -> float:
        """Total zCDP rho of the three parts by OpenDP's maps (:meth:`opendp_charges`).

        Parameters
        ----------
        d : int
            The number of columns of X.
        scales : dict
            The noise scales (:meth:`noise_scales`).
        x_bound, y_bound : float
            The declared bounds B and Y.

        Returns
        -------
        float
        """
        return sum(e.rho for e in AdaSSP.opendp_charges(d, scales, x_bound, y_bound))

    def fit(self, X: Any, y: Any) -> AdaSSP:
        """Fit by AdaSSP: rows clipped to the declared bounds, then the three noisy statistics and the ridge solve.

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            Features, one row per record (an array or a DataFrame, whose column names become ``feature_names_in_``).
        y : array-like
            The target, one value per row (clipped to [-y_bound, y_bound]).

        Returns
        -------
        self

        Raises
        ------
        DDSSPError
            For X without columns, non-finite values or mismatched lengths.
        PrivacyParameterError
            For invalid privacy parameters or bounds.
        """
        eps, delta, xb, yb, rho_fail = self._checked_params()
        arr, names = as_matrix(X)
        yv = as_vector(y, arr.shape[0])
        n, d = arr.shape
        if d == 0:
            raise DDSSPError("X has no columns")
        noise = resolve_noise(self.noise, self.insecure_seed)

        Xc = clip_rows(arr, xb)
        yc = np.clip(yv, -yb, yb)
        xtx = Xc.T @ Xc
        xty = Xc.T @ yc

        log_term = math.log(6.0 / delta)
        s = self.noise_scales(eps, delta, xb, yb)

        # 1. noisy minimum eigenvalue (sensitivity B^2), shifted down by sqrt(log(6/delta)) sigma
        lmin = float(np.linalg.eigvalsh(xtx)[0]) if d > 0 else 0.0
        lmin_noisy = float(noise.gaussian_float(np.array([lmin]), s["lambda_min"])[0])
        lmin_t = max(lmin_noisy - math.sqrt(log_term) * s["lambda_min"], 0.0)
        # 2. ridge from the noisy eigenvalue (post-processing)
        lam = max(0.0, math.sqrt(d * math.log(2.0 * d**2 / rho_fail)) * s["xtx"] - lmin_t)
        # 3. noisy Gram matrix: the upper triangle (with diagonal) gets iid noise, then mirrored
        iu = np.triu_indices(d)
        xtx_hat = np.zeros((d, d))
        xtx_hat[iu] = noise.gaussian_float(xtx[iu], s["xtx"])
        xtx_hat = xtx_hat + np.triu(xtx_hat, 1).T
        # 4. noisy moments
        xty_hat = noise.gaussian_float(xty, s["xty"])
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
        self.noise_factor_ = s["factor"]
        entries = self.opendp_charges(d, s, xb, yb)
        rho = sum(e.rho for e in entries)
        self.privacy_ = PrivacyRecord.for_noise(
            "AdaSSP (OpenDP float Gaussian on lambda_min, X^T X, X^T y; zCDP composition)",
            noise,
            eps=eps,
            delta=delta,
            rho=rho,
            entries=entries,
            details={
                "eps_from_opendp": zcdp_to_eps(rho, delta),
                "noise_factor": s["factor"],
                "x_bound": xb,
                "y_bound": yb,
            },
        )
        return self
