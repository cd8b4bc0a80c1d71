"""Samplers outside OpenDP: exact secure coin flips, and the seeded discrete Gaussian of the
insecure noise source.

:func:`secure_bernoulli` draws exact Bernoulli(p) for a float p from the OS's CSPRNG (OpenDP's
boolean randomized response needs p >= 1/2 and one call per coin); it is the secure source's
``bernoulli``. :func:`discrete_gaussian_numpy` draws N_Z(0, sigma^2) from a seeded numpy Generator:
reproducible and so NOT private, for :class:`~ddssp.dp.noise.InsecureSeededNoise` and the seeded
fallbacks of tests. :func:`discrete_gaussian_pmf` is the law the discrete Gaussian samplers are
tested against. The noise sources that use them are :mod:`ddssp.dp.noise`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.errors import PrivacyParameterError


def as_probs(p: Any) -> np.ndarray:
    """Coin-flip probabilities as a float array, each checked to lie in [0, 1].

    Parameters
    ----------
    p : array-like of float
        Probabilities, any shape.

    Returns
    -------
    numpy.ndarray
        ``p`` as floats, same shape.

    Raises
    ------
    PrivacyParameterError
        When a probability lies outside [0, 1] (or is NaN).
    """
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

    a = as_probs(p)
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
