"""PDP-OP: ridge regression with personalized differential privacy by output perturbation, and baselines.

Reference: "Personalized Differential Privacy for Ridge Regression" (PDP-OP), Algorithm 1, Thms 3.2/3.4.
Usage: docs/reference/estimators.md. The mechanism's parts, as plain functions, are in
:mod:`ddssp.estimators.pdp_op_math` and the experiments' privacy profiles in
:mod:`ddssp.estimators.pdp_op_profiles`; both are re-exported here (``__all__``).

Setting. Row i carries its own privacy level eps_i > 0 (a *public* privacy specification, as in the
paper). Neighbouring datasets differ in the value of one row i (replacement; the row's eps_i stays);
PDP-OP is eps_i-DP with respect to row i, pure DP (delta = 0).

Algorithm (PDP-OP):
1. weights ``w_i = eps_i / S`` with ``S = sum_j eps_j`` (they sum to 1);
2. weighted ridge in closed form ``theta_bar = (sum_i w_i x_i x_i^T + lam I)^{-1} sum_i w_i x_i y_i``;
3. noise ``Z`` with density proportional to ``exp(-eta ||z||_2)``: radius ``Gamma(shape=d, scale=1/eta)``
   times a uniform direction; output ``theta_bar + Z``.

Sensitivity (re-derived for general declared bounds; the paper's case is R = sqrt(d), Y = 1). With
``||x_i|| <= R`` and ``|y_i| <= Y``, any bound ``Bt >= ||theta_bar||`` gives the per-row sensitivity

    Delta_i = ||theta_bar(D) - theta_bar(D')|| <= w_i * C,   C = 2 R (Y + R Bt) / lam,

(gradient difference 2 w_i |y - theta.x| ||x|| twice, over strong convexity 2 lam). Always valid:
``Bt = Y min(1/sqrt(lam), R/lam)`` (paper Lemmas A.1/A.2, Thm 3.2). With a declared public bound
``theta_bound >= ||theta_bar_0||`` on the *unregularised* weighted fit for every admissible dataset
(paper Assumption 3.3, Thm 3.4), ``||theta_bar|| <= theta_bound`` too, and we use the smaller of the two
bounds. Then ``eta = S / C`` gives row i the loss ``eta * Delta_i = eps_i`` exactly.

Noise (see :mod:`ddssp.dp.noise`). Every random draw of the mechanisms comes from a
:class:`~ddssp.dp.noise.NoiseSource`, by default :class:`~ddssp.dp.noise.SecureNoise` (no seed reaches
it): the L2-Laplace vector from OpenDP's exact float Laplace and Gaussian samplers (radius = sum of d
exponentials, direction = normalised Gaussian vector; OpenDP has no multivariate L2-Laplace, so the
assembly and the final ``theta_bar + Z`` are float arithmetic: the seed attack is closed, the
distribution is exact up to float rounding, but the output is NOT floating-point safe in OpenDP's
sense), and the Jorgensen coin flips (which *are* that mechanism) from exact Bernoulli draws on the
OS's CSPRNG. ``insecure_seed=N`` / ``noise=InsecureSeededNoise(N)`` make them reproducible for tests,
NOT PRIVATE (``privacy_.stamp``). No OpenDP privacy map exists for these mechanisms; the charge is
the theorem above (tests check eta * Delta_i = eps_i).

Features: ``x_bound="unit-cube"`` declares x in [0, 1]^d (so R = sqrt(d)); a number R declares
``||x||_2 <= R``. Labels: ``|y| <= y_bound``. Values outside the declared bounds are clipped (with a
:class:`BoundsClipWarning` saying how many) when ``clip=True`` and refused (:class:`DataError`) when
``clip=False``. Clipping is per row, so it never costs privacy. The bounds are never computed from the data.

Intercept: the paper's model has none (``fit_intercept=False``, the default). ``fit_intercept=True``
appends a constant-1 column (as the paper's Medical Cost experiment does); it counts as a feature in
the bounds (unit cube: R = sqrt(d + 1); R-ball: R -> sqrt(R^2 + 1)) and is penalised like the others.

Per-row eps: either ``fit(X, y, eps=array)`` (one positive value per row, or one scalar for all rows),
or the constructor's ``eps``: a column name of a DataFrame X (the column is taken out of the features,
and ignored by ``predict``), or a scalar for all rows. Exactly one source must be given.

Bad input (always refused, never silently "fixed"): lam <= 0 (there is no noise-free lam = 0 fallback),
any eps_i <= 0, NaN or infinite, an eps vector whose length differs from the number of rows, an empty X.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ddssp.dp import PrivacyRecord, check_bound
from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.errors import DataError, PrivacyParameterError
from ddssp.estimators.base import DPRegressor, as_matrix, as_vector
from ddssp.estimators.pdp_op_math import (
    jorgensen_probabilities,
    pdp_weights,
    sample_l2_laplace,
    sensitivity_constant,
    theta_norm_bound,
    weighted_ridge,
)
from ddssp.estimators.pdp_op_profiles import (
    DEFAULT_FRACTIONS,
    DEFAULT_LEVELS,
    JORGENSEN_FRACTIONS,
    PROFILES,
    privacy_profile,
)

__all__ = [
    "PDPOutputPerturbation",
    "NonPersonalizedOutputPerturbation",
    "JorgensenSampleMechanism",
    "BoundsClipWarning",
    "privacy_profile",
    "DEFAULT_FRACTIONS",
    "JORGENSEN_FRACTIONS",
    "DEFAULT_LEVELS",
    "PROFILES",
    "theta_norm_bound",
    "sensitivity_constant",
    "pdp_weights",
    "weighted_ridge",
    "sample_l2_laplace",
    "jorgensen_probabilities",
]


class BoundsClipWarning(UserWarning):
    """Some feature or label values were outside the declared bounds and were clipped."""


# --------------------------------------------------------------------------- input checks
def _check_lam(lam: Any) -> float:
    try:
        v = float(lam)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"lam must be a positive number, got {lam!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise PrivacyParameterError(
            f"lam must be a positive finite number, got {lam!r}: PDP-OP's sensitivity scales as 1/lam, "
            "so lam > 0 is required (there is no noise-free lam = 0 fallback)"
        )
    return v


def _check_eps_vector(eps: Any, n: int) -> np.ndarray:
    try:
        arr = np.asarray(eps, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise PrivacyParameterError("per-row eps must be numbers") from None
    if arr.size == 1 and n != 1:
        arr = np.full(n, arr[0])
    if arr.shape[0] != n:
        raise DataError(f"got {arr.shape[0]} per-row eps values for {n} rows; give exactly one per row")
    bad = np.flatnonzero(~(np.isfinite(arr) & (arr > 0)))
    if bad.size:
        i = int(bad[0])
        raise PrivacyParameterError(
            f"every per-row eps must be a positive finite number; {bad.size} are not (first: row {i}, eps = {arr[i]!r})"
        )
    return arr


# --------------------------------------------------------------------------- estimators
class PDPOutputPerturbation(DPRegressor):
    """PDP-OP: ridge regression that gives row i eps_i-DP (pure, replacement neighbours).

    Parameters
    ----------
    lam : float > 0
        Ridge penalty (objective ``sum_i w_i (y_i - theta.x_i)^2 + lam ||theta||^2``, weights sum to 1).
    eps : str, float or None
        Where the per-row privacy levels come from if not passed to ``fit``: a column name of the
        DataFrame X (removed from the features), or one number for every row.
    x_bound : "unit-cube" or float R
        Declared feature bound: x in [0, 1]^d, or ||x||_2 <= R.
    y_bound : float
        Declared label bound |y| <= y_bound (the paper: 1).
    theta_bound : float or None
        Declared public bound on the unregularised weighted least-squares solution ||theta_bar_0||
        for every admissible dataset (Thm 3.4). None: Thm 3.2 only.
    clip : bool
        Clip values outside the declared bounds with a :class:`BoundsClipWarning` (True) or refuse (False).
    fit_intercept : bool
        Append a constant-1 feature (counted in the bounds, penalised); its coefficient is ``intercept_``.
    noise : NoiseSource or None
        The DP noise source (default :class:`~ddssp.dp.noise.SecureNoise`: OpenDP / OS CSPRNG, no seed).
    insecure_seed : int or None
        FOR TESTS ONLY: reproducible noise from ``numpy.random.default_rng(insecure_seed)``, NOT PRIVATE
        (``privacy_.stamp`` says so). Give at most one of ``noise`` and ``insecure_seed``.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
        The released coefficients (the noise-free theta_bar is never stored).
    intercept_ : float
        The constant column's coefficient with ``fit_intercept=True``, else 0.0.
    feature_names_in_ : list of str or None
        Column names of a DataFrame X (without the eps column).
    weights_ : ndarray of shape (n,)
        w_i (public: a function of the eps_i only).
    noise_rate_ : float
        eta.
    sensitivity_ : ndarray of shape (n,)
        Per-row sensitivity bound w_i C.
    privacy_ : PrivacyRecord
        Pure DP (delta = 0) per row; ``eps`` is the largest per-row level, ``details`` holds
        ``personalized_eps`` (one per row), ``min_eps``, ``max_eps``, ``theorem``, ``x_radius``,
        ``noise_rate``, ``y_bound``.
    """

    method_name = "PDP-OP"

    def __init__(
        self,
        lam: float,
        eps: str | float | None = None,
        x_bound: str | float = "unit-cube",
        y_bound: float = 1.0,
        theta_bound: float | None = None,
        clip: bool = True,
        fit_intercept: bool = False,
        noise: NoiseSource | None = None,
        insecure_seed: int | None = None,
    ):
        self.lam = lam
        self.eps = eps
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.theta_bound = theta_bound
        self.clip = clip
        self.fit_intercept = fit_intercept
        self.noise = noise
        self.insecure_seed = insecure_seed

    # ---------------------------------------------------------------- helpers
    def _feature_radius(self, p: int) -> float:
        """R with ||design row|| <= R, for p original features (before the intercept column)."""
        if isinstance(self.x_bound, str):
            if self.x_bound != "unit-cube":
                raise PrivacyParameterError(f"x_bound must be 'unit-cube' or a positive number R, got {self.x_bound!r}")
            return math.sqrt(p + (1 if self.fit_intercept else 0))
        R = check_bound(self.x_bound, "x_bound")
        return math.sqrt(R * R + 1.0) if self.fit_intercept else R

    def _apply_bounds(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Y = check_bound(self.y_bound, "y_bound")
        msgs = []
        if isinstance(self.x_bound, str):
            if self.x_bound != "unit-cube":
                raise PrivacyParameterError(f"x_bound must be 'unit-cube' or a positive number R, got {self.x_bound!r}")
            out = (X < 0) | (X > 1)
            if out.any():
                msgs.append(f"{int(out.sum())} feature value(s) outside the declared unit cube [0, 1]")
                X = np.clip(X, 0.0, 1.0)
        else:
            R = check_bound(self.x_bound, "x_bound")
            norms = np.sqrt(np.einsum("ij,ij->i", X, X))
            out = norms > R * (1 + 1e-12)
            if out.any():
                msgs.append(f"{int(out.sum())} row(s) with ||x||_2 above the declared x_bound = {R:g}")
                scale = np.minimum(1.0, R / np.maximum(norms, np.finfo(float).tiny))
                X = X * scale[:, None]
        outy = np.abs(y) > Y
        if outy.any():
            msgs.append(f"{int(outy.sum())} label(s) outside the declared [-{Y:g}, {Y:g}]")
            y = np.clip(y, -Y, Y)
        if msgs:
            text = "; ".join(msgs)
            if not self.clip:
                raise DataError(
                    f"{text}. Rescale with declared (data-independent) bounds, declare wider bounds, or pass clip=True"
                )
            warnings.warn(f"{text}: clipped to the declared bounds", BoundsClipWarning, stacklevel=3)
        return X, y

    def _prepare(self, X: Any, y: Any, eps: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str] | None]:
        col = self.eps if isinstance(self.eps, str) else None
        if eps is not None and self.eps is not None:
            raise PrivacyParameterError("per-row eps given twice (constructor eps and fit(eps=...)); give exactly one")
        if col is not None:
            if not isinstance(X, pd.DataFrame):
                raise DataError(f"eps={col!r} names a column, so X must be a pandas DataFrame")
            if col not in X.columns:
                raise DataError(f"eps column {col!r} is not in X (columns: {', '.join(map(str, X.columns))})")
            eps_src = X[col].to_numpy()
            X = X.drop(columns=[col])
        elif eps is not None:
            eps_src = eps
        elif self.eps is not None:
            eps_src = self.eps
        else:
            raise PrivacyParameterError(
                "no per-row privacy levels: pass fit(X, y, eps=array) or the constructor's eps (a column name or a number)"
            )
        Xa, names = as_matrix(X)
        n = Xa.shape[0]
        if n == 0 or Xa.shape[1] == 0:
            raise DataError(f"X must have at least one row and one column, got shape {Xa.shape}")
        ya = as_vector(y, n)
        eps_arr = _check_eps_vector(eps_src, n)
        Xa, ya = self._apply_bounds(Xa, ya)
        if self.fit_intercept:
            Xa = np.column_stack([Xa, np.ones(n)])
        return Xa, ya, eps_arr, names

    def _design(self, X: Any) -> np.ndarray:
        if isinstance(self.eps, str) and isinstance(X, pd.DataFrame) and self.eps in X.columns:
            X = X.drop(columns=[self.eps])
        return super()._design(X)

    def _finish(self, theta: np.ndarray, names: list[str] | None) -> None:
        if self.fit_intercept:
            self.coef_ = theta[:-1].copy()
            self.intercept_ = float(theta[-1])
        else:
            self.coef_ = theta.copy()
            self.intercept_ = 0.0
        self.feature_names_in_ = names

    def _effective_eps(self, eps: np.ndarray) -> np.ndarray:
        return eps

    # ---------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any, eps: Any = None) -> PDPOutputPerturbation:
        """Fit PDP-OP: weighted ridge, then L2-Laplace output noise at rate eta = S / C.

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            Rows (n x d); a DataFrame may hold the per-row eps column named by the constructor.
        y : array-like
            Labels, one per row.
        eps : array-like or float, optional
            Per-row privacy levels (n positive numbers, or a scalar); None when the constructor's eps names
            a column or gives a number. Exactly one source must be given.

        Returns
        -------
        self

        Raises
        ------
        DDSSPError
            For an invalid lam, eps or X.
        DataError
            For values outside the declared bounds with ``clip=False``.
        """
        lam = _check_lam(self.lam)
        Xa, ya, requested, names = self._prepare(X, y, eps)
        if self.theta_bound is not None:
            check_bound(self.theta_bound, "theta_bound")
        noise = resolve_noise(self.noise, self.insecure_seed)
        n, p = Xa.shape
        R = self._feature_radius(p - (1 if self.fit_intercept else 0))
        eff = self._effective_eps(requested)
        w = pdp_weights(eff)
        theta_bar = weighted_ridge(Xa, ya, w, lam)
        C = sensitivity_constant(lam, R, float(self.y_bound), self.theta_bound)
        S = float(eff.sum())
        eta = S / C
        theta = theta_bar + sample_l2_laplace(p, eta, noise)
        self._finish(theta, names)
        self.weights_ = w
        self.noise_rate_ = eta
        self.sensitivity_ = w * C
        self.privacy_ = PrivacyRecord.for_noise(
            f"{self.method_name}: weighted ridge + L2-Laplace output perturbation",
            noise,
            eps=float(eff.max()),
            delta=0.0,
            details=self._privacy_details(eff, requested, eta, R),
        )
        return self

    def _privacy_details(self, eff: np.ndarray, requested: np.ndarray, eta: float, R: float) -> dict[str, Any]:
        """The record's details; its eps is the largest per-row level (the least protected row)."""
        thm34 = self.theta_bound is not None and float(self.theta_bound) < theta_norm_bound(
            _check_lam(self.lam), R, float(self.y_bound)
        )
        return {
            "personalized_eps": eff.copy(),
            "min_eps": float(eff.min()),
            "max_eps": float(eff.max()),
            "pure_dp": True,
            "neighbours": "replace one row (its eps_i is public and stays)",
            "noise_rate": float(eta),
            "theorem": "3.4" if thm34 else "3.2",
            "x_radius": float(R),
            "y_bound": float(self.y_bound),
        }


class NonPersonalizedOutputPerturbation(PDPOutputPerturbation):
    """The non-personalized baseline: everyone gets ``eps* = min_i eps_i`` (w_i = 1/n,
    eta = lam n eps* / (2 sqrt(d) (1 + sqrt(d) B)) in the paper's setting; Chaudhuri et al. output
    perturbation). Same parameters as :class:`PDPOutputPerturbation`; ``privacy_.eps`` is eps* and
    ``privacy_.details["requested_eps"]`` keeps the per-row levels asked for."""

    method_name = "NonPers"

    def _effective_eps(self, eps: np.ndarray) -> np.ndarray:
        return np.full_like(eps, eps.min())

    def _privacy_details(self, eff, requested, eta, R):
        out = super()._privacy_details(eff, requested, eta, R)
        out["requested_eps"] = requested.copy()
        return out


class JorgensenSampleMechanism(PDPOutputPerturbation):
    """Jorgensen et al. (2015) sample mechanism around non-personalized output perturbation.

    Threshold ``t``: ``"max"`` (max_i eps_i, "J-max"), ``"mean"`` (mean eps_i, "J-mean") or a positive
    number. Row i is kept with probability ``p_i = (exp(eps_i) - 1)/(exp(t) - 1)`` if eps_i < t, else 1;
    the t-DP non-personalized output perturbation runs on the N_s kept rows (w = 1/N_s,
    eta = t N_s / C). ``sampled_`` is the boolean mask of kept rows, ``n_sampled_`` = N_s.

    N_s = 0: the ridge problem on no rows has the data-independent minimiser 0, and since nothing
    depends on the data no noise is needed; the output is ``coef_ = 0`` (and ``intercept_ = 0``), with a
    RuntimeWarning. This branch is identical for neighbouring datasets, so it costs no privacy.

    Privacy, stated carefully: ``privacy_.details["personalized_eps"]`` is the *nominal* level of Jorgensen et al.
    (``log(1 + p_i (e^t - 1)) = min(eps_i, t)``), as used in the PDP-OP paper's comparison. Their proof
    needs the inner mechanism to be t-DP for add/remove neighbours; this inner mechanism (as in the
    paper) is calibrated for replacement with N_s fixed, and its noise rate depends on N_s. What holds
    without further analysis is t-DP for every row under replacement (``privacy_.eps``, also
    ``privacy_.details["guaranteed_eps"]``).
    Use it as the paper's baseline, not as a personalized-DP mechanism for eps_i < t.

    Parameters
    ----------
    threshold : "max", "mean" or float
        The threshold t.
    lam, eps, x_bound, y_bound, theta_bound, clip, fit_intercept, noise, insecure_seed
        As in :class:`PDPOutputPerturbation`.

    Attributes
    ----------
    coef_, intercept_, feature_names_in_, noise_rate_
        As in :class:`PDPOutputPerturbation`.
    sampled_ : ndarray of bool
        The rows kept by the sampling.
    n_sampled_ : int
        N_s.
    threshold_ : float
        t.
    privacy_ : PrivacyRecord
        eps = t (what holds for every row), delta = 0; ``details`` holds ``personalized_eps``
        (nominal), ``guaranteed_eps``, ``threshold``, ``sampling_probabilities``, ``n_sampled``,
        ``noise_rate``.
    """

    method_name = "Jorgensen sample mechanism"

    def __init__(
        self,
        lam: float,
        eps: str | float | None = None,
        threshold: str | float = "max",
        x_bound: str | float = "unit-cube",
        y_bound: float = 1.0,
        theta_bound: float | None = None,
        clip: bool = True,
        fit_intercept: bool = False,
        noise: NoiseSource | None = None,
        insecure_seed: int | None = None,
    ):
        super().__init__(lam, eps, x_bound, y_bound, theta_bound, clip, fit_intercept, noise, insecure_seed)
        self.threshold = threshold

    def _threshold(self, eps: np.ndarray) -> float:
        t = self.threshold
        if isinstance(t, str):
            if t == "max":
                return float(eps.max())
            if t == "mean":
                return float(eps.mean())
            raise PrivacyParameterError(f"threshold must be 'max', 'mean' or a positive number, got {t!r}")
        return check_bound(t, "threshold")

    def fit(self, X: Any, y: Any, eps: Any = None) -> JorgensenSampleMechanism:
        """Fit the Jorgensen sample mechanism: sample rows by their eps, then non-personalized output perturbation.

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            Rows (n x d), as for :meth:`PDPOutputPerturbation.fit`.
        y : array-like
            Labels, one per row.
        eps : array-like or float, optional
            Per-row privacy levels, as for :meth:`PDPOutputPerturbation.fit`.

        Returns
        -------
        self

        Warns
        -----
        RuntimeWarning
            When no row is sampled (the output is then theta = 0).
        """
        lam = _check_lam(self.lam)
        Xa, ya, requested, names = self._prepare(X, y, eps)
        if self.theta_bound is not None:
            check_bound(self.theta_bound, "theta_bound")
        noise = resolve_noise(self.noise, self.insecure_seed)
        n, p = Xa.shape
        R = self._feature_radius(p - (1 if self.fit_intercept else 0))
        t = self._threshold(requested)
        probs = jorgensen_probabilities(requested, t)
        keep = noise.bernoulli(probs)  # the sampling IS the mechanism: exact coins from the OS's CSPRNG
        ns = int(keep.sum())
        C = sensitivity_constant(lam, R, float(self.y_bound), self.theta_bound)
        if ns == 0:
            warnings.warn(
                "Jorgensen sample mechanism: no row was sampled (N_s = 0); the output is the "
                "data-independent ridge solution theta = 0",
                RuntimeWarning,
                stacklevel=2,
            )
            theta = np.zeros(p)
            eta = math.inf
        else:
            w = keep / ns
            theta_bar = weighted_ridge(Xa, ya, w, lam)
            eta = t * ns / C
            theta = theta_bar + sample_l2_laplace(p, eta, noise)
        self._finish(theta, names)
        self.sampled_ = keep
        self.n_sampled_ = ns
        self.threshold_ = t
        self.noise_rate_ = eta
        nominal = np.minimum(requested, t)
        self.privacy_ = PrivacyRecord.for_noise(
            f"{self.method_name} (threshold {t:g}) + output perturbation",
            noise,
            eps=float(t),
            delta=0.0,
            details={
                "personalized_eps": nominal,
                "min_eps": float(nominal.min()),
                "max_eps": float(nominal.max()),
                "guaranteed_eps": float(t),
                "pure_dp": True,
                "threshold": float(t),
                "sampling_probabilities": probs,
                "n_sampled": ns,
                "noise_rate": float(eta),
                "neighbours": "replace one row (its eps_i is public and stays)",
                "note": "personalized_eps is Jorgensen et al.'s nominal level; guaranteed_eps (= t, the "
                "record's eps) is what holds for every row under replacement without the add/remove analysis",
            },
        )
        return self
