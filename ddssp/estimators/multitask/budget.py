"""How a target (eps, delta) is split in multi-task learning: rho_total = rho_counts + rounds * beta.

(eps, delta) becomes rho by the CKS conversion (:func:`plan_budget`); a share goes to the noisy task
counts (:mod:`.counts`), the rest is split evenly over the releases, each of per-user budget beta
(a beta-budget round is beta-zCDP). :func:`eps_spent` converts what a ledger has spent back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ddssp.dp import Ledger, check_delta, check_eps, eps_from_rho_delta, rho_from_eps_delta
from ddssp.errors import PrivacyParameterError


@dataclass(frozen=True)
class BudgetPlan:
    """How a target (eps, delta) is split: rho_total = rho_counts + rounds * beta.

    Attributes
    ----------
    eps, delta : float
        The target budget.
    rho_total : float
        Its zCDP equivalent (CKS).
    rho_counts : float
        The share for the noisy task counts.
    beta : float
        The per-user budget of each round.
    rounds : int
        The number of releases.
    """

    eps: float
    delta: float
    rho_total: float
    rho_counts: float
    beta: float
    rounds: int

    def to_dict(self) -> dict[str, Any]:
        """The plan as a JSON-ready dict (``rho`` is ``rho_total``).

        Returns
        -------
        dict
        """
        return {
            "eps": self.eps,
            "delta": self.delta,
            "rho": self.rho_total,
            "rho_counts": self.rho_counts,
            "beta": self.beta,
            "rounds": self.rounds,
        }


def plan_budget(eps: float, delta: float, rounds: int = 1, count_share: float = 0.0) -> BudgetPlan:
    """Split a target (eps, delta) between the task counts and the releases.

    rho comes from (eps, delta) by the CKS conversion; ``count_share`` of it goes to the task counts,
    the rest is split evenly over ``rounds`` releases of per-user budget beta each (a beta-budget round
    is beta-zCDP).

    Parameters
    ----------
    eps, delta : float
        The target budget.
    rounds : int
        The number of releases.
    count_share : float
        The share for the task counts, in [0, 1).

    Returns
    -------
    BudgetPlan

    Raises
    ------
    PrivacyParameterError
        For invalid parameters.
    """
    eps, delta = check_eps(eps), check_delta(delta)
    if not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise PrivacyParameterError(f"rounds must be a positive integer, got {rounds!r}")
    try:
        count_share = float(count_share)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"count_share must be a number in [0, 1), got {count_share!r}") from None
    if not 0.0 <= count_share < 1.0:
        raise PrivacyParameterError(f"count_share must lie in [0, 1), got {count_share!r}")
    rho = rho_from_eps_delta(eps, delta)
    rho_counts = count_share * rho
    beta = (rho - rho_counts) / rounds
    return BudgetPlan(eps, delta, rho, rho_counts, beta, int(rounds))


def eps_spent(ledger: Ledger, delta: float) -> float:
    """(eps, delta)-DP implied by what a ledger has spent (CKS conversion).

    Parameters
    ----------
    ledger : Ledger
        The ledger.
    delta : float
        The target delta.

    Returns
    -------
    float
    """
    return eps_from_rho_delta(ledger.spent, delta)
