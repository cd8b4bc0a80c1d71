"""The data of multi-task learning under user-level DP: users, tasks, the membership graph and one
(x, y) per (task, user) entry (:class:`MultiTaskData`).

n users, m tasks, a private bipartite graph Omega: user j contributes one example (x_ij, y_ij) to every
task i in Omega^j. Neighbouring data sets differ by ALL entries of one user (user-level DP). The graph
is a scipy.sparse CSR matrix (tasks x users), with one feature row and one label per entry in the CSR
(task-major) order. The package overview is :mod:`ddssp.estimators.multitask`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from ddssp.errors import DataError


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
