"""Planning a release: its schema (declared, or discovered under DP inside the budget) and its workload."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ddssp.data.limits import check_discovery_width
from ddssp.dp import Ledger, LedgerEntry, check_delta, check_eps, rho_for_release
from ddssp.dp.noise import make_noise
from ddssp.errors import DDSSPError, SchemaError, WorkloadError
from ddssp.pipeline.events import Notice, PhaseStarted
from ddssp.pipeline.options import DISCOVERY_DELTA_SHARE, DiscoveryOptions
from ddssp.releasefile.format import (
    SCHEMA_DECLARED,
    SCHEMA_DISCOVERED,
    SCHEMA_NOT_PRIVATE,
)
from ddssp.types import Domain

if TYPE_CHECKING:
    from ddssp.pipeline.source import Source


@dataclass
class SchemaPlan:
    """A schema ready for a release, and what it cost.

    Attributes
    ----------
    schema : Schema
        The release's schema.
    ledger : Ledger
        Holds the discovery entries (and those of a DP schema file), with the final zCDP budget and
        thresholding delta of the release.
    status : str
        The release's ``schema_status``: "declared", "discovered" or the not-private stamp.
    notes : dict
        ``{column: what discovery found}``.
    discovered : list of str
        The columns found by discovery.
    dropped : dict
        Columns discovery could not resolve, left out of the release: ``{name: reason}``.
    clipped : dict
        ``{column: (below, above, sd_below, sd_above)}``: discovery's noisy shares of a numeric
        column's numbers left outside its range, and their noise sds (:class:`~ddssp.data.discovery.table.DiscoveryReport`).
    rows : float or None
        Discovery's noisy row count, when it drew one (the same report).
    recycled : list of RecycledMeasurement
        The one-way marginals of discovered numeric columns that discovery's noisy grid counts give
        (:mod:`ddssp.marginals.recycled`): already charged, fitted by AIM with its own measurements.
    """

    schema: Any
    ledger: Ledger
    status: str
    notes: dict[str, str] = field(default_factory=dict)
    discovered: list[str] = field(default_factory=list)
    #: columns discovery could not resolve, left out of the release: {name: reason}
    dropped: dict[str, str] = field(default_factory=dict)
    clipped: dict[str, tuple[float, ...]] = field(default_factory=dict)
    rows: float | None = None
    recycled: list[Any] = field(default_factory=list)


class DroppedColumnsWarning(UserWarning):
    """Some columns could not be discovered at this budget and were left out of the release."""


def dropped_message(dropped: dict[str, str], share: float, used: float | None = None) -> str:
    """One message for every column discovery could not resolve: why, and what to do.

    Parameters
    ----------
    dropped : dict
        ``{name: reason}``.
    share : float
        The discovery share given (``DiscoveryOptions.share``).
    used : float, optional
        The share discovery used, when it differs from the given one (raised for a small table from
        its noisy row count: post-processing, so it may be printed).

    Returns
    -------
    str
    """
    from ddssp.data.discovery.table import grouped_reasons

    if used is not None and abs(used - share) > 1e-9:
        now = f"given {share:g}, raised to {used:.2g} for a small table"
    else:
        now = f"now {share:g}"
    return (
        f"{len(dropped)} column(s) could not be discovered at this budget and are left out of the "
        f"release: {grouped_reasons(dropped)}. The decision comes from noisy counts "
        "only (nothing else about these columns is released). To keep a column: give more rows, a "
        f"larger DiscoveryOptions.share ({now}) or eps, or declare it in the schema "
        "(`ddssp schema`), or declare what is public about it (a codebook, DiscoveryOptions.hints "
        "bounds or levels; declared columns cost nothing); note that running the release again "
        "spends the budget again"
    )


def declared_kinds(
    names: Sequence[str],
    categorical: Sequence[str] | None = (),
    numeric: Sequence[str] | None = (),
    dates: Sequence[str] | None = (),
) -> dict[str, str]:
    """The kinds the user declares for discovery, checked against the table's column names.

    Only the header is read (it is public), so the release checks this before any row is read or
    noise drawn.

    Parameters
    ----------
    names : sequence of str
        The table's column names.
    categorical, numeric, dates : sequence of str, optional
        The columns of ``DiscoveryOptions.categorical``, ``.numeric`` and ``.dates``.

    Returns
    -------
    dict
        ``{name: "categorical" | "numeric" | "dates"}`` (``"dates"``: a time axis, ISO dates and
        timestamps or clock times, the unit decided by discovery's noisy counts).

    Raises
    ------
    SchemaError
        One error naming every unknown column at once, or a column given two kinds.
    """
    names = [str(n) for n in names]
    known = set(names)
    given = (("categorical", categorical), ("numeric", numeric), ("dates", dates))
    unknown = [f"DiscoveryOptions.{opt} {n!r}" for opt, lst in given for n in (lst or ()) if n not in known]
    if unknown:
        raise SchemaError(
            f"column(s) not in the data: {', '.join(unknown)}; the data has "
            f"{', '.join(map(repr, names[:30]))}{' ...' if len(names) > 30 else ''}"
        )
    kinds: dict[str, str] = {}
    for opt, lst in given:
        for n in lst or ():
            if kinds.get(n, opt) != opt:
                raise SchemaError(
                    f"column {n!r} is given both in DiscoveryOptions.{kinds[n]} and in DiscoveryOptions.{opt}; keep one"
                )
            kinds[n] = opt
    return kinds


def merge_hints(schema: Any, names: Sequence[str], discovery: DiscoveryOptions) -> tuple[Any, DiscoveryOptions]:
    """The schema with the columns that ``discovery.hints`` declare whole added (free, as any
    declared column), and the options holding the hints left for discovery.

    A hint given by hand (``strict``) for a column the data lacks, or for a column the schema
    declares, is refused; a dictionary's hints for such columns are ignored (a dictionary often
    covers more columns than one extract holds, and a reviewed schema says more than a hint).

    Parameters
    ----------
    schema : Schema or None
        The declared columns.
    names : sequence of str
        The table's columns.
    discovery : DiscoveryOptions
        With its ``hints``.

    Returns
    -------
    schema : Schema or None
        With the hints' whole columns (None when there is nothing declared).
    discovery : DiscoveryOptions
        With the hints of the columns still to discover.

    Raises
    ------
    SchemaError
        For a hint by hand naming a column the data lacks or the schema declares, or a hint that
        cannot make its column.
    """
    from dataclasses import replace

    from ddssp.data import Schema
    from ddssp.data.codebook import Codebook
    from ddssp.data.discovery.numeric import DEFAULT_MAX_LEVELS

    book = discovery.hints
    if not book:
        return schema, discovery
    book.check_names(names)
    declared = set() if schema is None else set(schema.names)
    clash = [f"{h.source} {h.name!r}" for h in book.hints if h.strict and h.name in declared]
    if clash:
        raise SchemaError(
            f"{', '.join(clash)}: the column is declared in the schema; change it there, or leave it out of "
            "the schema to declare it by hints"
        )
    odd = [f"{h.source} {h.name!r}" for h in book.hints if h.bounds is not None and h.name in discovery.categorical]
    if odd:
        raise SchemaError(
            f"{', '.join(odd)}: bounds declare a numeric column, but DiscoveryOptions.categorical names it; keep one"
        )
    max_levels = discovery.max_levels or DEFAULT_MAX_LEVELS
    whole, left = [], []
    for h in book.hints:
        if h.name not in names or h.name in declared:
            continue
        col = h.column(max_levels)
        if col is None:
            left.append(h)
        else:
            whole.append(col)
    discovery = replace(discovery, hints=Codebook(tuple(left)))
    if not whole:
        return schema, discovery
    if schema is None:
        return Schema(whole), discovery
    return Schema(
        [*schema.columns, *whole], source=schema.source, draft=schema.draft, discovery=schema.discovery
    ), discovery


def plan_schema(
    data: pd.DataFrame | Sequence[str],
    schema: Any = None,
    *,
    eps: float,
    delta: float,
    discovery: DiscoveryOptions | None = None,
    noise: Any = None,
    replan: bool = True,
) -> SchemaPlan:
    """The schema of a release of ``data`` at (eps, delta), and what it costs.

    The declared columns of ``schema`` (may be None or partial) are kept as they are; every other
    column of ``data`` is discovered under DP (:func:`ddssp.data.discovery.discover`) with
    ``discovery.share`` of the zCDP budget and ``DISCOVERY_DELTA_SHARE`` of delta for key release.

    Accounting: the budget is approximate zCDP. With delta_t the delta set aside for thresholding
    (key release; plus that recorded by a DP schema file), the zCDP budget is
    rho = rho_from_eps_delta(eps, delta - delta_t), so that delta_t + cks_delta(rho, eps) = delta:
    the whole release is (eps, delta)-DP, exactly. When no discovered column turns out categorical
    (known after the scans), delta_t is given back and rho recomputed (``replan``). A DP schema
    file's entries are charged to the same ledger (its cost counts inside eps).

    Parameters
    ----------
    data : pandas.DataFrame or sequence of str
        The table, or only its column names (a table read by the counting layer: then every
        column must be declared).
    schema : ddssp.data.Schema, optional
        Declared columns; a draft schema needs ``discovery.accept_draft``; a DP schema file's
        discovery record is charged to the ledger.
    eps, delta : float
        The (eps, delta)-DP budget of the whole release.
    discovery : DiscoveryOptions, optional
        The share of the budget, the declared kinds, bins and levels of discovery, and whether a
        draft schema is accepted and an undiscoverable column refused (``strict``) rather than left
        out of the release with one :class:`DroppedColumnsWarning` listing every such column.
    noise : optional
        The noise source (:func:`ddssp.dp.noise.make_noise`); secure by default.
    replan : bool
        Give the reserved thresholding delta back to zCDP when no key release happened.

    Returns
    -------
    SchemaPlan
        The schema, the ledger holding the discovery entries with the release's final budget, the
        schema status, discovery notes and the discovered columns.

    Raises
    ------
    SchemaError
        For an empty table, schema columns missing from the data, a draft schema without
        ``accept_draft``, an invalid discovery record, or undeclared columns of a table given by
        its column names only.
    DDSSPError
        For an invalid eps or delta.
    """
    from ddssp.data import Schema

    discovery = DiscoveryOptions() if discovery is None else discovery
    eps, delta = check_eps(eps), check_delta(delta)
    names = _column_names(data)
    schema, discovery = merge_hints(schema, names, discovery)
    declared = _Declared.of(schema, discovery.accept_draft)
    missing = [n for n in declared.columns if n not in names]
    if missing:
        raise SchemaError(f"schema column(s) missing from the data: {missing}; the data has {names[:20]}")
    todo = [n for n in names if n not in declared.columns]
    kinds = declared_kinds(names, discovery.categorical, discovery.numeric, discovery.dates)
    reserved = DISCOVERY_DELTA_SHARE * delta if todo else 0.0
    ledger = declared.ledger(eps, delta, reserved)
    found: dict[str, Any] = {}
    notes: dict[str, str] = {}
    dropped: dict[str, str] = {}
    clipped: dict[str, tuple[float, ...]] = {}
    rows = None
    recycled: list[Any] = []
    used = 0.0
    status = declared.status
    if todo:
        if not isinstance(data, pd.DataFrame) and not is_discovery_table(data):
            raise SchemaError(
                f"column(s) {todo[:5]} are not declared in the schema; discovering them reads the table in "
                "memory: declare them, or give the table as a pandas DataFrame"
            )
        check_discovery_width(todo, discovery.categorical or ())
        found, notes, dropped, used, clipped, rows, recycled = _discover(
            data, todo, ledger, noise, discovery, reserved, kinds
        )
        status = SCHEMA_DISCOVERED if status == SCHEMA_DECLARED else status
    if replan and todo and used == 0.0:  # no key release: give the reserved delta back to zCDP
        final = Ledger(rho_for_release(eps, delta, declared.prior_delta), delta_budget=declared.prior_delta)
        final.entries = list(ledger.entries)
        ledger = final
    cols = [declared.columns[n] if n in declared.columns else found[n] for n in names if n not in dropped]
    if dropped and discovery.target is not None and [n for n in names if n not in dropped] == [discovery.target]:
        raise SchemaError(
            f"no column besides the target {discovery.target!r} could be kept at this budget, so a regression "
            "would have no feature; declare what is public about the features (--bounds COL=LO:HI for numbers, "
            "--levels COL=A,B,... for labels, or --codebook FILE: declared columns cost nothing), or give more "
            "rows or a larger --eps; the release is refused rather than made without features"
        )
    return SchemaPlan(
        schema=Schema(cols),
        ledger=ledger,
        status=status,
        notes=notes,
        discovered=[n for n in todo if n not in dropped],
        dropped=dropped,
        clipped=clipped,
        rows=rows,
        recycled=recycled,
    )


def is_discovery_table(data: Any) -> bool:
    """Whether ``data`` is a table discovery reads where it lives.

    Parameters
    ----------
    data : object
        The table given to :func:`plan_schema`.

    Returns
    -------
    bool
        True for a :class:`ddssp.data.discovery.source.SqlTable`.
    """
    from ddssp.data.discovery.source import SqlTable

    return isinstance(data, SqlTable)


def _column_names(data: Any) -> list[str]:
    """The names of a table's columns (a DataFrame's, checked to have rows, or the names given)."""
    if isinstance(data, pd.DataFrame):
        if data.shape[1] == 0:
            raise SchemaError("the table has no columns")
        if len(data) == 0:
            raise SchemaError("the table has no rows")
        return [str(c) for c in data.columns]
    names = [str(c) for c in data]  # the header of a table read by the counting layer
    if not names:
        raise SchemaError("the table has no columns")
    return names


@dataclass
class _Declared:
    """What a schema declares: its columns, the release's schema status, and the ledger entries and
    thresholding delta of a DP schema file (charged inside the release's budget)."""

    columns: dict[str, Any]
    status: str
    prior: list[LedgerEntry]
    prior_delta: float

    @classmethod
    def of(cls, schema: Any, accept_draft: bool) -> _Declared:
        if schema is None:
            return cls({}, SCHEMA_DECLARED, [], 0.0)
        status = SCHEMA_DECLARED
        if getattr(schema, "draft", None) is not None:
            if not accept_draft:
                raise SchemaError(
                    "the schema is a data-derived draft (it carries the draft stamp of `ddssp schema`): "
                    "its levels and bounds were read from the data without privacy. Review it and delete "
                    'its "draft" key, or discover the schema privately (`ddssp schema DATA --eps E`, or '
                    "leave out the schema), or pass DiscoveryOptions.accept_draft=True to release it marked "
                    "not private"
                )
            status = SCHEMA_NOT_PRIVATE
        prior: list[LedgerEntry] = []
        prior_delta = 0.0
        rec = getattr(schema, "discovery", None)
        if rec is not None:
            try:
                prior = [LedgerEntry.from_dict(e) for e in rec["entries"]]
                prior_delta = float(rec.get("delta_budget", math.fsum(e.delta for e in prior)))
            except (KeyError, TypeError, ValueError) as exc:
                raise SchemaError(f"the schema's discovery record is invalid ({exc})") from None
            status = SCHEMA_DISCOVERED if status == SCHEMA_DECLARED else status
        return cls({c.name: c for c in schema.columns}, status, prior, prior_delta)

    def ledger(self, eps: float, delta: float, reserved: float) -> Ledger:
        """The release's ledger: its zCDP budget with ``reserved`` delta set aside for key release,
        holding the schema file's entries."""
        delta_t = self.prior_delta + reserved
        if not delta_t < delta:
            raise SchemaError(f"the schema file's thresholding delta {self.prior_delta:g} is not below delta={delta:g}")
        ledger = Ledger(rho_for_release(eps, delta, delta_t), delta_budget=delta_t)
        for e in self.prior:
            try:
                ledger.charge(e)
            except DDSSPError as exc:
                raise SchemaError(
                    f"the DP schema file costs more than this release's budget ({exc}); give a "
                    "larger eps or discover the schema inside this release"
                ) from None
        return ledger


def _discover(
    data: pd.DataFrame,
    todo: list[str],
    ledger: Ledger,
    noise: Any,
    discovery: DiscoveryOptions,
    reserved: float,
    kinds: dict[str, str],
) -> tuple[dict[str, Any], dict[str, str], dict[str, str], float, dict[str, tuple[float, ...]], float | None, list]:
    """Discover the columns ``todo`` under DP, charged to ``ledger``: (columns found, notes, dropped
    columns with why, the delta the key release used, the noisy clipped shares of numeric columns,
    the noisy row count, the one-way measurements its grid counts give). Dropped columns are refused
    under ``strict``, otherwise warned of once."""
    from ddssp.data.discovery.table import DEFAULT_MAX_LEVELS, discover
    from ddssp.dp.discovery import ChargedMechanisms

    noise = make_noise(None) if noise is None else noise
    rho_disc = min(float(discovery.share) * ledger.rho_budget, ledger.remaining)
    found, report, used = discover(
        data,
        todo,
        ChargedMechanisms(ledger, noise),
        rho=rho_disc,
        delta=reserved,
        kinds=kinds,
        bins=discovery.bins,
        max_levels=discovery.max_levels or DEFAULT_MAX_LEVELS,
        rho_max=ledger.remaining,
        collect=True,
        target=discovery.target if discovery.target in todo else None,
        hints=discovery.hints,
    )
    dropped = dict(report.unresolved)
    if dropped:
        msg = dropped_message(dropped, float(discovery.share), report.share)
        if discovery.strict or len(dropped) == len(data.columns):
            why = "refused (DiscoveryOptions.strict): " if discovery.strict else "no column could be discovered: "
            raise SchemaError(why + msg)
        warnings.warn(msg, DroppedColumnsWarning, stacklevel=3)
    recycled = recycled_measurements(found, report.grids, report.whole)
    return found, dict(report.notes), dropped, used, dict(report.clipped), report.rows, recycled


def recycled_measurements(found: dict[str, Any], grids: dict[str, list], whole: set[str]) -> list[Any]:
    """The one-way measurements discovery's grid counts give of the discovered numeric columns
    (:func:`ddssp.marginals.recycled.from_grid`): every grid that maps onto the column's levels, a
    grid of whole numbers only for a column whose scan found whole numbers. Post-processing.

    Parameters
    ----------
    found : dict
        ``{name: Column}``, the discovered columns.
    grids : dict
        ``{name: [(edges, noisy counts, sigma, ledger index), ...]}`` (:class:`~ddssp.data.discovery.table.DiscoveryReport`).
    whole : set of str
        The columns whose scan found whole numbers only.

    Returns
    -------
    list of RecycledMeasurement
    """
    from ddssp.marginals.recycled import from_grid

    out = []
    for name, counted in grids.items():
        col = found.get(name)
        if col is None:
            continue
        for edges, y, sigma, entry in counted:
            m = from_grid(col, edges, y, sigma, entry, whole=name in whole)
            if m is not None:
                out.append(m)
    return out


def plan_source(
    source: Source,
    schema: Any,
    *,
    eps: float,
    delta: float,
    discovery: DiscoveryOptions,
    noise: Any,
    tell: Callable[[Any], None],
) -> tuple[Source, SchemaPlan]:
    """The schema of a release's table (:func:`plan_schema`), its rows read in memory when needed.

    The discovery options are checked against the header and undeclared columns refused when discovery
    is off before any row is read; the ``"discovery"`` phase and each column left out of the release
    are told as they happen (a left-out column is warned of as well).

    Parameters
    ----------
    source : Source
        The table (:func:`~ddssp.pipeline.source.open_source`).
    schema : Schema or None
        The declared columns.
    eps, delta : float
        The release's budget.
    discovery : DiscoveryOptions
        How undeclared columns are discovered.
    noise : NoiseSource
        The release's noise source.
    tell : callable
        Receives :class:`~ddssp.pipeline.events.PhaseStarted` and :class:`~ddssp.pipeline.events.Notice`.

    Returns
    -------
    source : Source
        The table, with its rows in memory when discovery (or the backend) needs them.
    plan : SchemaPlan

    Raises
    ------
    SchemaError
        For unknown names in the discovery options, undeclared columns when discovery is off, or a
        schema that cannot be planned.
    """
    declared_kinds(source.names, discovery.categorical, discovery.numeric, discovery.dates)  # the header only
    enabled = discovery.discovers(schema)
    schema, discovery = merge_hints(schema, source.names, discovery)  # the hints' whole columns are declared
    undeclared = [n for n in source.names if schema is None or n not in schema]
    if undeclared and not enabled:
        if schema is None:
            raise SchemaError("no schema given: pass one, or discover it privately (DiscoveryOptions(enabled=True))")
        if source.frame is not None:
            schema.encode(source.frame)  # the usual error naming the columns not in the schema
        raise SchemaError(
            f"column(s) {undeclared[:5]} are not declared in the schema: declare them, or discover them "
            "privately (DiscoveryOptions(enabled=True))"
        )
    if undeclared:  # from the header: a table whose discovery the ledger cannot hold is refused unread
        check_discovery_width(undeclared, discovery.categorical or ())
    source = source.in_memory(schema)
    if undeclared:
        tell(PhaseStarted("discovery"))
    table = source.discovery_input()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DroppedColumnsWarning)
            plan = plan_schema(table, schema, eps=eps, delta=delta, discovery=discovery, noise=noise)
    finally:
        source = source.closed()
    for w in caught:
        if issubclass(w.category, DroppedColumnsWarning):
            tell(Notice(w.message))
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return source, plan


def build_workload(
    workload: Any,
    domain: Domain,
    target: str | None,
    max_cells: int | None = None,
    by: str | None = None,
    fixed: Any = (),
):
    """The release's workload from its specification, validated against the domain.

    Parameters
    ----------
    workload : str, path-like or list
        'all-pairs', 'target' (pairs with the target), a JSON file path, or an explicit list of
        (clique, weight) pairs.
    domain : dict
        ``{column: size}``.
    target : str or None
        The target column ('target' needs one).
    max_cells : int, optional
        Drop cliques with more cells (not applied to an explicit list).
    by : str, optional
        A public grouping column (``AimOptions.by``): 'all-pairs' becomes the pairs within each group
        (every marginal (by, a, b), :func:`~ddssp.marginals.workload.grouped_pairs`); 'target' the
        target's marginals within each group; a file or a list of cliques is kept and the pairs
        within each group are added to it.
    fixed : sequence of str
        With ``by``: the columns the rules declare to depend on it alone, asked for only with it
        (:func:`~ddssp.marginals.workload.grouped_pairs`).

    Returns
    -------
    Workload

    Raises
    ------
    WorkloadError
        For a workload that cannot be built or does not fit the domain.
    """
    from ddssp.marginals import workload as wl

    if by is not None and by not in domain:
        raise WorkloadError(
            f"grouping column {by!r} (AimOptions.by) is not in the release's columns: {', '.join(domain)}"
        )
    if isinstance(workload, str) and workload == "all-pairs" and len(domain) == 1:
        # one column (declared so, or the only one discovery kept): pairs need two, so its one-way marginal
        w = [((next(iter(domain)),), 1.0)]
    elif isinstance(workload, str) and workload == "all-pairs":
        w = (
            wl.grouped_pairs(domain, by, max_cells, fixed=fixed)
            if by is not None
            else wl.all_pairs(domain, max_cells=max_cells)
        )
    elif isinstance(workload, str) and workload == "target":
        if target is None:
            raise WorkloadError("workload 'target' needs a target column (the target parameter)")
        w = wl.target_pairs(domain, target, max_cells=max_cells)
        if by is not None:
            seen: set[frozenset] = set()
            grouped = [(c if by in c else (by, *c), wt) for c, wt in w]
            w = [(c, wt) for c, wt in grouped if not (frozenset(c) in seen or seen.add(frozenset(c)))]
            w = wl.cap_cells(w, domain, max_cells) if max_cells is not None else w
    elif isinstance(workload, (str, Path)):
        w = wl.load_workload(workload, domain)
        if max_cells is not None:
            w = wl.cap_cells(w, domain, max_cells)
        if by is not None:
            w = w + wl.grouped_pairs(domain, by, max_cells, fixed=fixed)
    else:
        w = [(tuple(c), float(wt)) for c, wt in workload]
        if by is not None:
            w = w + wl.grouped_pairs(domain, by, max_cells, fixed=fixed)
    return wl.validate_workload(w, domain)
