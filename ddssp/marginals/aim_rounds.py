"""AIM's budget per round: the noise scale and selection parameter of a regular round
(:class:`RoundBudget`, halved and doubled together when AIM anneals), and the charges of the next
round (:func:`plan_round`), the last of which spends exactly what remains.

A regular round charges eps_em^2/8 (selection) + 1/(2 sigma^2) (measurement). The model-size limit
grows with the share of the budget spent, so a round may only select cliques whose model fits that
share.

AIM anneals when a round's measurement moved the model by no more than its noise would. Each anneal
quadruples a round's cost, so an anneal late in a run can leave the budget to one or two rounds,
spent on the largest cliques, while pairs nobody measured stay at the model's guess: on the NIST
excerpts (21 columns, eps 1) such runs were the heavy lower tail of the k-marginal score. An anneal
is therefore taken only while what remains pays for at least ``MIN_ROUNDS_LEFT`` rounds at the new
scale (:func:`may_anneal`); otherwise the run goes on at the current scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: A round measures several cliques (:func:`batch_size`) once the noise scale is below this share
#: of the number of rows.
STRONG_SIGNAL = 1e-3
#: An anneal is taken only while the budget left pays for this many regular rounds after it
#: (:func:`may_anneal`). Chosen by measurement (seeded releases of the NIST excerpts at eps 1 and
#: 10, UCI Adult): see the documentation's benchmark page, "AIM's late anneals".
MIN_ROUNDS_LEFT = 3


@dataclass(frozen=True)
class RoundBudget:
    """The per-round budget of a regular round; both parts move together when AIM anneals.

    Attributes
    ----------
    sigma : float
        The noise scale of the round's measurement.
    eps_em : float
        The selection's exponential-mechanism parameter.
    """

    sigma: float
    eps_em: float

    def annealed(self) -> RoundBudget:
        """Half the noise, twice the selection budget (the model stopped learning at this scale).

        Returns
        -------
        RoundBudget
        """
        return RoundBudget(self.sigma / 2, self.eps_em * 2)

    @property
    def cost(self) -> float:
        """The zCDP a regular round charges: eps_em^2/8 (selection) + 1/(2 sigma^2) (measurement)."""
        return 1 / (2 * self.sigma**2) + self.eps_em**2 / 8


def may_anneal(budget: RoundBudget, remaining: float, min_rounds_left: float) -> bool:
    """Whether AIM may anneal ``budget``: what remains pays for ``min_rounds_left`` rounds after it.

    Parameters
    ----------
    budget : RoundBudget
        The current regular round's budget.
    remaining : float
        zCDP not spent yet.
    min_rounds_left : float
        The regular rounds, at the annealed scale, the remaining budget must pay for (0: always).

    Returns
    -------
    bool
    """
    return remaining >= min_rounds_left * budget.annealed().cost


@dataclass(frozen=True)
class RoundPlan:
    """One round's charges.

    Attributes
    ----------
    eps_em : float
        The exponential-mechanism parameter of its selection.
    sigma_score : float
        The noise scale its measurement will have (what the scores subtract).
    size_limit : float
        The largest model (MB) the candidates may build after it.
    last : bool
        Whether it is the last round (which spends what remains).
    """

    eps_em: float
    sigma_score: float
    size_limit: float
    last: bool


def plan_round(budget: RoundBudget, rho: float, spent: float, max_model_size: float) -> RoundPlan:
    """The charges of the next round, given the regular ``budget`` and the ``spent`` part of ``rho``.

    Parameters
    ----------
    budget : RoundBudget
        The current regular round's sigma and eps_em.
    rho : float
        AIM's zCDP budget.
    spent : float
        zCDP spent so far.
    max_model_size : float
        Model size limit (MB) at the full budget.

    Returns
    -------
    RoundPlan
        The last round when two more regular rounds would not fit: it selects with 10% and measures
        with 90% of what remains.
    """
    remaining = rho - spent
    if remaining >= 2 * budget.cost:
        return RoundPlan(budget.eps_em, budget.sigma, max_model_size * (spent + budget.cost) / rho, False)
    eps_em = math.sqrt(8 * 0.1 * remaining)
    return RoundPlan(eps_em, math.sqrt(1 / (2 * 0.9 * remaining)), max_model_size * (spent + remaining) / rho, True)


def batch_size(sigma: float, total: float, rounds_left: float, fits_left: float) -> int:
    """How many cliques the next round selects and measures before the model is fitted again.

    One per round (AIM's loop) while the noise is large against the table: each measurement then
    changes what the next selection should be. When the noise per cell is small against the rows
    (``sigma / total`` below :data:`STRONG_SIGNAL`), a measurement is close to the exact marginal
    and selecting several from one model loses little, while every fit costs as much as the model
    is large; the round then measures enough cliques that the regular rounds left take about
    ``fits_left`` fits, never more than ``(STRONG_SIGNAL * total / sigma)`` cliques at once.

    Parameters
    ----------
    sigma : float
        The noise scale of the next regular measurement.
    total : float
        The model's estimate of the number of rows (from the noisy measurements: post-processing).
    rounds_left : float
        How many regular measurements the budget left pays for.
    fits_left : float
        How many fits the rest of the run should take at most.

    Returns
    -------
    int
        At least 1.
    """
    strength = STRONG_SIGNAL * total / sigma
    if strength < 2 or fits_left <= 0:
        return 1
    return max(1, min(int(strength), math.ceil(rounds_left / fits_left)))
