"""The self-check a loaded release must pass: its content agrees with itself.

Run by :meth:`ddssp.releasefile.Release.load` after the bounded reading; a release that fails it is
refused as corrupt or tampered. It checks the arrays against the schema (:func:`check_shapes`), the
ledger against itself, the measurements and (eps, delta) (:func:`self_check`), the stamps against
the rest of the file (:func:`stamp_problem`) and the model against the measurements
(:func:`model_fit_problem`). All take the :class:`~ddssp.releasefile.Release` (typed ``Any``:
``model.py`` imports this module, not the reverse).

What a forger without the publisher's signing key can still do: write any release that is
consistent in all these respects, e.g. run ddssp on other data (or on made-up measurements) and
label it with any name, or rewrite every number, stamp and the model together so that they agree.
The self-check proves consistency, not origin: only a signature checked against a trusted key
(``ddssp verify --public-key``) says who wrote a file. It does catch a partial edit: a swapped model
(fitted to other measurements), an insecure-seed stamp removed while the seed is kept, a
``schema_status`` of "declared" over a draft schema or over discovery charges in the ledger.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ddssp.dp import approx_zcdp_rho_budget, entry_problem
from ddssp.errors import ReleaseFileError
from ddssp.marginals.aim_settings import (  # one definition for the final fit and this check
    MODEL_FIT_FALSE_ALARM,
    model_fit_bound,
)
from ddssp.marginals.aim_settings import model_fit_statistic as _statistic
from ddssp.marginals.recycled import recycled_problem
from ddssp.releasefile.format import (
    SCHEMA_DECLARED,
    SCHEMA_DISCOVERED,
    SCHEMA_NOT_PRIVATE,
    is_integral,
)


def check_shapes(rel: Any, path: Path) -> None:
    """Check the model's domain and each measurement's size against the schema.

    Parameters
    ----------
    rel : Release
        The loaded release.
    path : pathlib.Path
        Its file, for messages.

    Raises
    ------
    ReleaseFileError
        On a mismatch.
    """
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
    - every recycled one-way marginal (:mod:`ddssp.marginals.recycled`) sums the cells of a discovery
      count of its column at that count's sigma (:func:`~ddssp.marginals.recycled.recycled_problem`);
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
        return f"the ledger pays for {len(meas_entries)} measurements but the file holds {len(rel.measurements)}"
    for i, (e, m) in enumerate(zip(meas_entries, rel.measurements)):
        if tuple(e.clique or ()) != tuple(m.clique) or e.round != m.round:
            return f"measurement {i} ({','.join(m.clique)}, round {m.round}) is not the one its ledger entry paid for"
        if not math.isclose(float(e.sigma), float(m.sigma), rel_tol=1e-12):
            return f"measurement {i} ({','.join(m.clique)}) has sigma {m.sigma:.6g} but its ledger entry paid for {e.sigma:.6g}"
        if not is_integral(m.values):
            return f"measurement {i} ({','.join(m.clique)}) holds non-integer counts (not discrete Gaussian noise)"
    domain = dict(rel.schema.domain)
    for m in getattr(rel, "recycled", ()):
        p = recycled_problem(m, led, domain)
        if p:
            return p
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
        return (
            f"rho budget {led.rho_budget:.9g} is not what eps={rel.eps:g}, delta={rel.delta:g} "
            f"convert to ({budget:.9g})"
        )
    return None


def stamp_problem(rel: Any) -> str | None:
    """The first disagreement of the noise source and ``schema_status`` with the rest of the file, or None.

    - a secure source is OpenDP with no seed and no stamp; an insecure one carries the stamp;
    - ``schema_status`` is one of the three values; a schema with a draft stamp is "not private";
      discovery charges in the ledger mean the schema is not merely "declared".

    Parameters
    ----------
    rel : Release
        The loaded release.

    Returns
    -------
    str or None
    """
    from ddssp.dp.noise import INSECURE_STAMP

    noise = rel.noise
    if noise.get("secure") is True:
        if noise.get("source") != "opendp" or "seed" in noise or "stamp" in noise:
            return f"the noise source {noise!r} is marked secure but is not OpenDP's unseeded samplers"
    elif noise.get("stamp") != INSECURE_STAMP:
        return "an insecure noise source without its stamp"
    status = rel.schema_status
    if status not in (SCHEMA_DECLARED, SCHEMA_DISCOVERED, SCHEMA_NOT_PRIVATE):
        return f"unknown schema_status {status[:60]!r}"
    if getattr(rel.schema, "draft", None) is not None and status != SCHEMA_NOT_PRIVATE:
        return "the schema carries the data-derived draft stamp but schema_status does not say 'not private'"
    if rel.ledger.discovery_entries and status == SCHEMA_DECLARED:
        return "the ledger pays for schema discovery but schema_status says 'declared'"
    return None


def model_fit_statistic(rel: Any) -> tuple[float, int]:
    """sum over measurements of ||y - model marginal||^2 / sigma^2, and the number of cells summed
    (:func:`ddssp.marginals.aim_settings.model_fit_statistic` on the release's fitted model).

    Parameters
    ----------
    rel : Release
        The loaded release.

    Returns
    -------
    statistic : float
        inf for a forged huge value.
    cells : int
    """
    return _statistic(rel.fitted_model, rel.measurements)


def model_fit_problem(rel: Any) -> str | None:
    """None if the model fits the measurements as well as the recorded sigmas allow; else why not.

    Parameters
    ----------
    rel : Release
        The loaded release.

    Returns
    -------
    str or None
        E.g. the model of another release was swapped in.
    """
    if not rel.measurements:
        return None
    stat, cells = model_fit_statistic(rel)
    bound = model_fit_bound(cells)
    if not (np.isfinite(stat) and stat <= bound):
        return (
            f"the model does not fit the measurements: sum of squared residuals / sigma^2 = {stat:.4g} over "
            f"{cells} cells, above {bound:.4g} (an honest fit stays below it with probability "
            f"1 - {MODEL_FIT_FALSE_ALARM:g}); the model was not fitted to these measurements"
        )
    return None
