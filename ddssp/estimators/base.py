"""The one estimator interface every regression method in ddssp implements.

scikit-learn style:
- the constructor holds hyper-parameters, privacy parameters (eps, delta, ...) and declared bounds
  (never bounds computed from the data), and does no work;
- ``fit(X, y)`` (or, for estimators that learn from a release, ``fit(release, target=...)``) returns self
  and sets ``coef_`` (1-D array), ``intercept_`` (float), ``feature_names_in_`` (names or None) and
  ``privacy_`` (a :class:`~ddssp.dp.PrivacyRecord`: eps, delta, rho, ledger entries, the insecure
  stamp if any, and method-specific ``details``; the same type for every estimator);
- ``predict(X)``: regression values, or class labels for classifiers; classifiers also have
  ``decision_function`` and ``predict_proba`` (columns: P(class 0), P(class 1)).

X may be a numpy array or a pandas DataFrame (its column names become ``feature_names_in_``).
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import special

from ddssp.dp import PrivacyRecord
from ddssp.errors import DDSSPError
from ddssp.estimators.params import Constraint, validate


def as_matrix(X: Any) -> tuple[np.ndarray, list[str] | None]:
    """X as a 2-D float array, and its column names when it has them.

    Parameters
    ----------
    X : array-like or pandas.DataFrame
        A 1-D input becomes one column.

    Returns
    -------
    array : numpy.ndarray
    names : list of str or None
        The DataFrame's column names.

    Raises
    ------
    DDSSPError
        For more than two dimensions, NaN or infinite values.
    """
    names = [str(c) for c in X.columns] if isinstance(X, pd.DataFrame) else None
    arr = np.asarray(X, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DDSSPError(f"X must be 2-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise DDSSPError("X contains NaN or infinite values")
    return arr, names


def as_vector(y: Any, n: int | None = None) -> np.ndarray:
    """y as a 1-D float array.

    Parameters
    ----------
    y : array-like
        The values.
    n : int, optional
        The expected length (the rows of X).

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For a length other than ``n``, NaN or infinite values.
    """
    arr = np.asarray(y, dtype=float).reshape(-1)
    if n is not None and arr.shape[0] != n:
        raise DDSSPError(f"y has {arr.shape[0]} values but X has {n} rows")
    if not np.all(np.isfinite(arr)):
        raise DDSSPError("y contains NaN or infinite values")
    return arr


def renamed_keywords(owner: str, given: dict[str, Any], renames: dict[str, str]) -> dict[str, Any]:
    """Keyword arguments given under a former spelling, returned under their new names with a DeprecationWarning.

    Kept for one release after a rename.

    Parameters
    ----------
    owner : str
        The callable's name, for messages.
    given : dict
        The unexpected keyword arguments received.
    renames : dict
        ``{old name: new name}``.

    Returns
    -------
    dict
        ``{new name: value}``.

    Raises
    ------
    TypeError
        For any other unexpected keyword, as for a plain signature.
    """
    out: dict[str, Any] = {}
    for old, value in given.items():
        new = renames.get(old)
        if new is None:
            raise TypeError(f"{owner}() got an unexpected keyword argument {old!r}")
        warnings.warn(f"{owner}: {old!r} is deprecated, use {new!r}", DeprecationWarning, stacklevel=3)
        out[new] = value
    return out


def take_renamed(owner: str, name: str, value: Any, old: dict[str, Any]) -> Any:
    """A parameter's value, or the value given under its former spelling (not both).

    Parameters
    ----------
    owner : str
        The callable's name, for messages.
    name : str
        The parameter's new name.
    value : any
        The value given under the new name (None when not given).
    old : dict
        The values given under former names (:func:`renamed_keywords`).

    Returns
    -------
    any

    Raises
    ------
    TypeError
        When both spellings are given.
    """
    if name in old:
        if value is not None:
            raise TypeError(f"{owner}() got {name!r} under both its new and its old name")
        return old[name]
    return value


class DPEstimator:
    """Base class: parameter introspection and the linear decision function."""

    coef_: np.ndarray
    intercept_: float
    feature_names_in_: list[str] | None
    privacy_: PrivacyRecord

    #: ``{parameter: Constraint}``: the values each constructor parameter accepts, checked by
    #: :meth:`_validate_params` at the start of ``fit`` (see :mod:`ddssp.estimators.params`)
    _parameter_constraints: ClassVar[dict[str, Constraint]] = {}

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters and their current values.

        Parameters
        ----------
        deep : bool
            Accepted for scikit-learn's ``clone``; parameters are never estimators here, so it
            changes nothing.

        Returns
        -------
        dict
        """
        sig = inspect.signature(type(self).__init__)
        return {k: getattr(self, k) for k in sig.parameters if k != "self" and hasattr(self, k)}

    def _validate_params(self) -> None:
        """Check the parameters against ``_parameter_constraints`` (one error naming the first bad one)."""
        validate(self.get_params(), self._parameter_constraints)

    def set_params(self, **params: Any) -> DPEstimator:
        """Set constructor parameters.

        Parameters
        ----------
        **params
            New values of parameters the constructor takes.

        Returns
        -------
        self

        Raises
        ------
        DDSSPError
            For an unknown parameter.
        """
        valid = self.get_params()
        for k, v in params.items():
            if k not in valid:
                raise DDSSPError(f"unknown parameter {k!r} for {type(self).__name__}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise DDSSPError(f"{type(self).__name__} is not fitted yet; call fit first")

    def _design(self, X: Any) -> np.ndarray:
        """The matrix the coefficients apply to. Estimators that encode raw tables override this."""
        arr, _ = as_matrix(X)
        if arr.shape[1] != self.coef_.shape[0]:
            raise DDSSPError(f"X has {arr.shape[1]} columns, the model has {self.coef_.shape[0]} coefficients")
        return arr

    def decision_function(self, X: Any, **kw: Any) -> np.ndarray:
        """The linear predictor X theta + intercept.

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            The rows (for DD-SSP estimators also a table of raw values or codes).
        **kw
            Passed to the estimator's design-matrix step (DD-SSP: ``codes``).

        Returns
        -------
        numpy.ndarray

        Raises
        ------
        DDSSPError
            When the estimator is not fitted, or X does not fit the coefficients.
        """
        self._check_fitted()
        return self._design(X, **kw) @ self.coef_ + self.intercept_


class DPRegressor(DPEstimator):
    """Base class of regressors: ``predict`` is the linear predictor."""

    def predict(self, X: Any, **kw: Any) -> np.ndarray:
        """Regression values for the rows of X (the linear predictor).

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            The rows.
        **kw
            As for :meth:`DPEstimator.decision_function`.

        Returns
        -------
        numpy.ndarray
        """
        return self.decision_function(X, **kw)


class DPClassifier(DPEstimator):
    """Binary classifier; ``classes_`` holds the two labels (default [0, 1])."""

    classes_: np.ndarray

    def predict_proba(self, X: Any, **kw: Any) -> np.ndarray:
        """Class probabilities from the logistic link of the linear predictor.

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            The rows.
        **kw
            As for :meth:`DPEstimator.decision_function`.

        Returns
        -------
        numpy.ndarray
            Shape (n, 2): P(class 0), P(class 1).
        """
        p1 = special.expit(self.decision_function(X, **kw))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: Any, **kw: Any) -> np.ndarray:
        """Class labels (from ``classes_``) by the sign of the linear predictor.

        Parameters
        ----------
        X : array-like or pandas.DataFrame
            The rows.
        **kw
            As for :meth:`DPEstimator.decision_function`.

        Returns
        -------
        numpy.ndarray
        """
        classes = getattr(self, "classes_", np.array([0, 1]))
        return classes[(self.decision_function(X, **kw) > 0).astype(int)]
