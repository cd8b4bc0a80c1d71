"""Mirror descent on the Private-PGM loss: the one loop AIM's estimation and the bootstrap's refits run.

The problem is ``min_theta L(mu(theta))`` with ``theta`` log-potentials on the cliques of a graphical
model, ``mu(theta)`` its marginals on the measured cliques and ``L`` the L2 loss
``sum_i ||mu_{c_i} - y_i||^2 / (2 sigma_i^2)``. A step moves the potentials against the loss gradient
broadcast onto them (the entropic mirror-descent update of ``mbi.estimation.MirrorDescent``).

A caller supplies a :class:`Problem` (how to evaluate a point and which direction to step in) and
chooses the schedule with :class:`MirrorDescentOptions`:

- ``momentum=None``: plain mirror descent; a step that fails the Armijo test is rejected and halves
  the step size.
- ``momentum="fista"``: Nesterov / FISTA momentum (``t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2``) with
  Armijo backtracking from the extrapolated point and an adaptive restart (momentum dropped when the
  loss goes up). AIM's default.
- ``momentum="k3"``: momentum ``k / (k + 3)`` (k = accepted steps since the last restart), a step
  accepted when it does not raise the loss; when it does, a plain step from the last iterate is tried
  before the step size is halved. The direction is taken at the extrapolated point (Nesterov), so a
  step evaluates two points. Made for steps along a preconditioned direction, which is not a
  gradient, so the Armijo test does not apply.
- ``momentum="heavy"``: as ``"k3"`` but the direction is taken at the last iterate and the step
  adds ``beta`` times the previous step (Polyak's heavy ball): one evaluation per step. The
  bootstrap's rule.

Step growth, a relative-loss tolerance checked every ``block`` steps, the patience of that rule and a
caller's own stopping test (``watch``) are options of every schedule. Parameters are a dict or a list of numpy arrays (same arithmetic either way).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

#: The tolerance rule compares the loss every this many steps.
TOL_BLOCK = 10


@dataclass
class Point:
    """One evaluated iterate.

    Attributes
    ----------
    theta : dict or list of numpy.ndarray
        The potentials.
    mu : dict
        The marginals, ``{clique: numpy.ndarray}``.
    loss : float
        The loss at ``theta``.
    grad : dict or None
        The loss gradient with respect to ``mu`` (needed by the Armijo test).
    extra : object
        Whatever the problem keeps with the point (e.g. the calibrated tables).
    """

    theta: Any
    mu: dict
    loss: float
    grad: dict | None = None
    extra: Any = None


class Problem(Protocol):
    """What :func:`mirror_descent` needs from a problem."""

    def evaluate(self, theta: Any) -> Point:
        """Evaluate the potentials ``theta``.

        Parameters
        ----------
        theta : dict or list of numpy.ndarray
            The potentials.

        Returns
        -------
        Point
            ``theta`` with its marginals, loss (and gradient, where the schedule needs it).
        """

    def direction(self, point: Point, precondition: bool) -> Any:
        """The step direction on the potentials at ``point``.

        Parameters
        ----------
        point : Point
            Where the direction is taken.
        precondition : bool
            Scale the direction by the problem's preconditioner, if it has one.

        Returns
        -------
        dict or list of numpy.ndarray
            Same structure as ``theta``; a step is ``theta - alpha * direction``.
        """


@dataclass(frozen=True)
class MirrorDescentOptions:
    """Schedule of :func:`mirror_descent`.

    Parameters
    ----------
    momentum : {None, "fista", "k3", "heavy"}
        Plain steps, FISTA momentum with Armijo backtracking, or ``k / (k + 3)`` momentum with a
        decrease test, Nesterov-style or heavy-ball (see the module docstring).
    grow : float
        The step size is multiplied by this after every accepted step (1: it only shrinks).
    tol : float or None
        Stop once the loss decreases by at most ``tol * max(loss, 1)`` over ``block`` steps.
    patience : int
        Number of consecutive blocks below ``tol`` before stopping.
    block : int
        Steps per tolerance block.
    count : {"iterations", "accepted"}
        What the blocks count: every iteration, or accepted steps only.
    backtracks : int
        ``momentum="fista"``: at most this many trial steps (halving the step) per iteration.
    precondition : bool
        Passed to :meth:`Problem.direction` until ``fallback`` switches it off.
    fallback : callable or None
        With ``precondition``: once the step size falls below ``fallback_ratio`` times its start,
        switch to the plain direction, drop the momentum and take the step size ``fallback(theta)``.
    fallback_ratio : float
        See ``fallback``.
    watch : callable or None
        Called as ``watch(iteration, point)`` after every iteration with the last accepted iterate
        (the same object again after a rejected step); a true return value stops the run. A
        caller's own stopping rule, e.g. on how far the iterates still move.
    """

    momentum: str | None = "fista"
    grow: float = 1.0
    tol: float | None = None
    patience: int = 1
    block: int = TOL_BLOCK
    count: str = "iterations"
    backtracks: int = 60
    precondition: bool = False
    fallback: Callable[[Any], float] | None = None
    fallback_ratio: float = 1e-6
    watch: Callable[[int, Point], Any] | None = None

    def __post_init__(self):
        if self.momentum not in (None, "fista", "k3", "heavy"):
            raise ValueError(f"unknown momentum rule {self.momentum!r} (use None, 'fista', 'k3' or 'heavy')")
        if self.count not in ("iterations", "accepted"):
            raise ValueError(f"count must be 'iterations' or 'accepted', got {self.count!r}")
        if self.patience < 1 or self.block < 1 or self.backtracks < 1:
            raise ValueError("patience, block and backtracks must be positive")


@dataclass
class MirrorDescentResult:
    """Outcome of :func:`mirror_descent`.

    Attributes
    ----------
    point : Point
        The last accepted iterate.
    iterations : int
        Iterations run (rejected steps included).
    alpha : float
        The step size at the end.
    start_loss : float
        Loss of the starting point.
    recent : list of float
        Losses of the last ``block + 1`` accepted iterates (the first is the start).
    """

    point: Point
    iterations: int
    alpha: float
    start_loss: float
    recent: list

    @property
    def loss(self) -> float:
        """Loss of the last accepted iterate."""
        return self.point.loss

    def last_drop(self, block: int = TOL_BLOCK) -> float:
        """Relative loss decrease over the last ``block`` accepted steps.

        Parameters
        ----------
        block : int
            The run's ``MirrorDescentOptions.block`` (``recent`` reaches back that many accepted
            steps).

        Returns
        -------
        float
            ``(recent[0] - loss) / max(loss, 1)``; inf if fewer than ``block`` steps were accepted.
        """
        if len(self.recent) <= block:
            return float("inf")
        return (self.recent[0] - self.point.loss) / max(self.point.loss, 1.0)


def _step(theta, alpha: float, d):
    """``theta - alpha * d`` (dict or list of arrays)."""
    if isinstance(theta, dict):
        return {k: theta[k] - alpha * d[k] for k in theta}
    return [a - alpha * g for a, g in zip(theta, d)]


def _extrapolate(x, x_prev, beta: float):
    """``x + beta * (x - x_prev)`` (dict or list of arrays)."""
    if isinstance(x, dict):
        return {k: x[k] + beta * (x[k] - x_prev[k]) for k in x}
    return [a + beta * (a - b) for a, b in zip(x, x_prev)]


def _armijo(y: Point, x: Point, alpha: float) -> bool:
    """Sufficient decrease from ``y`` to ``x`` (the line search of ``mbi``'s mirror descent)."""
    dot = sum(float(np.vdot(y.grad[c], y.mu[c] - x.mu[c])) for c in y.grad)
    return y.loss - x.loss >= 0.5 * alpha * dot


def mirror_descent(
    problem: Problem, theta: Any, alpha: float, iters: int, options: MirrorDescentOptions
) -> MirrorDescentResult:
    """Run at most ``iters`` iterations of mirror descent from ``theta`` with step size ``alpha``.

    Parameters
    ----------
    problem : Problem
        Evaluates points and gives step directions.
    theta : dict or list of numpy.ndarray
        Starting potentials (not modified).
    alpha : float
        Starting step size.
    iters : int
        Iteration budget.
    options : MirrorDescentOptions
        The schedule.

    Returns
    -------
    MirrorDescentResult
        The last accepted iterate and the run's counters.
    """
    o = options
    x = problem.evaluate(theta)
    x_prev = x.theta
    start_loss = x.loss
    recent = [x.loss]
    pre = o.precondition
    alpha_start = alpha
    beta = 0.0  # momentum of the next extrapolation (0: step from x itself)
    t = 1.0  # FISTA sequence
    k = 0  # accepted steps since the last restart ("k3")
    accepted = stalled = it = 0
    block_start = x.loss

    def converged(count: int) -> bool:
        nonlocal block_start, stalled
        if o.tol is None or count % o.block:
            return False
        if block_start - x.loss <= o.tol * max(abs(x.loss), 1.0):
            stalled += 1
            if stalled >= o.patience:
                return True
        else:
            stalled = 0
        block_start = x.loss
        return False

    for it in range(1, int(iters) + 1):
        if pre and o.fallback is not None and alpha < o.fallback_ratio * alpha_start:
            pre, k, beta = False, 0, 0.0
            alpha = o.fallback(x.theta)
        if o.momentum == "heavy":
            # heavy ball: the direction at x, moved along the last step; one evaluation per step
            y = x if beta == 0.0 else Point(_extrapolate(x.theta, x_prev, beta), x.mu, x.loss)
            d = problem.direction(x, pre)
        else:
            y = x if beta == 0.0 else problem.evaluate(_extrapolate(x.theta, x_prev, beta))
            d = problem.direction(y, pre)
        if o.momentum in ("k3", "heavy"):
            xn = problem.evaluate(_step(y.theta, alpha, d))
            if xn.loss > x.loss and k:  # momentum overshot: a plain step from x instead
                k = 0
                dx = d if o.momentum == "heavy" else problem.direction(x, pre)
                xn = problem.evaluate(_step(x.theta, alpha, dx))
            ok = not xn.loss > x.loss
            if not ok:
                alpha *= 0.5
        else:
            for _ in range(o.backtracks if o.momentum == "fista" else 1):
                xn = problem.evaluate(_step(y.theta, alpha, d))
                ok = _armijo(y, xn, alpha)
                if ok:
                    break
                alpha *= 0.5
            ok = ok or o.momentum == "fista"  # FISTA keeps the last backtracked step
        if not ok:
            k, beta = 0, 0.0
            if o.watch is not None and o.watch(it, x):
                break
            if o.count == "iterations" and converged(it):
                break
            continue
        alpha *= o.grow
        if o.momentum == "fista":
            if xn.loss > x.loss:  # adaptive restart
                t, beta = 1.0, 0.0
            else:
                t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
                beta = (t - 1.0) / t_new
                t = t_new
        elif o.momentum in ("k3", "heavy"):
            k += 1
            beta = k / (k + 3.0)
        x_prev, x = x.theta, xn
        accepted += 1
        recent = (recent + [x.loss])[-(o.block + 1) :]
        if o.watch is not None and o.watch(it, x):
            break
        if converged(it if o.count == "iterations" else accepted):
            break
    return MirrorDescentResult(x, it, alpha, start_loss, recent)
