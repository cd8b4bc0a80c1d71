"""Standard errors and confidence intervals of the DD-SSP estimators, from the release alone.

The variance of each coefficient has two parts: the release's DP noise, by a parametric bootstrap
over its measurements (:mod:`ddssp.estimators.bootstrap`) or over the whole mechanism
(:mod:`ddssp.estimators.mechanism_bootstrap`), and sampling, by a sandwich variance from rows drawn
from the released model. :class:`IntervalsMixin` adds them to the estimators of
:mod:`ddssp.estimators.ddssp`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ddssp._warnings import tidy_warnings
from ddssp.errors import DDSSPError
from ddssp.estimators.suffstats import INTERCEPT, Encoding, SuffStats

#: relative eigenvalue tolerance: |lambda| <= _EIG_TOL * max|lambda| counts as zero
_EIG_TOL = 1e-11


def _check_level(ci: Any) -> float:
    try:
        level = float(ci)
    except (TypeError, ValueError):
        raise DDSSPError(f"the confidence level must be a number in (0, 1), e.g. 0.95; got {ci!r}") from None
    if not 0.0 < level < 1.0:
        raise DDSSPError(f"the confidence level must be in (0, 1), e.g. 0.95; got {ci!r}")
    return level


class BootstrapConvergenceWarning(UserWarning):
    """The DP-noise bootstrap's re-estimations were still moving when they stopped: the DP part of
    the standard errors is understated."""


class IntervalsMixin:
    """``fit_release`` and ``conf_int`` for the DD-SSP estimators (see the module docstring)."""

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
        its ledger. With ``bootstrap="measurements"`` (default) the variance of each coefficient is the
        sum of two parts:

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

        With ``bootstrap="mechanism"`` the whole release is simulated instead
        (:mod:`ddssp.estimators.mechanism_bootstrap`): per replicate draw N-hat rows from the released
        model, re-run the release's AIM with its recorded settings (simulated, seeded noise: not DP
        noise, nothing published), refit; the spread includes sampling, the DP noise AND AIM's choice
        of cliques, which the measurement bootstrap holds fixed. ``stderr_sampling_`` is then the
        sampling-only spread of the same draws and ``stderr_dp_`` the rest (sqrt of the variance
        difference, floored at 0).

        A coefficient whose (feature, target) pair lies in no measured clique is imputed by the model
        from conditional independences; no bootstrap centred on the release can see that (its
        replicates keep the independence, so their spread around the imputed value, about 0, is tiny
        even when the population value is not 0). ``unmeasured`` says what such a coefficient gets.

        Parameters
        ----------
        source : Release
            The release. With ``dp_noise=False`` and ``bootstrap="measurements"``, any marginal source
            ``fit`` accepts (without a model to draw rows from, ``"sandwich"`` gives the ``"ols"``
            variance).
        target : str or None
            The target column, as for ``fit``.
        ci : float
            Confidence level, in (0, 1).
        boot : int
            Bootstrap replicates, at least 2 (the measurement bootstrap without the DP part draws
            none).
        seed : int, numpy.random.Generator or None
            Seeds a numpy Generator for the bootstrap and the model rows (post-processing randomness,
            not DP noise).
        dp_noise : bool
            Include the DP-noise part. With ``bootstrap="mechanism"``, False refits on the drawn rows'
            exact marginals (sampling only).
        sampling : {"sandwich", "ols", "none"}
            The sampling part (see above). Not used by the mechanism bootstrap.
        boot_iters : int or None
            Iteration budget of each re-estimation (default ``BOOT_ITERS``). Not used by the mechanism
            bootstrap.
        sampling_rows : int
            Rows drawn from the released model for the sandwich's meat (at least 100).
        replicates : list of GraphicalModel or MechanismReplicates or None
            Bootstrap replicates already made from this release, to share them between several fits:
            models re-estimated by :func:`ddssp.estimators.bootstrap.bootstrap_models`, or with
            ``bootstrap="mechanism"`` a :class:`~ddssp.estimators.mechanism_bootstrap.MechanismReplicates`.
        bootstrap : {"measurements", "mechanism"}
            Which bootstrap (see above).
        interval : {"normal", "bc-normal", "basic", "percentile"} or None
            ``"normal"`` (estimate +- z_{(1+ci)/2} * stderr; the default), ``"bc-normal"`` (centre
            moved by the replicates' bias against the fit on the released model), ``"basic"`` or
            ``"percentile"`` (replicate quantiles; mechanism bootstrap only):
            :func:`~ddssp.estimators.mechanism_bootstrap.bootstrap_interval`.
        unmeasured : {"infinite", "keep"}
            For a coefficient whose pair is unmeasured (see above): ``"infinite"`` (default) gives
            (-inf, inf), the release holding no information on the pair; ``"keep"`` the bootstrap's
            interval. Either way ``conf_int()`` has a ``pair_measured`` column.

        Returns
        -------
        self
            With ``stderr_`` (aligned with ``coef_``), ``intercept_stderr_``, ``stderr_dp_``,
            ``stderr_sampling_``, ``ci_`` (the level), ``ci_table_`` (what ``conf_int()`` returns),
            ``boot_coefs_``, ``pair_measured_`` and ``ci_info_`` set.

        Raises
        ------
        DDSSPError
            For an invalid option, too few replicates, or a source without what the chosen bootstrap
            needs.

        Warns
        -----
        BootstrapConvergenceWarning
            When the median DP-noise re-estimation was still lowering its loss by more than AIM's
            ``FINAL_TOL`` over its last ``TOL_BLOCK`` steps: the DP part is then understated.
        """
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
                        f"understated (on Adult at eps 1, 150 iterations gave about 0.65x the coefficient spread of "
                        f"a 3,000-iteration re-estimation); raise --boot-iters (boot_iters= in Python; 1000 gave "
                        f"about 0.9x there) or use "
                        f"--boot-method mechanism (bootstrap='mechanism')",
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
        """Coefficient table with standard errors and confidence intervals.

        Parameters
        ----------
        level : float or None
            Confidence level, in (0, 1) (default: the level given to ``fit_release``).

        Returns
        -------
        pandas.DataFrame
            One row per coefficient (intercept first): name, estimate, stderr, stderr_dp,
            stderr_sampling, ci_low, ci_high, pair_measured (with ``unmeasured="infinite"`` the
            interval of an unmeasured pair is (-inf, inf)).

        Raises
        ------
        DDSSPError
            Before ``fit_release``, or for a level outside (0, 1).
        """
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
