"""DD-SSP's ``ridge="auto"``: a ridge set from the release's own, public, noise scale.

:func:`xtx_noise_bound` bounds the spectral norm of the DP noise in the released X^T X from the
measurements' cliques and sigmas (the first-order noise model of :mod:`ddssp.estimators.ddssp_delta`);
:func:`auto_ridge` turns it into a ridge (derivation there); :func:`choose_ridge` is what the
estimators call for a given or an ``"auto"`` ridge. Post-processing of the release: no privacy cost.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.estimators.ddssp_delta import component_precisions, pooled_precisions
from ddssp.estimators.params import Constraint, number
from ddssp.estimators.suffstats import Encoding, ObservedTarget, SuffStats

_NUMBER = number(0.0, None, says=">= 0 (a finite number)")
#: the estimators' ``ridge`` parameter: "auto" or a finite number >= 0
RIDGE = Constraint(
    lambda v: (isinstance(v, str) and v == "auto") or _NUMBER.accepts(v), ">= 0 (a finite number) or 'auto'"
)

#: draws of the noise matrix behind :func:`xtx_noise_bound` (post-processing randomness, fixed seed)
NOISE_DRAWS = 200
#: the quantile of its spectral norm taken as the bound: ||E|| <= t with probability about 0.95
NOISE_QUANTILE = 0.95
NOISE_SEED = 20261127


def xtx_noise_bound(
    enc: Encoding, measurements: list[Any], restricted: bool = False, *, draws: int = NOISE_DRAWS
) -> float:
    """A high-probability bound t on the spectral norm of the DP noise E in DD-SSP's X^T X.

    To first order (the noise model of :mod:`ddssp.estimators.ddssp_delta`) the released
    marginals' noise is a sum of independent centred Gaussian ANOVA components: for every set of
    columns T that some measured clique holds, the T-component u_T (in the units of T's marginal,
    centred along each column of T) has per-cell variance 1 / Pi_T with Pi_T = sum over the cliques
    c that hold T of ``prec_c * cells(T) / cells(c)`` (the precision-weighted pool; the components
    of iid cell noise are independent of each other). A query q's noise is sum_{T subset of q} u_T
    broadcast over q divided by cells(q minus T); a component no measured clique holds is taken as
    fixed (0), as in :func:`~ddssp.estimators.ddssp_delta.delta_dp_variance`. E is then assembled
    from those marginals exactly as :func:`ddssp.estimators.suffstats.sufficient_statistics`
    assembles X^T X (it is linear in them), including the restriction to rows with an observed
    target (``restricted``).

    E is a Gaussian matrix whose law depends only on the encoding and the measurements' cliques and
    sigmas, all public, so t costs no privacy. It is the ``NOISE_QUANTILE`` quantile of ||E||_2 over
    ``draws`` draws from a generator with a fixed seed (so t is a function of the release alone).

    Parameters
    ----------
    enc : Encoding
        The fit's encoding (intercept and features; the target's column is read for ``restricted``).
    measurements : list
        The release's measurements (``clique``, ``sigma``).
    restricted : bool
        The fit used only the rows whose target is observed
        (:class:`~ddssp.estimators.suffstats.ObservedTarget`).
    draws : int
        Monte Carlo draws of E.

    Returns
    -------
    float
        t >= 0 (0 when nothing is measured).
    """
    dom = dict(enc.domain)
    order = {c: i for i, c in enumerate(dom)}
    pooled = pooled_precisions(measurements)
    rng = np.random.default_rng(NOISE_SEED)
    K = int(draws)
    comps: dict[tuple[str, ...], np.ndarray | None] = {}

    def component(T: tuple[str, ...]) -> np.ndarray | None:
        """u_T in the canonical column order (None: no measured clique holds T)."""
        if T not in comps:
            pi = sum(component_precisions(T, pooled, dom).values())
            if pi <= 0:
                comps[T] = None
            else:
                z = rng.standard_normal((K, *(dom[c] for c in T)))
                for ax in range(1, z.ndim):
                    z = z - z.mean(axis=ax, keepdims=True)
                comps[T] = z / math.sqrt(pi)
        return comps[T]

    def noise(q: tuple[str, ...]) -> np.ndarray:
        out = np.zeros((K, *(dom[c] for c in q)))
        for mask in range(1 << len(q)):
            T = tuple(q[i] for i in range(len(q)) if mask >> i & 1)
            canon = tuple(sorted(T, key=order.__getitem__))
            u = component(canon)
            if u is None:
                continue
            u = np.transpose(u, [0] + [1 + canon.index(c) for c in T])
            rest = math.prod(dom[c] for c in q if c not in T)
            out += u.reshape([K] + [dom[c] if c in T else 1 for c in q]) / rest
        return out

    t = enc.target
    keep = np.ones(int(dom[t]))
    keep[list(enc.unobserved_target_codes)] = 0.0

    def marginal(q: tuple[str, ...]) -> np.ndarray:
        if not restricted:
            return noise(q)
        return np.tensordot(noise((*q, t)), keep, axes=([len(q) + 1], [0]))

    attrs = [a for a in enc.attributes if a.width]
    offsets, start = [], 1 if enc.intercept else 0
    for a in attrs:
        offsets.append(start)
        start += a.width
    E = np.zeros((K, start, start))
    one = {a.column: marginal((a.column,)) for a in attrs}
    if enc.intercept:
        E[:, 0, 0] = marginal(())
        for a, o in zip(attrs, offsets):
            v = np.einsum("ix,kx->ki", np.asarray(a.matrix, dtype=float), one[a.column])
            E[:, 0, o : o + a.width] = v
            E[:, o : o + a.width, 0] = v
    for i, (a, o) in enumerate(zip(attrs, offsets)):
        Aa = np.asarray(a.matrix, dtype=float)
        E[:, o : o + a.width, o : o + a.width] = np.einsum("ix,kx,jx->kij", Aa, one[a.column], Aa)
        for b, q in zip(attrs[i + 1 :], offsets[i + 1 :]):
            Ab = np.asarray(b.matrix, dtype=float)
            blk = np.einsum("ix,kxy,jy->kij", Aa, marginal((a.column, b.column)), Ab)
            E[:, o : o + a.width, q : q + b.width] = blk
            E[:, q : q + b.width, o : o + a.width] = np.swapaxes(blk, 1, 2)
    if start == 0 or not pooled:
        return 0.0
    norms = np.linalg.norm(E, ord=2, axis=(1, 2))
    return float(np.quantile(norms, NOISE_QUANTILE))


def auto_ridge(stats: SuffStats, enc: Encoding, source: Any, penalized: np.ndarray) -> tuple[float, dict[str, Any]]:
    """The ridge of ``ridge="auto"``: set from the release's public noise scale, no privacy cost.

    Derivation. The released X^T X is A = X^T X + E, with E the DP noise the marginals carry
    (X^T X is linear in them). Its law is known from the public measurement sigmas
    (:func:`xtx_noise_bound`), which gives t with ||E||_2 <= t with
    probability about 0.95. The fit inverts A + ridge I'. Along an eigenvector of A whose
    eigenvalue is below t the data cannot be told from the noise (Weyl: each eigenvalue of A is
    within ||E|| of the true one), and dividing by it is what makes a fit from a few hundred rows
    wild. The rule lifts the smallest eigenvalue of the matrix that is inverted to the noise bound,

        ridge = max(0, t - lambda_min(A)),

    so that ||(A + ridge I)^{-1} E||_2 <= 1 when ||E||_2 <= t: no direction of the solve amplifies
    the noise beyond the size of the signal it divides. This is AdaSSP's rule (Wang 2018: ridge =
    max(0, noise-norm bound - estimate of lambda_min)), with the noise bound taken from the
    release's own sigmas and lambda_min read from the released matrix, both public, so the rule
    costs no privacy. A release whose noisy X^T X is well above its noise (large n, or exact
    marginals: t = 0) gets ridge 0. The intercept is not penalised (I'), as with a given ridge.
    The constants (quantile 0.95, no other factor) come from this argument and AdaSSP's failure
    probability 0.05, not from hold-out scores.

    Parameters
    ----------
    stats : SuffStats
        The fit's sufficient statistics (A = ``stats.xtx``).
    enc : Encoding
        The fit's encoding.
    source : marginal source
        What the fit read (its ``measurements``; an :class:`~ddssp.estimators.suffstats.ObservedTarget`
        when the rows with a missing target were left out).
    penalized : numpy.ndarray
        1 for a penalised coefficient, 0 for the intercept.

    Returns
    -------
    ridge : float
    info : dict
        ``rule`` ("auto"), ``ridge``, ``noise_bound`` (t), ``min_eig`` (lambda_min(A)) and
        ``min_eig_after`` (lambda_min(A + ridge I')).
    """
    meas = getattr(source, "measurements", None)
    restricted = isinstance(source, ObservedTarget)
    t = xtx_noise_bound(enc, list(meas), restricted) if meas is not None else 0.0
    A = (stats.xtx + stats.xtx.T) / 2.0
    pen = np.diag(np.asarray(penalized, dtype=float))
    lmin = float(np.linalg.eigvalsh(A)[0]) if len(A) else 0.0
    ridge = max(0.0, t - lmin)
    now = float(np.linalg.eigvalsh(A + ridge * pen)[0]) if len(A) else 0.0
    info = {"rule": "auto", "ridge": ridge, "noise_bound": t, "min_eig": lmin, "min_eig_after": now}
    return ridge, info


def choose_ridge(
    ridge: float | str, stats: SuffStats, enc: Encoding, source: Any, penalized: np.ndarray
) -> tuple[float, dict[str, Any]]:
    """The ridge a fit uses: the given number, or :func:`auto_ridge`'s for ``"auto"``.

    Parameters
    ----------
    ridge : float or "auto"
        The estimator's ``ridge``.
    stats, enc, source, penalized
        As for :func:`auto_ridge`.

    Returns
    -------
    ridge : float
    info : dict
        ``{"rule": "given", "ridge": ridge}``, or :func:`auto_ridge`'s.
    """
    if isinstance(ridge, str):
        return auto_ridge(stats, enc, source, penalized)
    return float(ridge), {"rule": "given", "ridge": float(ridge)}
