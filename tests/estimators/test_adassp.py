import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ddssp.dp.measurements import gaussian_float_measurement
from ddssp.dp.noise import INSECURE_STAMP, InsecureSeededNoise, SecureNoise
from ddssp.errors import DDSSPError, PrivacyParameterError
from ddssp.estimators.adassp import AdaSSP, calibration_factor, clip_rows, zcdp_to_eps
from ddssp.estimators.public import PublicLinearRegression


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)  # every row norm <= 1
    y = np.clip(X @ np.array([0.5, -1.0, 0.25][:d]) + 0.1 * rng.standard_normal(n), -1, 1)
    return X, y


def _var_ok(samples, sigma2, alpha=1e-6):
    """Two-sided chi-square check of a sample variance (mean known to be 0)."""
    n = samples.size
    stat = float(np.sum(samples**2) / sigma2)
    return stats.chi2.ppf(alpha / 2, n) < stat < stats.chi2.ppf(1 - alpha / 2, n)


def test_noise_scales_match_formulas():
    eps, delta, B, Y = 0.9, 1e-4, 1.5, 2.0
    s = AdaSSP.noise_scales(eps, delta, B, Y)
    L = math.log(6 / delta)
    assert s["xtx"] == pytest.approx(math.sqrt(L) * B**2 / (eps / 3), rel=1e-12)
    assert s["xty"] == pytest.approx(math.sqrt(L) * B * Y / (eps / 3), rel=1e-12)
    assert s["lambda_min"] == pytest.approx(math.sqrt(L) / (eps / 3) * B**2, rel=1e-12)


def test_empirical_noise_covariance_matches_formula():
    X, y = _data()
    eps, delta, B, Y = 1.0, 1e-5, 1.0, 1.0
    xtx, xty = X.T @ X, X.T @ y
    est = AdaSSP(eps, delta, B, Y)  # the secure (OpenDP) noise is what is tested
    reps = 3000
    dx = np.empty((reps, 3, 3))
    dy = np.empty((reps, 3))
    for r in range(reps):
        est.fit(X, y)
        dx[r] = est.xtx_ - xtx
        dy[r] = est.xty_ - xty
    sx, sy = est.sigma_xtx_, est.sigma_xty_
    assert sx == pytest.approx(AdaSSP.noise_scales(eps, delta, B, Y)["xtx"])
    # the noisy Gram matrix is symmetric
    assert np.allclose(dx, np.transpose(dx, (0, 2, 1)))
    iu = np.triu_indices(3)
    upper = dx[:, iu[0], iu[1]]  # 6 iid N(0, sx^2) entries per fit
    for k in range(upper.shape[1]):
        assert _var_ok(upper[:, k], sx**2), (k, upper[:, k].var() / sx**2)
    for k in range(3):
        assert _var_ok(dy[:, k], sy**2), (k, dy[:, k].var() / sy**2)
    # independence: empirical correlations between distinct upper entries and X^T y entries are ~0
    allnoise = np.column_stack([upper / sx, dy / sy])
    corr = np.corrcoef(allnoise.T)
    off = corr[~np.eye(corr.shape[0], dtype=bool)]
    assert np.max(np.abs(off)) < 5.5 / math.sqrt(reps)
    # means are zero
    assert np.all(np.abs(allnoise.mean(axis=0)) < 5.5 / math.sqrt(reps))


def test_noisy_min_eigenvalue_scale():
    # enough rows that lambda_min is far above the truncation at 0
    rng0 = np.random.default_rng(2)
    X = rng0.normal(size=(3000, 2))
    X = clip_rows(X, 1.0)
    y = np.zeros(len(X))
    eps, delta = 1.0, 1e-5
    lmin = np.linalg.eigvalsh(X.T @ X)[0]
    shift = math.log(6 / delta) / (eps / 3)
    est = AdaSSP(eps, delta, 1.0, 1.0)  # secure noise
    vals = []
    for _ in range(2000):
        est.fit(X, y)
        vals.append(est.lambda_min_)
    vals = np.array(vals) - (lmin - shift)
    assert lmin - shift > 8 * est.sigma_lambda_
    assert _var_ok(vals, est.sigma_lambda_**2)
    assert abs(vals.mean()) < 5.5 * est.sigma_lambda_ / math.sqrt(len(vals))
    # the ridge is the documented post-processing of the noisy eigenvalue
    d = 2
    lam = max(0.0, math.sqrt(d * math.log(6 / delta) * math.log(2 * d**2 / 0.05)) / (eps / 3) - est.lambda_min_)
    assert est.lambda_ == pytest.approx(lam)


def test_large_eps_converges_to_ols():
    X, y = _data(n=200)
    ols = PublicLinearRegression().fit(X, y).coef_
    prev = None
    # for eps >~ 23 the noise is inflated to keep the OpenDP-checked guarantee (sigma ~ 1.2 / sqrt(eps)),
    # so "noise-free" needs a very large eps
    for eps in [1e2, 1e6, 1e16]:
        coef = AdaSSP(eps, 1e-5, 1.0, 1.0, insecure_seed=0).fit(X, y).coef_
        err = np.linalg.norm(coef - ols)
        if prev is not None:
            assert err < prev
        prev = err
    assert prev < 1e-5


def test_rows_outside_bound_are_clipped_not_measured():
    X, y = _data(n=50)
    X_out = X.copy()
    X_out[0] = np.array([30.0, -40.0, 0.0])  # norm 50, declared bound 1
    X_clip = X.copy()
    X_clip[0] = np.array([0.6, -0.8, 0.0])
    a = AdaSSP(1e16, 1e-5, 1.0, 1.0, insecure_seed=0).fit(X_out, y)
    b = AdaSSP(1e16, 1e-5, 1.0, 1.0, insecure_seed=0).fit(X_clip, y)
    assert np.allclose(a.coef_, b.coef_, atol=1e-10)
    assert np.allclose(a.xtx_, b.xtx_)


def test_scaling_an_outlier_changes_nothing():
    """The noise scale depends only on declared bounds: an outlier 10x or 10000x outside gives the same fit."""
    X, y = _data(n=50)
    fits = []
    for scale in [10.0, 1e4]:
        Xs = X.copy()
        Xs[3] = np.array([1.0, 2.0, -2.0]) * scale
        ys = y.copy()
        ys[5] = 7.0 * scale
        fits.append(AdaSSP(0.5, 1e-5, 1.0, 1.0, insecure_seed=7).fit(Xs, ys))
    a, b = fits
    assert a.sigma_xtx_ == b.sigma_xtx_ and a.sigma_xty_ == b.sigma_xty_ and a.sigma_lambda_ == b.sigma_lambda_
    assert np.allclose(a.xtx_, b.xtx_) and np.allclose(a.xty_, b.xty_)
    assert np.allclose(a.coef_, b.coef_)


def test_y_clipped_to_declared_bound():
    X, y = _data(n=50)
    y2 = y.copy()
    y2[0] = 100.0
    y3 = y.copy()
    y3[0] = 1.0
    a = AdaSSP(1e16, 1e-5, 1.0, 1.0, insecure_seed=0).fit(X, y2)
    b = AdaSSP(1e16, 1e-5, 1.0, 1.0, insecure_seed=0).fit(X, y3)
    assert np.allclose(a.coef_, b.coef_, atol=1e-10)


def test_noise_grows_with_bounds():
    X, y = _data()
    s1 = AdaSSP(1.0, 1e-5, 1.0, 1.0).fit(X, y)
    s2 = AdaSSP(1.0, 1e-5, 2.0, 3.0).fit(X, y)
    assert s2.sigma_xtx_ == pytest.approx(4 * s1.sigma_xtx_)
    assert s2.sigma_xty_ == pytest.approx(6 * s1.sigma_xty_)


def test_insecure_seed_reproducible_and_stamped_secure_not_and_interface():
    X, y = _data()
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    a = AdaSSP(1.0, 1e-5, 1.0, 1.0, insecure_seed=11).fit(df, y)
    b = AdaSSP(1.0, 1e-5, 1.0, 1.0, noise=InsecureSeededNoise(11)).fit(X, y)
    assert np.allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-12)
    assert a.privacy_.stamp == INSECURE_STAMP and a.privacy_.noise["secure"] is False
    # the default is the secure source: two fits differ, no stamp, no seed parameter at all
    c, e = (AdaSSP(1.0, 1e-5, 1.0, 1.0).fit(X, y) for _ in range(2))
    assert not np.array_equal(c.xty_, e.xty_)
    assert c.privacy_.stamp is None and c.privacy_.noise == {"source": "opendp", "secure": True}
    with pytest.raises(TypeError):
        AdaSSP(1.0, 1e-5, 1.0, 1.0, seed=0)
    assert a.feature_names_in_ == ["a", "b", "c"] and b.feature_names_in_ is None
    assert a.intercept_ == 0.0
    assert a.privacy_.eps == 1.0 and a.privacy_.delta == 1e-5
    assert a.predict(X).shape == (len(X),)
    assert np.allclose(a.predict(X), X @ a.coef_)
    assert "x_bound=1.0" in repr(a)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(eps=0),
        dict(eps=-1),
        dict(eps=math.inf),
        dict(eps=float("nan")),
        dict(delta=0),
        dict(delta=1),
        dict(delta=1.5),
        dict(x_bound=0),
        dict(x_bound=-1),
        dict(x_bound=math.inf),
        dict(y_bound=0),
        dict(y_bound="big"),
        dict(rho_fail=0),
        dict(rho_fail=1),
    ],
)
def test_bad_parameters_raise(kwargs):
    params = dict(eps=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0)
    params.update(kwargs)
    with pytest.raises(PrivacyParameterError):
        AdaSSP(**params)
    est = AdaSSP(1.0, 1e-5, 1.0, 1.0)
    est.set_params(**kwargs)
    X, y = _data()
    with pytest.raises(PrivacyParameterError):
        est.fit(X, y)


def test_bad_data_raise():
    X, y = _data()
    with pytest.raises(DDSSPError):
        AdaSSP(1.0, 1e-5, 1.0, 1.0).fit(X, y[:-1])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(DDSSPError):
        AdaSSP(1.0, 1e-5, 1.0, 1.0).fit(Xn, y)
    with pytest.raises(DDSSPError):
        AdaSSP(1.0, 1e-5, 1.0, 1.0).predict(X)


def test_noise_source_arguments_refused():
    X, y = _data()
    with pytest.raises(PrivacyParameterError, match="not both"):
        AdaSSP(1.0, 1e-5, 1.0, 1.0, noise=SecureNoise(), insecure_seed=1).fit(X, y)
    with pytest.raises(PrivacyParameterError, match="NoiseSource"):
        AdaSSP(1.0, 1e-5, 1.0, 1.0, noise=np.random.default_rng(0)).fit(X, y)
    with pytest.raises(PrivacyParameterError):
        AdaSSP(1.0, 1e-5, 1.0, 1.0, insecure_seed=-1).fit(X, y)


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 2.0, 10.0, 30.0, 1e3])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_charge_checked_against_opendp_maps(eps, delta):
    """The fit's three Gaussian measurements, charged by OpenDP's own privacy maps (at sensitivities
    B^2, B^2, B Y) and converted by OpenDP's zCDP -> (eps, delta) conversion, give at most the eps
    the fit claims; the paper's noise is kept exactly whenever that already holds."""
    B, Y, d = 1.3, 2.0, 4
    s = AdaSSP.noise_scales(eps, delta, B, Y)
    rho = AdaSSP.opendp_rho(d, s, B, Y)
    assert zcdp_to_eps(rho, delta) <= eps
    # OpenDP's map of each part is (sensitivity / sigma)^2 / 2 up to the float grid's rounding term
    m = gaussian_float_measurement(s["xty"], d)
    assert m.map(B * Y) == pytest.approx((B * Y / s["xty"]) ** 2 / 2, rel=1e-8)
    assert m.map(B * Y) >= (B * Y / s["xty"]) ** 2 / 2 * (1 - 1e-14)  # never below (up to float rounding)
    rho_paper = eps**2 / (6 * math.log(6 / delta))
    if zcdp_to_eps(rho_paper * 1.001, delta) <= eps:
        assert s["factor"] == 1.0
    else:  # inflated just enough: 1% less noise would break the guarantee
        assert s["factor"] > 1.0
        assert zcdp_to_eps(rho * 1.0201, delta) > eps
    # the paper's calibration holds for the eps of practice
    if eps <= 10 and delta <= 1e-3:
        assert s["factor"] == 1.0


def test_fit_records_opendp_charge():
    X, y = _data()
    est = AdaSSP(30.0, 1e-5, 1.0, 1.0).fit(X, y)
    assert est.noise_factor_ == calibration_factor(30.0, 1e-5) > 1.0
    assert est.privacy_.details["eps_from_opendp"] <= 30.0
    assert est.privacy_.rho == pytest.approx(AdaSSP.opendp_rho(3, AdaSSP.noise_scales(30.0, 1e-5, 1, 1), 1, 1))


def _replay_xty(est, X, y, seed):
    """The seed-reversal attack: replay InsecureSeededNoise(seed)'s draws in the fit's order
    (lambda_min, upper triangle of X^T X, X^T y) and subtract them from the released X^T y^."""
    rng = np.random.default_rng(seed)
    d = X.shape[1]
    rng.normal(0.0, est.sigma_lambda_, (1,))
    rng.normal(0.0, est.sigma_xtx_, (d * (d + 1) // 2,))
    return est.xty_ - rng.normal(0.0, est.sigma_xty_, (d,))


def test_seed_reversal_attack_fails_on_secure_noise():
    X, y = _data()
    exact = X.T @ y
    stamped = AdaSSP(1.0, 1e-5, 1.0, 1.0, insecure_seed=4).fit(X, y)
    assert np.allclose(_replay_xty(stamped, X, y, 4), exact, rtol=0, atol=1e-9)  # the attack works here
    secure = AdaSSP(1.0, 1e-5, 1.0, 1.0).fit(X, y)
    for seed in range(200):  # ... and not on the default noise, whatever seed the attacker tries
        assert not np.allclose(_replay_xty(secure, X, y, seed), exact, rtol=0, atol=1e-3)
