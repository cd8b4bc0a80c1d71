"""Non-private reference fits: ordinary / ridge least squares and (ridge) logistic regression.

They have the estimator interface of every ddssp regression method so the benchmark can use them as

- "Public": the non-private fit on the real training rows (the accuracy ceiling), and
- the learner of "AIM-Synth": an ordinary fit on synthetic rows sampled from a DP release (private by
  post-processing of the release; the fit itself adds nothing).

Fitting them on sensitive data is NOT private: ``privacy_`` says so (``privacy_.eps`` is inf).

Intercept: by default (``fit_intercept=False``) the coefficients apply to the columns given, like the
DP estimators (put a constant column in X for an intercept). With ``fit_intercept=True`` a separate,
unpenalised ``intercept_`` is fitted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.dp import PrivacyRecord
from ddssp.errors import DDSSPError
from ddssp.estimators.base import DPClassifier, DPRegressor, as_matrix, as_vector
from ddssp.estimators.objpert import binary_labels, minimize_logistic

#: the record of every non-private fit: no guarantee (eps = inf)
NON_PRIVATE = PrivacyRecord("none (non-private fit)", eps=math.inf, delta=1.0)


def _check_ridge(ridge: Any) -> float:
    try:
        r = float(ridge)
    except (TypeError, ValueError):
        r = float("nan")
    if not (math.isfinite(r) and r >= 0):
        raise DDSSPError(f"ridge must be a non-negative number, got {ridge!r}")
    return r


def _with_intercept(X: np.ndarray, fit_intercept: bool) -> np.ndarray:
    return np.column_stack([X, np.ones(X.shape[0])]) if fit_intercept else X


class PublicLinearRegression(DPRegressor):
    """Least squares, optionally ridge: argmin ||y - X theta - c||^2 + ridge ||theta||^2.

    With ridge = 0 the minimum-norm least-squares solution is used (well defined when X is rank
    deficient, e.g. a level that never occurs in a synthetic sample).

    Parameters
    ----------
    ridge : float
        L2 penalty (>= 0); the intercept is not penalised.
    fit_intercept : bool
        Fit an intercept c.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
        The coefficients.
    intercept_ : float
        The intercept (0.0 unless ``fit_intercept``).
    feature_names_in_ : list of str or None
        Column names of a DataFrame X.
    privacy_ : PrivacyRecord
        :data:`NON_PRIVATE` (eps = inf): the fit is not private.
    """

    def __init__(self, ridge: float = 0.0, fit_intercept: bool = False) -> None:
        self.ridge = ridge
        self.fit_intercept = fit_intercept
        _check_ridge(ridge)

    def fit(self, X: Any, y: Any) -> PublicLinearRegression:
        """Fit least squares (ridge when ``ridge > 0``). NOT private.

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            Features, one row per record (an array or a DataFrame, whose column names become ``feature_names_in_``).
        y : array-like
            The target, one value per row.

        Returns
        -------
        self

        Raises
        ------
        DDSSPError
            For zero rows, non-finite values or an invalid ridge.
        """
        ridge = _check_ridge(self.ridge)
        arr, names = as_matrix(X)
        yv = as_vector(y, arr.shape[0])
        if arr.shape[0] == 0:
            raise DDSSPError("cannot fit on zero rows")
        A = _with_intercept(arr, self.fit_intercept)
        d = arr.shape[1]
        if ridge > 0:
            pen = np.full(A.shape[1], ridge)
            if self.fit_intercept:
                pen[-1] = 0.0
            theta = np.linalg.lstsq(A.T @ A + np.diag(pen), A.T @ yv, rcond=None)[0]
        else:
            theta = np.linalg.lstsq(A, yv, rcond=None)[0]
        self.coef_ = np.asarray(theta[:d], dtype=float)
        self.intercept_ = float(theta[d]) if self.fit_intercept else 0.0
        self.feature_names_in_ = names
        self.n_features_in_ = d
        self.privacy_ = NON_PRIVATE
        return self


class PublicLogisticRegression(DPClassifier):
    """Logistic regression: argmin sum_i log(1 + exp(-y_i (x_i.theta + c))) + ridge/2 ||theta||^2.

    The loss is a sum over rows (not a mean), so ``ridge`` = 1/C of scikit-learn's
    ``LogisticRegression(C=...)``; the default ridge = 1.0 matches scikit-learn's default C = 1.
    The intercept (``fit_intercept=True``) is not penalised. Labels: 0/1, -1/+1 or boolean.

    Parameters
    ----------
    ridge : float
        L2 penalty (>= 0) on the summed loss.
    fit_intercept : bool
        Fit an intercept c.
    max_iter, tol : int, float
        Optimiser settings.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
        The coefficients.
    intercept_ : float
        The intercept (0.0 unless ``fit_intercept``).
    feature_names_in_ : list of str or None
        Column names of a DataFrame X.
    privacy_ : PrivacyRecord
        :data:`NON_PRIVATE` (eps = inf): the fit is not private.
    classes_ : ndarray
        The two labels, following the coding of y.
    """

    def __init__(self, ridge: float = 1.0, fit_intercept: bool = False, max_iter: int = 2000, tol: float = 1e-10):
        self.ridge = ridge
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        _check_ridge(ridge)

    def fit(self, X: Any, y: Any) -> PublicLogisticRegression:
        """Fit (ridge) logistic regression. NOT private.

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
            For zero rows, invalid labels or an invalid ridge.
        """
        ridge = _check_ridge(self.ridge)
        arr, names = as_matrix(X)
        if arr.shape[0] == 0:
            raise DDSSPError("cannot fit on zero rows")
        classes, ypm = binary_labels(y, arr.shape[0])
        A = _with_intercept(arr, self.fit_intercept)
        d = arr.shape[1]
        pen = np.full(A.shape[1], ridge)
        if self.fit_intercept:
            pen[-1] = 0.0  # the intercept is not penalised
        theta = minimize_logistic(A, ypm, pen, None, max_iter=int(self.max_iter), tol=float(self.tol))
        self.coef_ = np.asarray(theta[:d], dtype=float)
        self.intercept_ = float(theta[d]) if self.fit_intercept else 0.0
        self.classes_ = classes
        self.feature_names_in_ = names
        self.n_features_in_ = d
        self.privacy_ = NON_PRIVATE
        return self
