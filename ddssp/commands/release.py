from ddssp.commands import (
    aim_group,
    comma_list,
    discovery_group,
    flag_errors,
    input_group,
    output_group,
    positive_int,
    privacy_group,
    required_in_usage,
    testing_option,
    warn_stamp,
    with_flags,
)
from ddssp.commands.hints import add_hint_arguments, hints

HELP = "run AIM on a sensitive table and write a DP release file (the only command that reads the data)"
DESCRIPTION = """Measure noisy marginals of DATA with AIM under (eps, delta)-DP and write one release file
holding the schema, the ledger, the noisy measurements and the fitted model. Everything else
(fit, synth, inspect) works from that file alone.

`ddssp release DATA --eps E` is enough on a raw table: every column the schema does not declare
(all of them, without --schema) is discovered under DP inside the same budget (levels by a
thresholded noisy-count key release, numeric bounds and bins from noisy counts), charged to the same
ledger. Columns a --schema or --domain file declares are public and cost nothing. The output is
DATA's stem + .release beside DATA unless -o is given."""


EXAMPLES = """
    ddssp release adult_raw.csv --eps 1 --na-values '?'        # raw table: columns discovered under DP
    ddssp release adult.csv --domain adult-domain.json --eps 1 --target income -o adult.release
"""


def add_discovery_arguments(p) -> None:
    """Add the options of private schema discovery (shared with ``ddssp schema --eps``).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    g = discovery_group(p)
    g.add_argument(
        "--categorical",
        type=comma_list,
        metavar="A,B",
        help="columns that are categorical (with a domain file: its categorical columns); "
        "discovery then skips deciding their kind",
    )
    g.add_argument("--numeric", type=comma_list, metavar="A,B", help="columns that are numeric (discovery)")
    g.add_argument(
        "--dates",
        type=comma_list,
        metavar="A,B",
        help="columns of ISO dates / timestamps or clock times (discovery: binned on a time axis, "
        "decoded as dates; whether dates or clock times, and the range, still come from noisy counts)",
    )
    g.add_argument(
        "--bins", type=positive_int, help="bins per discovered numeric column (default: chosen for the budget, 4 to 10)"
    )
    g.add_argument(
        "--max-levels",
        type=positive_int,
        default=None,
        help="whole-number columns with at most this many values in their DP range become "
        "ordered levels instead of bins (default 32)",
    )
    add_hint_arguments(p)
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


def add_arguments(p) -> None:
    """Add the options of ``ddssp release`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument("data", metavar="DATA", help="sensitive table (.csv or .parquet)")
    g = privacy_group(p)
    required_in_usage(
        g.add_argument(
            "--eps", type=float, default=None, help="privacy parameter epsilon (> 0; smaller is more private); required"
        )
    )
    g.add_argument("--delta", type=float, default=None, help="privacy parameter delta, in (0, 1) (default 1e-9)")
    src = g.add_mutually_exclusive_group()
    src.add_argument(
        "--schema",
        help="schema JSON (reviewed, or from `ddssp schema --eps`), or a domain file; "
        "may name only some columns (the rest are discovered). Declared "
        "columns are public and cost nothing",
    )
    src.add_argument("--domain", help='domain file {"column": levels}: DATA holds integer codes 0..levels-1')
    g.add_argument(
        "--accept-draft-schema",
        action="store_true",
        help="release with a data-derived draft schema (from `ddssp schema` without --eps); "
        "the release is then marked 'schema not private'",
    )
    g.add_argument(
        "--seed",
        type=int,
        help="seed for what is not DP noise (default: fresh OS entropy); the noise itself always "
        "comes from OpenDP's secure samplers and no seed reaches it",
    )
    g = input_group(p)
    g.add_argument(
        "--backend",
        choices=["numpy", "duckdb", "spark"],
        default="duckdb",
        help="counting backend: duckdb (default; reads CSV / Parquet out of core, one scan), "
        'numpy (pandas in memory) or spark (pip install "ddssp[spark]"; DATA is any '
        "path Spark reads: local, HDFS, S3). duckdb and spark also discover undeclared columns where "
        "the table lives (aggregate queries; the table is never read in memory)",
    )
    g.add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="duckdb: memory limit such as 2GB for its counting and discovery queries (DuckDB spills to a "
        "temporary directory beyond it); numpy: refuse a table whose estimated size in memory is over it",
    )
    g.add_argument(
        "--spark-master",
        metavar="URL",
        help="spark: master URL, e.g. local[4] or spark://host:7077 (default: the spark-submit session, else local[*])",
    )
    g.add_argument("--delimiter", default=",", help="CSV field delimiter (default ,; \\t for tab)")
    g.add_argument("--encoding", default="utf-8", help="CSV text encoding (default utf-8)")
    add_discovery_arguments(p)
    discovery_group(p).add_argument(
        "--discovery-share",
        type=float,
        default=None,
        help="share of the zCDP budget spent discovering undeclared columns (default 0.1)",
    )
    discovery_group(p).add_argument(
        "--strict",
        action="store_true",
        help="refuse the release when some column cannot be discovered at this budget (by default such "
        "columns are left out, with one warning listing them)",
    )
    _add_aim_arguments(p)
    g = output_group(p)
    g.add_argument("-o", "--output", help="release file to write (default: DATA's stem + .release, beside DATA)")
    g.add_argument("--force", action="store_true", help="replace an existing output file")
    g.add_argument(
        "--sign-key",
        metavar="KEY.pem",
        help="sign the release with this Ed25519 private key (PEM; `openssl genpkey -algorithm ed25519 "
        "-out key.pem`); readers check it with `ddssp verify --public-key`",
    )
    g.add_argument(
        "--dataset-name",
        metavar="NAME",
        help="a public name for the data set, written to the manifest beside the release date; "
        "with --sign-key the signature binds both",
    )
    g.add_argument("--quiet", action="store_true", help="no progress and no summary")
    g.add_argument(
        "--verbose", action="store_true", help="when stderr is not a terminal (a log file), print one line per phase"
    )
    testing_option(
        p,
        "--insecure-seed",
        type=int,
        metavar="N",
        help="draw the DP noise from a numpy generator seeded with N. The release is then NOT "
        "PRIVATE (anyone with N can subtract the noise) and is stamped so",
    )


def _add_aim_arguments(p) -> None:
    """The AIM group of ``ddssp release``: workload, target share, model size, rounds, engine."""
    g = aim_group(p)
    g.add_argument(
        "--target",
        help="regression target column: its one-way marginal and its pair with every other column are "
        "measured first (--target-share of the budget), then AIM spends the rest on the workload",
    )
    g.add_argument(
        "--target-share",
        type=float,
        default=None,
        help="with --target: share of AIM's budget for the target's one-way marginal and pairs "
        "(default 0.35, raised up to 0.8 on a small table)",
    )
    g.add_argument(
        "--workload",
        default="all-pairs",
        help="all-pairs (default), target (pairs with --target), or a JSON file of cliques",
    )
    g.add_argument(
        "--by",
        metavar="COLUMN",
        help="a public grouping column (e.g. a geography the tables are published by): the workload "
        "becomes the pairs within each group, every marginal (COLUMN, a, b), plus the cliques of a "
        "--workload file; a column the --rules declare to depend on COLUMN is asked for with it only, "
        "and a group whose noisy counts do not show rows gets none",
    )
    g.add_argument(
        "--absent-areas",
        action="store_true",
        help="with --by on a declared column (a codebook's whole list of areas): count its areas first "
        "(1%% of AIM's budget) and leave out before AIM those the noisy counts show no rows in, as one "
        "empty level",
    )
    g.add_argument("--max-cells", type=int, help="drop workload marginals with more cells than this")
    g.add_argument(
        "--rules",
        metavar="FILE",
        help="consistency rules, one a line (`AGEP < 15 -> MSP == N`, `DENSITY depends on PUMA`, "
        "`PINCP_DECILE increases with PINCP`): public, charged nothing, written into the release; no "
        "synthetic row breaks one (see the agency guide)",
    )
    g.add_argument(
        "--max-model-size",
        type=float,
        default=None,
        help="model size limit in MB (default 80 up to 25 columns, then 2000 / columns)",
    )
    g.add_argument("--rounds", type=int, help="AIM rounds (default 16 x number of columns)")
    g.add_argument("--iters", type=int, help="estimation iterations per round (default: adaptive)")
    g.add_argument(
        "--engine",
        choices=["numpy", "mbi"],
        default="numpy",
        help="estimation engine: numpy mirror descent (default, nothing compiled) or mbi's "
        "JAX MirrorDescent (the slow reference path)",
    )


def _check_model_size(max_model_size: float | None) -> None:
    """Refuse, before anything is read, a ``--max-model-size`` whose release file would not load.

    The file's reader accepts model tables up to :func:`ddssp.data.limits.max_model_mb` of the load
    budget (80 MB under the default budget); a larger model would be measured and then refused when
    written.
    """
    from ddssp.data.limits import MAX_MEMORY_ENV, max_memory_default, max_model_mb
    from ddssp.errors import DDSSPError

    limit = max_model_mb(max_memory_default())
    if max_model_size is not None and max_model_size > limit:
        raise DDSSPError(
            f"--max-model-size {max_model_size:g} is more than the {limit:g} MB of model a release file loads "
            f"with (give at most {limit:g}, or raise the load budget with {MAX_MEMORY_ENV}=BYTES for the "
            "writer and every reader of the file)"
        )


def need_eps(args, command: str) -> float:
    """The ``--eps`` a command needs, checked.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``eps``, ``data``).
    command : str
        The command's name, for the message.

    Returns
    -------
    float

    Raises
    ------
    PrivacyParameterError
        When eps is missing (the message shows how to give it) or not positive and finite.
    """
    from ddssp.dp import check_eps
    from ddssp.errors import PrivacyParameterError

    if args.eps is None:
        raise PrivacyParameterError(
            f"give the privacy budget: `ddssp {command} {args.data} --eps 1` (eps > 0; smaller is more "
            "private). Columns without a declared schema are then discovered privately inside that budget; "
            "to declare one instead, see `ddssp schema --help`"
        )
    return check_eps(args.eps)


def check_codebook_file(path):
    """Refuse a ddssp schema file given as ``--codebook``, in one line saying to pass it as
    ``--schema``: a schema declares every column it names (public, nothing spent on them), a codebook
    only gives hints for discovery, so reading one as the other would change what the release is.

    Parameters
    ----------
    path : str or path-like
        The ``--codebook`` file. A file that does not read as JSON is left to the codebook reader,
        which says what is wrong.

    Raises
    ------
    SchemaError
        When the file is a ddssp schema (``"format": "ddssp-schema/1"``).
    """
    import json
    from pathlib import Path

    from ddssp.data.dictionary import codebook_kind
    from ddssp.data.schema import FORMAT
    from ddssp.errors import SchemaError

    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return
    if isinstance(d, dict) and d.get("format") == FORMAT and codebook_kind(d) is None:
        raise SchemaError(
            f"codebook file {path} is a ddssp schema (it declares its columns; a codebook only gives hints): "
            f"pass it as --schema {path}"
        )


def load_declared(path, categorical):
    """A schema or domain file, and the categorical columns left for discovery.

    Parameters
    ----------
    path : str or path-like or None
        The file; None when nothing is declared.
    categorical : list of str or None
        ``--categorical``: passed to a domain file, otherwise left for discovery.

    Returns
    -------
    schema : Schema or None
    categorical : list of str or None
        The categorical columns for discovery.

    Raises
    ------
    SchemaError
        For an unreadable or invalid file.
    """
    import json
    from pathlib import Path

    from ddssp.data import load_schema

    if path is None:
        return None, categorical
    is_full = False
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        is_full = isinstance(d, dict) and "format" in d
    except (OSError, UnicodeDecodeError, ValueError):
        pass  # load_schema says what is wrong
    if is_full:
        return load_schema(path), categorical
    return load_schema(path, categorical=categorical), None


def counting_options(args):
    """The CSV reading options from the reading arguments; one-line errors for bad combinations.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``backend``, ``memory_limit``, ``spark_master``, ``delimiter``,
        ``na_values``, ``encoding``).

    Returns
    -------
    CsvOptions

    Raises
    ------
    DataError
        For ``--memory-limit`` with Spark or ``--spark-master`` without Spark.
    """
    from ddssp.data.counting import CsvOptions
    from ddssp.errors import DataError

    if args.backend == "spark" and args.memory_limit is not None:
        raise DataError(
            "--memory-limit applies to --backend duckdb or numpy (Spark's driver memory is its own setting)"
        )
    if args.backend != "spark" and args.spark_master is not None:
        raise DataError("--spark-master needs --backend spark")
    delimiter = "\t" if args.delimiter == "\\t" else args.delimiter
    return CsvOptions(delimiter=delimiter, na_values=tuple(args.na_values or ()), encoding=args.encoding)


#: printed (stderr) by a release without --target: which pairs a later regression can rest on
TARGET_NOTE = (
    "ddssp: note: no --target: a regression fitted on this release will rest on the pairs AIM happened "
    "to measure (pairs it did not measure are inferred by the model); to measure every pair with one "
    "target Y first, release with --target Y"
)


def run(args) -> int:
    """Run ``ddssp release``: read the table, plan its schema, run AIM on the budget and write the release file.

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
    import sys
    import time
    from pathlib import Path

    from ddssp.data.fileio import check_output_path
    from ddssp.dp import check_delta
    from ddssp.pipeline import DEFAULT_DELTA

    t0 = time.perf_counter()
    eps = need_eps(args, "release")
    delta_given = args.delta is not None
    delta = check_delta(args.delta if delta_given else DEFAULT_DELTA)
    if not delta_given and not args.quiet:
        print(f"ddssp: delta not given; using delta = {delta:g}", file=sys.stderr)
    data = Path(args.data)
    output = args.output if args.output is not None else data.with_suffix(".release")
    decl = args.schema or args.domain
    inputs = [args.data] + [f for f in (decl, args.codebook) if f]
    out = check_output_path(output, force=args.force, inputs=inputs)
    sign_key = None
    if args.sign_key:
        from ddssp.releasefile import load_signing_key

        sign_key = load_signing_key(args.sign_key)  # a bad key fails before the data is read
    from ddssp.releasefile.format import check_dataset_name

    check_dataset_name(args.dataset_name)
    _check_model_size(args.max_model_size)
    schema, cat = load_declared(decl, args.categorical)
    if args.codebook:
        check_codebook_file(args.codebook)
    book = hints(args)  # a bad dictionary or hint fails before the data is read

    if args.rules is not None:
        from ddssp.data.rules import load_rules

        args.rules = load_rules(args.rules)  # a bad rules file fails before the data is read
    from ddssp.progress import PhaseProgress

    progress = PhaseProgress(quiet=args.quiet, verbose=args.verbose)
    try:
        with flag_errors():
            rel = _release(args, progress, eps, delta, schema, cat, book)
        progress.start("writing")
        rel.save(out, force=args.force, inputs=[args.data], sign_key=sign_key, dataset_name=args.dataset_name)
    finally:
        progress.close()
    _report(args, rel, out, eps, delta, t0)
    return 0


def read_options(args):
    """The reading arguments as :class:`~ddssp.pipeline.ReadOptions`.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    ReadOptions
    """
    from ddssp.pipeline import ReadOptions

    return ReadOptions(
        backend=args.backend,
        csv=counting_options(args),
        memory_limit=args.memory_limit,
        spark_master=args.spark_master,
        columns=args.columns,
        drop=args.drop or (),
    )


def discovery_options(args, categorical, book):
    """The discovery arguments as :class:`~ddssp.pipeline.DiscoveryOptions` (every undeclared column
    is discovered).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    categorical : list of str or None
        The categorical columns left for discovery (see :func:`load_declared`).
    book : Codebook
        The public knowledge per column (:func:`ddssp.commands.hints.hints`).

    Returns
    -------
    DiscoveryOptions
    """
    from ddssp.pipeline import DEFAULT_DISCOVERY_SHARE, DiscoveryOptions

    return DiscoveryOptions(
        share=DEFAULT_DISCOVERY_SHARE if args.discovery_share is None else args.discovery_share,
        categorical=categorical or (),
        numeric=args.numeric or (),
        dates=args.dates or (),
        bins=args.bins,
        max_levels=args.max_levels,
        enabled=True,
        strict=args.strict,
        accept_draft=args.accept_draft_schema,
        hints=book,
    )


def aim_options(args):
    """The AIM arguments as :class:`~ddssp.pipeline.AimOptions`.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    AimOptions
    """
    from ddssp.pipeline import AimOptions

    return AimOptions(
        workload=args.workload,
        max_cells=args.max_cells,
        max_model_size=args.max_model_size,
        rounds=args.rounds,
        iters=args.iters,
        engine=args.engine,
        target_share=args.target_share,
        by=args.by,
        absent_areas=args.absent_areas,
    )


def _release(args, progress, eps, delta, schema, cat, book):
    """The Release, not yet saved: the options from the arguments, the pipeline's events and the
    clipping notes printed."""
    import warnings

    from ddssp.data import ClipWarning
    from ddssp.data.tables import UnnamedColumnWarning
    from ddssp.pipeline import DroppedColumnsWarning, release
    from ddssp.releasefile.quality import WEAK_CLIPPED, WeakReleaseWarning

    shown = (UnnamedColumnWarning, DroppedColumnsWarning, WeakReleaseWarning)  # printed from the pipeline's notices
    clipped: list[str] = []
    heavy: list[str] = []  # columns with more than WEAK_CLIPPED of their values clipped (exact, local)
    try:
        with warnings.catch_warnings(record=True) as cw:
            warnings.simplefilter("always", ClipWarning)
            rel = release(
                args.data,
                schema,
                eps=eps,
                delta=delta,
                target=args.target,
                read=read_options(args),
                discovery=discovery_options(args, cat, book),
                aim=aim_options(args),
                seed=args.seed,
                insecure_seed=args.insecure_seed,
                progress=_events(args, progress),
                rules=args.rules,
            )
        for w in cw:
            if issubclass(w.category, ClipWarning):  # a note of one column, or one merging many
                clipped += [
                    f"{p.column!r} {p.clipped}" + ("" if p.total is None else f" of {p.total}") for p in w.message.parts
                ]
                heavy += [
                    f"{p.column!r} {p.clipped / p.total:.0%}"
                    for p in w.message.parts
                    if p.total and p.clipped / p.total > WEAK_CLIPPED
                ]
            elif not issubclass(w.category, shown):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    finally:
        progress.end()
    if clipped and not args.quiet:  # one local note for the data holder; nothing of it is released
        import sys

        print(
            "ddssp: note (local, not released): values outside the discovered or declared range were "
            "clipped into it in " + ", ".join(dict.fromkeys(clipped)) + " (rows clipped)",
            file=sys.stderr,
        )
    if heavy:  # the exact shares stay on this terminal; the release's own grade says what it can see
        import sys

        print(
            "ddssp: WARNING (local, not released): the range cuts off more than "
            f"{WEAK_CLIPPED:.0%} of the values of " + ", ".join(dict.fromkeys(heavy)) + ": their tails are "
            "released as the end bins; declare ranges that hold them in a --schema file (`ddssp schema` drafts one)",
            file=sys.stderr,
        )
    return rel


def _events(args, progress):
    """The release's progress callback: phases and AIM's rounds to ``progress``, notices and the
    planned schema printed as lines."""
    import sys

    from ddssp.data.tables import UnnamedColumnWarning
    from ddssp.pipeline import Notice, PhaseStarted, SchemaPlanned

    def on(event) -> None:
        if isinstance(event, PhaseStarted):
            progress.start(event.name)
        elif isinstance(event, Notice):
            renamed = isinstance(event.warning, UnnamedColumnWarning)
            level = "warning" if renamed else "WARNING"
            print(f"ddssp: {level}: {with_flags(str(event.warning))}", file=sys.stderr)
        elif isinstance(event, SchemaPlanned):
            progress.end()
            if not args.quiet:
                _print_plan(event.plan)
        else:
            progress.aim(event)

    return on


def _print_plan(plan) -> None:
    """The discovered columns with their notes, and the not-private stamp of a draft schema."""
    import sys

    from ddssp.releasefile import SCHEMA_NOT_PRIVATE

    if plan.discovered:
        rho_d = sum(e.rho for e in plan.ledger.discovery_entries)
        print(
            f"ddssp: discovered {len(plan.discovered)} column(s) under DP (rho {rho_d:.4g} of "
            f"{plan.ledger.rho_budget:.4g} so far, thresholding delta {plan.ledger.delta_budget:.3g}):",
            file=sys.stderr,
        )
        for name, note in plan.notes.items():
            print(f"ddssp:   {name}: {note}", file=sys.stderr)
    if plan.status == SCHEMA_NOT_PRIVATE:
        print(f"ddssp: WARNING: {SCHEMA_NOT_PRIVATE}", file=sys.stderr)


def _report(args, rel, out, eps, delta, t0) -> None:
    """The release's stamp and, unless --quiet, its summary."""
    import sys
    import time

    warn_stamp(rel, out)
    if args.target is None and args.workload != "target" and not args.quiet:
        print(TARGET_NOTE, file=sys.stderr)  # once the release is made: a refused one needs no advice
    if not args.quiet:
        s = rel.summary()
        n_meas = sum(c["measurements"] for c in s["cliques"])
        t = rel.local_info.get("timings", {})
        if t:  # the data holder's terminal only: timings grow with the data and are never saved
            print(
                "Timings (not saved in the release): "
                + ", ".join(f"{k} {v:.2f} s" for k, v in t.items() if isinstance(v, (int, float))),
                file=sys.stderr,
            )
        print(
            f"Released {len(rel.schema.names)} columns: {n_meas} noisy measurements of "
            f"{len(s['cliques'])} marginals in {s['rounds']} rounds, model of "
            f"{len(s['model_cliques'])} cliques. Privacy: eps={eps:g}, delta={delta:g} "
            f"(rho budget {rel.rho_budget:.6g}, spent {rel.rho_spent:.6g}"
            + (
                f", of which discovery {s['discovery']['rho']:.4g}; thresholding delta {rel.ledger.delta_budget:.3g}"
                if s["discovery"]["entries"]
                else ""
            )
            + ")"
            + (f"; {len(rel.rules)} declared rules, followed by every synthetic row" if rel.rules else "")
            + f". Wall time {time.perf_counter() - t0:.1f} s. "
            f"Wrote {out}; inspect it with `ddssp inspect {out}`."
        )
