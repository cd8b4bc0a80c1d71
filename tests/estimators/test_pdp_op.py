"""PDP-OP (personalized-DP ridge by output perturbation), its baselines, profiles and bench runner.

Statistical tests use the secure (OpenDP / CSPRNG) noise unless they compare two fits' noise (then the
insecure seeded source, named explicitly), and tolerances of 5 standard errors (stated per test), so a correct
implementation fails with negligible probability while a mis-scaled one (e.g. eta off by 10%) fails.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ddssp.dp.noise import INSECURE_STAMP, InsecureSeededNoise, SecureNoise
from ddssp.errors import DataError, PrivacyParameterError, WorkloadError
from ddssp.estimators.pdp_op import (
    BoundsClipWarning,
    JorgensenSampleMechanism,
    NonPersonalizedOutputPerturbation,
    PDPOutputPerturbation,
)
from ddssp.estimators.pdp_op_math import (
    jorgensen_probabilities,
    pdp_weights,
    sample_l2_laplace,
    sensitivity_constant,
    theta_norm_bound,
    weighted_ridge,
)
from ddssp.estimators.pdp_op_profiles import DEFAULT_LEVELS, JORGENSEN_FRACTIONS, privacy_profile


def _data(rng, n=60, d=5):
    X = rng.random((n, d))
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    y = X @ theta / math.sqrt(d)
    return X, y


def _ridge_lstsq(X, y, w, lam):
    """Independent weighted ridge: least squares on [sqrt(w) X; sqrt(lam) I] vs [sqrt(w) y; 0]."""
    d = X.shape[1]
    A = np.vstack([np.sqrt(w)[:, None] * X, math.sqrt(lam) * np.eye(d)])
    b = np.concatenate([np.sqrt(w) * y, np.zeros(d)])
    return np.linalg.lstsq(A, b, rcond=None)[0]


# --------------------------------------------------------------------------- weights
def test_weights_sum_to_one_and_follow_eps():
    rng = np.random.default_rng(0)
    X, y = _data(rng)
    eps = privacy_profile(len(X), rng=rng)
    m = PDPOutputPerturbation(lam=2.0, insecure_seed=1).fit(X, y, eps=eps)
    assert m.weights_.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(m.weights_ / eps, np.full(len(eps), 1.0 / eps.sum()), rtol=1e-12)
    # batched helper: every row sums to 1 and is proportional to its eps
    E = privacy_profile(40, rng=rng, size=7)
    W = pdp_weights(E)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(W * E.sum(axis=1, keepdims=True), E, rtol=1e-12)


def test_weighted_ridge_matches_independent_solver():
    rng = np.random.default_rng(1)
    X, y = _data(rng, n=30, d=4)
    w = pdp_weights(rng.uniform(0.01, 1, 30))
    np.testing.assert_allclose(weighted_ridge(X, y, w, 0.7), _ridge_lstsq(X, y, w, 0.7), rtol=1e-9, atol=1e-12)
    # batched == looped
    Xb = rng.random((3, 30, 4))
    yb = rng.random((3, 30))
    wb = pdp_weights(rng.uniform(0.01, 1, (3, 30)))
    batched = weighted_ridge(Xb, yb, wb, 3.0)
    for t in range(3):
        np.testing.assert_allclose(batched[t], _ridge_lstsq(Xb[t], yb[t], wb[t], 3.0), rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- the noise
def test_radius_mean_variance_and_distribution():
    """Radius of L2-Laplace noise: Gamma(d, scale 1/eta): mean d/eta, variance d/eta^2.
    Tolerance: 5 standard errors of the sample mean / sample variance; KS p-value > 1e-4."""
    d, eta, N = 7, 2.5, 20_000
    r = np.linalg.norm(sample_l2_laplace(d, eta, SecureNoise(), size=N), axis=1)
    mean, var = d / eta, d / eta**2
    assert abs(r.mean() - mean) < 5 * math.sqrt(var / N)
    theta4 = (1 / eta) ** 4
    se_var = math.sqrt((2 * d * d + 6 * d) * theta4 / N)  # Var(s^2) ~ (mu4 - sigma^4) / N for Gamma
    assert abs(r.var(ddof=1) - var) < 5 * se_var
    assert stats.kstest(r, stats.gamma(a=d, scale=1 / eta).cdf).pvalue > 1e-4
    # a 10% error in eta would be caught: the mean test has ~ 100 standard errors of power here
    assert abs(r.mean() - d / (1.1 * eta)) > 5 * math.sqrt(var / N)


def test_direction_uniform_on_sphere():
    """u = Z/||Z||: E u = 0 and E u u^T = I/d (uniform on the sphere). Per-entry tolerance 5 s.e.
    (Var u_j^2 = 3/(d(d+2)) - 1/d^2, Var u_i u_j = 1/(d(d+2)))."""
    d, N = 4, 30_000
    Z = sample_l2_laplace(d, 1.0, SecureNoise(), size=N)
    r = np.linalg.norm(Z, axis=1)
    u = Z / r[:, None]
    assert np.all(np.abs(u.mean(axis=0)) < 5 / math.sqrt(d * N))
    M = u.T @ u / N
    sd_diag = math.sqrt(3 / (d * (d + 2)) - 1 / d**2)
    sd_off = math.sqrt(1 / (d * (d + 2)))
    for i in range(d):
        for j in range(d):
            tol = 5 * (sd_diag if i == j else sd_off) / math.sqrt(N)
            assert abs(M[i, j] - (1 / d if i == j else 0)) < tol
    # direction independent of the radius: correlation of r with each |u_j| ~ 0 (5 s.e. = 5/sqrt(N))
    for j in range(d):
        assert abs(np.corrcoef(r, np.abs(u[:, j]))[0, 1]) < 5 / math.sqrt(N)


def test_noise_rate_array_broadcasts():
    eta = np.array([1.0, 10.0])
    r = np.linalg.norm(sample_l2_laplace(3, np.tile(eta, 5000), SecureNoise()), axis=1).reshape(-1, 2)
    np.testing.assert_allclose(r.mean(axis=0), 3 / eta, rtol=0.05)  # s.e. ~ 0.8%
    with pytest.raises(PrivacyParameterError):
        sample_l2_laplace(3, 0.0, SecureNoise())
    # a numpy Generator is refused: DP noise never comes from a seed
    with pytest.raises(PrivacyParameterError, match="NoiseSource"):
        sample_l2_laplace(3, 1.0, np.random.default_rng(4))
    # the insecure source reproduces, and has the same law (radius mean 3/eta, 5 s.e.)
    a, b = (sample_l2_laplace(3, eta, InsecureSeededNoise(4), size=(20000, 2)) for _ in range(2))
    assert np.array_equal(a, b)
    ra = np.linalg.norm(a, axis=-1)
    assert np.all(np.abs(ra.mean(axis=0) - 3 / eta) < 5 * math.sqrt(3) / eta / math.sqrt(20000))


def test_estimator_noise_is_calibrated():
    """||coef_ - theta_bar|| over seeds has mean d/eta (5 s.e.), with eta = S / C."""
    rng = np.random.default_rng(5)
    X, y = _data(rng, n=40, d=3)
    eps = rng.uniform(0.1, 1.0, 40)
    lam = 4.0
    theta_bar = weighted_ridge(X, y, pdp_weights(eps), lam)
    norms, etas = [], set()
    for _ in range(2000):
        m = PDPOutputPerturbation(lam).fit(X, y, eps=eps)  # the secure noise is what is tested
        norms.append(np.linalg.norm(m.coef_ - theta_bar))
        etas.add(m.noise_rate_)
    (eta,) = etas
    d = 3
    assert eta == pytest.approx(eps.sum() / sensitivity_constant(lam, math.sqrt(d)), rel=1e-12)
    assert abs(np.mean(norms) - d / eta) < 5 * math.sqrt(d / eta**2 / len(norms))


# --------------------------------------------------------------------------- eta and sensitivity
def test_eta_matches_paper_theorems():
    rng = np.random.default_rng(6)
    X, y = _data(rng, n=50, d=6)
    eps = privacy_profile(50, rng=rng)
    d, S = 6, eps.sum()
    for lam in (0.5, 1.0, 10.0, 200.0):
        B = min(1 / math.sqrt(lam), math.sqrt(d) / lam)
        m = PDPOutputPerturbation(lam, insecure_seed=0).fit(X, y, eps=eps)
        assert m.noise_rate_ == pytest.approx(lam * S / (2 * math.sqrt(d) * (1 + math.sqrt(d) * B)), rel=1e-12)
        assert m.privacy_.details["theorem"] == "3.2"
        # per-row privacy loss eta * Delta_i is exactly eps_i
        np.testing.assert_allclose(m.noise_rate_ * m.sensitivity_, eps, rtol=1e-12)
    # Thm 3.4 with a smaller public bound B on ||theta_bar_0||
    lam, Bp = 1.0, 0.2
    m = PDPOutputPerturbation(lam, theta_bound=Bp, insecure_seed=0).fit(X, y, eps=eps)
    assert m.privacy_.details["theorem"] == "3.4"
    assert m.noise_rate_ == pytest.approx(lam * S / (2 * math.sqrt(d) * (Bp * math.sqrt(d) + 1)), rel=1e-12)
    # a theta_bound larger than Thm 3.2's bound never adds noise
    m2 = PDPOutputPerturbation(lam, theta_bound=100.0, insecure_seed=0).fit(X, y, eps=eps)
    assert m2.privacy_.details["theorem"] == "3.2"


def _neighbour_ratios(rng, lam, d, n, draw_x, Y, trials, theta_bound_from_data=False):
    """max over random neighbouring pairs of ||theta_bar(D) - theta_bar(D')|| / (w_i C)."""
    worst = 0.0
    for _ in range(trials):
        X = draw_x(n)
        y = rng.uniform(-Y, Y, n)
        y[rng.random(n) < 0.5] = rng.choice([-Y, Y])
        eps = rng.uniform(0.01, 1.0, n)
        w = pdp_weights(eps)
        i = rng.integers(n)
        X2, y2 = X.copy(), y.copy()
        X2[i] = draw_x(1)[0]
        y2[i] = -np.sign(y[i] if y[i] != 0 else 1.0) * Y  # flip the label to its extreme
        tb = None
        if theta_bound_from_data:  # Thm 3.4 with B = the pair's own ||theta_bar_0|| (a valid bound here)
            tb = max(np.linalg.norm(weighted_ridge(X, y, w, 0.0)), np.linalg.norm(weighted_ridge(X2, y2, w, 0.0)))
        R = math.sqrt(d) if draw_x.__name__ == "cube" else draw_x.R
        C = sensitivity_constant(lam, R, Y, tb)
        diff = np.linalg.norm(weighted_ridge(X, y, w, lam) - weighted_ridge(X2, y2, w, lam))
        worst = max(worst, diff / (w[i] * C))
    return worst


@pytest.mark.parametrize("lam", [0.05, 1.0, 30.0])
def test_sensitivity_bound_unit_cube(lam):
    """Replace row i: ||theta_bar(D) - theta_bar(D')|| <= 2 sqrt(d) w_i (sqrt(d) B + 1) / lam."""
    rng = np.random.default_rng(7)
    d, n = 4, 6

    def cube(m):
        x = rng.random((m, d))
        corners = rng.random((m, d)) < 0.5
        return np.where(rng.random((m, 1)) < 0.5, corners.astype(float), x)  # half the rows at corners

    worst = _neighbour_ratios(rng, lam, d, n, cube, 1.0, 400)
    assert worst <= 1.0 + 1e-9
    assert worst > 0.01  # the test has teeth: a bound 100x too small would fail


@pytest.mark.parametrize("lam", [0.05, 1.0, 30.0])
def test_sensitivity_bound_ball_and_label_bound(lam):
    """||x|| <= R, |y| <= Y: Delta_i <= 2 w_i R (Y + R Bt) / lam with Bt = Y min(1/sqrt(lam), R/lam)."""
    rng = np.random.default_rng(8)
    d, n, R, Y = 3, 6, 2.5, 2.0

    def ball(m):
        g = rng.standard_normal((m, d))
        g /= np.linalg.norm(g, axis=1, keepdims=True)
        rad = np.where(rng.random(m) < 0.5, R, R * rng.random(m))
        return g * rad[:, None]

    ball.R = R
    worst = _neighbour_ratios(rng, lam, d, n, ball, Y, 400)
    assert worst <= 1.0 + 1e-9
    assert worst > 0.01


def test_sensitivity_bound_with_theta_bound():
    rng = np.random.default_rng(9)
    d, n = 3, 10

    def cube(m):
        return rng.random((m, d))

    worst = _neighbour_ratios(rng, 0.5, d, n, cube, 1.0, 300, theta_bound_from_data=True)
    assert 0.01 < worst <= 1.0 + 1e-9


def test_theta_norm_bound_holds():
    rng = np.random.default_rng(10)
    for lam in (0.1, 1.0, 50.0):
        for _ in range(50):
            X = rng.random((8, 5))
            y = rng.choice([-1.0, 1.0], 8)
            w = pdp_weights(rng.uniform(0.01, 1, 8))
            assert np.linalg.norm(weighted_ridge(X, y, w, lam)) <= theta_norm_bound(lam, math.sqrt(5)) + 1e-12


# --------------------------------------------------------------------------- limits and baselines
def test_huge_eps_gives_nonprivate_weighted_ridge():
    rng = np.random.default_rng(11)
    X, y = _data(rng, n=50, d=4)
    base = privacy_profile(50, rng=rng)
    lam = 0.3
    m = PDPOutputPerturbation(lam, insecure_seed=0).fit(X, y, eps=base * 1e12)
    np.testing.assert_allclose(m.coef_, _ridge_lstsq(X, y, base / base.sum(), lam), atol=1e-8)
    assert m.intercept_ == 0.0
    # with an intercept column: the last coefficient of the weighted ridge on [X, 1]
    m = PDPOutputPerturbation(lam, fit_intercept=True, insecure_seed=0).fit(X, y + 0.5, eps=base * 1e12)
    full = _ridge_lstsq(np.column_stack([X, np.ones(50)]), y + 0.5, base / base.sum(), lam)
    np.testing.assert_allclose(np.append(m.coef_, m.intercept_), full, atol=1e-8)
    assert m.privacy_.details["x_radius"] == pytest.approx(math.sqrt(5))
    np.testing.assert_allclose(m.predict(X), X @ full[:-1] + full[-1], atol=1e-7)


def test_nonpersonalized_uses_min_eps():
    rng = np.random.default_rng(12)
    X, y = _data(rng, n=40, d=3)
    eps = privacy_profile(40, rng=rng)
    lam = 2.0
    m = NonPersonalizedOutputPerturbation(lam, insecure_seed=0).fit(X, y, eps=eps)
    np.testing.assert_allclose(m.weights_, 1 / 40)
    assert m.privacy_.eps == eps.min()
    np.testing.assert_allclose(m.privacy_.details["personalized_eps"], eps.min())
    np.testing.assert_allclose(m.privacy_.details["requested_eps"], eps)
    assert m.noise_rate_ == pytest.approx(40 * eps.min() / sensitivity_constant(lam, math.sqrt(3)), rel=1e-12)
    p = PDPOutputPerturbation(lam, insecure_seed=0).fit(X, y, eps=eps)
    assert p.noise_rate_ > 5 * m.noise_rate_  # personalization: sum eps >> n min eps here


def test_jorgensen_probabilities_and_sampling_rate():
    eps = np.array([0.1, 0.5, 1.0, 2.0])
    p = jorgensen_probabilities(eps, 1.0)
    np.testing.assert_allclose(p, [np.expm1(0.1) / np.expm1(1), np.expm1(0.5) / np.expm1(1), 1.0, 1.0])
    rng = np.random.default_rng(13)
    n = 4000
    X = rng.random((n, 2))
    y = X @ np.array([0.3, -0.2])
    eps = np.full(n, 0.5)
    m = JorgensenSampleMechanism(1.0, threshold=1.0).fit(X, y, eps=eps)  # secure coin flips
    p = np.expm1(0.5) / np.expm1(1.0)
    assert m.privacy_.noise["secure"] and m.privacy_.stamp is None
    assert abs(m.n_sampled_ / n - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert m.n_sampled_ == m.sampled_.sum()
    assert m.noise_rate_ == pytest.approx(1.0 * m.n_sampled_ / sensitivity_constant(1.0, math.sqrt(2)), rel=1e-12)
    assert m.privacy_.eps == 1.0 and m.privacy_.details["guaranteed_eps"] == 1.0
    np.testing.assert_allclose(m.privacy_.details["personalized_eps"], 0.5)
    # thresholds
    e2 = np.array([0.1, 0.3, 0.8])
    assert JorgensenSampleMechanism(1.0, threshold="max", insecure_seed=0).fit(X[:3], y[:3], eps=e2).threshold_ == 0.8
    assert JorgensenSampleMechanism(1.0, threshold="mean", insecure_seed=0).fit(
        X[:3], y[:3], eps=e2
    ).threshold_ == pytest.approx(0.4)
    with pytest.raises(PrivacyParameterError):
        JorgensenSampleMechanism(1.0, threshold="median").fit(X[:3], y[:3], eps=e2)
    with pytest.raises(PrivacyParameterError):
        JorgensenSampleMechanism(1.0, threshold=0.0).fit(X[:3], y[:3], eps=e2)


def test_jorgensen_no_point_sampled():
    """N_s = 0: output theta = 0 (data independent), a RuntimeWarning, n_sampled = 0."""
    rng = np.random.default_rng(14)
    X, y = _data(rng, n=30, d=3)
    eps = np.full(30, 1e-12)  # p_i ~ 6e-13 with t = 1
    with pytest.warns(RuntimeWarning, match="N_s = 0"):
        m = JorgensenSampleMechanism(1.0, threshold=1.0, fit_intercept=True, insecure_seed=0).fit(X, y, eps=eps)
    assert m.n_sampled_ == 0 and m.privacy_.details["n_sampled"] == 0
    np.testing.assert_array_equal(m.coef_, np.zeros(3))
    assert m.intercept_ == 0.0
    np.testing.assert_array_equal(m.predict(X), np.zeros(30))
    # with t = "max" or "mean" some row has eps_i >= t, is kept with probability 1: N_s >= 1 always
    eps2 = np.concatenate([eps[:-1], [1e-3]])
    for t in ("max", "mean"):
        assert JorgensenSampleMechanism(1.0, threshold=t, insecure_seed=0).fit(X, y, eps=eps2).n_sampled_ >= 1


# --------------------------------------------------------------------------- per-row eps sources
def test_eps_column_name_and_scalar():
    rng = np.random.default_rng(15)
    X, y = _data(rng, n=30, d=3)
    eps = rng.uniform(0.1, 1, 30)
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(eps_i=eps)
    m1 = PDPOutputPerturbation(1.0, eps="eps_i", insecure_seed=3).fit(df, y)
    assert m1.privacy_.stamp == INSECURE_STAMP and m1.privacy_.noise["secure"] is False
    m2 = PDPOutputPerturbation(1.0, insecure_seed=3).fit(df.drop(columns="eps_i"), y, eps=eps)
    np.testing.assert_array_equal(m1.coef_, m2.coef_)
    assert m1.feature_names_in_ == ["a", "b", "c"]
    np.testing.assert_allclose(m1.predict(df), m1.predict(df.drop(columns="eps_i")))
    # one number for all rows, in the constructor or in fit
    m3 = PDPOutputPerturbation(1.0, eps=0.5, insecure_seed=3).fit(X, y)
    m4 = PDPOutputPerturbation(1.0, insecure_seed=3).fit(X, y, eps=0.5)
    np.testing.assert_array_equal(m3.coef_, m4.coef_)
    np.testing.assert_allclose(m3.privacy_.details["personalized_eps"], 0.5)
    assert (
        m3.privacy_.details["pure_dp"] is True
        and m3.privacy_.details["min_eps"] == m3.privacy_.details["max_eps"] == 0.5
    )


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("lam", [0, 0.0, -1.0, float("nan"), float("inf"), "x"])
def test_lambda_must_be_positive(lam):
    X, y = _data(np.random.default_rng(16), n=10, d=2)
    with pytest.raises(PrivacyParameterError, match="lam"):
        PDPOutputPerturbation(lam).fit(X, y, eps=np.ones(10))
    with pytest.raises(PrivacyParameterError):
        JorgensenSampleMechanism(lam).fit(X, y, eps=np.ones(10))


@pytest.mark.parametrize("bad", [0.0, -0.1, float("nan"), float("inf")])
def test_bad_eps_values(bad):
    X, y = _data(np.random.default_rng(17), n=10, d=2)
    eps = np.ones(10)
    eps[4] = bad
    for cls in (PDPOutputPerturbation, NonPersonalizedOutputPerturbation, JorgensenSampleMechanism):
        with pytest.raises(PrivacyParameterError, match="row 4"):
            cls(1.0).fit(X, y, eps=eps)


def test_eps_length_and_source_errors():
    X, y = _data(np.random.default_rng(18), n=10, d=2)
    with pytest.raises(DataError, match="9 per-row eps values for 10 rows"):
        PDPOutputPerturbation(1.0).fit(X, y, eps=np.ones(9))
    with pytest.raises(PrivacyParameterError, match="no per-row privacy levels"):
        PDPOutputPerturbation(1.0).fit(X, y)
    with pytest.raises(PrivacyParameterError, match="twice"):
        PDPOutputPerturbation(1.0, eps=1.0).fit(X, y, eps=np.ones(10))
    with pytest.raises(DataError, match="DataFrame"):
        PDPOutputPerturbation(1.0, eps="e").fit(X, y)
    with pytest.raises(DataError, match="not in X"):
        PDPOutputPerturbation(1.0, eps="e").fit(pd.DataFrame(X), y)
    with pytest.raises(DataError):
        PDPOutputPerturbation(1.0).fit(X[:0], y[:0], eps=np.ones(0))
    with pytest.raises(PrivacyParameterError):
        PDPOutputPerturbation(1.0, theta_bound=-1).fit(X, y, eps=np.ones(10))
    with pytest.raises(PrivacyParameterError):
        PDPOutputPerturbation(1.0, x_bound="cube").fit(X, y, eps=np.ones(10))
    with pytest.raises(PrivacyParameterError):
        PDPOutputPerturbation(1.0, y_bound=0).fit(X, y, eps=np.ones(10))


def test_out_of_bounds_clipped_with_warning_or_refused():
    rng = np.random.default_rng(19)
    X, y = _data(rng, n=20, d=3)
    Xo, yo = X.copy(), y.copy()
    Xo[0, 1], Xo[3, 2], yo[5] = 1.7, -0.2, -3.0
    eps = np.ones(20)
    with pytest.warns(BoundsClipWarning, match="2 feature value.*1 label"):
        a = PDPOutputPerturbation(1.0, insecure_seed=4).fit(Xo, yo, eps=eps)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = PDPOutputPerturbation(1.0, insecure_seed=4).fit(np.clip(Xo, 0, 1), np.clip(yo, -1, 1), eps=eps)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    with pytest.raises(DataError, match="outside the declared unit cube"):
        PDPOutputPerturbation(1.0, clip=False).fit(Xo, yo, eps=eps)
    # R-ball: rows above R are scaled down to norm R
    Xb = rng.standard_normal((20, 3))
    with pytest.warns(BoundsClipWarning, match="above the declared x_bound"):
        c = PDPOutputPerturbation(1.0, x_bound=1.0, insecure_seed=4).fit(Xb, y, eps=eps)
    norms = np.linalg.norm(Xb, axis=1, keepdims=True)
    d = PDPOutputPerturbation(1.0, x_bound=1.0, insecure_seed=4).fit(Xb / np.maximum(norms, 1.0), y, eps=eps)
    np.testing.assert_allclose(c.coef_, d.coef_, rtol=1e-12)
    with pytest.raises(DataError):
        PDPOutputPerturbation(1.0, x_bound=1.0, clip=False).fit(Xb, y, eps=eps)


# --------------------------------------------------------------------------- profiles
def test_privacy_profile_groups():
    rng = np.random.default_rng(20)
    c, m, lv = DEFAULT_LEVELS
    eps = privacy_profile(100, rng=rng)
    assert eps.shape == (100,)
    counts = [np.sum(eps <= m), np.sum((eps > m) & (eps < lv)), np.sum(eps == lv)]
    assert counts == [34, 43, 23] and eps.min() >= c
    # n = 80: 27.2 / 34.4 / 18.4 -> floor or ceil each, summing to 80 (largest remainder)
    eps = privacy_profile(80, rng=rng)
    counts = [np.sum(eps <= m), np.sum((eps > m) & (eps < lv)), np.sum(eps == lv)]
    assert sum(counts) == 80 and counts[0] == 27 and counts[1] in (34, 35) and counts[2] in (18, 19)
    E = privacy_profile(100, fractions=JORGENSEN_FRACTIONS, rng=rng, size=50)
    assert E.shape == (50, 100)
    assert np.all(np.sum(E == 1.0, axis=1) == 9)
    assert np.all(np.sum(E <= 0.2, axis=1) == 54)
    # group values are uniform on their ranges: mean of conservatives ~ (0.01 + 0.2)/2 (5 s.e.)
    cons = E[E <= 0.2]
    assert abs(cons.mean() - 0.105) < 5 * (0.19 / math.sqrt(12)) / math.sqrt(cons.size)
    # rows are assigned to groups in random order
    assert not np.all(E[:, 0] == E[0, 0])
    with pytest.raises(Exception):
        privacy_profile(10, fractions=(0.5, 0.5, 0.5))
    with pytest.raises(PrivacyParameterError):
        privacy_profile(10, levels=(0.0, 0.2, 1.0))
    np.testing.assert_array_equal(privacy_profile(30, rng=5), privacy_profile(30, rng=5))


# --------------------------------------------------------------------------- the bench runner
def _write_spec(tmp_path, extra=""):
    p = tmp_path / "spec.toml"
    p.write_text(
        'kind = "pdp-op-synthetic"\nplot_x = "lambda"\nd = 10\nn = 50\nlambdas = [1, 100]\n'
        f"trials = 300\nchunk = 128\n{extra}"
    )
    return p


def test_runner_output_and_ordering(tmp_path):
    from ddssp.bench import run_bench

    results, summary = run_bench(_write_spec(tmp_path), tmp_path / "out", quiet=True, seed=0)
    assert set(results.columns) == {"method", "lambda", "trial", "metric", "value", "seconds"}
    assert set(results["method"]) == {"PDP-OP", "NonPers", "J-max", "J-mean", "non-private"}
    assert set(results["metric"]) == {"mse", "mse_reg"}
    assert results["value"].notna().all() and len(results) == 5 * 2 * 2 * 300
    mean = summary[summary.metric == "mse"].set_index(["method", "lambda"])["mean"]
    assert mean["PDP-OP", 1.0] * 20 < mean["NonPers", 1.0]
    assert mean["PDP-OP", 1.0] < mean["J-mean", 1.0]
    assert (tmp_path / "out" / "results.csv").exists()


def test_runner_paper_protocol_and_errors(tmp_path):
    from ddssp.bench import run_bench

    results, _ = run_bench(
        _write_spec(tmp_path, 'protocol = "paper"\nmethods = ["non-private", "PDP-OP"]\n'),
        tmp_path / "o2",
        quiet=True,
        seed=1,
        trials=20,
    )
    npv = results[(results.method == "non-private") & (results.metric == "mse")]
    assert npv.groupby("lambda")["value"].nunique().max() == 1  # one dataset: the noise-free fit is fixed
    with pytest.raises(WorkloadError, match="--eps"):
        run_bench(_write_spec(tmp_path), tmp_path / "o3", quiet=True, eps=[1.0])
    p = tmp_path / "bad.toml"
    p.write_text('kind = "pdp-op-synthetic"\nlambdas = [0, 1]\n')
    with pytest.raises(WorkloadError, match="lambda = 0 is refused"):
        run_bench(p, tmp_path / "o4", quiet=True)
    with pytest.raises(WorkloadError, match="unknown method"):
        run_bench(_write_spec(tmp_path), tmp_path / "o5", quiet=True, methods=["OLS"])


@pytest.mark.slow
def test_example_script_runs(repo_root, capsys):
    """examples/pdp_op_on_synthetic.py end to end (AIM release of the census example, ~10 s)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pdp_example", repo_root / "examples" / "pdp_op_on_synthetic.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--rows", "3000"]) == 0
    out = capsys.readouterr().out
    assert "PDP-OP on synthetic" in out and "NonPers on real rows" in out
