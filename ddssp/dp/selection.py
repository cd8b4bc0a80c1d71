"""The exponential mechanism on the allowed candidates only, deciding for few of them whether they
are allowed.

:meth:`~ddssp.dp.charged.ChargedMechanisms.select` charges the selection, then runs it here when it
is given an ``allowed`` test (AIM: a candidate is allowed when the model it builds fits the size limit). The
output has the distribution of noisy max on the allowed set, so the charge is that of the plain
exponential mechanism.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ddssp.errors import PrivacyParameterError


def restricted_noisy_max(
    scores: np.ndarray, scale: float, noise: Any, allowed: Callable[[int], bool], tries: int
) -> int:
    """Noisy max on the allowed candidates, deciding ``allowed`` for few of them.

    Noisy max over a set T that holds every allowed candidate, redrawn without the drawn candidate
    until it is allowed: given that the draw is allowed, it has P(i) proportional to
    exp(score_i / scale) on the allowed set, and removing a candidate that is not allowed keeps T a
    superset, so the output has exactly the distribution of noisy max on the allowed set. To make a
    draw likely to be allowed, T first leaves out the candidates already found not allowed among the
    highest scores: they are decided from the top until the allowed ones found carry at least as
    much weight exp(score / scale) as the undecided rest. After ``tries`` draws that were not
    allowed, every candidate is decided. The scores only choose which candidates to decide (a
    decision on public information); only the final draw is output.

    Nothing is charged here: the caller charges the exponential mechanism first.

    Parameters
    ----------
    scores : numpy.ndarray
        Finite scores, one per candidate.
    scale : float
        The Gumbel scale (2 * sensitivity / eps_em).
    noise : NoiseSource
        Draws the noise.
    allowed : callable
        ``allowed(i)`` tells whether candidate ``i`` may be output (public information only).
    tries : int
        Draws that were not allowed before every candidate is decided.

    Returns
    -------
    int
        The index of the selected candidate.

    Raises
    ------
    PrivacyParameterError
        When no candidate is allowed.
    """
    weight = np.exp((scores - scores.max()) / scale)
    order = np.argsort(-scores, kind="stable")
    rest = float(weight.sum())
    found, out = 0.0, set()
    for i in order:
        if found >= rest:
            break
        i = int(i)
        rest -= weight[i]
        if allowed(i):
            found += weight[i]
        else:
            out.add(i)
    for _ in range(tries + 1):
        keep = [i for i in range(scores.size) if i not in out]
        if not keep:
            break
        k = keep[noise.noisy_max(scores[keep], scale)]
        if allowed(k):
            return k
        out.add(k)
    keep = [i for i in range(scores.size) if i not in out and allowed(i)]
    if not keep:
        raise PrivacyParameterError("the exponential mechanism needs at least one allowed candidate")
    return keep[noise.noisy_max(scores[keep], scale)]
