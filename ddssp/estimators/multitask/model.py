"""Multi-task learning under user-level DP with adaptive budget allocation (Krichene et al.).

n users, m tasks, a private bipartite graph Omega: user j contributes one example (x_ij, y_ij) to every
task i in Omega^j. Neighbouring data sets differ by ALL entries of one user (user-level DP).

Building blocks (all functions; the estimators in :mod:`ddssp.estimators.multitask` wire them up):

- :class:`MultiTaskData`: the graph as a scipy.sparse CSR matrix (tasks x users), one feature row and one
  label per entry, in the CSR (task-major) order;
- :func:`plan_budget`: (eps, delta) -> rho (CKS) -> the share for the task counts and beta per round;
- :func:`private_task_counts`: Gaussian noisy task sizes n_i (and the noisy number of users), clamped >= 1;
- :func:`adaptive_weights` (omega_i ~ n_i^-mu, sum_i n_i omega_i^2 = n beta_bar) and
  :func:`per_user_weights` (w_ij = omega_i min(1, sqrt(beta / sum_{i' in Omega^j} omega_i'^2)), with a final
  safety rescale so that max_j sum_i w_ij^2 <= beta holds exactly in floating point);
- :func:`weighted_ssp` (Algorithm 1), :func:`weighted_noisy_gd` (Algorithm 2), :func:`dp_als` (Appendix D);
- :func:`synthetic_multitask` and :func:`synthetic_ratings`: the generators used by the experiments.

Privacy accounting is in zCDP: a release of L2 sensitivity D with N(0, s^2) noise costs D^2 / (2 s^2).
Algorithm 1 with weights of per-user budget beta costs beta (beta/2 for the A_i, beta/2 for the b_i);
Algorithm 2 costs beta over its T steps; DP-ALS costs rho_counts + T * beta. Every release is charged to a
:class:`ddssp.dp.Ledger` before the noise is drawn.

Noise (see :mod:`ddssp.dp.noise`). Every DP draw comes from a :class:`~ddssp.dp.noise.NoiseSource`
(``noise``; default :class:`~ddssp.dp.noise.SecureNoise`, OpenDP on the OS's CSPRNG, which no seed
reaches): the fractional task counts, the A_i upper triangles, the b_i and each GD step's summed gradients
get OpenDP's float Gaussian mechanism *on the data-dependent values* (floating-point safe), the user count
(an integer) the discrete Gaussian. Each ledger charge is OpenDP's own privacy map at the declared
sensitivity (:func:`opendp_sigma` nudges sigma up by a relative ~1e-13 so that the map, which includes the
float grid's rounding, fits the planned share). A numpy ``rng`` is still taken where the randomness is
not privacy noise: DP-ALS's initial item factors and the uniform / tail sampling keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import sparse

from ddssp.errors import DataError, DDSSPError, PrivacyParameterError
from ddssp.dp.noise import (
    NoiseSource,
    gaussian_float_measurement,
    gaussian_measurement,
    opendp_charge,
    resolve_noise,
)
from ddssp.dp import (
    Ledger,
    LedgerEntry,
    check_bound,
    check_delta,
    check_eps,
    check_rho,
    clip_rows,
    eps_from_rho_delta,
    gaussian_sigma,
    rho_from_eps_delta,
)

ALLOCATIONS = ("adaptive", "uniform", "tail")
PER_USER_MODES = ("clip", "normalize")


# =========================================================================== data model
class MultiTaskData:
    """Users, tasks, the membership graph and one (x, y) per (task, user) entry.

    ``membership`` is a scipy.sparse matrix of shape (m tasks, n users) whose non-zero pattern is Omega.
    ``X`` (shape (|Omega|, d); d may be 0, e.g. for ratings) and ``y`` (|Omega|,) are in the order of the
    CSR non-zeros of ``membership`` (task-major, users sorted within a task). Use :meth:`from_entries` or
    :meth:`from_frame` when your rows are in another order.
    """

    def __init__(
        self,
        users: Sequence[Any],
        tasks: Sequence[Any],
        X: Any,
        y: Any,
        membership: sparse.spmatrix | sparse.sparray,
        feature_names: list[str] | None = None,
    ) -> None:
        self.users = np.asarray(users)
        self.tasks = np.asarray(tasks)
        if self.users.ndim != 1 or self.tasks.ndim != 1:
            raise DataError("users and tasks must be 1-dimensional label sequences")
        if len(self.users) == 0 or len(self.tasks) == 0:
            raise DataError("multi-task data needs at least one user and one task")
        if len(set(self.users.tolist())) != len(self.users) or len(set(self.tasks.tolist())) != len(self.tasks):
            raise DataError("user and task labels must be unique")
        if not sparse.issparse(membership):
            raise DataError("membership must be a scipy.sparse matrix (tasks x users)")
        M = sparse.csr_matrix(membership)
        if M.shape != (len(self.tasks), len(self.users)):
            raise DataError(
                f"membership has shape {M.shape}, expected (tasks, users) = ({len(self.tasks)}, {len(self.users)})"
            )
        M.eliminate_zeros()
        if not M.has_canonical_format:
            raise DataError(
                "membership has duplicate or unsorted entries; one example per (task, user) is expected "
                "(aggregate duplicates first, or build with MultiTaskData.from_entries)"
            )
        E = M.nnz
        X = np.asarray(X, dtype=float)
        if X.ndim == 1 and E > 0 and X.shape[0] == E:
            X = X[:, None]
        if X.ndim != 2 or X.shape[0] != E:
            raise DataError(f"X must have one row per membership entry ({E}), got shape {X.shape}")
        y = np.asarray(y, dtype=float).reshape(-1)
        if y.shape[0] != E:
            raise DataError(f"y must have one value per membership entry ({E}), got {y.shape[0]}")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise DataError("X and y must be finite (no NaN or infinite values)")
        M = M.astype(float)
        M.data[:] = 1.0
        self.membership = M
        self.X = X
        self.y = y
        self.feature_names = list(feature_names) if feature_names is not None else None
        self.task_idx = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
        self.user_idx = M.indices.astype(np.int64)

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_entries(
        cls,
        task_idx: Any,
        user_idx: Any,
        X: Any,
        y: Any,
        n_tasks: int | None = None,
        n_users: int | None = None,
        tasks: Sequence[Any] | None = None,
        users: Sequence[Any] | None = None,
        feature_names: list[str] | None = None,
    ) -> "MultiTaskData":
        """Build from integer entry lists in any order (rows are sorted into CSR order)."""
        t = np.asarray(task_idx).astype(np.int64).reshape(-1)
        u = np.asarray(user_idx).astype(np.int64).reshape(-1)
        if t.shape != u.shape:
            raise DataError("task_idx and user_idx must have the same length")
        m = int(n_tasks if n_tasks is not None else (len(tasks) if tasks is not None else t.max(initial=-1) + 1))
        n = int(n_users if n_users is not None else (len(users) if users is not None else u.max(initial=-1) + 1))
        if t.size and (t.min() < 0 or t.max() >= m or u.min() < 0 or u.max() >= n):
            raise DataError("task or user index out of range")
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[:, None] if X.shape[0] == t.size and t.size > 0 else X.reshape(t.size, -1)
        y = np.asarray(y, dtype=float).reshape(-1)
        if X.shape[0] != t.size or y.shape[0] != t.size:
            raise DataError(f"X ({X.shape[0]} rows) and y ({y.shape[0]}) must match the {t.size} entries")
        order = np.lexsort((u, t))
        t, u, X, y = t[order], u[order], X[order], y[order]
        if t.size > 1 and np.any((np.diff(t) == 0) & (np.diff(u) == 0)):
            raise DataError("duplicate (task, user) entries; one example per (task, user) is expected")
        M = sparse.csr_matrix((np.ones(t.size), (t, u)), shape=(m, n))
        M.sort_indices()
        return cls(
            users if users is not None else np.arange(n),
            tasks if tasks is not None else np.arange(m),
            X,
            y,
            M,
            feature_names=feature_names,
        )

    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        user: str = "user",
        task: str = "task",
        target: str = "y",
        features: Sequence[str] | None = None,
    ) -> "MultiTaskData":
        """From a long table with one row per (user, task): columns user, task, features..., y.

        ``features`` defaults to every other column. User and task labels are sorted.
        """
        if not isinstance(df, pd.DataFrame):
            raise DataError("from_frame expects a pandas DataFrame")
        for c in (user, task, target):
            if c not in df.columns:
                raise DataError(f"column {c!r} not in the table (columns: {', '.join(map(str, df.columns))})")
        if features is None:
            features = [c for c in df.columns if c not in (user, task, target)]
        missing = [c for c in features if c not in df.columns]
        if missing:
            raise DataError(f"feature columns not in the table: {missing}")
        if df[[user, task]].isna().any().any():
            raise DataError("user and task columns must not have missing values")
        try:
            X = df[list(features)].to_numpy(dtype=float) if features else np.zeros((len(df), 0))
            y = df[target].to_numpy(dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"features and target must be numeric: {exc}") from None
        users, u = np.unique(df[user].to_numpy(), return_inverse=True)
        tasks, t = np.unique(df[task].to_numpy(), return_inverse=True)
        return cls.from_entries(t, u, X, y, tasks=tasks, users=users, feature_names=[str(c) for c in features])

    # ----------------------------------------------------------------- shape and counts
    @property
    def n_tasks(self) -> int:
        return self.membership.shape[0]

    @property
    def n_users(self) -> int:
        return self.membership.shape[1]

    @property
    def n_entries(self) -> int:
        return self.membership.nnz

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def task_counts(self) -> np.ndarray:
        """n_i = |Omega_i| (exact: private, never release it without noise)."""
        return np.diff(self.membership.indptr).astype(np.int64)

    @property
    def user_counts(self) -> np.ndarray:
        """|Omega^j|, the number of tasks of each user."""
        return np.bincount(self.user_idx, minlength=self.n_users).astype(np.int64)

    def subset(self, mask: np.ndarray) -> "MultiTaskData":
        """The entries where ``mask`` is true (same users and tasks)."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_entries,):
            raise DataError(f"mask must have one value per entry ({self.n_entries})")
        return MultiTaskData.from_entries(
            self.task_idx[mask], self.user_idx[mask], self.X[mask], self.y[mask],
            tasks=self.tasks, users=self.users, feature_names=self.feature_names,
        )

    def split(self, test_fraction: float, rng: np.random.Generator) -> tuple["MultiTaskData", "MultiTaskData"]:
        """Random split of the entries into (train, test)."""
        if not 0.0 < test_fraction < 1.0:
            raise DataError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
        test = rng.random(self.n_entries) < test_fraction
        return self.subset(~test), self.subset(test)

    def __repr__(self) -> str:
        return (f"MultiTaskData(tasks={self.n_tasks}, users={self.n_users}, entries={self.n_entries}, "
                f"features={self.n_features})")


def _task_matrix(task_idx: np.ndarray, values: np.ndarray, m: int) -> sparse.csr_matrix:
    """Sparse (m x E) matrix with ``values[e]`` at (task_idx[e], e): left-multiplying sums per task."""
    E = task_idx.shape[0]
    return sparse.csr_matrix((values, (task_idx, np.arange(E))), shape=(m, E))


# =========================================================================== budget
@dataclass(frozen=True)
class BudgetPlan:
    """How a target (eps, delta) is split: rho_total = rho_counts + rounds * beta."""

    eps: float
    delta: float
    rho_total: float
    rho_counts: float
    beta: float
    rounds: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "eps": self.eps, "delta": self.delta, "rho": self.rho_total,
            "rho_counts": self.rho_counts, "beta": self.beta, "rounds": self.rounds,
        }


def plan_budget(eps: float, delta: float, rounds: int = 1, count_share: float = 0.0) -> BudgetPlan:
    """rho from (eps, delta) by the CKS conversion; ``count_share`` of it for the task counts; the rest split
    evenly over ``rounds`` releases of per-user budget beta each (a beta-budget round is beta-zCDP)."""
    eps, delta = check_eps(eps), check_delta(delta)
    if not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise PrivacyParameterError(f"rounds must be a positive integer, got {rounds!r}")
    try:
        count_share = float(count_share)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"count_share must be a number in [0, 1), got {count_share!r}") from None
    if not 0.0 <= count_share < 1.0:
        raise PrivacyParameterError(f"count_share must lie in [0, 1), got {count_share!r}")
    rho = rho_from_eps_delta(eps, delta)
    rho_counts = count_share * rho
    beta = (rho - rho_counts) / rounds
    return BudgetPlan(eps, delta, rho, rho_counts, beta, int(rounds))


def eps_spent(ledger: Ledger, delta: float) -> float:
    """(eps, delta)-DP implied by what the ledger has spent (CKS conversion)."""
    return eps_from_rho_delta(ledger.spent, delta)


# =========================================================================== private counts
def opendp_sigma(sigma: float, charge, target: float) -> tuple[float, float]:
    """The smallest sigma' >= ``sigma`` (up to a relative 1e-12 step) with ``charge(sigma') <= target``,
    and that charge. ``charge(s)`` is an OpenDP privacy map's rho at noise scale s; OpenDP's float maps
    add the grid's rounding to the sensitivity, so the textbook sigma can overshoot its share by a
    relative ~1e-13, which this removes. Returns (sigma', rho)."""
    s = float(sigma)
    for _ in range(60):
        c = float(charge(s))
        if c <= target:
            return s, c
        s *= math.sqrt(c / target) * (1.0 + 1e-12)
    raise AssertionError("could not calibrate the noise scale to its budget share")  # pragma: no cover


def count_charge(sigma: float, n_tasks: int, count_clip: float) -> float:
    """OpenDP's rho for the noisy counts at scale sigma: float Gaussian on the m task counts (L2
    sensitivity sqrt(count_clip)) plus the discrete Gaussian on the user count (sensitivity 1)."""
    r_tasks = opendp_charge(gaussian_float_measurement(sigma, n_tasks), math.sqrt(count_clip))[0]
    r_users = opendp_charge(gaussian_measurement(sigma), 1)[0]
    return r_tasks + r_users


def private_task_counts(
    data: MultiTaskData,
    rho: float,
    noise: NoiseSource | None = None,
    ledger: Ledger | None = None,
    count_clip: float = 32.0,
) -> tuple[np.ndarray, float, float]:
    """Noisy task sizes (clamped to >= 1) and a noisy number of users, at zCDP cost ``rho``.

    Each user's vector of task memberships (a 1 per task) is clipped to L2 norm sqrt(count_clip), i.e. a user
    with more than ``count_clip`` tasks adds min(1, sqrt(count_clip/|Omega^j|)) to each; the user also adds 1
    to the user count. L2 sensitivity: sqrt(count_clip + 1), split as sqrt(count_clip) on the (fractional)
    task counts, which get OpenDP's float Gaussian, and 1 on the (integer) user count, which gets the
    discrete Gaussian, both at the same sigma (sigma^2 = (count_clip + 1) / (2 rho), see
    :func:`opendp_sigma`): the charge is the sum of OpenDP's two maps. ``noise``: the DP noise source
    (default secure; a numpy Generator is refused). Returns (n_hat, n_users_hat, sigma).
    """
    rho = check_rho(rho, "rho for the task counts")
    count_clip = check_bound(count_clip, "count_clip")
    noise = resolve_noise(noise)
    deg = data.user_counts.astype(float)
    contrib = np.minimum(1.0, np.sqrt(count_clip / np.maximum(deg, 1.0)))
    exact = np.bincount(data.task_idx, weights=contrib[data.user_idx], minlength=data.n_tasks)
    sens = math.sqrt(count_clip + 1.0)
    m = data.n_tasks
    sigma, charge = opendp_sigma(gaussian_sigma(rho, sens), lambda s: count_charge(s, m, count_clip), rho)
    if ledger is not None:
        ledger.charge(LedgerEntry("task-counts", charge, sigma=sigma,
                                  note=f"m={m} task counts (OpenDP float Gaussian) + user count (discrete "
                                       f"Gaussian), L2 sensitivity {sens:.4g}",
                                  params={"count_clip": count_clip, "n_tasks": m}))
    noisy = noise.gaussian_float(exact, sigma)
    n_users_hat = float(noise.gaussian_int(np.array([data.n_users]), sigma)[0])
    return np.maximum(noisy, 1.0), max(n_users_hat, 1.0), sigma


# =========================================================================== weights
def adaptive_weights(counts: Any, mu: float, beta: float, n_users: float, beta_bar: float = 1.0) -> np.ndarray:
    """omega_i = n_i^-mu / sqrt(sum_i' n_i'^(1 - 2 mu) / (n beta_bar)), i.e. omega_i ~ n_i^-mu with
    sum_i n_i omega_i^2 = n * beta_bar, where beta_bar = ``beta_bar`` * beta (a fraction of the per-user
    budget). Counts are clamped to >= 1. mu = 0 gives uniform weights."""
    counts = np.maximum(np.asarray(counts, dtype=float), 1.0)
    if counts.ndim != 1 or counts.size == 0 or not np.all(np.isfinite(counts)):
        raise DDSSPError("counts must be a non-empty 1-D array of finite numbers")
    try:
        mu = float(mu)
    except (TypeError, ValueError):
        raise DDSSPError(f"mu must be a number, got {mu!r}") from None
    if not (math.isfinite(mu) and 0.0 <= mu <= 4.0):
        raise DDSSPError(f"mu must lie in [0, 4] (0 = uniform, 1/4 or 1/2 recommended), got {mu!r}")
    beta = check_rho(beta, "beta")
    beta_bar = check_bound(beta_bar, "beta_bar")
    n_users = check_bound(n_users, "n_users")
    raw = counts ** (-mu)
    scale2 = n_users * beta_bar * beta / np.sum(counts * raw**2)
    return raw * math.sqrt(scale2)


def user_budgets(user_idx: np.ndarray, w: np.ndarray, n_users: int) -> np.ndarray:
    """sum_{i in Omega^j} w_ij^2 per user j."""
    return np.bincount(user_idx, weights=np.asarray(w, dtype=float) ** 2, minlength=n_users)


def per_user_weights(
    task_idx: np.ndarray,
    user_idx: np.ndarray,
    omega: np.ndarray,
    beta: float,
    n_users: int | None = None,
    mode: str = "clip",
) -> np.ndarray:
    """Entry weights w_ij with max_j sum_i w_ij^2 <= beta, exactly (in floating point).

    mode="clip":      w_ij = omega_i * min(1, sqrt(beta / sum_{i' in Omega^j} omega_i'^2))   (the paper)
    mode="normalize": w_ij = omega_i * sqrt(beta / sum_{i' in Omega^j} omega_i'^2)   (every user spends beta)
    A final rescale of any user whose float sum still exceeds beta makes the bound hold exactly.
    """
    if mode not in PER_USER_MODES:
        raise DDSSPError(f"per-user mode must be one of {PER_USER_MODES}, got {mode!r}")
    beta = check_rho(beta, "beta")
    omega = np.asarray(omega, dtype=float)
    if omega.ndim != 1 or not np.all(np.isfinite(omega)) or np.any(omega < 0):
        raise DDSSPError("task weights omega must be finite and non-negative")
    task_idx = np.asarray(task_idx, dtype=np.int64)
    user_idx = np.asarray(user_idx, dtype=np.int64)
    n = int(n_users if n_users is not None else user_idx.max(initial=-1) + 1)
    w0 = omega[task_idx]
    S = user_budgets(user_idx, w0, n)
    with np.errstate(divide="ignore"):
        f = np.sqrt(beta / S)
    f[~np.isfinite(f)] = 0.0  # users with no (or zero-weight) entries
    if mode == "clip":
        f = np.minimum(1.0, f)
    w = w0 * f[user_idx]
    for _ in range(50):  # safety rescale against float rounding
        s = user_budgets(user_idx, w, n)
        over = s > beta
        if not np.any(over):
            return w
        g = np.ones(n)
        g[over] = np.sqrt(beta / s[over]) * (1.0 - 8 * np.finfo(float).eps)
        w = w * g[user_idx]
    raise AssertionError("per-user weights could not be brought under the budget")  # pragma: no cover


def allocate_weights(
    data: MultiTaskData,
    beta: float,
    *,
    allocation: str = "adaptive",
    mu: float = 0.5,
    counts: np.ndarray | None = None,
    n_users_hat: float | None = None,
    beta_bar: float = 1.0,
    per_user: str = "normalize",
    k: int | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Entry weights for one of the allocation strategies (all satisfy max_j sum_i w_ij^2 <= beta):

    - "adaptive": omega_i ~ n_hat_i^-mu (:func:`adaptive_weights`) then :func:`per_user_weights`;
    - "uniform": each user keeps ``k`` of their entries uniformly at random, weight sqrt(beta / k);
    - "tail": each user keeps their ``k`` entries of smallest noisy count, weight sqrt(beta / k).
    Dropped entries get weight 0. ``counts`` (noisy, or declared public) are needed for "adaptive" (unless
    per_user="normalize" and mu=0) and "tail".
    """
    if allocation not in ALLOCATIONS:
        raise DDSSPError(f"allocation must be one of {ALLOCATIONS}, got {allocation!r}")
    beta = check_rho(beta, "beta")
    if allocation == "adaptive":
        if counts is None:
            if per_user == "normalize" and float(mu) == 0.0:
                omega = np.ones(data.n_tasks)
            else:
                raise DDSSPError("adaptive weights need task counts (noisy or declared public)")
        else:
            omega = adaptive_weights(counts, mu, beta, n_users_hat if n_users_hat else data.n_users, beta_bar)
        return per_user_weights(data.task_idx, data.user_idx, omega, beta, data.n_users, per_user)
    if k is None or not isinstance(k, (int, np.integer)) or k < 1:
        raise DDSSPError(f"{allocation} sampling needs k >= 1 entries per user, got {k!r}")
    if allocation == "uniform":
        if rng is None:
            raise DDSSPError("uniform sampling needs a random generator")
        key = rng.random(data.n_entries)
    else:
        if counts is None:
            raise DDSSPError("tail sampling needs task counts (noisy or declared public)")
        counts = np.asarray(counts, dtype=float)
        tie = rng.random(data.n_entries) * 1e-9 if rng is not None else 0.0
        key = counts[data.task_idx] + tie
    order = np.lexsort((key, data.user_idx))  # by user, then by key
    rank = np.empty(data.n_entries, dtype=np.int64)
    starts = np.searchsorted(data.user_idx[order], data.user_idx[order], side="left")
    rank[order] = np.arange(data.n_entries) - starts
    keep = rank < k
    w = np.where(keep, math.sqrt(beta / k), 0.0)
    return _exact_cap(data, w, beta)


def _exact_cap(data: MultiTaskData, w: np.ndarray, beta: float) -> np.ndarray:
    """Rescale users whose float sum of squares exceeds beta (rounding only)."""
    for _ in range(50):
        s = user_budgets(data.user_idx, w, data.n_users)
        over = s > beta
        if not np.any(over):
            return w
        g = np.ones(data.n_users)
        g[over] = np.sqrt(beta / s[over]) * (1.0 - 8 * np.finfo(float).eps)
        w = w * g[data.user_idx]
    raise AssertionError("weights could not be brought under the budget")  # pragma: no cover


def check_weights(data: MultiTaskData, w: np.ndarray, beta: float) -> None:
    """Raise unless the entry weights are finite, >= 0 and within the per-user budget beta."""
    w = np.asarray(w, dtype=float)
    if w.shape != (data.n_entries,):
        raise DDSSPError(f"weights must have one value per entry ({data.n_entries}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise DDSSPError("weights must be finite and non-negative")
    s = user_budgets(data.user_idx, w, data.n_users)
    if s.size and s.max() > beta:
        raise PrivacyParameterError(
            f"weights exceed the per-user budget: max_j sum_i w_ij^2 = {s.max():.6g} > beta = {beta:.6g}"
        )


# =========================================================================== Algorithm 1: weighted SSP
def psd_project(A: np.ndarray) -> np.ndarray:
    """Nearest PSD matrices (batched, Frobenius): negative eigenvalues set to 0."""
    vals, vecs = np.linalg.eigh(A)
    vals = np.maximum(vals, 0.0)
    return (vecs * vals[..., None, :]) @ np.swapaxes(vecs, -1, -2)


def weighted_stats(data: MultiTaskData, w: np.ndarray, X: np.ndarray | None = None,
                   y: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A_i = sum_j w_ij x_ij x_ij^T (m, d, d) and b_i = sum_j w_ij y_ij x_ij (m, d); exact, not private."""
    X = data.X if X is None else X
    y = data.y if y is None else y
    d = X.shape[1]
    W = _task_matrix(data.task_idx, np.asarray(w, dtype=float), data.n_tasks)
    outer = (X[:, :, None] * X[:, None, :]).reshape(-1, d * d)
    A = np.asarray(W @ outer).reshape(data.n_tasks, d, d)
    b = np.asarray(W @ (X * y[:, None]))
    return A, b


def solve_ridge(A: np.ndarray, b: np.ndarray, ridge: float) -> np.ndarray:
    """theta_i = (A_i + ridge I)^+ b_i, batched."""
    d = A.shape[-1]
    M = A + ridge * np.eye(d)
    return np.einsum("mij,mj->mi", np.linalg.pinv(M, hermitian=True), b)


def weighted_ridge(data: MultiTaskData, w: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """Non-private weighted multi-task ridge: theta_i = (sum_j w_ij x x^T + ridge I)^+ sum_j w_ij y x."""
    A, b = weighted_stats(data, w)
    return solve_ridge(A, b, ridge)


def noisy_symmetric(A: np.ndarray, sigma: float, noise: NoiseSource) -> np.ndarray:
    """The (m, d, d) symmetric matrices A with iid N(0, sigma^2) noise on each upper triangle (with the
    diagonal; one ``noise.gaussian_float`` call on the stacked triangles), mirrored below."""
    d = A.shape[-1]
    iu = np.triu_indices(d)
    upper = noise.gaussian_float(A[:, iu[0], iu[1]], sigma)
    out = np.zeros_like(A, dtype=float)
    out[:, iu[0], iu[1]] = upper
    out[:, iu[1], iu[0]] = upper
    return out


def ssp_charge(sigma: float, size: int, sens: float) -> float:
    """OpenDP's rho for ``size`` float Gaussian entries at scale sigma and L2 sensitivity ``sens``."""
    return opendp_charge(gaussian_float_measurement(sigma, size), float(sens))[0]


def weighted_ssp(
    data: MultiTaskData,
    w: np.ndarray,
    beta: float,
    clip_x: float,
    clip_star: float,
    ridge: float,
    noise: NoiseSource | None = None,
    ledger: Ledger | None = None,
    X: np.ndarray | None = None,
    round: int | None = None,
    return_stats: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 (task-weighted SSP), zCDP cost beta (charged to ``ledger`` before any noise is drawn).

    x clipped to ||x|| <= clip_x, y to |y| <= clip_x clip_star;
    A_i = sum_j w_ij x x^T + clip_x^2 Xi_i (Xi_i symmetric, upper triangle iid N(0, 1)),
    b_i = sum_j w_ij y x + clip_x^2 clip_star xi_i;
    theta_i = (PSD(A_i) + ridge I)^+ b_i  (the ridge is data-independent and added after the noise).
    Sensitivity: removing user j moves the stacked upper triangles of (A_i) by at most
    sqrt(sum_i w_ij^2) clip_x^2 <= sqrt(beta) clip_x^2 in L2, so each release costs beta/2; the same for b.
    ``X`` replaces data.X (DP-ALS passes the user embeddings here). ``return_stats=True`` also returns the
    noisy (A_hat, b_hat) (already released quantities; used by the calibration tests).
    ``noise``: the DP noise source (default secure; a numpy Generator is refused); the sigmas are the
    textbook ones nudged by :func:`opendp_sigma` so that OpenDP's maps give exactly beta/2 or less each.
    """
    beta = check_rho(beta, "beta")
    clip_x = check_bound(clip_x, "clip_x (declared bound on ||x||)")
    clip_star = check_bound(clip_star, "clip_star (declared bound: |y| <= clip_x * clip_star)")
    try:
        ridge = float(ridge)
    except (TypeError, ValueError):
        raise DDSSPError(f"ridge must be a number >= 0, got {ridge!r}") from None
    if not (math.isfinite(ridge) and ridge >= 0):
        raise DDSSPError(f"ridge must be a finite number >= 0, got {ridge!r}")
    check_weights(data, w, beta)
    X = data.X if X is None else np.asarray(X, dtype=float)
    if X.shape[1] == 0:
        raise DDSSPError("weighted SSP needs at least one feature")
    Xc = clip_rows(X, clip_x)
    yc = np.clip(data.y, -clip_x * clip_star, clip_x * clip_star)
    noise = resolve_noise(noise)
    A, b = weighted_stats(data, w, Xc, yc)
    m, d = data.n_tasks, X.shape[1]
    size_A, size_b = m * d * (d + 1) // 2, m * d
    sens_A = math.sqrt(beta) * clip_x**2
    sens_b = math.sqrt(beta) * clip_x * clip_x * clip_star
    sigma_A, rho_A = opendp_sigma(clip_x**2, lambda s: ssp_charge(s, size_A, sens_A), beta / 2.0)
    sigma_b, rho_b = opendp_sigma(clip_x**2 * clip_star, lambda s: ssp_charge(s, size_b, sens_b), beta / 2.0)
    if ledger is not None:
        ledger.charge(LedgerEntry(
            "ssp-round", rho_A + rho_b, sigma=sigma_A, round=round,
            note=f"A_i (sigma={sigma_A:.4g}) and b_i (sigma={sigma_b:.4g}), per-user beta={beta:.6g}",
            params={"sigma_b": sigma_b, "sens_A": sens_A, "sens_b": sens_b, "size_A": size_A, "size_b": size_b},
        ))
    A_hat = noisy_symmetric(A, sigma_A, noise)
    b_hat = noise.gaussian_float(b, sigma_b)
    theta = solve_ridge(psd_project(A_hat), b_hat, ridge)
    return (theta, A_hat, b_hat) if return_stats else theta


# =========================================================================== Algorithm 2: noisy GD
def weighted_noisy_gd(
    data: MultiTaskData,
    w: np.ndarray,
    beta: float,
    steps: int,
    grad_clip: float,
    step_sizes: np.ndarray,
    radius: float,
    noise: NoiseSource | None = None,
    ledger: Ledger | None = None,
    ridge: float = 0.0,
    theta0: np.ndarray | None = None,
    average_last: float = 0.5,
) -> np.ndarray:
    """Algorithm 2 (task-weighted noisy GD) for the squared loss 1/2 (theta_i . x - y)^2, zCDP cost beta.

    Every step: per-example gradients clipped to ``grad_clip``, weighted and summed per task,
    plus grad_clip sqrt(T/2) N(0, I) noise (each step costs beta/T: the stacked sum moves by at most
    sqrt(beta) grad_clip when one user is removed), plus the data-independent ridge gradient, then a step
    theta_i -= step_sizes[i] * g_i and projection onto the ball of radius ``radius``.
    Returns the average of the last ``average_last`` fraction of iterates (post-processing).
    Each step's noise is OpenDP's float Gaussian on the summed gradients themselves (one
    ``noise.gaussian_float`` call of m d entries per step; default secure source); its charge is
    OpenDP's map, sigma nudged by :func:`opendp_sigma` so that T steps cost at most beta.
    """
    beta = check_rho(beta, "beta")
    if not isinstance(steps, (int, np.integer)) or steps < 1:
        raise DDSSPError(f"steps must be a positive integer, got {steps!r}")
    grad_clip = check_bound(grad_clip, "grad_clip")
    radius = check_bound(radius, "radius")
    check_weights(data, w, beta)
    m, d = data.n_tasks, data.n_features
    if d == 0:
        raise DDSSPError("noisy GD needs at least one feature")
    noise = resolve_noise(noise)
    step_sizes = np.broadcast_to(np.asarray(step_sizes, dtype=float), (m,))
    sens = math.sqrt(beta) * grad_clip
    sigma, per = opendp_sigma(grad_clip * math.sqrt(steps / 2.0), lambda s: ssp_charge(s, m * d, sens),
                              beta / steps)
    if ledger is not None:
        for t in range(steps):
            ledger.charge(LedgerEntry("gd-step", per, sigma=sigma, round=t, params={"sens": sens, "size": m * d}))
    W = _task_matrix(data.task_idx, np.asarray(w, dtype=float), m)
    theta = np.zeros((m, d)) if theta0 is None else np.array(theta0, dtype=float)
    X, y = data.X, data.y
    keep_from = steps - max(1, int(round(average_last * steps)))
    acc, nacc = np.zeros((m, d)), 0
    for t in range(steps):
        resid = np.einsum("ed,ed->e", X, theta[data.task_idx]) - y
        G = resid[:, None] * X
        G = clip_rows(G, grad_clip)
        g = noise.gaussian_float(np.asarray(W @ G), sigma) + ridge * theta
        theta = theta - step_sizes[:, None] * g
        norms = np.linalg.norm(theta, axis=1)
        theta *= np.minimum(1.0, radius / np.maximum(norms, 1e-300))[:, None]
        if t >= keep_from:
            acc += theta
            nacc += 1
    return acc / nacc


# =========================================================================== DP-ALS (Appendix D)
def user_solve(data: MultiTaskData, U: np.ndarray, ridge: float) -> np.ndarray:
    """Exact per-user ridge: v_j = (sum_{i in Omega^j} u_i u_i^T + ridge I)^-1 sum_i y_ij u_i (not private:
    the user embeddings are never released)."""
    r = U.shape[1]
    Ue = U[data.task_idx]
    P = sparse.csr_matrix((np.ones(data.n_entries), (data.user_idx, np.arange(data.n_entries))),
                          shape=(data.n_users, data.n_entries))
    G = np.asarray(P @ (Ue[:, :, None] * Ue[:, None, :]).reshape(-1, r * r)).reshape(-1, r, r)
    h = np.asarray(P @ (Ue * data.y[:, None]))
    return np.linalg.solve(G + ridge * np.eye(r), h[..., None])[..., 0]


def als_predict(U: np.ndarray, V: np.ndarray, task_idx: np.ndarray, user_idx: np.ndarray) -> np.ndarray:
    return np.einsum("er,er->e", U[task_idx], V[user_idx])


def dp_als(
    data: MultiTaskData,
    eps: float | None,
    delta: float,
    rank: int,
    rounds: int,
    rng: np.random.Generator,
    *,
    noise: NoiseSource | None = None,
    allocation: str = "adaptive",
    mu: float = 0.25,
    k: int | None = None,
    count_share: float = 0.15,
    count_clip: float = 32.0,
    clip_x: float = 1.0,
    clip_star: float = 1.0,
    item_ridge: float | None = None,
    user_ridge: float = 0.1,
    beta_bar: float = 1.0,
    per_user: str = "normalize",
    public_counts: np.ndarray | None = None,
    init_scale: float | None = None,
) -> tuple[np.ndarray, Ledger, BudgetPlan]:
    """DP alternating least squares (Algorithm 3 of the paper's Appendix D). Tasks are items.

    Pre-processing: noisy item counts (cost rho_counts) when the allocation needs them. Then ``rounds``
    times: exact user solves V given U (never released), and a private item solve U = Algorithm 1 with
    x_ij = v_j (clipped to clip_x), labels y_ij (clipped to clip_x clip_star), per-user budget beta.
    Total zCDP: rho_counts + rounds * beta = rho(eps, delta). ``eps=None`` runs non-privately
    (exact weighted item solves with unit weights; for reference only). Returns (U, ledger, plan).
    ``rng`` draws only the initial U and the uniform / tail sampling keys (not privacy noise); the DP
    noise comes from ``noise`` (default :class:`~ddssp.dp.noise.SecureNoise`).
    """
    if not isinstance(rank, (int, np.integer)) or rank < 1:
        raise DDSSPError(f"rank must be a positive integer, got {rank!r}")
    if not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise DDSSPError(f"rounds must be a positive integer, got {rounds!r}")
    if allocation not in ALLOCATIONS:
        raise DDSSPError(f"allocation must be one of {ALLOCATIONS}, got {allocation!r}")
    item_ridge = clip_x**2 * math.sqrt(rank) if item_ridge is None else float(item_ridge)
    scale = init_scale if init_scale is not None else 1.0 / math.sqrt(rank)
    U = rng.normal(0.0, scale, size=(data.n_tasks, rank))
    if eps is None:
        w = np.ones(data.n_entries)
        for _ in range(rounds):
            V = user_solve(data, U, user_ridge)
            A, b = weighted_stats(data, w, V[data.user_idx], data.y)
            U = solve_ridge(A, b, user_ridge)
        return U, Ledger(1.0), BudgetPlan(math.inf, delta, math.inf, 0.0, math.inf, rounds)
    noise = resolve_noise(noise)
    needs_counts = public_counts is None and (
        allocation == "tail" or (allocation == "adaptive" and not (per_user == "normalize" and mu == 0)))
    plan = plan_budget(eps, delta, rounds, count_share if needs_counts else 0.0)
    ledger = Ledger(plan.rho_total)
    counts, n_hat = None, None
    if public_counts is not None:
        counts = np.maximum(np.asarray(public_counts, dtype=float), 1.0)
        if counts.shape != (data.n_tasks,):
            raise DDSSPError(f"public_counts must have one count per task ({data.n_tasks})")
        n_hat = float(data.n_users)
    elif needs_counts:
        counts, n_hat, _ = private_task_counts(data, plan.rho_counts, noise, ledger, count_clip)
    if allocation != "adaptive" and k is None:
        raise DDSSPError(f"allocation {allocation!r} needs k (entries kept per user)")
    w = allocate_weights(data, plan.beta, allocation=allocation, mu=mu, counts=counts, n_users_hat=n_hat,
                         beta_bar=beta_bar, per_user=per_user, k=k, rng=rng)
    for t in range(rounds):
        V = user_solve(data, U, user_ridge)
        U = weighted_ssp(data, w, plan.beta, clip_x, clip_star, item_ridge, noise, ledger,
                         X=V[data.user_idx], round=t)
    return U, ledger, plan


# =========================================================================== synthetic data
def synthetic_multitask(
    n_tasks: int = 100,
    n_features: int = 5,
    n_users: int = 10_000,
    a: float = 1.0,
    tasks_per_user: float = 20.0,
    noise: float = 1e-3,
    rng: np.random.Generator | None = None,
) -> tuple[MultiTaskData, np.ndarray]:
    """Appendix C: u_j, theta_i ~ N(0, I) projected to the unit ball; x_ij = u_j; y_ij = u_j.theta_i + N(0,
    noise^2); task inclusion probability q_i with pdf ~ a x^(a-1) on [0, 1], scaled so that sum_i q_i =
    tasks_per_user (capped at 1). Returns (data, true theta)."""
    rng = np.random.default_rng() if rng is None else rng
    if a <= 0:
        raise DDSSPError(f"power-law parameter a must be positive, got {a!r}")
    if not 0 < tasks_per_user <= n_tasks:
        raise DDSSPError("tasks_per_user must lie in (0, n_tasks]")
    U = clip_rows(rng.normal(size=(n_users, n_features)), 1.0)
    theta = clip_rows(rng.normal(size=(n_tasks, n_features)), 1.0)
    q = rng.random(n_tasks) ** (1.0 / a)
    q = np.minimum(q * tasks_per_user / q.sum(), 1.0)
    member = rng.random((n_tasks, n_users)) < q[:, None]
    t, u = np.nonzero(member)
    y = np.einsum("ed,ed->e", U[u], theta[t]) + rng.normal(0.0, noise, size=t.size)
    return MultiTaskData.from_entries(t, u, U[u], y, n_tasks=n_tasks, n_users=n_users), theta


def synthetic_ratings(
    n_items: int = 400,
    n_users: int = 3000,
    rank: int = 5,
    ratings_per_user: float = 25.0,
    zipf: float = 1.0,
    noise: float = 0.1,
    rng: np.random.Generator | None = None,
) -> MultiTaskData:
    """A long-tail ratings matrix: item popularity p_i ~ (i+1)^-zipf (scaled so users rate
    ``ratings_per_user`` items on average), ratings y = u_i.v_j + N(0, noise^2) with u_i, v_j ~ N(0, I/rank)
    projected to the unit ball (so |y| <= 1 + noise tails). Items are tasks; no features (X has 0 columns)."""
    rng = np.random.default_rng() if rng is None else rng
    p = (np.arange(n_items) + 1.0) ** (-zipf)
    p = np.minimum(p * ratings_per_user / p.sum(), 1.0)
    p = p[rng.permutation(n_items)]
    member = rng.random((n_items, n_users)) < p[:, None]
    t, u = np.nonzero(member)
    Ui = clip_rows(rng.normal(0.0, 1.0 / math.sqrt(rank), size=(n_items, rank)) * 1.5, 1.0)
    Vj = clip_rows(rng.normal(0.0, 1.0 / math.sqrt(rank), size=(n_users, rank)) * 1.5, 1.0)
    y = np.einsum("er,er->e", Ui[t], Vj[u]) + rng.normal(0.0, noise, size=t.size)
    return MultiTaskData.from_entries(t, u, np.zeros((t.size, 0)), y, n_tasks=n_items, n_users=n_users)
