"""Multi-task learning under user-level DP with adaptive budget allocation (Krichene et al.): the data
model, the budget plan, the private task counts and the entry weights.

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
- in :mod:`.regression`: :func:`~.regression.weighted_ssp` (Algorithm 1) and
  :func:`~.regression.weighted_noisy_gd` (Algorithm 2); in :mod:`.als`: :func:`~.als.dp_als` (Appendix D);
- in :mod:`.synthetic`: :func:`~.synthetic.synthetic_multitask` and :func:`~.synthetic.synthetic_ratings`,
  the generators used by the experiments.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from ddssp.dp import (
    Ledger,
    LedgerEntry,
    check_bound,
    check_delta,
    check_eps,
    check_rho,
    eps_from_rho_delta,
    gaussian_sigma,
    rho_from_eps_delta,
)
from ddssp.dp.measurements import gaussian_float_measurement, gaussian_measurement, opendp_charge
from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.errors import DataError, DDSSPError, PrivacyParameterError

ALLOCATIONS = ("adaptive", "uniform", "tail")
PER_USER_MODES = ("clip", "normalize")


# =========================================================================== data model
class MultiTaskData:
    """Users, tasks, the membership graph and one (x, y) per (task, user) entry.

    Use :meth:`from_entries` or :meth:`from_frame` when your rows are in another order than the one
    described below.

    Parameters
    ----------
    users, tasks : sequence
        Unique user and task labels.
    X : array-like
        Features, shape (abs(Omega), d) (d may be 0, e.g. for ratings), in the order of the CSR non-zeros
        of ``membership`` (task-major, users sorted within a task).
    y : array-like
        Labels, shape (abs(Omega),), in the same order.
    membership : scipy.sparse matrix
        Shape (m tasks, n users); its non-zero pattern is Omega.
    feature_names : list of str, optional
        Names of the columns of X.

    Raises
    ------
    DataError
        For labels that are not unique, shapes that do not match, duplicate or unsorted membership
        entries, or values that are not finite.
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
    ) -> MultiTaskData:
        """Build from integer entry lists in any order (rows are sorted into CSR order).

        Parameters
        ----------
        task_idx, user_idx : array-like of int
            The task and user of each entry.
        X : array-like
            One feature row per entry.
        y : array-like
            One label per entry.
        n_tasks, n_users : int, optional
            The numbers of tasks and users (default: from the labels, else the largest index + 1).
        tasks, users : sequence, optional
            Task and user labels (default: 0..m-1, 0..n-1).
        feature_names : list of str, optional
            Names of the columns of X.

        Returns
        -------
        MultiTaskData

        Raises
        ------
        DataError
            For lengths that differ, indices out of range, or duplicate (task, user) entries.
        """
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
    ) -> MultiTaskData:
        """From a long table with one row per (user, task): columns user, task, features..., y.

        Parameters
        ----------
        df : pandas.DataFrame
            The table.
        user, task, target : str
            The user, task and label columns.
        features : sequence of str, optional
            The feature columns; every other column by default.

        Returns
        -------
        MultiTaskData
            User and task labels sorted.

        Raises
        ------
        DataError
            For missing columns, missing user/task values, or non-numeric features or target.
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
        """The number of tasks m."""
        return self.membership.shape[0]

    @property
    def n_users(self) -> int:
        """The number of users n."""
        return self.membership.shape[1]

    @property
    def n_entries(self) -> int:
        """The number of entries abs(Omega)."""
        return self.membership.nnz

    @property
    def n_features(self) -> int:
        """The number of features d."""
        return self.X.shape[1]

    @property
    def task_counts(self) -> np.ndarray:
        """n_i = |Omega_i| (exact: private, never release it without noise)."""
        return np.diff(self.membership.indptr).astype(np.int64)

    @property
    def user_counts(self) -> np.ndarray:
        """|Omega^j|, the number of tasks of each user."""
        return np.bincount(self.user_idx, minlength=self.n_users).astype(np.int64)

    def subset(self, mask: np.ndarray) -> MultiTaskData:
        """The entries where ``mask`` is true (same users and tasks).

        Parameters
        ----------
        mask : numpy.ndarray
            One boolean per entry.

        Returns
        -------
        MultiTaskData

        Raises
        ------
        DataError
            For a mask of the wrong length.
        """
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_entries,):
            raise DataError(f"mask must have one value per entry ({self.n_entries})")
        return MultiTaskData.from_entries(
            self.task_idx[mask],
            self.user_idx[mask],
            self.X[mask],
            self.y[mask],
            tasks=self.tasks,
            users=self.users,
            feature_names=self.feature_names,
        )

    def split(self, test_fraction: float, rng: np.random.Generator) -> tuple[MultiTaskData, MultiTaskData]:
        """Random split of the entries into (train, test).

        Parameters
        ----------
        test_fraction : float
            The expected share of test entries, in (0, 1).
        rng : numpy.random.Generator
            The random source (not privacy noise).

        Returns
        -------
        tuple of MultiTaskData
            (train, test).

        Raises
        ------
        DataError
            For a fraction outside (0, 1).
        """
        if not 0.0 < test_fraction < 1.0:
            raise DataError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
        test = rng.random(self.n_entries) < test_fraction
        return self.subset(~test), self.subset(test)

    def __repr__(self) -> str:
        return (
            f"MultiTaskData(tasks={self.n_tasks}, users={self.n_users}, entries={self.n_entries}, "
            f"features={self.n_features})"
        )


# =========================================================================== budget
@dataclass(frozen=True)
class BudgetPlan:
    """How a target (eps, delta) is split: rho_total = rho_counts + rounds * beta.

    Attributes
    ----------
    eps, delta : float
        The target budget.
    rho_total : float
        Its zCDP equivalent (CKS).
    rho_counts : float
        The share for the noisy task counts.
    beta : float
        The per-user budget of each round.
    rounds : int
        The number of releases.
    """

    eps: float
    delta: float
    rho_total: float
    rho_counts: float
    beta: float
    rounds: int

    def to_dict(self) -> dict[str, Any]:
        """The plan as a JSON-ready dict (``rho`` is ``rho_total``).

        Returns
        -------
        dict
        """
        return {
            "eps": self.eps,
            "delta": self.delta,
            "rho": self.rho_total,
            "rho_counts": self.rho_counts,
            "beta": self.beta,
            "rounds": self.rounds,
        }


def plan_budget(eps: float, delta: float, rounds: int = 1, count_share: float = 0.0) -> BudgetPlan:
    """Split a target (eps, delta) between the task counts and the releases.

    rho comes from (eps, delta) by the CKS conversion; ``count_share`` of it goes to the task counts,
    the rest is split evenly over ``rounds`` releases of per-user budget beta each (a beta-budget round
    is beta-zCDP).

    Parameters
    ----------
    eps, delta : float
        The target budget.
    rounds : int
        The number of releases.
    count_share : float
        The share for the task counts, in [0, 1).

    Returns
    -------
    BudgetPlan

    Raises
    ------
    PrivacyParameterError
        For invalid parameters.
    """
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
    """(eps, delta)-DP implied by what a ledger has spent (CKS conversion).

    Parameters
    ----------
    ledger : Ledger
        The ledger.
    delta : float
        The target delta.

    Returns
    -------
    float
    """
    return eps_from_rho_delta(ledger.spent, delta)


# =========================================================================== private counts
def opendp_sigma(sigma: float, charge, target: float) -> tuple[float, float]:
    """The smallest sigma' >= ``sigma`` (up to a relative 1e-12 step) whose charge fits a target.

    OpenDP's float maps add the grid's rounding to the sensitivity, so the textbook sigma can overshoot
    its share by a relative ~1e-13, which this removes.

    Parameters
    ----------
    sigma : float
        The textbook noise scale.
    charge : callable
        ``charge(s)``: an OpenDP privacy map's rho at noise scale s.
    target : float
        The rho the charge must not exceed.

    Returns
    -------
    tuple of float
        (sigma', rho).
    """
    s = float(sigma)
    for _ in range(60):
        c = float(charge(s))
        if c <= target:
            return s, c
        s *= math.sqrt(c / target) * (1.0 + 1e-12)
    raise AssertionError("could not calibrate the noise scale to its budget share")  # pragma: no cover


def count_charge(sigma: float, n_tasks: int, count_clip: float) -> float:
    """OpenDP's rho for the noisy counts at scale sigma.

    The float Gaussian on the m task counts (L2 sensitivity sqrt(count_clip)) plus the discrete
    Gaussian on the user count (sensitivity 1).

    Parameters
    ----------
    sigma : float
        The noise scale.
    n_tasks : int
        The number of tasks m.
    count_clip : float
        The per-user L2^2 clip of the count contributions.

    Returns
    -------
    float
    """
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

    Each user's vector of task memberships (a 1 per task) is clipped to L2 norm sqrt(count_clip), i.e. a
    user with more than ``count_clip`` tasks adds min(1, sqrt(count_clip/abs(Omega^j))) to each; the user
    also adds 1 to the user count. L2 sensitivity: sqrt(count_clip + 1), split as sqrt(count_clip) on
    the (fractional) task counts, which get OpenDP's float Gaussian, and 1 on the (integer) user count,
    which gets the discrete Gaussian, both at the same sigma (sigma^2 = (count_clip + 1) / (2 rho), see
    :func:`opendp_sigma`): the charge is the sum of OpenDP's two maps.

    Parameters
    ----------
    data : MultiTaskData
        The data.
    rho : float
        The zCDP cost.
    noise : NoiseSource, optional
        The DP noise source (default secure; a numpy Generator is refused).
    ledger : Ledger, optional
        Charged before any noise is drawn.
    count_clip : float
        The per-user L2^2 clip.

    Returns
    -------
    n_hat : numpy.ndarray
        Noisy task sizes.
    n_users_hat : float
        Noisy number of users.
    sigma : float
        The noise scale used.
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
        ledger.charge(
            LedgerEntry(
                "task-counts",
                charge,
                sigma=sigma,
                note=f"m={m} task counts (OpenDP float Gaussian) + user count (discrete "
                f"Gaussian), L2 sensitivity {sens:.4g}",
                params={"count_clip": count_clip, "n_tasks": m},
            )
        )
    noisy = noise.gaussian_float(exact, sigma)
    n_users_hat = float(noise.gaussian_int(np.array([data.n_users]), sigma)[0])
    return np.maximum(noisy, 1.0), max(n_users_hat, 1.0), sigma


# =========================================================================== weights
def adaptive_weights(counts: Any, mu: float, beta: float, n_users: float, beta_bar: float = 1.0) -> np.ndarray:
    """Task weights omega_i ~ n_i^-mu with sum_i n_i omega_i^2 = n * beta_bar * beta.

    omega_i = n_i^-mu / sqrt(sum_i' n_i'^(1 - 2 mu) / (n beta_bar beta)). Counts are clamped to >= 1.
    mu = 0 gives uniform weights.

    Parameters
    ----------
    counts : array-like
        Task sizes (noisy or declared public).
    mu : float
        The weight exponent, in [0, 4].
    beta : float
        The per-user budget.
    n_users : float
        The (noisy) number of users.
    beta_bar : float
        The fraction of the per-user budget the weights are scaled to.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For invalid counts or mu.
    """
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
    """sum_{i in Omega^j} w_ij^2 per user j.

    Parameters
    ----------
    user_idx : numpy.ndarray
        The user of each entry.
    w : numpy.ndarray
        The entry weights.
    n_users : int
        The number of users.

    Returns
    -------
    numpy.ndarray
    """
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

    mode="clip": w_ij = omega_i * min(1, sqrt(beta / sum_{i' in Omega^j} omega_i'^2)) (the paper);
    mode="normalize": w_ij = omega_i * sqrt(beta / sum_{i' in Omega^j} omega_i'^2) (every user spends
    beta). A final rescale of any user whose float sum still exceeds beta makes the bound hold exactly.

    Parameters
    ----------
    task_idx, user_idx : numpy.ndarray
        The task and user of each entry.
    omega : numpy.ndarray
        Task weights, finite and non-negative.
    beta : float
        The per-user budget.
    n_users : int, optional
        The number of users (default: the largest index + 1).
    mode : str
        ``"clip"`` or ``"normalize"``.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For an unknown mode or invalid weights.
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
    """Entry weights for one of the allocation strategies (all satisfy max_j sum_i w_ij^2 <= beta).

    - "adaptive": omega_i ~ n_hat_i^-mu (:func:`adaptive_weights`) then :func:`per_user_weights`;
    - "uniform": each user keeps ``k`` of their entries uniformly at random, weight sqrt(beta / k);
    - "tail": each user keeps their ``k`` entries of smallest noisy count, weight sqrt(beta / k).

    Dropped entries get weight 0.

    Parameters
    ----------
    data : MultiTaskData
        The data.
    beta : float
        The per-user budget.
    allocation : str
        ``"adaptive"``, ``"uniform"`` or ``"tail"``.
    mu : float
        Weight exponent (adaptive).
    counts : numpy.ndarray, optional
        Task sizes (noisy, or declared public); needed for "adaptive" (unless per_user="normalize"
        and mu=0) and "tail".
    n_users_hat : float, optional
        The noisy number of users (adaptive; the true one is public otherwise).
    beta_bar : float
        As in :func:`adaptive_weights`.
    per_user : str
        As ``mode`` in :func:`per_user_weights`.
    k : int, optional
        Entries kept per user (uniform / tail).
    rng : numpy.random.Generator, optional
        Sampling keys (uniform / tail; not privacy noise).

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DDSSPError
        For an unknown allocation, missing counts, or a missing k.
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
    """Raise unless the entry weights are finite, >= 0 and within the per-user budget beta.

    Parameters
    ----------
    data : MultiTaskData
        The data.
    w : numpy.ndarray
        One weight per entry.
    beta : float
        The per-user budget.

    Raises
    ------
    DDSSPError
        For a wrong shape, non-finite or negative weights.
    PrivacyParameterError
        When a user's sum of squared weights exceeds beta.
    """
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
