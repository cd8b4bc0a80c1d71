"""Checks for privacy parameters and declared bounds: one clear :class:`PrivacyParameterError` each."""

from __future__ import annotations

import math
from collections.abc import Callable
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


def _positive_parameter(default_name: str, what: str) -> Callable[..., float]:
    """A checker ``check(value, name=default_name)`` that is :func:`check_positive` under a parameter's name."""

    def check(value: Any, name: str = default_name) -> float:
        return check_positive(value, name)

    check.__name__ = check.__qualname__ = f"check_{default_name}"
    check.__doc__ = f"""{what} as a positive finite float.

    Parameters
    ----------
    value : float
        The value of {default_name}.
    name : str
        Its name, for the message (default ``"{default_name}"``).

    Returns
    -------
    float

    Raises
    ------
    PrivacyParameterError
        For a value that is not a positive finite number.
    """
    return check


#: eps (or another eps-like parameter, e.g. ``check_eps(eps_em, "eps_em")``) as a positive finite float
check_eps = _positive_parameter("eps", "eps (or another eps-like parameter)")
#: a zCDP rho as a positive finite float
check_rho = _positive_parameter("rho", "A zCDP rho")


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
