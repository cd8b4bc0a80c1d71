"""The self-check a loaded release must pass: its content agrees with itself.

Run by :meth:`ddssp.releasefile.Release.load` after the bounded reading; a release that fails it is
refused as corrupt or tampered. It checks the arrays against the schema (:func:`check_shapes`) and the
ledger against itself, the measurements and (eps, delta) (:func:`self_check`). Both take the
:class:`~ddssp.releasefile.Release` (typed ``Any``: ``model.py`` imports this module, not the reverse).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ddssp.dp import approx_zcdp_rho_budget, entry_problem
from ddssp.errors import ReleaseFileError
from ddssp.releasefile.format import is_integral


def check_shapes(rel: Any, path: Path) -> None:
    """Raise :class:`ReleaseFileError` if the model's domain or a measurement's size does not fit the schema."""
    if dict(rel.model.domain) != dict(rel.schema.domain):
        raise ReleaseFileError(f"{path}: the model's domain does not match the release's schema")
    names = set(rel.schema.names)
    for m in rel.measurements:
        if not set(m.clique) <= names:
            raise ReleaseFileError(f"{path}: measurement on unknown columns {m.clique}")
        shape = tuple(rel.schema.domain[c] for c in m.clique)
        if m.values.size != math.prod(shape):
            raise ReleaseFileError(f"{path}: measurement {m.clique} has {m.values.size} cells, expected {shape}")


def self_check(rel: Any, stated_rho_spent: Any = None) -> str | None:
    """The first problem of ``rel``'s ledger against itself, its measurements and (eps, delta), or None.

    - every entry passes its kind's check (:func:`ddssp.dp.entry_problem`: e.g. rho = 1/(2 sigma^2)
      for a Gaussian measurement of sensitivity 1, rho = eps_em^2/8 for a selection);
    - the 'measure' entries and the measurements agree one to one, in order (clique, sigma, round);
    - one 'select' entry for each round >= 1, one measurement per such round, none in round 0;
    - noisy counts are integers (the discrete Gaussian's outputs);
    - the entries sum to the stated rho_spent, which equals the budget (AIM spends all of it);
    - the budget is what (eps, delta) convert to, and the approximate-zCDP delta stays in its budget.

    Parameters
    ----------
    rel
        The release to check.
    stated_rho_spent
        The ``rho_spent`` written in the file, or None to skip that comparison.

    Returns
    -------
    str or None
        A one-line description of the first problem found, or None if there is none.
    """
    led = rel.ledger
    for i, e in enumerate(led.entries):
        p = entry_problem(e)
        if p:
            return f"ledger entry {i} ({e.kind}): {p}"
    meas_entries = [e for e in led.entries if e.kind == "measure"]
    if len(meas_entries) != len(rel.measurements):
        return (f"the ledger pays for {len(meas_entries)} measurements but the file holds "
                f"{len(rel.measurements)}")
    for i, (e, m) in enumerate(zip(meas_entries, rel.measurements)):
        if tuple(e.clique or ()) != tuple(m.clique) or e.round != m.round:
            return f"measurement {i} ({','.join(m.clique)}, round {m.round}) is not the one its ledger entry paid for"
        if not math.isclose(float(e.sigma), float(m.sigma), rel_tol=1e-12):
            return f"measurement {i} ({','.join(m.clique)}) has sigma {m.sigma:.6g} but its ledger entry paid for {e.sigma:.6g}"
        if not is_integral(m.values):
            return f"measurement {i} ({','.join(m.clique)}) holds non-integer counts (not discrete Gaussian noise)"
    sel_rounds = sorted(int(e.round) for e in led.entries if e.kind == "select" and e.round is not None)
    if len([e for e in led.entries if e.kind == "select"]) != len(sel_rounds):
        return "a selection entry has no round"
    meas_rounds = sorted(int(m.round) for m in rel.measurements if m.round >= 1)
    if sel_rounds != meas_rounds or len(set(sel_rounds)) != len(sel_rounds):
        return "selections and measured rounds do not match (one selection and one measurement per round)"
    spent = led.spent
    if stated_rho_spent is not None:
        try:
            stated = float(stated_rho_spent)
        except (TypeError, ValueError):
            return f"stated rho_spent {stated_rho_spent!r} is not a number"
        if not math.isclose(stated, spent, rel_tol=1e-9):
            return f"the ledger entries sum to rho={spent:.9g} but the file states {stated:.9g}"
    if not math.isclose(spent, led.rho_budget, rel_tol=1e-9):
        return f"the ledger entries sum to rho={spent:.9g}, not the budget {led.rho_budget:.9g}"
    if led.delta_spent > led.delta_budget * (1 + 1e-9):
        return f"approximate-zCDP delta spent {led.delta_spent:.3g} exceeds its budget {led.delta_budget:.3g}"
    if not led.delta_budget < rel.delta:
        return f"approximate-zCDP delta budget {led.delta_budget:.3g} is not below delta={rel.delta:g}"
    budget = approx_zcdp_rho_budget(rel.eps, rel.delta, led.delta_budget)
    if not math.isclose(budget, led.rho_budget, rel_tol=1e-9):
        return (f"rho budget {led.rho_budget:.9g} is not what eps={rel.eps:g}, delta={rel.delta:g} "
                f"convert to ({budget:.9g})")
    return None
