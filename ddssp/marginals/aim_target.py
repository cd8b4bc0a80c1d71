"""The first phase of an AIM run given a regression target Y: which marginals it measures (Y's
one-way marginal and its pair with every other column, :func:`target_cliques`) and the checks of the
target and of the model those pairs build. The phase itself runs in
:func:`ddssp.marginals.aim.measure_target_phase`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ddssp.errors import WorkloadError
from ddssp.marginals.named_tables import canonical, cells
from ddssp.types import Clique


def target_columns(target: str | Sequence[str] | None, domain: Mapping[str, int]) -> list[str]:
    """The target columns, checked against the domain (a bare string is one column).

    Parameters
    ----------
    target : str, sequence of str or None
        The run's target(s).
    domain : dict
        ``{column: size}``.

    Returns
    -------
    list of str
        Without repeats; empty for None.

    Raises
    ------
    WorkloadError
        For a name that is not a column of the domain.
    """
    if target is None:
        return []
    names = [target] if isinstance(target, str) else list(target)
    for t in names:
        if not isinstance(t, str) or t not in domain:
            raise WorkloadError(f"target column {t!r} is not in the domain (columns: {', '.join(domain)})")
    return list(dict.fromkeys(names))


def target_cliques(domain: Mapping[str, int], targets: Sequence[str]) -> list[Clique]:
    """What the first phase measures: each target's one-way marginal, then its pair with every other
    column (each pair once), in the caller's column order.

    Parameters
    ----------
    domain : dict
        ``{column: size}`` in the caller's order.
    targets : sequence of str
        The target columns.

    Returns
    -------
    list of tuple of str
        Empty without targets.
    """
    out: list[Clique] = [(t,) for t in targets]
    seen: set[Clique] = set()
    for t in targets:
        for c in domain:
            pair = canonical(domain, (t, c))
            if c != t and pair not in seen:
                seen.add(pair)
                out.append(pair)
    return out


def check_target_phase(first: list[Clique], domain: Mapping[str, int], cap: float) -> None:
    """Refuse a first phase whose pairs alone build a model larger than the size limit.

    Parameters
    ----------
    first : list of tuple of str
        What the first phase measures (:func:`target_cliques`).
    domain : dict
        ``{column: size}``.
    cap : float
        The model size limit (MB).

    Raises
    ------
    WorkloadError
        Naming the limit and what to change.
    """
    mb = sum(cells(domain, c) for c in first if len(c) > 1) * 8 / 2**20
    if mb > cap:
        raise WorkloadError(
            f"the target's pairs with every other column hold {mb:.1f} MB of cells, more than the model "
            f"size limit of {cap:g} MB; drop or bin the largest columns, or raise max_model_size"
        )
