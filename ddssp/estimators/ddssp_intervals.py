"""Standard errors and confidence intervals of the DD-SSP estimators, from the release alone.

The variance of each coefficient has three parts: the release's DP noise, by the delta method over
its measurements (:mod:`ddssp.estimators.ddssp_delta`; by default with the model's positivity,
:func:`~ddssp.estimators.ddssp_delta.projected_dp_draws`), a parametric bootstrap over
its measurements (:mod:`ddssp.estimators.bootstrap`) or over the whole mechanism
(:mod:`ddssp.estimators.mechanism_bootstrap`); the error of the model's imputation of the pairs no
measurement holds (the model-based part, :func:`ddssp.estimators.ddssp_delta.model_error_weight`);
and sampling, by a sandwich variance from rows drawn from the released model.

A DD-SSP estimator constructed with ``ci=level`` (and optionally ``intervals=IntervalOptions(...)``)
calls :func:`fit_intervals` after its point fit; the functions here read the fitted estimator and set
its interval attributes, and refit copies of it on bootstrap sources. Everything is post-processing
of the release: its model and measurement sigmas, never the data, never its ledger.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import DDSSPError
from ddssp.estimators.ddssp_delta import penalty_used, ridge_used
from ddssp.estimators.ddssp_math import EIG_TOL, coefficient_scale, psd_pinv
from ddssp.estimators.ddssp_ridge import floor_pull, floor_shrinkage, point_copy
from ddssp.estimators.mechanism_bootstrap import INTERVALS
from ddssp.estimators.params import Constraint, InvalidParameterError, instance_of, number, one_of, validate
from ddssp.estimators.suffstats import INTERCEPT, Encoding, SuffStats

#: the fitted attributes :func:`fit_intervals` sets (a fit without intervals removes them)
INTERVAL_ATTRIBUTES = (
    "ci_pull_",
    "ci_unmeasured_",
    "pair_measured_",
    "ci_basis_",
    "boot_coefs_",
    "stderr_dp_",
    "stderr_model_",
    "stderr_sampling_",
    "intercept_stderr_",
    "intercept_data_var_",
    "stderr_",
    "ci_",
    "ci_interval_",
    "ci_bias_",
    "ci_info_",
    "ci_table_",
)

#: the confidence level's constraint (estimators' ``ci``, ``conf_int(level)``)
LEVEL = number(0.0, 1.0, open_low=True, open_high=True, says="a confidence level in (0, 1), e.g. 0.95")


def _check_level(level: Any) -> float:
    LEVEL.check("level", level)
    return float(level)


class BootstrapConvergenceWarning(UserWarning):
    """The DP-noise bootstrap's re-estimations were still moving when they stopped: the DP part of
    the standard errors is understated."""


_SEED = Constraint(
    lambda v: (
        v is None
        or isinstance(v, np.random.Generator)
        or (isinstance(v, Integral) and not isinstance(v, bool) and v >= 0)
    ),
    "a non-negative integer, a numpy Generator or None",
)

#: what each interval option accepts (cross-option rules in :meth:`IntervalOptions.__post_init__`)
_OPTION_CONSTRAINTS = {
    "boot": number(0, None, integer=True, says="an integer >= 2 (bootstrap replicates)"),
    "seed": _SEED,
    "dp_noise": instance_of(bool, np.bool_, says="True or False"),
    "sampling": one_of("sandwich", "ols", "none", says="'sandwich', 'ols' or 'none'"),
    "boot_iters": number(1, None, integer=True, none=True, says="an integer >= 1"),
    "sampling_rows": number(100, None, integer=True, says="an integer >= 100"),
    "bootstrap": one_of("measurements", "mechanism", says="'measurements' or 'mechanism'"),
    "interval": one_of(*INTERVALS, says=f"one of {', '.join(INTERVALS)}"),
    "unmeasured": one_of("model", "infinite", "keep", says="'model' or 'infinite'"),
    "dp_method": one_of("projected", "delta", "bootstrap", says="'projected', 'delta' or 'bootstrap'"),
}


@dataclasses.dataclass(frozen=True)
class IntervalOptions:
    """How a DD-SSP estimator's standard errors and intervals are computed (with ``ci=level``).

    With ``bootstrap="measurements"`` (default) the variance of each coefficient is the sum of two
    parts:

    - DP noise (``dp_noise=True``), for a coefficient whose (feature, target) pair the release
      measured: with ``dp_method="projected"`` (default) the measurements' Gaussian noise, redrawn
      at their recorded sigmas, pooled per marginal as the model's least-squares fit pools it,
      projected onto nonnegative marginals (a cell near 0 cannot follow noise below 0, a level's
      cells are bounded by its total) and propagated to first order through Z^T Z and the solve
      (:func:`~ddssp.estimators.ddssp_delta.projected_dp_draws`; no refits, ``PROJECTED_DRAWS``
      draws). With ``dp_method="delta"`` the same propagation without the projections, in closed
      form (:func:`~ddssp.estimators.ddssp_delta.delta_dp_variance`): wider where the noise is
      large against the cells. With ``dp_method="bootstrap"`` a parametric bootstrap over the release's measurements
      (same cliques, same sigmas, redrawn around the released model's marginals), the model
      re-estimated warm-started from the released one, and the fit repeated: the spread of
      ``boot`` refits (:mod:`ddssp.estimators.bootstrap`). Needs a release (``.model`` and
      ``.measurements``).
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
    noise, nothing published), refit; the spread includes sampling, the DP noise AND AIM's choice of
    cliques, which the measurement bootstrap holds fixed. ``stderr_sampling_`` is then the
    sampling-only spread of the same draws and ``stderr_dp_`` the rest (sqrt of the variance
    difference, floored at 0).

    A coefficient whose (feature, target) pair lies in no measured clique is imputed by the model
    from conditional independences, and the delta method sees no noise on the pair. By default
    (``unmeasured="model"``) its interval is *model-based* (``basis`` "model" in
    :func:`interval_table`): to the DP and sampling parts it adds the error of the model's
    imputation, with a per-cell error variance taken from the release itself
    (:func:`~ddssp.estimators.ddssp_delta.model_error_weight`: half the measured pairs' typical
    chi-square per degree of freedom against independence, times the cell's count under
    independence), propagated to first order through the fit
    (:func:`~ddssp.estimators.ddssp_delta.unmeasured_sensitivity`; no refits). Every coefficient that
    an imputed (feature, target) pair moves gets that part (``stderr_model_``), measured or not.
    Measured coverage (``docs/benchmarks.md``): at or above the level on Adult at eps 1 and on the
    ci-coverage population at eps 0.1, with model-based intervals several times wider than measured
    ones. ``unmeasured="infinite"`` gives those coefficients (-inf, inf) instead: the release holds
    no measurement of the pair.

    The options are checked when the object is made: a bad value raises one
    :class:`~ddssp.estimators.params.InvalidParameterError` naming it.

    Attributes
    ----------
    boot : int
        Bootstrap replicates, at least 2 (the measurement bootstrap without the DP part draws none,
        and then accepts 0).
    seed : int, numpy.random.Generator or None
        Seeds a numpy Generator for the bootstrap and the model rows (post-processing randomness,
        not DP noise).
    dp_noise : bool
        Include the DP-noise part. With ``bootstrap="mechanism"``, False refits on the drawn rows'
        exact marginals (sampling only).
    sampling : {"sandwich", "ols", "none"}
        The sampling part (see above). Not used by the mechanism bootstrap.
    boot_iters : int or None
        Iteration budget of each re-estimation (None: ``BOOT_ITERS``). Not used by the mechanism
        bootstrap.
    sampling_rows : int
        Rows drawn from the released model for the sandwich's meat (at least 100).
    bootstrap : {"measurements", "mechanism"}
        Which bootstrap (see above).
    interval : {"normal", "bc-normal", "basic", "percentile"}
        ``"normal"`` (estimate +- z_{(1+ci)/2} * stderr; the default), ``"bc-normal"`` (centre moved
        by the replicates' bias against the fit on the released model; with the measurement
        bootstrap it needs ``dp_method="bootstrap"``), ``"basic"`` or
        ``"percentile"`` (replicate quantiles; mechanism bootstrap only):
        :func:`~ddssp.estimators.mechanism_bootstrap.bootstrap_interval`.
    unmeasured : {"model", "infinite"}
        For a coefficient whose pair is unmeasured (see above): ``"model"`` (default) the
        model-based interval, ``"infinite"`` (-inf, inf) and no model part for any coefficient.
        (``"keep"`` is accepted for ``"model"``.) Either way ``conf_int()`` has ``pair_measured``
        and ``basis`` columns.
    dp_method : {"projected", "delta", "bootstrap"}
        The DP part of measured coefficients with ``bootstrap="measurements"``: the projected draws
        (default), the closed-form delta method or the parametric bootstrap (see above).
    """

    boot: int = 100
    seed: int | np.random.Generator | None = None
    dp_noise: bool = True
    sampling: str = "sandwich"
    boot_iters: int | None = None
    sampling_rows: int = 50_000
    bootstrap: str = "measurements"
    interval: str = "normal"
    unmeasured: str = "model"
    dp_method: str = "projected"

    def __post_init__(self) -> None:
        validate({f.name: getattr(self, f.name) for f in dataclasses.fields(self)}, _OPTION_CONSTRAINTS)
        if self.unmeasured == "keep":  # the earlier name of the model-based interval
            object.__setattr__(self, "unmeasured", "model")
        if (self.dp_noise or self.bootstrap == "mechanism") and self.boot < 2:
            raise InvalidParameterError(
                "boot", f"boot must be an integer >= 2 (bootstrap replicates); got {self.boot!r}"
            )
        if self.bootstrap == "measurements" and self.interval in ("basic", "percentile"):
            raise InvalidParameterError(
                "interval",
                f"interval {self.interval!r} needs bootstrap='mechanism' (the measurement bootstrap's "
                "sampling part is analytic, not replicates)",
            )
        if self.bootstrap == "measurements" and self.interval == "bc-normal" and self.dp_method != "bootstrap":
            raise InvalidParameterError(
                "interval",
                "interval 'bc-normal' needs replicates: give dp_method='bootstrap' (--dp-method bootstrap) "
                "or bootstrap='mechanism'",
            )


# ------------------------------------------------------------------------------------- the fit
def fit_intervals(est: Any, source: Any, level: float, options: IntervalOptions, replicates: Any = None) -> None:
    """Attach standard errors and ``level`` confidence intervals to a fitted DD-SSP estimator.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted on ``source`` (its point estimate).
    source : Release or marginal source
        What it was fitted on. With ``dp_noise=False`` and ``bootstrap="measurements"``, any marginal
        source ``fit`` accepts (without a model to draw rows from, ``"sandwich"`` gives the
        ``"ols"`` variance); otherwise a release.
    level : float
        Confidence level, in (0, 1).
    options : IntervalOptions
        How (see there).
    replicates : list of GraphicalModel or MechanismReplicates or None
        Bootstrap replicates already made from this release, to share them between several fits:
        models re-estimated by :func:`ddssp.estimators.bootstrap.bootstrap_models`, or with
        ``bootstrap="mechanism"`` a :class:`~ddssp.estimators.mechanism_bootstrap.MechanismReplicates`.

    Raises
    ------
    DDSSPError
        For too few replicates, or a source without what the chosen bootstrap needs.

    Warns
    -----
    BootstrapConvergenceWarning
        When the median DP-noise re-estimation was still lowering its loss by more than AIM's
        ``FINAL_TOL`` over its last ``TOL_BLOCK`` steps: the DP part is then understated.
    """
    t0 = time.perf_counter()
    if options.bootstrap == "mechanism":
        parts = _mechanism_parts(est, source, level, options, replicates)
    else:
        parts = _measurement_parts(est, source, level, options, replicates)
    theta, se, se_dp, se_samp, reps, info, est.intercept_data_var_ = parts
    if options.bootstrap == "mechanism":
        est.stderr_model_ = np.zeros(len(theta))
    info["seconds"] = time.perf_counter() - t0
    est.ci_unmeasured_ = options.unmeasured
    est.pair_measured_ = measured_pairs(est.encoding_, source)
    est.ci_basis_ = np.where(
        est.pair_measured_, "measured", "model" if options.unmeasured == "model" else "none"
    ).astype(object)
    # a coefficient whose feature holds no rows in the source is not estimable: the minimum-norm
    # solution gives it 0 with no spread, which is no interval
    empty = empty_coefficients(est)
    est.ci_basis_[empty] = "empty"
    se, se_dp, se_samp = (np.where(empty, np.nan, v) for v in (se, se_dp, se_samp))
    est.stderr_model_ = np.where(empty, np.nan, getattr(est, "stderr_model_", np.zeros(len(theta))))
    est.boot_coefs_ = reps
    est.stderr_dp_ = se_dp
    est.stderr_sampling_ = se_samp
    est.intercept_stderr_ = float(se[0])
    est.stderr_ = se[1:]
    est.ci_ = level
    est.ci_interval_ = options.interval
    # the bias a "bc-normal" interval subtracts: the replicates' mean against the fit on the
    # released model (the bootstrap world's truth, = the point estimate)
    est.ci_bias_ = reps.mean(axis=0) - theta if len(reps) else np.zeros(len(theta))
    est.ci_info_ = info
    est.ci_pull_ = np.where(empty, 0.0, floor_pull(est))
    info["floor_pull"] = bool(np.any(est.ci_pull_))
    est.ci_table_ = interval_table(est, level)


def empty_coefficients(est: Any) -> np.ndarray:
    """Per coefficient (intercept first): does its encoded feature hold no rows in the fitted source?

    A one-hot level with no rows (a level the release marks empty, so its model holds no mass
    there) or a numeric feature that is 0 on every row has a zero column in X, so its diagonal of
    X^T X is 0 (at most :data:`~ddssp.estimators.ddssp_math.EIG_TOL` times the largest diagonal
    entry times the number of coefficients, the tolerance of the solve): the data say nothing
    about its coefficient, which the minimum-norm solution sets to 0.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted (its ``suffstats_`` are read).

    Returns
    -------
    numpy.ndarray
        Booleans, one per coefficient, the intercept first (never empty).
    """
    enc: Encoding = est.encoding_
    diag = np.abs(np.diag(np.asarray(est.suffstats_.xtx, dtype=float)))
    tol = EIG_TOL * max(float(diag.max(initial=0.0)), np.finfo(float).tiny) * len(diag)
    out = (diag <= tol) & np.array([nm != INTERCEPT for nm in enc.names])
    return out if enc.intercept else np.concatenate([[False], out])


def _coefficients(est: Any) -> np.ndarray:
    return np.concatenate([[est.intercept_], est.coef_])


def _measurement_parts(est: Any, source: Any, level: float, options: IntervalOptions, replicates: Any) -> tuple:
    """The DP part (the projected or closed-form delta method, or the measurement bootstrap) plus
    the model-based part and the analytic sampling part."""
    from ddssp.dp import make_rng
    from ddssp.estimators.bootstrap import BOOT_ITERS

    boot_iters = BOOT_ITERS if options.boot_iters is None else int(options.boot_iters)
    # separate streams: the sampling part's model rows do not depend on whether a bootstrap ran
    boot_rng, samp_rng = make_rng(options.seed).spawn(2)
    enc: Encoding = est.encoding_
    theta = _coefficients(est)
    p = len(theta)
    var_dp = np.zeros(p)
    reps = np.zeros((0, p))
    info: dict[str, Any] = {"level": level, "dp_noise": bool(options.dp_noise), "sampling": options.sampling}
    var_model = np.zeros(p)
    u = intercept_weights(est)  # the data-unit intercept is c * (u . theta) + d
    var_u = {"dp": 0.0, "model": 0.0, "sampling": 0.0}
    info["ridge"] = ridge_used(est)  # the intervals are around the solution at this ridge
    info["floor_directions"] = int(getattr(est, "ridge_info_", {}).get("directions", 0))  # and this floor
    if options.dp_noise:
        measured = measured_pairs(enc, source)
        info["dp_method"] = options.dp_method
        meas = getattr(source, "measurements", None)
        if options.dp_method in ("delta", "projected"):
            from ddssp.estimators.ddssp_delta import delta_dp_variance, projected_dp_draws

            if meas is None:
                raise DDSSPError(
                    "the DP part of the intervals needs a release (its measurements); "
                    "use dp_noise=False for an exact-marginal source"
                )
            if options.dp_method == "delta":
                var_dp = delta_dp_variance(est, list(meas), u[None, :])
                var_dp, var_u["dp"] = var_dp[:p], float(var_dp[p])
            else:
                draws = projected_dp_draws(est, list(meas), source, boot_rng)
                var_dp, var_u["dp"] = draws.var(axis=0, ddof=1), float((draws @ u).var(ddof=1))
        if options.dp_method == "bootstrap":
            reps = _bootstrap_refits(est, source, options, replicates, boot_rng, boot_iters, info)
            var_dp, var_u["dp"] = reps.var(axis=0, ddof=1), float((reps @ u).var(ddof=1))
        if options.unmeasured == "model" and meas is not None:
            from ddssp.estimators.ddssp_delta import model_error_weight, unmeasured_sensitivity

            # the imputed pairs that hold the target (an imputed pair of two features moves the
            # coefficients too; measured, leaving it out kept coverage: docs/benchmarks.md)
            weight = model_error_weight(source, list(meas))
            var_model = unmeasured_sensitivity(est, list(meas), weight, u[None, :])[0]
            var_model, var_u["model"] = var_model[:p], float(var_model[p])
            info.update(model_based=int(np.sum(~measured)), model_error_kappa=float(weight.kappa))
    est.stderr_model_ = np.sqrt(var_model)
    if options.sampling == "none":
        var_samp = np.zeros(p)
    else:
        cov = sampling_covariance(est, source, options.sampling, samp_rng, options.sampling_rows)
        var_samp, var_u["sampling"] = np.clip(np.diag(cov), 0.0, None), max(float(u @ cov @ u), 0.0)
    info.update(bootstrap="measurements", interval=options.interval)
    se = np.sqrt(var_dp + var_model + var_samp)
    var_u["total"] = var_u["dp"] + var_u["model"] + var_u["sampling"]
    return theta, se, np.sqrt(var_dp), np.sqrt(var_samp), reps, info, var_u


def _bootstrap_refits(
    est: Any, source: Any, options: IntervalOptions, replicates: Any, rng: Any, boot_iters: int, info: dict
) -> np.ndarray:
    """Coefficients refitted on ``options.boot`` measurement-bootstrap models (or the given ones)."""
    from ddssp.estimators.bootstrap import TOL_BLOCK, ModelSource, iter_bootstrap_models
    from ddssp.marginals.aim import FINAL_TOL

    refit_info: list = []
    # replicates are made and fitted one at a time: one model in memory, not ``boot``
    models = (
        replicates
        if replicates is not None
        else iter_bootstrap_models(source, options.boot, rng, boot_iters, info=refit_info)
    )
    n_models = len(replicates) if replicates is not None else int(options.boot)
    if n_models < 2:
        raise DDSSPError(f"the DP-noise bootstrap needs at least 2 replicates, got {n_models}")
    reps = _refit_all(est, (ModelSource(source.schema, m) for m in models), est.encoding_)
    info.update(boot=n_models, boot_iters=boot_iters)
    if refit_info:
        drop = float(np.median([r["last_drop"] for r in refit_info]))
        info.update(dp_last_drop=drop, dp_converged=bool(drop <= FINAL_TOL))
        if drop > FINAL_TOL:
            warnings.warn(
                f"the DP-noise re-estimations had not converged after {boot_iters} iterations (median "
                f"loss still falling {100 * drop:.2g}% over the last {TOL_BLOCK} steps, more than "
                f"AIM's {100 * FINAL_TOL:g}% stopping rule), so the bootstrap's DP part of the standard errors is "
                f"understated (on Adult at eps 1, 150 iterations gave about 0.65x the coefficient spread of "
                f"a 3,000-iteration re-estimation); raise --boot-iters (boot_iters= in Python; 1000 gave "
                f"about 0.9x there) or use "
                f"--boot-method mechanism (bootstrap='mechanism')",
                BootstrapConvergenceWarning,
                stacklevel=5,
            )
    return reps


def _mechanism_parts(est: Any, source: Any, level: float, options: IntervalOptions, replicates: Any) -> tuple:
    """The mechanism bootstrap: the whole release simulated (see :class:`IntervalOptions`)."""
    from ddssp.dp import make_rng
    from ddssp.estimators.bootstrap import ModelSource
    from ddssp.estimators.mechanism_bootstrap import MechanismReplicates, mechanism_replicates
    from ddssp.estimators.suffstats import ExactMarginals

    rng = make_rng(options.seed)
    enc: Encoding = est.encoding_
    theta = _coefficients(est)
    if replicates is None:
        replicates = mechanism_replicates(source, options.boot, rng, dp=options.dp_noise)
    if not isinstance(replicates, MechanismReplicates):
        raise DDSSPError("replicates for bootstrap='mechanism' must come from mechanism_replicates()")
    if options.dp_noise and len(replicates.models) < 2:
        raise DDSSPError(f"the mechanism bootstrap needs at least 2 replicates, got {len(replicates.models)}")
    samp = _refit_all(est, [ExactMarginals(c, source.schema) for c in replicates.samples], enc)
    var_samp = samp.var(axis=0, ddof=1)
    if options.dp_noise:
        reps = _refit_all(est, [ModelSource(source.schema, m) for m in replicates.models], enc)
        var_tot = reps.var(axis=0, ddof=1)
    else:
        reps, var_tot = samp, var_samp
    info: dict[str, Any] = {
        "level": level,
        "dp_noise": bool(options.dp_noise),
        "sampling": "in the bootstrap",
        "bootstrap": "mechanism",
        "interval": options.interval,
        "boot": len(reps),
        "rows": replicates.rows,
    }
    se_dp = np.sqrt(np.clip(var_tot - var_samp, 0.0, None))
    u = intercept_weights(est)
    tot_u, samp_u = float((reps @ u).var(ddof=1)), float((samp @ u).var(ddof=1))
    var_u = {"dp": max(tot_u - samp_u, 0.0), "model": 0.0, "sampling": samp_u, "total": tot_u}
    return theta, np.sqrt(var_tot), se_dp, np.sqrt(var_samp), reps, info, var_u


def _refit_all(est: Any, sources: Any, enc: Encoding) -> np.ndarray:
    """Coefficients (intercept first) of a point-fit copy of ``est`` refitted on each marginal source."""
    copy = point_copy(est, enc)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PSD clipping of noisy replicates is expected
        for src in sources:
            copy.fit(src, enc.target)
            out.append(_coefficients(copy))
    return np.array(out).reshape(len(out), len(enc.names) + (0 if enc.intercept else 1))


def measured_pairs(enc: Encoding, source: Any) -> np.ndarray:
    """Per coefficient (intercept first): is its (feature column, target) pair inside a measured clique?

    Parameters
    ----------
    enc : Encoding
        The fitted encoding.
    source : marginal source, list of measurements or None
        A source's ``measurements``, or the list itself. True throughout for a source without
        measurements (exact marginals).

    Returns
    -------
    numpy.ndarray
        Booleans, one per coefficient, the intercept first.
    """
    cols = ([None] if enc.intercept else []) + [a.column for a in enc.attributes for _ in a.names]
    meas = source if isinstance(source, list) or source is None else getattr(source, "measurements", None)
    if meas is None:
        return np.ones(len(cols) + (0 if enc.intercept else 1), dtype=bool)
    cliques = [set(m.clique) for m in meas]
    out = [c is None or any({c, enc.target} <= m for m in cliques) for c in cols]
    return np.array(([True] if not enc.intercept else []) + out, dtype=bool)


def interval_table(est: Any, level: float | None = None) -> pd.DataFrame:
    """Coefficient table with standard errors and confidence intervals of a DD-SSP estimator.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted with ``ci``.
    level : float or None
        Confidence level, in (0, 1) (default: the estimator's ``ci``).

    Returns
    -------
    pandas.DataFrame
        One row per coefficient (intercept first): name, estimate, stderr, stderr_dp,
        stderr_model (the model's imputation error; 0 with ``unmeasured="infinite"``),
        stderr_sampling, ci_low, ci_high, pair_measured, basis (``"measured"``: the pair is in a
        measured clique; ``"model"``: a model-based interval for an unmeasured pair, with the
        model's imputation error in it; ``"none"``: with ``unmeasured="infinite"``, an
        unmeasured pair's interval (-inf, inf); ``"empty"``: the feature holds no rows in the source
        (:func:`empty_coefficients`), so the coefficient is not estimable and its standard errors
        and interval are NaN), shrinkage (:func:`~.ddssp_ridge.floor_shrinkage`: every standard
        error holds the fit's penalty P fixed), pull (:func:`~.ddssp_ridge.floor_pull`: with the
        default ridge, the release's estimate of how far the noise floor moved the coefficient; each
        side of the interval is widened by its absolute value, so the interval is for the
        unpenalised coefficient; 0 with a ridge given explicitly, whose interval is for the
        coefficient at that penalty, c (X^T X + P)^-1 X^T y).

    Raises
    ------
    DDSSPError
        Before a fit with ``ci``, or for a level outside (0, 1).
    """
    if not hasattr(est, "stderr_"):
        raise DDSSPError(
            f"no standard errors: construct the estimator with ci=0.95 (e.g. {type(est).__name__}(ci=0.95)) and fit"
        )
    from scipy.stats import norm

    from ddssp.estimators.mechanism_bootstrap import bootstrap_interval

    level = est.ci_ if level is None else _check_level(level)
    z = float(norm.ppf(0.5 + level / 2.0))
    est_ = _coefficients(est)
    se = np.concatenate([[est.intercept_stderr_], est.stderr_])
    how = est.ci_interval_
    if how in ("basic", "percentile"):
        lo, hi = bootstrap_interval(est_, est.boot_coefs_, level, how)
    else:
        mid = est_ - est.ci_bias_ if how == "bc-normal" else est_
        lo, hi = mid - z * se, mid + z * se
    pull = getattr(est, "ci_pull_", np.zeros(len(est_)))
    lo, hi = lo - np.abs(pull), hi + np.abs(pull)  # the default floor's estimated pull (floor_pull)
    measured = est.pair_measured_
    if est.ci_unmeasured_ == "infinite":
        lo, hi = np.where(measured, lo, -np.inf), np.where(measured, hi, np.inf)
    basis = getattr(est, "ci_basis_", None)
    if basis is None:
        basis = np.where(measured, "measured", "model" if est.ci_unmeasured_ != "infinite" else "none")
    empty = np.asarray(basis) == "empty"  # not estimable: no interval
    lo, hi = np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)
    return pd.DataFrame(
        {
            "name": [INTERCEPT] + list(est.feature_names_in_),
            "estimate": est_,
            "stderr": se,
            "stderr_dp": est.stderr_dp_,
            "stderr_model": getattr(est, "stderr_model_", np.zeros(len(est_))),
            "stderr_sampling": est.stderr_sampling_,
            "ci_low": lo,
            "ci_high": hi,
            "pair_measured": measured,
            "basis": list(basis),
            "shrinkage": floor_shrinkage(est),
            "pull": pull,
        }
    )


def sampling_covariance(est: Any, source: Any, how: str, rng: np.random.Generator, rows: int) -> np.ndarray:
    """The sampling covariance of theta (intercept first) from the released moments.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted on ``source``.
    source : marginal source
        With a ``model`` that can ``sample`` rows, ``"sandwich"`` uses them; otherwise the
        homoskedastic variance from the released second moments.
    how : {"sandwich", "ols"}
        The variance.
    rng : numpy.random.Generator
        For the model rows.
    rows : int
        Model rows for the sandwich's meat.

    Returns
    -------
    numpy.ndarray
        Shape (coefficients, coefficients), the intercept first (a zero row and column for an
        encoding without one); its diagonal (clipped at 0) is each coefficient's sampling variance,
        ``w' S w`` that of a linear combination ``w . theta``.
    """
    enc: Encoding = est.encoding_
    stats: SuffStats = est.suffstats_
    n = float(stats.n)
    pdim = len(enc.names)
    A = (stats.xtx + stats.xtx.T) / 2.0 + penalty_used(est)
    Ainv = psd_pinv(A)
    c = coefficient_scale(est)
    beta = _coefficients(est) / c
    if enc.intercept is False:
        beta = est.coef_ / c
    model = getattr(source, "model", None)
    if how == "sandwich" and model is not None and hasattr(model, "sample"):
        codes = model.sample(int(rows), rng)
        if est.missing_target == "drop":  # the rows the fit used
            codes = codes[~codes[enc.target].isin(enc.unobserved_target_codes)]
        X = enc.transform(codes)
        e = enc.target_vector(codes) - X @ beta
        meat = (X * (e**2)[:, None]).T @ X * (n / max(len(codes), 1))
    else:  # homoskedastic: s^2 A from the released second moments
        rss = stats.yty - 2.0 * float(beta @ stats.xty) + float(beta @ stats.xtx @ beta)
        s2 = max(rss, 0.0) / max(n - pdim, 1.0)
        meat = s2 * A
    cov = Ainv @ meat @ Ainv * c**2
    return cov if enc.intercept else np.pad(cov, ((1, 0), (1, 0)))


def intercept_weights(est: Any) -> np.ndarray:
    """The weights u of the data-unit intercept ``c * (u . theta) + d`` (theta: the encoded
    coefficients, intercept first): ``u = (1, b)``, b the shift each numeric feature's rescaling adds
    (0 for one-hot terms; :meth:`~ddssp.estimators.ddssp.DDSSPLinearRegression._units`).

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted.

    Returns
    -------
    numpy.ndarray
        One weight per coefficient, the intercept first.
    """
    return np.concatenate([[1.0], est._units()[1]])


def intercept_data_interval(est: Any, level: float | None = None) -> tuple[float, float, float]:
    """Standard error and interval of the intercept in data units, ``c * (u . theta) + d``.

    A numeric feature rescaled as ``a * v + b`` shifts the data-unit intercept by ``b`` times its
    coefficient (:func:`intercept_weights`), so its variance is ``c^2 u' Sigma u`` with Sigma the
    coefficients' covariance, which :func:`fit_intervals` sums part by part in
    ``intercept_data_var_`` (on the scale of ``u . theta``): the DP part from the projected draws or
    the bootstrap replicates projected on u, or the delta method's gradient of ``u . theta``; the
    model-based part the same way; the sandwich's ``u' S u``. The interval is built as
    :func:`interval_table` builds the encoded ones (``"basic"``/``"percentile"``: from the replicates
    projected on u; ``"bc-normal"``: centre moved by ``u`` times the bias), then mapped to data units.
    With no numeric feature (b = 0) it is the encoded intercept's interval times c, shifted by d.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted with ``ci``.
    level : float or None
        Confidence level, in (0, 1) (default: the estimator's ``ci``).

    Returns
    -------
    stderr, ci_low, ci_high : float
        In data units; NaN when a coefficient it weighs is not estimable (basis ``"empty"``), an
        unbounded interval with ``unmeasured="infinite"`` when it weighs an unmeasured pair's.
    """
    from scipy.stats import norm

    from ddssp.estimators.mechanism_bootstrap import bootstrap_interval

    level = est.ci_ if level is None else _check_level(level)
    u = intercept_weights(est)
    c = est._units()[2]
    mid = float(_coefficients(est) @ u)
    shift = est.intercept_data_ - c * mid
    se = float(np.sqrt(est.intercept_data_var_["total"]))
    how = est.ci_interval_
    if how in ("basic", "percentile"):
        lo_, hi_ = bootstrap_interval(np.array([mid]), (est.boot_coefs_ @ u)[:, None], level, how)
        lo, hi = float(lo_[0]), float(hi_[0])
    else:
        z = float(norm.ppf(0.5 + level / 2.0))
        centre = mid - float(est.ci_bias_ @ u) if how == "bc-normal" else mid
        lo, hi = centre - z * se, centre + z * se
    weighed = u != 0
    if np.any(weighed & (np.asarray(est.ci_basis_) == "empty")):
        return np.nan, np.nan, np.nan
    if est.ci_unmeasured_ == "infinite" and np.any(weighed & ~np.asarray(est.pair_measured_)):
        lo, hi = -np.inf, np.inf
    return se * abs(c), lo * c + shift, hi * c + shift
