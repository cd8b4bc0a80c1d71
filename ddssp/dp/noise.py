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
``noise.gaussian_float(values, sigma) -> np.ndarray[float]``
    ``values`` (finite floats, any shape) plus independent N(0, sigma^2) noise per entry: OpenDP's
    float Gaussian mechanism (see "Float mechanisms" below).
``noise.laplace_float(values, scale) -> np.ndarray[float]``
    ``values`` plus independent Laplace(scale) noise per entry (OpenDP's float Laplace mechanism).
``noise.l2_laplace(d, eta, size=None) -> np.ndarray[float]``
    Vectors in R^d with density proportional to exp(-eta ||z||_2) (PDP-OP's output noise): a
    Gamma(d, 1/eta) radius times a uniform direction, built from the two float samplers above.
``noise.bernoulli(p) -> np.ndarray[bool]``
    Independent coin flips, True with probability p (each float p in [0, 1], exactly).
``noise.run_opendp(measurement, arg, fallback=None)``
    Run any other OpenDP measurement (e.g. ``make_gaussian_threshold`` for key release,
    ``make_private_quantile``). In insecure mode, ``fallback(rng)`` is called instead when given
    (a numpy re-implementation, for reproducible tests); without one the OpenDP measurement runs
    securely (its noise is then simply not reproducible).
``noise.secure``, ``noise.stamp`` (None or :data:`INSECURE_STAMP`), ``noise.describe()`` (for the file).

Float mechanisms (used by the estimators AdaSSP, ObjectivePerturbation and the PDP-OP family).
OpenDP's float Gaussian and Laplace mechanisms are floating-point safe: the input is rounded to a
grid of 2^k, *exact* discrete Gaussian / Laplace noise on that grid is added in exact arithmetic, and
the result is rounded to the nearest float (post-processing), so the set of possible outputs does not
depend on the input's low bits (no Mironov attack). We set k = floor(log2(scale)) - FLOAT_GRID_BITS
(grid 2^-52 to 2^-51 of the noise scale: the float spacing of numbers of the noise's size), which is
about 5x faster than OpenDP's default k (k = -1074). The rounding adds at most 2^k per entry to the
sensitivity (L1: size 2^k, L2: sqrt(size) 2^k); OpenDP's map includes it, so the charge exceeds the
textbook one by a relative ~ size * 2^-52 * scale / d_in (< 1e-9 for the estimators' sizes and scales). A fixed k needs the vector length in the domain, so
measurements are built (and cached) per (scale, length).

What is exact and what is not:

- ``gaussian_float`` / ``laplace_float`` of *data-dependent values*: exact and floating-point safe
  (OpenDP's proofs).
- ``l2_laplace``: every random draw is OpenDP's (CSPRNG, no seed): the radius is the sum of d
  exponentials |Laplace(1)| (a Gamma(d, 1) variable), the direction a normalised vector of d
  standard Gaussians. The sum, the normalisation and the division by eta are float arithmetic, and
  the caller adds the vector to a float estimate: relative errors of order d * 1e-16 in a vector
  whose scale is d / eta. So the *seed* attack is closed, and the distribution is exact up to those
  rounding errors, but the final ``estimate + noise`` is ordinary float addition, NOT a
  floating-point-safe mechanism in OpenDP's sense. OpenDP (0.16) has no multivariate L2-Laplace
  (or Gamma) sampler; we say so rather than claim more.
- ``bernoulli``: exact Bernoulli(p) for the float p (a dyadic rational), from the OS's CSPRNG
  (:func:`os.urandom` via :mod:`secrets`), not from OpenDP (whose boolean randomized response
  needs p >= 1/2 and one call per coin). The float p itself is the rounded value of whatever real
  probability the caller meant (relative error ~1e-16).

The OpenDP measurements themselves (with their privacy maps, which the ledger uses as its charge)
come from :func:`gaussian_measurement` and :func:`noisy_max_measurement`; :func:`opendp_charge` turns
any measurement's map into (rho, delta), so new mechanism kinds (thresholds, quantiles) are charged
the same way: see :meth:`ddssp.dp.accounting.Ledger.charge_opendp`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from ddssp.dp.params import check_positive
from ddssp.errors import PrivacyParameterError

#: Printed by every command that reads a release whose noise is reproducible from a seed.
INSECURE_STAMP = "NOT PRIVATE: noise reproducible from a seed"


_OPENDP = None


def opendp():
    """OpenDP's names as ``opendp.prelude`` spells them, with the "contrib" features enabled.

    ``dp.m``, ``dp.c``, domains, metrics, measures and types; imported on first use, so commands that
    draw no noise never load OpenDP. Every OpenDP measurement of ddssp is built through this. It is
    built from OpenDP's modules rather than ``opendp.prelude``, which also imports OpenDP's
    scikit-learn extras and so takes several times longer to load.

    Returns
    -------
    types.SimpleNamespace
    """
    global _OPENDP
    if _OPENDP is None:
        import types

        from opendp import combinators, domains, measurements, measures, metrics, mod, typing

        ns = types.SimpleNamespace()
        for module in (typing, mod, domains, metrics, measures):
            ns.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
        ns.m, ns.c = measurements, combinators
        mod.enable_features("contrib")
        _OPENDP = ns
    return _OPENDP


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


def _as_floats(values: Any) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(a)):
        raise PrivacyParameterError("the float noise mechanisms need finite values")
    return a


def _as_eta(d: Any, eta: Any, size: Any) -> tuple[int, np.ndarray, tuple[int, ...]]:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise PrivacyParameterError(f"the dimension d must be a positive integer, got {d!r}")
    eta = np.asarray(eta, dtype=float)
    if np.any(~(eta > 0)) or np.any(~np.isfinite(eta)):
        raise PrivacyParameterError("the noise rate eta must be positive and finite")
    shape = np.broadcast_shapes(() if size is None else tuple(np.atleast_1d(size)), eta.shape)
    return int(d), eta, shape


def _as_probs(p: Any) -> np.ndarray:
    a = np.asarray(p, dtype=float)
    if not np.all((a >= 0) & (a <= 1)):
        raise PrivacyParameterError("coin-flip probabilities must lie in [0, 1]")
    return a


_TWO64 = 2.0**64


def secure_bernoulli(p: Any) -> np.ndarray:
    """Independent Bernoulli(p_i) draws, exact for the float p_i, from the OS's CSPRNG.

    A uniform U in [0, 1) is compared with p bit by bit: the first 64 bits ``u`` (one ``uint64`` per
    coin from :func:`secrets.token_bytes`) settle ``U < p`` unless ``u == floor(p 2^64)`` (probability
    2^-64); only then are further bits drawn (in Python, with exact rationals). p = 0 never and p = 1
    always gives True.

    Parameters
    ----------
    p : array-like of float
        Probabilities in [0, 1], any shape.

    Returns
    -------
    numpy.ndarray
        Booleans, shaped like ``p``.
    """
    import secrets
    from fractions import Fraction

    a = _as_probs(p)
    flat = a.ravel()
    n = flat.size
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out.reshape(a.shape)
    u = np.frombuffer(secrets.token_bytes(8 * n), dtype=np.uint64)
    inner = (flat > 0) & (flat < 1)
    scaled = np.where(inner, flat, 0.0) * _TWO64  # exact: scaling by a power of two
    top = np.floor(scaled)  # an integer below 2^64, exactly representable
    top_int = top.astype(np.uint64)
    out[flat >= 1] = True
    out[inner] = u[inner] < top_int[inner]
    ties = np.flatnonzero(inner & (u == top_int) & (scaled > top))
    for i in ties:  # U = (u + V) / 2^64 with V uniform in [0, 1): True iff V < frac
        frac = Fraction(float(scaled[i])) - Fraction(int(top_int[i]))
        num, den = frac.numerator, frac.denominator  # den is a power of two
        bits = den.bit_length() - 1
        out[i] = secrets.randbits(bits) < num
    return out.reshape(a.shape)


def _l2_laplace_from(radius_exp: np.ndarray, gauss: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """radius = (sum of d Exp(1)) / eta, direction = gauss / ||gauss||."""
    radius = radius_exp.sum(axis=-1) / eta
    norms = np.linalg.norm(gauss, axis=-1, keepdims=True)
    return radius[..., None] * gauss / norms


# --------------------------------------------------------------------------- OpenDP measurements
@lru_cache(maxsize=256)
def gaussian_measurement(sigma: float):
    """OpenDP discrete Gaussian on integer vectors (L2 distance), output measure zCDP.

    Parameters
    ----------
    sigma : float
        The noise scale.

    Returns
    -------
    opendp Measurement
    """
    dp = opendp()
    space = dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=dp.i64)
    return dp.m.make_gaussian(*space, scale=float(sigma))


@lru_cache(maxsize=256)
def noisy_max_measurement(scale: float):
    """OpenDP report-noisy-max on float scores (L-inf distance, not monotonic) with output measure zCDP.

    With a zCDP output measure the noise is Gumbel: the exponential mechanism, charged eps^2/8 with
    eps = 2 d_in / scale. (With ``max_divergence`` OpenDP would add exponential noise instead:
    permute-and-flip.)

    Parameters
    ----------
    scale : float
        The Gumbel scale.

    Returns
    -------
    opendp Measurement
    """
    dp = opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    return dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=float(scale))


#: the float mechanisms' grid is 2^k with k = floor(log2(scale)) - FLOAT_GRID_BITS
FLOAT_GRID_BITS = 52


def float_grid_k(scale: float) -> int:
    """OpenDP's noise granularity exponent k for a float mechanism at ``scale`` (see the module docstring).

    Parameters
    ----------
    scale : float
        The noise scale.

    Returns
    -------
    int
    """
    return int(math.floor(math.log2(float(scale)))) - FLOAT_GRID_BITS


def _float_noise(make_measurement, values: Any, scale: float) -> np.ndarray:
    """``values`` plus noise from ``make_measurement(scale, size)`` (an OpenDP float-vector
    measurement), shaped like ``values``."""
    a = _as_floats(values)
    if a.size == 0:
        return a.copy()
    out = make_measurement(scale, a.size)(a.ravel().tolist())
    return np.asarray(out, dtype=float).reshape(a.shape)


@lru_cache(maxsize=256)
def gaussian_float_measurement(sigma: float, size: int):
    """OpenDP's Gaussian mechanism on float vectors (L2 distance), output measure zCDP.

    rho = (d_in + rounding)^2 / (2 sigma^2), the rounding term (at most sqrt(size) 2^k) included by
    OpenDP's map.

    Parameters
    ----------
    sigma : float
        The noise scale.
    size : int
        The vector length.

    Returns
    -------
    opendp Measurement
    """
    dp = opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=int(size)), dp.l2_distance(T=float)
    return dp.m.make_gaussian(*space, scale=float(sigma), k=float_grid_k(sigma))


@lru_cache(maxsize=256)
def laplace_float_measurement(scale: float, size: int):
    """OpenDP's Laplace mechanism on float vectors (L1 distance), pure DP: eps = (d_in + rounding) / scale.

    Parameters
    ----------
    scale : float
        The noise scale.
    size : int
        The vector length.

    Returns
    -------
    opendp Measurement
    """
    dp = opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=int(size)), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=float(scale), k=float_grid_k(scale))


def opendp_charge(measurement, d_in: Any) -> tuple[float, float]:
    """(rho, delta) of a measurement at an input distance, from OpenDP's privacy map.

    zCDP measures map to rho (delta 0); approximate zCDP maps to (rho, delta).

    Parameters
    ----------
    measurement : opendp Measurement
        The measurement.
    d_in : any
        The input distance (the public sensitivity).

    Returns
    -------
    tuple of float
        (rho, delta).
    """
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
        """Interface: discrete Gaussian noise N_Z(0, sigma^2) added to integer counts.

        Parameters
        ----------
        counts : array-like of int
            Integer-valued counts, any shape.
        sigma : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            int64 noisy counts, shaped like ``counts``.
        """
        raise NotImplementedError

    def noisy_max(self, scores: Any, scale: float) -> int:  # pragma: no cover - abstract
        """Interface: report noisy max: argmax_i (scores_i + Gumbel(scale)_i).

        P(i) is proportional to exp(scores_i / scale); with scale = 2 * sensitivity / eps_em this is the
        exponential mechanism at eps_em.

        Parameters
        ----------
        scores : array-like of float
            Finite scores, one per candidate.
        scale : float
            The Gumbel scale.

        Returns
        -------
        int
            The index selected.
        """
        raise NotImplementedError

    def gaussian_float(self, values: Any, sigma: float) -> np.ndarray:  # pragma: no cover - abstract
        """Interface: independent N(0, sigma^2) noise added to each float.

        Parameters
        ----------
        values : array-like of float
            Finite values, any shape.
        sigma : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            Noisy floats, shaped like ``values``.
        """
        raise NotImplementedError

    def laplace_float(self, values: Any, scale: float) -> np.ndarray:  # pragma: no cover - abstract
        """Interface: independent Laplace(scale) noise added to each float.

        Parameters
        ----------
        values : array-like of float
            Finite values, any shape.
        scale : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            Noisy floats, shaped like ``values``.
        """
        raise NotImplementedError

    def bernoulli(self, p: Any) -> np.ndarray:  # pragma: no cover - abstract
        """Interface: independent coin flips, True with probability p.

        Parameters
        ----------
        p : array-like of float
            Probabilities in [0, 1], any shape.

        Returns
        -------
        numpy.ndarray
            Booleans, shaped like ``p``.
        """
        raise NotImplementedError

    def l2_laplace(self, d: int, eta: Any, size: Any = None) -> np.ndarray:
        """Draws with density proportional to exp(-eta ||z||_2) on R^d (PDP-OP's output noise).

        Radius Gamma(d, 1/eta) as the sum of d exponentials |Laplace(1)|, times a normalised vector of d
        standard Gaussians (uniform on the sphere). One ``laplace_float`` and one ``gaussian_float`` call
        for the whole batch. See the module docstring for what is exact.

        Parameters
        ----------
        d : int
            The dimension.
        eta : float or array-like of float
            The rate (positive).
        size : int or tuple of int, optional
            The batch shape, broadcast with that of ``eta``.

        Returns
        -------
        numpy.ndarray
            Shape broadcast(size, eta) + (d,).
        """
        d, eta, shape = _as_eta(d, eta, size)
        full = shape + (d,)
        exps = np.abs(self.laplace_float(np.zeros(full), 1.0))
        gauss = self.gaussian_float(np.zeros(full), 1.0)
        zero = np.linalg.norm(gauss, axis=-1) == 0
        while np.any(zero):  # a zero vector has no direction (probability ~ 0): draw those again
            gauss[zero] = self.gaussian_float(np.zeros((int(zero.sum()), d)), 1.0)
            zero = np.linalg.norm(gauss, axis=-1) == 0
        return _l2_laplace_from(exps, gauss, eta)

    def run_opendp(self, measurement, arg: Any, fallback: Callable[[np.random.Generator], Any] | None = None):
        """Interface: run an OpenDP measurement (e.g. key release).

        Parameters
        ----------
        measurement : opendp Measurement
            The measurement, already charged to a ledger.
        arg : any
            Its input.
        fallback : callable, optional
            ``fallback(rng)``: a numpy re-implementation, used by the insecure seeded source for
            reproducible tests.

        Returns
        -------
        any
            The measurement's output.
        """
        return measurement(arg)

    def describe(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """Interface: a description of the noise source, for the release file.

        Returns
        -------
        dict
        """
        raise NotImplementedError


class SecureNoise(NoiseSource):
    """OpenDP's exact samplers on the OS's CSPRNG. No seed, no state in Python."""

    secure = True
    stamp = None

    def gaussian_int(self, counts: Any, sigma: float) -> np.ndarray:
        """Secure: discrete Gaussian noise N_Z(0, sigma^2) added to integer counts (OpenDP's exact sampler).

        Parameters
        ----------
        counts : array-like of int
            Integer-valued counts, any shape.
        sigma : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            int64 noisy counts, shaped like ``counts``.
        """
        sigma = check_positive(sigma, "sigma")
        a = _as_int_counts(counts)
        if a.size == 0:
            return a.copy()
        out = gaussian_measurement(sigma)(a.ravel().tolist())
        return np.asarray(out, dtype=np.int64).reshape(a.shape)

    def noisy_max(self, scores: Any, scale: float) -> int:
        """Secure: report noisy max: argmax_i (scores_i + Gumbel(scale)_i) (OpenDP's exact sampler).

        P(i) is proportional to exp(scores_i / scale); with scale = 2 * sensitivity / eps_em this is the
        exponential mechanism at eps_em.

        Parameters
        ----------
        scores : array-like of float
            Finite scores, one per candidate.
        scale : float
            The Gumbel scale.

        Returns
        -------
        int
            The index selected.
        """
        scale = check_positive(scale, "selection scale")
        q = _as_scores(scores)
        if q.size == 1:
            return 0
        return int(noisy_max_measurement(scale)(q.tolist()))

    def gaussian_float(self, values: Any, sigma: float) -> np.ndarray:
        """Secure: independent N(0, sigma^2) noise added to each float (OpenDP's floating-point-safe mechanism).

        Parameters
        ----------
        values : array-like of float
            Finite values, any shape.
        sigma : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            Noisy floats, shaped like ``values``.
        """
        return _float_noise(gaussian_float_measurement, values, check_positive(sigma, "sigma"))

    def laplace_float(self, values: Any, scale: float) -> np.ndarray:
        """Secure: independent Laplace(scale) noise added to each float (OpenDP's floating-point-safe mechanism).

        Parameters
        ----------
        values : array-like of float
            Finite values, any shape.
        scale : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            Noisy floats, shaped like ``values``.
        """
        return _float_noise(laplace_float_measurement, values, check_positive(scale, "Laplace scale"))

    def bernoulli(self, p: Any) -> np.ndarray:
        """Secure: independent coin flips, True with probability p (:func:`secure_bernoulli`, exact for the float p).

        Parameters
        ----------
        p : array-like of float
            Probabilities in [0, 1], any shape.

        Returns
        -------
        numpy.ndarray
            Booleans, shaped like ``p``.
        """
        return secure_bernoulli(p)

    def describe(self) -> dict[str, Any]:
        """Secure: a description of the noise source, for the release file.

        Returns
        -------
        dict
        """
        return {"source": "opendp", "secure": True}


def _discrete_laplace(rng: np.random.Generator, t: float, size: int) -> np.ndarray:
    """Integers with P(y) proportional to exp(-|y| / t): difference of two geometric variables."""
    p = -math.expm1(-1.0 / t)  # success probability 1 - exp(-1/t)
    return (rng.geometric(p, size) - rng.geometric(p, size)).astype(np.int64)


def discrete_gaussian_numpy(rng: np.random.Generator, sigma: float, size: int) -> np.ndarray:
    """Discrete Gaussian N_Z(0, sigma^2) draws from a numpy Generator. Reproducible, NOT a private sampler.

    Canonne-Kamath-Steinke 2020, Algorithm 3: discrete Laplace proposals with scale
    t = floor(sigma) + 1, accepted with probability exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)), in float
    arithmetic.

    Parameters
    ----------
    rng : numpy.random.Generator
        The seeded generator.
    sigma : float
        The noise scale.
    size : int
        The number of draws.

    Returns
    -------
    numpy.ndarray
        int64 draws.
    """
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
    """The same distributions from ``numpy.random.default_rng(seed)``: reproducible and therefore NOT PRIVATE.

    Anyone with the seed can subtract the noise. For tests and debugging only; outputs carry
    :data:`INSECURE_STAMP`.

    Parameters
    ----------
    seed : int
        A non-negative integer.

    Raises
    ------
    PrivacyParameterError
        For a seed that is not a non-negative integer.
    """

    secure = False
    stamp = INSECURE_STAMP

    def __init__(self, seed: int):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise PrivacyParameterError(f"the insecure seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)

    def gaussian_int(self, counts: Any, sigma: float) -> np.ndarray:
        """NOT PRIVATE: discrete Gaussian noise N_Z(0, sigma^2) added to integer counts.

        Drawn by :func:`discrete_gaussian_numpy` from the seeded generator.

        Parameters
        ----------
        counts : array-like of int
            Integer-valued counts, any shape.
        sigma : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            int64 noisy counts, shaped like ``counts``.
        """
        sigma = check_positive(sigma, "sigma")
        a = _as_int_counts(counts)
        return a + discrete_gaussian_numpy(self.rng, sigma, a.size).reshape(a.shape)

    def noisy_max(self, scores: Any, scale: float) -> int:
        """NOT PRIVATE: report noisy max, argmax_i (scores_i + Gumbel(scale)_i), from the seeded generator.

        P(i) is proportional to exp(scores_i / scale); with scale = 2 * sensitivity / eps_em this is the
        exponential mechanism at eps_em.

        Parameters
        ----------
        scores : array-like of float
            Finite scores, one per candidate.
        scale : float
            The Gumbel scale.

        Returns
        -------
        int
            The index selected.
        """
        scale = check_positive(scale, "selection scale")
        q = _as_scores(scores)
        return int(np.argmax(q / scale + self.rng.gumbel(size=q.size)))

    def gaussian_float(self, values: Any, sigma: float) -> np.ndarray:
        """NOT PRIVATE: independent N(0, sigma^2) noise added to each float (from the seeded generator).

        Parameters
        ----------
        values : array-like of float
            Finite values, any shape.
        sigma : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            Noisy floats, shaped like ``values``.
        """
        sigma = check_positive(sigma, "sigma")
        a = _as_floats(values)
        return a + self.rng.normal(0.0, sigma, a.shape)

    def laplace_float(self, values: Any, scale: float) -> np.ndarray:
        """NOT PRIVATE: independent Laplace(scale) noise added to each float (from the seeded generator).

        Parameters
        ----------
        values : array-like of float
            Finite values, any shape.
        scale : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            Noisy floats, shaped like ``values``.
        """
        scale = check_positive(scale, "Laplace scale")
        a = _as_floats(values)
        return a + self.rng.laplace(0.0, scale, a.shape)

    def bernoulli(self, p: Any) -> np.ndarray:
        """NOT PRIVATE: independent coin flips, True with probability p (from the seeded generator).

        Parameters
        ----------
        p : array-like of float
            Probabilities in [0, 1], any shape.

        Returns
        -------
        numpy.ndarray
            Booleans, shaped like ``p``.
        """
        a = _as_probs(p)
        return self.rng.random(a.shape) < a

    def l2_laplace(self, d: int, eta: Any, size: Any = None) -> np.ndarray:
        """NOT PRIVATE: draws with density proportional to exp(-eta ||z||_2) on R^d (PDP-OP's output noise).

        A Gamma(d, 1/eta) radius times a normalised vector of d standard Gaussians, from the seeded
        generator.

        Parameters
        ----------
        d : int
            The dimension.
        eta : float or array-like of float
            The rate (positive).
        size : int or tuple of int, optional
            The batch shape, broadcast with that of ``eta``.

        Returns
        -------
        numpy.ndarray
            Shape broadcast(size, eta) + (d,).
        """
        d, eta, shape = _as_eta(d, eta, size)
        radius = self.rng.gamma(d, 1.0, size=shape) / eta
        g = self.rng.standard_normal(shape + (d,))
        return radius[..., None] * g / np.linalg.norm(g, axis=-1, keepdims=True)

    def run_opendp(self, measurement, arg: Any, fallback: Callable[[np.random.Generator], Any] | None = None):
        """NOT PRIVATE: run an OpenDP measurement (e.g. key release).

        ``fallback(rng)`` with the seeded generator when given, else the measurement itself (secure).

        Parameters
        ----------
        measurement : opendp Measurement
            The measurement, already charged to a ledger.
        arg : any
            Its input.
        fallback : callable, optional
            ``fallback(rng)``: a numpy re-implementation, used by the insecure seeded source for
            reproducible tests.

        Returns
        -------
        any
            The measurement's output.
        """
        return fallback(self.rng) if fallback is not None else measurement(arg)

    def describe(self) -> dict[str, Any]:
        """NOT PRIVATE: a description of the noise source, for the release file.

        Returns
        -------
        dict
        """
        return {"source": "numpy-seeded", "secure": False, "seed": self.seed, "stamp": INSECURE_STAMP}


def make_noise(insecure_seed: int | None = None) -> NoiseSource:
    """The noise source for a release: :class:`SecureNoise` unless an insecure seed is given.

    Parameters
    ----------
    insecure_seed : int, optional
        A seed for :class:`InsecureSeededNoise` (NOT PRIVATE).

    Returns
    -------
    NoiseSource
    """
    if insecure_seed is None:
        return SecureNoise()
    return InsecureSeededNoise(insecure_seed)


def resolve_noise(noise: NoiseSource | None = None, insecure_seed: int | None = None) -> NoiseSource:
    """The noise source an estimator uses: ``noise`` if given, else ``make_noise(insecure_seed)``.

    Parameters
    ----------
    noise : NoiseSource, optional
        An explicit source.
    insecure_seed : int, optional
        A seed for :class:`InsecureSeededNoise` (NOT PRIVATE).

    Returns
    -------
    NoiseSource
        Secure unless an insecure seed or an insecure source is given.

    Raises
    ------
    PrivacyParameterError
        When both are given, or ``noise`` is not a :class:`NoiseSource` (e.g. a numpy Generator or
        an int): a seed must never silently become the DP noise.
    """
    if noise is not None:
        if insecure_seed is not None:
            raise PrivacyParameterError("give either noise= or insecure_seed=, not both")
        if not isinstance(noise, NoiseSource):
            raise PrivacyParameterError(
                f"noise must be a NoiseSource (SecureNoise() or InsecureSeededNoise(seed)), got {type(noise).__name__}; "
                "for reproducible (NOT PRIVATE) test noise pass insecure_seed=N"
            )
        return noise
    return make_noise(insecure_seed)


def discrete_gaussian_pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    """P(z) of N_Z(0, sigma^2) at integers (normalised over |z| <= 40 sigma + 40).

    Parameters
    ----------
    sigma : float
        The noise scale.
    support : numpy.ndarray
        The integers to evaluate at.

    Returns
    -------
    numpy.ndarray
        Probabilities, shaped like ``support``.
    """
    k = int(math.ceil(40 * sigma + 40))
    zs = np.arange(-k, k + 1)
    logw = -(zs.astype(float) ** 2) / (2 * sigma**2)
    norm = np.exp(logw - logw.max()).sum()
    return np.exp(-(np.asarray(support, dtype=float) ** 2) / (2 * sigma**2) - logw.max()) / norm
