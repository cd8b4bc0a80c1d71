"""DD-SSP's penalties set from the release's own, public, noise: ``ridge="floor"`` and ``ridge="auto"``.

:func:`xtx_noise_draws` draws the DP noise in the released X^T X from the measurements' cliques and
sigmas (the first-order noise model of :mod:`ddssp.estimators.ddssp_delta`); :func:`floor_penalty`
lifts each direction of the released matrix whose eigenvalue is below the noise in that direction
(the default); :func:`auto_ridge` turns the noise's norm bound (:func:`xtx_noise_bound`) into one
global ridge; :func:`choose_penalty` is what the estimators call. Post-processing of the release: no
privacy cost.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ddssp.errors import DDSSPError
from ddssp.estimators.ddssp_delta import component_precisions, penalty_used, pooled_precisions, refit_ridge
from ddssp.estimators.ddssp_math import coefficient_scale, solve_normal_equations
from ddssp.estimators.design import INTERCEPT
from ddssp.estimators.params import Constraint, number
from ddssp.estimators.suffstats import Encoding, ObservedTarget, SuffStats

_NUMBER = number(0.0, None, says=">= 0 (a finite number)")
#: the rules a ``ridge`` given as a word names
RULES = ("floor", "auto")


def _is_matrix(v: Any) -> bool:
    """A fixed penalty matrix: a square, finite, symmetric 2-D array."""
    if not isinstance(v, np.ndarray) or v.ndim != 2 or v.shape[0] != v.shape[1]:
        return False
    return bool(np.all(np.isfinite(v))) and bool(np.allclose(v, v.T))


#: the estimators' ``ridge`` parameter: "floor", "auto", a finite number >= 0, or a fixed penalty matrix
RIDGE = Constraint(
    lambda v: v is None or (isinstance(v, str) and v in RULES) or _is_matrix(v) or _NUMBER.accepts(v),
    ">= 0 (a finite number), 'floor', 'auto' or None",
)


def default_ridge(ridge: Any) -> Any:
    """The penalty a DD-SSP fit uses: ``ridge`` when given, else (None) ``"floor"``.

    The floor (:func:`floor_penalty`) steadies the fit where the release's noise swamps a direction
    of X^T X, but its pull reaches well-measured coefficients through collinear directions, so an
    interval around a floored fit covers the penalised coefficient, not the population's. With the
    default, intervals are therefore widened by the release's own estimate of that pull
    (:func:`floor_pull`); a ``ridge`` given explicitly (``"floor"`` included) keeps intervals for the
    coefficient at that penalty.

    Parameters
    ----------
    ridge : None, str, float or ndarray
        The estimator's ``ridge`` parameter.

    Returns
    -------
    str, float or ndarray
    """
    return "floor" if ridge is None else ridge


def floor_pull(est: Any) -> np.ndarray:
    """Per coefficient (intercept first): the release's own estimate of how far the default penalty
    moved it, theta_0 - theta_P, where theta_0 solves the released normal equations without a
    penalty. Zeros when the penalty was given explicitly, lifted nothing, or the target is flat.

    With A the released X^T X and P the floor, (A + P)(theta_0 - theta_P) = P theta_0: the
    difference is the pull (A + P)^+ P theta_0 at the released A and theta_0. Intervals widen each
    side by its absolute value (:func:`~.ddssp_intervals.interval_table`): the pull is a bias of
    the floored fit against the unpenalised coefficient, and its estimate carries the ridge-0 fit's
    noise in the lifted directions, so the widened interval is conservative there rather than exact.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted.

    Returns
    -------
    numpy.ndarray
    """
    enc = est.encoding_
    if est.ridge is not None or not np.any(penalty_used(est)):
        return np.zeros(len(enc.names) + (0 if enc.intercept else 1))
    # the fit's own solve at ridge 0 (a flat target gives the floored fit's theta: no pull)
    theta0 = coefficient_scale(est) * penalised_solve(0.0, est.suffstats_, enc, None, est.psd)[3]
    theta0 = theta0 if enc.intercept else np.concatenate([[0.0], theta0])
    return theta0 - np.concatenate([[est.intercept_], est.coef_])


#: draws of the noise matrix behind :func:`xtx_noise_bound` (post-processing randomness, fixed seed)
NOISE_DRAWS = 200
#: the quantile of its spectral norm taken as the bound: ||E|| <= t with probability about 0.95
NOISE_QUANTILE = 0.95
NOISE_SEED = 20261127


def xtx_noise_draws(
    enc: Encoding, measurements: list[Any], restricted: bool = False, *, draws: int = NOISE_DRAWS
) -> np.ndarray | None:
    """Draws of the DP noise E in DD-SSP's X^T X, from its first-order law (public: no privacy cost).

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
    sigmas, all public, so its draws cost no privacy. They come from a generator with a fixed seed, so
    anything computed from them is a function of the release alone.

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
    numpy.ndarray or None
        Shape (draws, p, p) in the order of ``enc.names``; None when nothing is measured or the
        encoding has no coefficient.
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
        return None
    return E


def xtx_noise_bound(
    enc: Encoding, measurements: list[Any], restricted: bool = False, *, draws: int = NOISE_DRAWS
) -> float:
    """A high-probability bound t on the spectral norm of the DP noise E in DD-SSP's X^T X.

    t is the ``NOISE_QUANTILE`` quantile of ||E||_2 over the draws of :func:`xtx_noise_draws`.

    Parameters
    ----------
    enc, measurements, restricted, draws
        As for :func:`xtx_noise_draws`.

    Returns
    -------
    float
        t >= 0 (0 when nothing is measured).
    """
    E = xtx_noise_draws(enc, measurements, restricted, draws=draws)
    if E is None:
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


def schur_noise(E: np.ndarray, A: np.ndarray, i0: int) -> np.ndarray:
    """Draws of the noise in the Schur complement of A's intercept entry, for draws E of A's noise.

    With the intercept profiled out, the fit solves S theta_f = c with S(A) = A_ff - a a^T / n
    (a = A_f0, n = A_00: the centred X^T X). S is not linear in A, and on a small release the
    total's own noise is a sizeable share of n, so each draw is taken exactly, S(A + E) - S(A),
    not to first order. A draw whose total n + E_00 would fall below n / 2 is taken at n / 2.

    Parameters
    ----------
    E : numpy.ndarray
        Draws of A's noise, shape (draws, p, p).
    A : numpy.ndarray
        The released matrix (symmetric).
    i0 : int
        The intercept's index.

    Returns
    -------
    numpy.ndarray
        Shape (draws, p - 1, p - 1).
    """
    f = np.array([j != i0 for j in range(len(A))])
    n, a = float(A[i0, i0]), A[f, i0]
    moved = a[None, :] + E[:, f, i0]
    total = np.maximum(n + E[:, i0, i0], n / 2.0)
    Eff = E[:, f][:, :, f]
    return Eff - moved[:, :, None] * moved[:, None, :] / total[:, None, None] + np.outer(a, a)[None] / n


def floor_penalty(stats: SuffStats, enc: Encoding, source: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """The penalty of ``ridge="floor"`` (the default): a lift only where the release's noise dominates.

    Derivation. The released X^T X is A = X^T X + E, E the DP noise. With the intercept profiled out
    (it is never penalised) the fit solves S theta_f = c, S the centred X^T X and E_S the noise it
    carries (:func:`schur_noise`). Write S = sum_i w_i v_i v_i^T. The noise moves the solution's
    component along v_i by about (v_i^T E_S theta) / w_i, and |v_i^T E_S theta| <= ||E_S v_i|| ||theta||:
    along a direction whose eigenvalue is below t_i, the size of the noise in that direction, the
    solve multiplies noise by more than it divides signal. That is how a fit on nearly collinear
    features flips its sign: the noise turns a weak eigenvector of the released matrix toward the
    directions that carry the signal, X^T y's noise can give it the wrong sign there, and dividing
    by its small eigenvalue lets that wrong-signed component outweigh the rest of the fit. The floor
    replaces each such w_i by t_i,

        S' = sum_i max(w_i, t_i) v_i v_i^T,

    so every row of S'^-1 E_S in the eigenbasis has norm ||E_S v_i|| / max(w_i, t_i) <= 1 when the
    noise is within its bound, and leaves the directions above their noise exactly as they were (a
    release whose every eigenvalue is above its noise gets the plain least-squares fit). It is
    AdaSSP's lift (:func:`auto_ridge`) applied direction by direction instead of as one global shift:
    the global ridge is sized by ||E||, the worst direction, and shrinks every coefficient by it.
    t_i is the ``NOISE_QUANTILE`` (0.95) quantile of ||E_S v_i|| over the draws of
    :func:`xtx_noise_draws`; the constant comes from that argument. Which per-direction size of the
    noise to use (this one, the eigenvalue's own change |v_i^T E_S v_i|, or one level ||E_S|| for
    all) was chosen with hold-out scores in view (docs/benchmarks.md, "DD-SSP: no sign flips from noise").
    S' - S is added to A as the PSD penalty P = sum_i max(0, t_i - w_i) v_i v_i^T on the
    non-intercept block (solving (A + P) theta = b is solving S' theta_f = c). Everything it reads is
    the release (its matrix and its public sigmas): no privacy cost.

    Parameters
    ----------
    stats, enc, source
        As for :func:`auto_ridge`; a source without measurements (exact marginals) gets no penalty.

    Returns
    -------
    penalty : numpy.ndarray
        P, shape (p, p) in the order of ``enc.names`` (all zero when nothing is lifted).
    info : dict
        ``rule`` ("floor"), ``ridge`` (0.0: no global ridge), ``directions`` (how many were lifted),
        ``of`` (how many there are), ``largest_lift`` (max t_i - w_i over the lifted ones, 0 if none),
        ``min_eig`` and ``min_eig_after`` (of the centred matrix, before and after).
    """
    A = (stats.xtx + stats.xtx.T) / 2.0
    p = len(A)
    P = np.zeros((p, p))
    meas = getattr(source, "measurements", None)
    E = None
    if meas is not None and p:
        E = xtx_noise_draws(enc, list(meas), isinstance(source, ObservedTarget))
    names = list(enc.names)
    i0 = names.index(INTERCEPT) if enc.intercept and INTERCEPT in names else None
    if i0 is not None and not A[i0, i0] > 0:
        i0 = None  # no rows to centre by: the matrix as it is
    f = np.array([j != i0 for j in range(p)], dtype=bool)
    S = A[f][:, f] - (np.outer(A[f, i0], A[f, i0]) / A[i0, i0] if i0 is not None else 0.0)
    info: dict[str, Any] = {"rule": "floor", "ridge": 0.0, "directions": 0, "of": int(f.sum()), "largest_lift": 0.0}
    if not len(S):
        info.update(min_eig=0.0, min_eig_after=0.0)
        return P, info
    w, V = np.linalg.eigh((S + S.T) / 2.0)
    info["min_eig"] = info["min_eig_after"] = float(w[0])
    if E is None:
        return P, info
    Es = schur_noise(E, A, i0) if i0 is not None else E
    t = np.quantile(np.linalg.norm(Es @ V, axis=1), NOISE_QUANTILE, axis=0)  # ||E_S v_i|| per direction
    lift = np.maximum(0.0, t - w)
    if not np.any(lift > 0):
        return P, info
    P[np.ix_(f, f)] = (V * lift) @ V.T
    P = (P + P.T) / 2.0
    info.update(
        directions=int(np.sum(lift > 0)),
        largest_lift=float(lift.max()),
        min_eig_after=float(np.min(np.maximum(w, t))),
    )
    return P, info


def choose_penalty(
    ridge: Any, stats: SuffStats, enc: Encoding, source: Any, penalized: np.ndarray
) -> tuple[float, np.ndarray | None, dict[str, Any]]:
    """What a fit adds to X^T X: the given ridge, :func:`auto_ridge`'s, :func:`floor_penalty`'s, or a fixed matrix.

    Parameters
    ----------
    ridge : float, "floor", "auto" or numpy.ndarray
        The estimator's ``ridge``: a number (times ``penalized`` on the diagonal), a rule, or a
        fixed penalty matrix (another fit's ``penalty_``, e.g. for the refits of its intervals).
    stats, enc, source, penalized
        As for :func:`auto_ridge`.

    Returns
    -------
    ridge : float
        The global ridge (0 for the floor and for a matrix).
    penalty : numpy.ndarray or None
        The matrix to add instead of a global ridge (None: ``ridge * diag(penalized)``).
    info : dict
        ``{"rule": "given", "ridge": ridge}``, ``{"rule": "matrix", ...}``, or the rule's own.

    Raises
    ------
    DDSSPError
        For a matrix whose size is not the encoding's.
    """
    if isinstance(ridge, np.ndarray):
        p = len(enc.names)
        if ridge.shape != (p, p):
            raise DDSSPError(f"a penalty matrix must be {p} x {p} (the encoded coefficients), got {ridge.shape}")
        return 0.0, np.array(ridge, dtype=float), {"rule": "matrix", "ridge": 0.0}
    if isinstance(ridge, str) and ridge == "floor":
        P, info = floor_penalty(stats, enc, source)
        return 0.0, (P if info["directions"] else None), info
    if isinstance(ridge, str):
        r, info = auto_ridge(stats, enc, source, penalized)
        return r, None, info
    return float(ridge), None, {"rule": "given", "ridge": float(ridge)}


#: relative size of the target's centred second moment below which the release holds one target value
FLAT_TOL = 1e-8


def flat_target(stats: SuffStats, enc: Encoding) -> np.ndarray | None:
    """The intercept-only solution when the source's target takes a single value, else None.

    When the source holds all of its rows at one value of the target (a release whose model gives
    the target's other levels no rows), X^T y is the target's value times X's column sums, so the
    centred X^T y is 0: the source carries no information on how any feature moves the target. The
    solve of the normal equations would then divide rounding errors by X^T X's weakest eigenvalues
    and return coefficients of arbitrary sign. The fit instead has every coefficient 0 and the
    intercept at the target's value, with a warning.

    Parameters
    ----------
    stats : SuffStats
        The fit's sufficient statistics.
    enc : Encoding
        The fit's encoding.

    Returns
    -------
    numpy.ndarray or None
    """
    n, yty = float(stats.n), stats.yty
    names = list(enc.names)
    if not enc.intercept or INTERCEPT not in names or not n > 0:
        return None
    i0 = names.index(INTERCEPT)
    mean = float(stats.xty[i0]) / n
    if yty - n * mean**2 > FLAT_TOL * max(yty, np.finfo(float).tiny):
        return None
    warnings.warn(
        f"the source holds every row of the fit at one value of the target {enc.target!r} (its other levels hold "
        "no rows), so no feature can predict it: every coefficient is 0 and the intercept is that value; a "
        "release at a larger --eps, or with more rows, keeps both",
        stacklevel=4,
    )
    theta = np.zeros(len(names))
    theta[i0] = mean
    return theta


def penalised_solve(
    ridge: Any, stats: SuffStats, enc: Encoding, source: Any, psd: str
) -> tuple[float, np.ndarray, dict[str, Any], np.ndarray, dict[str, Any]]:
    """DD-SSP's solve: the penalty (:func:`choose_penalty`), then the normal equations (or :func:`flat_target`).

    Parameters
    ----------
    ridge : float, "floor", "auto" or numpy.ndarray
        The estimator's ``ridge``.
    stats, enc, source
        As for :func:`floor_penalty`.
    psd : {"clip", "ridge"}
        How a matrix that is still indefinite is repaired (:func:`~.ddssp_math.solve_normal_equations`).

    Returns
    -------
    tuple
        (``ridge_``, ``penalty_`` (the matrix added to X^T X), ``ridge_info_``, theta, ``solve_info_``).
    """
    pen = np.array([0.0 if nm == INTERCEPT else 1.0 for nm in enc.names])
    r, P, info = choose_penalty(ridge, stats, enc, source, pen)
    penalty = P if P is not None else r * np.diag(pen)
    flat = flat_target(stats, enc)
    if flat is not None:
        return r, penalty, info, flat, {"action": "flat target: every coefficient 0", "rank": 0}
    theta, solved = solve_normal_equations(stats.xtx, stats.xty, r, pen, psd, penalty=P)
    return r, penalty, info, theta, solved


def floor_shrinkage(est: Any) -> np.ndarray:
    """Per coefficient (intercept first): the share of it the fit's penalty pulls toward 0.

    With A the fit's X^T X and P its penalty (the noise floor, or ridge times I'), the fit is
    theta_P = c (A + P)^+ X^T y = theta_0 - (A + P)^+ P theta_0, theta_0 the unpenalised solution.
    Entry j is the diagonal of (A + P)^+ P: the share of its own value the penalty removes, 0 where
    the penalty leaves the coefficient alone, near 1 where it lies on a direction the floor lifted far
    above the release's own eigenvalue. A coefficient also moves with the values of the coefficients
    it is collinear with (the off-diagonal entries: a lifted direction that mixes two levels pulls
    both), so a small entry does not mean no pull. The intervals hold P fixed, so they are intervals
    for the penalised coefficient c (X^T X + P)^-1 X^T y at the data's X^T X; against the
    unpenalised one the pull is a bias, which the default fit's intervals add (:func:`floor_pull`).

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted.

    Returns
    -------
    numpy.ndarray
        Values in [0, 1] (up to rounding), the intercept first.
    """
    P = penalty_used(est)
    out = np.zeros(len(P))
    if np.any(P):
        A = (est.suffstats_.xtx + est.suffstats_.xtx.T) / 2.0 + P
        out = np.diag(np.linalg.pinv(A, hermitian=True) @ P).copy()
    return out if est.encoding_.intercept else np.concatenate([[0.0], out])


def point_copy(est: Any, enc: Encoding) -> Any:
    """An unfitted copy of ``est`` at its own penalty (:func:`~.ddssp_delta.refit_ridge`), without intervals.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted.
    enc : Encoding
        The encoding the copy keeps.

    Returns
    -------
    DDSSPLinearRegression or DDSSPLogisticRegression
    """
    params = {**est.get_params(), "encoding": enc, "ci": None, "intervals": None, "ridge": refit_ridge(est)}
    return type(est)(**params)
