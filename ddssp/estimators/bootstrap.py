"""Parametric bootstrap of a release's DP noise (post-processing: no privacy, no data).

Ferrando, Wang and Sheldon, "Parametric Bootstrap for Differentially Private Confidence Intervals"
(AISTATS 2022): take the released model as the truth, re-draw the noisy measurements the release made
(same cliques, same sigmas: y*_i = mu_i + N(0, sigma_i^2) with mu_i the released model's marginal),
re-estimate the model from them, refit, and read the spread of the refits.

Re-estimation is the same Private-PGM problem AIM solves (L2 loss sum_i ||mu_{c_i} - y_i||^2 /
(2 sigma_i^2), mirror descent with an Armijo step size, as :class:`ddssp.marginals.estimation.MirrorDescentNumpy`) but
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

Convergence: redrawn noise lifts cells the released model holds near zero, and mirror descent moves
a log-potential by about alpha * r / sigma^2 per step, so on large models the re-estimation keeps
improving for thousands of iterations. A fixed diagonal preconditioner (the released belief counts)
a growing step size (``STEP_GROWTH``) and heavy-ball momentum (one model evaluation per step) make
the default budget go further.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ddssp.errors import DDSSPError
from ddssp.marginals.belief_propagation import CalibratedTree
from ddssp.marginals.mirror_descent import TOL_BLOCK, MirrorDescentOptions, Point, mirror_descent
from ddssp.marginals.model import GraphicalModel
from ddssp.marginals.named_tables import canonical, cells, expand_sum, marginals_from
from ddssp.types import Clique

#: Default mirror-descent budget per bootstrap re-estimation (warm-started). Not converged on large
#: models (the DP standard errors come out smaller than a long re-estimation's: docs, benchmark page);
#: pass ``iters`` (and ``tol``) to :func:`bootstrap_models` to go further.
BOOT_ITERS = 150
#: The step grows by this factor after every accepted step (a rejected one halves it). Without growth
#: the step only shrinks and the slow part of the re-estimation (lifting cells the released model
#: holds near zero) stays slow.
STEP_GROWTH = 1.02
#: belief-count floor of the preconditioner (one row)
PRECOND_FLOOR = 1.0
#: momentum rule of the re-estimation (:class:`~ddssp.marginals.mirror_descent.MirrorDescentOptions`)
MOMENTUM = "heavy"


class MeasurementRefit:
    """Re-draw a release's measurements around its model and re-estimate the model, warm-started.

    ``draw(rng)`` gives (pooled noisy marginals, total); ``refit(ybar, total)`` gives the re-estimated
    :class:`GraphicalModel` on the released junction tree (and the run's counters).

    Parameters
    ----------
    model : GraphicalModel
        The released model: the bootstrap's truth, and the re-estimation's warm start and junction
        tree.
    measurements : list
        The release's measurements (each with ``clique`` and ``sigma``); those of one clique are
        pooled by precision.
    precondition : bool
        Scale the mirror-descent direction per cell by the released belief counts (see
        :meth:`refit`).

    Raises
    ------
    DDSSPError
        When there are no measurements, a sigma is not a positive finite number, or a measured
        clique lies in no clique of the released model.
    """

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
        """Re-draw the pooled noisy marginals around the released model.

        Parameters
        ----------
        rng : numpy.random.Generator
            Post-processing randomness (not DP noise).

        Returns
        -------
        ybar : dict
            ``{clique: numpy.ndarray}``: per cell y*_c ~ N(mu_c, 1/prec_c), mu_c the released
            model's marginal and prec_c the clique's pooled precision.
        total : float
            The record count the redraw implies (AIM's minimum-variance unbiased estimate from the
            marginals' sums), at least 1.
        """
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

    def _direction(
        self, mu: dict[Clique, np.ndarray], ybar: dict[Clique, np.ndarray], precondition: bool | None = None
    ) -> list[np.ndarray]:
        """Mirror-descent direction on the tree cliques: sum of broadcast prec_c (mu_c - ybar_c)."""
        tcl = self.tree.cliques
        pre = self.use_precond if precondition is None else precondition
        d = []
        for i, t in enumerate(self.theta0):
            group = self.groups.get(i)
            if not group:
                d.append(np.zeros(t.shape))
                continue
            di = expand_sum([(c, self.prec[c] * (mu[c] - ybar[c])) for c in group], tcl[i], self.domain)
            if pre:
                di *= self.precond[i]
            d.append(di)
        return d

    def _loss(self, theta: list[np.ndarray], ybar, total: float):
        mu = self._oracle(theta, total)
        return mu, self._loss_grad(mu, ybar)[0]

    def step_size(self, ybar: dict[Clique, np.ndarray], total: float) -> float:
        """The largest step whose first step from the released potentials lowers the loss.

        Doubling (at most 40 times) from AIM's 2 / (L N), or from 1e-3 / (largest pooled precision)
        with the preconditioner. Computed once per release and reused for every redraw.

        Parameters
        ----------
        ybar : dict
            Pooled noisy marginal of each measured clique (:meth:`draw`).
        total : float
            The record count the marginals imply.

        Returns
        -------
        float
            The step size.
        """
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

    def refit(
        self,
        ybar: dict[Clique, np.ndarray],
        total: float,
        iters: int = BOOT_ITERS,
        alpha: float | None = None,
        tol: float | None = None,
        momentum: str = MOMENTUM,
    ) -> tuple[GraphicalModel, dict]:
        """Re-estimate the model from the pooled noisy marginals ``ybar``, warm-started at the released
        potentials.

        Accelerated mirror descent (:func:`~ddssp.marginals.mirror_descent.mirror_descent`) with
        momentum k / (k + 3) and restart: by default the ``"heavy"`` (heavy-ball) rule, which steps
        along the direction at the current iterate and so evaluates one point per step, where the
        ``"k3"`` rule evaluates the extrapolated point too. A step that raises the loss is retried
        without momentum and then halved, an accepted step grows the step size by ``STEP_GROWTH``; the
        preconditioned direction is replaced by the plain one once the step size has fallen below 1e-6
        of its start. At the same iteration budget the heavy-ball rule reaches a lower loss at less
        CPU (docs, benchmark page).

        Parameters
        ----------
        ybar : dict
            Pooled noisy marginal of each measured clique (:meth:`draw`).
        total : float
            The record count the marginals imply.
        iters : int
            Iteration budget.
        alpha : float or None
            Starting step size (default :meth:`step_size`).
        tol : float or None
            Stop early once ``TOL_BLOCK`` accepted steps lower the loss by at most ``tol * loss``.
        momentum : {"heavy", "k3"}
            Momentum rule (see above).

        Returns
        -------
        model : GraphicalModel
            The re-estimated model on the released junction tree.
        info : dict
            ``iterations``, ``loss``, ``alpha`` (final step size), ``start_loss`` and ``last_drop``
            (relative loss decrease over the last ``TOL_BLOCK`` accepted steps: above AIM's
            ``FINAL_TOL`` the re-estimation was still moving when it stopped).
        """
        tcl = self.tree.cliques
        if alpha is None:
            alpha = self.step_size(ybar, total)
        options = MirrorDescentOptions(
            momentum=momentum,
            grow=STEP_GROWTH,
            tol=tol,
            count="accepted",
            precondition=self.use_precond,
            fallback=lambda theta: self._plain_alpha(theta, ybar, total),
        )
        res = mirror_descent(_Redraw(self, ybar, total), self.theta0, alpha, iters, options)
        x = res.point.theta
        model = GraphicalModel(self.domain, dict(zip(tcl, x)), total, cliques=list(tcl), edges=list(self.tree.edges))
        return model, {
            "iterations": res.iterations,
            "loss": res.loss,
            "alpha": res.alpha,
            "start_loss": res.start_loss,
            "last_drop": res.last_drop(TOL_BLOCK),
        }


class _Redraw:
    """:class:`~ddssp.marginals.mirror_descent.Problem` of one redraw ``ybar`` of a :class:`MeasurementRefit`."""

    def __init__(self, refit: MeasurementRefit, ybar: dict[Clique, np.ndarray], total: float):
        self.refit, self.ybar, self.total = refit, ybar, total

    def evaluate(self, theta: list[np.ndarray]) -> Point:
        mu, loss = self.refit._loss(theta, self.ybar, self.total)
        return Point(theta, mu, loss)

    def direction(self, point: Point, precondition: bool) -> list[np.ndarray]:
        return self.refit._direction(point.mu, self.ybar, precondition)


class ModelSource:
    """A marginal source (``schema``, ``total``, ``marginal``) backed by a model: a bootstrap replicate.

    Parameters
    ----------
    schema : Schema
        The release's schema.
    model : GraphicalModel
        The replicate's model; ``total`` is its (noisy) total.
    """

    def __init__(self, schema: Any, model: GraphicalModel):
        self.schema = schema
        self.model = model
        self.total = float(model.total)

    def marginal(self, cols):
        """The model's counts over some columns.

        Parameters
        ----------
        cols : str or sequence of str
            One column or several, in the order of the result's axes.

        Returns
        -------
        numpy.ndarray
            Counts that sum to ``total``.
        """
        cols = (cols,) if isinstance(cols, str) else tuple(cols)
        return self.model.marginal(cols)


def bootstrap_models(
    source: Any,
    boot: int,
    rng: np.random.Generator,
    iters: int | None = None,
    tol: float | None = None,
    info: list | None = None,
) -> list[GraphicalModel]:
    """``boot`` models re-estimated from redraws of a release's measurements (one shared step size).

    Parameters
    ----------
    source : Release
        A release (``.model`` and ``.measurements``).
    boot : int
        Number of replicates.
    rng : numpy.random.Generator
        Post-processing randomness of the redraws (not DP noise).
    iters : int or None
        Bound on each re-estimation's iterations (default ``BOOT_ITERS``).
    tol : float or None
        Stop a re-estimation earlier (:meth:`MeasurementRefit.refit`).
    info : list or None
        A list that receives each re-estimation's {'iterations', 'loss', 'alpha', 'start_loss',
        'last_drop'} (``last_drop``: relative loss decrease over its last ``TOL_BLOCK`` accepted
        steps).

    Returns
    -------
    list of GraphicalModel
        The re-estimated models, on the released junction tree.

    Raises
    ------
    DDSSPError
        When ``tol`` is not a non-negative number or None, or ``source`` has no model and
        measurements (and see :class:`MeasurementRefit`).
    """
    return list(iter_bootstrap_models(source, boot, rng, iters, tol, info))


def iter_bootstrap_models(
    source: Any,
    boot: int,
    rng: np.random.Generator,
    iters: int | None = None,
    tol: float | None = None,
    info: list | None = None,
) -> Iterator[GraphicalModel]:
    """The models of :func:`bootstrap_models`, one at a time: a caller that only fits each one keeps
    one model in memory instead of ``boot`` (same draws, same models for the same ``rng``).

    Parameters
    ----------
    source : Release
        A release (``.model`` and ``.measurements``).
    boot : int
        Number of replicates.
    rng : numpy.random.Generator
        Post-processing randomness of the redraws (not DP noise).
    iters : int or None
        Bound on each re-estimation's iterations (default ``BOOT_ITERS``).
    tol : float or None
        Stop a re-estimation earlier (:meth:`MeasurementRefit.refit`).
    info : list or None
        Receives each re-estimation's counters, as in :func:`bootstrap_models`.

    Returns
    -------
    iterator of GraphicalModel
        The re-estimated models, on the released junction tree, made as they are asked for.

    Raises
    ------
    DDSSPError
        As :func:`bootstrap_models` (checked when called, before the first model is made).
    """
    if tol is not None and not (
        isinstance(tol, (int, float)) and not isinstance(tol, bool) and math.isfinite(tol) and tol >= 0
    ):
        raise DDSSPError(f"tol must be a non-negative number or None, got {tol!r}")
    # the re-estimation starts from the model as fitted; each replicate then gets the release's
    # structural zeros (the schema's empty levels), as the release's own model does
    model = getattr(source, "fitted_model", None) or getattr(source, "model", None)
    meas = getattr(source, "measurements", None)
    if model is None or meas is None:
        raise DDSSPError(
            "the DP-noise bootstrap needs a release (its model and measurements); "
            "use dp_noise=False for an exact-marginal source"
        )
    refit = MeasurementRefit(model, list(meas))
    iters = BOOT_ITERS if iters is None else int(iters)
    models = _models(refit, int(boot), rng, iters, tol, info)
    schema = getattr(source, "schema", None)
    if schema is None:
        return models
    from ddssp.releasefile.conditions import structural_zero_model

    return (structural_zero_model(schema, m) for m in models)


def _models(refit: MeasurementRefit, boot: int, rng, iters: int, tol, info) -> Iterator[GraphicalModel]:
    alpha = None
    for _ in range(boot):
        ybar, total = refit.draw(rng)
        if alpha is None:
            alpha = refit.step_size(ybar, total)
        m, inf = refit.refit(ybar, total, iters=iters, alpha=alpha, tol=tol)
        if info is not None:
            info.append(inf)
        yield m
