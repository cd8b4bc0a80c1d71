"""The secure and the seeded noise paths draw the same law: the discrete Gaussian counts of OpenDP's
sampler (fresh releases) against the seeded numpy sampler (``--insecure-seed``), compared with each
other directly (each is also tested against the exact pmf in tests/dp/test_noise.py), at the noise
scales discovery uses, through the charged mechanism that discovery calls.

False alarms: each two-sample test is at level ALPHA = 1e-6 (four of them: under 4e-6 per run);
the power check shows the same test sees a 10% error of scale."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ddssp.dp import Ledger
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise, SecureNoise

ALPHA = 1e-6
N = 20_000


def _draws(noise, sigma: float, counts: np.ndarray) -> np.ndarray:
    """Noisy counts minus the exact ones, through :meth:`ChargedMechanisms.counts` (as discovery)."""
    mech = ChargedMechanisms(Ledger(1e9, delta_budget=1e-6), noise)
    out = mech.counts(counts, sigma, column="x", note="calibration")
    assert out.dtype.kind == "i"
    return np.asarray(out, dtype=np.int64) - counts


def _two_sample_p(a: np.ndarray, b: np.ndarray, sigma: float) -> float:
    """Chi-square two-sample test on bins of width sigma / 4 over +-4 sigma (tails pooled)."""
    edges = np.concatenate([[-np.inf], np.arange(-4 * sigma, 4 * sigma + 1e-9, max(sigma / 4, 1.0)), [np.inf]])
    ca, _ = np.histogram(a, edges)
    cb, _ = np.histogram(b, edges)
    keep = (ca + cb) > 0
    return float(stats.chi2_contingency(np.vstack([ca[keep], cb[keep]]))[1])


@pytest.mark.parametrize("sigma", [3.3, 47.2])
def test_secure_and_seeded_discrete_gaussians_agree(sigma):
    """Same law, sign and scale: the two-sample chi-square test does not reject, the means are
    near 0 and the sds within 5% of sigma on both paths."""
    counts = np.full(N, 7, dtype=np.int64)
    a = _draws(SecureNoise(), sigma, counts)
    b = _draws(InsecureSeededNoise(5), sigma, counts)
    assert _two_sample_p(a, b, sigma) > ALPHA
    for d in (a, b):
        assert abs(d.mean()) < 5.3 * sigma / np.sqrt(N)
        assert abs(d.std() / sigma - 1) < 0.05


def test_two_sample_test_sees_a_wrong_scale():
    """Power: the same test rejects seeded draws at 1.1 x the scale."""
    counts = np.zeros(N, dtype=np.int64)
    a = _draws(SecureNoise(), 47.2, counts)
    b = _draws(InsecureSeededNoise(6), 47.2 * 1.1, counts)
    assert _two_sample_p(a, b, 47.2) < ALPHA
