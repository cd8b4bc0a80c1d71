"""The agency benchmark's workload for a release with a declared dependency on its grouping column."""

from __future__ import annotations


def dependent_workload(columns: list[str], by: str, rules_text: str) -> list[list[str]]:
    """The pairs within each group of ``by`` (every (by, a, b)), except that a column declared to
    depend on ``by`` alone (``DENSITY depends on PUMA``) is asked for only with it: (by, c).

    Such a column's values are fixed by the group, so a marginal (by, c, a) holds no more than (by,
    a) (each synthetic group holds the one level read from the model,
    :func:`ddssp.marginals.rules_model.dependency_zeros`); AIM's rounds go to the other columns.

    Parameters
    ----------
    columns : list of str
        The released columns.
    by : str
        The grouping column.
    rules_text : str
        The released rules (their dependencies are read).

    Returns
    -------
    list of list of str
        The workload's cliques (weight 1 each), for ``--workload``.
    """
    from itertools import combinations

    from ddssp.data.rules import dependencies

    deps = dependencies(rules_text) if rules_text.strip() else []
    fixed = [d.column for d in deps if d.by == (by,) and d.column in columns]
    others = [c for c in columns if c != by and c not in fixed]
    return [[by, a, b] for a, b in combinations(others, 2)] + [[by, c] for c in fixed]


__all__ = ["dependent_workload"]
