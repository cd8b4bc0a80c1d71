"""zCDP accounting: (eps, delta) <-> rho conversions and the budget ledger.

Conventions (see README "Privacy accounting"):
- Neighbouring datasets differ by adding or removing one row.
- Budgets are tracked in rho-zCDP; (eps, delta) is converted with the Canonne-Kamath-Steinke bound.
- Every noisy release goes through a :class:`Ledger`, which refuses to spend past its budget. The
  ledger charges OpenDP's own privacy map for the mechanisms it runs, and runs them with noise from a
  :class:`~ddssp.dp.noise.NoiseSource` (see :mod:`ddssp.dp.noise`).

Adding a mechanism kind (e.g. schema discovery's thresholded key release, DP quantiles):
1. build the OpenDP measurement (its input distance ``d_in`` is the public sensitivity);
2. ``ledger.charge_opendp("threshold", meas, d_in, params={...public parameters...})`` charges OpenDP's
   map ((rho, delta) for approximate zCDP; the ledger's ``delta_budget`` must cover the delta);
3. ``noise.run_opendp(meas, arg, fallback=...)`` runs it (the fallback draws from the insecure seeded
   source in tests);
4. ``register_entry_check("threshold", fn)`` so that a release holding such entries can verify them
   on load (``fn(entry)`` recomputes the charge from ``entry.params`` and returns a problem or None).
The ledger of such a release is ``Ledger(approx_zcdp_rho_budget(eps, delta, d_a), delta_budget=d_a)``:
(rho, d_a)-approximate zCDP implies (eps, d_a + delta_CKS)-DP, and the release's self-check converts
the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy import optimize

from ddssp.dp.mechanisms import exponential_rho, gaussian_rho
from ddssp.dp.params import check_delta, check_eps, check_rho
from ddssp.errors import BudgetExceededError, PrivacyParameterError
from ddssp.types import Clique

#: Relative slack allowed when the ledger compares spent with budget. It only absorbs the rounding
#: of float sums (a final round spends "exactly what remains", computed as budget - spent).
LEDGER_RTOL = 1e-12


# --------------------------------------------------------------------------- zCDP <-> (eps, delta)
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


# --------------------------------------------------------------------------- ledger
@dataclass(frozen=True)
class LedgerEntry:
    """One paid-for mechanism run.

    Attributes
    ----------
    kind : str
        'measure' (discrete Gaussian on a marginal), 'select' (exponential mechanism / Gumbel noisy
        max) or another mechanism's name (e.g. 'discover-counts', 'discover-keys' for schema
        discovery).
    rho, delta : float
        Its cost in approximate zCDP (delta = 0 for plain zCDP mechanisms). When the mechanism is an
        OpenDP measurement the charge is OpenDP's own privacy map at the declared input distance
        (:meth:`Ledger.charge_opendp`), so the ledger never pays less than OpenDP says.
    sigma, eps_em : float or None
        The noise parameter of a 'measure' / 'select' entry.
    clique : tuple of str or None
        What was measured (AIM; the column for discovery).
    round : int or None
        When it was measured (AIM).
    note : str
        A description, for people.
    params : dict
        Any other public mechanism parameters (sensitivity, scale, threshold, candidates, ...),
        JSON-able; kept in the file so that the release's self-check can recompute the charge.
    """

    kind: str
    rho: float
    sigma: float | None = None
    eps_em: float | None = None
    clique: Clique | None = None
    round: int | None = None
    note: str = ""
    delta: float = 0.0
    params: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def is_discovery(self) -> bool:
        """A charge of private schema discovery (kinds start with 'discover')."""
        return self.kind.startswith("discover")

    def to_dict(self) -> dict[str, Any]:
        """The entry as a JSON-ready dict (the inverse of :meth:`from_dict`).

        Returns
        -------
        dict
        """
        d = asdict(self)
        d["clique"] = list(self.clique) if self.clique is not None else None
        d["params"] = dict(self.params)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LedgerEntry:
        """An entry from its dict (as in a release file).

        Parameters
        ----------
        d : dict
            The fields of :class:`LedgerEntry`.

        Returns
        -------
        LedgerEntry

        Raises
        ------
        PrivacyParameterError
            When rho or delta is not a non-negative finite number, or ``params`` is not an object.
        TypeError
            For unknown fields.
        """
        d = dict(d)
        if d.get("clique") is not None:
            d["clique"] = tuple(d["clique"])
        e = cls(**d)
        for name in ("rho", "delta"):
            v = getattr(e, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise PrivacyParameterError(f"ledger entry {name} must be a non-negative number, got {v!r}")
        if not isinstance(e.params, dict):
            raise PrivacyParameterError("ledger entry params must be an object")
        return e


#: kind -> check(entry) returning a problem (str) or None; used by :func:`entry_problem` (and thus by
#: the release self-check). Register a check for every new entry kind with :func:`register_entry_check`.
_ENTRY_CHECKS: dict[str, Callable[[LedgerEntry], str | None]] = {}


def register_entry_check(kind: str, check: Callable[[LedgerEntry], str | None]) -> None:
    """Declare how an entry of ``kind`` is verified from its own fields.

    Entries of an unregistered kind fail :func:`entry_problem`.

    Parameters
    ----------
    kind : str
        The entry kind.
    check : callable
        ``check(entry) -> str or None``: recomputes the charge from the entry's parameters and returns
        a problem, or None when it agrees.
    """
    _ENTRY_CHECKS[kind] = check


def entry_problem(entry: LedgerEntry) -> str | None:
    """Why an entry is not self-consistent, or None. Unknown kinds are a problem.

    Parameters
    ----------
    entry : LedgerEntry
        The entry to verify.

    Returns
    -------
    str or None
    """
    if not (isinstance(entry.rho, (int, float)) and math.isfinite(entry.rho) and entry.rho >= 0):
        return f"rho {entry.rho!r} is not a non-negative number"
    check = _ENTRY_CHECKS.get(entry.kind)
    if check is None:
        return f"unknown mechanism kind {entry.kind!r}"
    return check(entry)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9)


def _check_measure(e: LedgerEntry) -> str | None:
    sens = e.params.get("sensitivity", 1)
    if e.sigma is None or not (isinstance(e.sigma, (int, float)) and math.isfinite(e.sigma) and e.sigma > 0):
        return f"sigma {e.sigma!r} is not a positive number"
    if sens != 1:
        return f"sensitivity {sens!r}: a count marginal has L2 sensitivity 1 (add/remove one row)"
    if e.delta != 0:
        return "a Gaussian measurement has delta 0"
    want = gaussian_rho(e.sigma, 1.0)
    if not _close(e.rho, want):
        return f"rho {e.rho:.9g} is not 1/(2 sigma^2) = {want:.9g} for sigma {e.sigma:.9g}"
    return None


def _check_select(e: LedgerEntry) -> str | None:
    if e.eps_em is None or not (isinstance(e.eps_em, (int, float)) and math.isfinite(e.eps_em) and e.eps_em > 0):
        return f"eps_em {e.eps_em!r} is not a positive number"
    if e.delta != 0:
        return "a selection has delta 0"
    want = exponential_rho(e.eps_em)
    if not _close(e.rho, want):
        return f"rho {e.rho:.9g} is not eps_em^2/8 = {want:.9g} for eps_em {e.eps_em:.9g}"
    sens, scale = e.params.get("sensitivity"), e.params.get("scale")
    if sens is not None and scale is not None:
        try:
            if not _close(float(scale), 2.0 * float(sens) / e.eps_em):
                return f"noise scale {scale!r} is not 2 * sensitivity / eps_em"
        except (TypeError, ValueError, ZeroDivisionError):
            return "sensitivity/scale are not numbers"
    return None


register_entry_check("measure", _check_measure)
register_entry_check("select", _check_select)


def _agree(kind: str, ours: float, opendp: float) -> None:
    """Our formula and OpenDP's map must agree (OpenDP rounds up by a few ulps)."""
    if not math.isclose(ours, opendp, rel_tol=1e-9):  # pragma: no cover - a bug, not bad input
        raise RuntimeError(f"{kind}: ledger formula rho={ours!r} disagrees with OpenDP's map rho={opendp!r}")


@dataclass
class Ledger:
    """An approximate-zCDP budget (rho, plus ``delta_budget`` for mechanisms such as thresholding that
    are (rho, delta)-approximate zCDP; 0 by default) and the list of everything charged against it.

    ``charge`` raises :class:`BudgetExceededError` instead of letting either total pass its budget.
    Mechanisms are run *after* they are charged, with noise from a
    :class:`~ddssp.dp.noise.NoiseSource` (never a numpy Generator):

    - :meth:`measure`: discrete Gaussian on integer counts (OpenDP ``make_gaussian``);
    - :meth:`select`: exponential mechanism as Gumbel noisy max (OpenDP ``make_noisy_max``, zCDP);
    - :meth:`charge_opendp` + ``noise.run_opendp``: any other OpenDP measurement, charged by its map.

    Parameters
    ----------
    rho_budget : float
        The zCDP budget.
    entries : list of LedgerEntry
        What has been charged, in order.
    delta_budget : float
        The budget of the approximate part (thresholding mechanisms).
    """

    rho_budget: float
    entries: list[LedgerEntry] = field(default_factory=list)
    delta_budget: float = 0.0

    def __post_init__(self) -> None:
        self.rho_budget = check_rho(self.rho_budget, "rho budget")
        d = self.delta_budget
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not (0.0 <= d < 1.0):
            raise PrivacyParameterError(f"the ledger's delta budget must lie in [0, 1), got {d!r}")
        self.delta_budget = float(d)

    @property
    def spent(self) -> float:
        """The zCDP rho spent so far (the sum over the entries)."""
        return math.fsum(e.rho for e in self.entries)

    @property
    def delta_spent(self) -> float:
        """The approximate-zCDP delta spent so far (the sum over the entries)."""
        return math.fsum(e.delta for e in self.entries)

    @property
    def discovery_entries(self) -> list[LedgerEntry]:
        """The entries charged by private schema discovery."""
        return [e for e in self.entries if e.is_discovery]

    @property
    def remaining(self) -> float:
        """The rho left (never negative)."""
        return max(self.rho_budget - self.spent, 0.0)

    def can_afford(self, rho: float, delta: float = 0.0) -> bool:
        """Whether a charge of (rho, delta) fits in what is left (up to a relative rounding tolerance).

        Parameters
        ----------
        rho : float
            The zCDP cost.
        delta : float
            The approximate-zCDP delta.

        Returns
        -------
        bool
        """
        return self.spent + rho <= self.rho_budget * (
            1.0 + LEDGER_RTOL
        ) and self.delta_spent + delta <= self.delta_budget * (1.0 + LEDGER_RTOL)

    def charge(self, entry: LedgerEntry) -> LedgerEntry:
        """Append an entry to the ledger, if the budget can pay for it.

        Parameters
        ----------
        entry : LedgerEntry
            The charge; its rho must be positive and finite, its delta non-negative and finite.

        Returns
        -------
        LedgerEntry
            ``entry``.

        Raises
        ------
        PrivacyParameterError
            For a rho or delta that is not a valid charge.
        BudgetExceededError
            When the charge does not fit in the budget left (nothing is charged).
        """
        if not (math.isfinite(entry.rho) and entry.rho > 0):
            raise PrivacyParameterError(f"a ledger charge must be positive and finite, got {entry.rho!r}")
        if not (math.isfinite(entry.delta) and entry.delta >= 0):
            raise PrivacyParameterError(f"a ledger delta must be non-negative and finite, got {entry.delta!r}")
        if not self.can_afford(entry.rho, entry.delta):
            raise BudgetExceededError(
                f"{entry.kind} would spend rho={entry.rho:.6g}, delta={entry.delta:.3g} but only "
                f"rho={self.remaining:.6g} of {self.rho_budget:.6g} and delta="
                f"{max(self.delta_budget - self.delta_spent, 0.0):.3g} of {self.delta_budget:.3g} are left"
            )
        self.entries.append(entry)
        return entry

    def charge_opendp(self, kind: str, measurement: Any, d_in: Any, **fields: Any) -> LedgerEntry:
        """Charge an OpenDP measurement by its own privacy map ((rho, delta) for approximate zCDP).

        Run it afterwards with ``noise.run_opendp(measurement, arg)``.

        Parameters
        ----------
        kind : str
            The entry's kind.
        measurement : opendp Measurement
            The measurement to charge.
        d_in : any
            The input distance (the public sensitivity) the map is evaluated at.
        **fields
            Other entry fields (e.g. ``params``, ``clique``, ``round``, ``note``).

        Returns
        -------
        LedgerEntry
            The entry charged.

        Raises
        ------
        BudgetExceededError
            When the charge does not fit in the budget left.
        """
        from ddssp.dp.noise import opendp_charge

        rho, delta = opendp_charge(measurement, d_in)
        return self.charge(LedgerEntry(kind, rho, delta=delta, **fields))

    def measure(
        self,
        values: np.ndarray,
        sigma: float,
        noise: Any,
        clique: Iterable[str] | None = None,
        round: int | None = None,
        sensitivity: int = 1,
    ) -> np.ndarray:
        """Charge for, then run, the discrete Gaussian mechanism on integer counts.

        Parameters
        ----------
        values : numpy.ndarray
            Integer counts, any shape.
        sigma : float
            The noise scale.
        noise : NoiseSource
            Draws the noise.
        clique : iterable of str, optional
            What is measured, for the entry.
        round : int, optional
            The AIM round, for the entry.
        sensitivity : int
            The L2 sensitivity of ``values``, a positive integer.

        Returns
        -------
        numpy.ndarray
            Integer noisy counts (int64), shaped like ``values``.

        Raises
        ------
        PrivacyParameterError
            For an invalid sensitivity or noise source.
        BudgetExceededError
            When the charge does not fit in the budget left (no noise is drawn).
        """
        from ddssp.dp.noise import NoiseSource, gaussian_measurement, opendp_charge

        _check_noise(noise, NoiseSource)
        if isinstance(sensitivity, bool) or int(sensitivity) != sensitivity or sensitivity < 1:
            raise PrivacyParameterError(f"the L2 sensitivity of counts must be a positive integer, got {sensitivity!r}")
        sigma = float(sigma)
        rho, _ = opendp_charge(gaussian_measurement(sigma), int(sensitivity))
        _agree("measure", gaussian_rho(sigma, sensitivity), rho)
        self.charge(
            LedgerEntry(
                "measure",
                rho,
                sigma=sigma,
                clique=tuple(clique) if clique is not None else None,
                round=round,
                params={"sensitivity": int(sensitivity), "noise": "discrete_gaussian"},
            )
        )
        return noise.gaussian_int(values, sigma)

    def select(
        self,
        scores: Iterable[float],
        eps_em: float,
        sensitivity: float,
        noise: Any,
        round: int | None = None,
        allowed: Callable[[int], bool] | None = None,
        tries: int = 8,
    ) -> int:
        """Charge for, then run, the exponential mechanism on scores.

        It runs as Gumbel noisy max with scale 2 * sensitivity / eps_em, whose zCDP cost is eps_em^2 / 8
        (OpenDP's map of ``make_noisy_max`` with a zCDP output measure).

        With ``allowed``, the mechanism runs on the allowed candidates only, deciding for as few
        candidates as it can whether they are allowed (see :func:`_restricted_noisy_max`). The
        output has the distribution of the exponential mechanism on the allowed set, so the charge is
        the same; ``sensitivity`` is then that of the allowed candidates' scores.

        Parameters
        ----------
        scores : iterable of float
            Finite quality scores, one per candidate (at least one).
        eps_em : float
            The exponential mechanism's parameter.
        sensitivity : float
            The L-inf sensitivity of the scores.
        noise : NoiseSource
            Draws the noise.
        round : int, optional
            The AIM round, for the entry.
        allowed : callable, optional
            ``allowed(i)`` tells whether candidate ``i`` may be selected (a decision on public
            information only; at least one candidate must be allowed).
        tries : int
            Draws that were not allowed before every candidate is decided.

        Returns
        -------
        int
            The index of the selected candidate.

        Raises
        ------
        PrivacyParameterError
            For no candidates, non-finite scores, or invalid parameters.
        BudgetExceededError
            When the charge does not fit in the budget left.
        """
        from ddssp.dp.noise import NoiseSource, noisy_max_measurement, opendp_charge

        _check_noise(noise, NoiseSource)
        scores = np.asarray(list(scores), dtype=float)
        if scores.size == 0:
            raise PrivacyParameterError("the exponential mechanism needs at least one candidate")
        if not np.all(np.isfinite(scores)):
            raise PrivacyParameterError("exponential mechanism scores must be finite")
        eps_em = check_eps(eps_em, "eps_em")
        sens = float(sensitivity)
        if not (math.isfinite(sens) and sens > 0):
            raise PrivacyParameterError(f"quality sensitivity must be positive, got {sensitivity!r}")
        scale = 2.0 * sens / eps_em
        rho, _ = opendp_charge(noisy_max_measurement(scale), sens)
        _agree("select", exponential_rho(eps_em), rho)
        self.charge(
            LedgerEntry(
                "select",
                rho,
                eps_em=eps_em,
                round=round,
                params={"sensitivity": sens, "scale": scale, "candidates": int(scores.size), "noise": "gumbel"},
            )
        )
        if allowed is None:
            return noise.noisy_max(scores, scale)
        return _restricted_noisy_max(scores, scale, noise, allowed, int(tries))

    def record(
        self,
        mechanism: str,
        *,
        delta: float | None = None,
        eps: float | None = None,
        noise: Any = None,
        details: Mapping[str, Any] | None = None,
    ) -> PrivacyRecord:
        """This ledger's spending as a :class:`PrivacyRecord` (see :meth:`PrivacyRecord.from_ledger`).

        Parameters
        ----------
        mechanism : str
            What ran, in words.
        delta : float, optional
            The release's delta.
        eps : float, optional
            The stated eps; derived from the spending and ``delta`` when None.
        noise : NoiseSource, optional
            Supplies the stamp and noise description.
        details : mapping, optional
            Method-specific public facts.

        Returns
        -------
        PrivacyRecord
        """
        return PrivacyRecord.from_ledger(self, mechanism, delta=delta, eps=eps, noise=noise, details=details)

    def to_dict(self) -> dict[str, Any]:
        """The ledger as a JSON-ready dict: budgets, spending and entries.

        Returns
        -------
        dict
        """
        return {
            "rho_budget": self.rho_budget,
            "rho_spent": self.spent,
            "delta_budget": self.delta_budget,
            "delta_spent": self.delta_spent,
            "entries": [e.to_dict() for e in self.entries],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ledger:
        """A ledger from its dict (as in a release file).

        Parameters
        ----------
        d : dict
            With ``rho_budget``, ``entries`` and optionally ``delta_budget``.

        Returns
        -------
        Ledger

        Raises
        ------
        PrivacyParameterError
            For an invalid entry.
        """
        ledger = cls(float(d["rho_budget"]), delta_budget=float(d.get("delta_budget", 0.0)))
        ledger.entries = [LedgerEntry.from_dict(e) for e in d["entries"]]
        return ledger


def _check_noise(noise: Any, cls: type) -> None:
    if not isinstance(noise, cls):
        raise TypeError(
            f"DP noise must come from a ddssp.dp.noise.NoiseSource (secure by default), not {type(noise).__name__}; "
            "numpy generators never draw DP noise"
        )


# --------------------------------------------------------------------------- the record of one fit
@dataclass(frozen=True)
class PrivacyRecord:
    """What one fit (or one release) spent: the same record for every estimator, as ``privacy_``.

    Parameters
    ----------
    mechanism : str
        What ran, in words (e.g. "AdaSSP (OpenDP float Gaussian ...)").
    eps, delta : float or None
        The (eps, delta)-DP guarantee of the output (delta = 0 for pure DP; eps = inf for a
        non-private fit; None when the source of a post-processing fit states none).
    rho : float or None
        The zCDP cost when the mechanism is accounted in zCDP (the sum of ``entries``), else None.
    entries : tuple of LedgerEntry
        The paid-for mechanism runs, in order (empty for mechanisms without a zCDP ledger).
    stamp : str or None
        :data:`~ddssp.dp.noise.INSECURE_STAMP` ("NOT PRIVATE ...") when the noise came from a seed,
        else None.
    noise : mapping or None
        The noise source's description (``NoiseSource.describe()``), e.g. {"source": "opendp", "secure": True}.
    details : mapping
        Method-specific public facts (PDP-OP's per-row eps, NAPP-ERM's retrieved budget, the bounds
        the fit declared, ...). Read-only.

    Attributes
    ----------
    private : bool
        True when the fit is differentially private as stated: finite eps and no insecure stamp.
    """

    mechanism: str
    eps: float | None
    delta: float | None
    rho: float | None = None
    entries: tuple[LedgerEntry, ...] = ()
    stamp: str | None = None
    noise: Mapping[str, Any] | None = field(default=None, hash=False)
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(self.entries))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if self.noise is not None:
            object.__setattr__(self, "noise", MappingProxyType(dict(self.noise)))
        for name in ("eps", "delta", "rho"):
            v = getattr(self, name)
            if v is not None:
                v = float(v)
                if math.isnan(v) or v < 0:
                    raise PrivacyParameterError(f"a privacy record's {name} must be a non-negative number, got {v!r}")
                object.__setattr__(self, name, v)

    @property
    def private(self) -> bool:
        """True when the output is differentially private as stated: finite eps and no insecure stamp."""
        return self.stamp is None and self.eps is not None and math.isfinite(self.eps)

    @classmethod
    def from_ledger(
        cls,
        ledger: Ledger,
        mechanism: str,
        *,
        delta: float | None = None,
        eps: float | None = None,
        noise: Any = None,
        details: Mapping[str, Any] | None = None,
    ) -> PrivacyRecord:
        """The record of everything a ledger has charged.

        Parameters
        ----------
        ledger : Ledger
            rho is ``ledger.spent``; the entries are its entries.
        mechanism : str
            What ran, in words.
        delta : float, optional
            The release's delta.
        eps : float, optional
            The stated eps (e.g. a release's budget). When None, the (eps, delta)-DP that rho implies
            (:func:`eps_from_rho_delta`, less the ledger's own approximate-zCDP delta).
        noise : NoiseSource, optional
            Supplies the stamp and description.
        details : mapping, optional
            Method-specific public facts.

        Returns
        -------
        PrivacyRecord
        """
        if eps is None and delta is not None and ledger.spent > 0:
            eps = eps_from_rho_delta(ledger.spent, float(delta) - ledger.delta_spent)
        return cls(
            mechanism=mechanism,
            eps=eps,
            delta=delta,
            rho=ledger.spent,
            entries=tuple(ledger.entries),
            stamp=getattr(noise, "stamp", None) or None,
            noise=noise.describe() if noise is not None else None,
            details=details or {},
        )

    @classmethod
    def for_noise(cls, mechanism: str, noise: Any, **fields: Any) -> PrivacyRecord:
        """A record whose stamp and noise description come from a noise source.

        Parameters
        ----------
        mechanism : str
            What ran, in words.
        noise : NoiseSource
            Supplies the stamp and description.
        **fields
            The other fields of the record.

        Returns
        -------
        PrivacyRecord
        """
        return cls(mechanism, stamp=getattr(noise, "stamp", None) or None, noise=noise.describe(), **fields)

    def to_dict(self, entries: bool = True) -> dict[str, Any]:
        """A JSON-able view (arrays in ``details`` become lists).

        Parameters
        ----------
        entries : bool
            Include the ledger entries (False leaves them out: a release's can be hundreds).

        Returns
        -------
        dict
        """
        out: dict[str, Any] = {"mechanism": self.mechanism, "eps": self.eps, "delta": self.delta, "rho": self.rho}
        if entries and self.entries:
            out["entries"] = [e.to_dict() for e in self.entries]
        if self.stamp:
            out["stamp"] = self.stamp
        if self.noise is not None:
            out["noise"] = dict(self.noise)
        out["details"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.details.items()}
        return out


def _restricted_noisy_max(
    scores: np.ndarray, scale: float, noise: Any, allowed: Callable[[int], bool], tries: int
) -> int:
    """Noisy max on the allowed candidates, deciding ``allowed`` for few of them.

    Noisy max over a set T that holds every allowed candidate, redrawn without the drawn candidate
    until it is allowed: given that the draw is allowed, it has P(i) proportional to
    exp(score_i / scale) on the allowed set, and removing a candidate that is not allowed keeps T a
    superset, so the output has exactly the distribution of noisy max on the allowed set. To make a
    draw likely to be allowed, T first leaves out the candidates already found not allowed among the
    highest scores: they are decided from the top until the allowed ones found carry at least as
    much weight exp(score / scale) as the undecided rest. After ``tries`` draws that were not
    allowed, every candidate is decided. The scores only choose which candidates to decide (a
    decision on public information); only the final draw is output.
    """
    weight = np.exp((scores - scores.max()) / scale)
    order = np.argsort(-scores, kind="stable")
    rest = float(weight.sum())
    found, out = 0.0, set()
    for i in order:
        if found >= rest:
            break
        i = int(i)
        rest -= weight[i]
        if allowed(i):
            found += weight[i]
        else:
            out.add(i)
    for _ in range(tries + 1):
        keep = [i for i in range(scores.size) if i not in out]
        if not keep:
            break
        k = keep[noise.noisy_max(scores[keep], scale)]
        if allowed(k):
            return k
        out.add(k)
    keep = [i for i in range(scores.size) if i not in out and allowed(i)]
    if not keep:
        raise PrivacyParameterError("the exponential mechanism needs at least one allowed candidate")
    return keep[noise.noisy_max(scores[keep], scale)]
