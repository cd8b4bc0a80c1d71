"""Discovery's budget: how much of the release's budget it spends on a table, and each column's part.

A count's noise does not shrink with the table, so on a small table discovery raises its budget (up to
``MAX_AUTO_SHARE`` of the release's) until each searched column's noise sd is ``TARGET_SD_SHARE`` of
the (noisy) rows. Everything here is a function of public quantities and noisy counts.
"""

from __future__ import annotations

#: discovery's share of the zCDP budget is raised (up to this) when the noisy row count is small
MAX_AUTO_SHARE = 0.6


#: ... so that the noise sd of one column's full discovery budget is at most this share of the rows
#: (with a column's whole key budget in one round, a label would then need about 2.5% of the rows)
TARGET_SD_SHARE = 1 / 300


#: a declared target's share of discovery's budget, and of the key-release delta when it is
#: categorical, as a multiple of another column's share (taken from the other columns, so the totals
#: are unchanged): with 15 columns the target gets 4/18 of the budget instead of 1/15
TARGET_WEIGHT = 4.0


def column_shares(columns: list[str], rho: float, target: str | None) -> dict[str, float]:
    """Each column's zCDP budget: ``rho`` split evenly, or with the ``target`` weighted
    ``TARGET_WEIGHT`` against 1 for each other column (the sum is ``rho`` either way). Public.

    Parameters
    ----------
    columns : list of str
        The columns.
    rho : float
        The budget to split.
    target : str or None
        The declared target, when it is one of ``columns``.

    Returns
    -------
    dict
        ``{column: rho}``.
    """
    if target is None:
        rho_col = rho / len(columns)
        return {n: rho_col for n in columns}
    total = len(columns) - 1 + TARGET_WEIGHT
    return {n: rho * (TARGET_WEIGHT if n == target else 1.0) / total for n in columns}


def raised_shares(
    columns: list[str], kept: list[str], given: float, raised: float, target: str | None
) -> dict[str, float]:
    """Each column's budget when discovery's ``given`` budget was ``raised`` for a small table.

    Every column gets its part of the raised budget (as :func:`column_shares` splits it), except the
    ``kept`` ones: columns with declared bounds other than the target, which keep their part of the
    given budget. Such a column needs no range search, and the count its bins are cut from is
    recycled and measured again by AIM, so a small table does not need more of the budget for it: on
    small tables whose columns were all declared, the raise took most of the budget from the
    regression's measurements. A declared target keeps its raised part, because its bins' values
    enter every entry of X^T y. Public.

    Parameters
    ----------
    columns : list of str
        Every column discovery spends on.
    kept : list of str
        The columns that keep their part of the given budget.
    given, raised : float
        Discovery's budget before and after the raise (:func:`discovery_budget`).
    target : str or None
        The declared target, when it is one of ``columns``.

    Returns
    -------
    dict
        ``{column: rho}``; the sum is at most ``raised``.
    """
    share = column_shares(columns, raised, target)
    if raised <= given or not kept:
        return share
    base = column_shares(columns, given, target)
    return {n: base[n] if n in kept else share[n] for n in columns}


def discovery_budget(rows: float, columns: int, rho: float, rho_max: float) -> float:
    """Discovery's zCDP budget for a table of (noisy) ``rows``: the given ``rho``, raised so that the
    noise sd of each column's share is ``TARGET_SD_SHARE`` of the rows, at most ``MAX_AUTO_SHARE``
    of ``rho_max`` (never below ``rho``). Non-increasing in ``rows``. Post-processing.

    Parameters
    ----------
    rows : float
        The noisy row count.
    columns : int
        The columns to discover.
    rho : float
        The given budget (``--discovery-share`` of the release's).
    rho_max : float
        The budget of the whole release.

    Returns
    -------
    float
    """
    need = columns / (2.0 * (max(rows, 1.0) * TARGET_SD_SHARE) ** 2)
    return min(max(rho, need), max(rho, MAX_AUTO_SHARE * rho_max))
