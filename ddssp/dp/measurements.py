"""The OpenDP measurements ddssp runs, and their privacy maps as the ledger's charge.

:func:`opendp` loads OpenDP's names on first use. The discrete Gaussian on integer counts
(:func:`gaussian_measurement`) and report noisy max (:func:`noisy_max_measurement`) are what a
release measures and selects with; the float Gaussian and Laplace mechanisms
(:func:`gaussian_float_measurement`, :func:`laplace_float_measurement`) serve the estimators.
:func:`opendp_charge` turns any measurement's map into (rho, delta), so new mechanism kinds
(thresholds, quantiles) are charged the same way: see
:meth:`ddssp.dp.accounting.Ledger.charge_opendp`. Running a measurement on data is the noise
source's job (:mod:`ddssp.dp.noise`).

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
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

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
