"""The noise source: every DP random draw of a release goes through one :class:`NoiseSource`.

Why a separate source. A release must not be undoable: if the noise on a count came from a
``numpy.random.Generator`` seeded by ``--seed``, anyone holding the seed could replay the draws
and subtract them (the "seed reversal" attack); and float Gaussian noise leaks the true value in
its low bits (Mironov 2012). So DP noise never comes from numpy and never from a seed:

- :class:`SecureNoise` (the default, and the only private one) runs OpenDP's (0.16) exact samplers
  in its Rust core, fed by the operating system's CSPRNG. OpenDP has no seed parameter, so nothing
  a user passes to ddssp reaches the noise. Counts get the *discrete* Gaussian (integers in,
  integers out: no floating-point leak); selection is the Gumbel "report noisy max", which is the
  exponential mechanism, sampled exactly by OpenDP (no float probabilities).
- :class:`InsecureSeededNoise` (``--insecure-seed N``) draws the same distributions from
  ``numpy.random.default_rng(N)``. The noise is reproducible, and so is removable: a release made
  with it is stamped :data:`INSECURE_STAMP` and every command that reads it prints the stamp.
  It exists for tests and debugging only.

Interface (all a mechanism needs; the ledger charges *before* it calls any of these):

``noise.gaussian_int(counts, sigma) -> np.ndarray[int64]``
    ``counts`` (integer-valued array, any shape) plus independent discrete Gaussian noise
    N_Z(0, sigma^2) per cell (P(z) proportional to exp(-z^2 / (2 sigma^2)), z integer).
``noise.noisy_max(scores, scale) -> int``
    argmax_i (scores_i + Gumbel(scale)_i): P(i) proportional to exp(scores_i / scale). With
    scale = 2 * sensitivity / eps_em this is the exponential mechanism at eps_em.
``noise.run_opendp(measurement, arg, fallback=None)``
    Run any other OpenDP measurement (e.g. ``make_gaussian_threshold`` for key release,
    ``make_private_quantile``). In insecure mode, ``fallback(rng)`` is called instead when given
    (a numpy re-implementation, for reproducible tests); without one the OpenDP measurement runs
    securely (its noise is then simply not reproducible).
``noise.secure``, ``noise.stamp`` (None or :data:`INSECURE_STAMP`), ``noise.describe()`` (for the file).

The OpenDP measurements themselves (with their privacy maps, which the ledger uses as its charge)
come from :func:`gaussian_measurement` and :func:`noisy_max_measurement`; :func:`opendp_charge` turns
any measurement's map into (rho, delta), so new mechanism kinds (thresholds, quantiles) are charged
the same way: see :meth:`ddssp.dp.accounting.Ledger.charge_opendp`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ddssp.errors import PrivacyParameterError

#: Printed by every command that reads a release whose noise is reproducible from a seed.
INSECURE_STAMP = "NOT PRIVATE: noise reproducible from a seed"


def _dp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _check_scale(x: float, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"{name} must be a number, got {x!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise PrivacyParameterError(f"{name} must be positive and finite, got {x!r}")
    return v


def _as_int_counts(counts: Any) -> np.ndarray:
    a = np.asarray(counts)
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2**62):
        return a.astype(np.int64)
    raise PrivacyParameterError("the discrete Gaussian mechanism needs integer counts")


def _as_scores(scores: Any) -> np.ndarray:
    q = np.asarray(list(scores) if not isinstance(scores, np.ndarray) else scores, dtype=float).ravel()
    if q.size == 0:
        raise PrivacyParameterError("selection needs at least one candidate")
    if not np.all(np.isfinite(q)):
        raise PrivacyParameterError("selection scores must be finite")
    return q


# --------------------------------------------------------------------------- OpenDP measurements
@lru_cache(maxsize=256)
def gaussian_measurement(sigma: float):
    """OpenDP discrete Gaussian on integer vectors (L2 distance), output measure zCDP."""
    dp = _dp()
    space = dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=dp.i64)
    return dp.m.make_gaussian(*space, scale=float(sigma))


@lru_cache(maxsize=256)
def noisy_max_measurement(scale: float):
    """OpenDP report-noisy-max on float scores (L-inf distance, not monotonic) with output measure
    zCDP, i.e. Gumbel noise: the exponential mechanism, charged eps^2/8 with eps = 2 d_in / scale.
    (With ``max_divergence`` OpenDP would add exponential noise instead: permute-and-flip.)"""
    dp = _dp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    return dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=float(scale))


def opendp_charge(measurement, d_in: Any) -> tuple[float, float]:
    """(rho, delta) of ``measurement`` at input distance ``d_in``, from OpenDP's privacy map.

    zCDP measures map to rho (delta 0); approximate zCDP maps to (rho, delta)."""
    out = measurement.map(d_in)
    if isinstance(out, (tuple, list)):
        rho, delta = out
        return float(rho), float(delta)
    return float(out), 0.0


# --------------------------------------------------------------------------- sources
class NoiseSource:
    """Base class; see the module docstring for the interface."""

    secure: bool = False
    stamp: str | None = None

    def gaussian_int(self, counts: Any, sigma: float) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def noisy_max(self, scores: Any, scale: float) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def run_opendp(self, measurement, arg: Any, fallback: Callable[[np.random.Generator], Any] | None = None):
        return measurement(arg)

    def describe(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError


class SecureNoise(NoiseSource):
    """OpenDP's exact samplers on the OS's CSPRNG. No seed, no state in Python."""

    secure = True
    stamp = None

    def gaussian_int(self, counts: Any, sigma: float) -> np.ndarray:
        sigma = _check_scale(sigma, "sigma")
        a = _as_int_counts(counts)
        if a.size == 0:
            return a.copy()
        out = gaussian_measurement(sigma)(a.ravel().tolist())
        return np.asarray(out, dtype=np.int64).reshape(a.shape)

    def noisy_max(self, scores: Any, scale: float) -> int:
        scale = _check_scale(scale, "selection scale")
        q = _as_scores(scores)
        if q.size == 1:
            return 0
        return int(noisy_max_measurement(scale)(q.tolist()))

    def describe(self) -> dict[str, Any]:
        return {"source": "opendp", "secure": True}


def _discrete_laplace(rng: np.random.Generator, t: float, size: int) -> np.ndarray:
    """Integers with P(y) proportional to exp(-|y| / t): difference of two geometric variables."""
    p = -math.expm1(-1.0 / t)  # success probability 1 - exp(-1/t)
    return (rng.geometric(p, size) - rng.geometric(p, size)).astype(np.int64)


def discrete_gaussian_numpy(rng: np.random.Generator, sigma: float, size: int) -> np.ndarray:
    """Discrete Gaussian N_Z(0, sigma^2) draws from a numpy Generator (Canonne-Kamath-Steinke 2020,
    Algorithm 3: discrete Laplace proposals with scale t = floor(sigma) + 1, accepted with probability
    exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))). Float arithmetic: reproducible, NOT a private sampler."""
    t = math.floor(sigma) + 1.0
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        need = size - filled
        m = int(need * 1.6) + 16
        y = _discrete_laplace(rng, t, m)
        accept = rng.random(m) < np.exp(-((np.abs(y) - sigma**2 / t) ** 2) / (2.0 * sigma**2))
        y = y[accept][:need]
        out[filled : filled + y.size] = y
        filled += y.size
    return out


class InsecureSeededNoise(NoiseSource):
    """The same distributions from ``numpy.random.default_rng(seed)``: reproducible and therefore
    NOT PRIVATE (anyone with the seed can subtract the noise). For tests and debugging only."""

    secure = False
    stamp = INSECURE_STAMP

    def __init__(self, seed: int):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise PrivacyParameterError(f"the insecure seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)

    def gaussian_int(self, counts: Any, sigma: float) -> np.ndarray:
        sigma = _check_scale(sigma, "sigma")
        a = _as_int_counts(counts)
        return a + discrete_gaussian_numpy(self.rng, sigma, a.size).reshape(a.shape)

    def noisy_max(self, scores: Any, scale: float) -> int:
        scale = _check_scale(scale, "selection scale")
        q = _as_scores(scores)
        return int(np.argmax(q / scale + self.rng.gumbel(size=q.size)))

    def run_opendp(self, measurement, arg: Any, fallback: Callable[[np.random.Generator], Any] | None = None):
        return fallback(self.rng) if fallback is not None else measurement(arg)

    def describe(self) -> dict[str, Any]:
        return {"source": "numpy-seeded", "secure": False, "seed": self.seed, "stamp": INSECURE_STAMP}


def make_noise(insecure_seed: int | None = None) -> NoiseSource:
    """The noise source for a release: :class:`SecureNoise` unless an insecure seed is given."""
    if insecure_seed is None:
        return SecureNoise()
    return InsecureSeededNoise(insecure_seed)


def discrete_gaussian_pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    """P(z) of N_Z(0, sigma^2) at the integers ``support`` (normalised over |z| <= 40 sigma + 40)."""
    k = int(math.ceil(40 * sigma + 40))
    zs = np.arange(-k, k + 1)
    logw = -(zs.astype(float) ** 2) / (2 * sigma**2)
    norm = np.exp(logw - logw.max()).sum()
    return np.exp(-(np.asarray(support, dtype=float) ** 2) / (2 * sigma**2) - logw.max()) / norm
