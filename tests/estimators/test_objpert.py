import math

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from ddssp.dp.noise import INSECURE_STAMP
from ddssp.errors import DDSSPError, PrivacyParameterError
from ddssp.estimators.objpert import ObjectivePerturbation, binary_labels
from ddssp.estimators.public import PublicLogisticRegression


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)  # row norms <= 1
    p = special.expit(X @ np.array([2.0, -1.5, 1.0][:d]))
    y = (rng.uniform(size=n) < p).astype(int)
    return X, y


def _recovered_b(est, X, y):
    """b from the optimality condition sum_i grad l(theta) + (Delta + ridge) theta + b = 0."""
    ypm = np.where(y == 1, 1.0, -1.0)
    theta = est.coef_
    m = ypm * (X @ theta)
    grad_sum = -(X.T @ (ypm * special.expit(-m)))
    return -(grad_sum + (est.Delta_ + est.ridge) * theta)


def test_mechanism_parameters_match_formulas():
    eps, delta, B = 0.7, 1e-6, 1.7
    Delta, sigma = ObjectivePerturbation.mechanism_parameters(eps, delta, B)
    # Kifer et al.: Delta >= 2 lambda / eps with lambda = B^2 / 4 (logistic smoothness 1/4)
    assert Delta == pytest.approx(2 * (B**2 / 4) / eps)
    assert Delta == pytest.approx(B**2 / (2 * eps))
    assert sigma**2 == pytest.approx(B**2 * (8 * math.log(2 / delta) + 4 * eps) / eps**2)


def test_empirical_noise_covariance_matches_formula():
    X, y = _data()
    eps, delta, B = 1.0, 1e-5, 1.0
    est = ObjectivePerturbation(eps, delta, B)  # the secure (OpenDP) noise is what is tested
    reps = 1500
    bs = np.empty((reps, X.shape[1]))
    for r in range(reps):
        est.fit(X, y)
        bs[r] = _recovered_b(est, X, y)
    sigma = ObjectivePerturbation.mechanism_parameters(eps, delta, B)[1]
    assert est.sigma_ == pytest.approx(sigma)
    cov = np.cov(bs.T, bias=True) + np.outer(bs.mean(0), bs.mean(0))  # second moment (mean 0)
    for k in range(X.shape[1]):
        stat = np.sum(bs[:, k] ** 2) / sigma**2
        assert stats.chi2.ppf(1e-6, reps) < stat < stats.chi2.ppf(1 - 1e-6, reps), cov[k, k] / sigma**2
    corr = cov / sigma**2
    off = corr[~np.eye(X.shape[1], dtype=bool)]
    assert np.max(np.abs(off)) < 5.5 / math.sqrt(reps)
    assert np.all(np.abs(bs.mean(0)) < 5.5 * sigma / math.sqrt(reps))


def test_recovered_b_is_exact_for_one_fit():
    """The test's b recovery is exact: compare with the b drawn from the same (insecure) seed."""
    X, y = _data()
    est = ObjectivePerturbation(0.5, 1e-5, 1.0, insecure_seed=3).fit(X, y)
    b = np.random.default_rng(3).normal(0.0, est.sigma_, X.shape[1])
    assert est.privacy_.stamp == INSECURE_STAMP
    assert np.allclose(_recovered_b(est, X, y), b, rtol=1e-5, atol=1e-6 * est.sigma_)
    assert not hasattr(est, "b_")  # the noise is never stored (it would reveal the gradient)


def test_large_eps_converges_to_nonprivate_mle():
    X, y = _data(n=400)
    mle = PublicLogisticRegression(ridge=0.0).fit(X, y).coef_
    prev = None
    for eps in [1e2, 1e5, 1e12]:
        coef = ObjectivePerturbation(eps, 1e-5, 1.0, insecure_seed=0).fit(X, y).coef_
        err = np.linalg.norm(coef - mle)
        if prev is not None:
            assert err < prev
        prev = err
    assert prev < 1e-4


def test_rows_outside_bound_are_clipped():
    X, y = _data()
    Xa, Xb = X.copy(), X.copy()
    Xa[0] = [300.0, 400.0, 0.0]
    Xb[0] = [0.6, 0.8, 0.0]
    a = ObjectivePerturbation(1.0, 1e-5, 1.0, insecure_seed=4).fit(Xa, y)
    b = ObjectivePerturbation(1.0, 1e-5, 1.0, insecure_seed=4).fit(Xb, y)
    assert np.allclose(a.coef_, b.coef_, atol=1e-8)


def test_scaling_an_outlier_changes_nothing():
    X, y = _data()
    fits = []
    for scale in [5.0, 5e4]:
        Xs = X.copy()
        Xs[2] = np.array([-1.0, 2.0, 0.5]) * scale
        fits.append(ObjectivePerturbation(0.3, 1e-5, 1.0, insecure_seed=9).fit(Xs, y))
    a, b = fits
    assert a.sigma_ == b.sigma_ and a.Delta_ == b.Delta_
    assert np.allclose(a.coef_, b.coef_, atol=1e-8)


def test_label_codings_and_interface():
    X, y01 = _data()
    ypm = 2 * y01 - 1
    df = pd.DataFrame(X, columns=["u", "v", "w"])
    a = ObjectivePerturbation(1.0, 1e-5, 1.0, insecure_seed=1).fit(df, y01)
    b = ObjectivePerturbation(1.0, 1e-5, 1.0, insecure_seed=1).fit(X, ypm)
    c = ObjectivePerturbation(1.0, 1e-5, 1.0, insecure_seed=1).fit(X, y01.astype(bool))
    assert np.allclose(a.coef_, b.coef_) and np.allclose(a.coef_, c.coef_)
    assert list(a.classes_) == [0, 1] and list(b.classes_) == [-1, 1]
    assert set(np.unique(b.predict(X))) <= {-1, 1}
    assert set(np.unique(a.predict(df))) <= {0, 1}
    proba = a.predict_proba(X)
    assert proba.shape == (len(X), 2) and np.allclose(proba.sum(1), 1)
    assert a.feature_names_in_ == ["u", "v", "w"]
    assert a.intercept_ == 0.0
    assert a.privacy_.eps == 1.0 and a.privacy_.delta == 1e-5


def test_binary_labels_rejects_other_codings():
    with pytest.raises(DDSSPError):
        binary_labels([0, 1, 2])
    with pytest.raises(DDSSPError):
        binary_labels(["a", "b"])
    classes, ypm = binary_labels([1, 1, 1])
    assert list(classes) == [0, 1] and list(ypm) == [1, 1, 1]
    X, y = _data()
    with pytest.raises(DDSSPError):
        ObjectivePerturbation(1.0, 1e-5, 1.0).fit(X, y + 5)
    with pytest.raises(DDSSPError):
        ObjectivePerturbation(1.0, 1e-5, 1.0).fit(X, y[:-1])


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(eps=0),
        dict(eps=-0.5),
        dict(eps=math.inf),
        dict(delta=0),
        dict(delta=1),
        dict(x_bound=0),
        dict(x_bound=-2),
        dict(x_bound=math.nan),
    ],
)
def test_bad_privacy_parameters_raise(kwargs):
    params = dict(eps=1.0, delta=1e-5, x_bound=1.0)
    params.update(kwargs)
    with pytest.raises(PrivacyParameterError):
        ObjectivePerturbation(**params)
    est = ObjectivePerturbation(1.0, 1e-5, 1.0).set_params(**kwargs)
    X, y = _data()
    with pytest.raises(PrivacyParameterError):
        est.fit(X, y)


def test_bad_ridge_raises():
    with pytest.raises(DDSSPError):
        ObjectivePerturbation(1.0, 1e-5, 1.0, ridge=-1)


def test_default_noise_is_secure_and_unseeded():
    X, y = _data()
    a, b = (ObjectivePerturbation(1.0, 1e-5, 1.0).fit(X, y) for _ in range(2))
    assert not np.array_equal(a.coef_, b.coef_)
    assert a.privacy_.noise == {"source": "opendp", "secure": True} and a.privacy_.stamp is None
    with pytest.raises(TypeError):
        ObjectivePerturbation(1.0, 1e-5, 1.0, seed=0)
    with pytest.raises(PrivacyParameterError):
        ObjectivePerturbation(1.0, 1e-5, 1.0, noise=np.random.default_rng(0)).fit(X, y)
