"""The mechanisms of private schema discovery, on OpenDP: their costs, thresholds and entry checks.

They run through :class:`~ddssp.dp.charged.ChargedMechanisms`, which charges each before it draws:

* noisy counts (:meth:`~ddssp.dp.charged.ChargedMechanisms.counts`): integer counts + discrete
  Gaussian noise (``make_gaussian`` on a vector of i64 counts, L2 sensitivity 1: each row adds 1 to
  exactly one cell). Cost rho = 1 / (2 sigma^2), read from OpenDP's own privacy map
  (:func:`gaussian_counts_rho`).
* stable key release (:meth:`~ddssp.dp.charged.ChargedMechanisms.keys`;
  ``make_gaussian_threshold``, Rogers 2023): noisy counts of the observed labels, kept only when
  the noisy count reaches the threshold. Each row holds one label, so a neighbour changes one count
  by one (L0 = L2 = Linf = 1). Cost: approximate zCDP (rho, delta), where delta bounds the
  probability that a label held by one row is released (:func:`threshold_cost`).
  :func:`choose_threshold` picks the smallest integer threshold whose delta is at most the delta
  given.
* private medians (:meth:`~ddssp.dp.charged.ChargedMechanisms.medians`): one level of a private
  median tree. In each of several groups (disjoint runs of cells of one count vector: each row is in
  one cell of one group), the exponential mechanism picks the grid edge nearest the group's median,
  with quality -|below - at or above| / 2 (:func:`median_scores`, sensitivity 1/2 under add/remove
  one row). It runs as Gumbel noisy max (OpenDP's ``make_noisy_max``), cost rho = eps^2 / 8 from
  OpenDP's map; the groups hold disjoint rows, so one level costs one mechanism's rho (parallel
  composition).

The entry kinds ``discover-counts``, ``discover-keys`` and ``discover-medians`` are registered with
the ledger's entry checks here, so a release's self-check verifies them.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ddssp.dp.measurements import opendp
from ddssp.dp.mechanisms import exponential_rho
from ddssp.dp.params import check_positive
from ddssp.dp.samplers import discrete_gaussian_numpy
from ddssp.errors import PrivacyParameterError


@lru_cache(maxsize=64)
def _gaussian_vec(sigma: float):
    dp = opendp()
    return dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=dp.i64), scale=float(sigma))


def gaussian_counts_rho(sigma: float) -> float:
    """zCDP cost of discovery's noisy counts at ``sigma`` (OpenDP's privacy map at L2 sensitivity 1).

    Parameters
    ----------
    sigma : float
        The noise scale.

    Returns
    -------
    float
    """
    return float(_gaussian_vec(check_positive(sigma, "noise scale")).map(1))


@lru_cache(maxsize=64)
def gaussian_threshold_measurement(sigma: float, threshold: int):
    """OpenDP's stable key release (``make_gaussian_threshold``) on ``{label: i64 count}``.

    Parameters
    ----------
    sigma : float
        The noise scale.
    threshold : int
        The release threshold.

    Returns
    -------
    opendp Measurement
    """
    dom, metric = _key_space()
    return opendp().m.make_gaussian_threshold(dom, metric, scale=float(sigma), threshold=int(threshold))


@lru_cache(maxsize=1)
def _key_space():
    """The input domain and metric of the stable key release, built once (building them costs more
    than the measurement itself)."""
    dp = opendp()
    return (
        dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=dp.i64)),
        dp.l02inf_distance(dp.absolute_distance(T=dp.i64)),
    )


def discrete_tail_bound(sigma: float, m: float) -> float:
    """Upper bound on P(Z >= m) for Z discrete Gaussian with scale ``sigma`` on the integers.

    The bound is Q(m / sigma) + phi(m / sigma) / sigma: the sum of exp(-k^2 / 2 sigma^2) over k >= m is
    at most its first term plus the integral from m, and the normaliser is at least sigma sqrt(2 pi).

    Parameters
    ----------
    sigma : float
        The noise scale.
    m : float
        The tail's start.

    Returns
    -------
    float
        At most 1.
    """
    from scipy.special import ndtr

    # The standard normal's survival function and density, as scipy.stats.norm computes them
    # (ndtr(-z) and exp(-z^2/2)/sqrt(2 pi)), without its per-call argument handling.
    z = np.asarray(float(m) / float(sigma))
    sf = ndtr(-z)
    pdf = np.exp(-(z**2) / 2.0) / _SQRT_2PI
    return float(min(1.0, sf + pdf / float(sigma)))


_SQRT_2PI = np.sqrt(2 * np.pi)


def threshold_cost(sigma: float, threshold: int) -> tuple[float, float]:
    """(rho, delta) of the stable key release for one row (L0 = L2 = Linf = 1).

    rho is OpenDP's map. delta is the larger of OpenDP's map and :func:`discrete_tail_bound` at
    ``threshold - 1``: a label held by one row is released when 1 + Z >= threshold. OpenDP's map
    gives the continuous Gaussian tail, which is smaller than the discrete Gaussian's at small sigma,
    so the map alone is not relied on.

    The ledger's self-check calls this once per key-release entry, so it is kept cheap: the result is
    memoised on ``(sigma, threshold)`` (a release's entries usually share them) and one call with new
    arguments costs about 0.25 ms.

    Parameters
    ----------
    sigma : float
        The noise scale.
    threshold : int
        The release threshold.

    Returns
    -------
    tuple of float
        (rho, delta).
    """
    return _threshold_cost(check_positive(sigma, "noise scale"), int(threshold))


@lru_cache(maxsize=1024)
def _threshold_cost(sigma: float, threshold: int) -> tuple[float, float]:
    rho, delta = gaussian_threshold_measurement(sigma, threshold).map((1, 1, 1))
    return float(rho), max(float(delta), discrete_tail_bound(sigma, threshold - 1))


def choose_threshold(sigma: float, delta: float) -> int:
    """Smallest integer threshold >= 2 whose key-release delta is at most ``delta``.

    Parameters
    ----------
    sigma : float
        The noise scale.
    delta : float
        The largest delta allowed, in (0, 1).

    Returns
    -------
    int

    Raises
    ------
    PrivacyParameterError
        For an invalid sigma or delta.
    """
    sigma = check_positive(sigma, "noise scale")
    if not (0.0 < float(delta) < 1.0):
        raise PrivacyParameterError(f"threshold delta must lie in (0, 1), got {delta!r}")
    lo = 1  # infeasible end (a threshold of 1 releases every one-row label half the time)
    hi = max(2, int(math.ceil(1 + sigma * math.sqrt(2 * math.log(1 / delta)) + 2 * sigma)))
    while threshold_cost(sigma, hi)[1] > delta:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if threshold_cost(sigma, mid)[1] <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def threshold_fallback(counts: dict[str, int], sigma: float, threshold: int):
    """The key release drawn from a numpy Generator (insecure seeded noise, tests only).

    Parameters
    ----------
    counts : dict
        ``{label: count}`` with positive counts.
    sigma : float
        The noise scale.
    threshold : int
        The release threshold.

    Returns
    -------
    callable
        ``run(rng) -> {label: noisy count}`` of the labels whose noisy count reaches the threshold.
    """

    def run(rng):
        keys = list(counts)
        z = discrete_gaussian_numpy(rng, sigma, len(keys))
        return {k: int(counts[k]) + int(e) for k, e in zip(keys, z) if int(counts[k]) + int(e) >= threshold}

    return run


#: sensitivity of a median's quality -|below - at or above| / 2 under add/remove one row
MEDIAN_SENSITIVITY = 0.5


def median_scale(rho: float) -> float:
    """Gumbel scale of :meth:`~ddssp.dp.charged.ChargedMechanisms.medians` at zCDP cost ``rho`` (eps = sqrt(8 rho)).

    Parameters
    ----------
    rho : float
        The zCDP cost of one level.

    Returns
    -------
    float
    """
    eps = math.sqrt(8.0 * check_positive(rho, "rho"))
    return 2.0 * MEDIAN_SENSITIVITY / eps


def median_scores(counts: np.ndarray) -> np.ndarray:
    """Quality of each edge of a run of cells as its median: -|rows below - rows at or above| / 2.

    Parameters
    ----------
    counts : numpy.ndarray
        Exact counts of the run's cells (``k`` cells, ``k + 1`` edges).

    Returns
    -------
    numpy.ndarray
        ``k + 1`` scores, one per edge (the run's two ends included).
    """
    c = np.asarray(counts, dtype=float)
    below = np.concatenate([[0.0], np.cumsum(c)])
    return -np.abs(2.0 * below - below[-1]) / 2.0


def _check_counts_entry(e) -> str | None:
    if e.sigma is None or not (isinstance(e.sigma, (int, float)) and math.isfinite(e.sigma) and e.sigma > 0):
        return f"sigma {e.sigma!r} is not a positive number"
    if e.params.get("sensitivity", 1) != 1:
        return "discovery counts have L2 sensitivity 1 (each row is in one cell)"
    if e.delta != 0:
        return "noisy counts have delta 0"
    want = 1.0 / (2.0 * float(e.sigma) ** 2)
    if not math.isclose(e.rho, want, rel_tol=1e-9):
        return f"rho {e.rho:.9g} is not 1/(2 sigma^2) = {want:.9g}"
    return None


def _check_keys_entry(e) -> str | None:
    if e.sigma is None or not (isinstance(e.sigma, (int, float)) and math.isfinite(e.sigma) and e.sigma > 0):
        return f"sigma {e.sigma!r} is not a positive number"
    t = e.params.get("threshold")
    if isinstance(t, bool) or not isinstance(t, int) or t < 2:
        return f"threshold {t!r} is not an integer >= 2"
    rho, delta = threshold_cost(float(e.sigma), t)
    if not math.isclose(e.rho, rho, rel_tol=1e-9):
        return f"rho {e.rho:.9g} is not {rho:.9g} for sigma {e.sigma:.9g}"
    if e.delta < delta * (1 - 1e-9):
        return f"delta {e.delta:.3g} is below the key release's delta {delta:.3g} at threshold {t}"
    return None


def _check_medians_entry(e) -> str | None:
    scale = e.params.get("scale")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        return f"scale {scale!r} is not a positive number"
    if e.params.get("sensitivity") != MEDIAN_SENSITIVITY:
        return f"a median's quality has sensitivity {MEDIAN_SENSITIVITY}"
    if e.delta != 0:
        return "the exponential mechanism has delta 0"
    want = exponential_rho(2.0 * MEDIAN_SENSITIVITY / float(scale))
    if not math.isclose(e.rho, want, rel_tol=1e-9):
        return f"rho {e.rho:.9g} is not eps^2/8 = {want:.9g} at scale {scale:.9g}"
    return None


def _register() -> None:
    from ddssp.dp.entries import register_entry_check

    register_entry_check("discover-counts", _check_counts_entry)
    register_entry_check("discover-keys", _check_keys_entry)
    register_entry_check("discover-medians", _check_medians_entry)


_register()
