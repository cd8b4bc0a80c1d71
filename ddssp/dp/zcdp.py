"""rho-zCDP and (eps, delta)-DP, converted both ways.

Budgets are tracked in rho-zCDP (:class:`~ddssp.dp.accounting.Ledger`); a user's (eps, delta) is
converted with the Canonne-Kamath-Steinke bound (:func:`cks_delta`), and a ledger's spending back
to the eps it implies. Conversions always err on the safe side: :func:`rho_from_eps_delta` never
over-reports the budget, :func:`eps_from_rho_delta` never under-reports the loss. A release whose
ledger also spends an approximate-zCDP delta (thresholded key release) sets that delta aside first
(:func:`approx_zcdp_rho_budget`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize

from ddssp.dp.params import check_delta, check_eps, check_rho
from ddssp.errors import PrivacyParameterError


def _log_cks_term(alpha: float, rho: float, eps: float) -> float:
    """log of exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a, for a > 1."""
    return (alpha - 1.0) * (alpha * rho - eps) - math.log(alpha - 1.0) + alpha * math.log1p(-1.0 / alpha)


def cks_delta(rho: float, eps: float) -> float:
    """delta such that rho-zCDP implies (eps, delta)-DP (Canonne, Kamath, Steinke 2020, Prop. 1.3).

    delta = min over alpha > 1 of exp((alpha-1)(alpha rho - eps)) / (alpha-1) * (1 - 1/alpha)^alpha.
    Any alpha > 1 gives a valid bound, so an imperfect minimisation only makes the result conservative.

    Parameters
    ----------
    rho : float
        The zCDP parameter; 0 or less gives delta 0.
    eps : float
        The target eps, >= 0.

    Returns
    -------
    float
        delta, at most 1.

    Raises
    ------
    PrivacyParameterError
        For a negative eps.
    """
    if rho <= 0:
        return 0.0
    if eps < 0:
        raise PrivacyParameterError(f"eps must be >= 0, got {eps}")
    # The exponent is minimised near alpha* = (eps + rho) / (2 rho); search log(alpha - 1) around it.
    guess = max((eps + rho) / (2.0 * rho), 1.0 + 1e-6)
    center = math.log(guess - 1.0 + 1e-12)
    grid = np.linspace(center - 12.0, center + 6.0, 241)
    vals = [_log_cks_term(1.0 + math.exp(t), rho, eps) for t in grid]
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    best = vals[i]
    if hi > lo:
        res = optimize.minimize_scalar(
            lambda t: _log_cks_term(1.0 + math.exp(t), rho, eps),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-10},
        )
        best = min(best, float(res.fun))
    return float(min(math.exp(best), 1.0))


def rho_from_eps_delta(eps: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (eps, delta)-DP (bisection on :func:`cks_delta`).

    Parameters
    ----------
    eps : float
        Positive and finite.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The zCDP budget rho.

    Raises
    ------
    PrivacyParameterError
        For eps or delta outside their ranges.
    """
    eps, delta = check_eps(eps), check_delta(delta)
    hi = eps + 1.0
    while cks_delta(hi, eps) <= delta:  # pragma: no cover - hi is always large enough
        hi *= 2.0
    lo, _ = bisect_bracket(lambda r: cks_delta(r, eps) <= delta, 0.0, hi, iters=200, rtol=1e-15)
    return lo  # the feasible end: never over-reports the budget


def bisect_bracket(
    below: Callable[[float], bool], lo: float, hi: float, *, iters: int, rtol: float = 0.0
) -> tuple[float, float]:
    """Bisection of a monotone test that holds at ``lo`` and fails at ``hi``.

    Parameters
    ----------
    below : callable
        The test, ``below(x) -> bool``.
    lo, hi : float
        The starting bracket.
    iters : int
        At most this many halvings.
    rtol : float
        Stop once hi - lo <= rtol * hi.

    Returns
    -------
    tuple of float
        The final (lo, hi); the caller takes the end on its safe side.
    """
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if below(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= rtol * hi:
            break
    return lo, hi


def eps_from_rho_delta(rho: float, delta: float) -> float:
    """Smallest eps such that rho-zCDP implies (eps, delta)-DP.

    Parameters
    ----------
    rho : float
        The zCDP parameter (positive, finite).
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The eps of the (eps, delta)-DP guarantee.

    Raises
    ------
    PrivacyParameterError
        For rho or delta outside their ranges.
    """
    rho, delta = check_rho(rho), check_delta(delta)
    hi = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))  # the classic (valid) bound
    _, hi = bisect_bracket(lambda e: cks_delta(rho, e) > delta, 0.0, hi, iters=200, rtol=1e-15)
    return hi  # the feasible end: never under-reports the loss


def approx_zcdp_rho_budget(eps: float, delta: float, delta_approx: float = 0.0) -> float:
    """The rho budget of an (eps, delta)-DP release whose ledger also spends some approximate-zCDP delta.

    (rho, delta_approx)-approximate zCDP implies (eps, delta_approx + delta_CKS(rho, eps))-DP, so
    rho = rho_from_eps_delta(eps, delta - delta_approx).

    Parameters
    ----------
    eps : float
        The release's eps.
    delta : float
        The release's delta, in (0, 1).
    delta_approx : float
        The delta set aside for approximate-zCDP mechanisms (e.g. thresholded key release); must lie in
        [0, delta).

    Returns
    -------
    float
        The zCDP budget rho.

    Raises
    ------
    PrivacyParameterError
        For invalid eps or delta, or ``delta_approx`` outside [0, delta).
    """
    eps, delta = check_eps(eps), check_delta(delta)
    da = float(delta_approx)
    if not (0.0 <= da < delta):
        raise PrivacyParameterError(f"the approximate-zCDP delta {delta_approx!r} must lie in [0, delta={delta:g})")
    return rho_from_eps_delta(eps, delta - da)


def approx_zcdp_delta(rho: float, delta_threshold: float, eps: float) -> float:
    """Total delta of a (delta_threshold, rho)-approximately-zCDP release at ``eps``.

    delta_threshold + cks_delta(rho, eps).

    Parameters
    ----------
    rho : float
        The zCDP part.
    delta_threshold : float
        The approximate-zCDP delta.
    eps : float
        The target eps.

    Returns
    -------
    float
    """
    return float(delta_threshold) + cks_delta(rho, eps)


def rho_for_release(eps: float, delta: float, delta_threshold: float = 0.0) -> float:
    """The zCDP budget of an (eps, delta)-DP release with some delta set aside for thresholded mechanisms.

    See :func:`approx_zcdp_rho_budget`.

    Parameters
    ----------
    eps : float
        The release's eps.
    delta : float
        The release's delta.
    delta_threshold : float
        The delta set aside for thresholded mechanisms, in [0, delta).

    Returns
    -------
    float
    """
    return approx_zcdp_rho_budget(eps, delta, delta_threshold)
