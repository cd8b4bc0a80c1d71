"""``release()``: run AIM on a table and return the :class:`~ddssp.releasefile.Release`.

This is the only step of ddssp that reads the sensitive data.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ddssp._warnings import warnings_once
from ddssp.dp import Ledger, check_delta, check_eps, make_rng, rho_from_eps_delta
from ddssp.dp.noise import make_noise
from ddssp.errors import DDSSPError, SchemaError
from ddssp.marginals.workload import check_release_size
from ddssp.pipeline.options import (
    DEFAULT_DELTA,
    DEFAULT_DISCOVERY_SHARE,
    AimOptions,
    DiscoveryOptions,
    ReadOptions,
)
from ddssp.pipeline.plan import SchemaPlan, build_workload, plan_schema
from ddssp.releasefile.format import SCHEMA_DECLARED
from ddssp.releasefile.model import Release


def release(
    data: Any,
    schema: Any = None,
    *,
    eps: float,
    delta: float = DEFAULT_DELTA,
    target: str | None = None,
    workload: Any = "all-pairs",
    max_cells: int | None = None,
    max_model_size: float | None = None,
    seed: int | np.random.Generator | None = None,
    rounds: int | None = None,
    iters: int | None = None,
    callback: Callable[[Any], None] | None = None,
    encoded: bool = False,
    engine: str = "numpy",
    insecure_seed: int | None = None,
    discover: bool | None = None,
    discovery_share: float = DEFAULT_DISCOVERY_SHARE,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    dates: Sequence[str] = (),
    bins: int | None = None,
    max_levels: int | None = None,
    accept_draft_schema: bool = False,
    plan: SchemaPlan | None = None,
    backend: str | None = None,
    csv_options: Any = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
    read: ReadOptions | None = None,
    discovery: DiscoveryOptions | None = None,
    progress: bool | None = None,
) -> Release:
    """Run AIM on ``data`` and return the release; the budget (eps, delta) is converted to zCDP and
    spent in full.

    Parameters
    ----------
    data : pandas.DataFrame, str, Path or Spark DataFrame
        Raw values per ``schema`` (or integer codes with ``encoded=True``), or a path to a CSV /
        Parquet file, or a Spark DataFrame. A table given by path or Spark is counted by the
        counting layer (:mod:`ddssp.data.counting`) in one scan, and needs every column declared
        (or a ``plan``): discovery reads a DataFrame.
    schema : ddssp.data.Schema, optional
        The declared columns. Columns it does not declare are discovered under DP inside the same
        budget (:func:`plan_schema`, with the same noise source) when ``discover`` is True (the
        default when ``schema`` is None); with ``discover=False`` a column missing from the schema
        is an error.
    eps, delta : float
        The (eps, delta)-DP guarantee of the whole release.
    target : str, optional
        The column a regression will predict (for ``workload="target"``; recorded in the file).
    workload : str, Path or list
        "all-pairs", "target" (pairs with the target), a JSON workload file, or a list of
        (clique, weight).
    max_cells : int, optional
        Cap on the cells of a workload clique.
    max_model_size : float, optional
        Cap on the graphical model's size, in MB (default: 80 up to 25 columns, then 2000 / columns).
    seed : int or numpy.random.Generator, optional
        Reproducibility of everything that is not DP noise. It never reaches the noise: that comes
        from OpenDP's secure samplers.
    rounds, iters : int, optional
        AIM's number of rounds and mirror-descent iterations (defaults chosen by AIM).
    callback : callable, optional
        Called by AIM after each round.
    encoded : bool
        ``data`` holds integer codes of ``schema`` (no discovery).
    engine : str
        AIM's inference engine.
    insecure_seed : int, optional
        FOR TESTS ONLY. Draw the noise from ``numpy.random.default_rng(insecure_seed)``: the
        release is then reproducible, NOT PRIVATE (anyone with the seed can subtract the noise),
        and stamped so (:attr:`Release.stamp`) in the file and by every command that reads it.
    discover : bool, optional
        Discover the undeclared columns (default: when ``schema`` is None).
    discovery_share, categorical, numeric, dates, bins, max_levels
        The fields of ``discovery`` as keywords (see :class:`DiscoveryOptions`).
    accept_draft_schema : bool
        Accept a data-derived draft schema; the release is then stamped not private.
    plan : SchemaPlan, optional
        A schema and its ledger from :func:`plan_schema`, used as they are.
    backend, csv_options, memory_limit, spark_master
        The fields of ``read`` as keywords (see :class:`ReadOptions`; ``csv_options`` is its ``csv``).
    read : ReadOptions, optional
        How a table given by path is read; not together with its flat keywords.
    discovery : DiscoveryOptions, optional
        How undeclared columns are discovered; not together with its flat keywords.
    progress : bool, optional
        Show the phases and AIM's rounds on stderr: by default when stderr is a terminal or the
        call runs in a Jupyter notebook, never in a log; ``False`` never, ``True`` always. Ignored
        when ``callback`` is given (the caller then shows progress itself).

    Returns
    -------
    Release
        The release (with ``local_info`` for the terminal, never written to the file).

    Raises
    ------
    DDSSPError
        For invalid parameters, options given twice, or nothing of the budget left after discovery.
    SchemaError
        For data that does not fit the schema, or a schema that cannot be planned.
    """
    read = _read_options(read, backend, csv_options, memory_limit, spark_master)
    discovery = _discovery_options(discovery, discovery_share, categorical, numeric, dates, bins, max_levels)
    aim = AimOptions(workload, max_cells, max_model_size, rounds, iters, engine)
    context: dict[str, Any] = {}
    with warnings_once(context), _progress(progress, callback) as cb:
        return _release(
            data,
            schema,
            eps=eps,
            delta=delta,
            target=target,
            encoded=encoded,
            discover=discover,
            accept_draft_schema=accept_draft_schema,
            plan=plan,
            seed=seed,
            insecure_seed=insecure_seed,
            read=read,
            discovery=discovery,
            aim=aim,
            callback=cb,
            context=context,
        )


@contextlib.contextmanager
def _progress(progress: bool | None, callback: Callable | None) -> Iterator[Callable | None]:
    """AIM's callback: the caller's, or a :class:`~ddssp.progress.PhaseProgress` bar when wanted."""
    if callback is not None or progress is False:
        yield callback
        return
    from ddssp.progress import PhaseProgress

    with PhaseProgress(live=True if progress else None) as bar:
        yield bar.aim


def _release(
    data: Any,
    schema: Any,
    *,
    eps: float,
    delta: float,
    target: str | None,
    encoded: bool,
    discover: bool | None,
    accept_draft_schema: bool,
    plan: SchemaPlan | None,
    seed: int | np.random.Generator | None,
    insecure_seed: int | None,
    read: ReadOptions,
    discovery: DiscoveryOptions,
    aim: AimOptions,
    callback: Callable[[Any], None] | None,
    context: dict[str, Any],
) -> Release:
    from ddssp.data.counting import count_marginals, default_backend, table_columns
    from ddssp.marginals.aim import run_aim

    eps, delta = check_eps(eps), check_delta(delta)
    created = _dt.datetime.now(_dt.UTC).date().isoformat()  # taken before the data is read
    noise = make_noise(insecure_seed)
    chosen = default_backend(data) if read.backend is None else read.backend
    in_memory = isinstance(data, pd.DataFrame) and chosen == "numpy"
    if encoded:
        if schema is None:
            raise SchemaError("integer-coded data (encoded=True) needs its schema")
        plan = SchemaPlan(schema=schema, ledger=Ledger(rho_from_eps_delta(eps, delta)), status=SCHEMA_DECLARED)
    elif plan is None:
        # A table read by the counting layer is planned from its column names (every column declared);
        # a DataFrame's undeclared columns are discovered under DP unless discover=False.
        table = data
        if not isinstance(data, pd.DataFrame):
            table = table_columns(data, read.csv)
        elif not (schema is None if discover is None else discover):
            if schema is None:
                raise SchemaError("no schema given: pass one, or discover it privately (discover=True)")
            extra = [str(c) for c in data.columns if str(c) not in schema]
            if extra:
                schema.encode(data)  # the usual error naming the columns not in the schema
        plan = plan_schema(
            table,
            schema,
            eps=eps,
            delta=delta,
            discovery_share=discovery.share,
            categorical=discovery.categorical,
            numeric=discovery.numeric,
            dates=discovery.dates,
            bins=discovery.bins,
            max_levels=discovery.max_levels,
            accept_draft=accept_draft_schema,
            noise=noise,
        )
    schema = plan.schema
    context["discovered"] = set(plan.discovered)
    if plan.dropped and isinstance(data, pd.DataFrame) and not encoded:  # columns discovery left out
        data = data[[c for c in data.columns if str(c) not in plan.dropped]]
    if target is not None:
        schema.column(target)
    if encoded or in_memory:
        codes = schema.encode(data) if not encoded else _check_codes(data, schema)
        if len(codes) == 0:
            raise SchemaError("the table has no rows")
    else:

        def codes(cliques):  # AIM calls this once, with every clique it may measure
            return count_marginals(
                data,
                schema,
                cliques,
                backend=chosen,
                csv_options=read.csv,
                memory_limit=read.memory_limit,
                spark_master=read.spark_master,
            )

    domain = schema.domain
    w = build_workload(aim.workload, domain, target, aim.max_cells)
    check_release_size(domain, w, aim.rounds, plan.ledger)
    ledger = plan.ledger
    rho_aim = ledger.rho_budget - ledger.spent
    if not rho_aim > 0:
        raise DDSSPError("nothing of the budget is left for the marginals after schema discovery")
    rng = make_rng(seed)
    result = run_aim(
        codes,
        domain,
        w,
        rho_aim,
        rng=rng,
        max_model_size=aim.max_model_size,
        rounds=aim.rounds,
        iters=aim.iters,
        callback=callback,
        engine=aim.engine,
        noise=noise,
    )
    full = Ledger(ledger.rho_budget, delta_budget=ledger.delta_budget)
    full.entries = list(ledger.entries) + list(result.ledger.entries)
    # Only public settings go to the file; timings and iteration counts stay on the terminal.
    settings = dict(result.info.get("settings", {}))
    info = {"settings": settings} if _jsonable(settings) else {}
    if read.csv is not None:  # public settings: how the raw table was read (reused by `evaluate`)
        info["reading"] = {
            "na_values": list(read.csv.na_values),
            "delimiter": read.csv.delimiter,
            "encoding": read.csv.encoding,
        }
    return Release(
        schema=schema,
        model=result.model,
        ledger=full,
        eps=eps,
        delta=delta,
        workload=list(result.workload),
        measurements=list(result.measurements),
        target=target,
        created=created,
        info=info,
        noise=noise.describe(),
        schema_status=plan.status,
        local_info={k: v for k, v in dict(result.info).items() if k != "settings"} | {"rounds": int(result.rounds)},
    )


def _read_options(
    read: ReadOptions | None, backend: Any, csv_options: Any, memory_limit: Any, spark_master: Any
) -> ReadOptions:
    """``read``, or one built from the flat keywords; both at once is an error."""
    flat = (backend, csv_options, memory_limit, spark_master)
    if read is None:
        return ReadOptions(backend=backend, csv=csv_options, memory_limit=memory_limit, spark_master=spark_master)
    if not isinstance(read, ReadOptions):
        raise DDSSPError(f"read must be a ReadOptions, got {type(read).__name__}")
    if any(v is not None for v in flat):
        raise DDSSPError(
            "give the reading options either as read=ReadOptions(...) or as keywords "
            "(backend, csv_options, memory_limit, spark_master), not both"
        )
    return read


def _discovery_options(
    discovery: DiscoveryOptions | None,
    share: Any,
    categorical: Any,
    numeric: Any,
    dates: Any,
    bins: Any,
    max_levels: Any,
) -> DiscoveryOptions:
    """``discovery``, or one built from the flat keywords; both at once is an error."""
    if discovery is None:
        return DiscoveryOptions(
            share=share, categorical=categorical, numeric=numeric, dates=dates, bins=bins, max_levels=max_levels
        )
    if not isinstance(discovery, DiscoveryOptions):
        raise DDSSPError(f"discovery must be a DiscoveryOptions, got {type(discovery).__name__}")
    flat = categorical or numeric or dates or bins is not None or max_levels is not None
    if share != DEFAULT_DISCOVERY_SHARE or flat:
        raise DDSSPError(
            "give the discovery options either as discovery=DiscoveryOptions(...) or as "
            "keywords (discovery_share, categorical, numeric, dates, bins, max_levels), not both"
        )
    return discovery


def _check_codes(codes: pd.DataFrame, schema: Any) -> pd.DataFrame:
    missing = [c for c in schema.names if c not in codes.columns]
    if missing:
        raise SchemaError(f"columns {missing} of the schema are not in the data")
    codes = codes[schema.names]
    domain = schema.domain  # built once: it is a new dict on each access
    for c in schema.names:
        col = codes[c]
        if not np.issubdtype(col.dtype, np.integer):
            raise SchemaError(f"column {c!r} is not integer-coded")
        if col.min() < 0 or col.max() >= domain[c]:
            raise SchemaError(f"column {c!r} has codes outside 0..{domain[c] - 1}")
    return codes.astype(np.int64)


def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False
