"""Option groups of the multi-task estimators: small frozen records passed as one constructor parameter.

- :class:`TaskWeighting`: how each user's budget is spread over their tasks (all three estimators);
- :class:`GradientSteps`: the noisy gradient descent of :class:`~.estimators.MultiTaskNoisyGD`;
- :class:`ALSOptions`: the alternating least squares of :class:`~.estimators.DPALS` and :func:`~.als.dp_als`.

They only hold values; each is checked where it is used (as before the grouping), so a bad value raises
at ``fit`` with the field's name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskWeighting:
    """How the per-user budget beta is spread over a user's tasks (adaptive weights, Krichene et al.).

    Attributes
    ----------
    mu : float
        Weight exponent (omega_i ~ n_i^-mu; 0 = uniform, 1/2 is the strongly convex optimum).
    per_user : {"normalize", "clip"}
        "normalize" (w_ij = omega_i sqrt(beta / S_j), every user spends exactly beta; the paper's
        Appendix C "weights normalized per user") or "clip" (w_ij = omega_i min(1, sqrt(beta / S_j));
        users with S_j < beta leave budget unspent). Normalising is the default: it gave the lower
        error on the multi-task benchmarks (docs/benchmarks.md).
    beta_bar : float
        sum_i n_i omega_i^2 = n * beta_bar * beta.
    count_share : float
        Fraction of rho for the noisy task counts (when the weights need them).
    count_clip : float
        Per-user L2^2 clip of the count contributions (a user with more tasks counts fractionally).
    """

    mu: float = 0.5
    per_user: str = "normalize"
    beta_bar: float = 1.0
    count_share: float = 0.15
    count_clip: float = 32.0


@dataclass(frozen=True)
class GradientSteps:
    """The task-weighted noisy gradient descent of :class:`~.estimators.MultiTaskNoisyGD`.

    Attributes
    ----------
    steps : int
        Number of noisy gradient steps.
    lr : float
        Step size of task i: lr / (n_hat_i omega_i clip_x^2), from the noisy counts.
    radius : float
        Parameters stay in the ball of this radius.
    grad_clip : float or None
        Per-example gradient clip (None: clip_x^2 (radius + clip_star), which never binds for data
        within the declared bounds).
    """

    steps: int = 20
    lr: float = 0.5
    radius: float = 1.0
    grad_clip: float | None = None


@dataclass(frozen=True)
class ALSOptions:
    """The alternating least squares of :class:`~.estimators.DPALS` (:func:`~.als.dp_als`).

    Attributes
    ----------
    rank : int
        Embedding dimension.
    rounds : int
        Number of alternating rounds (each a beta-zCDP release).
    allocation : {"adaptive", "uniform", "tail"}
        "adaptive" (AdaDPALS: weights omega_i ~ n_hat_i^-mu with per-user clipping), "uniform"
        (DPALS: each user keeps k random ratings) or "tail" (each user keeps their k ratings of the
        least popular items by noisy count).
    k : int or None
        Ratings kept per user ("uniform" / "tail").
    item_ridge : float or None
        Ridge of the item solve (None: clip_x^2 sqrt(rank)).
    user_ridge : float
        Ridge of each user's solve.
    init_scale : float or None
        Scale of the random initial item embeddings (None: 1 / sqrt(rank)).
    """

    rank: int = 5
    rounds: int = 5
    allocation: str = "adaptive"
    k: int | None = None
    item_ridge: float | None = None
    user_ridge: float = 0.1
    init_scale: float | None = None
