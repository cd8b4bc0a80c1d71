"""Parametric bootstrap of a release's DP noise (post-processing: no privacy, no data).

Ferrando, Wang and Sheldon, "Parametric Bootstrap for Differentially Private Confidence Intervals"
(AISTATS 2022): take the released model as the truth, re-draw the noisy measurements the release made
(same cliques, same sigmas: y*_i = mu_i + N(0, sigma_i^2) with mu_i the released model's marginal),
re-estimate the model from them, refit, and read the spread of the refits.

Re-estimation is the same Private-PGM problem AIM solves (L2 loss sum_i ||mu_{c_i} - y_i||^2 /
(2 sigma_i^2), mirror descent with an Armijo step size, as :class:`ddssp.marginals.aim.MirrorDescentNumpy`) but
parameterised by log-potentials on the *released* junction tree's cliques and warm-started from the
released potentials. The gradient with respect to a tree clique's potential is the broadcast of the
measured cliques' gradients, so the iterates stay in the family spanned by the measured cliques (the
same model family AIM fitted); the warm start is the released model itself, which is the exact
minimiser for the released measurements, so a redraw only has to move it by the noise.

Measurements of one clique are pooled (precision-weighted mean; the loss differs by a constant) and
the pooled mean is re-drawn directly: mean of independent N(mu, sigma_i^2) draws weighted by
1/sigma_i^2 is N(mu, 1 / sum 1/sigma_i^2). The total (the minimum-variance unbiased estimate of N from
the measurements' sums, as AIM computes it) is a function of the pooled means and is recomputed.

Randomness comes from a numpy Generator passed in: this is post-processing, not DP noise.

Convergence (measured on Adult, eps 1, 71 measurements of 53 cliques, 4,023 measured cells of which
2,389 have a released count below 2 sigma): the converged re-estimate is far from the warm start.
Redrawn noise lifts cells the released model holds near zero (down to 1e-20 counts) and mirror
descent moves a log-potential by about alpha * r / sigma^2 per step, so the loss keeps falling for
thousands of iterations (one replicate: 1,495 at 150 iterations, 1,307 at 600, 983 at 2,400, 982 at
4,000; two others still falling at 4,000). Tried and measured no better per CPU second: L-BFGS on
the measured cliques' potentials with the exact gradient (expectation message passing) and a
diagonal Gauss-Newton scaling (1,039 at 1,000 iterations, 38 s CPU, against mirror descent's 983 in
34 s); per-cell scalings of the mirror-descent direction (not descent directions: they stall);
float32 calibrations (same CPU per calibration here). A first-order (linearised) refit is not an
option: it ignores that counts stay non-negative, and its coefficient deviations were 37x those of
the converged refit on a replicate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.errors import DDSSPError
from ddssp.marginals.model import CalibratedTree, GraphicalModel, bcast, canonical, cells, marginals_from

Clique = tuple[str, ...]

#: Default mirror-descent budget per bootstrap re-estimation (warm-started). NOT converged on large
#: models: on Adult at eps 1 (0.8 MB model) the replicates' loss is still falling after 4,000
#: iterations, and B = 100 replicates at 150 iterations give DP standard errors of 0.41x / 0.32x
#: (linear / logistic, median over coefficients; 0.28x / 0.20x before ``STEP_GROWTH``) the spread of
#: the coefficients over 25 independent releases of the same data (README, "Speed"); refits of 4,000
#: iterations give 1.03x / 0.75x (8 replicates).
#: Kept for speed; pass ``iters`` (and ``tol``) to :func:`bootstrap_models` to go further.
BOOT_ITERS = 150
#: The step grows by this factor after every accepted step (a rejected one halves it), the factor
#: ba89c74 measured for AIM's accelerated fits (there now an option: with a loss tolerance it stopped
#: one final fit early; the bootstrap's default runs a fixed number of steps). Without growth the step only shrinks and the slow part of the
#: re-estimation (lifting cells the released model holds near zero) stays slow. Measured on Adult eps
#: 1, 8 redraws, root-mean-square deviation of each coefficient from the released one relative to a
#: 4,000-iteration refit (median over coefficients, linear / logistic): at 150 iterations 0.31 / 0.33
#: without growth, 0.45 / 0.48 with 1.02; at 600 iterations 0.68 / 0.79 with 1.02; same CPU per step.
STEP_GROWTH = 1.02
#: ``tol``: the loss is compared every this many accepted steps (as AIM's final fit)
TOL_BLOCK = 10
#: belief-count floor of the preconditioner (one row)
PRECOND_FLOOR = 1.0


class MeasurementRefit:
    """Re-draw a release's measurements around its model and re-estimate the model, warm-started.

    ``MeasurementRefit(model, measurements)``; ``draw(rng)`` -> (pooled noisy marginals, total);
    ``refit(ybar, total)`` -> a :class:`GraphicalModel` on the released junction tree."""

    def __init__(self, model: GraphicalModel, measurements: list[Any], precondition: bool = True):
        self.use_precond = bool(precondition)
        if not measurements:
            raise DDSSPError("the release has no measurements to re-draw; a DP-noise bootstrap needs them")
        self.model = model
        self.domain = dict(model.domain)
        dom = self.domain
        prec: dict[Clique, float] = {}
        for m in measurements:
            c = canonical(dom, m.clique)
            sigma = float(m.sigma)
            if not (math.isfinite(sigma) and sigma > 0):
                raise DDSSPError(f"measurement on {m.clique} has sigma {sigma}; expected a positive number")
            prec[c] = prec.get(c, 0.0) + 1.0 / sigma**2
        self.prec = prec
        self.cliques = list(prec)
        self.tree = CalibratedTree(dom, list(model.cliques), list(model.edges))
        tcl = self.tree.cliques
        self.jt_of: dict[Clique, int] = {}
        for c in self.cliques:
            cand = [i for i, t in enumerate(tcl) if set(c) <= set(t)]
            if not cand:
                raise DDSSPError(f"measured clique {c} is not inside any clique of the released model")
            self.jt_of[c] = min(cand, key=lambda i: cells(dom, tcl[i]))
        self.groups: dict[int, list[Clique]] = {}
        for c in self.cliques:
            self.groups.setdefault(self.jt_of[c], []).append(c)
        self.total0 = float(model.total)
        self.mu0 = {c: model.marginal(c) for c in self.cliques}
        self.theta0 = [np.asarray(t, dtype=float).copy() for t in model.log_potentials]
        # Fixed diagonal preconditioner: 1 / (released belief count of each tree cell, at least PRECOND_FLOOR).
        # A step of the mirror-descent direction scaled by it moves every measured cell's count by about
        # the same fraction of its residual, whatever the cell's size (plain mirror descent moves small
        # cells very slowly). A fixed positive-definite scaling keeps the fixed point unchanged.
        self.precond = [1.0 / np.maximum(np.asarray(b, dtype=float), PRECOND_FLOOR) for b in model.beliefs]
        # total = sum_c w_c sum(ybar_c) / sum_c w_c with w_c = prec_c / cells(c) (AIM's MVU estimate)
        self.wtot = {c: prec[c] / cells(dom, c) for c in self.cliques}
        blocks: dict[int, float] = {}
        for c in self.cliques:  # Lipschitz constant of the gradient (as AIM computes it)
            i = self.jt_of[c]
            blocks[i] = blocks.get(i, 0.0) + prec[c] * cells(dom, tcl[i]) / cells(dom, c)
        self.lipschitz = max(blocks.values())

    # ------------------------------------------------------------------ redraws
    def draw(self, rng: np.random.Generator) -> tuple[dict[Clique, np.ndarray], float]:
        """Pooled noisy marginals y*_c ~ N(mu_c, 1/prec_c) per cell, and the total they imply."""
        ybar = {}
        for c in self.cliques:
            mu = self.mu0[c]
            ybar[c] = mu + rng.standard_normal(mu.shape) / math.sqrt(self.prec[c])
        num = sum(self.wtot[c] * float(ybar[c].sum()) for c in self.cliques)
        den = sum(self.wtot.values())
        return ybar, max(1.0, num / den)

    # ------------------------------------------------------------------ re-estimation
    def _oracle(self, theta: list[np.ndarray], total: float) -> dict[Clique, np.ndarray]:
        probs, scales = self.tree.calibrate([t.copy() for t in theta], overwrite=True, normalize=False)
        mu = {}
        for i, group in self.groups.items():
            for c, arr in marginals_from(probs[i], self.tree.cliques[i], group, self.domain).items():
                mu[c] = arr * (scales[i] * total)
        return mu

    def _loss_grad(self, mu, ybar):
        loss, grad = 0.0, {}
        for c, m in mu.items():
            r = m - ybar[c]
            loss += 0.5 * self.prec[c] * float(np.vdot(r, r))
            grad[c] = self.prec[c] * r
        return loss, grad

    def _direction(self, mu: dict[Clique, np.ndarray], ybar: dict[Clique, np.ndarray],
                   precondition: bool | None = None) -> list[np.ndarray]:
        """Mirror-descent direction on the tree cliques: sum of broadcast prec_c (mu_c - ybar_c)."""
        tcl = self.tree.cliques
        d = [np.zeros(t.shape) for t in self.theta0]
        for c in self.cliques:
            i = self.jt_of[c]
            d[i] += bcast(self.prec[c] * (mu[c] - ybar[c]), c, tcl[i])
        if self.use_precond if precondition is None else precondition:
            for i in range(len(d)):
                d[i] *= self.precond[i]
        return d

    def _loss(self, theta: list[np.ndarray], ybar, total: float):
        mu = self._oracle(theta, total)
        return mu, self._loss_grad(mu, ybar)[0]

    def step_size(self, ybar: dict[Clique, np.ndarray], total: float) -> float:
        """The largest step (doubling from AIM's 2 / (L N)) whose first step from the released potentials
        lowers the loss. Computed once per release and reused for every redraw."""
        alpha = 2.0 / (self.lipschitz * total)
        if self.use_precond:
            alpha = 1e-3 / max(self.prec.values())
        mu, loss = self._loss(self.theta0, ybar, total)
        d = self._direction(mu, ybar)
        for _ in range(40):
            trial = 2.0 * alpha
            _, l2 = self._loss([t - trial * g for t, g in zip(self.theta0, d)], ybar, total)
            if not l2 < loss:
                break
            alpha = trial
        return alpha

    def _plain_alpha(self, theta: list[np.ndarray], ybar, total: float) -> float:
        alpha = 2.0 / (self.lipschitz * total)
        mu, loss = self._loss(theta, ybar, total)
        d = self._direction(mu, ybar, False)
        for _ in range(40):
            _, l2 = self._loss([t - 2.0 * alpha * g for t, g in zip(theta, d)], ybar, total)
            if not l2 < loss:
                break
            alpha *= 2.0
        return alpha

    def refit(self, ybar: dict[Clique, np.ndarray], total: float, iters: int = BOOT_ITERS,
              alpha: float | None = None, tol: float | None = None) -> tuple[GraphicalModel, dict]:
        """Accelerated mirror descent (Nesterov momentum with adaptive restart) from the released
        potentials on the loss of ``ybar``; returns the refitted model and {'iterations', 'loss',
        'alpha'}. A step that raises the loss restarts the momentum; if a plain step also raises it,
        the step size is halved; an accepted step grows it by ``STEP_GROWTH``. ``tol``: stop early once
        ``TOL_BLOCK`` accepted steps lower the loss by at most ``tol * loss`` (AIM's rule for its final
        fit)."""
        tcl = self.tree.cliques
        if alpha is None:
            alpha = self.step_size(ybar, total)
        x = [t.copy() for t in self.theta0]
        x_prev = x
        mu, fx = self._loss(x, ybar, total)
        start_loss = fx
        k = 0
        pre = self.use_precond
        alpha_start = alpha
        block_start, accepted, it = fx, 0, 0
        recent = [fx]  # losses of the last TOL_BLOCK + 1 accepted iterates (convergence diagnostic)
        for it in range(1, int(iters) + 1):
            if pre and alpha < 1e-6 * alpha_start:
                # the preconditioned direction stopped descending (it is not a gradient): finish with
                # plain accelerated mirror descent, which has the same fixed points
                pre, k = False, 0
                alpha = self._plain_alpha(x, ybar, total)
            beta = k / (k + 3.0)
            y = [a + beta * (a - b) for a, b in zip(x, x_prev)] if k else x
            muy = mu if not k else self._oracle(y, total)
            d = self._direction(muy, ybar, pre)
            xn = [a - alpha * g for a, g in zip(y, d)]
            mun, fn = self._loss(xn, ybar, total)
            if fn > fx and k:  # momentum overshot: restart from x with a plain step
                k = 0
                d = self._direction(mu, ybar, pre)
                xn = [a - alpha * g for a, g in zip(x, d)]
                mun, fn = self._loss(xn, ybar, total)
            if fn > fx:
                alpha *= 0.5
                k = 0
                continue
            x_prev, x, mu, fx = x, xn, mun, fn
            k += 1
            accepted += 1
            recent = (recent + [fx])[-(TOL_BLOCK + 1):]
            alpha *= STEP_GROWTH  # grow back after halvings (see the constant)
            if tol is not None and accepted % TOL_BLOCK == 0:
                if block_start - fx <= tol * max(fx, 1.0):
                    break
                block_start = fx
        model = GraphicalModel(self.domain, dict(zip(tcl, x)), total, cliques=list(tcl), edges=list(self.tree.edges))
        # relative loss decrease over the last TOL_BLOCK accepted steps: above AIM's FINAL_TOL the
        # re-estimation was still moving when it stopped (its spread understates the DP noise)
        last_drop = (recent[0] - fx) / max(fx, 1.0) if len(recent) > TOL_BLOCK else float("inf")
        return model, {"iterations": it, "loss": fx, "alpha": alpha, "start_loss": start_loss,
                       "last_drop": last_drop}


class ModelSource:
    """A marginal source (``schema``, ``total``, ``marginal``) backed by a model: a bootstrap replicate."""

    def __init__(self, schema: Any, model: GraphicalModel):
        self.schema = schema
        self.model = model
        self.total = float(model.total)

    def marginal(self, cols):
        cols = (cols,) if isinstance(cols, str) else tuple(cols)
        return self.model.marginal(cols)


def bootstrap_models(source: Any, boot: int, rng: np.random.Generator, iters: int | None = None,
                     tol: float | None = None, info: list | None = None) -> list[GraphicalModel]:
    """``boot`` models re-estimated from redraws of a release's measurements (one shared step size).

    ``source`` is a release (``.model`` and ``.measurements``); ``rng`` a numpy Generator. ``iters``
    bounds each re-estimation and ``tol`` stops it earlier (:meth:`MeasurementRefit.refit`). A list
    passed as ``info`` receives each re-estimation's {'iterations', 'loss', 'alpha', 'start_loss',
    'last_drop'} (``last_drop``: relative loss decrease over its last ``TOL_BLOCK`` accepted steps)."""
    if tol is not None and not (isinstance(tol, (int, float)) and not isinstance(tol, bool)
                                and math.isfinite(tol) and tol >= 0):
        raise DDSSPError(f"tol must be a non-negative number or None, got {tol!r}")
    model = getattr(source, "model", None)
    meas = getattr(source, "measurements", None)
    if model is None or meas is None:
        raise DDSSPError("the DP-noise bootstrap needs a release (its model and measurements); "
                         "use dp_noise=False for an exact-marginal source")
    refit = MeasurementRefit(model, list(meas))
    iters = BOOT_ITERS if iters is None else int(iters)
    alpha = None
    out = []
    for _ in range(int(boot)):
        ybar, total = refit.draw(rng)
        if alpha is None:
            alpha = refit.step_size(ybar, total)
        m, inf = refit.refit(ybar, total, iters=iters, alpha=alpha, tol=tol)
        if info is not None:
            info.append(inf)
        out.append(m)
    return out
