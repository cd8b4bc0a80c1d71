"""``release()``: run AIM on a table and return the :class:`~ddssp.releasefile.Release`.

This is the only step of ddssp that reads the sensitive data.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime as _dt
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from ddssp._warnings import warnings_once
from ddssp.data.schema import Schema
from ddssp.dp import Ledger, check_delta, check_eps, make_rng, rho_from_eps_delta
from ddssp.dp.noise import make_noise
from ddssp.errors import DDSSPError, SchemaError
from ddssp.marginals.workload import check_release_size
from ddssp.pipeline.events import Notice, PhaseStarted, SchemaPlanned
from ddssp.pipeline.options import (
    DEFAULT_DELTA,
    AimOptions,
    DiscoveryOptions,
    ReadOptions,
    check_options,
)
from ddssp.pipeline.plan import SchemaPlan, build_workload, plan_source
from ddssp.pipeline.source import Source, coded_source, open_source
from ddssp.releasefile.format import SCHEMA_DECLARED
from ddssp.releasefile.model import Release


def release(
    data: Any,
    schema: Any = None,
    *,
    eps: float,
    delta: float = DEFAULT_DELTA,
    target: str | None = None,
    read: ReadOptions | None = None,
    discovery: DiscoveryOptions | None = None,
    aim: AimOptions | None = None,
    seed: int | np.random.Generator | None = None,
    insecure_seed: int | None = None,
    progress: bool | Callable[[Any], None] | None = None,
    plan: SchemaPlan | None = None,
    rules: Any = None,
) -> Release:
    """Run AIM on ``data`` and return the release; the budget (eps, delta) is converted to zCDP and
    spent in full.

    Parameters
    ----------
    data : pandas.DataFrame, str, Path or Spark DataFrame
        Raw values per ``schema`` (or integer codes with ``ReadOptions(encoded=True)``), or a path to
        a CSV / Parquet file, or a Spark DataFrame. A file's header is read first; its rows are read
        in memory when a column is discovered (or for the numpy backend), and otherwise counted by
        the counting layer (:mod:`ddssp.data.counting`) in one scan.
    schema : ddssp.data.Schema, optional
        The declared columns. Columns it does not declare are discovered under DP inside the same
        budget (:func:`plan_schema`, with the same noise source as AIM) when
        ``DiscoveryOptions.enabled`` is True (the default when ``schema`` is None); otherwise a
        column missing from the schema is an error.
    eps, delta : float
        The (eps, delta)-DP guarantee of the whole release.
    target : str, optional
        The column a regression will predict: AIM first measures its one-way marginal and its pair
        with every other column (``AimOptions.target_share`` of AIM's budget), then spends the rest
        adaptively on the workload. Recorded in the file; the workload ``"target"`` needs it.
    read : ReadOptions, optional
        Which columns are used, how a file is parsed and which backend counts it.
    discovery : DiscoveryOptions, optional
        How the schema is planned and undeclared columns discovered.
    aim : AimOptions, optional
        AIM's workload and settings.
    seed : int or numpy.random.Generator, optional
        Reproducibility of everything that is not DP noise. It never reaches the noise: that comes
        from OpenDP's secure samplers.
    insecure_seed : int, optional
        FOR TESTS ONLY. Draw the noise from ``numpy.random.default_rng(insecure_seed)``: the
        release is then reproducible, NOT PRIVATE (anyone with the seed can subtract the noise),
        and stamped so (:attr:`Release.stamp`) in the file and by every command that reads it.
        Discovery and AIM draw from this one source, in turn.
    progress : bool or callable, optional
        Show the phases and AIM's rounds on stderr: by default when stderr is a terminal or the
        call runs in a Jupyter notebook, never in a log; ``False`` never, ``True`` always. A callable
        receives every event instead: the pipeline's (:mod:`ddssp.pipeline.events`) and AIM's
        :class:`~ddssp.marginals.aim.AIMProgress`.
    plan : SchemaPlan, optional
        A schema and its ledger from :func:`plan_schema`, used as they are (its noise source is
        its own).
    rules : str, Path or sequence of str, optional
        Declared consistency rules (:mod:`ddssp.data.rules`): a rules file, its text, or rule strings.
        Public input, charged nothing: they are checked against the schema before AIM runs (a
        discovered schema is known only after discovery), written into the release, and no
        synthetic row breaks one.

    Returns
    -------
    Release
        The release (with ``local_info`` for the terminal, never written to the file).

    Raises
    ------
    DDSSPError
        For invalid parameters, or nothing of the budget left after discovery.
    SchemaError
        For data that does not fit the schema, or a schema that cannot be planned.
    """
    read = ReadOptions() if read is None else read
    discovery = DiscoveryOptions() if discovery is None else discovery
    if target is not None and discovery.target is None:  # the target's discovery gets priority
        discovery = dataclasses.replace(discovery, target=target)
    aim = AimOptions() if aim is None else aim
    check_options(read, discovery, aim)
    eps, delta = check_eps(eps), check_delta(delta)
    declared_rules = _read_rules(rules)  # a rules file is read (and refused) before the data
    if isinstance(schema, Schema):  # the release marks levels empty in its own schema, never the caller's
        schema = copy.deepcopy(schema)
    created = _dt.datetime.now(_dt.UTC).date().isoformat()  # taken before the data is read
    noise = make_noise(insecure_seed)  # the release's one noise source: discovery draws first, then AIM
    context: dict[str, Any] = {}
    with warnings_once(context), _progress(progress) as tell:
        budget = (eps, delta)
        source, plan = _planned(data, schema, budget, read, discovery, plan, noise, tell)
        context["discovered"] = set(plan.discovered)
        from ddssp.dp.discovery import ChargedMechanisms
        from ddssp.releasefile.conditions import (
            checked_rules,
            count_outside,
            empty_from_measurements,
            end_levels_empty_from_measurements,
            group_levels_empty_from_measurements,
            outside_reserve,
            range_levels_empty_from_measurements,
        )

        rule_texts = checked_rules(declared_rules, plan.schema)

        held = outside_reserve(plan.schema, plan.discovered, plan.rows, plan.ledger.rho_budget)
        fixed = _fixed_by_group(rule_texts, aim.by)
        result, counts, prior = _measure(
            source, plan, target, aim, make_rng(seed), noise, tell, held, fixed, declared_rules
        )
        mech = ChargedMechanisms(plan.ledger, noise)
        outside = count_outside(counts, plan.schema, result.measurements, plan.discovered, held, mech)
        empty_from_measurements(plan.schema, result.measurements, plan.discovered, outside)
        range_levels_empty_from_measurements(plan.schema, result.measurements, _range_columns(discovery, schema, plan))
        end_levels_empty_from_measurements(plan.schema, result.measurements, _discovered_ranges(discovery, plan))
        group_levels_empty_from_measurements(plan.schema, result.measurements, aim.by)
        rel = Release(
            schema=plan.schema,
            model=result.model,
            ledger=_whole_ledger(plan.ledger, result.ledger),
            eps=eps,
            delta=delta,
            workload=list(result.workload),
            measurements=list(result.measurements),
            target=target,
            created=created,
            info=_public_info(result, read),
            noise=noise.describe(),
            schema_status=plan.status,
            rules=rule_texts,
            recycled=list(prior),
            local_info={k: v for k, v in dict(result.info).items() if k != "settings"} | {"rounds": int(result.rounds)},
            evidence={"clipped": dict(plan.clipped), "dropped": dict(plan.dropped)},
        )
        _warn_weak(rel, tell)
        return rel


def _range_columns(discovery: DiscoveryOptions, schema: Any, plan: SchemaPlan) -> list[str]:
    """The columns whose levels are a hint's declared whole-number range, one level per whole number
    (:meth:`ddssp.data.codebook.ColumnHint.column`): neither declared by the schema (a declared
    level is the publisher's) nor discovered."""
    declared = set(getattr(schema, "names", None) or ())
    out = []
    for h in discovery.hints.hints if discovery.hints else ():
        if h.levels is not None or h.bounds is None or not h.whole:
            continue
        if h.name in declared or h.name in plan.discovered or h.name not in plan.schema:
            continue
        col = plan.schema.column(h.name)
        if col.kind == "numeric" and col.edges is None:
            out.append(h.name)
    return out


def _fixed_by_group(rule_texts: Any, by: str | None) -> list[str]:
    """The columns the rules declare to depend on the grouping column alone (``DENSITY depends on PUMA``)."""
    if by is None or not rule_texts:
        return []
    from ddssp.data.rules import dependencies

    return [d.column for d in dependencies(rule_texts) if d.by == (by,)]


def _discovered_ranges(discovery: DiscoveryOptions, plan: SchemaPlan) -> list[str]:
    """The discovered columns whose range discovery chose: those a hint (``--bounds``, a codebook)
    bounds are binned by discovery inside a public range, which no noisy count can narrow."""
    bounded = {h.name for h in (discovery.hints.hints if discovery.hints else ()) if h.bounds is not None}
    return [c for c in plan.discovered if c not in bounded]


def _warn_weak(rel: Release, tell: Callable[[Any], None]) -> None:
    """One :class:`~ddssp.releasefile.quality.WeakReleaseWarning` per kind of problem the release's
    grade shows (from its noisy outputs only), told as a notice and raised."""
    import warnings

    from ddssp.releasefile.quality import WeakReleaseWarning, problems

    for line in problems(rel.grade()):
        w = WeakReleaseWarning(f"weak release: {line}")
        tell(Notice(w))
        warnings.warn(w, stacklevel=3)


def _read_rules(rules: Any) -> list[Any]:
    """The declared rules, read (:func:`ddssp.data.rules.as_rules`)."""
    from ddssp.data.rules import as_rules

    return as_rules(rules)


@contextlib.contextmanager
def _progress(progress: bool | Callable | None) -> Iterator[Callable[[Any], None]]:
    """Where the release's events go: the caller's callable, a :class:`~ddssp.progress.PhaseProgress`
    bar when wanted, or nowhere."""
    if callable(progress):
        yield progress
        return
    if progress is False:
        yield lambda event: None
        return
    from ddssp.progress import PhaseProgress

    with PhaseProgress(live=True if progress else None) as bar:

        def show(event: Any) -> None:
            if isinstance(event, PhaseStarted):
                bar.start(event.name)
            elif isinstance(event, SchemaPlanned):
                bar.end()
            elif not isinstance(event, Notice):
                bar.aim(event)

        yield show


def _planned(
    data: Any,
    schema: Any,
    budget: tuple[float, float],
    read: ReadOptions,
    discovery: DiscoveryOptions,
    plan: SchemaPlan | None,
    noise: Any,
    tell: Callable[[Any], None],
) -> tuple[Source, SchemaPlan]:
    """The release's table and its planned schema (declared, or discovered with ``noise``)."""
    eps, delta = budget
    if read.encoded:
        if schema is None:
            raise SchemaError("integer-coded data (ReadOptions.encoded) needs its schema")
        source = coded_source(data, schema, read)
        plan = SchemaPlan(schema, Ledger(rho_from_eps_delta(eps, delta)), SCHEMA_DECLARED)
        tell(SchemaPlanned(plan))
        return source, plan
    tell(PhaseStarted("reading"))
    source = open_source(data, read, tell)
    if plan is None:
        source, plan = plan_source(source, schema, eps=eps, delta=delta, discovery=discovery, noise=noise, tell=tell)
    else:
        source = source.in_memory(plan.schema)
    tell(SchemaPlanned(plan))
    return source, plan


def _measure(
    source: Source,
    plan: SchemaPlan,
    target: str | None,
    aim: AimOptions,
    rng: np.random.Generator,
    noise: Any,
    tell: Callable[[Any], None],
    held: float = 0.0,
    fixed: Any = (),
    rules: Any = (),
) -> tuple[Any, Callable[[list[str]], dict[str, int]], list[Any]]:
    """Run AIM on the table's counts under ``plan.schema`` with what the plan left of the budget,
    less ``held`` (kept for counts after AIM), fitting discovery's recycled one-way marginals with
    its own measurements; ``fixed`` are the columns the rules fix by the grouping column
    (:func:`~ddssp.pipeline.plan.build_workload`). Returns AIM's result, a function giving the exact count of the rows in each
    named column's catch-all level (``schema.column(c).missing``), and the recycled marginals it fitted."""
    from ddssp.data.counting import count_marginals
    from ddssp.marginals.aim import run_aim

    schema = plan.schema
    if target is not None:
        schema.column(target)
    table, backend, columns = source.counted(plan.dropped)
    read = source.read
    if isinstance(table, pd.DataFrame) and backend == "numpy":
        codes = table if read.encoded else schema.encode(table)
        if len(codes) == 0:
            raise SchemaError("the table has no rows")
    else:

        def codes(cliques):  # AIM calls this once, with every clique it may measure
            return count_marginals(
                table,
                schema,
                cliques,
                backend=backend,
                csv_options=read.csv,
                memory_limit=read.memory_limit,
                spark_master=read.spark_master,
                columns=columns,
            )

    if aim.absent_areas and aim.by in schema and aim.by not in plan.discovered:
        codes = _fold_absent_areas(codes, plan, aim.by, noise, held, rules)
    w = build_workload(aim.workload, schema.domain, target, aim.max_cells, by=aim.by, fixed=fixed)
    check_release_size(schema.domain, w, aim.rounds, plan.ledger)  # what the reader would refuse, before AIM
    rho_aim = plan.ledger.rho_budget - plan.ledger.spent - held
    if not rho_aim > 0:
        raise DDSSPError("nothing of the budget is left for the marginals after schema discovery")

    def caught(columns: list[str]) -> dict[str, int]:
        if isinstance(codes, pd.DataFrame):
            got = {(c,): np.bincount(codes[c].to_numpy(), minlength=schema.column(c).size) for c in columns}
        else:  # the counting backend, one more scan of the table
            got = codes([(c,) for c in columns])
        return {c: int(got[(c,)][list(schema.column(c).labels).index(schema.column(c).missing)]) for c in columns}

    s = aim.settings
    prior = plan.recycled if s.engine == "numpy" else []  # the JAX engine takes one noise sd per measurement
    result = run_aim(
        codes, schema.domain, w, rho_aim, rng=rng, noise=noise, settings=s, callback=tell, target=target, prior=prior
    )
    return result, caught, prior


def _fold_absent_areas(codes: Any, plan: SchemaPlan, by: str, noise: Any, held: float, rules: Any = ()) -> Any:
    """The declared grouping column's absent areas folded into one empty level before AIM
    (:func:`ddssp.pipeline.areas.areas_shown`, ``AREA_SHARE`` of AIM's budget); ``plan.schema`` is
    changed in place, and the codes (a frame of codes, or the counting backend, which encodes with
    the schema) follow it. A declared rule that names an absent area keeps the column as declared.
    Returns the codes."""
    import warnings

    from ddssp.dp.discovery import ChargedMechanisms
    from ddssp.pipeline.areas import AREA_SHARE, AreasLeftOutWarning, applies, areas_shown
    from ddssp.releasefile.format import SCHEMA_DECLARED, SCHEMA_DISCOVERED

    schema = plan.schema
    col = schema.column(by)
    rho = AREA_SHARE * (plan.ledger.rho_budget - plan.ledger.spent - held)
    if not applies(col) or not rho > 0:  # before the count: a scan of the table for nothing
        return codes
    if isinstance(codes, pd.DataFrame):
        exact = np.bincount(codes[by].to_numpy(), minlength=col.size)
    else:
        exact = np.asarray(codes([(by,)])[(by,)])
    found = areas_shown(exact, col, ChargedMechanisms(plan.ledger, noise), rho)
    if found is None:
        return codes
    if plan.status == SCHEMA_DECLARED:  # the column's levels now rest on noisy counts too
        plan.status = SCHEMA_DISCOVERED
    if found.column is None or not _rules_fit(rules, schema, found.column):
        return codes
    schema.replace_column(found.column)
    if isinstance(codes, pd.DataFrame):
        codes = codes.assign(**{by: found.recode[codes[by].to_numpy()]})
    warnings.warn(
        AreasLeftOutWarning(
            f"--by {by}: {len(found.absent)} of the {col.size} declared areas show no rows in a noisy count; "
            f"they are released as one empty level {found.column.missing!r}"
        ),
        stacklevel=3,
    )
    return codes


def _rules_fit(rules: Any, schema: Schema, col: Any) -> bool:
    """Whether the declared rules still compile with ``col`` in place of its namesake in ``schema``."""
    if not rules:
        return True
    from ddssp.data.rules import RuleError, compile_rules

    trial = Schema([col if c.name == col.name else c for c in schema.columns])
    try:
        compile_rules(rules, trial)
    except RuleError:
        return False
    return True


def _whole_ledger(planned: Ledger, measured: Ledger) -> Ledger:
    """The release's ledger: the planning entries (discovery, a DP schema file) then AIM's."""
    full = Ledger(planned.rho_budget, delta_budget=planned.delta_budget)
    full.entries = list(planned.entries) + list(measured.entries)
    return full


def _public_info(result: Any, read: ReadOptions) -> dict[str, Any]:
    """What the file records of how the release was made: AIM's public settings and how a CSV was
    read (reused by ``evaluate``); timings and iteration counts stay on the terminal."""
    settings = dict(result.info.get("settings", {}))
    info: dict[str, Any] = {"settings": settings} if _jsonable(settings) else {}
    if read.csv is not None:
        info["reading"] = {
            "na_values": list(read.csv.na_values),
            "delimiter": read.csv.delimiter,
            "encoding": read.csv.encoding,
        }
    return info


def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False
