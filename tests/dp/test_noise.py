"""The noise source: statistical tests of the samplers and the ledger's charges against OpenDP's maps.

False-alarm rates. Every statistical assertion below is a test at level ALPHA = 1e-6 (or a z-score
bound of 5.3, two-sided p ~ 1.2e-7); with fewer than 40 such assertions in this file the chance
that a correct sampler fails the file is below 4e-5. The KS statistic is taken over the integers and its
p-value from the continuous-null Kolmogorov law, which is conservative for a discrete distribution (the
true false-alarm rate is at most the nominal one)."""

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

SIGMAS = [0.7, 2.5, 31.0, 900.0]


def _dg_moments(sigma: float) -> tuple[float, float, float]:
    """Variance, and 4th moment of N_Z(0, sigma^2) from its pmf (the mean is 0 by symmetry)."""
    k = int(math.ceil(40 * sigma + 40))
    z = np.arange(-k, k + 1)
    p = sp.discrete_gaussian_pmf(sigma, z)
    var = float(np.sum(p * z.astype(float) ** 2))
    m4 = float(np.sum(p * z.astype(float) ** 4))
    return var, m4, float(p.sum())


def _ks_discrete(draws: np.ndarray, sigma: float) -> tuple[float, float]:
    """KS distance sup_x |F_n(x) - F(x)| over the integers (both CDFs are step functions jumping only
    at integers, so that is the supremum over all x) and its p-value under the continuous-null
    Kolmogorov law (scipy's kstwo), which is conservative for a discrete F (Noether 1963)."""
    k = int(math.ceil(40 * sigma + 40))
    z = np.arange(-k, k + 1)
    F = np.cumsum(sp.discrete_gaussian_pmf(sigma, z))
    Fn = np.cumsum(np.bincount(np.clip(draws, -k, k) + k, minlength=z.size)) / draws.size
    d = float(np.max(np.abs(Fn - F)))
    return d, float(stats.kstwo.sf(d, draws.size))


def _check_discrete_gaussian(draws: np.ndarray, sigma: float) -> None:
    n = draws.size
    var, m4, total = _dg_moments(sigma)
    assert total == pytest.approx(1.0, abs=1e-12)
    assert draws.dtype.kind == "i"
    # mean: z-test against 0
    assert abs(draws.mean()) <= Z * math.sqrt(var / n), (sigma, draws.mean())
    # variance: z-test with the sample variance's standard error sqrt((m4 - var^2) / n)
    assert abs(np.mean(draws.astype(float) ** 2) - var) <= Z * math.sqrt((m4 - var**2) / n), (sigma, draws.var(), var)
    # KS against the discrete Gaussian's CDF (conservative for a discrete law)
    d, p = _ks_discrete(draws, sigma)
    assert p > ALPHA, (sigma, d, p)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_secure_discrete_gaussian_distribution(sigma):
    noise = nz.SecureNoise()
    counts = np.full(20_000, 7, dtype=np.int64)
    out = noise.gaussian_int(counts, sigma)
    _check_discrete_gaussian(out - 7, sigma)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_insecure_discrete_gaussian_distribution(sigma):
    out = nz.InsecureSeededNoise(123).gaussian_int(np.zeros(40_000), sigma)
    _check_discrete_gaussian(out, sigma)


def test_ks_detects_a_rounded_continuous_gaussian():
    # power check: at sigma = 0.7, rounding N(0, 0.7^2) is far from the discrete Gaussian
    draws = np.round(np.random.default_rng(0).normal(0, 0.7, 20_000)).astype(np.int64)
    assert _ks_discrete(draws, 0.7)[1] < ALPHA


def test_discrete_gaussian_pmf_variance_limits():
    # large sigma: variance -> sigma^2; small sigma: well below sigma^2 (mass concentrates on 0)
    assert _dg_moments(50.0)[0] == pytest.approx(2500.0, rel=1e-9)
    assert _dg_moments(0.3)[0] < 0.3**2


def test_gaussian_int_keeps_shape_and_integers():
    noise = nz.SecureNoise()
    counts = np.arange(24, dtype=float).reshape(2, 3, 4)
    out = noise.gaussian_int(counts, 1.0)
    assert out.shape == (2, 3, 4) and out.dtype == np.int64
    with pytest.raises(PrivacyParameterError, match="integer counts"):
        noise.gaussian_int(np.array([0.5]), 1.0)
    with pytest.raises(PrivacyParameterError, match="sigma"):
        noise.gaussian_int(np.array([1]), 0.0)


def _selection_pvalue(noise: nz.NoiseSource, scores, eps, sens, n) -> tuple[float, np.ndarray]:
    scale = 2 * sens / eps
    draws = np.array([noise.noisy_max(scores, scale) for _ in range(n)])
    counts = np.bincount(draws, minlength=len(scores))
    logits = eps * np.asarray(scores) / (2 * sens)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    return stats.chisquare(counts, n * p).pvalue, counts / n


@pytest.mark.parametrize("eps,sens", [(1.0, 1.0), (0.5, 3.0)])
def test_secure_selection_frequencies_match_exponential_mechanism(eps, sens):
    scores = [0.0, 1.0, 2.5, 4.0, 4.0]
    p, freq = _selection_pvalue(nz.SecureNoise(), scores, eps, sens, 8000)
    assert p > ALPHA, (p, freq)


def test_insecure_selection_frequencies_match_exponential_mechanism():
    p, freq = _selection_pvalue(nz.InsecureSeededNoise(5), [0.0, 1.0, 2.5, 4.0, 4.0], 1.0, 1.0, 20000)
    assert p > ALPHA, (p, freq)


def test_selection_detects_a_wrong_scale():
    # power check of the chi-square test: the same draws are far from the law at twice the eps
    scores = [0.0, 1.0, 2.5, 4.0, 4.0]
    noise = nz.InsecureSeededNoise(9)
    draws = np.array([noise.noisy_max(scores, 2.0) for _ in range(8000)])
    counts = np.bincount(draws, minlength=5)
    logits = 2.0 * np.asarray(scores) / 2.0
    p = np.exp(logits - logits.max())
    p /= p.sum()
    assert stats.chisquare(counts, 8000 * p).pvalue < ALPHA


def test_insecure_source_is_reproducible_and_secure_is_not():
    a = nz.InsecureSeededNoise(7).gaussian_int(np.zeros(500), 10.0)
    b = nz.InsecureSeededNoise(7).gaussian_int(np.zeros(500), 10.0)
    assert np.array_equal(a, b)
    s1 = nz.SecureNoise().gaussian_int(np.zeros(500), 10.0)
    s2 = nz.SecureNoise().gaussian_int(np.zeros(500), 10.0)
    assert not np.array_equal(s1, s2)  # P(equal) ~ (0.04)^500
    assert nz.make_noise(None).secure and nz.make_noise(None).stamp is None
    assert nz.make_noise(3).stamp == nz.INSECURE_STAMP
    with pytest.raises(PrivacyParameterError):
        nz.make_noise(-1)


# --------------------------------------------------------------------------- charges vs OpenDP
@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.7, 123.0])
def test_gaussian_charge_matches_opendp_map(sigma):
    from ddssp.dp import gaussian_rho

    rho, delta = ms.opendp_charge(ms.gaussian_measurement(sigma), 1)
    assert delta == 0.0
    assert gaussian_rho(sigma) == pytest.approx(rho, rel=1e-12)
    assert rho >= gaussian_rho(sigma)  # OpenDP rounds its map up; the ledger charges that value


@pytest.mark.parametrize("eps_em,sens", [(1.0, 1.0), (0.05, 17.0), (3.0, 0.25)])
def test_selection_charge_matches_opendp_map(eps_em, sens):
    from ddssp.dp import exponential_rho

    rho, delta = ms.opendp_charge(ms.noisy_max_measurement(2 * sens / eps_em), sens)
    assert delta == 0.0
    assert exponential_rho(eps_em) == pytest.approx(rho, rel=1e-12)


def test_noisy_max_output_measures():
    """Which OpenDP output measure gives AIM's charge: with zero_concentrated_divergence make_noisy_max
    adds Gumbel noise (the exponential mechanism) and its map is (2 d/scale)^2 / 8 = eps^2/8; with
    max_divergence it adds exponential noise (permute-and-flip-like) and its map is pure eps = 2 d/scale.
    ddssp uses the zCDP one."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    scale, d = 4.0, 1.5
    eps = 2 * d / scale
    zcdp = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=scale)
    pure = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=scale)
    assert zcdp.map(d) == pytest.approx(eps**2 / 8, rel=1e-12)
    assert pure.map(d) == pytest.approx(eps, rel=1e-12)
    assert str(ms.noisy_max_measurement(scale).output_measure).startswith("ZeroConcentratedDivergence")


def test_ledger_charge_opendp_generic_entry_and_approximate_zcdp():
    """The hook schema discovery uses: any OpenDP measurement charged by its own map, (rho, delta)
    for approximate zCDP, refused past either budget; unknown kinds fail entry_problem until registered."""
    import opendp.prelude as dp

    from ddssp.dp import Ledger, LedgerEntry, entry_problem, register_entry_check
    from ddssp.errors import BudgetExceededError

    dp.enable_features("contrib")
    space = (
        dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=dp.i32)),
        dp.l02inf_distance(dp.absolute_distance(T=dp.i32)),
    )
    meas = dp.m.make_gaussian_threshold(*space, scale=10.0, threshold=60)
    rho, delta = ms.opendp_charge(meas, (1, 1, 1))
    assert rho > 0 and 0 < delta < 1e-3
    led = Ledger(1.0, delta_budget=1e-3)
    e = led.charge_opendp("threshold-test", meas, (1, 1, 1), params={"scale": 10.0, "threshold": 60})
    assert (e.rho, e.delta) == (rho, delta) and led.delta_spent == delta
    out = nz.SecureNoise().run_opendp(meas, {"a": 1000, "b": 1})
    assert "a" in out and set(out) <= {"a", "b"}
    assert entry_problem(e) == "unknown mechanism kind 'threshold-test'"
    register_entry_check("threshold-test", lambda entry: None)
    assert entry_problem(e) is None
    assert LedgerEntry.from_dict(e.to_dict()) == e
    tight = Ledger(1.0, delta_budget=delta / 2)
    with pytest.raises(BudgetExceededError, match="delta"):
        tight.charge_opendp("threshold-test", meas, (1, 1, 1))
    assert tight.entries == []


@pytest.mark.parametrize("tries", [0, 8])
def test_restricted_selection_is_the_exponential_mechanism_on_the_allowed_set(tries):
    """ChargedMechanisms.select with ``allowed``: redrawing over all candidates (then, after ``tries`` misses,
    noisy max over the allowed ones) gives P(i) proportional to exp(eps s_i / 2 sens) on the allowed
    set and 0 elsewhere. The disallowed candidates carry the highest scores, so a redraw is common."""
    from ddssp.dp import ChargedMechanisms, Ledger

    scores = np.array([0.0, 4.5, 1.0, 2.5, 5.0, 4.0])
    ok = [0, 2, 3, 5]
    eps, sens, n = 1.0, 1.0, 8000
    ledger = Ledger(10_000.0)
    mech = ChargedMechanisms(ledger, nz.InsecureSeededNoise(11 + tries))
    draws = np.array([mech.select(scores, eps, sens, allowed=set(ok).__contains__, tries=tries) for _ in range(n)])
    counts = np.bincount(draws, minlength=len(scores))
    assert counts[1] == counts[4] == 0
    logits = eps * scores[ok] / (2 * sens)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    assert stats.chisquare(counts[ok], n * p).pvalue > ALPHA, counts
    # one charge per selection, whatever the number of draws
    assert len(ledger.entries) == n
    assert ledger.spent == pytest.approx(n * eps**2 / 8)
