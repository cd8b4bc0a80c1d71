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

Everything here is post-processing of the released model with public rules: no privacy cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import DDSSPError

#: the conditioned model's junction tree may hold at most this many cells (else redrawing alone)
MAX_CONDITIONED_CELLS = 20_000_000
#: rounds of redrawing the rows that still break a rule
REDRAWS = 20


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


def sample_under_rules(
    model: Any, compiled: Sequence[Any], rows: int, rng: np.random.Generator, method: str = "rounded"
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

    Returns
    -------
    pandas.DataFrame
        Integer codes, columns in the model's domain order; no row breaks a rule.

    Raises
    ------
    DDSSPError
        When the model gives no row that follows the rules.
    """
    from ddssp.data.rules import broken_rows

    if not compiled:
        return model.sample(rows, rng, method=method)
    m = conditioned(model, compiled)
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
