"""DD-SSP: linear and (Chebyshev-approximate) logistic regression from released marginals.

Ferrando et al., "Private regression via data-dependent sufficient statistic perturbation"
(sections 3-6; docs/method/ddssp.md). The fit reads only marginals of a *marginal source*
(a :class:`ddssp.Release`, or :class:`ddssp.estimators.suffstats.ExactMarginals` for the non-private
reference), builds Z^T Z (:func:`ddssp.estimators.suffstats.sufficient_statistics`) and solves:

- linear:   theta = (X^T X + P)^{-1} X^T y, P the penalty (by default the noise floor of
  :func:`~ddssp.estimators.ddssp_ridge.floor_penalty`, 0 on a well-measured release; ``ridge * I'``
  for a given ridge, I' = identity without the intercept entry);
- logistic: phi(s) = -log(1 + exp(-s)) is replaced on [-R, R] by its degree-2 Chebyshev interpolant
  b0 + b1 s + b2 s^2 (power-basis coefficients from numpy.polynomial; for R = 6: -log 2, 0.5,
  -0.0707575). The approximate log-likelihood n b0 + b1 theta^T X^T y + b2 theta^T X^T X theta is
  maximised by theta = -b1 / (2 b2) (X^T X + P)^{-1} X^T y. (FIX: the authors' code used the
  Chebyshev-series coefficients as power coefficients, which shrinks theta by 1/3.)

Both estimators share :class:`DDSSPEstimator`: scikit-learn conventions (every option a constructor
parameter, checked against one ``_parameter_constraints`` table at the start of ``fit``), one ``fit``,
and a hook (:meth:`DDSSPEstimator._chebyshev_step`) for the logistic model's Chebyshev approximation.
With ``ci=level`` the fit also computes standard errors and intervals (:func:`.ddssp_intervals.fit_intervals`,
configured by an :class:`~.ddssp_intervals.IntervalOptions`, ``intervals=``). The fit is
post-processing of the release: it spends no privacy budget.

A noisy X^T X that is still indefinite is projected onto the PSD cone (``psd="clip"``: negative
eigenvalues to 0, then the minimum-norm solution) or shifted by the smallest ridge that makes it
positive definite (``psd="ridge"``), with a warning saying which and by how much.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd

from ddssp._warnings import tidy_warnings
from ddssp.dp import Ledger, PrivacyRecord
from ddssp.errors import DDSSPError
from ddssp.estimators.base import DPClassifier, DPEstimator, DPRegressor, as_matrix
from ddssp.estimators.ddssp_intervals import (
    INTERVAL_ATTRIBUTES,
    LEVEL,
    BootstrapConvergenceWarning,  # noqa: F401 (public here)
    IntervalOptions,
    fit_intervals,
    intercept_data_interval,
    interval_table,
    measured_pairs,
)
from ddssp.estimators.ddssp_math import chebyshev_coefficients
from ddssp.estimators.ddssp_ridge import RIDGE, default_ridge, penalised_solve
from ddssp.estimators.design import INTERCEPT, Encoding, level_values, positive_code
from ddssp.estimators.params import Constraint, InvalidParameterError, instance_of, number, one_of
from ddssp.estimators.suffstats import SuffStats, check_source, observed_target, sufficient_statistics


# ------------------------------------------------------------------------------------- estimators
def source_privacy(source: Any) -> PrivacyRecord:
    """The privacy record of a fit on a marginal source: post-processing, so it costs what the source cost.

    Parameters
    ----------
    source : Release or marginal source
        A release contributes its ledger (rho, entries), its stated (eps, delta) and its noise
        description and stamp; another source only the eps, delta and rho it states (None when it
        states none, e.g. exact marginals).

    Returns
    -------
    PrivacyRecord
    """
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


def _names(v: Any) -> bool:
    """A sized iterable of column names (not a single string or a mapping)."""
    sized = not isinstance(v, (str, bytes, Mapping)) and hasattr(v, "__iter__") and hasattr(v, "__len__")
    return sized and all(isinstance(c, str) for c in v)


class DDSSPEstimator(DPEstimator):
    """What DD-SSP linear and logistic regression share: parameters, their constraints, ``fit``,
    the encoding from the source's schema, Z^T Z, named coefficients, intervals and predictions.

    ``fit(source, target=...)`` builds X^T X and X^T y from the source's marginals, solves the
    normal equations (times the factor :meth:`_chebyshev_step` returns: 1 for linear regression,
    -b1 / (2 b2) for the logistic model), and with ``ci`` adds standard errors and intervals
    (:func:`~ddssp.estimators.ddssp_intervals.fit_intervals`).

    Parameters
    ----------
    ridge : None, "floor", "auto", float or ndarray
        None (default: "floor", :func:`~.ddssp_ridge.floor_penalty`, with ``ci`` each interval widened
        by the floor's pull, :func:`~.ddssp_ridge.floor_pull`), "auto", an L2 penalty >= 0 off the
        intercept or a matrix.
    features : sequence of str or None
        Feature columns (None: every column but the target).
    encoding : Encoding, mapping or None
        A ready :class:`Encoding`, or ``{column: "onehot" | "numeric"}`` overrides.
    psd : {"clip", "ridge"}
        How an indefinite noisy X^T X is repaired: "clip" (project onto the PSD cone) or "ridge".
    missing_target : {"drop", "keep"}
        Rows whose target is missing (its missing level) are left out of the fit ("drop", default:
        X^T X and X^T y from the model's marginals of the rows with an observed target), or kept
        with the target coded as the centre of its range ("keep", with a warning).
    ci : float or None
        Confidence level in (0, 1), e.g. 0.95: ``fit`` also computes standard errors and intervals
        (``conf_int()``, and ``stderr``, ``ci_low``, ``ci_high`` columns in ``coef_table()``).
        None (default): the point fit only.
    intervals : IntervalOptions or None
        How the intervals are computed (bootstrap replicates, seed, ...; see
        :class:`~ddssp.estimators.ddssp_intervals.IntervalOptions`); None: its defaults. Only
        with ``ci``.
    """

    kind: ClassVar[str] = "linear"

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        "ridge": RIDGE,
        "features": Constraint(lambda v: v is None or _names(v), "a list of column names or None"),
        "encoding": instance_of(
            Encoding, Mapping, none=True, says="an Encoding, a {column: 'onehot'|'numeric'} dict, or None"
        ),
        "psd": one_of("clip", "ridge"),
        "missing_target": one_of("drop", "keep"),
        "ci": Constraint(lambda v: v is None or LEVEL.accepts(v), LEVEL.says),
        "intervals": instance_of(IntervalOptions, none=True, says="an IntervalOptions or None"),
    }

    def __init__(
        self,
        ridge: Any = None,
        features: Sequence[str] | None = None,
        encoding: Any = None,
        psd: str = "clip",
        missing_target: str = "drop",
        *,
        ci: float | None = None,
        intervals: IntervalOptions | None = None,
    ):
        self.ridge = ridge
        self.features = features
        self.encoding = encoding
        self.psd = psd
        self.missing_target = missing_target
        self.ci = ci
        self.intervals = intervals

    @tidy_warnings
    def fit(self, source: Any, target: str | None = None, *, replicates: Any = None, **misplaced: Any) -> Self:
        """Fit from a release (or any marginal source); with ``ci``, also standard errors and intervals.

        Parameters
        ----------
        source : Release or marginal source
            The release (post-processing: no privacy cost), or e.g. ``ExactMarginals``. Intervals
            other than ``IntervalOptions(dp_noise=False)`` need a release.
        target : str, optional
            The target column (default: the release's ``target``).
        replicates : list of GraphicalModel or MechanismReplicates or None
            Only with ``ci``: bootstrap replicates already made from this release, to share them
            between several fits (see :func:`~ddssp.estimators.ddssp_intervals.fit_intervals`).
        **misplaced
            Not accepted: ``ci`` and the interval options are constructor parameters (the error
            says how to give them).

        Returns
        -------
        self

        Raises
        ------
        DDSSPError
            For a parameter outside its constraint (:class:`~ddssp.estimators.params.InvalidParameterError`,
            naming it), a source that is not a marginal source, or a target or features it lacks.
        """
        if misplaced:
            self._refuse_misplaced(misplaced)
        self._validate_params()
        if self.ci is None and (self.intervals is not None or replicates is not None):
            what = "intervals" if self.intervals is not None else "replicates"
            raise InvalidParameterError(
                what, f"{what} apply to standard errors and intervals only: give ci=0.95 (or another level) too"
            )
        for name in INTERVAL_ATTRIBUTES:  # a refit without ci keeps no intervals of an earlier fit
            self.__dict__.pop(name, None)
        scale = self._chebyshev_step()
        enc, stats = self._fit_stats(source, target)
        theta = scale * self._solve(stats, enc)
        self._finish(theta, enc, stats, source)
        self._set_classes(enc, source)
        if self.ci is not None:
            fit_intervals(self, source, float(self.ci), self.intervals or IntervalOptions(), replicates)
        return self

    def _refuse_misplaced(self, given: dict[str, Any]) -> None:
        """One clear error for ``fit(..., ci=..., boot=...)``: those go to the constructor."""
        moved = {"ci"} | {f.name for f in dataclasses.fields(IntervalOptions)}
        unknown = sorted(set(given) - moved)
        if unknown:
            raise TypeError(f"fit() got an unexpected keyword argument {unknown[0]!r}")
        opts = ", ".join(f"{k}={v!r}" for k, v in given.items() if k != "ci")
        ci = given.get("ci", self.ci if self.ci is not None else 0.95)
        example = f"{type(self).__name__}(ci={ci!r}" + (f", intervals=IntervalOptions({opts}))" if opts else ")")
        raise DDSSPError(
            f"fit() takes the data only; the confidence level and interval options are constructor "
            f"parameters: {example}.fit(source, target=...)"
        )

    def _chebyshev_step(self) -> float:
        """The factor theta = factor * (the least-squares solution): 1 for linear regression.

        The logistic model overrides this hook with its Chebyshev approximation."""
        return 1.0

    def _set_classes(self, enc: Encoding, source: Any) -> None:
        """Classifiers record their classes after the fit; a regression has none."""

    def conf_int(self, level: float | None = None) -> pd.DataFrame:
        """Coefficient table with standard errors and confidence intervals (after a fit with ``ci``).

        Parameters
        ----------
        level : float or None
            Confidence level, in (0, 1) (default: ``ci``).

        Returns
        -------
        pandas.DataFrame
            One row per coefficient (intercept first): name, estimate, stderr, stderr_dp,
            stderr_sampling, ci_low, ci_high, pair_measured, basis (:func:`.ddssp_intervals.interval_table`).

        Raises
        ------
        DDSSPError
            Before a fit with ``ci``, or for a level outside (0, 1).
        """
        return interval_table(self, level)

    def _make_encoding(self, source: Any, target: str | None) -> Encoding:
        enc, positive = self.encoding, getattr(self, "positive", None)  # a logistic model's class 1
        if isinstance(enc, Encoding):
            if target is not None and target != enc.target:
                raise DDSSPError(f"target {target!r} differs from the encoding's target {enc.target!r}")
            if enc.kind != self.kind:
                raise DDSSPError(f"the encoding was built for a {enc.kind} model, this is a {self.kind} model")
            if self.features is not None and list(self.features) != enc.features:
                raise DDSSPError("features given both in the estimator and (differently) in the encoding")
            if positive is not None and positive_code(enc.schema.column(enc.target), positive) != enc.positive:
                raise DDSSPError(
                    f"positive={positive!r} differs from the encoding's positive level {enc.positive_label!r}"
                )
            return enc
        if target is None:
            target = getattr(source, "target", None)
            if target is None:
                raise DDSSPError("fit needs the target column: fit(source, target='...')")
        return Encoding(source.schema, self.features, target, kind=self.kind, overrides=enc, positive=positive)

    def _fit_stats(self, source: Any, target: str | None) -> tuple[Encoding, SuffStats]:
        check_source(source)
        enc = self._make_encoding(source, target)
        how = self.missing_target
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
        self._auto_source = source  # what the fit read: the ridge rule reads its measurements
        if not stats.n > 0:
            raise DDSSPError(f"the source's total is {stats.n}; there is no data to fit")
        return enc, stats

    def _solve(self, stats: SuffStats, enc: Encoding) -> np.ndarray:
        out = penalised_solve(default_ridge(self.ridge), stats, enc, self._auto_source, self.psd)
        self.ridge_, self.penalty_, self.ridge_info_, theta, self.solve_info_ = out
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
                col = self.schema_.column(att.column)
                vals = level_values(col)
                finite = vals[np.isfinite(vals)]
                lo, hi = float(finite.min()), float(finite.max())
                slope = 2.0 / (hi - lo) if hi > lo else 0.0
                a.append(slope)
                b.append(-1.0 - lo * slope)
                # a date column's numbers are days since 1970-01-01, a clock time's minutes since midnight
                per = {"date": "per day of", "timestamp": "per day of", "time": "per minute of"}
                unit.append(f"{per.get(getattr(col, 'unit', None), 'per 1')} {att.column}")
            else:
                first = self._first_label(att.column)
                for _ in att.names:
                    a.append(1.0)
                    b.append(0.0)
                    unit.append(f"vs {att.column}={first}")
        c, d = 1.0, 0.0
        if enc.kind == "linear":
            vals = level_values(self.schema_.column(enc.target))
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
        self._check_fitted()
        a, _, c, _, _ = self._units()
        return c * a * self.coef_

    @property
    def intercept_data_(self) -> float:
        """The intercept in the data's units (the prediction when every numeric feature is 0, a date
        feature at 1970-01-01 (day 0), a clock time at midnight, and every categorical one at its first
        level)."""
        self._check_fitted()
        _, b, c, d, _ = self._units()
        return float(c * (self.intercept_ + float(b @ self.coef_)) + d)

    def coef_table(self) -> pd.DataFrame:
        """The coefficients as a table, intercept first, indexed by encoded name.

        Columns: ``coef`` (data units, see :attr:`coef_data_`), ``unit`` (a logistic model's
        intercept row names its positive class, e.g. ``log-odds of y='2' vs the other levels``), ``coef_scaled`` (on the
        encoded scale the model was solved on), ``measured`` (False when no released measurement
        covers the (feature, target) pair: the model imputed it, and such a coefficient is often
        exactly 0), ``level_share`` (one-hot terms: the source's share of the fitted rows at that
        level, from the diagonal of X^T X; NaN for the intercept and numeric terms: a level that
        holds almost no rows, such as an ``'<other>'`` with nothing in it, gets a coefficient that
        rests on noise); after a fit with ``ci=level`` also ``stderr``, ``ci_low`` and ``ci_high``
        in data units (the intercept's from its variance as a combination of the encoded coefficients,
        :func:`~ddssp.estimators.ddssp_intervals.intercept_data_interval`), and ``basis``
        (``"empty"``: a level with no rows, not estimable: 0 as a placeholder, NaN stderr and interval).

        Returns
        -------
        pandas.DataFrame
        """
        self._check_fitted()
        a, _, c, _, unit = self._units()
        names = [INTERCEPT] + list(self.feature_names_in_)
        out = pd.DataFrame(
            {
                "coef": np.concatenate([[self.intercept_data_], self.coef_data_]),
                "unit": [self.encoding_.intercept_unit] + unit,
                "coef_scaled": np.concatenate([[self.intercept_], self.coef_]),
                "measured": self.pair_measured(),
                "level_share": self._level_shares(names),
            },
            index=pd.Index(names, name="name"),
        )
        if hasattr(self, "ci_table_"):
            tab, icept = self.conf_int(), intercept_data_interval(self)  # its variance: c^2 u' Sigma u
            with np.errstate(invalid="ignore"):  # an unbounded interval times a zero target scale
                for j, col in enumerate(("stderr", "ci_low", "ci_high")):
                    rest = tab[col].to_numpy()[1:] * (np.abs(c * a) if col == "stderr" else c * a)
                    out[col] = np.concatenate([[icept[j]], rest])
            out["basis"] = tab["basis"].to_numpy()
        return out

    def _level_shares(self, names: list[str]) -> np.ndarray:
        """Per coefficient name: a one-hot term's share of the fitted rows (its X^T X diagonal over
        n), NaN otherwise. Post-processing of the source's marginals."""
        stats = self.suffstats_
        onehot = {n for att in self.encoding_.attributes if att.how == "onehot" for n in att.names}
        index = {n: i for i, n in enumerate(stats.feature_names)}
        diag = np.diag(stats.xtx)
        return np.array(
            [float(diag[index[n]]) / stats.n if n in onehot and n in index else np.nan for n in names], dtype=float
        )

    def pair_measured(self) -> np.ndarray:
        """Per coefficient (intercept first): is its (feature, target) pair inside a released measurement?

        Always True for a source without measurements (exact marginals).

        Returns
        -------
        numpy.ndarray
            Booleans, the intercept first.
        """
        self._check_fitted()
        return measured_pairs(self.encoding_, self._source_measurements)

    def score(self, X: Any, y: Any, codes: bool = False) -> float:
        """R^2 (linear, in the target's units) or accuracy (logistic) on a table ``X`` and its target ``y``.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            The rows, as for :meth:`predict`.
        y : array-like
            The target's own values (labels for a logistic model).
        codes : bool
            ``X`` and ``y`` hold the schema's integer codes.

        Returns
        -------
        float
        """
        self._check_fitted()
        pred = self.predict(X, codes=codes)
        if self.kind == "linear":
            truth = np.asarray(y, dtype=float)
            if codes:
                truth = level_values(self.schema_.column(self.target_))[truth.astype(int)]
            ok = np.isfinite(truth)
            resid = float(np.sum((truth[ok] - pred[ok]) ** 2))
            total = float(np.sum((truth[ok] - truth[ok].mean()) ** 2))
            return 1.0 - resid / total if total > 0 else float("nan")
        truth = np.asarray(y)
        if not codes:
            frame = pd.DataFrame({self.target_: truth})
            truth = self._codes_of(frame, [self.target_])[self.target_].to_numpy()
        if self.encoding_.one_vs_rest:  # classes_ is [0, 1]: (target != positive, target == positive)
            truth = (truth.astype(int) == self.encoding_.positive).astype(int)
        return float(np.mean(pred == truth))

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
                if getattr(col, "unit", None) is not None:  # a date column reads ISO text
                    full[c] = schema.decode(pd.DataFrame({c: [0]}))[c].iloc[0]
                else:
                    full[c] = col.values[0] if getattr(col, "values", None) is not None else col.labels[0]
        return schema.encode(full[list(schema.names)])[columns]


_FITTED_ATTRIBUTES = """
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
    ridge_, penalty_, ridge_info_ : float, ndarray, dict
        The global ridge used (0 for the floor), the matrix added to X^T X, and what the rule did.
    privacy_ : PrivacyRecord
        Post-processing: what the source cost. For a release, its ledger (rho, entries), its stated
        eps and delta and its noise stamp; for other sources the eps / delta / rho they state, or
        None. ``details["post_processing"]`` is True.
    stderr_, intercept_stderr_, stderr_dp_, stderr_sampling_, ci_, ci_table_, ci_info_, boot_coefs_, pair_measured_, ci_basis_
        With ``ci``: standard errors (aligned with ``coef_``), their DP and sampling parts, the level, what
        ``conf_int()`` returns, how, the bootstrap coefficients (if any), the measured (feature, target) pairs,
        each interval's basis; ``intercept_data_var_``: the parts of the data-unit intercept's variance."""


class DDSSPLinearRegression(DDSSPEstimator, DPRegressor):
    """DD-SSP linear regression from a marginal source.

    ``fit(source, target=...)``; the target is encoded in [-1, 1] (its level values rescaled) for the
    solve; ``predict`` returns the target's own units, ``decision_function`` the encoded scale.

    Parameters
    ----------
    ridge, features, encoding, psd, missing_target, ci, intervals
        As in :class:`DDSSPEstimator`.
    """

    __doc__ = (__doc__ or "") + _FITTED_ATTRIBUTES

    kind = "linear"

    def predict(self, X: Any, codes: bool = False) -> np.ndarray:
        """Predictions in the target's own units.

        :meth:`decision_function` gives them on the encoded [-1, 1] scale the model was solved on.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            A table of raw values, of integer codes (with ``codes=True``), or an encoded matrix.
        codes : bool
            X holds integer codes.

        Returns
        -------
        numpy.ndarray
        """
        return self.encoding_.decode_target(self.decision_function(X, codes=codes))

    def predict_original(self, X: Any, codes: bool = False) -> np.ndarray:
        """The same as :meth:`predict` (predictions in the target's units).

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            As for :meth:`predict`.
        codes : bool
            X holds integer codes.

        Returns
        -------
        numpy.ndarray
        """
        return self.predict(X, codes=codes)


class DDSSPLogisticRegression(DDSSPEstimator, DPClassifier):
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
    ridge, features, encoding, psd, ci, intervals
        As in :class:`DDSSPEstimator`.
    missing_target : {"drop", "keep"}
        Rows whose target is in neither class (its ``'<other>'`` or ``'<missing>'`` level) are left
        out of the fit ("drop", default) or kept and coded 0, between the classes ("keep").
    positive : str or int or None
        The target level that is class 1 (a label; for a numeric target also its level value): one of a
        binary target's levels, or LEVEL against all the target's other levels (one vs the rest: its
        blocks of Z^T Z summed over them, post-processing at no privacy cost; ``classes_`` is then [0, 1]
        and ``target_labels_`` ``['not LEVEL', 'LEVEL']``); ``'<other>'`` and empty-cell levels are in
        neither class. None (default): the target must be binary, its second level is class 1.
    """

    __doc__ = (
        (__doc__ or "")
        + _FITTED_ATTRIBUTES
        + """
    classes_ : ndarray
        The two classes' codes of the target (class 0, class 1); one vs the rest [0, 1].
    target_labels_ : list of str
        The schema labels of the two classes; one vs the rest ``['not LEVEL', 'LEVEL']``.
    positive_, negative_levels_ : str, list of str
        The label of the class-1 level; the labels of the levels in class 0 (one, or the rest).
    chebyshev_coef_ : ndarray
        The approximation's coefficients."""
    )

    kind = "logistic"

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        "degree": one_of(
            2,
            says="2: DD-SSP from two-way marginals gives the moments of degree 2 only "
            "(a degree-M approximation needs M-way marginals)",
        ),
        "R": number(0.0, None, open_low=True, says="a positive number (the half-width of the approximation range)"),
        **DDSSPEstimator._parameter_constraints,
        "positive": Constraint(
            lambda v: v is None or (isinstance(v, (str, int, float)) and not isinstance(v, bool)),
            "a level of the target (its label, or its value for a numeric target) or None",
        ),
    }

    def __init__(
        self,
        degree: int = 2,
        R: float = 6.0,
        ridge: Any = None,
        features: Sequence[str] | None = None,
        encoding: Any = None,
        psd: str = "clip",
        missing_target: str = "drop",
        *,
        positive: str | int | None = None,
        ci: float | None = None,
        intervals: IntervalOptions | None = None,
    ):
        self.degree = degree
        self.R = R
        self.positive = positive
        super().__init__(ridge, features, encoding, psd, missing_target, ci=ci, intervals=intervals)

    def _chebyshev_step(self) -> float:
        """-b1 / (2 b2) from the degree-2 Chebyshev approximation b0 + b1 s + b2 s^2 of the
        log-sigmoid on [-R, R] (``chebyshev_coef_``): the factor that turns the least-squares fit of
        the -1/+1 target into the maximiser of the approximate log-likelihood."""
        b = chebyshev_coefficients(2, self.R)
        if not b[2] < 0:
            raise DDSSPError(f"the Chebyshev approximation on [-{self.R}, {self.R}] is not concave (b2={b[2]})")
        self.chebyshev_coef_ = b
        return -b[1] / (2.0 * b[2])

    def _set_classes(self, enc: Encoding, source: Any) -> None:
        """``classes_``, ``target_labels_``, ``positive_`` and ``negative_levels_`` (:meth:`Encoding.classes`)."""
        self.classes_, self.target_labels_, self.positive_, self.negative_levels_ = enc.classes()
