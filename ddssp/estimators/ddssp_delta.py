"""The DP-noise variance of DD-SSP coefficients by the delta method (no refits).

A DD-SSP coefficient is a smooth function of Z^T Z (theta = c (X^T X + ridge I')^+ X^T y), and Z^T Z
is linear in the release's one- and two-way marginals (:func:`ddssp.estimators.suffstats.sufficient_statistics`).
Where a marginal lies inside measured cliques, the released model reproduces those measurements up
to their noise, so to first order its noise is a precision-weighted mean of the measurements'
Gaussian noise summed down to the marginal: for a query q and the measured cliques c that contain
it, with pooled per-cell precision ``prec_c`` (1 / sum of the clique's 1 / sigma^2),

    d mu_q = sum_c w_qc S_{c->q} e_c,   e_c ~ N(0, I / prec_c),
    w_qc = pi_qc / sum_c' pi_qc',       pi_qc = prec_c * cells(q) / cells(c)

(S_{c->q} sums c's cells down to q; pi_qc is the precision of that sum per cell of q). The chain
rule through Z^T Z and the normal equations then gives each coefficient's variance as
sum_c ||sum_q w_qc S_{c->q}^T g_q||^2 / prec_c with g_q the coefficient's gradient with respect
to mu_q: a few array products, the cost of one fit.

What it leaves out: marginals that lie in no measured clique (pairs the model imputes) are taken as
fixed, so a coefficient whose (feature, target) pair is unmeasured gets no DP variance from it here
(:func:`ddssp.estimators.ddssp_intervals.fit_intervals` gives such coefficients a bootstrap
interval or an unbounded one). The combination rule ignores what other overlapping cliques add
through the model's consistency constraints, which only lowers the true variance: the rule errs
towards wider intervals. It is a first-order rule: when the noise is large against the marginals
(tiny releases) the bootstrap (``IntervalOptions(dp_method="bootstrap")``) can differ.

Post-processing of the release: only its measurements' cliques and sigmas and the fitted estimator
are read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.estimators.ddssp_math import EIG_TOL
from ddssp.estimators.suffstats import INTERCEPT, Encoding


def pooled_precisions(measurements: list[Any]) -> dict[frozenset, tuple[tuple[str, ...], float]]:
    """Pooled per-cell precision of each measured clique (measurements of one clique add up).

    Parameters
    ----------
    measurements : list
        Objects with ``clique`` (column names) and ``sigma``.

    Returns
    -------
    dict
        ``{frozenset(columns): (columns, sum of 1 / sigma^2)}``; measurements with a sigma that is
        not a positive finite number are skipped.
    """
    out: dict[frozenset, tuple[tuple[str, ...], float]] = {}
    for m in measurements:
        sigma = float(m.sigma)
        if not (math.isfinite(sigma) and sigma > 0):
            continue
        key = frozenset(m.clique)
        cols, prec = out.get(key, (tuple(m.clique), 0.0))
        out[key] = (cols, prec + 1.0 / sigma**2)
    return out


def _z_gradient(est: Any) -> tuple[np.ndarray, np.ndarray]:
    """d theta_k / d Z[i, j] for every coefficient k (intercept first when the encoding has one).

    theta = c M b with M the pseudo-inverse of the PSD part of A = X^T X + ridge I' and b = X^T y:
    d theta = c M (db - dA beta), beta = theta / c. Returns (G, coefficients) with G of shape
    (P, D, D), D = p + 1 (Z = [X, y]); every entry of Z is treated as its own variable (a marginal
    that fills Z[i, j] and Z[j, i] gets both).
    """
    from ddssp.estimators.ddssp_intervals import _coefficients, _scale

    enc: Encoding = est.encoding_
    stats = est.suffstats_
    p = len(enc.names)
    pen = np.array([0.0 if nm == INTERCEPT else 1.0 for nm in enc.names])
    A = (stats.xtx + stats.xtx.T) / 2.0 + float(est.ridge) * np.diag(pen)
    w, V = np.linalg.eigh(A)
    keep = w > EIG_TOL * max(float(np.max(np.abs(w))), np.finfo(float).tiny) * p
    M = (V[:, keep] / w[keep]) @ V[:, keep].T
    c = _scale(est)
    theta = _coefficients(est) if enc.intercept else np.asarray(est.coef_, dtype=float)
    beta = theta / c
    G = np.zeros((p, p + 1, p + 1))
    G[:, :p, :p] = -c * M[:, :, None] * beta[None, None, :]
    G[:, :p, p] = c * M
    return G, theta


def _query_gradients(est: Any, G: np.ndarray) -> dict[tuple[str, ...], np.ndarray]:
    """The coefficients' gradients with respect to the marginals Z^T Z is built from.

    Returns ``{query: array}`` with ``query`` a tuple of columns (``()`` for the total) and the array
    of shape (P, *sizes of the query's columns)."""
    enc: Encoding = est.encoding_
    attrs = [a for a in enc.attributes if a.width] + [enc.target_encoding]
    offsets, start = [], 1 if enc.intercept else 0
    for a in attrs:
        offsets.append(start)
        start += a.width
    out: dict[tuple[str, ...], np.ndarray] = {}
    if enc.intercept:
        out[()] = G[:, 0, 0].copy()
    for i, (a, o) in enumerate(zip(attrs, offsets)):
        Aa = np.asarray(a.matrix, dtype=float)
        blk = G[:, o : o + a.width, o : o + a.width]
        g1 = np.einsum("ix,pij,jx->px", Aa, blk, Aa)
        if enc.intercept:
            g1 = g1 + np.einsum("ix,pi->px", Aa, G[:, 0, o : o + a.width] + G[:, o : o + a.width, 0])
        out[(a.column,)] = g1
        for b, q in zip(attrs[i + 1 :], offsets[i + 1 :]):
            Ab = np.asarray(b.matrix, dtype=float)
            both = G[:, o : o + a.width, q : q + b.width] + np.swapaxes(G[:, q : q + b.width, o : o + a.width], 1, 2)
            out[(a.column, b.column)] = np.einsum("ix,pij,jy->pxy", Aa, both, Ab)
    return out


def _restrict(
    grads: dict[tuple[str, ...], np.ndarray], enc: Encoding, share: float, cliques: list[frozenset]
) -> dict[tuple[str, ...], np.ndarray]:
    """Gradients with respect to the *unrestricted* marginals when the fit used only the rows with an
    observed target (:class:`ddssp.estimators.suffstats.ObservedTarget`).

    A query with the target has its unobserved target levels zeroed (exact); a query without it was
    answered as the query plus the target summed over the observed levels: its gradient moves onto
    that larger query when a measured clique holds it, else stays on the query scaled by the
    observed share (the conditional share of observed targets taken as fixed)."""
    t = enc.target
    obs = np.ones(int(enc.domain[t]))
    obs[list(enc.unobserved_target_codes)] = 0.0
    out: dict[tuple[str, ...], np.ndarray] = {}
    for q, g in grads.items():
        if t in q:
            shape = [1] * (g.ndim - 1)
            shape[q.index(t)] = len(obs)
            out[q] = out.get(q, 0.0) + g * obs.reshape((1, *shape))
            continue
        bigger = (*q, t)
        if any(set(bigger) <= c for c in cliques):
            out[bigger] = out.get(bigger, 0.0) + g[..., None] * obs
        else:
            out[q] = out.get(q, 0.0) + g * (1.0 - share)
    return out


def delta_dp_variance(est: Any, measurements: list[Any]) -> np.ndarray:
    """DP-noise variance of each coefficient (intercept first) by the delta method (module docstring).

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted (its encoding, ``suffstats_`` and coefficients are read).
    measurements : list
        The release's measurements (``clique``, ``sigma``).

    Returns
    -------
    numpy.ndarray
        One variance per coefficient, the intercept first (0 for an encoding without one). A
        coefficient whose marginals lie in no measured clique gets 0.
    """
    enc: Encoding = est.encoding_
    dom = dict(enc.domain)
    pooled = pooled_precisions(measurements)
    G, _ = _z_gradient(est)
    grads = _query_gradients(est, G)
    share = getattr(est, "target_unobserved_share_", None)
    if share is not None and est.missing_target == "drop":
        grads = _restrict(grads, enc, float(share), list(pooled))
    P = G.shape[0]
    # per measured clique: the sum over its queries of w_qc * (gradient broadcast onto the clique's
    # used columns); the clique's other columns only repeat it, counted by a factor in the norm
    acc: dict[frozenset, tuple[tuple[str, ...], np.ndarray]] = {}
    for q, g in grads.items():
        qs = set(q)
        holders = [(k, cols, prec) for k, (cols, prec) in pooled.items() if qs <= k]
        if not holders:
            continue
        cq = math.prod(dom[c] for c in q)
        pis = [prec * cq / math.prod(dom[c] for c in cols) for _, cols, prec in holders]
        tot = float(sum(pis))
        for (k, cols, _), pi in zip(holders, pis):
            acc.setdefault(k, (cols, {}))[1][q] = pi / tot * g
    var = np.zeros(P)
    for k, (cols, parts) in acc.items():
        used = tuple(c for c in cols if any(c in q for q in parts))
        shape = tuple(dom[c] for c in used)
        V = np.zeros((P, *shape))
        for q, g in parts.items():
            order = sorted(range(len(q)), key=lambda i: used.index(q[i]))
            gq = np.transpose(g, [0] + [1 + i for i in order]) if q else g
            qsorted = [q[i] for i in order]
            view = [P] + [dom[c] if c in qsorted else 1 for c in used]
            V += gq.reshape(view)
        repeat = math.prod(dom[c] for c in cols) / max(math.prod(shape), 1)
        prec = pooled[k][1]
        var += np.sum(V.reshape(P, -1) ** 2, axis=1) * repeat / prec
    return var if enc.intercept else np.concatenate([[0.0], var])
