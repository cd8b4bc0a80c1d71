from ddssp.commands import (
    comma_list,
    discovery_group,
    flag_errors,
    input_group,
    output_group,
    positive_int,
    privacy_group,
    with_flags,
)

HELP = (
    "discover a schema under DP (--eps), draft one (not private), --check a table against a schema, "
    "or start a codebook from a data dictionary (--from-dictionary)"
)

DESCRIPTION = """With --eps: discover a schema JSON from a table (CSV or Parquet) under (eps, delta)-DP:
levels by a thresholded noisy-count key release, numeric bounds and bins from noisy counts. The file
records its ledger entries; a release made with it counts that cost inside its own eps.

Without --eps: draft a schema from the data WITHOUT privacy (stamped as a draft; `ddssp release`
refuses it until the stamp is removed after review, or with --accept-draft-schema). With --check
SCHEMA: check that the table encodes under a reviewed schema or domain file (writes nothing).

With --from-dictionary FILE (no DATA): read a data dictionary (Frictionless Table Schema or NIST-style
JSON codebook) and write a ddssp codebook, one line per column, to review and pass to `ddssp release
--codebook` (no data is read: a dictionary is public).

WARNING: the levels, bounds and bin edges in a draft are read from the data. They are NOT private
(a bound is often one person's value). Review them and replace them with public knowledge (official
code lists, legal or physical ranges, round numbers) before using the schema for a release."""

WARNING = (
    "ddssp: WARNING: the levels, bounds and bin edges in {out} were read from the data and are NOT "
    "private.\n"
    "ddssp: WARNING: review them and replace them with public knowledge (official code lists, "
    "legal/physical ranges, round numbers) before using this schema for a release."
)


EXAMPLES = """
    ddssp schema adult_raw.csv --eps 0.1 --na-values '?' -o adult.schema.json   # private, costs eps
    ddssp schema adult_raw.csv --check adult.schema.json
    ddssp schema --from-dictionary data_dictionary.json -o codebook.json           # reads no data
"""


def add_arguments(p) -> None:
    """Add the options of ``ddssp schema`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument(
        "data",
        metavar="DATA",
        nargs="?",
        help="table to draft the schema from (.csv or .parquet; not with --from-dictionary)",
    )
    input_group(p).add_argument(
        "--from-dictionary",
        metavar="FILE",
        help="write a ddssp codebook (-o) from a data dictionary (Frictionless Table Schema or NIST-style "
        "JSON codebook), reading no data",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("-o", "--output", help="schema JSON to write, e.g. DATA.schema.json")
    mode.add_argument(
        "--check",
        metavar="SCHEMA",
        help="check that DATA encodes under this schema JSON or domain file; writes nothing",
    )
    privacy_group(p).add_argument(
        "--eps",
        type=float,
        default=None,
        help="discover the schema under DP with this epsilon (> 0); without it, a NOT private draft",
    )
    privacy_group(p).add_argument(
        "--delta", type=float, default=None, help="with --eps: delta, in (0, 1) (default 1e-9)"
    )
    discovery_group(p).add_argument(
        "--bins",
        type=positive_int,
        default=None,
        help="bins per numeric column (draft: equal-width, default 10, and numeric columns with at "
        "most this many distinct values keep them as levels; --eps: equal-frequency, default "
        "chosen for the budget)",
    )
    discovery_group(p).add_argument(
        "--categorical",
        type=comma_list,
        default=None,
        metavar="A,B",
        help="columns to treat as categorical even if they hold numbers (with --check and a "
        "domain file: the categorical columns of the domain)",
    )
    discovery_group(p).add_argument(
        "--numeric", type=comma_list, default=None, metavar="A,B", help="with --eps: columns that are numeric"
    )
    discovery_group(p).add_argument(
        "--dates",
        type=comma_list,
        default=None,
        metavar="A,B",
        help="with --eps: columns of ISO dates / timestamps or clock times (binned on a time axis; "
        "whether dates or clock times, and the range, still come from noisy counts)",
    )
    discovery_group(p).add_argument(
        "--max-levels",
        type=positive_int,
        default=None,
        help="draft: refuse categorical columns with more distinct values than this (default "
        "100); --eps: whole-number columns with at most this many values become levels (default 32)",
    )
    input_group(p).add_argument(
        "--na-values",
        type=comma_list,
        metavar="X,Y",
        help="cell values that mean missing, besides empty cells (e.g. '?')",
    )
    input_group(p).add_argument(
        "--columns", type=comma_list, metavar="A,B", help="use only these columns of DATA (in this order)"
    )
    input_group(p).add_argument("--drop", type=comma_list, metavar="X,Y", help="leave these columns of DATA out")
    input_group(p).add_argument(
        "--backend",
        choices=["numpy", "duckdb", "spark"],
        default="numpy",
        help="with --eps: numpy (default: DATA read in memory by pandas), duckdb (a CSV / Parquet file "
        'queried where it lives, out of core) or spark (pip install "ddssp[spark]"; DATA is any path Spark '
        "reads); duckdb and spark compute discovery's counts by aggregate queries and never hold the table",
    )
    input_group(p).add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="with --eps: duckdb's memory limit such as 2GB; numpy: refuse a table whose estimated size in "
        "memory is over it",
    )
    input_group(p).add_argument(
        "--spark-master", metavar="URL", help="with --eps and --backend spark: master URL, e.g. local[4]"
    )
    discovery_group(p).add_argument(
        "--strict",
        action="store_true",
        help="with --eps: refuse when some column cannot be discovered (by default such "
        "columns are left out, with one warning listing them)",
    )
    output_group(p).add_argument("--force", action="store_true", help="replace an existing output file")
    from ddssp.commands.hints import add_hint_arguments

    add_hint_arguments(p)


def _read(args):
    """DATA read as text with --na-values, restricted to --columns / --drop (unknown names: one error)."""
    import sys
    import warnings

    from ddssp.data.counting import CsvOptions
    from ddssp.data.safetext import terminal_text
    from ddssp.data.tables import UnnamedColumnWarning
    from ddssp.pipeline import ReadOptions, read_frame

    read = ReadOptions(
        csv=CsvOptions(na_values=tuple(args.na_values or ())), columns=args.columns, drop=args.drop or ()
    )
    with warnings.catch_warnings(record=True) as hw:
        warnings.simplefilter("always", UnnamedColumnWarning)
        df = read_frame(args.data, read)
    for w in hw:
        print(f"ddssp: warning: {terminal_text(w.message)}", file=sys.stderr)
    return df


def run(args) -> int:
    """Run ``ddssp schema``: check, discover or draft a schema.

    ``--check`` checks a schema file, ``--eps`` discovers one under DP, otherwise one is drafted from
    the data (NOT private).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    int
        The exit status, 0 (failures raise).

    Raises
    ------
    DDSSPError
        For bad input or a failed step: the CLI prints it as one line and exits non-zero.
    """
    with flag_errors():
        _check_mode(args)
        if args.from_dictionary:
            return _from_dictionary(args)
        if args.check:
            return _check(args)
        if args.eps is not None:
            return _discover(args)
        return _draft(args)


#: ``--from-dictionary`` notes a column declaring more levels than this (levels no row holds cost cells)
MANY_LEVELS = 20


def _check_mode(args) -> None:
    """Refuse DATA with --from-dictionary, no DATA without it, and hints where they are not used."""
    from ddssp.errors import DDSSPError

    if args.from_dictionary:
        if args.data is not None:
            raise DDSSPError("--from-dictionary reads no data: leave out DATA")
        if args.check:
            raise DDSSPError("--from-dictionary writes a codebook: give -o FILE, not --check")
        return
    if args.data is None:
        raise DDSSPError("give DATA (the table), or --from-dictionary FILE to start a codebook from a dictionary")
    if args.eps is None and any(getattr(args, k, None) for k in ("codebook", "bounds", "levels", "missing")):
        raise DDSSPError("--codebook, --bounds, --levels and --missing apply with --eps (and to `ddssp release`)")


def _from_dictionary(args) -> int:
    """Write a ddssp codebook from a data dictionary, with the hint flags over it; reads no data."""
    import sys

    from ddssp.commands.hints import hints
    from ddssp.data.dictionary import load_codebook
    from ddssp.data.fileio import check_output_path
    from ddssp.data.safetext import terminal_text

    book = load_codebook(args.from_dictionary) + hints(args)
    out = check_output_path(args.output, force=args.force, inputs=[args.from_dictionary])
    from pathlib import Path

    Path(out).write_text(book.to_json(), encoding="utf-8")
    whole = sum(h.column() is not None for h in book.hints)
    bounded = sum(h.bounds is not None and h.column() is None for h in book.hints)
    print(
        f"ddssp: wrote {terminal_text(str(out))}: {len(book)} columns from {terminal_text(args.from_dictionary)}, "
        f"{whole} declared whole (free), {bounded} with bounds (bins discovered inside them), "
        f"{len(book) - whole - bounded} left to discovery; review it, then `ddssp release DATA --codebook {out}`",
        file=sys.stderr,
    )
    for h in book.hints:
        if h.levels is not None and len(h.levels) > MANY_LEVELS:
            print(
                f"ddssp: note: {terminal_text(h.name)} declares {len(h.levels)} levels: levels no row holds "
                "are free to declare but take cells in every marginal with the column (and synthetic rows "
                "may land in them); keep only those the data can hold (e.g. the extract's own areas)",
                file=sys.stderr,
            )
    return 0


def _source(args):
    """DATA as discovery reads it: in memory (numpy, :func:`_read`), or where it lives (duckdb, spark)."""
    from ddssp.data.counting import CsvOptions
    from ddssp.errors import DataError
    from ddssp.pipeline import ReadOptions
    from ddssp.pipeline.source import Source, check_memory, open_source

    backend = getattr(args, "backend", "numpy")
    limit, master = getattr(args, "memory_limit", None), getattr(args, "spark_master", None)
    if backend == "spark" and limit is not None:
        raise DataError(
            "--memory-limit applies to --backend duckdb or numpy (Spark's driver memory is its own setting)"
        )
    if backend != "spark" and master is not None:
        raise DataError("--spark-master needs --backend spark")
    if backend == "numpy":
        if limit is not None:
            check_memory(args.data, len(_header(args)), limit)
        df = _read(args)
        return Source(df, [str(c) for c in df.columns], "numpy", True, ReadOptions(), frame=df)
    read = ReadOptions(
        backend=backend,
        csv=CsvOptions(na_values=tuple(args.na_values or ())),
        memory_limit=limit,
        spark_master=master,
        columns=args.columns,
        drop=args.drop or (),
    )
    return open_source(args.data, read).in_memory(None)


def _header(args) -> list[str]:
    """The columns of DATA that discovery reads (the header only)."""
    from ddssp.data.counting import CsvOptions, table_columns
    from ddssp.data.tables import select_columns

    return select_columns(table_columns(args.data, CsvOptions()), args.columns, args.drop or ())


def _discover(args) -> int:
    import sys
    import warnings

    from ddssp.commands.hints import hints
    from ddssp.data.fileio import check_output_path
    from ddssp.data.safetext import terminal_text
    from ddssp.dp import check_delta, check_eps
    from ddssp.pipeline import DEFAULT_DELTA, DiscoveryOptions, DroppedColumnsWarning, plan_schema

    eps = check_eps(args.eps)
    delta = check_delta(args.delta if args.delta is not None else DEFAULT_DELTA)
    out = check_output_path(
        args.output, force=args.force, inputs=[args.data] + ([args.codebook] if args.codebook else [])
    )
    discovery = DiscoveryOptions(
        share=1.0,
        categorical=args.categorical or (),
        numeric=args.numeric or (),
        dates=args.dates or (),
        bins=args.bins,
        max_levels=args.max_levels,
        strict=args.strict,
        hints=hints(args),
    )
    source = _source(args)
    try:
        with warnings.catch_warnings(record=True) as dw:
            warnings.simplefilter("always", DroppedColumnsWarning)
            plan = plan_schema(source.discovery_input(), None, eps=eps, delta=delta, discovery=discovery, replan=False)
    finally:
        source.closed()
    for w in dw:
        print(f"ddssp: WARNING: {terminal_text(with_flags(str(w.message)))}", file=sys.stderr)
    led = plan.ledger
    schema = plan.schema
    schema.discovery = {
        "eps": eps,
        "delta": delta,
        "rho_budget": led.rho_budget,
        "delta_budget": led.delta_budget,
        "entries": [e.to_dict() for e in led.entries],
    }
    schema.save(out, force=args.force)
    for name, note in plan.notes.items():
        print(f"ddssp:   {terminal_text(name)}: {terminal_text(note)}", file=sys.stderr)
    print(
        f"ddssp: wrote {out}: {len(schema)} columns ({len(schema.categorical)} categorical, "
        f"{len(schema.numeric)} numeric) discovered under ({eps:g}, {delta:g})-DP (rho {led.spent:.4g}, "
        f"thresholding delta {led.delta_budget:.3g}); a release made with it counts this cost inside its eps",
        file=sys.stderr,
    )
    return 0


def _check(args) -> int:
    import sys
    import warnings

    from ddssp.data import load_schema
    from ddssp.data.safetext import terminal_text

    schema = load_schema(args.check, categorical=args.categorical)
    df = _read(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema.encode(df)
    for w in caught:  # clipping notes etc.: local to the data holder
        print(f"ddssp: warning: {terminal_text(w.message)}", file=sys.stderr)
    print(
        f"ddssp: {args.data} ({len(df)} rows) encodes under {args.check}: "
        f"{len(schema)} columns ({len(schema.categorical)} categorical, {len(schema.numeric)} numeric), "
        f"domain {terminal_text(schema.domain)}",
        file=sys.stderr,
    )
    return 0


def _draft(args) -> int:
    import sys

    from ddssp.data import Schema
    from ddssp.data.fileio import check_output_path

    out = check_output_path(args.output, force=args.force, inputs=[args.data])
    df = _read(args)
    schema = Schema.infer(
        df, bins=args.bins or 10, categorical=args.categorical, max_categorical_levels=args.max_levels or 100
    )
    schema.encode(df)  # the draft must encode its own table (raises on a bug, writes nothing)
    schema.save(out, force=args.force)
    n_cat, n_num = len(schema.categorical), len(schema.numeric)
    print(
        f"ddssp: wrote {out}: {len(schema)} columns ({n_cat} categorical, {n_num} numeric), {len(df)} rows read",
        file=sys.stderr,
    )
    print(WARNING.format(out=out), file=sys.stderr)
    return 0
