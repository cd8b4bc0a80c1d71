"""DP regression estimators behind one scikit-learn style interface (see :mod:`ddssp.estimators.base`)."""

from ddssp.estimators.base import DPClassifier, DPEstimator, DPRegressor

__all__ = ["DPEstimator", "DPRegressor", "DPClassifier"]
