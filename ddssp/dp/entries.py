"""The ledger's entries: one paid-for mechanism run each (:class:`LedgerEntry`), and how an entry is
verified from its own fields.

Every entry kind has a check (:func:`register_entry_check`) that recomputes the charge from the
entry's public parameters; :func:`entry_problem` runs it, so a release's self-check can verify every
entry of its ledger on load. AIM's kinds, ``measure`` (discrete Gaussian) and ``select``
(exponential mechanism), run by :class:`~ddssp.dp.charged.ChargedMechanisms`, are registered here;
discovery registers its own (:mod:`ddssp.dp.discovery_mechanisms`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ddssp.dp.mechanisms import exponential_rho, gaussian_rho
from ddssp.errors import PrivacyParameterError
from ddssp.types import Clique


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
            When rho or delta is not a non-negative finite number, ``params`` is not an object, or
            ``kind`` is not a string.
        TypeError
            For unknown fields.
        """
        d = dict(d)
        if d.get("clique") is not None:
            d["clique"] = tuple(d["clique"])
        e = cls(**d)
        if not isinstance(e.kind, str):
            raise PrivacyParameterError(f"ledger entry kind must be a string, got {e.kind!r}")
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
