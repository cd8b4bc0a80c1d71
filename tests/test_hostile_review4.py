"""Hostile input, fourth review: a wide raw table is refused from its header before discovery reads
it or draws noise; the key-release cost the ledger's self-check recomputes per entry is cheap and
gives the values it gave before; nested Parquet columns the user drops are not warned of."""

from __future__ import annotations

import math


def _spy_on_noise(monkeypatch) -> list:
    """Record every draw of either noise source."""
    from ddssp.dp.noise import InsecureSeededNoise, SecureNoise

    drawn: list = []

    def spy_on(real):
        def spy(self, *a, **k):
            drawn.append(1)
            return real(self, *a, **k)

        return spy

    for cls in (SecureNoise, InsecureSeededNoise):
        for draw in ("gaussian_int", "noisy_max", "gaussian_float", "laplace_float", "bernoulli", "run_opendp"):
            monkeypatch.setattr(cls, draw, spy_on(getattr(cls, draw)))
    return drawn


# --------------------------------------------------------------------------- key-release cost
def _old_threshold_cost(sigma: float, threshold: int) -> tuple[float, float]:
    """The key-release cost as it was computed before it was made cheap: a fresh OpenDP measurement
    per call, and the tail bound through scipy.stats.norm."""
    from scipy.stats import norm

    from ddssp.dp.measurements import opendp

    dp = opendp()
    dom = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=dp.i64))
    metric = dp.l02inf_distance(dp.absolute_distance(T=dp.i64))
    m = dp.m.make_gaussian_threshold(dom, metric, scale=float(sigma), threshold=int(threshold))
    rho, delta = m.map((1, 1, 1))
    z = float(threshold - 1) / float(sigma)
    tail = float(min(1.0, norm.sf(z) + norm.pdf(z) / float(sigma)))
    return float(rho), max(float(delta), tail)


def test_threshold_cost_gives_the_values_it_gave_before():
    from ddssp.dp.discovery_mechanisms import discrete_tail_bound, threshold_cost

    sigmas = [0.05, 0.3, 0.9999, 1.0, 2.5, 7.0, 10.0 + 1e-3, 33.3, 100.0, 1234.5, 1e5]
    thresholds = [2, 3, 5, 11, 40, 97, 400, 5000]
    for sigma in sigmas:
        for t in thresholds:
            want = _old_threshold_cost(sigma, t)
            assert threshold_cost(sigma, t) == want, (sigma, t)
            assert threshold_cost(sigma, t) == want, (sigma, t)  # memoised: the same again
    from scipy.stats import norm

    for sigma in sigmas:
        for m in (-3.0, 0.0, 0.5, 1.0, 4.0, 39.0, 1e3):
            z = m / sigma
            assert discrete_tail_bound(sigma, m) == float(min(1.0, norm.sf(z) + norm.pdf(z) / sigma)), (sigma, m)


def test_forged_discovery_entries_checked_as_before(tmp_path):
    """The self-check verifies each key-release entry's rho and delta against the (memoised) cost:
    a valid entry passes and one with its rho or delta off is named."""
    from ddssp.dp.discovery_mechanisms import _check_keys_entry, threshold_cost
    from ddssp.dp.entries import LedgerEntry

    sigma, t = 10.0 + 7e-3, 40
    rho, delta = threshold_cost(sigma, t)

    def entry(r, d):
        return LedgerEntry.from_dict(
            {
                "kind": "discover-keys",
                "rho": r,
                "sigma": sigma,
                "eps_em": None,
                "clique": ["a"],
                "round": None,
                "note": "",
                "delta": d,
                "params": {"threshold": t, "l0": 1, "l2": 1, "linf": 1},
            }
        )

    assert _check_keys_entry(entry(rho, delta)) is None
    assert "rho" in _check_keys_entry(entry(rho * (1 + 1e-6), delta))
    assert "delta" in _check_keys_entry(entry(rho, delta * 0.99))
    assert math.isfinite(rho) and 0 < delta < 1
