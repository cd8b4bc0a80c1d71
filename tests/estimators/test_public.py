import math

import numpy as np
import pytest
from scipy import special

from ddssp.errors import DDSSPError
from ddssp.estimators.public import PublicLinearRegression, PublicLogisticRegression


def _lin(n=80, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + 3.0 + 0.3 * rng.normal(size=n)
    return X, y


def _logit(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < special.expit(X @ np.array([1.0, -2.0, 0.5]) + 0.7)).astype(int)
    return X, y


def test_ols_normal_equations():
    X, y = _lin()
    m = PublicLinearRegression().fit(X, y)
    assert np.allclose(X.T @ (y - X @ m.coef_), 0, atol=1e-8)
    assert m.intercept_ == 0.0
    assert m.privacy_.eps == math.inf


def test_ols_intercept_and_ridge():
    X, y = _lin()
    m = PublicLinearRegression(fit_intercept=True).fit(X, y)
    r = y - m.predict(X)
    assert abs(r.sum()) < 1e-8 and np.allclose(X.T @ r, 0, atol=1e-8)
    lam = 5.0
    mr = PublicLinearRegression(ridge=lam).fit(X, y)
    assert np.allclose(mr.coef_, np.linalg.solve(X.T @ X + lam * np.eye(4), X.T @ y))
    mri = PublicLinearRegression(ridge=lam, fit_intercept=True).fit(X, y)
    ri = y - mri.predict(X)
    assert abs(ri.sum()) < 1e-8  # intercept not penalised
    assert np.allclose(X.T @ ri, lam * mri.coef_, atol=1e-8)


def test_ols_rank_deficient_is_min_norm():
    X, y = _lin()
    X[:, 2] = 0.0  # a level absent from a synthetic sample
    m = PublicLinearRegression().fit(X, y)
    assert m.coef_[2] == 0.0 and np.all(np.isfinite(m.coef_))


def test_logistic_stationarity_and_unpenalised_intercept():
    X, y = _logit()
    ypm = 2 * y - 1
    for ridge in [0.0, 1.0, 10.0]:
        m = PublicLogisticRegression(ridge=ridge, fit_intercept=True).fit(X, y)
        p = m.predict_proba(X)[:, 1]
        assert abs(np.sum(y - p)) < 1e-5  # gradient wrt the unpenalised intercept
        assert np.allclose(X.T @ (y - p), ridge * m.coef_, atol=1e-5)
        m0 = PublicLogisticRegression(ridge=ridge).fit(X, ypm)
        assert list(m0.classes_) == [-1, 1]
        p0 = m0.predict_proba(X)[:, 1]
        assert np.allclose(X.T @ (y - p0), ridge * m0.coef_, atol=1e-5)
        assert m0.intercept_ == 0.0 and m0.privacy_.eps == math.inf


def test_logistic_ridge_shrinks():
    X, y = _logit()
    a = PublicLogisticRegression(ridge=0.0).fit(X, y)
    b = PublicLogisticRegression(ridge=100.0).fit(X, y)
    assert np.linalg.norm(b.coef_) < np.linalg.norm(a.coef_)


def test_bad_inputs():
    with pytest.raises(DDSSPError):
        PublicLinearRegression(ridge=-1)
    with pytest.raises(DDSSPError):
        PublicLogisticRegression(ridge=math.nan)
    X, y = _logit()
    with pytest.raises(DDSSPError):
        PublicLogisticRegression().fit(X, y * 3)
    with pytest.raises(DDSSPError):
        PublicLinearRegression().fit(X[:0], y[:0])
