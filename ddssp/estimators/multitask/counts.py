"""The private task counts of multi-task learning: noisy task sizes and a noisy number of users.

Each user's task memberships are clipped (:func:`private_task_counts`); the fractional task counts
get OpenDP's float Gaussian mechanism and the user count the discrete Gaussian, at one sigma, and
the charge is the sum of OpenDP's two maps (:func:`count_charge`). OpenDP's float maps add the
grid's rounding to the sensitivity, so :func:`opendp_sigma` nudges a textbook sigma up by a relative
~1e-13 until the map fits its share (the regressions use it too).
"""

from __future__ import annotations

import math

import numpy as np

from ddssp.dp import Ledger, LedgerEntry, check_bound, check_rho, gaussian_sigma
from ddssp.dp.measurements import gaussian_float_measurement, gaussian_measurement, opendp_charge
from ddssp.dp.noise import NoiseSource, resolve_noise
from ddssp.estimators.multitask.model import MultiTaskData


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
