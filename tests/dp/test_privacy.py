import math

import numpy as np
import pytest
from scipy import stats

from ddssp.dp import (
    ChargedMechanisms,
    InsecureSeededNoise,
    Ledger,
    LedgerEntry,
    SecureNoise,
    cks_delta,
    eps_from_rho_delta,
    exponential_probabilities,
    gaussian_rho,
    gaussian_sigma,
    make_rng,
    rho_from_eps_delta,
)
from ddssp.errors import BudgetExceededError, PrivacyParameterError


@pytest.mark.parametrize(
    "eps,delta,rho,tol",
    [(1, 1e-5, 0.030557, 1e-6), (1, 1e-9, 0.014973, 1e-6), (0.1, 1e-5, 4.33e-4, 1e-6), (0.05, 1e-5, 1.2105e-4, 1e-8)],
)
def test_rho_reference_values(eps, delta, rho, tol):
    assert rho_from_eps_delta(eps, delta) == pytest.approx(rho, abs=tol)


@pytest.mark.parametrize("eps,delta", [(0.05, 1e-5), (1, 1e-9), (3, 1e-6), (10, 1e-3)])
def test_conversion_round_trip_and_safe_side(eps, delta):
    rho = rho_from_eps_delta(eps, delta)
    assert cks_delta(rho, eps) <= delta  # the returned rho is feasible
    assert cks_delta(rho * 1.001, eps) > delta  # and (nearly) the largest one
    back = eps_from_rho_delta(rho, delta)
    assert back >= eps - 1e-12 and back == pytest.approx(eps, rel=1e-9)


def test_cks_never_above_classic_bound():
    # the CKS bound is at least as tight as delta from eps = rho + 2 sqrt(rho log(1/delta))
    for rho in [1e-4, 1e-2, 0.5]:
        for delta in [1e-9, 1e-5]:
            eps = rho + 2 * math.sqrt(rho * math.log(1 / delta))
            assert cks_delta(rho, eps) <= delta * (1 + 1e-9)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "x"])
def test_bad_eps(bad):
    with pytest.raises(PrivacyParameterError):
        rho_from_eps_delta(bad, 1e-5)


@pytest.mark.parametrize("bad", [0, 1, 1.5, -1e-9, float("nan")])
def test_bad_delta(bad):
    with pytest.raises(PrivacyParameterError):
        rho_from_eps_delta(1.0, bad)


def test_gaussian_calibration():
    assert gaussian_rho(gaussian_sigma(0.3)) == pytest.approx(0.3)
    assert gaussian_sigma(0.5) == pytest.approx(1.0)
    ledger = Ledger(1.0)
    sigma = 3.0
    noisy = ChargedMechanisms(ledger, SecureNoise()).measure(np.zeros(50_000, dtype=np.int64), sigma, clique=("a", "b"))
    assert noisy.dtype == np.int64
    # sample sd within 5 standard errors of sigma (the discrete Gaussian's variance is sigma^2 to
    # within 1e-80 at sigma = 3); mean ~ 0
    se = sigma / math.sqrt(2 * noisy.size)
    assert abs(noisy.std() - sigma) < 5 * se
    assert abs(noisy.mean()) < 5 * sigma / math.sqrt(noisy.size)
    assert ledger.entries[0].sigma == sigma and ledger.entries[0].clique == ("a", "b")
    assert ledger.spent == pytest.approx(1 / (2 * sigma**2), rel=1e-12)


def test_charged_mechanisms_refuse_numpy_generators_as_noise():
    ledger = Ledger(1.0)
    with pytest.raises(TypeError, match="NoiseSource"):
        ChargedMechanisms(ledger, make_rng(0))
    with pytest.raises(TypeError, match="NoiseSource"):
        ChargedMechanisms(ledger, 7)
    assert ledger.entries == []


def test_exponential_mechanism_frequencies():
    scores = [0.0, 1.0, 2.0, 4.0]
    p = exponential_probabilities(scores, eps_em=1.0, sensitivity=1.0)
    expect = np.exp(np.array(scores) / 2)
    assert np.allclose(p, expect / expect.sum())
    ledger = Ledger(1e6)
    mech = ChargedMechanisms(ledger, InsecureSeededNoise(7))
    n = 5_000
    draws = np.bincount([mech.select(scores, 1.0, 1.0) for _ in range(n)], minlength=4)
    chi2 = stats.chisquare(draws, n * p)
    assert chi2.pvalue > 1e-6  # false-alarm rate 1e-6
    assert ledger.spent == pytest.approx(n / 8, rel=1e-9)


def test_ledger_refuses_overspend_and_sums():
    ledger = Ledger(0.1)
    ledger.charge(LedgerEntry("measure", 0.04))
    ledger.charge(LedgerEntry("select", 0.05))
    with pytest.raises(BudgetExceededError):
        ledger.charge(LedgerEntry("measure", 0.02))
    assert len(ledger.entries) == 2
    ledger.charge(LedgerEntry("measure", ledger.remaining))  # exactly what remains is allowed
    assert ledger.spent == pytest.approx(0.1, rel=1e-12)
    assert ledger.spent <= 0.1 * (1 + 1e-12)
    again = Ledger.from_dict(ledger.to_dict())
    assert again.spent == ledger.spent and again.entries == ledger.entries


def test_seeds():
    a = make_rng(3).normal(size=5)
    b = make_rng(3).normal(size=5)
    c = make_rng(4).normal(size=5)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert not np.array_equal(make_rng(None).normal(size=5), make_rng(None).normal(size=5))
    with pytest.raises(PrivacyParameterError):
        make_rng(-1)


def test_clip_rows_never_exceeds_bound():
    from ddssp.dp import clip_rows

    rng = make_rng(0)
    X = rng.normal(size=(2000, 7)) * rng.exponential(5, size=(2000, 1))
    for bound in [1e-3, 0.7, 1.0, 3.3]:
        C = clip_rows(X, bound)
        norms = np.linalg.norm(C, axis=1)
        assert np.all(norms <= bound)
        inside = np.linalg.norm(X, axis=1) <= bound
        assert np.array_equal(C[inside], X[inside])  # rows within the bound are untouched
        assert np.allclose(norms[~inside], bound)  # the others land on it
        assert np.allclose(C[~inside] / norms[~inside, None], X[~inside] / np.linalg.norm(X[~inside], axis=1)[:, None])


@pytest.mark.parametrize("bad", [0, -2, float("nan"), float("inf"), "x", None, True])
def test_check_positive(bad):
    from ddssp.dp import check_positive

    with pytest.raises(PrivacyParameterError, match="x_bound"):
        check_positive(bad, "x_bound", "a declared bound")
    assert check_positive("2.5", "x") == 2.5


@pytest.mark.parametrize("bad", [0, -2, float("nan"), float("inf"), "x", None, True])
def test_check_bound_says_declared(bad):
    from ddssp.dp import check_bound

    with pytest.raises(PrivacyParameterError, match=r"clip_x .*a declared bound, not computed from the data"):
        check_bound(bad, "clip_x")
    assert check_bound(3, "clip_x") == 3.0
