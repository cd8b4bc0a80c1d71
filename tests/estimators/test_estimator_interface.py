"""Every estimator is exported and follows the one interface."""

import numpy as np
import pytest

import ddssp.estimators as est
from ddssp.dp import PrivacyRecord
from ddssp.estimators.base import DPEstimator

#: exported names that are not estimators: the base classes and the estimators' option objects
NOT_ESTIMATORS = ("DPEstimator", "DPRegressor", "DPClassifier", "IntervalOptions")


@pytest.mark.parametrize("name", [n for n in est.__all__ if n not in NOT_ESTIMATORS])
def test_exported_and_interface(name):
    cls = getattr(est, name)
    assert issubclass(cls, DPEstimator)
    assert callable(cls.fit) and hasattr(cls, "get_params")


def test_unknown_name():
    with pytest.raises(AttributeError):
        est.NoSuchEstimator  # noqa: B018


@pytest.mark.parametrize(
    "make",
    [
        lambda: est.AdaSSP(eps=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0),
        lambda: est.PDPOutputPerturbation(lam=1.0, eps=1.0, x_bound=2.0),
        lambda: est.PublicLinearRegression(),
    ],
)
def test_row_estimators_fit_predict(make):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(300, 3))
    y = np.clip(X @ np.array([0.3, -0.2, 0.1]), -1, 1)
    m = make().fit(X, y)
    assert m.coef_.shape == (3,) and np.isfinite(m.intercept_)
    assert m.predict(X).shape == (300,) and isinstance(m.privacy_, PrivacyRecord)
    assert set(m.get_params()) <= set(vars(m))
