"""zCDP accounting: (eps, delta) <-> rho conversions and the budget ledger.

Conventions (see README "Privacy accounting"):
- Neighbouring datasets differ by adding or removing one row.
- Budgets are tracked in rho-zCDP; (eps, delta) is converted with the Canonne-Kamath-Steinke bound.
- Every noisy release goes through a :class:`Ledger`, which refuses to spend past its budget.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

import numpy as np
from scipy import optimize

from ddssp.dp.mechanisms import exponential_mechanism, exponential_rho, gaussian_mechanism, gaussian_rho
from ddssp.dp.params import check_delta, check_eps, check_rho
from ddssp.errors import BudgetExceededError, PrivacyParameterError

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
    """Largest rho such that rho-zCDP implies (eps, delta)-DP (bisection on :func:`cks_delta`)."""
    eps, delta = check_eps(eps), check_delta(delta)
    lo, hi = 0.0, eps + 1.0
    while cks_delta(hi, eps) <= delta:  # pragma: no cover - hi is always large enough
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cks_delta(mid, eps) <= delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return lo  # the feasible end: never over-reports the budget


def eps_from_rho_delta(rho: float, delta: float) -> float:
    """Smallest eps such that rho-zCDP implies (eps, delta)-DP."""
    rho, delta = check_rho(rho), check_delta(delta)
    lo, hi = 0.0, rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))  # the classic (valid) bound
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cks_delta(rho, mid) <= delta:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-15 * hi:
            break
    return hi  # the feasible end: never under-reports the loss


# --------------------------------------------------------------------------- ledger
@dataclass(frozen=True)
class LedgerEntry:
    """One paid-for release. ``kind`` is 'measure' (Gaussian), 'select' (exponential) or another
    mechanism name; ``clique`` names the marginal measured, when there is one."""

    kind: str
    rho: float
    sigma: float | None = None
    eps_em: float | None = None
    clique: tuple[str, ...] | None = None
    round: int | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["clique"] = list(self.clique) if self.clique is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LedgerEntry":
        d = dict(d)
        if d.get("clique") is not None:
            d["clique"] = tuple(d["clique"])
        return cls(**d)


@dataclass
class Ledger:
    """A zCDP budget and the list of everything charged against it.

    ``charge`` raises :class:`BudgetExceededError` instead of letting the total pass the budget.
    """

    rho_budget: float
    entries: list[LedgerEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rho_budget = check_rho(self.rho_budget, "rho budget")

    @property
    def spent(self) -> float:
        return math.fsum(e.rho for e in self.entries)

    @property
    def remaining(self) -> float:
        return max(self.rho_budget - self.spent, 0.0)

    def can_afford(self, rho: float) -> bool:
        return self.spent + rho <= self.rho_budget * (1.0 + LEDGER_RTOL)

    def charge(self, entry: LedgerEntry) -> LedgerEntry:
        if not (math.isfinite(entry.rho) and entry.rho > 0):
            raise PrivacyParameterError(f"a ledger charge must be positive and finite, got {entry.rho!r}")
        if not self.can_afford(entry.rho):
            raise BudgetExceededError(
                f"{entry.kind} would spend rho={entry.rho:.6g} but only {self.remaining:.6g} of "
                f"{self.rho_budget:.6g} is left"
            )
        self.entries.append(entry)
        return entry

    def measure(
        self,
        values: np.ndarray,
        sigma: float,
        rng: np.random.Generator,
        clique: Iterable[str] | None = None,
        round: int | None = None,
        sensitivity: float = 1.0,
    ) -> np.ndarray:
        """Charge for, then run, the Gaussian mechanism on ``values`` (L2 sensitivity ``sensitivity``)."""
        self.charge(
            LedgerEntry(
                "measure",
                gaussian_rho(sigma, sensitivity),
                sigma=float(sigma),
                clique=tuple(clique) if clique is not None else None,
                round=round,
            )
        )
        return gaussian_mechanism(values, sigma, rng)

    def select(
        self,
        scores: Iterable[float],
        eps_em: float,
        sensitivity: float,
        rng: np.random.Generator,
        round: int | None = None,
    ) -> int:
        """Charge for, then run, the exponential mechanism."""
        scores = list(scores)
        self.charge(LedgerEntry("select", exponential_rho(eps_em), eps_em=float(eps_em), round=round))
        return exponential_mechanism(scores, eps_em, sensitivity, rng)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rho_budget": self.rho_budget,
            "rho_spent": self.spent,
            "entries": [e.to_dict() for e in self.entries],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Ledger":
        ledger = cls(float(d["rho_budget"]))
        ledger.entries = [LedgerEntry.from_dict(e) for e in d["entries"]]
        return ledger
