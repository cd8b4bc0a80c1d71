"""NAPP-ERM: each FIX of the method note checked numerically, plus limits and bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from ddssp.dp.noise import INSECURE_STAMP, SecureNoise
from ddssp.errors import DDSSPError, PrivacyParameterError
from ddssp.estimators.napp_erm import NAPPERM, NAPPApproximationWarning
from ddssp.estimators.napp_math import (
    LOSSES,
    augmented_rows,
    curvature,
    dp_shift,
    gaussian_b_sigma,
    linear_ey,
    loss_grad_hess,
    penalized_fit,
    penalty_weights,
    retrieved_budget,
    sample_b,
)
from ddssp.estimators.napp_options import Augmentation, Budget, DeclaredBounds, Penalty, Selection

#: the option record and field of each setting, so that tests can state settings by the paper's names
GROUPS = {
    "penalty": (Penalty, {"penalty": "kind", "Lambda": "Lambda", "gamma": "gamma", "kappa": "kappa"}),
    "bounds": (DeclaredBounds, {"zeta1": "zeta1", "y_bound": "y_bound", "theta_bound": "theta_bound"}),
    "augmentation": (
        Augmentation,
        {"n_e": "n_e", "Lambda0": "Lambda0", "moor": "moor", "max_iter": "max_iter", "tol": "tol"},
    ),
    "selection": (
        Selection,
        {
            "selection": "variant",
            "selection_rule": "rule",
            "sign_window": "sign_window",
            "zero_threshold": "zero_threshold",
        },
    ),
    "budget": (Budget, {"r": "r", "budget": "retrieval", "recycle_noise": "recycle_noise"}),
}


def napp(**settings) -> NAPPERM:
    """A NAPPERM from settings named as in the paper (Lambda, n_e, selection, budget, ...), each put
    in its option record."""
    groups = {}
    for param, (record, fields) in GROUPS.items():
        given = {field: settings.pop(name) for name, field in fields.items() if name in settings}
        if given:
            groups[param] = record(**given)
    return NAPPERM(**settings, **groups)


def test_options_are_grouped_constructor_parameters():
    m = NAPPERM(
        "linear",
        Penalty("lasso", Lambda=1.5),
        eps=1.0,
        bounds=DeclaredBounds(y_bound=1.7, theta_bound=2.0),
        augmentation=Augmentation(n_e=200, max_iter=2),
        selection=Selection("vs+"),
        budget=Budget(retrieval="return"),
        seed=0,
        insecure_seed=0,
    )
    params = m.get_params()
    assert params["selection"] == Selection("vs+") and params["augmentation"].n_e == 200
    assert set(params) == {
        *("loss", "penalty", "eps", "delta", "bounds", "augmentation", "selection", "budget"),
        *("seed", "noise", "insecure_seed"),
    }
    again = type(m)(**params)
    assert again.get_params() == params
    X = np.random.default_rng(0).normal(size=(100, 3)) / 3
    y = X @ np.array([1.0, 0.0, -1.0])
    a, b = m.fit(X, y), again.fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)  # same seeds: the same fit
    assert a.privacy_.details["budget"] == "return"
    with pytest.raises(DDSSPError, match="selection must be a Selection"):
        NAPPERM(selection="vs", bounds=DeclaredBounds(y_bound=1.0, theta_bound=1.0)).fit(X, y)


P = 16
BETA_LIN = np.r_[[1 - 0.8 * k / 7 for k in range(8)], np.zeros(8)]
BETA_GLM = np.r_[[4 - 0.5 * k / 7 for k in range(8)], np.zeros(8)]


def sim(loss: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if loss == "linear":
        X = rng.uniform(-0.25, 0.25, (n, P))
        e = stats.truncnorm.rvs(-2, 2, scale=0.25, size=n, random_state=rng)
        return X, X @ BETA_LIN + e
    if loss == "poisson":
        X = rng.uniform(-0.25, 0.25, (n, P))
        return X, rng.poisson(np.exp(X @ BETA_GLM)).astype(float)
    X = rng.uniform(-0.5, 0.5, (n, P))
    return X, (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ BETA_GLM))).astype(float)


# --------------------------------------------------------------------------- FIX: augmented rows
@pytest.mark.parametrize("loss", LOSSES)
def test_augmented_gradient_at_zero_is_b(loss):
    """FIX (response values): the augmented rows' loss gradient at theta = 0 equals b for every loss."""
    rng = np.random.default_rng(1)
    n_e = 10000
    M = np.linspace(0.5, 20.0, P)
    for scale in (1.0, 50.0):
        b = rng.normal(0, scale, P)
        E, ey = augmented_rows(loss, M, b, n_e, rng)
        assert E.shape == (n_e, P)
        _, g, _ = loss_grad_hess(loss, E, ey, np.zeros(P))
        np.testing.assert_allclose(g, b, rtol=0, atol=1e-9 * (1 + scale))


def test_printed_response_values_lose_the_dp_term():
    """The printed choices (linear e_y = 0, Poisson e_y = 1, logistic halves with a common e*) make the
    gradient at 0 independent of b: the DP term b^T theta is lost. (Shows why the FIX is needed.)"""
    rng = np.random.default_rng(2)
    n_e, b = 1000, rng.normal(0, 5, P)
    Z = rng.normal(0, 0.1, (n_e // 2, P))
    Et = np.vstack([Z, -Z])
    for loss, ey, estar in (
        ("linear", np.zeros(n_e), b / n_e),
        ("poisson", np.ones(n_e), b / n_e),
        ("logistic", np.r_[np.zeros(n_e // 2), np.ones(n_e // 2)], b / n_e),
    ):
        _, g, _ = loss_grad_hess(loss, Et + estar, ey, np.zeros(P))
        _, g0, _ = loss_grad_hess(loss, Et, ey, np.zeros(P))
        assert np.linalg.norm(g - g0) < 1e-6 * np.linalg.norm(b)  # b does not reach the gradient


@pytest.mark.parametrize("loss", LOSSES)
def test_augmented_hessian_is_twice_curvature(loss):
    """FIX: Hessian of the augmented rows at 0 ~ 2 diag(max(Lambda w_j, Lambda0)) (n_e = 1e4: O(1%) error)."""
    rng = np.random.default_rng(3)
    theta_prev = np.r_[np.linspace(0.05, 2.0, 8), np.zeros(8)]
    w = penalty_weights("lasso", theta_prev, 1.0, 0.5)
    M = curvature("lasso", 3.0, 2.0, w, P, 0.5, moor=True)
    assert np.all(M >= 2.0) and M.max() > 1e9  # floored |theta| for the zeros
    E, ey = augmented_rows(loss, M, rng.normal(0, 1, P), 10000, rng)
    _, _, H = loss_grad_hess(loss, E, ey, np.zeros(P))
    np.testing.assert_allclose(np.diag(H), 2 * M, rtol=0.1)  # sd sqrt(2/5000) = 2%
    scale = np.sqrt(np.outer(np.diag(H), np.diag(H)))
    off = (H / scale)[~np.eye(P, dtype=bool)]
    assert np.max(np.abs(off)) < 0.06  # off-diagonals ~ N(0, 1/n_e) relative


def test_curvature_max_vs_sum_and_lasso_weights():
    w = penalty_weights("lasso", np.array([0.5, 2.0, 0.0]), 1.0, 0.5)
    np.testing.assert_allclose(w[:2], [1.0, 0.25])  # 1/(2|theta|): fixed point is Lambda*||theta||_1
    M_max = curvature("lasso", 2.0, 0.75, w, 3, 0.5, moor=True)
    M_sum = curvature("lasso", 2.0, 0.75, w, 3, 0.5, moor=False)
    np.testing.assert_allclose(M_max[:2], [2.0, 0.75])
    np.testing.assert_allclose(M_sum[:2], [2.75, 1.25])
    # ridge is a max either way (Claim 2); t = 1 of the lasso is Lambda0 only
    np.testing.assert_allclose(curvature("ridge", 2.0, 3.0, None, 2, 0.5, moor=False), [3.0, 3.0])
    np.testing.assert_allclose(curvature("lasso", 2.0, 3.0, None, 2, 0.5, moor=True), [3.0, 3.0])
    np.testing.assert_allclose(curvature("elasticnet", 2.0, 0.1, None, 2, 0.5, moor=True), [1.0, 1.0])


# --------------------------------------------------------------------------- FIX: Laplace radius
def test_laplace_radius_is_gamma_p():
    """FIX: ||b|| ~ Gamma(shape=p, scale=zeta1 zeta2/(r eps)); shape 1 (the printed text) is rejected.
    On the secure source (OpenDP); KS tests at level 0.001 (false alarm 0.1% each)."""
    eps_b, z1, z2 = 0.5, 1.0, 3.0
    scale = z1 * z2 / eps_b
    B = sample_b(P, eps_b, z1, z2, None, SecureNoise(), size=2000)
    assert B.shape == (2000, P)
    radii = np.linalg.norm(B, axis=1)
    assert stats.kstest(radii, stats.gamma(a=P, scale=scale).cdf).pvalue > 0.001
    assert stats.kstest(radii, stats.gamma(a=1, scale=scale).cdf).pvalue < 1e-10
    # direction uniform: mean direction ~ 0, each coordinate symmetric
    U = B / radii[:, None]
    assert np.linalg.norm(U.mean(axis=0)) < 5 * math.sqrt(1 / 2000)
    assert sample_b(P, eps_b, z1, z2, None, SecureNoise()).shape == (P,)


def test_gaussian_b_sigma():
    sigma = gaussian_b_sigma(0.5, 1e-4, 1.0, 2.0)
    assert sigma == pytest.approx(math.sqrt(2 * 4 * (0.5 - math.log(1e-4))) / 0.5)
    B = sample_b(P, 0.5, 1.0, 2.0, 1e-4, SecureNoise(), size=500).ravel()  # secure source; 0.1% false alarm
    assert stats.kstest(B / sigma, "norm").pvalue > 0.001
    assert stats.kstest(B / (1.2 * sigma), "norm").pvalue < 1e-6  # the test sees a 20% scale error


def test_sample_b_refuses_a_numpy_generator():
    """A seed (or Generator) must never silently become the DP noise."""
    with pytest.raises(PrivacyParameterError, match="NoiseSource"):
        sample_b(P, 0.5, 1.0, 2.0, None, np.random.default_rng(0))
    with pytest.raises(PrivacyParameterError, match="either"):
        napp(noise=SecureNoise(), insecure_seed=1, y_bound=1.0, theta_bound=1.0).fit(np.ones((4, 2)) * 0.1, np.zeros(4))


def test_seed_no_longer_reproduces_the_dp_noise():
    """Seed reversal: with the default (secure) source, the same ``seed`` gives different DP noise b (so the
    fit differs), and the b of a fit cannot be replayed from the seed; only insecure_seed reproduces it
    (and stamps the fit NOT PRIVATE)."""
    from ddssp.estimators import napp_erm

    X, y = sim("linear", 200, 30)
    kw = dict(loss="linear", Lambda=1.0, eps=1.0, delta=1e-4, y_bound=2.0, theta_bound=3.0, n_e=200, max_iter=2, seed=5)
    seen = []
    real_run = napp_erm.NAPPERM._run

    def spy(self, X, y, b, Lambda0, P, rng, o):
        seen.append(b.copy())
        return real_run(self, X, y, b, Lambda0, P, rng, o)

    napp_erm.NAPPERM._run = spy
    try:
        a = napp(**kw).fit(X, y)
        b = napp(**kw).fit(X, y)
        assert not np.array_equal(seen[0], seen[1])
        assert not np.array_equal(a.coef_last_, b.coef_last_)
        assert a.privacy_.noise["secure"] and a.privacy_.stamp is None
        # the attacker's replay: the old code drew b from default_rng(seed) first
        replay = np.random.default_rng(5).normal(0.0, gaussian_b_sigma(0.5, 1e-4, 1.0, 5.0), P)
        assert not np.allclose(replay, seen[0])
        seen.clear()
        c = napp(insecure_seed=9, **kw).fit(X, y)
        d = napp(insecure_seed=9, **kw).fit(X, y)
        np.testing.assert_array_equal(seen[0], seen[1])
        np.testing.assert_array_equal(c.coef_, d.coef_)
        assert c.privacy_.stamp == INSECURE_STAMP and not c.privacy_.noise["secure"]
    finally:
        napp_erm.NAPPERM._run = real_run


# --------------------------------------------------------------------------- FIX: budget retrieval
def test_retrieved_budget_formula():
    """FIX: Delta = max(0, (1-r) eps (1 - Lambda0/M)): 0 when every Lambda w_j < Lambda0, never negative."""
    eps, r, lam0 = 1.0, 0.5, 2.0
    w = np.array([0.1, 0.2, 0.3])
    M = curvature("lasso", 1.0, lam0, w, 3, 0.5, moor=True)  # Lambda w_j < Lambda0 for all j
    assert retrieved_budget(eps, r, lam0, M) == 0.0
    M = curvature("lasso", 10.0, lam0, np.array([0.4, 1.0, 2.0]), 3, 0.5, moor=True)  # min = 4
    assert retrieved_budget(eps, r, lam0, M) == pytest.approx(0.5 * (1 - 2.0 / 4.0))
    rng = np.random.default_rng(6)
    for _ in range(200):
        lam0 = rng.uniform(0.01, 5)
        M = curvature("lasso", rng.uniform(0, 5), lam0, rng.exponential(1, 5), 5, 0.5, moor=bool(rng.integers(2)))
        d = retrieved_budget(eps, r, lam0, M)
        assert 0.0 <= d <= (1 - r) * eps


def test_fit_return_and_recycle_budget():
    X, y = sim("linear", 300, 7)
    kw = dict(
        loss="linear", penalty="ridge", eps=1.0, delta=1e-4, y_bound=2.0, theta_bound=4.0, n_e=2000, max_iter=3, seed=8
    )
    # ridge with Lambda below Lambda0: nothing to retrieve
    m = napp(Lambda=0.5, budget="return", **kw).fit(X, y)
    assert m.privacy_.details["retrieved_eps"] == 0.0 and m.privacy_.eps == 1.0
    # ridge with Lambda = 4 Lambda0 (Lambda0 = 1): Delta = 0.5 * (1 - 1/4)
    m = napp(Lambda=4.0, budget="return", **kw).fit(X, y)
    assert m.privacy_.details["retrieved_eps"] == pytest.approx(0.375)
    assert m.privacy_.eps == pytest.approx(0.625)
    m = napp(Lambda=4.0, budget="recycle", **kw).fit(X, y)
    assert m.privacy_.details["eps_noise"] == pytest.approx(0.875)
    assert m.privacy_.details["Lambda0_recycled"] == pytest.approx(4.0)
    assert m.privacy_.details["eps_composition_bound"] == 2.0


# --------------------------------------------------------------------------- limits
@pytest.mark.parametrize("loss,Lambda", [("linear", 1.0), ("logistic", 2.0), ("poisson", 2.0)])
def test_large_eps_approaches_nonprivate_lasso(loss, Lambda):
    X, y = sim(loss, 600, 9)
    zeta1 = 2.0 if loss == "logistic" else 1.0  # no row is clipped
    ref = penalized_fit(loss, X, y, Lambda, "lasso")
    # theta_bound 12 > ||ref|| (10.4 for Poisson); eps large enough that b and Lambda0 vanish even with
    # the Poisson constants zeta2, zeta3 = exp(12)
    m = napp(
        loss=loss,
        penalty="lasso",
        Lambda=Lambda,
        eps=1e12,
        zeta1=zeta1,
        y_bound=1e4,
        theta_bound=12.0,
        n_e=10000,
        max_iter=40,
        seed=10,
    ).fit(X, y)
    assert m.privacy_.details["Lambda0"] < 1e-6
    assert np.linalg.norm(m.coef_ - ref) < 0.03 * np.linalg.norm(ref)
    # support: the clearly non-zero lasso coefficients are selected
    assert np.all(m.selected_[np.abs(ref) > 0.1])


def test_large_eps_ridge_and_elasticnet():
    X, y = sim("linear", 400, 11)
    for pen in ("ridge", "elasticnet"):
        ref = penalized_fit("linear", X, y, 2.0, pen, kappa=0.5)
        m = napp(
            loss="linear",
            penalty=pen,
            Lambda=2.0,
            kappa=0.5,
            eps=1e9,
            y_bound=10.0,
            theta_bound=20.0,
            max_iter=40,
            seed=12,
        ).fit(X, y)
        assert np.linalg.norm(m.coef_ - ref) < 0.03 * np.linalg.norm(ref), pen


def test_moor_is_closer_to_lasso_than_sum_form():
    """Claim 1 (b = 0): the max form stays closer to the lasso than the sum form (Kifer et al.)."""
    X, y = sim("linear", 200, 13)
    ref = penalized_fit("linear", X, y, 1.0, "lasso")
    d = {}
    for moor in (True, False):
        m = napp(
            loss="linear",
            Lambda=1.0,
            eps=1e9,
            Lambda0=1.0,
            y_bound=10.0,
            theta_bound=20.0,
            moor=moor,
            max_iter=40,
            seed=14,
        ).fit(X, y)
        d[moor] = np.linalg.norm(m.coef_ - ref)
    assert d[True] < 0.5 * d[False]


def test_vs_plus_is_sparser_at_moderate_noise():
    X, y = sim("linear", 2000, 15)
    kw = dict(loss="linear", Lambda=4.0, eps=20.0, delta=1e-4, y_bound=2.0, theta_bound=3.0, max_iter=40)
    nsel = {
        s: np.mean([napp(selection=s, seed=k, insecure_seed=k, **kw).fit(X, y).selected_.sum() for k in range(3)])
        for s in (None, "vs+")
    }
    assert nsel["vs+"] < nsel[None]


def test_interface_and_prediction():
    X, y = sim("poisson", 300, 16)
    with pytest.warns(NAPPApproximationWarning):  # eps = 1 with n_e = 1000: the DP term is not realised
        m = napp(
            loss="poisson",
            Lambda=2.0,
            eps=1.0,
            y_bound=50,
            theta_bound=3.0,
            max_iter=3,
            n_e=1000,
            seed=0,
            insecure_seed=0,
        ).fit(X, y)
    assert m.privacy_.details["dp_term_shift"] > 0.1
    assert m.coef_.shape == (P,) and m.intercept_ == 0.0
    np.testing.assert_allclose(m.predict(X), np.exp(X @ m.coef_))
    assert m.privacy_.eps == 1.0 and m.privacy_.details["noise_distribution"] == "spherical Laplace"
    assert np.linalg.norm(m.coef_) <= 3.0 + 1e-9  # the parameter ball is respected
    Xl, yl = sim("logistic", 300, 17)
    c = napp(loss="logistic", Lambda=2.0, eps=5.0, zeta1=2.0, max_iter=3, n_e=1002, seed=0, insecure_seed=0).fit(Xl, yl)
    assert c.privacy_.details["dp_term_shift"] < 0.1
    assert set(np.unique(c.predict(Xl))) <= {0, 1}
    assert c.predict_proba(Xl).shape == (300, 2)
    # same seed and same insecure noise seed -> same fit (the seed alone no longer fixes the DP noise)
    c1 = napp(loss="logistic", Lambda=2.0, eps=5.0, zeta1=2.0, max_iter=3, n_e=1002, seed=0, insecure_seed=4).fit(
        Xl, yl
    )
    c2 = napp(loss="logistic", Lambda=2.0, eps=5.0, zeta1=2.0, max_iter=3, n_e=1002, seed=0, insecure_seed=4).fit(
        Xl, yl
    )
    np.testing.assert_array_equal(c1.coef_, c2.coef_)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kw,err",
    [
        (dict(eps=0.0), PrivacyParameterError),
        (dict(eps=-1.0), PrivacyParameterError),
        (dict(eps=float("inf")), PrivacyParameterError),
        (dict(delta=1.5), PrivacyParameterError),
        (dict(n_e=1001), DDSSPError),
        (dict(n_e=0), DDSSPError),
        (dict(Lambda0=0.5), PrivacyParameterError),  # minimum is zeta3/(2(1-r)eps) = 1
        (dict(r=0.0), PrivacyParameterError),
        (dict(r=1.0), PrivacyParameterError),
        (dict(r=1.5), PrivacyParameterError),
        (dict(theta_bound=None), PrivacyParameterError),
        (dict(y_bound=None), PrivacyParameterError),
        (dict(zeta1=0.0), PrivacyParameterError),
        (dict(loss="hinge"), DDSSPError),
        (dict(penalty="scad"), DDSSPError),
        (dict(selection="yes"), DDSSPError),
        (dict(budget="spend"), DDSSPError),
    ],
)
def test_bad_input_raises(kw, err):
    X, y = sim("linear", 50, 18)
    base = dict(loss="linear", eps=1.0, y_bound=2.0, theta_bound=3.0, n_e=100, max_iter=2, seed=0)
    base.update(kw)
    with pytest.raises(err):
        napp(**base).fit(X, y)


def test_lambda0_at_minimum_is_accepted_and_logistic_y_checked():
    X, y = sim("linear", 50, 19)
    m = napp(loss="linear", eps=1.0, Lambda0=1.0, y_bound=2.0, theta_bound=3.0, n_e=100, max_iter=2).fit(X, y)
    assert m.privacy_.details["Lambda0"] == 1.0
    with pytest.raises(DDSSPError):
        napp(loss="logistic", eps=1.0, n_e=100, max_iter=2).fit(X, y)


@pytest.mark.parametrize("loss", LOSSES)
def test_dp_term_is_realised_to_first_order(loss):
    """The augmented rows' loss, as a function of theta along a direction, has slope b . u at 0 and its
    deviation from b^T theta + theta^T diag(M) theta is second order in the shift |e* . theta|."""
    rng = np.random.default_rng(20)
    n_e = 10000
    M = np.full(P, 3.0)
    b = rng.normal(0, 40, P)
    E, ey = augmented_rows(loss, M, b, n_e, rng)
    _, _, H0 = loss_grad_hess(loss, E, ey, np.zeros(P))
    f0 = loss_grad_hess(loss, E, ey, np.zeros(P))[0]
    u = rng.normal(size=P)
    u /= np.linalg.norm(u)
    for s in (0.05, 0.2):
        th = s * u
        f = loss_grad_hess(loss, E, ey, th)[0]
        quad = b @ th + 0.5 * th @ H0 @ th
        shift = dp_shift(loss, b, th, n_e)
        assert shift < 0.01
        assert abs(f - f0 - quad) < 0.02 * abs(quad)


def test_linear_ey_keeps_rank_one_term_small():
    rng = np.random.default_rng(21)
    b = rng.normal(0, 300, P)
    n_e = 10000
    c0 = linear_ey(b, n_e)
    assert c0 > 1.0
    E, ey = augmented_rows("linear", np.ones(P), b, n_e, rng)
    _, g, H = loss_grad_hess("linear", E, ey, np.zeros(P))
    np.testing.assert_allclose(g, b, atol=1e-8 * np.linalg.norm(b))
    assert np.linalg.norm(np.outer(b, b)) / (n_e * c0**2) <= 0.01 + 1e-12


def test_auto_zero_threshold_when_everything_is_zero():
    X, y = sim("linear", 300, 22)
    m = napp(loss="linear", Lambda=200.0, eps=1e12, Lambda0=1.0, y_bound=2.0, theta_bound=3.0, max_iter=30, seed=0).fit(
        X, y
    )
    assert np.abs(m.coef_).max() < 1e-7
    assert not m.selected_.any()
    assert penalized_fit("linear", X, y, 200.0).any() == False  # noqa: E712 - the lasso is all zero too


def test_simulation_runner_small(tmp_path):
    from ddssp.bench import BenchContext
    from ddssp.bench.napp_erm import run
    from ddssp.errors import WorkloadError

    spec = {
        "kind": "napp-erm-simulation",
        "eps": [1.0],
        "trials": 1,
        "n_e": 200,
        "max_iter": 2,
        "n_test": 100,
        "methods": ["NAPP-ERM", "MOOR(b=0)", "lasso"],
        "designs": [{"loss": "linear", "n": 50, "Lambda": [1.0, 5.0], "y_bound": 1.7, "theta_bound": 2.0}],
    }
    ctx = BenchContext(spec_path=tmp_path / "s.toml", outdir=tmp_path, quiet=True)
    df = run(spec, ctx)
    for c in ("method", "loss", "n", "lambda", "epsilon", "trial", "metric", "value", "seconds"):
        assert c in df.columns
    assert set(df["method"]) == {"NAPP-ERM", "MOOR(b=0)", "lasso"}
    assert set(df.loc[df.method == "NAPP-ERM", "metric"]) == {
        "test_mse",
        "tpr",
        "fpr",
        "l2_to_lasso",
        "n_iter",
        "retrieved_frac",
        "dp_term_shift",
    }
    assert (df.loc[df.method == "lasso", "metric"] == "l2_to_lasso").sum() == 2
    with pytest.raises(WorkloadError):
        run(dict(spec, methods=["nope"]), ctx)
    with pytest.raises(WorkloadError):
        run(dict(spec, designs=[{"loss": "probit", "n": 50, "Lambda": 1.0}]), ctx)


# ------------------------------------------------------------------ selection rule
def test_alternating_coefficient_is_not_selected():
    """VS+ with a DP term larger than the data gradient flips a coefficient's sign at every iteration
    (the issue's case: linear n = 500, Lambda = 1.5, eps = 1). The sign rule does not select such a
    coefficient (and sets it to 0); the old magnitude threshold did."""
    from ddssp.bench.napp_erm import simulate

    X, y = simulate("linear", 500, np.random.default_rng(0))
    kw = dict(
        loss="linear",
        Lambda=1.5,
        eps=1.0,
        delta=1e-4,
        zeta1=1.0,
        y_bound=1.7,
        theta_bound=2.0,
        selection="vs+",
        max_iter=40,
        seed=0,
        insecure_seed=0,
    )  # both fits get the same DP draw
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NAPPApproximationWarning)
        m = napp(selection_rule="sign", sign_window=10, **kw).fit(X, y)
        old = napp(selection_rule="threshold", **kw).fit(X, y)
    alternating = m.sign_changes_ == 10  # changed sign at each of the last 10 iterations
    assert alternating.sum() >= 3
    assert not m.selected_[alternating].any()
    assert np.all(m.coef_[alternating] == 0.0) and np.all(m.coef_last_[alternating] != 0.0)
    assert not m.selected_[m.sign_changes_ > 0].any()  # any change in the window: not selected
    assert old.selected_[alternating].all()  # the magnitude rule counted them
    assert m.lambda_paper_ == 0.75  # code Lambda = 2 x paper Lambda for the lasso


def test_sign_window_validated_and_rule_choices():
    X, y = np.ones((4, 2)) * 0.1, np.zeros(4)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(DDSSPError, match="sign_window"):
            napp(y_bound=1.0, theta_bound=1.0, sign_window=bad).fit(X, y)
    with pytest.raises(DDSSPError, match="selection_rule"):
        napp(y_bound=1.0, theta_bound=1.0, selection_rule="magnitude").fit(X, y)
    with pytest.raises(DDSSPError, match="recycle_noise"):
        napp(y_bound=1.0, theta_bound=1.0, recycle_noise="again").fit(X, y)


@pytest.mark.parametrize("loss", ["linear", "logistic"])
def test_vs_plus_selects_nothing_without_true_effects(loss):
    """Paper Sec 5.2, claim 2: with all coefficients 0, NAPP-VS+ finds all of them at large Lambda.
    Here n = 5000, eps = 5, Lambda = 100 (code scale), 3 seeds: nothing selected, coef_ exactly 0."""
    half = 0.5 if loss == "logistic" else 0.25
    kw = dict(y_bound=1.7, theta_bound=2.0, zeta1=1.0) if loss == "linear" else dict(zeta1=2.0)
    for k in range(3):
        rng = np.random.default_rng(k)
        X = rng.uniform(-half, half, (5000, 16))
        y = (
            rng.normal(0, 0.25, 5000).clip(-0.5, 0.5)
            if loss == "linear"
            else (rng.uniform(size=5000) < 0.5).astype(float)
        )
        m = napp(
            loss=loss,
            Lambda=100.0,
            eps=5.0,
            delta=1e-4,
            selection="vs+",
            n_e=2000,
            max_iter=30,
            seed=k,
            insecure_seed=k,
            **kw,
        ).fit(X, y)
        assert not m.selected_.any()
        assert np.all(m.coef_ == 0.0)


def test_recycle_rescale_is_step_6():
    """Algorithm 2 step 6: the recycled run's DP term is the first draw times r eps / (r eps + Delta_eps)."""
    from ddssp.estimators import napp_erm

    rng = np.random.default_rng(1)
    X = rng.uniform(-0.25, 0.25, (300, 4))
    y = X @ np.array([1.0, 0.5, 0.0, 0.0]) + rng.normal(0, 0.1, 300)
    seen = []
    real_run = napp_erm.NAPPERM._run

    def spy(self, X, y, b, Lambda0, P, rng, o):
        seen.append(b.copy())
        return real_run(self, X, y, b, Lambda0, P, rng, o)

    kw = dict(
        loss="linear", Lambda=40.0, eps=1.0, y_bound=2.0, theta_bound=2.0, budget="recycle", max_iter=5, seed=3, n_e=200
    )
    napp_erm.NAPPERM._run = spy
    try:
        m = napp(recycle_noise="rescale", **kw).fit(X, y)
        assert len(seen) == 2
        d = m.privacy_.details["retrieved_eps"]
        assert d > 0
        np.testing.assert_allclose(seen[1], seen[0] * 0.5 / (0.5 + d), rtol=1e-12)
        seen.clear()
        napp(recycle_noise="fresh", **kw).fit(X, y)
        assert len(seen) == 2 and not np.allclose(seen[1] / seen[0], (seen[1] / seen[0])[0])
    finally:
        napp_erm.NAPPERM._run = real_run
