"""Per-row privacy levels for PDP-OP's experiments: the public privacy specification of the paper's
Section 4 (:func:`privacy_profile`).

Rows fall in three groups, conservatives ~ U[eps_c, eps_m], mediums ~ U[eps_m, eps_l] and liberals at
eps_l, in the paper's proportions (``DEFAULT_FRACTIONS``) or the Jorgensen et al. (2015) ones
(``JORGENSEN_FRACTIONS``). The levels are public: they are drawn from a numpy generator, not from
the DP noise source. The estimators that take them are :mod:`ddssp.estimators.pdp_op`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ddssp.dp import make_rng
from ddssp.errors import DDSSPError, PrivacyParameterError

#: Fractions (conservative, medium, liberal) of the paper's main experiments.
DEFAULT_FRACTIONS = (0.34, 0.43, 0.23)
#: Fractions of the Jorgensen et al. (2015) style setting.
JORGENSEN_FRACTIONS = (0.54, 0.37, 0.09)
#: Privacy levels (eps_c, eps_m, eps_l) of the paper's main experiments.
DEFAULT_LEVELS = (0.01, 0.2, 1.0)
PROFILES = {"default": DEFAULT_FRACTIONS, "jorgensen": JORGENSEN_FRACTIONS}


def privacy_profile(
    n: int,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    levels: Sequence[float] = DEFAULT_LEVELS,
    rng: int | np.random.Generator | None = None,
    size: int | None = None,
) -> np.ndarray:
    """Per-row privacy levels for ``n`` rows (the paper's Section 4 scheme).

    Conservatives ~ U[eps_c, eps_m], mediums ~ U[eps_m, eps_l], liberals = eps_l. The group sizes are
    ``round(f * n)`` by largest remainder (so they add up to n exactly), and the rows are assigned to
    groups in a random order. Use ``fractions=JORGENSEN_FRACTIONS`` (0.54, 0.37, 0.09) for the
    Jorgensen-style setting.

    Parameters
    ----------
    n : int
        The number of rows.
    fractions : sequence of float
        ``(f_c, f_m, f_l)``, non-negative, summing to 1.
    levels : sequence of float
        ``(eps_c, eps_m, eps_l)`` with ``0 < eps_c <= eps_m <= eps_l``.
    rng : int or numpy.random.Generator, optional
        The random source (public levels, not privacy noise).
    size : int, optional
        That many independent profiles.

    Returns
    -------
    numpy.ndarray
        Shape ``(n,)``, or ``(size, n)``.

    Raises
    ------
    DDSSPError
        For an invalid n or fractions.
    PrivacyParameterError
        For invalid levels.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise DDSSPError(f"n must be a positive integer, got {n!r}")
    f = np.asarray(fractions, dtype=float)
    lv = np.asarray(levels, dtype=float)
    if f.shape != (3,) or lv.shape != (3,):
        raise DDSSPError("fractions and levels must each have 3 entries (conservative, medium, liberal)")
    if np.any(~np.isfinite(f)) or np.any(f < 0) or abs(f.sum() - 1.0) > 1e-9:
        raise DDSSPError(f"fractions must be non-negative and sum to 1, got {tuple(f)}")
    if np.any(~np.isfinite(lv)) or lv[0] <= 0 or not (lv[0] <= lv[1] <= lv[2]):
        raise PrivacyParameterError(f"levels must satisfy 0 < eps_c <= eps_m <= eps_l, got {tuple(lv)}")
    rng = make_rng(rng)
    raw = f * n
    counts = np.floor(raw).astype(int)
    short = n - counts.sum()
    if short > 0:
        order = np.argsort(-(raw - counts), kind="stable")
        counts[order[:short]] += 1
    m = 1 if size is None else int(size)
    group = np.repeat(np.arange(3), counts)  # (n,)
    u = rng.random((m, n))
    lo = lv[np.minimum(group, 1)]
    hi = lv[np.minimum(group + 1, 2)]
    eps = lo + (hi - lo) * u  # liberals: lo = hi = eps_l
    eps[:, group == 2] = lv[2]
    # random assignment of rows to groups
    perm = np.argsort(rng.random((m, n)), axis=1)
    eps = np.take_along_axis(eps, perm, axis=1)
    return eps[0] if size is None else eps
