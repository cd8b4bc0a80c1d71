"""Checks for privacy parameters and declared bounds: one clear :class:`PrivacyParameterError` each."""

from __future__ import annotations

import math
from typing import Any

from ddssp.errors import PrivacyParameterError


# --------------------------------------------------------------------------- parameter checks
def check_positive(value: Any, name: str, hint: str = "") -> float:
    """A value as a positive finite float, else one error naming it.

    Used for privacy parameters and for declared bounds.

    Parameters
    ----------
    value : any
        The value to check (bool is refused).
    name : str
        Its name, for the message.
    hint : str
        What it is, for the message (e.g. "a declared bound").

    Returns
    -------
    float

    Raises
    ------
    PrivacyParameterError
        For a value that is not a positive finite number.
    """
    what = f" ({hint})" if hint else ""
    if isinstance(value, bool):
        raise PrivacyParameterError(f"{name} must be a number{what}, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"{name} must be a number{what}, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise PrivacyParameterError(f"{name} must be a positive finite number{what}, got {value!r}")
    return v


def check_bound(value: Any, name: str) -> float:
    """A declared bound (norm, clip, radius, ...): positive and finite, and never computed from the data.

    Parameters
    ----------
    value : any
        The bound.
    name : str
        Its name, for the message.

    Returns
    -------
    float

    Raises
    ------
    PrivacyParameterError
        For a value that is not a positive finite number.
    """
    return check_positive(value, name, "a declared bound, not computed from the data")


def check_eps(eps: float, name: str = "eps") -> float:
    """eps (or another eps-like parameter) as a positive finite float.

    Parameters
    ----------
    eps : float
        The value.
    name : str
        Its name, for the message.

    Returns
    -------
    float

    Raises
    ------
    PrivacyParameterError
        For a value that is not a positive finite number.
    """
    return check_positive(eps, name)


def check_rho(rho: float, name: str = "rho") -> float:
    """A zCDP rho as a positive finite float.

    Parameters
    ----------
    rho : float
        The value.
    name : str
        Its name, for the message.

    Returns
    -------
    float

    Raises
    ------
    PrivacyParameterError
        For a value that is not a positive finite number.
    """
    return check_positive(rho, name)


def check_delta(delta: float, name: str = "delta") -> float:
    """A delta as a float strictly between 0 and 1.

    Parameters
    ----------
    delta : float
        The value.
    name : str
        Its name, for the message.

    Returns
    -------
    float

    Raises
    ------
    PrivacyParameterError
        For a value that is not a number in (0, 1).
    """
    try:
        delta = float(delta)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"{name} must be a number, got {delta!r}") from None
    if not (0.0 < delta < 1.0):
        raise PrivacyParameterError(f"{name} must lie strictly between 0 and 1, got {delta!r}")
    return delta
