"""The settings most benchmark kinds read from their spec alike: the keys a table may hold, the
privacy budgets, the number of releases and the sample sizes, each with the command line's override
(:meth:`ddssp.bench.runner.BenchContext.setting`) and one clear error for a bad value."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from ddssp.errors import WorkloadError

__all__ = ["check_keys", "read_eps", "read_releases", "read_sizes", "read_trials"]


def check_keys(table: Any, known: Collection[str], where: str) -> None:
    """Refuse a spec table that is not a table of keys, or holds keys its reader does not know.

    Parameters
    ----------
    table : any
        The table (a dict from TOML).
    known : collection of str
        The keys it may hold.
    where : str
        What the table is, for the message (``"an agency spec"``, ``"[[tables]]"``).

    Raises
    ------
    WorkloadError
        For a value that is not a table, or an unknown key.
    """
    if not isinstance(table, dict):
        raise WorkloadError(f"each {where} entry must be a table of keys")
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise WorkloadError(f"unknown key(s) {unknown} in {where}; known: {sorted(known)}")


def read_eps(spec: dict, ctx: Any, default: Any = None) -> list[float]:
    """The privacy budgets: ``--eps`` if given, else the spec's ``eps`` (a number or a list), else
    ``default``.

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        Its ``eps`` overrides the spec.
    default : any, optional
        The budgets when neither gives any; None makes ``eps`` required.

    Returns
    -------
    list of float
        At least one, each positive and finite.

    Raises
    ------
    WorkloadError
        When no budget is given, or one is not a positive finite number.
    """
    eps = ctx.setting(spec, "eps", ctx.eps, default)
    if eps is None:
        raise WorkloadError("benchmark spec needs 'eps' (a list of epsilons)")
    if isinstance(eps, (int, float)):
        eps = [eps]
    try:
        eps = [float(e) for e in eps]
    except (TypeError, ValueError):
        raise WorkloadError(f"eps must be a list of numbers, got {eps!r}") from None
    if not eps or any(not (e > 0 and math.isfinite(e)) for e in eps):
        raise WorkloadError(f"every eps must be positive and finite, got {eps}")
    return eps


def read_releases(spec: dict, ctx: Any, default: int) -> int:
    """How many releases a setting makes: ``--trials`` if given, else the spec's ``releases``, else
    ``default``.

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        Its ``trials`` overrides the spec.
    default : int
        The number when neither gives one.

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    WorkloadError
        For a number under 1.
    """
    releases = int(ctx.trials if ctx.trials is not None else spec.get("releases", default))
    if releases < 1:
        raise WorkloadError(f"releases must be >= 1, got {releases}")
    return releases


def read_trials(spec: dict, ctx: Any, default: int) -> int:
    """How many trials a setting runs: ``--trials`` if given, else the spec's ``trials``, else ``default``.

    A value that is not a whole number (a float, a bool) is refused, where :func:`read_releases`
    converts it with ``int``.

    Parameters
    ----------
    spec, ctx, default
        As for :func:`read_releases`.

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    WorkloadError
        For anything but a whole number >= 1.
    """
    trials = ctx.setting(spec, "trials", ctx.trials, default)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise WorkloadError(f"trials must be a positive integer, got {trials!r}")
    return trials


def read_sizes(spec: dict, default: list) -> list:
    """The sample sizes: the spec's ``sizes``, else ``default``.

    Parameters
    ----------
    spec : dict
        The parsed spec.
    default : list
        The sizes when the spec gives none.

    Returns
    -------
    list
        Row counts (whole numbers, at least 10) and ``"full"`` (the whole table).

    Raises
    ------
    WorkloadError
        For anything but a non-empty list of such sizes.
    """
    sizes = spec.get("sizes", default)
    if (
        not isinstance(sizes, list)
        or not sizes
        or any(not (s == "full" or (isinstance(s, int) and not isinstance(s, bool) and s >= 10)) for s in sizes)
    ):
        raise WorkloadError(f"sizes must be a list of 'full' and row counts >= 10, got {sizes!r}")
    return sizes
