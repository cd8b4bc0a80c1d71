"""The Gaussian and exponential mechanisms' noise scales and zCDP costs, and row clipping.

Nothing here draws noise: sampling is done by :mod:`ddssp.dp.noise` (OpenDP's exact samplers) and
every use is paid through a :class:`~ddssp.dp.accounting.Ledger`. ``exponential_probabilities`` is the
selection law, for tests and analysis.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from scipy import special

from ddssp.dp.params import check_eps, check_rho
from ddssp.errors import PrivacyParameterError


# --------------------------------------------------------------------------- mechanisms
def gaussian_sigma(rho: float, sensitivity: float = 1.0) -> float:
    """Noise scale of the Gaussian mechanism that costs ``rho`` zCDP: sigma = Delta_2 / sqrt(2 rho).

    Parameters
    ----------
    rho : float
        The zCDP cost.
    sensitivity : float
        The L2 sensitivity Delta_2.

    Returns
    -------
    float
    """
    return float(sensitivity) / math.sqrt(2.0 * check_rho(rho))


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """zCDP cost of Gaussian noise of scale ``sigma``: rho = Delta_2^2 / (2 sigma^2).

    Parameters
    ----------
    sigma : float
        The noise scale, positive and finite.
    sensitivity : float
        The L2 sensitivity Delta_2.

    Returns
    -------
    float

    Raises
    ------
    PrivacyParameterError
        For an invalid sigma.
    """
    sigma = float(sigma)
    if not math.isfinite(sigma) or sigma <= 0:
        raise PrivacyParameterError(f"sigma must be positive and finite, got {sigma!r}")
    return float(sensitivity) ** 2 / (2.0 * sigma**2)


def exponential_rho(eps_em: float) -> float:
    """zCDP cost of the exponential mechanism run at parameter eps_em: eps_em^2 / 8.

    Parameters
    ----------
    eps_em : float
        The mechanism's parameter.

    Returns
    -------
    float
    """
    return check_eps(eps_em, "eps_em") ** 2 / 8.0


def exponential_probabilities(scores: Iterable[float], eps_em: float, sensitivity: float) -> np.ndarray:
    """Selection probabilities of the exponential mechanism, P(r) proportional to exp(eps_em * q_r / (2 Delta)).

    Parameters
    ----------
    scores : iterable of float
        The quality scores q_r, finite, at least one.
    eps_em : float
        The mechanism's parameter.
    sensitivity : float
        The scores' sensitivity Delta.

    Returns
    -------
    numpy.ndarray
        One probability per candidate.

    Raises
    ------
    PrivacyParameterError
        For no candidates, non-finite scores or invalid parameters.
    """
    q = np.asarray(list(scores), dtype=float)
    if q.size == 0:
        raise PrivacyParameterError("the exponential mechanism needs at least one candidate")
    if not np.all(np.isfinite(q)):
        raise PrivacyParameterError("exponential mechanism scores must be finite")
    if not sensitivity > 0:
        raise PrivacyParameterError(f"quality sensitivity must be positive, got {sensitivity!r}")
    logits = check_eps(eps_em, "eps_em") * q / (2.0 * float(sensitivity))
    return np.exp(logits - special.logsumexp(logits))


def clip_rows(X: np.ndarray, bound: float) -> np.ndarray:
    """Rows of X scaled down to L2 norm <= ``bound`` (x * min(1, bound / ||x||)); others unchanged.

    The guarantee holds in floating point, whichever way the norm is then computed: a scaled row is
    put a few ulps inside the bound rather than on it.

    Parameters
    ----------
    X : numpy.ndarray
        A 2-D array of rows.
    bound : float
        The largest L2 norm.

    Returns
    -------
    numpy.ndarray
        The clipped rows (float).
    """
    X = np.asarray(X, dtype=float)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    over = norms > bound
    scale = np.ones(len(X))
    scale[over] = bound / norms[over] * (1.0 - 8 * np.finfo(float).eps)
    return X * scale[:, None]
