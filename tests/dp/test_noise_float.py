"""The float mechanisms of the noise source (used by AdaSSP, ObjectivePerturbation, PDP-OP):
statistical tests of OpenDP's float Gaussian / Laplace samplers, their privacy maps, the exact
CSPRNG coin flips, and the insecure (numpy) equivalents.

False-alarm rates. Every statistical assertion is a test at level ALPHA = 1e-6 (z-score bound 5.3,
two-sided p ~ 1.2e-7); there are fewer than 60 of them in this file, so a correct sampler fails the
file with probability below 6e-5. KS p-values are exact for these continuous laws (the outputs lie on
a grid of about 2e-16 of the scale, far below what n = 20,000 draws can resolve)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ddssp.dp import measurements as ms
from ddssp.dp import noise as nz
from ddssp.dp import samplers as sp
from ddssp.errors import PrivacyParameterError

ALPHA = 1e-6
Z = 5.3
N = 20_000
SCALES = [1e-3, 0.7, 31.0, 5e4]


def _check(draws: np.ndarray, law, second: float, fourth: float) -> None:
    n = draws.size
    assert abs(draws.mean()) <= Z * math.sqrt(second / n)
    assert abs(np.mean(draws**2) - second) <= Z * math.sqrt((fourth - second**2) / n)
    assert stats.kstest(draws, law.cdf).pvalue > ALPHA


@pytest.mark.parametrize("sigma", SCALES)
def test_secure_gaussian_float_distribution(sigma):
    values = np.random.default_rng(0).uniform(-3, 3, N) * sigma  # noise is tested on top of data
    out = nz.SecureNoise().gaussian_float(values, sigma)
    assert out.shape == values.shape and out.dtype == float
    _check(out - values, stats.norm(scale=sigma), sigma**2, 3 * sigma**4)


@pytest.mark.parametrize("scale", SCALES)
def test_secure_laplace_float_distribution(scale):
    values = np.full((100, N // 100), 2.0 * scale)
    out = nz.SecureNoise().laplace_float(values, scale)
    assert out.shape == values.shape
    _check((out - values).ravel(), stats.laplace(scale=scale), 2 * scale**2, 24 * scale**4)


@pytest.mark.parametrize("sigma", [0.7, 31.0])
def test_insecure_float_samplers_same_law_and_reproducible(sigma):
    a = nz.InsecureSeededNoise(3).gaussian_float(np.zeros(N), sigma)
    assert np.array_equal(a, nz.InsecureSeededNoise(3).gaussian_float(np.zeros(N), sigma))
    _check(a, stats.norm(scale=sigma), sigma**2, 3 * sigma**4)
    b = nz.InsecureSeededNoise(3).laplace_float(np.zeros(N), sigma)
    _check(b, stats.laplace(scale=sigma), 2 * sigma**2, 24 * sigma**4)


def test_ks_detects_a_wrong_scale():
    """Power check: 10% too little noise is caught by the same tests."""
    draws = nz.SecureNoise().gaussian_float(np.zeros(N), 0.9)
    assert stats.kstest(draws, stats.norm(scale=1.0).cdf).pvalue < ALPHA or abs(
        np.mean(draws**2) - 1.0
    ) > Z * math.sqrt(2 / N)


def test_secure_float_noise_has_no_seed_and_lies_on_the_grid():
    s = nz.SecureNoise()
    a, b = s.gaussian_float(np.zeros(50), 1.0), s.gaussian_float(np.zeros(50), 1.0)
    assert not np.array_equal(a, b)
    # noise on 0 is exact discrete noise on the grid 2^k (k = floor(log2 scale) - 52): the output set
    # does not depend on the input's low bits (OpenDP's floating-point-safe construction)
    for scale in (1.0, 37.0):
        k = ms.float_grid_k(scale)
        for out in (s.gaussian_float(np.zeros(200), scale), s.laplace_float(np.zeros(200), scale)):
            steps = out / 2.0**k
            assert np.array_equal(steps, np.round(steps))


@pytest.mark.parametrize("sigma,size,d_in", [(0.5, 1, 1.0), (3.0, 100, 2.0), (1e3, 5050, 1.0)])
def test_float_gaussian_map_is_the_gaussian_zcdp_charge(sigma, size, d_in):
    """OpenDP's map: rho = (d_in + rounding)^2 / (2 sigma^2), rounding <= sqrt(size) 2^k for the 2^k
    grid (included: never below the textbook charge; relative excess < 1e-9 here)."""
    rho = ms.opendp_charge(ms.gaussian_float_measurement(sigma, size), d_in)[0]
    textbook = d_in**2 / (2 * sigma**2)
    bound = (d_in + math.sqrt(size) * 2.0 ** ms.float_grid_k(sigma)) ** 2 / (2 * sigma**2)
    assert textbook <= rho <= bound * (1 + 1e-12) and rho <= textbook * (1 + 1e-9)


@pytest.mark.parametrize("scale,size,d_in", [(0.5, 1, 1.0), (3.0, 100, 2.0), (1e3, 5050, 1.0)])
def test_float_laplace_map_is_eps_over_scale(scale, size, d_in):
    m = ms.laplace_float_measurement(scale, size)
    eps = float(m.map(d_in))
    bound = (d_in + size * 2.0 ** ms.float_grid_k(scale)) / scale
    assert d_in / scale <= eps <= bound * (1 + 1e-12) and eps <= d_in / scale * (1 + 1e-9)
    assert str(m.output_measure).startswith("MaxDivergence")


def test_float_inputs_refused():
    s = nz.SecureNoise()
    with pytest.raises(PrivacyParameterError):
        s.gaussian_float([1.0, np.nan], 1.0)
    with pytest.raises(PrivacyParameterError):
        s.laplace_float([np.inf], 1.0)
    with pytest.raises(PrivacyParameterError):
        s.gaussian_float([1.0], 0.0)
    with pytest.raises(PrivacyParameterError):
        s.laplace_float([1.0], -1.0)
    assert s.gaussian_float(np.zeros((0, 3)), 1.0).shape == (0, 3)
    with pytest.raises(PrivacyParameterError):
        s.l2_laplace(0, 1.0)
    with pytest.raises(PrivacyParameterError):
        s.l2_laplace(3, np.inf)


# --------------------------------------------------------------------------- coin flips
@pytest.mark.parametrize("p", [1e-3, 0.05, 1 / 3, 0.5, 0.9])
def test_secure_bernoulli_frequencies(p):
    n = 200_000
    k = int(nz.SecureNoise().bernoulli(np.full(n, p)).sum())
    assert stats.binomtest(k, n, p).pvalue > ALPHA


def test_bernoulli_edges_and_bad_input():
    s = nz.SecureNoise()
    out = s.bernoulli(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert out.dtype == bool and out.tolist() == [[False, True], [True, False]]
    assert s.bernoulli(np.full(100_000, 2.0**-80)).sum() == 0  # P(any True) ~ 1e-19
    for bad in ([-0.1], [1.5], [np.nan]):
        with pytest.raises(PrivacyParameterError):
            s.bernoulli(bad)


def test_bernoulli_tie_path_is_exact(monkeypatch):
    """When the first 64 uniform bits equal floor(p 2^64), the comparison continues with more bits:
    with p = 2^-70 + 2^-72 (floor(p 2^64) = 0, fraction 2^-6 + 2^-8 = 5/256) and u = 0 forced, the
    coin is True iff the next 8 bits are below 5."""
    import secrets

    p = 2.0**-70 + 2.0**-72
    monkeypatch.setattr(secrets, "token_bytes", lambda n: bytes(n))
    seen = []

    def bits(k):
        seen.append(k)
        return bits.value

    monkeypatch.setattr(secrets, "randbits", bits)
    bits.value = 4
    assert sp.secure_bernoulli([p]).tolist() == [True]
    bits.value = 5
    assert sp.secure_bernoulli([p]).tolist() == [False]
    assert seen == [8, 8]


def test_insecure_bernoulli_reproducible():
    p = np.linspace(0, 1, 1000)
    a = nz.InsecureSeededNoise(5).bernoulli(p)
    assert np.array_equal(a, nz.InsecureSeededNoise(5).bernoulli(p))
    assert a[0] == False and a[-1] == True  # noqa: E712


def test_resolve_noise():
    assert isinstance(nz.resolve_noise(), nz.SecureNoise)
    assert isinstance(nz.resolve_noise(insecure_seed=2), nz.InsecureSeededNoise)
    src = nz.InsecureSeededNoise(1)
    assert nz.resolve_noise(src) is src
    with pytest.raises(PrivacyParameterError):
        nz.resolve_noise(src, 3)
    with pytest.raises(PrivacyParameterError):
        nz.resolve_noise(np.random.default_rng(0))
    with pytest.raises(PrivacyParameterError):
        nz.resolve_noise(7)
