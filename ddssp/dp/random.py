"""The random source for everything that is not DP noise (fitting, synthetic sampling, benchmarks)."""

from __future__ import annotations

import numpy as np

from ddssp.errors import PrivacyParameterError


def make_rng(seed: int | np.random.Generator | None = None) -> np.random.Generator:
    """One Generator for a whole run (fitting, synthetic sampling, benchmarks; never DP noise).

    Parameters
    ----------
    seed : int or numpy.random.Generator, optional
        None draws fresh OS entropy; an int makes a run reproducible; a Generator is returned as is.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    PrivacyParameterError
        For a seed that is not a non-negative integer, a Generator or None.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (not isinstance(seed, (int, np.integer)) or seed < 0):
        raise PrivacyParameterError(f"seed must be a non-negative integer or None, got {seed!r}")
    return np.random.default_rng(seed)
