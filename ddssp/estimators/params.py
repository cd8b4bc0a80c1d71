"""Parameter constraint tables: one place that says which values each estimator parameter accepts.

An estimator lists its constructor parameters in a class-level ``_parameter_constraints`` table
(``{name: Constraint}``) and :meth:`ddssp.estimators.base.DPEstimator._validate_params` checks the
current values against it at the start of ``fit`` (the constructor only stores its arguments, so
``get_params`` / ``set_params`` / cloning see exactly what was given). A value outside its
constraint raises one :class:`InvalidParameterError` naming the parameter, what it must be and what
it got.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

from ddssp.errors import DDSSPError


class InvalidParameterError(DDSSPError):
    """A parameter's value is outside what it accepts.

    Parameters
    ----------
    parameter : str
        The parameter's name (the message starts with it).
    message : str
        The whole message, e.g. ``"ridge must be a non-negative number; got -1.0"``.
    """

    def __init__(self, parameter: str, message: str):
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class Constraint:
    """The values one parameter accepts.

    Attributes
    ----------
    accepts : callable
        ``accepts(value) -> bool``.
    says : str
        What the value must be, in words (completes "``name`` must be ...").
    """

    accepts: Callable[[Any], bool]
    says: str

    def check(self, name: str, value: Any) -> None:
        """Raise :class:`InvalidParameterError` unless ``value`` is accepted.

        Parameters
        ----------
        name : str
            The parameter's name, for the message.
        value : any
            Its value.

        Raises
        ------
        InvalidParameterError
            When the value is not accepted.
        """
        try:
            ok = bool(self.accepts(value))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise InvalidParameterError(name, f"{name} must be {self.says}; got {value!r}")


def _is_real(v: Any) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(float(v))


def _is_integer(v: Any) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool)


def one_of(*options: Any, says: str | None = None) -> Constraint:
    """A value equal to one of ``options``.

    Parameters
    ----------
    *options
        The accepted values.
    says : str, optional
        The description (default: the options, quoted).

    Returns
    -------
    Constraint
    """
    words = says or " or ".join(repr(o) for o in options)
    return Constraint(lambda v: not isinstance(v, bool) and any(v == o for o in options), words)


def number(
    low: float | None = None,
    high: float | None = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
    integer: bool = False,
    none: bool = False,
    says: str,
) -> Constraint:
    """A finite number (or integer) in a range, optionally None.

    Parameters
    ----------
    low, high : float or None
        The bounds (None: unbounded on that side).
    open_low, open_high : bool
        Exclude the bound itself.
    integer : bool
        Only integers (never bools).
    none : bool
        Also accept None.
    says : str
        The description.

    Returns
    -------
    Constraint
    """

    def accepts(v: Any) -> bool:
        if v is None:
            return none
        if not (_is_integer(v) if integer else _is_real(v)):
            return False
        if low is not None and (v <= low if open_low else v < low):
            return False
        return high is None or (v < high if open_high else v <= high)

    return Constraint(accepts, says)


def instance_of(*types: type, none: bool = False, says: str) -> Constraint:
    """An instance of one of ``types`` (optionally None).

    Parameters
    ----------
    *types
        The accepted types.
    none : bool
        Also accept None.
    says : str
        The description.

    Returns
    -------
    Constraint
    """
    return Constraint(lambda v: (v is None and none) or isinstance(v, types), says)


def names_or_none(says: str = "a sequence of column names or None") -> Constraint:
    """A sequence of strings (not one string), or None.

    Parameters
    ----------
    says : str
        The description.

    Returns
    -------
    Constraint
    """
    return Constraint(
        lambda v: (
            v is None or (isinstance(v, Sequence) and not isinstance(v, str) and all(isinstance(s, str) for s in v))
        ),
        says,
    )


def validate(params: Mapping[str, Any], constraints: Mapping[str, Constraint]) -> None:
    """Check every constrained parameter, in the table's order; the first bad one raises.

    Parameters
    ----------
    params : mapping
        ``{name: value}`` (e.g. ``get_params()``).
    constraints : mapping
        ``{name: Constraint}``; names absent from ``params`` are skipped.

    Raises
    ------
    InvalidParameterError
        For the first value its constraint does not accept.
    """
    for name, constraint in constraints.items():
        if name in params:
            constraint.check(name, params[name])
