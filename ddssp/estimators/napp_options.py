"""Option groups of :class:`~ddssp.estimators.napp_erm.NAPPERM`: small frozen records, one constructor
parameter each (``penalty``, ``bounds``, ``augmentation``, ``selection``, ``budget``).

They only hold values; ``NAPPERM.fit`` checks them (a bad value raises with the field's name).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Penalty:
    """The target penalty Lambda R(theta).

    Attributes
    ----------
    kind : {"ridge", "bridge", "lasso", "elasticnet"}
        ridge R = ||theta||^2; bridge R = sum |theta_j|^(2 - gamma); lasso = bridge with gamma = 1;
        elastic net R = ||theta||_1 + kappa ||theta||^2.
    Lambda : float
        Target penalty weight on the summed-loss scale.
    gamma : float
        Bridge exponent (R = sum |theta|^(2 - gamma)).
    kappa : float
        Elastic-net ridge share (R = ||theta||_1 + kappa ||theta||^2).
    """

    kind: str = "lasso"
    Lambda: float = 1.0
    gamma: float = 1.0
    kappa: float = 0.5


@dataclass(frozen=True)
class DeclaredBounds:
    """Bounds declared by the analyst (never taken from the data); the noise scale follows from them.

    Attributes
    ----------
    zeta1 : float
        Bound on ||x_i||; rows with larger norm are scaled down to it.
    y_bound : float or None
        Response bound (linear: |y| <= y_bound; Poisson: 0 <= y <= y_bound); responses clipped.
    theta_bound : float or None
        Radius of the parameter ball the fit is restricted to (required for linear and Poisson,
        whose derivative bound zeta2 depends on it; optional for logistic).
    """

    zeta1: float = 1.0
    y_bound: float | None = None
    theta_bound: float | None = None


@dataclass(frozen=True)
class Augmentation:
    """The augmented rows and the iterations that solve the augmented problem.

    Attributes
    ----------
    n_e : int
        Number of augmented rows (even).
    Lambda0 : float or None
        Strong-convexity floor; default and minimum zeta3 / (2 (1-r) eps); a smaller value raises
        PrivacyParameterError.
    moor : bool
        True = max form (the paper's method); False = sum form (the existing DP-ERM of Kifer et al.).
    max_iter : int
        Stop after max_iter iterations (80, as the paper on Adult) ...
    tol : float
        ... or when the relative change of the augmented objective (net of its constant value at
        theta = 0) falls below tol (never before iteration 3 for adaptive penalties). Default 0:
        always max_iter iterations. The augmented rows are redrawn every iteration, so that change
        fluctuates around 1e-3 and a tolerance near that level stops the lasso before its zero
        coefficients have decayed.
    """

    n_e: int = 10000
    Lambda0: float | None = None
    moor: bool = True
    max_iter: int = 80
    tol: float = 0.0


@dataclass(frozen=True)
class Selection:
    """Variable selection: the NAPP-VS variants and how ``selected_`` is decided.

    Attributes
    ----------
    variant : None, "vs" or "vs+"
        NAPP-VS: sign-flipped DP term, b^T|theta|; VS+: b drawn from the half distribution, b_j >= 0.
    rule : {"sign", "threshold"}
        "sign" (default; the paper's Sec 3.5 "fluctuates around 0 after convergence"): a coefficient
        is selected only if its sign was the same (and non-zero) at each of the last ``sign_window``
        + 1 iterates; every other coefficient is set to exactly 0 in ``coef_`` (the unthresholded
        last iterate is ``coef_last_``). Why: with VS / VS+ a DP term larger than the data gradient
        flips a coefficient's sign at every iteration, so a magnitude threshold counts it as
        selected. The fit never stops on ``tol`` before iteration K + 1 with this rule.
        "threshold": |theta_j| > zero_threshold; ``coef_`` is the last iterate, unchanged.
    sign_window : int
        K for the "sign" rule.
    zero_threshold : float or "auto"
        For the "threshold" rule: |theta_j| <= zero_threshold counts as not selected; "auto"
        (default) is max(20 ||theta||_1 / n_e, 1e-7), above the O(||theta||_1 / n_e) level at which
        the redrawn augmented rows hold a coefficient whose target is zero (see AUTO_ZERO_FACTOR).
        In VS/VS+ a coefficient with |theta_j| <= 1e-10 keeps its previous sign.
    """

    variant: str | None = None
    rule: str = "sign"
    sign_window: int = 10
    zero_threshold: float | str = "auto"


@dataclass(frozen=True)
class Budget:
    """How eps is split and what happens to the budget the fit does not need.

    Attributes
    ----------
    r : float
        Share of eps for the noise ratio r1 (the rest bounds the Jacobian ratio r2).
    retrieval : {"none", "return", "recycle"}
        Proposition 6 ("return": report eps - Delta_eps) or Algorithm 2 ("recycle": one rerun with
        Lambda0 raised to the previous minimum curvature).
    recycle_noise : {"rescale", "fresh"}
        The recycled run's DP noise. "rescale" (default; Algorithm 2 step 6 as printed: e*, i.e. the
        first draw b, times r eps / (r eps + Delta_eps); for eps-DP (spherical Laplace, scale
        proportional to 1/eps) this has exactly the distribution of a fresh draw at
        r eps + Delta_eps; for the Gaussian b it is slightly smaller than a fresh draw, since sigma
        is not proportional to 1/eps) or "fresh" (a new, independent draw at r eps + Delta_eps).
    """

    r: float = 0.5
    retrieval: str = "none"
    recycle_noise: str = "rescale"
