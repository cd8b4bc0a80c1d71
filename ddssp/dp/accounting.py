"""Privacy core: zCDP accounting, the Gaussian and exponential mechanisms, the budget ledger.

Conventions (see README "Privacy accounting"):
- Neighbouring datasets differ by adding or removing one row.
- Budgets are tracked in rho-zCDP; (eps, delta) is converted with the Canonne-Kamath-Steinke bound.
- Every noisy release goes through a :class:`Ledger`, which refuses to spend past its budget.
- Randomness comes from one ``numpy.random.Generator`` (see :func:`make_rng`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

import numpy as np
from scipy import optimize, special

from ddssp.errors import BudgetExceededError, PrivacyParameterError

#: Relative slack allowed when the ledger compares spent with budget. It only absorbs the rounding
#: of float sums (a final round spends "exactly what remains", computed as budget - spent).
LEDGER_RTOL = 1e-12


# --------------------------------------------------------------------------- parameter checks
def check_positive(value: Any, name: str, hint: str = "") -> float:
    """``value`` as a positive finite float, else :class:`PrivacyParameterError` naming it.

    Used for privacy parameters and for declared bounds (``hint`` says e.g. "a declared bound")."""
    what = f" ({hint})" if hint else ""
    if isinstance(value, bool):
        raise PrivacyParameterError(f"{name} must be a number{what}, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"{name} must be a number{what}, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise PrivacyParameterError(f"{name} must be a positive finite number{what}, got {value!r}")
    return v


def check_bound(value: Any, name: str) -> float:
    """A declared bound (norm, clip, radius, ...): positive and finite, and never computed from the data."""
    return check_positive(value, name, "a declared bound, not computed from the data")


def check_eps(eps: float, name: str = "eps") -> float:
    return check_positive(eps, name)


def check_rho(rho: float, name: str = "rho") -> float:
    return check_positive(rho, name)


def check_delta(delta: float, name: str = "delta") -> float:
    try:
        delta = float(delta)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"{name} must be a number, got {delta!r}") from None
    if not (0.0 < delta < 1.0):
        raise PrivacyParameterError(f"{name} must lie strictly between 0 and 1, got {delta!r}")
    return delta


def clip_rows(X: np.ndarray, bound: float) -> np.ndarray:
    """Rows of X scaled down to L2 norm <= ``bound`` (x * min(1, bound / ||x||)); others unchanged.

    The guarantee holds in floating point, whichever way the norm is then computed: a scaled row is
    put a few ulps inside the bound rather than on it."""
    X = np.asarray(X, dtype=float)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    over = norms > bound
    scale = np.ones(len(X))
    scale[over] = bound / norms[over] * (1.0 - 8 * np.finfo(float).eps)
    return X * scale[:, None]


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


# --------------------------------------------------------------------------- mechanisms
def make_rng(seed: int | np.random.Generator | None = None) -> np.random.Generator:
    """One Generator for a whole run. ``None`` draws fresh OS entropy; an int makes a run reproducible."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (not isinstance(seed, (int, np.integer)) or seed < 0):
        raise PrivacyParameterError(f"seed must be a non-negative integer or None, got {seed!r}")
    return np.random.default_rng(seed)


def gaussian_sigma(rho: float, sensitivity: float = 1.0) -> float:
    """Noise scale of the Gaussian mechanism that costs ``rho`` zCDP: sigma = Delta_2 / sqrt(2 rho)."""
    return float(sensitivity) / math.sqrt(2.0 * check_rho(rho))


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """zCDP cost of Gaussian noise of scale ``sigma``: rho = Delta_2^2 / (2 sigma^2)."""
    sigma = float(sigma)
    if not math.isfinite(sigma) or sigma <= 0:
        raise PrivacyParameterError(f"sigma must be positive and finite, got {sigma!r}")
    return float(sensitivity) ** 2 / (2.0 * sigma**2)


def exponential_rho(eps_em: float) -> float:
    """zCDP cost of the exponential mechanism run at parameter eps_em: eps_em^2 / 8."""
    return check_eps(eps_em, "eps_em") ** 2 / 8.0


def gaussian_mechanism(values: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """``values`` plus iid N(0, sigma^2) noise per entry (does not charge: see :meth:`Ledger.measure`)."""
    values = np.asarray(values, dtype=float)
    return values + rng.normal(0.0, sigma, size=values.shape)


def exponential_probabilities(scores: Iterable[float], eps_em: float, sensitivity: float) -> np.ndarray:
    """Selection probabilities P(r) proportional to exp(eps_em * q_r / (2 Delta))."""
    q = np.asarray(list(scores), dtype=float)
    if q.size == 0:
        raise PrivacyParameterError("the exponential mechanism needs at least one candidate")
    if not np.all(np.isfinite(q)):
        raise PrivacyParameterError("exponential mechanism scores must be finite")
    if not sensitivity > 0:
        raise PrivacyParameterError(f"quality sensitivity must be positive, got {sensitivity!r}")
    logits = check_eps(eps_em, "eps_em") * q / (2.0 * float(sensitivity))
    return np.exp(logits - special.logsumexp(logits))


def exponential_mechanism(
    scores: Iterable[float], eps_em: float, sensitivity: float, rng: np.random.Generator
) -> int:
    """Index drawn with probability proportional to exp(eps_em * q_r / (2 Delta))."""
    p = exponential_probabilities(scores, eps_em, sensitivity)
    return int(rng.choice(p.size, p=p))


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
