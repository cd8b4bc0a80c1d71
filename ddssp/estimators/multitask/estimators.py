"""Multi-task estimators with user-level DP and adaptive budget allocation (Krichene et al.).

A multi-task estimator learns one coefficient vector per task: ``coef_`` has shape (m, d) and
``intercept_`` shape (m,) (zeros: fit an intercept by adding a constant feature). The single-task
interface (``predict(X)``) does not fit, so these subclass :class:`DPEstimator` (parameters, repr,
``privacy_``) but not DPRegressor: ``fit(data)`` takes a :class:`ddssp.estimators.multitask.model.MultiTaskData` and
``predict(task_ids, X)`` takes task labels (as in ``data.tasks``) and one feature row per prediction.

- :class:`MultiTaskSSP`: Algorithm 1 (task-weighted sufficient statistics perturbation);
- :class:`MultiTaskNoisyGD`: Algorithm 2 (task-weighted noisy gradient descent);
- :class:`DPALS`: DP alternating least squares for matrix completion (items are the tasks).

Budget: (eps, delta) -> rho (CKS). A share ``count_share`` pays for noisy task counts when the weights
need them (unless ``public_counts`` are declared); the rest is the per-user budget beta of the training
releases. ``ledger_`` holds every charge; ``privacy_`` (a :class:`~ddssp.dp.PrivacyRecord` built from it)
summarises it.

Noise: every DP draw (noisy counts, SSP statistics, GD steps) comes from ``noise`` (default
:class:`~ddssp.dp.noise.SecureNoise`: OpenDP, no seed reaches it; charges are OpenDP's maps).
``insecure_seed=N`` makes it reproducible for tests, NOT PRIVATE (``privacy_.stamp``). MultiTaskSSP and
MultiTaskNoisyGD have no other randomness (no seed parameter); DPALS takes ``seed`` for its
initial item factors and the uniform / tail sampling keys, which are not privacy noise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddssp.dp import Ledger, PrivacyRecord, check_bound, check_eps, clip_rows, make_rng
from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.errors import DDSSPError
from ddssp.estimators.base import DPEstimator, as_matrix, renamed_keywords, take_renamed
from ddssp.estimators.multitask.als import als_predict, dp_als, user_solve
from ddssp.estimators.multitask.budget import BudgetPlan, eps_spent, plan_budget
from ddssp.estimators.multitask.counts import private_task_counts
from ddssp.estimators.multitask.model import MultiTaskData
from ddssp.estimators.multitask.options import ALSOptions, GradientSteps, TaskWeighting
from ddssp.estimators.multitask.regression import weighted_noisy_gd, weighted_ssp
from ddssp.estimators.multitask.weights import ALLOCATIONS, PER_USER_MODES, adaptive_weights, per_user_weights


def _check_data(data: Any) -> MultiTaskData:
    if not isinstance(data, MultiTaskData):
        raise DDSSPError("fit expects a MultiTaskData (see MultiTaskData.from_frame)")
    return data


def _record(name: str, ledger: Ledger, plan: BudgetPlan, noise: NoiseSource, **extra: Any) -> PrivacyRecord:
    """The fit's :class:`~ddssp.dp.PrivacyRecord`: rho is what the ledger spent and eps the user-level
    (eps, plan.delta)-DP it implies (CKS, never above the planned eps); ``details`` holds the plan
    (``eps_budget``, ``rho_budget``, ``rho_counts``, ``beta``, ``rounds``) and ``level`` = "user"."""
    details = {
        "eps_budget": plan.eps,
        "rho_budget": plan.rho_total,
        "rho_counts": plan.rho_counts,
        "beta": plan.beta,
        "rounds": plan.rounds,
        "level": "user",
        **extra,
    }
    return ledger.record(
        f"{name} (user-level zCDP, OpenDP Gaussian)",
        delta=plan.delta,
        eps=eps_spent(ledger, plan.delta),
        noise=noise,
        details=details,
    )


class _MultiTaskBase(DPEstimator):
    """Shared: budget plan, counts, weights, prediction."""

    weighting: TaskWeighting | None

    def _weighting(self) -> TaskWeighting:
        return TaskWeighting() if self.weighting is None else self.weighting

    def _needs_counts(self) -> bool:
        wt = self._weighting()
        return self.public_counts is None and not (wt.per_user == "normalize" and float(wt.mu) == 0.0)

    def _weights(self, data: MultiTaskData, rounds: int, noise: NoiseSource, force_counts: bool = False):
        wt = self._weighting()
        if wt.per_user not in PER_USER_MODES:
            raise DDSSPError(f"per_user must be one of {PER_USER_MODES}, got {wt.per_user!r}")
        needs = self._needs_counts() or (force_counts and self.public_counts is None)
        plan = plan_budget(self.eps, self.delta, rounds, wt.count_share if needs else 0.0)
        ledger = Ledger(plan.rho_total)
        counts, n_hat = None, None
        if self.public_counts is not None:
            counts = np.asarray(self.public_counts, dtype=float)
            if counts.shape != (data.n_tasks,):
                raise DDSSPError(f"public_counts must have one count per task ({data.n_tasks})")
            n_hat = float(data.n_users)
        elif needs:
            counts, n_hat, _ = private_task_counts(data, plan.rho_counts, noise, ledger, wt.count_clip)
        if counts is None:  # per_user="normalize" with mu = 0: every user spreads beta evenly
            omega = np.ones(data.n_tasks)
        else:
            omega = adaptive_weights(counts, wt.mu, plan.beta, n_hat, wt.beta_bar)
        w = per_user_weights(data.task_idx, data.user_idx, omega, plan.beta, data.n_users, wt.per_user)
        return plan, ledger, counts, omega, w

    def _finish(self, data: MultiTaskData, coef: np.ndarray, plan, ledger: Ledger, noise: NoiseSource) -> None:
        self.coef_ = coef
        self.intercept_ = np.zeros(coef.shape[0])
        self.tasks_ = data.tasks
        self.feature_names_in_ = data.feature_names
        self.ledger_ = ledger
        counts = (
            "public (declared)"
            if self.public_counts is not None
            else ("private" if any(e.kind == "task-counts" for e in ledger.entries) else "not used")
        )
        self.privacy_ = _record(type(self).__name__, ledger, plan, noise, counts=counts)

    def _task_index(self, task_ids: Any) -> np.ndarray:
        self._check_fitted()
        pos = {t: i for i, t in enumerate(self.tasks_.tolist())}
        try:
            return np.array([pos[t] for t in np.asarray(task_ids).reshape(-1).tolist()], dtype=np.int64)
        except KeyError as exc:
            raise DDSSPError(f"unknown task {exc.args[0]!r} (not seen in fit)") from None

    def decision_function(self, task_ids: Any, X: Any = None) -> np.ndarray:  # type: ignore[override]
        idx = self._task_index(task_ids)
        arr, _ = as_matrix(X)
        if arr.shape != (idx.size, self.coef_.shape[1]):
            raise DDSSPError(f"X must have shape ({idx.size}, {self.coef_.shape[1]}), got {arr.shape}")
        return np.einsum("ed,ed->e", arr, self.coef_[idx]) + self.intercept_[idx]

    def predict(self, task_ids: Any, X: Any) -> np.ndarray:
        """theta_{task} . x for each (task id, feature row)."""
        return self.decision_function(task_ids, X)


class MultiTaskSSP(_MultiTaskBase):
    """Task-weighted SSP for multi-task ridge regression (Algorithm 1), user-level (eps, delta)-DP.

    Parameters
    ----------
    eps, delta : float
        User-level privacy budget of the fit (converted to zCDP by the CKS bound).
    weighting : TaskWeighting or None
        How each user's budget is spread over their tasks: weight exponent ``mu``, ``per_user``
        ("normalize" or "clip"), ``beta_bar``, ``count_share``, ``count_clip`` (see
        :class:`~ddssp.estimators.multitask.options.TaskWeighting`; None: its defaults).
    clip_x, clip_star : float
        Declared bounds: x clipped to ||x|| <= clip_x, y to |y| <= clip_x clip_star.
    ridge : float or None
        Added to the PSD-projected noisy A_i (None: clip_x^2 sqrt(d), the scale of the noise's spectrum).
    public_counts : array-like or None
        Task sizes you declare public (then nothing is spent on counts).
    noise : NoiseSource or None
        The DP noise source (default :class:`~ddssp.dp.noise.SecureNoise`).
    insecure_seed : int or None
        FOR TESTS ONLY: reproducible, NOT PRIVATE noise. Give at most one of ``noise`` and this.
    **deprecated
        ``epsilon`` (now ``eps``), accepted with a DeprecationWarning.

    Attributes
    ----------
    coef_ : ndarray of shape (m, d)
        One coefficient vector per task (row i for ``tasks_[i]``).
    intercept_ : ndarray of shape (m,)
        Zeros (add a constant feature to fit an intercept).
    tasks_ : ndarray
        The task labels, in the order of ``coef_``'s rows.
    feature_names_in_ : list of str or None
        The data's feature names.
    weights_ : ndarray
        The per-(task, user) weights w_ij.
    ledger_ : Ledger
        Every charge of the fit.
    privacy_ : PrivacyRecord
        Built from ``ledger_``: rho spent, the user-level eps it implies at ``delta``, the entries;
        ``details`` holds ``eps_budget``, ``rho_budget``, ``rho_counts``, ``beta``, ``rounds``,
        ``level`` ("user") and ``counts`` (public / private / not used).
    """

    def __init__(
        self,
        eps: float | None = None,
        delta: float | None = None,
        weighting: TaskWeighting | None = None,
        clip_x: float = 1.0,
        clip_star: float = 1.0,
        ridge: float | None = None,
        public_counts: Any = None,
        noise: NoiseSource | None = None,
        insecure_seed: int | None = None,
        **deprecated: Any,
    ) -> None:
        old = renamed_keywords("MultiTaskSSP", deprecated, {"epsilon": "eps"})
        eps = take_renamed("MultiTaskSSP", "eps", eps, old)
        self.eps = eps
        self.delta = delta
        self.weighting = weighting
        self.clip_x = clip_x
        self.clip_star = clip_star
        self.ridge = ridge
        self.public_counts = public_counts
        self.noise = noise
        self.insecure_seed = insecure_seed

    def fit(self, data: MultiTaskData) -> MultiTaskSSP:
        """Fit by task-weighted SSP (Algorithm 1): noisy counts when the weights need them, then one release.

        Parameters
        ----------
        data : MultiTaskData
            Users, tasks and one (x, y) per entry.

        Returns
        -------
        self
        """
        data = _check_data(data)
        noise = resolve_noise(self.noise, self.insecure_seed)
        plan, ledger, _, _, w = self._weights(data, 1, noise)
        ridge = float(self.clip_x) ** 2 * math.sqrt(data.n_features) if self.ridge is None else self.ridge
        coef = weighted_ssp(data, w, plan.beta, self.clip_x, self.clip_star, ridge, noise, ledger, round=0)
        self.weights_ = w
        self._finish(data, coef, plan, ledger, noise)
        return self


class MultiTaskNoisyGD(_MultiTaskBase):
    """Task-weighted noisy gradient descent (Algorithm 2) on the squared loss, user-level (eps, delta)-DP.

    Returns the average of the last half of the iterates. Noisy task counts are always released
    (``count_share``) unless ``public_counts`` are declared: the step sizes need them.

    Parameters
    ----------
    eps, delta : float
        User-level privacy budget of the fit.
    weighting : TaskWeighting or None
        As in :class:`MultiTaskSSP`.
    descent : GradientSteps or None
        The descent: ``steps``, step size ``lr`` (task i's step is lr / (n_hat_i omega_i clip_x^2),
        from the noisy counts), ``radius`` of the parameter ball, per-example ``grad_clip`` (see
        :class:`~ddssp.estimators.multitask.options.GradientSteps`; None: its defaults).
    clip_x, clip_star : float
        Declared bounds, as in :class:`MultiTaskSSP`.
    ridge : float
        L2 penalty of the squared loss.
    public_counts, noise, insecure_seed
        As in :class:`MultiTaskSSP`.
    **deprecated
        ``epsilon`` (now ``eps``), accepted with a DeprecationWarning.

    Attributes
    ----------
    coef_, intercept_, tasks_, feature_names_in_, weights_, ledger_, privacy_
        As in :class:`MultiTaskSSP`.
    """

    def __init__(
        self,
        eps: float | None = None,
        delta: float | None = None,
        weighting: TaskWeighting | None = None,
        descent: GradientSteps | None = None,
        clip_x: float = 1.0,
        clip_star: float = 1.0,
        ridge: float = 0.0,
        public_counts: Any = None,
        noise: NoiseSource | None = None,
        insecure_seed: int | None = None,
        **deprecated: Any,
    ) -> None:
        old = renamed_keywords("MultiTaskNoisyGD", deprecated, {"epsilon": "eps"})
        eps = take_renamed("MultiTaskNoisyGD", "eps", eps, old)
        self.eps = eps
        self.delta = delta
        self.weighting = weighting
        self.descent = descent
        self.clip_x = clip_x
        self.clip_star = clip_star
        self.ridge = ridge
        self.public_counts = public_counts
        self.noise = noise
        self.insecure_seed = insecure_seed

    def _needs_counts(self) -> bool:
        return self.public_counts is None

    def fit(self, data: MultiTaskData) -> MultiTaskNoisyGD:
        """Fit by task-weighted noisy gradient descent (Algorithm 2), data clipped to the declared bounds first.

        Parameters
        ----------
        data : MultiTaskData
            Users, tasks and one (x, y) per entry.

        Returns
        -------
        self
        """
        data = _check_data(data)
        noise = resolve_noise(self.noise, self.insecure_seed)
        plan, ledger, counts, omega, w = self._weights(data, 1, noise)
        gd = GradientSteps() if self.descent is None else self.descent
        clip_x = check_bound(self.clip_x, "clip_x")
        clip_star = check_bound(self.clip_star, "clip_star")
        radius = check_bound(gd.radius, "radius")
        gclip = clip_x**2 * (radius + clip_star) if gd.grad_clip is None else gd.grad_clip
        # the declared bounds are enforced on the data before any gradient is taken
        Xc = clip_rows(data.X, clip_x)
        yc = np.clip(data.y, -clip_x * clip_star, clip_x * clip_star)
        clipped = MultiTaskData(data.users, data.tasks, Xc, yc, data.membership, data.feature_names)
        # sum_j w_ij is estimated by n_hat_i omega_i: released (or declared) quantities only
        wsum = np.maximum(np.asarray(counts, dtype=float), 1.0) * omega
        step = float(gd.lr) / np.maximum(wsum * clip_x**2 / max(data.n_features, 1), 1e-12)
        coef = weighted_noisy_gd(
            clipped, w, plan.beta, int(gd.steps), gclip, step, radius, noise, ledger, ridge=float(self.ridge)
        )
        self.weights_ = w
        self._finish(data, coef, plan, ledger, noise)
        return self


class DPALS(DPEstimator):
    """DP alternating least squares for matrix completion (the paper's Algorithm 3 / Appendix D).

    ``fit(data)`` takes ratings as a MultiTaskData (tasks = items, y = centred ratings; X is ignored) and
    publishes only the item embeddings ``coef_`` (m, rank). User embeddings are recomputed by each user from
    the published items and their own ratings (:meth:`user_factors`), as in the paper's Remark D.1.

    Parameters
    ----------
    eps, delta : float
        User-level privacy budget: rho(eps, delta) = rho_counts + rounds * beta.
    als : ALSOptions or None
        Embedding ``rank``, alternating ``rounds`` (each a beta-zCDP release), ``allocation``
        ("adaptive": AdaDPALS, weights omega_i ~ n_hat_i^-mu with per-user clipping; "uniform": DPALS,
        each user keeps ``k`` random ratings; "tail": each user keeps their ``k`` ratings of the least
        popular items by noisy count), ``item_ridge`` (None: clip_x^2 sqrt(rank)), ``user_ridge``
        (see :class:`~ddssp.estimators.multitask.options.ALSOptions`; None: its defaults).
    weighting : TaskWeighting or None
        As in :class:`MultiTaskSSP`, its ``mu`` the weight exponent of the adaptive allocation (None:
        ``TaskWeighting(mu=0.25)``).
    clip_x, clip_star : float
        clip_x bounds the user embeddings used as features; |y| is clipped to clip_x * clip_star.
    public_counts
        As in :class:`MultiTaskSSP`.
    seed : int or None
        Seeds ONLY the initial item factors and the uniform / tail sampling keys (not privacy noise).
    noise, insecure_seed
        The DP noise source, as in :class:`MultiTaskSSP`.
    **deprecated
        ``epsilon`` (now ``eps``) and ``random_state`` (now ``seed``), accepted with a
        DeprecationWarning.

    Attributes
    ----------
    coef_ : ndarray of shape (m, rank)
        The released item embeddings.
    intercept_ : ndarray of shape (m,)
        Zeros.
    tasks_ : ndarray
        The item labels.
    ledger_ : Ledger
        Every charge of the fit.
    privacy_ : PrivacyRecord
        Built from ``ledger_``, as in :class:`MultiTaskSSP` (no ``counts`` detail).
    """

    def __init__(
        self,
        eps: float | None = None,
        delta: float | None = None,
        als: ALSOptions | None = None,
        weighting: TaskWeighting | None = None,
        clip_x: float = 1.0,
        clip_star: float = 1.0,
        public_counts: Any = None,
        seed: int | None = None,
        noise: NoiseSource | None = None,
        insecure_seed: int | None = None,
        **deprecated: Any,
    ) -> None:
        old = renamed_keywords("DPALS", deprecated, {"epsilon": "eps", "random_state": "seed"})
        eps = take_renamed("DPALS", "eps", eps, old)
        seed = take_renamed("DPALS", "seed", seed, old)
        self.eps = eps
        self.delta = delta
        self.als = als
        self.weighting = weighting
        self.clip_x = clip_x
        self.clip_star = clip_star
        self.public_counts = public_counts
        self.seed = seed
        self.noise = noise
        self.insecure_seed = insecure_seed

    def fit(self, data: MultiTaskData) -> DPALS:
        """Fit the item embeddings by DP alternating least squares (:func:`~.als.dp_als`).

        Parameters
        ----------
        data : MultiTaskData
            Ratings: tasks are items, y the centred ratings; X is ignored.

        Returns
        -------
        self

        Raises
        ------
        DDSSPError
            For an unknown allocation.
        PrivacyParameterError
            For a missing or invalid eps (never run non-privately by accident).
        """
        data = _check_data(data)
        als = self._als()
        if als.allocation not in ALLOCATIONS:
            raise DDSSPError(f"allocation must be one of {ALLOCATIONS}, got {als.allocation!r}")
        check_eps(self.eps)  # dp_als reads eps=None as "run non-privately": never let a missing eps do that
        rng = make_rng(self.seed)  # initial factors and sampling keys only
        noise = resolve_noise(self.noise, self.insecure_seed)
        U, ledger, plan = dp_als(
            data,
            self.eps,
            self.delta,
            rng,
            als=als,
            weighting=TaskWeighting(mu=0.25) if self.weighting is None else self.weighting,
            clip_x=self.clip_x,
            clip_star=self.clip_star,
            public_counts=self.public_counts,
            noise=noise,
        )
        self.coef_ = U
        self.intercept_ = np.zeros(U.shape[0])
        self.tasks_ = data.tasks
        self.feature_names_in_ = None
        self.ledger_ = ledger
        self.privacy_ = _record("DPALS", ledger, plan, noise)
        return self

    def user_factors(self, data: MultiTaskData) -> np.ndarray:
        """Each user's embedding from the published items and their own ratings.

        Parameters
        ----------
        data : MultiTaskData
            The users' ratings (the same items as the model).

        Returns
        -------
        numpy.ndarray
            Shape (n users, rank).

        Raises
        ------
        DDSSPError
            When not fitted, or the item count differs from the model's.
        """
        self._check_fitted()
        data = _check_data(data)
        if data.n_tasks != self.coef_.shape[0]:
            raise DDSSPError(f"data has {data.n_tasks} items, the model {self.coef_.shape[0]}")
        return user_solve(data, self.coef_, float(self._als().user_ridge))

    def _als(self) -> ALSOptions:
        return ALSOptions() if self.als is None else self.als

    def predict(self, task_idx: Any, user_idx: Any, V: np.ndarray) -> np.ndarray:  # type: ignore[override]
        """Predicted ratings u_i . v_j for integer item / user positions, given user factors.

        Parameters
        ----------
        task_idx : array-like of int
            Item positions.
        user_idx : array-like of int
            User positions (rows of ``V``).
        V : numpy.ndarray
            User factors (:meth:`user_factors`).

        Returns
        -------
        numpy.ndarray
        """
        self._check_fitted()
        return als_predict(
            self.coef_,
            np.asarray(V, dtype=float),
            np.asarray(task_idx, dtype=np.int64),
            np.asarray(user_idx, dtype=np.int64),
        )
