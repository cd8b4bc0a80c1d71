"""The budget ledger: what a release may spend, what it has spent (:class:`Ledger`), and the record
of that spending that every fit carries (:class:`PrivacyRecord`, made from a ledger by
:meth:`Ledger.record`).

Conventions (see README "Privacy accounting"):
- Neighbouring datasets differ by adding or removing one row.
- Budgets are tracked in rho-zCDP; (eps, delta) is converted with the Canonne-Kamath-Steinke bound
  (:mod:`ddssp.dp.zcdp`).
- Every noisy release is charged to a :class:`Ledger`, which refuses to spend past its budget. The
  ledger only keeps the books (budgets, entries, checks, serialisation); the mechanisms are run by
  :class:`~ddssp.dp.charged.ChargedMechanisms`, which binds a ledger and a
  :class:`~ddssp.dp.noise.NoiseSource`, charges OpenDP's own privacy map for each mechanism and only
  then draws its noise. Each charge is a :class:`~ddssp.dp.entries.LedgerEntry`.

Adding a mechanism kind (e.g. DP quantiles):
1. build the OpenDP measurement (its input distance ``d_in`` is the public sensitivity);
2. ``mech.run_opendp("quantile", meas, d_in, arg, fallback=..., params={...public parameters...})``
   (:meth:`~ddssp.dp.charged.ChargedMechanisms.run_opendp`) charges OpenDP's map ((rho, delta) for
   approximate zCDP; the ledger's ``delta_budget`` must cover the delta; see
   :meth:`Ledger.charge_opendp`), then runs it (the fallback draws from the insecure seeded source
   in tests);
3. ``register_entry_check("quantile", fn)`` (:mod:`ddssp.dp.entries`) so that a release holding such
   entries can verify them on load (``fn(entry)`` recomputes the charge from ``entry.params`` and
   returns a problem or None).
The ledger of such a release is ``Ledger(approx_zcdp_rho_budget(eps, delta, d_a), delta_budget=d_a)``:
(rho, d_a)-approximate zCDP implies (eps, d_a + delta_CKS)-DP, and the release's self-check converts
the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ddssp.dp.entries import LedgerEntry
from ddssp.dp.params import check_rho
from ddssp.dp.zcdp import eps_from_rho_delta
from ddssp.errors import BudgetExceededError, PrivacyParameterError

#: Relative slack allowed when the ledger compares spent with budget. It only absorbs the rounding
#: of float sums (a final round spends "exactly what remains", computed as budget - spent).
LEDGER_RTOL = 1e-12


# --------------------------------------------------------------------------- ledger
@dataclass
class Ledger:
    """An approximate-zCDP budget (rho, plus ``delta_budget`` for mechanisms such as thresholding that
    are (rho, delta)-approximate zCDP; 0 by default) and the list of everything charged against it.

    ``charge`` raises :class:`BudgetExceededError` instead of letting either total pass its budget.
    The ledger draws nothing: :class:`~ddssp.dp.charged.ChargedMechanisms` charges it for each
    mechanism and runs the mechanism *after* the charge, with noise from a
    :class:`~ddssp.dp.noise.NoiseSource`.

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

        :meth:`~ddssp.dp.charged.ChargedMechanisms.run_opendp` charges through this, then runs the
        measurement.

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
        from ddssp.dp.measurements import opendp_charge

        rho, delta = opendp_charge(measurement, d_in)
        return self.charge(LedgerEntry(kind, rho, delta=delta, **fields))

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
