"""The DP-noise variance of DD-SSP coefficients by the delta method (no refits).

A DD-SSP coefficient is a smooth function of Z^T Z (theta = c (X^T X + ridge I')^+ X^T y), and Z^T Z
is linear in the release's one- and two-way marginals (:func:`ddssp.estimators.suffstats.sufficient_statistics`).
The released model is fitted to the measurements by least squares, so to first order its marginals
move with the measurements' Gaussian noise as a generalised-least-squares fit of consistent marginals
does. With independent noise of equal variance within each clique, that fit separates by ANOVA
component: the component of the marginals on a set of columns S (the part of mu_S that is centred
along every column of S) is the precision-weighted pool of the same component of every measured
clique c that holds S, each with precision ``pi_Sc = prec_c * cells(S) / cells(c)`` (``prec_c``:
the clique's pooled per-cell precision, the sum of its measurements' 1 / sigma^2). A coefficient's
gradient with respect to each marginal it reads (through Z^T Z and the normal equations) is split
the same way (:func:`anova_parts`), so its variance is

    sum_c || sum_{S in c} (pi_Sc / sum_c' pi_Sc') h_S ||^2 / prec_c

(h_S: the summed S-components of the gradient, broadcast onto c's cells): a few array products, the
cost of one fit. The total is the S = {} component, pooled over every clique (AIM's own estimate).

What it leaves out: a component on columns that lie together in no measured clique (a pair the
model imputes) gets no DP noise. Its error is the model's: :func:`unmeasured_sensitivity`
propagates an error of given per-cell variance on those components by the same first-order rule,
and :func:`model_error_weight` takes that variance from the release (the measured pairs'
dependence); :func:`ddssp.estimators.ddssp_intervals.fit_intervals` adds it as the model-based
part, or gives such coefficients an unbounded interval. The model's positivity and its
conditional independences are not linear constraints and this rule ignores them; where positivity
binds (cells near 0 against the noise) the fitted model moves less than it says, and the intervals
err wide. :func:`projected_dp_draws` (the intervals' default) keeps it: it draws the same pooled
noise, projects the one-way marginals and each measured clique's cells onto nonnegative values
(the clique's one-way margins fixed at the projected one-ways) and propagates each draw by the same
gradient; without the projections its variance is this one. It is a first-order rule in the
marginals: when the noise is large against them the bootstrap (``IntervalOptions(dp_method="bootstrap")``)
can differ.

Post-processing of the release: only its measurements (cliques, sigmas and, for the model-based
part, the noisy values of the pairs), its one-way marginals and the fitted estimator are read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.estimators.ddssp_math import coefficient_scale, psd_pinv
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


def component_precisions(S: tuple[str, ...], pooled: dict, dom: dict) -> dict[frozenset, float]:
    """The precision per cell of the ANOVA component of columns ``S`` that each pooled clique holding
    ``S`` gives: ``prec * cells(S) / cells(clique)`` (a clique's iid cell noise, summed onto ``S``).

    Parameters
    ----------
    S : tuple of str
        The component's columns.
    pooled : dict
        :func:`pooled_precisions`.
    dom : dict
        Column sizes.

    Returns
    -------
    dict
        Clique key -> precision, for the cliques that hold ``S`` (empty: no measured clique does).
    """
    cs = math.prod(dom[c] for c in S)
    return {k: prec * cs / math.prod(dom[c] for c in cols) for k, (cols, prec) in pooled.items() if set(S) <= k}


def ridge_used(est: Any) -> float:
    """The ridge a fitted estimator solved with: ``ridge_`` (the value ``ridge="auto"`` chose), else ``ridge``.

    The intervals are first-order around that ridge solution, the ridge held fixed: they are
    intervals for the ridge-penalised coefficient at this ridge (0 on a well-conditioned release).

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted.

    Returns
    -------
    float
    """
    return float(getattr(est, "ridge_", est.ridge))


def penalty_used(est: Any) -> np.ndarray:
    """The matrix a fitted estimator added to X^T X: ``penalty_`` (the noise floor, or ridge times I').

    The intervals hold it fixed, as :func:`ridge_used` holds a ridge: they are around the penalised fit.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted (an estimator from before ``penalty_`` existed: ridge times I').

    Returns
    -------
    numpy.ndarray
    """
    P = getattr(est, "penalty_", None)
    if P is not None:
        return np.asarray(P, dtype=float)
    pen = np.array([0.0 if nm == INTERCEPT else 1.0 for nm in est.encoding_.names])
    return ridge_used(est) * np.diag(pen)


def refit_ridge(est: Any) -> Any:
    """The ``ridge`` that refits ``est`` at its own penalty: a number, or its floor's matrix.

    Parameters
    ----------
    est
        As for :func:`penalty_used`.

    Returns
    -------
    float or numpy.ndarray
    """
    if getattr(est, "ridge_info_", {}).get("rule") in ("floor", "matrix"):
        return penalty_used(est)
    return ridge_used(est)


def _z_gradient(est: Any) -> tuple[np.ndarray, np.ndarray]:
    """d theta_k / d Z[i, j] for every coefficient k (intercept first when the encoding has one).

    theta = c M b with M the pseudo-inverse of the PSD part of A = X^T X + P (the fit's penalty) and b = X^T y:
    d theta = c M (db - dA beta), beta = theta / c. Returns (G, coefficients) with G of shape
    (P, D, D), D = p + 1 (Z = [X, y]); every entry of Z is treated as its own variable (a marginal
    that fills Z[i, j] and Z[j, i] gets both).
    """
    enc: Encoding = est.encoding_
    stats = est.suffstats_
    p = len(enc.names)
    M = psd_pinv((stats.xtx + stats.xtx.T) / 2.0 + penalty_used(est))
    c = coefficient_scale(est)  # logistic: theta = -b1 / (2 b2) * least squares
    coef = np.asarray(est.coef_, dtype=float)
    theta = np.concatenate([[est.intercept_], coef]) if enc.intercept else coef
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
        g1 = np.sum((blk @ Aa) * Aa[None, :, :], axis=1)  # sum_ij A[i,x] blk[p,i,j] A[j,x]
        if enc.intercept:
            g1 = g1 + (G[:, 0, o : o + a.width] + G[:, o : o + a.width, 0]) @ Aa
        out[(a.column,)] = g1
        for b, q in zip(attrs[i + 1 :], offsets[i + 1 :]):
            Ab = np.asarray(b.matrix, dtype=float)
            both = G[:, o : o + a.width, q : q + b.width] + np.swapaxes(G[:, q : q + b.width, o : o + a.width], 1, 2)
            out[(a.column, b.column)] = Aa.T[None, :, :] @ both @ Ab
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


def anova_parts(g: np.ndarray, q: tuple[str, ...]) -> dict[tuple[str, ...], np.ndarray]:
    """Split a gradient over a query's cells into its ANOVA components.

    Parameters
    ----------
    g : numpy.ndarray
        Shape (P, *sizes of q): one array per coefficient.
    q : tuple of str
        The query's columns, in the order of g's axes after the first.

    Returns
    -------
    dict
        ``{S: h_S}`` for every subset S of q (columns in q's order): h_S of shape (P, *sizes of S),
        centred along each of its axes, with g the sum of the h_S broadcast over q; so
        <g, d mu_q> = sum_S <h_S, d mu_S> for any change d mu_q whose sums over the other columns
        are d mu_S.
    """
    out: dict[tuple[str, ...], np.ndarray] = {}
    k = len(q)
    for mask in range(1 << k):
        keep = [i for i in range(k) if mask >> i & 1]
        drop = tuple(1 + i for i in range(k) if not mask >> i & 1)
        h = g.mean(axis=drop) if drop else g
        for j in range(len(keep)):
            h = h - h.mean(axis=1 + j, keepdims=True)
        out[tuple(q[i] for i in keep)] = h
    return out


def _components(est: Any, measurements: list[Any], combos: Any = None) -> tuple:
    """The coefficients' gradient split into ANOVA components, summed per set of columns.

    Returns ``(comps, pooled, dom, order, P)``: ``comps`` maps a set of columns S (a tuple in the
    domain's order) to h_S of shape (P, *sizes of S); ``pooled`` is :func:`pooled_precisions`.
    ``combos`` (m, coefficients incl. the intercept first) appends m rows: the gradients of those
    linear combinations of the coefficients (every later step is linear in the gradient)."""
    enc: Encoding = est.encoding_
    dom = dict(enc.domain)
    order = {c: i for i, c in enumerate(dom)}
    pooled = pooled_precisions(measurements)
    G, _ = _z_gradient(est)
    if combos is not None:
        W = np.atleast_2d(np.asarray(combos, dtype=float))
        W = W if enc.intercept else W[:, 1:]  # an encoding without an intercept holds it at 0
        G = np.concatenate([G, np.tensordot(W, G, axes=1)])
    grads = _query_gradients(est, G)
    share = getattr(est, "target_unobserved_share_", None)
    if share is not None and est.missing_target == "drop":
        grads = _restrict(grads, enc, float(share), list(pooled))
    P = G.shape[0]
    comps: dict[tuple[str, ...], np.ndarray] = {}
    for q, g in grads.items():
        for S, h in anova_parts(np.asarray(g, dtype=float).reshape((P, *(dom[c] for c in q))), q).items():
            canon = tuple(sorted(S, key=order.__getitem__))
            h = np.transpose(h, [0] + [1 + S.index(c) for c in canon])
            comps[canon] = comps[canon] + h if canon in comps else h
    return comps, pooled, dom, order, P


def _with_intercept(var: np.ndarray, enc: Encoding) -> np.ndarray:
    return var if enc.intercept else np.concatenate([[0.0], var])


def delta_dp_variance(est: Any, measurements: list[Any], combos: Any = None) -> np.ndarray:
    """DP-noise variance of each coefficient (intercept first) by the delta method (module docstring).

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted (its encoding, ``suffstats_`` and coefficients are read).
    measurements : list
        The release's measurements (``clique``, ``sigma``).
    combos : array_like or None
        Shape (m, coefficients), the intercept first: also the variance of each row's linear
        combination ``w . theta`` (``w' Cov w``, exact under the same rule: its gradient is
        ``w`` times the coefficients').

    Returns
    -------
    numpy.ndarray
        One variance per coefficient, the intercept first (0 for an encoding without one), then
        one per row of ``combos``. A coefficient whose marginals lie in no measured clique gets 0.
    """
    comps, pooled, dom, order, P = _components(est, measurements, combos)
    # each component's noise: the precision-weighted pool of the measured cliques that hold it;
    # per clique, the sum of its components' weighted gradients (broadcast onto its used columns)
    acc: dict[frozenset, dict[tuple[str, ...], np.ndarray]] = {}
    for S, h in comps.items():
        holders = component_precisions(S, pooled, dom)
        if not holders:
            continue
        tot = float(sum(holders.values()))
        for k, pi in holders.items():
            acc.setdefault(k, {})[S] = pi / tot * h
    var = np.zeros(P)
    for k, parts in acc.items():
        cols = pooled[k][0]
        used = tuple(sorted({c for S in parts for c in S}, key=order.__getitem__))
        shape = tuple(dom[c] for c in used)
        V = np.zeros((P, *shape))
        for S, h in parts.items():
            V += h.reshape([P] + [dom[c] if c in S else 1 for c in used])
        # V is constant along the clique's other columns: its squared norm over the whole clique is
        # the norm over the used columns times their number of repeats
        repeat = math.prod(dom[c] for c in cols) / max(math.prod(shape), 1)
        var += np.sum(V.reshape(P, -1) ** 2, axis=1) * repeat / pooled[k][1]
    return _with_intercept(var, est.encoding_)


#: draws of the projected DP variance (:func:`projected_dp_draws`; post-processing randomness)
PROJECTED_DRAWS = 200
#: the cap on the alternating projections of each clique's cells (they stop earlier once feasible)
PROJECTION_ITERS = 200
#: the projections' tolerance, relative to the largest cell
PROJECTION_TOL = 1e-4
#: at most this many cells x draws are held at once (draws are processed in chunks below it)
_CHUNK_CELLS = 4_000_000


def _canonical(cols: Any, order: dict) -> tuple[str, ...]:
    return tuple(sorted(cols, key=order.__getitem__))


def project_total(y: np.ndarray) -> np.ndarray:
    """Each row of ``y`` projected (least squares) onto the nonnegative vectors with the row's sum.

    Parameters
    ----------
    y : numpy.ndarray
        Shape (draws, cells).

    Returns
    -------
    numpy.ndarray
        ``max(y - t, 0)`` with a shift ``t`` per row chosen so that the row keeps its sum (a negative
        sum is taken as 0): the closest nonnegative vector with that total.
    """
    tot = np.clip(y.sum(axis=1, keepdims=True), 0.0, None)
    u = -np.sort(-y, axis=1)
    css = np.cumsum(u, axis=1) - tot
    ind = np.arange(1, y.shape[1] + 1)
    rho = np.sum(u - css / ind > 0, axis=1, keepdims=True)  # the positive cells, at least 1
    shift = np.take_along_axis(css, np.maximum(rho, 1) - 1, axis=1) / np.maximum(rho, 1)
    return np.maximum(y - shift, 0.0)


def _low_order(d: np.ndarray) -> np.ndarray:
    """The part of each ``d[b]`` that depends on at most one axis (grand mean plus main effects):
    subtracting it leaves every one-way margin (and the total) at 0."""
    axes = tuple(range(1, d.ndim))
    grand = d.mean(axis=axes, keepdims=True)
    out = np.broadcast_to(grand, d.shape).copy()
    for ax in axes:
        out += d.mean(axis=tuple(a for a in axes if a != ax), keepdims=True) - grand
    return out


def project_margins(y: np.ndarray, target: np.ndarray, iters: int = PROJECTION_ITERS) -> np.ndarray:
    """Each ``y[b]`` projected (least squares) onto the nonnegative tables with the one-way margins of
    ``target[b]``, by Dykstra's alternating projections.

    Parameters
    ----------
    y, target : numpy.ndarray
        Shape (draws, *cells); ``target`` nonnegative, so the set is not empty.
    iters : int
        At most this many rounds; they stop once no cell is below 0, and none moved over the last
        five rounds, by more than ``PROJECTION_TOL`` times the largest cell of ``y``.

    Returns
    -------
    numpy.ndarray
        Tables with ``target``'s one-way margins exactly, nonnegative up to that tolerance.
    """
    x, p, q = y, np.zeros_like(y), np.zeros_like(y)
    a = prev = y
    scale = max(1.0, float(np.max(np.abs(y))))
    for it in range(int(iters)):
        z = x + p
        a = z - _low_order(z - target)  # onto the affine set of the margins
        p = z - a
        x = np.maximum(a + q, 0.0)  # onto the nonnegative orthant
        q = a + q - x
        if it % 5 == 4:  # converged: feasible, and no longer moving
            if (
                float(np.min(a)) >= -PROJECTION_TOL * scale
                and float(np.max(np.abs(a - prev))) <= PROJECTION_TOL * scale
            ):
                break
            prev = a
    return a


def _pooled_noise(S: tuple[str, ...], holders: dict, noise: dict, canon: dict) -> np.ndarray:
    """The GLS (precision-weighted) pool of the S-marginal of every holder's noise (S in canonical
    order; shape (draws, *sizes of S))."""
    tot = float(sum(holders.values()))
    acc: Any = 0.0
    for k, pi in holders.items():
        cc = canon[k]
        drop = tuple(1 + i for i, c in enumerate(cc) if c not in S)
        acc = acc + (pi / tot) * (noise[k].sum(axis=drop) if drop else noise[k])
    return np.asarray(acc)


def projected_dp_draws(
    est: Any,
    measurements: list[Any],
    source: Any,
    rng: np.random.Generator,
    draws: int = PROJECTED_DRAWS,
    iters: int = PROJECTION_ITERS,
) -> np.ndarray:
    """Draws of the DP error of each coefficient (intercept first) with the model's positivity: their
    variance is the DP part of the intervals' default (``dp_method="projected"``).

    The same first-order propagation as :func:`delta_dp_variance`, but the marginals' DP error is
    simulated from an estimate that, like the released model, cannot follow noise below 0. Each
    draw redraws every measurement's Gaussian noise at its recorded sigma (around the release's own
    marginals), then:

    1. each ANOVA component of the marginals is the GLS (precision-weighted) pool of that component
       of every measured clique that holds it, as in :func:`delta_dp_variance`;
    2. each column's one-way marginal (the release's, plus its pooled noise) is projected onto the
       nonnegative vectors with its total;
    3. each measured clique's cells (the release's, plus the pooled noise of all their components)
       are projected onto the nonnegative tables whose one-way margins are those projected one-ways
       (:func:`project_margins`), so that a level's cells are bounded by the level's pooled total
       and a cell near 0 moves only upward;
    4. the draw's change of each component (a component held by several cliques pooled by the same
       weights) is propagated to the coefficients through the gradient of the fit.

    The variance over the draws is the DP part. Without the projections the draws' variance is the
    delta method's; with them it is smaller where the noise is large against the cells (rare
    levels, sparse numeric bins), which is where the first-order rule errs wide. Post-processing of
    the release: its measurements' cliques and sigmas, its model's marginals and the fitted
    estimator; ``rng`` is the interval's own randomness, not DP noise.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted.
    measurements : list
        The release's measurements (``clique``, ``sigma``).
    source : Release
        Its ``marginal(columns)`` is read (the model's marginals).
    rng : numpy.random.Generator
        For the draws.
    draws : int
        Number of draws (at least 2).
    iters : int
        Cap on the alternating projections of each clique (:func:`project_margins`).

    Returns
    -------
    numpy.ndarray
        Shape (draws, coefficients): each draw's change of the coefficients, the intercept first
        (0 for an encoding without one); 0 for a coefficient whose marginals lie in no measured
        clique.
    """
    comps, pooled, dom, order, P = _components(est, measurements)
    canon = {k: _canonical(cols, order) for k, (cols, _) in pooled.items()}
    high = [S for S in comps if len(S) >= 2 and component_precisions(S, pooled, dom)]
    # the cliques that hold a component of two or more columns the fit reads, and their columns
    cliques = [k for k in pooled if len(k) >= 2 and any(set(S) <= k for S in high)]
    columns = sorted({c for k in cliques for c in k} | {S[0] for S in comps if len(S) == 1}, key=order.__getitem__)
    holders = {S: component_precisions(S, pooled, dom) for S in [(), *((c,) for c in columns), *high]}
    holders = {S: h for S, h in holders.items() if h}
    mu = {k: np.asarray(source.marginal(canon[k]), dtype=float) for k in cliques}
    mu1 = {c: np.asarray(source.marginal([c]), dtype=float) for c in columns if (c,) in holders}
    largest = max([int(np.prod(m.shape)) for m in mu.values()] + [1])
    chunk = max(1, min(int(draws), _CHUNK_CELLS // largest))
    out: list[np.ndarray] = []
    for start in range(0, int(draws), chunk):
        B = min(chunk, int(draws) - start)
        noise = {
            k: rng.standard_normal((B, *(dom[c] for c in canon[k]))) / math.sqrt(prec)
            for k, (_, prec) in pooled.items()
        }
        lin = {S: _pooled_noise(S, h, noise, canon) for S, h in holders.items()}
        change: dict[tuple[str, ...], Any] = {(): lin[()]} if () in lin else {}
        one = {}
        for c, m in mu1.items():
            y = m[None, :] + lin[()].reshape(B, 1) / len(m) + lin[(c,)] - lin[(c,)].mean(axis=1, keepdims=True)
            one[c] = project_total(y)
            change[(c,)] = one[c] - m[None, :]
        for k in cliques:
            cc, m = canon[k], mu[k]
            cells = int(np.prod(m.shape))
            y = np.broadcast_to(m, (B, *m.shape)).copy()
            for S, n in lin.items():
                if set(S) <= k:
                    if S:  # the S-marginal's pooled noise, centred, spread evenly over the clique's cells
                        for j in range(len(S)):
                            n = n - n.mean(axis=1 + j, keepdims=True)
                    y += n.reshape([B] + [dom[c] if c in S else 1 for c in cc]) * (math.prod(dom[c] for c in S) / cells)
            # a table with the projected one-ways as its margins (their product over the total)
            tot = np.maximum(one[cc[0]].sum(axis=1), 1e-12)
            target = np.ones((B, *([1] * len(cc)))) * tot.reshape([B] + [1] * len(cc))
            for i, c in enumerate(cc):
                shape = [B] + [1] * len(cc)
                shape[1 + i] = dom[c]
                target = target * (one[c] / tot[:, None]).reshape(shape)
            d = project_margins(y, target, iters) - m[None]
            for S in high:
                if set(S) <= k:
                    drop = tuple(1 + i for i, c in enumerate(cc) if c not in S)
                    w = holders[S][k] / float(sum(holders[S].values()))
                    change[S] = change.get(S, 0.0) + w * (d.sum(axis=drop) if drop else d)
        coef = np.zeros((B, P))  # first order: the draws' change through the gradient
        for S, h in comps.items():
            if S in change:
                coef += np.asarray(change[S]).reshape(B, -1) @ h.reshape(P, -1).T
        out.append(coef)
    draws_ = np.concatenate(out)
    return draws_ if est.encoding_.intercept else np.concatenate([np.zeros((len(draws_), 1)), draws_], axis=1)


def unmeasured_sensitivity(
    est: Any, measurements: list[Any], cell_weight: Any = None, combos: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each coefficient's squared sensitivity to the components no measured clique holds.

    A component on columns S that lie together in no measured clique (an unmeasured pair) is what
    the model imputes from its conditional independences. If the imputation is off by an error
    that is independent across cells with variance tau^2 per cell (in counts), the coefficient
    moves, to first order, with variance tau^2 * ||h_S||^2 (h_S: the coefficient's S-component
    gradient, :func:`anova_parts`). This returns those squared norms summed over the unheld
    components, split into the components that hold the target and the others.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted.
    measurements : list
        The release's measurements (``clique``, ``sigma``).
    cell_weight : callable or None
        ``cell_weight(S)`` -> array of shape (sizes of S): a per-cell variance factor (the error
        variance of cell i is tau^2 * weight_i); None: 1 for every cell.
    combos : array_like or None
        Shape (m, coefficients), the intercept first: also each row's linear combination
        ``w . theta`` (its gradient is ``w`` times the coefficients', so its sum is ``w' C w`` with
        C the coefficients' covariance under the same error).

    Returns
    -------
    with_target, without_target : numpy.ndarray
        Per coefficient (intercept first), then per row of ``combos``: sum of (weighted) h_S^2 over
        the unheld components S with the target, and over those without it (multiply by tau^2 for a
        variance).
    """
    comps, pooled, _, _, P = _components(est, measurements, combos)
    target = est.encoding_.target
    out = {True: np.zeros(P), False: np.zeros(P)}
    for S, h in comps.items():
        if not S or any(set(S) <= k for k in pooled):
            continue
        w = 1.0 if cell_weight is None else np.asarray(cell_weight(S), dtype=float).reshape(1, -1)
        out[target in S] += np.sum(h.reshape(P, -1) ** 2 * w, axis=1)
    return _with_intercept(out[True], est.encoding_), _with_intercept(out[False], est.encoding_)


def independence_counts(source: Any, columns: tuple[str, ...]) -> np.ndarray:
    """The counts the cells of ``columns`` would hold if the columns were independent: the source's
    total times the product of its one-way shares (negative noisy counts taken as 0).

    Parameters
    ----------
    source : Release or marginal source
        Its ``total`` and one-way marginals are read.
    columns : tuple of str
        The columns, in the order of the result's axes.

    Returns
    -------
    numpy.ndarray
        Shape (sizes of the columns).
    """
    total = float(source.total)
    out = np.full([1] * len(columns), total)
    for i, c in enumerate(columns):
        a = np.clip(np.asarray(source.marginal([c]), dtype=float), 0.0, None)
        shape = [1] * len(columns)
        shape[i] = len(a)
        out = out * (a / max(float(a.sum()), 1e-12)).reshape(shape)
    return out


def dependence_strength(source: Any, measurements: list[Any]) -> float:
    """How far the release's measured pairs are from independence: the median over the pairs
    measured on their own of their chi-square per degree of freedom against the independence counts,
    less what the noise adds (sigma^2 / count per cell); at least 1.

    Parameters
    ----------
    source : Release
        For the one-way marginals (:func:`independence_counts`).
    measurements : list
        The release's measurements (``clique``, ``sigma``, ``values``).

    Returns
    -------
    float
    """
    by_pair: dict[tuple[str, ...], list] = {}
    for m in measurements:
        if len(m.clique) == 2 and getattr(m, "values", None) is not None:
            by_pair.setdefault(tuple(m.clique), []).append(m)
    vals = []
    for cols, ms in by_pair.items():
        e = np.clip(independence_counts(source, cols), 1e-9, None)
        prec = sum(1.0 / float(m.sigma) ** 2 for m in ms)
        y = sum(np.asarray(m.values, dtype=float).reshape(e.shape) / float(m.sigma) ** 2 for m in ms) / prec
        dof = max((e.shape[0] - 1) * (e.shape[1] - 1), 1)
        vals.append((float(np.sum((y - e) ** 2 / e)) - float(np.sum(1.0 / e)) / prec) / dof)
    return max(float(np.median(vals)), 1.0) if vals else 1.0


#: the share of the measured pairs' typical dependence taken as the error variance of an imputed pair
#: (chosen by coverage on two populations: docs/benchmarks.md, "Intervals for inferred pairs that cover")
MODEL_ERROR_SHARE = 0.5


def model_error_weight(source: Any, measurements: list[Any], share: float = MODEL_ERROR_SHARE) -> Any:
    """The error variance per cell taken for the model's imputation of a pair no measurement holds.

    ``share * kappa * e`` for each cell: e the cell's count under independence
    (:func:`independence_counts`) and kappa the chi-square per degree of freedom of the release's
    measured pairs against independence, less their noise (:func:`dependence_strength`). An imputed
    pair is taken to be as far from the model's imputation, in chi-square per degree of freedom, as
    ``share`` times a typical measured pair is from independence: when the model imputes
    independence for a pair that is in truth about as dependent as the pairs AIM measured, the
    interval still covers. The scale comes from the release alone (its measurements and one-way
    marginals); ``share`` was chosen by measured coverage on resampled releases.

    Parameters
    ----------
    source : Release
        The release (one-way marginals).
    measurements : list
        Its measurements.
    share : float
        The share of kappa (default :data:`MODEL_ERROR_SHARE`).

    Returns
    -------
    callable
        ``weight(columns)`` -> array of per-cell variances (counts^2), for
        :func:`unmeasured_sensitivity`; its ``kappa`` attribute holds ``share * kappa``.
    """
    kappa = share * dependence_strength(source, measurements)

    def weight(columns: tuple[str, ...]) -> np.ndarray:
        return kappa * independence_counts(source, columns)

    weight.kappa = kappa  # type: ignore[attr-defined]
    return weight
