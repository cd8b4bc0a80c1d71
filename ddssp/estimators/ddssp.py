"""DD-SSP: linear and (Chebyshev-approximate) logistic regression from released marginals.

Ferrando et al., "Private regression via data-dependent sufficient statistic perturbation";
../shared/notes/ddssp-method.md sections 3-6. The fit reads only marginals of a *marginal source*
(a :class:`ddssp.Release`, or :class:`ddssp.estimators.suffstats.ExactMarginals` for the non-private
reference), builds Z^T Z (:func:`ddssp.estimators.suffstats.sufficient_statistics`) and solves:

- linear:   theta = (X^T X + ridge * I')^{-1} X^T y   (I' = identity without the intercept entry);
- logistic: phi(s) = -log(1 + exp(-s)) is replaced on [-R, R] by its degree-2 Chebyshev interpolant
  b0 + b1 s + b2 s^2 (power-basis coefficients computed with numpy.polynomial; for R = 6:
  -log 2, 0.5, -0.0707575). The approximate log-likelihood n b0 + b1 theta^T X^T y
  + b2 theta^T X^T X theta is maximised by theta = -b1 / (2 b2) (X^T X + ridge * I')^{-1} X^T y.
  (FIX from the method note: the authors' code used the Chebyshev-series coefficients as if they were
  power coefficients, which shrinks theta by 1/3.)

The fit is post-processing of the release: it spends no privacy budget.

A noisy X^T X can be indefinite. It is then projected onto the PSD cone (``psd="clip"``: negative
eigenvalues set to 0, then the minimum-norm solution) or shifted by the smallest ridge that makes it
positive definite (``psd="ridge"``), with a warning saying which and by how much.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.polynomial import Chebyshev, Polynomial

from ddssp._warnings import tidy_warnings
from ddssp.dp import Ledger, PrivacyRecord
from ddssp.errors import DDSSPError
from ddssp.estimators.base import DPClassifier, DPRegressor, as_matrix
from ddssp.estimators.suffstats import (
    INTERCEPT,
    Encoding,
    SuffStats,
    _level_values,
    check_source,
    observed_target,
    sufficient_statistics,
)

#: relative eigenvalue tolerance: |lambda| <= _EIG_TOL * max|lambda| counts as zero
_EIG_TOL = 1e-11


# ------------------------------------------------------------------------------------- Chebyshev
def log_sigmoid(s: Any) -> np.ndarray:
    """phi(s) = -log(1 + exp(-s)) = log(sigmoid(s)), computed stably."""
    return -np.logaddexp(0.0, -np.asarray(s, dtype=float))


def chebyshev_coefficients(degree: int = 2, R: float = 6.0) -> np.ndarray:
    """Power-basis coefficients [b0, ..., b_degree] of the Chebyshev interpolant of phi on [-R, R].

    The interpolant is taken at the degree+1 Chebyshev points of the first kind (numpy's
    ``Chebyshev.interpolate``) and converted to the power basis in s itself (not in s / R)."""
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
    """Interpolation-error bound at Chebyshev nodes on [-R, R] for degree 2:
    |phi - p| <= max|phi'''| / (3! 2^2) * R^3, with max|phi'''| = max_p p(1-p)|1-2p| = 1/(6 sqrt 3)."""
    if degree != 2:
        raise DDSSPError("the closed-form error bound is implemented for degree 2 only")
    return (1.0 / (6.0 * math.sqrt(3.0))) / (math.factorial(3) * 2**2) * float(R) ** 3


# ------------------------------------------------------------------------------------- solving
def solve_normal_equations(
    xtx: np.ndarray, xty: np.ndarray, ridge: float = 0.0, penalized: np.ndarray | None = None, psd: str = "clip"
) -> tuple[np.ndarray, dict[str, Any]]:
    """theta solving (xtx + ridge * diag(penalized)) theta = xty, robust to a noisy indefinite xtx.

    Returns theta and a dict ``info`` (``min_eig``, ``max_eig``, ``rank``, ``action``). A PSD but singular
    matrix gives the minimum-norm solution (as numpy's lstsq on the rows would)."""
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
    w, V = np.linalg.eigh(A)
    scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny)
    tol = _EIG_TOL * scale * p
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


def _check_level(ci: Any) -> float:
    try:
        level = float(ci)
    except (TypeError, ValueError):
        raise DDSSPError(f"the confidence level must be a number in (0, 1), e.g. 0.95; got {ci!r}") from None
    if not 0.0 < level < 1.0:
        raise DDSSPError(f"the confidence level must be in (0, 1), e.g. 0.95; got {ci!r}")
    return level


# ------------------------------------------------------------------------------------- estimators
def source_privacy(source: Any) -> PrivacyRecord:
    """The record of a fit on ``source``: post-processing, so it costs what the source cost. A release
    contributes its ledger (rho, entries) and its stated (eps, delta); another source only the eps,
    delta and rho it states (None when it states none, e.g. exact marginals)."""
    stated: dict[str, float | None] = {}
    for k in ("eps", "delta", "rho"):
        v = getattr(source, k, None)
        stated[k] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    mechanism = "DD-SSP (post-processing of the source's noisy marginals)"
    details = {"post_processing": True}
    ledger = getattr(source, "ledger", None)
    if isinstance(ledger, Ledger):  # a release: its ledger, and its noise source's description and stamp
        rec = ledger.record(mechanism, delta=stated["delta"], eps=stated["eps"], details=details)
        noise = getattr(source, "noise", None)
        return dataclasses.replace(
            rec, stamp=getattr(source, "stamp", None) or None, noise=dict(noise) if isinstance(noise, Mapping) else None
        )
    return PrivacyRecord(mechanism, eps=stated["eps"], delta=stated["delta"], rho=stated["rho"], details=details)


class BootstrapConvergenceWarning(UserWarning):
    """The DP-noise bootstrap's re-estimations were still moving when they stopped: the DP part of
    the standard errors is understated."""


class _DDSSPMixin:
    """Shared fit/predict plumbing: encoding from the source's schema, Z^T Z, named coefficients."""

    kind = "linear"
    features: Sequence[str] | None
    encoding: Any
    ridge: float
    psd: str

    def _make_encoding(self, source: Any, target: str | None) -> Encoding:
        enc = self.encoding
        if isinstance(enc, Encoding):
            if target is not None and target != enc.target:
                raise DDSSPError(f"target {target!r} differs from the encoding's target {enc.target!r}")
            if enc.kind != self.kind:
                raise DDSSPError(f"the encoding was built for a {enc.kind} model, this is a {self.kind} model")
            if self.features is not None and list(self.features) != enc.features:
                raise DDSSPError("features given both in the estimator and (differently) in the encoding")
            return enc
        if target is None:
            target = getattr(source, "target", None)
            if target is None:
                raise DDSSPError("fit needs the target column: fit(source, target='...')")
        if enc is not None and not isinstance(enc, Mapping):
            raise DDSSPError("encoding must be an Encoding, a {column: 'onehot'|'numeric'} dict, or None")
        return Encoding(source.schema, self.features, target, kind=self.kind, overrides=enc)

    def _fit_stats(self, source: Any, target: str | None) -> tuple[Encoding, SuffStats]:
        check_source(source)
        enc = self._make_encoding(source, target)
        how = getattr(self, "missing_target", "drop")
        if how not in ("drop", "keep"):
            raise DDSSPError(f"missing_target must be 'drop' or 'keep', got {how!r}")
        observed = observed_target(source, enc)
        if observed is not source:
            share = 1.0 - observed.total / float(source.total) if float(source.total) > 0 else 0.0
            self.target_unobserved_share_ = share
            levels = getattr(source.schema.column(enc.target), "labels", None)
            what = ", ".join(repr(levels[i]) if levels else str(i) for i in enc.unobserved_target_codes)
            if how == "keep":
                warnings.warn(
                    f"target {enc.target!r}: rows in its {what} level(s) ({share:.1%} of the release) are "
                    "kept and coded 0 (missing_target='keep'); the default leaves them out",
                    stacklevel=4,
                )
            else:
                source = observed
        stats = sufficient_statistics(source, enc)
        if not stats.n > 0:
            raise DDSSPError(f"the source's total is {stats.n}; there is no data to fit")
        return enc, stats

    def _solve(self, stats: SuffStats, enc: Encoding) -> np.ndarray:
        pen = np.array([0.0 if n == INTERCEPT else 1.0 for n in enc.names])
        theta, info = solve_normal_equations(stats.xtx, stats.xty, self.ridge, pen, self.psd)
        self.solve_info_ = info
        return theta

    def _finish(self, theta: np.ndarray, enc: Encoding, stats: SuffStats, source: Any) -> None:
        names = enc.names
        if enc.intercept:
            i = names.index(INTERCEPT)
            self.intercept_ = float(theta[i])
            self.coef_ = np.delete(theta, i)
        else:
            self.intercept_ = 0.0
            self.coef_ = theta
        self.feature_names_in_ = enc.feature_names
        self.encoding_ = enc
        self.suffstats_ = stats
        self.n_ = stats.n
        self.target_ = enc.target
        self.privacy_ = source_privacy(source)
        self.schema_ = source.schema
        self._source_measurements = getattr(source, "measurements", None)

    def _units(self) -> tuple[np.ndarray, np.ndarray, float, float, list[str]]:
        """The map from encoded coefficients to the data's units.

        A numeric feature enters X as ``a * v + b`` (its level values v rescaled to [-1, 1]); a
        linear target as ``(y - d) / c``. So in data units a coefficient is ``c * a * beta`` per unit
        of the feature (per level, vs the first, for one-hot terms: a = 1, b = 0) and the intercept is
        ``c * (beta_0 + sum b * beta) + d``. Logistic: c = 1, d = 0 (log-odds of the second class).
        Returns (a, b, c, d, unit descriptions) for the non-intercept coefficients.
        """
        enc: Encoding = self.encoding_
        a, b, unit = [], [], []
        for att in enc.attributes:
            if att.how == "numeric" and att.width:
                vals = _level_values(self.schema_.column(att.column))
                finite = vals[np.isfinite(vals)]
                lo, hi = float(finite.min()), float(finite.max())
                slope = 2.0 / (hi - lo) if hi > lo else 0.0
                a.append(slope)
                b.append(-1.0 - lo * slope)
                unit.append(f"per 1 {att.column}")
            else:
                first = self._first_label(att.column)
                for _ in att.names:
                    a.append(1.0)
                    b.append(0.0)
                    unit.append(f"vs {att.column}={first}")
        c, d = 1.0, 0.0
        if enc.kind == "linear":
            vals = _level_values(self.schema_.column(enc.target))
            lo, hi = float(np.nanmin(vals)), float(np.nanmax(vals))
            c, d = (hi - lo) / 2.0, (hi + lo) / 2.0
        return np.array(a, dtype=float), np.array(b, dtype=float), c, d, unit

    def _first_label(self, column: str) -> str:
        labels = getattr(self.schema_.column(column), "labels", None)
        return str(labels[0]) if labels else "0"

    @property
    def coef_data_(self) -> np.ndarray:
        """Coefficients in the data's units: per unit of a numeric feature, per level of a categorical
        one (vs its first level); for a linear model in the target's units, for a logistic one in
        log-odds of the second class."""
        self._check_fitted()  # type: ignore[attr-defined]
        a, _, c, _, _ = self._units()
        return c * a * self.coef_

    @property
    def intercept_data_(self) -> float:
        """The intercept in the data's units (the prediction when every numeric feature is 0 and
        every categorical one at its first level)."""
        self._check_fitted()  # type: ignore[attr-defined]
        _, b, c, d, _ = self._units()
        return float(c * (self.intercept_ + float(b @ self.coef_)) + d)

    def coef_table(self) -> pd.DataFrame:
        """The coefficients as a table, intercept first, indexed by encoded name.

        Columns: ``coef`` (data units, see :attr:`coef_data_`), ``unit``, ``coef_scaled`` (on the
        encoded scale the model was solved on), ``measured`` (False when no released measurement
        covers the (feature, target) pair: the model imputed it, and such a coefficient is often
        exactly 0); after ``fit(..., ci=level)`` also ``stderr``, ``ci_low`` and ``ci_high`` in data
        units (for the intercept only when no numeric feature shifts it: else NaN).
        """
        self._check_fitted()  # type: ignore[attr-defined]
        a, b, c, _, unit = self._units()
        names = [INTERCEPT] + list(self.feature_names_in_)
        out = pd.DataFrame(
            {
                "coef": np.concatenate([[self.intercept_data_], self.coef_data_]),
                "unit": ["intercept"] + unit,
                "coef_scaled": np.concatenate([[self.intercept_], self.coef_]),
                "measured": self.pair_measured(),
            },
            index=pd.Index(names, name="name"),
        )
        if hasattr(self, "ci_table_"):
            tab = self.conf_int()
            mult = np.concatenate([[c if not np.any(b) else np.nan], c * a])
            shift = np.concatenate([[out["coef"].iloc[0] - c * self.intercept_], np.zeros(len(a))])
            with np.errstate(invalid="ignore"):  # an unbounded interval times an unknown intercept scale
                out["stderr"] = tab["stderr"].to_numpy() * np.abs(mult)
                out["ci_low"] = tab["ci_low"].to_numpy() * mult + shift
                out["ci_high"] = tab["ci_high"].to_numpy() * mult + shift
        return out

    def pair_measured(self) -> np.ndarray:
        """Per coefficient (intercept first): is its (feature, target) pair inside a released
        measurement? Always True for a source without measurements (exact marginals)."""
        self._check_fitted()  # type: ignore[attr-defined]
        return self._pair_measured(self._source_measurements)

    def score(self, X: Any, y: Any, codes: bool = False) -> float:
        """R^2 (linear, in the target's units) or accuracy (logistic) on a table ``X`` and its target ``y``.

        ``y`` holds the target's own values (labels for a logistic model); with ``codes=True``, ``X``
        and ``y`` hold the schema's integer codes.
        """
        self._check_fitted()  # type: ignore[attr-defined]
        pred = self.predict(X, codes=codes)
        if self.kind == "linear":
            truth = np.asarray(y, dtype=float)
            if codes:
                truth = _level_values(self.schema_.column(self.target_))[truth.astype(int)]
            ok = np.isfinite(truth)
            resid = float(np.sum((truth[ok] - pred[ok]) ** 2))
            total = float(np.sum((truth[ok] - truth[ok].mean()) ** 2))
            return 1.0 - resid / total if total > 0 else float("nan")
        truth = np.asarray(y)
        if not codes:
            frame = pd.DataFrame({self.target_: truth})
            truth = self._codes_of(frame, [self.target_])[self.target_].to_numpy()
        return float(np.mean(pred == truth))

    # ------------------------------------------------------------------ confidence intervals
    @tidy_warnings
    def fit_release(
        self,
        source: Any,
        target: str | None = None,
        *,
        ci: float = 0.95,
        boot: int = 100,
        seed: int | np.random.Generator | None = None,
        dp_noise: bool = True,
        sampling: str = "sandwich",
        boot_iters: int | None = None,
        sampling_rows: int = 50_000,
        replicates: Any = None,
        bootstrap: str = "measurements",
        interval: str | None = None,
        unmeasured: str = "infinite",
    ):
        """Fit from a release and attach standard errors and ``ci`` confidence intervals.

        Post-processing of the release: reads its model and measurement sigmas, never the data, never
        its ledger. The variance of each coefficient is the sum of two parts:

        - DP noise (``dp_noise=True``): a parametric bootstrap over the release's measurements (same
          cliques, same sigmas, redrawn around the released model's marginals), the model re-estimated
          warm-started from the released one, and the fit repeated: the spread of ``boot`` refits
          (:mod:`ddssp.estimators.bootstrap`). Needs a release (``.model`` and ``.measurements``).
        - sampling (``sampling="sandwich"``, default): the estimator's sampling variance
          A^-1 (sum_i e_i^2 x_i x_i^T) A^-1 with A the released (noisy) X^T X (plus ridge) and
          e_i = y_i - x_i^T beta; the "meat" is an average over ``sampling_rows`` rows drawn from the
          released model, scaled to the model's noisy total n. ``"ols"``: the homoskedastic
          s^2 A^-1 from the released second moments alone; ``"none"``: no sampling part.
          For logistic DD-SSP theta = c beta with beta the least-squares fit of the -1/+1 target and
          c = -b1 / (2 b2), so its variance is c^2 times that of beta.

        ``replicates``: bootstrap models already re-estimated from this release
        (:func:`ddssp.estimators.bootstrap.bootstrap_models`), to share them between several fits.

        ``bootstrap="mechanism"``: instead of the two parts above, simulate the whole release
        (:mod:`ddssp.estimators.mechanism_bootstrap`): per replicate draw N-hat rows from the released
        model, re-run the release's AIM with its recorded settings (simulated, seeded noise: not DP
        noise, nothing published), refit; the spread includes sampling, the DP noise AND AIM's choice
        of cliques, which the measurement bootstrap holds fixed. ``dp_noise=False`` then refits on the
        drawn rows' exact marginals (sampling only). ``sampling`` and ``boot_iters`` do not apply;
        ``stderr_sampling`` is the sampling-only spread of the same draws and ``stderr_dp`` the rest
        (sqrt of the variance difference, floored at 0). ``replicates``: a
        :class:`~ddssp.estimators.mechanism_bootstrap.MechanismReplicates` to share between fits.

        ``interval``: ``"normal"`` (estimate +- z_{(1+ci)/2} * stderr; the default for
        ``bootstrap="measurements"``), ``"bc-normal"`` (centre moved by the replicates' bias against
        the fit on the released model), ``"basic"`` or ``"percentile"`` (replicate quantiles; mechanism
        bootstrap only): :func:`~ddssp.estimators.mechanism_bootstrap.bootstrap_interval`.
        ``unmeasured``: a coefficient whose (feature, target) pair lies in no measured clique is
        imputed by the model from conditional independences; no bootstrap centred on the release can
        see that (its replicates keep the independence). ``"infinite"`` (default): (-inf, inf), the
        release holding no information on the pair; ``"keep"``: the bootstrap's interval. Measured
        (ci-coverage bench, 20,000 rows, 40 releases at eps 0.1: 88 of 480 coefficients had their pair
        unmeasured): the bootstrap intervals of those coefficients covered the population value 0 of
        88 times (fixed-selection) and 3 of 88 (mechanism): the model imputes ~0 with a tiny spread
        when the truth is ~0.2, so they are not given (95% coverage at eps 0.1 with the rule: linear
        0.75 -> 0.91, logistic 0.65 -> 0.86). Either way ``conf_int()`` has a ``pair_measured`` column.
        ``seed`` seeds a numpy Generator for the bootstrap and the model rows (post-processing
        randomness, not DP noise).
        Sets ``stderr_`` (aligned with ``coef_``), ``intercept_stderr_``, ``ci_`` (level) and
        ``ci_table_``; ``conf_int()`` returns the table."""
        import time

        from ddssp.dp import make_rng
        from ddssp.estimators.bootstrap import BOOT_ITERS, TOL_BLOCK, ModelSource, bootstrap_models
        from ddssp.marginals.aim import FINAL_TOL

        level = _check_level(ci)
        from ddssp.estimators.mechanism_bootstrap import INTERVALS

        if bootstrap not in ("measurements", "mechanism"):
            raise DDSSPError(f"bootstrap must be 'measurements' or 'mechanism', got {bootstrap!r}")
        if interval is None:
            interval = "normal"
        if interval not in INTERVALS:
            raise DDSSPError(f"interval must be one of {', '.join(INTERVALS)}; got {interval!r}")
        if bootstrap == "measurements" and interval in ("basic", "percentile"):
            raise DDSSPError(
                f"interval {interval!r} needs bootstrap='mechanism' (the measurement bootstrap's "
                "sampling part is analytic, not replicates)"
            )
        if unmeasured not in ("keep", "infinite"):
            raise DDSSPError(f"unmeasured must be 'keep' or 'infinite', got {unmeasured!r}")
        self.ci_unmeasured_ = unmeasured
        if bootstrap == "mechanism":
            return self._fit_release_mechanism(source, target, level, boot, seed, dp_noise, replicates, interval)
        if sampling not in ("sandwich", "ols", "none"):
            raise DDSSPError(f"sampling must be 'sandwich', 'ols' or 'none', got {sampling!r}")
        if isinstance(boot, bool) or not isinstance(boot, (int, np.integer)) or boot < (2 if dp_noise else 0):
            raise DDSSPError(f"boot must be an integer >= 2 (bootstrap replicates), got {boot!r}")
        boot_iters = BOOT_ITERS if boot_iters is None else int(boot_iters)
        rng = make_rng(seed)
        t0 = time.perf_counter()
        self.fit(source, target)
        enc: Encoding = self.encoding_
        theta = np.concatenate([[self.intercept_], self.coef_])
        p = len(theta)
        var_dp = np.zeros(p)
        reps = np.zeros((0, p))
        info: dict[str, Any] = {"level": level, "dp_noise": bool(dp_noise), "sampling": sampling}
        if dp_noise:
            refit_info: list = []
            models = (
                replicates
                if replicates is not None
                else bootstrap_models(source, boot, rng, boot_iters, info=refit_info)
            )
            if len(models) < 2:
                raise DDSSPError(f"the DP-noise bootstrap needs at least 2 replicates, got {len(models)}")
            clone = type(self)(**self.get_params())  # type: ignore[attr-defined]
            clone.encoding = enc
            reps = np.empty((len(models), p))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # PSD clipping of noisy replicates is expected
                for b, m in enumerate(models):
                    clone.fit(ModelSource(source.schema, m), enc.target)
                    reps[b] = np.concatenate([[clone.intercept_], clone.coef_])
            var_dp = reps.var(axis=0, ddof=1)
            info.update(boot=len(models), boot_iters=boot_iters)
            if refit_info:
                drop = float(np.median([r["last_drop"] for r in refit_info]))
                info.update(dp_last_drop=drop, dp_converged=bool(drop <= FINAL_TOL))
                if drop > FINAL_TOL:
                    warnings.warn(
                        f"the DP-noise re-estimations had not converged after {boot_iters} iterations (median "
                        f"loss still falling {100 * drop:.2g}% over the last {TOL_BLOCK} steps, more than "
                        f"AIM's {100 * FINAL_TOL:g}% stopping rule), so the DP part of the standard errors is "
                        f"understated (on Adult at eps 1, 150 iterations gave 0.3-0.4x of the spread across "
                        f"releases); raise --boot-iters (2000 came close there) or use --boot-method mechanism",
                        BootstrapConvergenceWarning,
                        stacklevel=2,
                    )
        var_samp = np.zeros(p) if sampling == "none" else self._sampling_variance(source, sampling, rng, sampling_rows)
        se = np.sqrt(var_dp + var_samp)
        info.update(bootstrap="measurements", interval=interval)
        self._set_ci(level, theta, se, np.sqrt(var_dp), np.sqrt(var_samp), reps, interval, info, t0, source)
        return self

    def _set_ci(self, level, theta, se, se_dp, se_samp, reps, interval, info, t0, source=None) -> None:
        import time

        self.pair_measured_ = self._pair_measured(source)
        self.boot_coefs_ = reps
        self.stderr_dp_ = se_dp
        self.stderr_sampling_ = se_samp
        self.intercept_stderr_ = float(se[0])
        self.stderr_ = se[1:]
        self.ci_ = level
        self.ci_interval_ = interval
        # the bias a "bc-normal" interval subtracts: the replicates' mean against the fit on the
        # released model (the bootstrap world's truth, = the point estimate)
        self.ci_bias_ = reps.mean(axis=0) - theta if len(reps) else np.zeros(len(theta))
        info["seconds"] = time.perf_counter() - t0
        self.ci_info_ = info
        self.ci_table_ = self.conf_int(level)

    def _pair_measured(self, source) -> np.ndarray:
        """Per coefficient (intercept first): is its (feature column, target) pair inside a measured
        clique of ``source`` (or of a list of measurements)? True throughout for a source without
        measurements (exact marginals)."""
        enc: Encoding = self.encoding_
        cols = ([None] if enc.intercept else []) + [a.column for a in enc.attributes for _ in a.names]
        meas = source if isinstance(source, list) or source is None else getattr(source, "measurements", None)
        if meas is None:
            return np.ones(len(cols) + (0 if enc.intercept else 1), dtype=bool)
        cliques = [set(m.clique) for m in meas]
        out = [c is None or any({c, enc.target} <= m for m in cliques) for c in cols]
        return np.array(([True] if not enc.intercept else []) + out, dtype=bool)

    def _refit_all(self, sources, enc) -> np.ndarray:
        """Coefficients (intercept first) of this estimator refitted on each marginal source."""
        clone = type(self)(**self.get_params())  # type: ignore[attr-defined]
        clone.encoding = enc
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PSD clipping of noisy replicates is expected
            for src in sources:
                clone.fit(src, enc.target)
                out.append(np.concatenate([[clone.intercept_], clone.coef_]))
        return np.array(out)

    def _fit_release_mechanism(self, source, target, level, boot, seed, dp_noise, replicates, interval):
        """fit_release with ``bootstrap="mechanism"`` (see there)."""
        import time

        from ddssp.dp import make_rng
        from ddssp.estimators.bootstrap import ModelSource
        from ddssp.estimators.mechanism_bootstrap import MechanismReplicates, mechanism_replicates
        from ddssp.estimators.suffstats import ExactMarginals

        rng = make_rng(seed)
        t0 = time.perf_counter()
        self.fit(source, target)
        enc: Encoding = self.encoding_
        theta = np.concatenate([[self.intercept_], self.coef_])
        if replicates is None:
            replicates = mechanism_replicates(source, boot, rng, dp=dp_noise)
        if not isinstance(replicates, MechanismReplicates):
            raise DDSSPError("replicates for bootstrap='mechanism' must come from mechanism_replicates()")
        if dp_noise and len(replicates.models) < 2:
            raise DDSSPError(f"the mechanism bootstrap needs at least 2 replicates, got {len(replicates.models)}")
        samp = self._refit_all([ExactMarginals(c, source.schema) for c in replicates.samples], enc)
        var_samp = samp.var(axis=0, ddof=1)
        if dp_noise:
            reps = self._refit_all([ModelSource(source.schema, m) for m in replicates.models], enc)
            var_tot = reps.var(axis=0, ddof=1)
        else:
            reps, var_tot = samp, var_samp
        info: dict[str, Any] = {
            "level": level,
            "dp_noise": bool(dp_noise),
            "sampling": "in the bootstrap",
            "bootstrap": "mechanism",
            "interval": interval,
            "boot": len(reps),
            "rows": replicates.rows,
        }
        self._set_ci(
            level,
            theta,
            np.sqrt(var_tot),
            np.sqrt(np.clip(var_tot - var_samp, 0.0, None)),
            np.sqrt(var_samp),
            reps,
            interval,
            info,
            t0,
            source,
        )
        return self

    def conf_int(self, level: float | None = None) -> pd.DataFrame:
        """Coefficient table (intercept first): name, estimate, stderr, stderr_dp, stderr_sampling,
        ci_low, ci_high, for confidence ``level`` (default: the level given to ``fit_release``)."""
        if not hasattr(self, "stderr_"):
            raise DDSSPError("no standard errors: fit with fit_release(source, ci=0.95) first")
        from scipy.stats import norm

        from ddssp.estimators.mechanism_bootstrap import bootstrap_interval

        level = self.ci_ if level is None else _check_level(level)
        z = float(norm.ppf(0.5 + level / 2.0))
        est = np.concatenate([[self.intercept_], self.coef_])
        se = np.concatenate([[self.intercept_stderr_], self.stderr_])
        how = getattr(self, "ci_interval_", "normal")
        if how in ("basic", "percentile"):
            lo, hi = bootstrap_interval(est, self.boot_coefs_, level, how)
        else:
            mid = est - self.ci_bias_ if how == "bc-normal" else est
            lo, hi = mid - z * se, mid + z * se
        measured = getattr(self, "pair_measured_", np.ones(len(est), dtype=bool))
        if getattr(self, "ci_unmeasured_", "keep") == "infinite":
            lo, hi = np.where(measured, lo, -np.inf), np.where(measured, hi, np.inf)
        return pd.DataFrame(
            {
                "name": [INTERCEPT] + list(self.feature_names_in_),
                "estimate": est,
                "stderr": se,
                "stderr_dp": self.stderr_dp_,
                "stderr_sampling": self.stderr_sampling_,
                "ci_low": lo,
                "ci_high": hi,
                "pair_measured": measured,
            }
        )

    def _scale(self) -> float:
        """theta = scale * (least-squares coefficients): 1 for linear, -b1 / (2 b2) for logistic."""
        b = getattr(self, "chebyshev_coef_", None)
        return 1.0 if b is None else float(-b[1] / (2.0 * b[2]))

    def _sampling_variance(self, source: Any, how: str, rng: np.random.Generator, rows: int) -> np.ndarray:
        """Diagonal of the sampling covariance of theta (intercept first) from the released moments."""
        enc: Encoding = self.encoding_
        stats: SuffStats = self.suffstats_
        n = float(stats.n)
        pdim = len(enc.names)
        pen = np.array([0.0 if nm == INTERCEPT else 1.0 for nm in enc.names])
        A = (stats.xtx + stats.xtx.T) / 2.0 + float(self.ridge) * np.diag(pen)
        w, V = np.linalg.eigh(A)
        keep = w > _EIG_TOL * max(float(np.max(np.abs(w))), np.finfo(float).tiny) * pdim
        Ainv = (V[:, keep] / w[keep]) @ V[:, keep].T  # pseudo-inverse of the PSD part
        c = self._scale()
        beta = np.concatenate([[self.intercept_], self.coef_]) / c
        if enc.intercept is False:
            beta = self.coef_ / c
        model = getattr(source, "model", None)
        if how == "sandwich" and model is not None and hasattr(model, "sample"):
            rows = int(rows)
            if rows < 100:
                raise DDSSPError(f"sampling_rows must be >= 100, got {rows}")
            codes = model.sample(rows, rng)
            if getattr(self, "missing_target", "drop") == "drop":  # the rows the fit used
                codes = codes[~codes[enc.target].isin(enc.unobserved_target_codes)]
            X = enc.transform(codes)
            e = enc.target_vector(codes) - X @ beta
            meat = (X * (e**2)[:, None]).T @ X * (n / max(len(codes), 1))
        else:  # homoskedastic: s^2 A from the released second moments
            rss = stats.yty - 2.0 * float(beta @ stats.xty) + float(beta @ stats.xtx @ beta)
            s2 = max(rss, 0.0) / max(n - pdim, 1.0)
            meat = s2 * A
        cov = Ainv @ meat @ Ainv * c**2
        out = np.clip(np.diag(cov), 0.0, None)
        return out if enc.intercept else np.concatenate([[0.0], out])

    def _design(self, X: Any, codes: bool = False) -> np.ndarray:
        """Encoded features (without the intercept) for a table of raw values (or, with
        ``codes=True``, of integer codes) or an already encoded matrix."""
        enc: Encoding = self.encoding_
        if isinstance(X, pd.DataFrame):
            cols = [str(c) for c in X.columns]
            if set(enc.features) <= set(cols):
                sub = X[enc.features] if codes else self._codes(X)
                return enc.transform(sub, intercept=False)
            if cols == enc.feature_names:
                return as_matrix(X)[0]
            if cols == enc.names:
                return as_matrix(X)[0][:, 1:] if enc.intercept else as_matrix(X)[0]
            missing = [c for c in enc.features if c not in cols]
            raise DDSSPError(f"the table lacks feature column(s) {missing}")
        arr, _ = as_matrix(X)
        if arr.shape[1] == len(self.coef_):
            return arr
        if enc.intercept and arr.shape[1] == len(enc.names):
            return arr[:, 1:]
        raise DDSSPError(
            f"X has {arr.shape[1]} columns; expected the {len(self.coef_)} encoded features "
            f"{enc.feature_names[:5]}{'...' if len(self.coef_) > 5 else ''} or a DataFrame with columns {enc.features}"
        )

    def _codes(self, X: pd.DataFrame) -> pd.DataFrame:
        return self._codes_of(X, self.encoding_.features)

    @tidy_warnings
    def _codes_of(self, X: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
        """X[features] encoded to codes by the schema. A DataFrame always holds raw values (labels,
        numeric values); for a domain-file schema those are the codes themselves. Never guessed from
        dtypes: raw integers (e.g. ages) can fall inside a code range. Pass ``encoding_.transform(codes)``
        to predict from codes of a full schema."""
        schema = self.schema_
        if not hasattr(schema, "encode"):
            raise DDSSPError("the table is not integer codes and the schema cannot encode raw values")
        full = X.copy()
        for c in schema.names:  # encode needs every schema column; fill the unused ones with a valid value
            if c not in full.columns:
                col = schema.column(c)
                full[c] = col.values[0] if getattr(col, "values", None) is not None else col.labels[0]
        return schema.encode(full[list(schema.names)])[columns]


class DDSSPLinearRegression(_DDSSPMixin, DPRegressor):
    """DD-SSP linear regression from a marginal source.

    ``fit(source, target=...)``; the target is encoded in [-1, 1] (its level values rescaled) for the
    solve; ``predict`` returns the target's own units, ``decision_function`` the encoded scale.

    Parameters
    ----------
    ridge : float
        L2 penalty on the non-intercept coefficients.
    features : sequence of str or None
        Feature columns (None: every column but the target).
    encoding : Encoding, mapping or None
        A ready :class:`Encoding`, or ``{column: "onehot" | "numeric"}`` overrides.
    psd : str
        How an indefinite noisy X^T X is repaired: "clip" (project onto the PSD cone) or "ridge".
    missing_target : {"drop", "keep"}
        Rows whose target is missing (its missing level) are left out of the fit ("drop", default:
        X^T X and X^T y from the model's marginals of the rows with an observed target), or kept
        with the target coded as the centre of its range ("keep", with a warning).

    Attributes
    ----------
    coef_ : ndarray
        Coefficients of the encoded features (intercept apart).
    intercept_ : float
        The intercept (the encoding's constant column).
    feature_names_in_ : list of str
        Encoded feature names.
    encoding_ : Encoding
        How columns were encoded.
    suffstats_ : SuffStats
        The sufficient statistics (X^T X, X^T y) computed from the source's marginals.
    n_ : float
        The source's total (a noisy estimate of the number of rows for a release).
    target_ : str
        The target column.
    privacy_ : PrivacyRecord
        Post-processing: what the source cost. For a release, its ledger (rho, entries), its stated
        eps and delta and its noise stamp; for other sources the eps / delta / rho they state, or
        None. ``details["post_processing"]`` is True.
    """

    kind = "linear"

    def __init__(
        self,
        ridge: float = 0.0,
        features: Sequence[str] | None = None,
        encoding: Any = None,
        psd: str = "clip",
        missing_target: str = "drop",
    ):
        self.ridge = ridge
        self.features = features
        self.encoding = encoding
        self.psd = psd
        self.missing_target = missing_target

    @tidy_warnings
    def fit(
        self, source: Any, target: str | None = None, *, ci: float | None = None, **ci_options: Any
    ) -> DDSSPLinearRegression:
        """Fit from a release (or any marginal source); with ``ci``, also intervals.

        Parameters
        ----------
        source : Release or marginal source
            The release (post-processing: no privacy cost), or e.g. ``ExactMarginals``.
        target : str, optional
            The target column (default: the release's ``target``).
        ci : float, optional
            Confidence level (e.g. 0.95): also standard errors and intervals, as
            :meth:`fit_release` with ``ci_options`` (``boot``, ``seed``, ...).

        Returns
        -------
        self
        """
        if ci is not None:
            return self.fit_release(source, target, ci=ci, **ci_options)
        if ci_options:
            raise DDSSPError(f"{sorted(ci_options)} apply to intervals only: give ci=0.95 (or another level)")
        enc, stats = self._fit_stats(source, target)
        theta = self._solve(stats, enc)
        self._finish(theta, enc, stats, source)
        return self

    def predict(self, X: Any, codes: bool = False) -> np.ndarray:
        """Predictions in the target's own units, for a table of raw values (or of integer codes
        with ``codes=True``) or an encoded matrix. :meth:`decision_function` gives them on the
        encoded [-1, 1] scale the model was solved on."""
        return self.encoding_.decode_target(self.decision_function(X, codes=codes))

    def predict_original(self, X: Any, codes: bool = False) -> np.ndarray:
        """The same as :meth:`predict` (predictions in the target's units)."""
        return self.predict(X, codes=codes)


class DDSSPLogisticRegression(_DDSSPMixin, DPClassifier):
    """DD-SSP logistic regression (degree-2 Chebyshev approximation of the log-likelihood on [-R, R]).

    The binary target's first real level is class 0 (encoded -1), its second class 1 (+1); rows in an
    ``'<other>'`` or empty-cell level of the target are left out (``missing_target="drop"``). ``classes_`` holds the
    two classes' codes, ``target_labels_`` their schema labels.

    Degree > 2 needs moments of order > 2 (k-way marginals) and is refused.

    Parameters
    ----------
    degree : int
        Chebyshev degree (only 2).
    R : float
        Half-width of the approximation interval [-R, R] of the linear predictor.
    ridge, features, encoding, psd
        As in :class:`DDSSPLinearRegression`.
    missing_target : {"drop", "keep"}
        Rows whose target is in neither class (its ``'<other>'`` or ``'<missing>'`` level) are left
        out of the fit ("drop", default) or kept and coded 0, between the classes ("keep").

    Attributes
    ----------
    coef_ : ndarray
        Coefficients of the encoded features (intercept apart).
    intercept_ : float
        The intercept (the encoding's constant column).
    feature_names_in_ : list of str
        Encoded feature names.
    encoding_ : Encoding
        How columns were encoded.
    suffstats_ : SuffStats
        The sufficient statistics (X^T X, X^T y) computed from the source's marginals.
    n_ : float
        The source's total (a noisy estimate of the number of rows for a release).
    target_ : str
        The target column.
    privacy_ : PrivacyRecord
        Post-processing: what the source cost. For a release, its ledger (rho, entries), its stated
        eps and delta and its noise stamp; for other sources the eps / delta / rho they state, or
        None. ``details["post_processing"]`` is True.
    classes_ : ndarray
        [0, 1], the target's codes.
    target_labels_ : list of str
        The schema labels of the two classes.
    chebyshev_coef_ : ndarray
        The approximation's coefficients.
    """

    kind = "logistic"

    def __init__(
        self,
        degree: int = 2,
        R: float = 6.0,
        ridge: float = 0.0,
        features: Sequence[str] | None = None,
        encoding: Any = None,
        psd: str = "clip",
        missing_target: str = "drop",
    ):
        self.degree = degree
        self.R = R
        self.ridge = ridge
        self.features = features
        self.encoding = encoding
        self.psd = psd
        self.missing_target = missing_target

    @tidy_warnings
    def fit(
        self, source: Any, target: str | None = None, *, ci: float | None = None, **ci_options: Any
    ) -> DDSSPLogisticRegression:
        """Fit from a release (or any marginal source); with ``ci``, also intervals.

        Parameters
        ----------
        source : Release or marginal source
            The release (post-processing: no privacy cost), or e.g. ``ExactMarginals``.
        target : str, optional
            The binary target column (default: the release's ``target``).
        ci : float, optional
            Confidence level (e.g. 0.95): also standard errors and intervals, as
            :meth:`fit_release` with ``ci_options`` (``boot``, ``seed``, ...).

        Returns
        -------
        self
        """
        if ci is not None:
            return self.fit_release(source, target, ci=ci, **ci_options)
        if ci_options:
            raise DDSSPError(f"{sorted(ci_options)} apply to intervals only: give ci=0.95 (or another level)")
        if self.degree != 2:
            raise DDSSPError(
                f"Chebyshev degree {self.degree!r} is not supported: DD-SSP from two-way marginals gives the "
                "moments of degree 2 only (a degree-M approximation needs M-way marginals); use degree=2"
            )
        b = chebyshev_coefficients(2, self.R)
        if not b[2] < 0:
            raise DDSSPError(f"the Chebyshev approximation on [-{self.R}, {self.R}] is not concave (b2={b[2]})")
        enc, stats = self._fit_stats(source, target)
        theta = (-b[1] / (2.0 * b[2])) * self._solve(stats, enc)
        self._finish(theta, enc, stats, source)
        self.chebyshev_coef_ = b
        tl = enc.target_levels  # -1 / +1 for the two classes, 0 for '<other>' or empty cells
        self.classes_ = np.array([int(np.flatnonzero(tl == -1.0)[0]), int(np.flatnonzero(tl == 1.0)[0])])
        labels = getattr(source.schema.column(enc.target), "labels", None)
        self.target_labels_ = [list(labels)[i] for i in self.classes_] if labels is not None else ["0", "1"]
        return self
