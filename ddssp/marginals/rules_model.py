"""Consistency rules in the model: structural zeros across columns, enforced when sampling.

A compiled rule (:mod:`ddssp.data.rules`) forbids some cells of the marginal over its columns.
:func:`conditioned` returns the model's distribution conditioned on no rule being broken: the
rule's table enters as a factor that is 0 on the forbidden cells and 1 elsewhere (log-potential
``-inf`` / 0). When a rule's columns lie inside one clique of the junction tree, the factor joins
that clique and the tree is kept; otherwise the tree is rebuilt over the model's cliques and the
rules' cliques, so the rule is represented exactly (when the new tree stays within
:data:`MAX_CONDITIONED_CELLS` cells; beyond that the model is kept and the rules are enforced by
redrawing alone). :func:`sample_under_rules` draws from the conditioned model, redraws any row that
still breaks a rule (numerically empty conditionals fall back to uniform draws in
:meth:`GraphicalModel.sample`), and, if rows are left after a few redraws, replaces them by rows
drawn from the consistent ones, so no synthetic row breaks a declared rule.

A declared order (``PINCP_DECILE increases with PINCP``) likewise becomes the cells off the
monotone path the model gives most mass (:func:`order_zeros`). A declared dependency (``DENSITY
depends on PUMA``, :class:`ddssp.data.rules.Dependency`) becomes
structural zeros the same way once its values are decided: :func:`dependency_zeros` gives each group
the level the model holds most of it in and forbids the group's other levels, so the refit or the
conditioned model, the draws and the redraws all keep one value per group.

Everything here is post-processing of the released model with public rules: no privacy cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import DDSSPError

#: the conditioned or refitted model's junction tree may hold at most this many cells (else the
#: conditioned model, then redrawing alone)
MAX_CONDITIONED_CELLS = 20_000_000
#: refit (:func:`refitted`) only when the model breaks a rule with more than this probability
#: (:func:`forbidden_mass`); below it, conditioning moves the model by at most this much in total
#: variation and costs no fit
REFIT_ABOVE = 0.02
#: the second draw the rows are matched from (:func:`ddssp.marginals.matching.match_workload`) holds
#: this many times the rows asked for
POOL_FACTOR = 1
#: rounds of redrawing the rows that still break a rule
REDRAWS = 20
#: at most this many mirror-descent iterations in :func:`refitted` (which stops, as AIM's final fit, at
#: :data:`~ddssp.marginals.aim_settings.FINAL_TOL`)
REFIT_ITERS = 1000
#: the log-potential of a forbidden cell in :func:`refitted`: exp of it is 0 in float64 and float32, and,
#: unlike -inf, the fit's momentum steps (differences of potentials) keep it finite
ZERO_LOG = -1e6
#: the noise scale of the no-weight measurement that gives a rule's columns a clique in :func:`refitted`
NO_WEIGHT_SIGMA = 1e12


def conditioned(model: Any, compiled: Sequence[Any]) -> Any:
    """The model conditioned on every row following the rules (its structural zeros).

    Parameters
    ----------
    model : GraphicalModel
        The released model.
    compiled : sequence of CompiledRule
        The rules, compiled under the release's schema.

    Returns
    -------
    GraphicalModel
        A model with the same record count whose forbidden cells have probability 0; the model
        itself when there are no rules, when the rules' new tree would be too large, or when the
        rules leave it no mass (then :func:`sample_under_rules` says so).
    """
    from ddssp.marginals.junction_tree import junction_tree
    from ddssp.marginals.model import GraphicalModel

    if not compiled:
        return model
    pots: dict[tuple[str, ...], np.ndarray] = {c: lp for c, lp in zip(model.cliques, model.log_potentials)}
    zeros: dict[tuple[str, ...], np.ndarray] = {}
    for r in compiled:
        z = np.where(r.forbidden, -np.inf, 0.0)
        zeros[r.columns] = zeros[r.columns] + z if r.columns in zeros else z
    inside = all(any(set(c) <= set(k) for k in model.cliques) for c in zeros)
    factors = dict(pots)
    for c, z in zeros.items():
        factors[c] = factors[c] + z if c in factors else z
    if inside:
        cliques, edges = model.cliques, model.edges
    else:
        cliques, edges = junction_tree(model.domain, list(factors))
        if sum(math.prod(model.domain[a] for a in c) for c in cliques) > MAX_CONDITIONED_CELLS:
            return model
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out = GraphicalModel(model.domain, factors, model.total, cliques=cliques, edges=edges)
    if not all(np.isfinite(b).all() and b.sum() > 0 for b in out.beliefs):
        return model
    return out


def refitted(model: Any, compiled: Sequence[Any], measurements: Sequence[Any], iters: int = REFIT_ITERS) -> Any:
    """The model fitted again to the release's noisy marginals with the rules' structural zeros in
    its potentials, so the fit puts the mass of the forbidden cells where the measurements want it.

    Conditioning the released model (:func:`conditioned`) moves a forbidden cell's mass to the
    allowed cells in proportion, which shifts the marginals the release measured (a model with
    many married children loses children). Fitting with the zeros fixed (log-potential ``-inf`` on
    the forbidden cells of a clique that holds the rule's columns; mirror descent never moves them)
    matches the measured marginals as closely as the rules allow. A rule's columns that no measured
    clique holds are added as a clique with a measurement of no weight. Post-processing of the
    released measurements: no privacy cost.

    Parameters
    ----------
    model : GraphicalModel
        The released model (returned conditioned when the fit fails).
    compiled : sequence of CompiledRule
        The rules.
    measurements : sequence of Measurement
        The release's noisy marginals.
    iters : int
        At most this many mirror-descent iterations (the fit stops earlier at AIM's final tolerance).
        As AIM's final fit (:func:`~ddssp.marginals.aim_settings.fast_final_fit`), the first steps
        use float32 calibrations when float32's rounding of the counts lies far below the noise;
        the fit always ends in float64.

    Returns
    -------
    GraphicalModel
    """
    from ddssp.marginals.aim_settings import FINAL_TOL, fast_final_fit
    from ddssp.marginals.estimation import MirrorDescentNumpy, _smallest_container
    from ddssp.marginals.estimation import _maximal_subset as _maximal
    from ddssp.marginals.junction_tree import junction_tree
    from ddssp.marginals.named_tables import bcast

    if not compiled or not measurements:
        return conditioned(model, compiled)
    est = MirrorDescentNumpy(model.domain)
    for m in measurements:
        est.add(tuple(m.clique), np.asarray(m.values, dtype=float), float(m.sigma))
    for r in compiled:  # a clique for the rule, measured with no weight (its precision is ~0)
        if not any(set(r.columns) <= set(c) for c in est.prec):
            est.add(r.columns, np.zeros(r.forbidden.shape), NO_WEIGHT_SIGMA)
    cliques, _ = junction_tree(model.domain, _maximal(list(est.prec)))
    if sum(math.prod(model.domain[a] for a in c) for c in cliques) > MAX_CONDITIONED_CELLS:
        return conditioned(model, compiled)
    est._build()
    for r in compiled:
        m = _smallest_container(model.domain, est.mcl, r.columns)
        est.theta[m] = est.theta[m] + bcast(np.where(r.forbidden, ZERO_LOG, 0.0), r.columns, m)
    try:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            # as AIM's final fit: float32 calibrations first where their rounding lies far below the
            # noise, then float64 to the same tolerance (measured on the NIST excerpts' eps-10 releases:
            # 20-45% less CPU than a float64-only refit, the same scores)
            fast_final_fit(est, measurements, iters, FINAL_TOL, None)
            out = est.model()
    except (FloatingPointError, ValueError, np.linalg.LinAlgError):
        return conditioned(model, compiled)
    # non-finite potentials show in the calibrated beliefs, from which the fit's loss is computed
    if not all(np.isfinite(b).all() and b.sum() > 0 for b in out.beliefs):
        return conditioned(model, compiled)
    return out


def dependency_zeros(model: Any, deps: Sequence[Any]) -> list[Any]:
    """Declared dependencies as structural zeros decided from the model: in each group of a
    dependency's ``by`` columns, every level of its column but the one the model gives the group most
    rows in is forbidden.

    The dependency is public knowledge; which level each group takes is read from the model alone
    (post-processing of the release's noisy marginals; the data are never read). A group with no mass
    in the model keeps its first level. Ties go to the lower level.

    Parameters
    ----------
    model : GraphicalModel
        The released model (its domain in schema order).
    deps : sequence of Dependency
        The dependencies (columns checked against the schema).

    Returns
    -------
    list of CompiledRule
        One per dependency, its table over the dependency's columns in the model's order.
    """
    from ddssp.data.rules import CompiledRule

    out = []
    for d in deps:
        cols = tuple(a for a in model.domain if a in d.columns)
        table = np.asarray(model.marginal(cols), dtype=float)
        axis = cols.index(d.column)
        moved = np.moveaxis(table, axis, -1)
        best = np.argmax(moved, axis=-1)  # the first of equal counts
        keep = np.arange(moved.shape[-1]) == best[..., None]
        out.append(CompiledRule(d, cols, np.moveaxis(~keep, -1, axis).copy()))
    return out


def order_zeros(model: Any, declared: Sequence[Any], schema: Any) -> list[Any]:
    """Declared orders as structural zeros decided from the model (:func:`ddssp.data.orders.staircase`
    on the model's marginal of each order's two columns; post-processing, the data are never read).

    Parameters
    ----------
    model : GraphicalModel
        The released model (its domain in schema order).
    declared : sequence of Order
        The orders (checked against the schema).
    schema : ddssp.data.Schema
        The release's schema (which levels are in the order, and how they sort).

    Returns
    -------
    list of CompiledRule
        One per order, its table over the order's columns in the model's order.
    """
    from ddssp.data.orders import staircase

    out = []
    for o in declared:
        cols = tuple(a for a in model.domain if a in o.columns)
        out.append(staircase(o, schema, np.asarray(model.marginal(cols), dtype=float), cols))
    return out


def forbidden_mass(model: Any, compiled: Sequence[Any]) -> float:
    """An upper bound on the model's probability of breaking a rule: the sum over rules of the
    model's mass on the rule's forbidden cells.

    Conditioning on the rules moves the model by exactly the probability of breaking one, in
    total variation, so this bounds how far :func:`conditioned` is from the released model.

    Parameters
    ----------
    model : GraphicalModel
        The model.
    compiled : sequence of CompiledRule
        The rules.

    Returns
    -------
    float
        In [0, number of rules].
    """
    total = max(float(model.total), 1e-300)
    return math.fsum(float(model.marginal(r.columns)[r.forbidden].sum()) / total for r in compiled)


def sample_under_rules(
    model: Any,
    compiled: Sequence[Any],
    rows: int,
    rng: np.random.Generator,
    method: str = "rounded",
    measurements: Sequence[Any] | None = None,
    workload: Sequence[Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Rows drawn from the model so that none breaks a rule.

    Parameters
    ----------
    model : GraphicalModel
        The released model.
    compiled : sequence of CompiledRule
        The rules (none: the model's own :meth:`~GraphicalModel.sample`).
    rows : int
        The number of rows.
    rng : numpy.random.Generator
        The random source (post-processing).
    method : str
        The model's sampling method for the first draw (redraws are iid).
    measurements : sequence of Measurement, optional
        The release's noisy marginals: when the model breaks a rule with probability above
        :data:`REFIT_ABOVE`, it is then fitted again to them with the rules' zeros
        (:func:`refitted`); otherwise, and without them, it is conditioned (:func:`conditioned`).
    workload : sequence of cliques, optional
        The release's workload: with ``method="rounded"``, the rows are then swapped with rows of a
        second draw of the same model (that follow the rules) toward the model's answers on these
        marginals (:func:`ddssp.marginals.matching.match_workload`).

    Returns
    -------
    pandas.DataFrame
        Integer codes, columns in the model's domain order; no row breaks a rule.

    Raises
    ------
    DDSSPError
        When the model gives no row that follows the rules.
    """
    if not compiled:
        return _matched(model.sample(rows, rng, method=method), model, compiled, rng, method, workload)
    refit = measurements and forbidden_mass(model, compiled) > REFIT_ABOVE
    m = refitted(model, compiled, measurements) if refit else conditioned(model, compiled)
    codes = _consistent(m, compiled, rows, rng, method)
    return _matched(codes, m, compiled, rng, method, workload)


def _matched(codes, model, compiled, rng, method, workload):
    """``codes`` swapped toward the model's answers on ``workload`` (rounded draws with a workload)."""
    if method != "rounded" or not workload or len(codes) == 0:
        return codes
    from ddssp.marginals.matching import match_workload

    extra = POOL_FACTOR * len(codes)
    pool = _consistent(model, compiled, extra, rng, method) if compiled else model.sample(extra, rng, method)
    from ddssp.data.rules import broken_rows

    allowed = (lambda rows: ~broken_rows(rows, compiled)) if compiled else None
    return match_workload(codes, pool, model, workload, rng, allowed=allowed)


def _consistent(m, compiled, rows, rng, method):
    """Rows drawn from ``m`` of which none breaks a rule (redrawn, else replaced by consistent ones)."""
    from ddssp.data.rules import broken_rows

    codes = m.sample(rows, rng, method=method)
    bad = broken_rows(codes, compiled)
    for _ in range(REDRAWS):
        if not bad.any():
            return codes
        idx = np.flatnonzero(bad)
        redo = m.sample(len(idx), rng, method="iid")
        codes.iloc[idx] = redo[list(codes.columns)].to_numpy()
        bad[idx] = broken_rows(redo, compiled)
    if bad.any():
        good = np.flatnonzero(~bad)
        if len(good) == 0:
            raise DDSSPError(
                "the release's model gives no row that follows its rules: check the rules with `ddssp inspect`"
            )
        idx = np.flatnonzero(bad)
        codes.iloc[idx] = codes.iloc[rng.choice(good, size=len(idx))].to_numpy()
    return codes
