"""The first phase of an AIM run given a regression target Y: which marginals it measures (Y's
one-way marginal and its pair with every other column, :func:`target_cliques`), how much of the
budget it takes (:func:`first_phase_share`) and the checks of the target and of the model those
pairs build. The phase itself runs in :func:`ddssp.marginals.aim.measure_target_phase`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ddssp.errors import WorkloadError
from ddssp.marginals.named_tables import canonical, cells
from ddssp.types import Clique

#: When no share is given, the first phase's share of AIM's budget starts at the default (measured on
#: Adult, where its pairs are well measured) and is raised, up to ``MAX_TARGET_SHARE``, until the
#: noise sd of one of its cells is at most ``TARGET_CELL_SD`` of the table's (noisy) rows. On a few
#: hundred rows at eps 0.3 the default left that sd near half the rows, and X^T y's noise then
#: outweighed its signal; the adaptive rounds keep at least 1 - ``MAX_TARGET_SHARE`` of the budget.
TARGET_CELL_SD = 0.01
MAX_TARGET_SHARE = 0.8


def first_phase_share(rows: float, sigma: float, share: float) -> float:
    """The first phase's share of AIM's budget: ``share``, raised so that the noise sd of its cells is
    at most ``TARGET_CELL_SD * rows``, at most ``MAX_TARGET_SHARE`` (never below ``share``).
    Non-increasing in ``rows``. Post-processing of the noisy row count.

    Parameters
    ----------
    rows : float
        The table's noisy row count (the sum of the target's measured one-way marginal).
    sigma : float
        The noise sd of the phase's cells at ``share``.
    share : float
        The default share.

    Returns
    -------
    float
    """
    want = share * (sigma / (TARGET_CELL_SD * max(rows, 1.0))) ** 2
    return min(max(share, want), max(share, MAX_TARGET_SHARE))


def pair_sigma(pairs: int, one_ways: int, sigma: float, rho_phase: float) -> float:
    """The noise sd of the phase's pairs when its one-way marginals were measured at ``sigma`` and
    the whole phase spends ``rho_phase``: the pairs' charges sum to what the one-ways left.

    Parameters
    ----------
    pairs, one_ways : int
        How many pairs and one-way marginals the phase measures.
    sigma : float
        The one-ways' noise sd.
    rho_phase : float
        The phase's zCDP budget (at least the one-ways' charge).

    Returns
    -------
    float
    """
    return math.sqrt(pairs / (2.0 * (rho_phase - one_ways / (2.0 * sigma**2))))


def target_columns(target: str | Sequence[str] | None, domain: Mapping[str, int]) -> list[str]:
    """The target columns, checked against the domain (a bare string is one column).

    Parameters
    ----------
    target : str, sequence of str or None
        The run's target(s).
    domain : dict
        ``{column: size}``.

    Returns
    -------
    list of str
        Without repeats; empty for None.

    Raises
    ------
    WorkloadError
        For a name that is not a column of the domain.
    """
    if target is None:
        return []
    names = [target] if isinstance(target, str) else list(target)
    for t in names:
        if not isinstance(t, str) or t not in domain:
            raise WorkloadError(f"target column {t!r} is not in the domain (columns: {', '.join(domain)})")
    return list(dict.fromkeys(names))


def target_cliques(domain: Mapping[str, int], targets: Sequence[str]) -> list[Clique]:
    """What the first phase measures: each target's one-way marginal, then its pair with every other
    column (each pair once), in the caller's column order.

    Parameters
    ----------
    domain : dict
        ``{column: size}`` in the caller's order.
    targets : sequence of str
        The target columns.

    Returns
    -------
    list of tuple of str
        Empty without targets.
    """
    out: list[Clique] = [(t,) for t in targets]
    seen: set[Clique] = set()
    for t in targets:
        for c in domain:
            pair = canonical(domain, (t, c))
            if c != t and pair not in seen:
                seen.add(pair)
                out.append(pair)
    return out


def check_target_phase(first: list[Clique], domain: Mapping[str, int], cap: float) -> None:
    """Refuse a first phase whose pairs alone build a model larger than the size limit.

    Parameters
    ----------
    first : list of tuple of str
        What the first phase measures (:func:`target_cliques`).
    domain : dict
        ``{column: size}``.
    cap : float
        The model size limit (MB).

    Raises
    ------
    WorkloadError
        Naming the limit and what to change.
    """
    mb = sum(cells(domain, c) for c in first if len(c) > 1) * 8 / 2**20
    if mb > cap:
        raise WorkloadError(
            f"the target's pairs with every other column hold {mb:.1f} MB of cells, more than the model "
            f"size limit of {cap:g} MB; drop or bin the largest columns, or raise max_model_size"
        )
