from ddssp.commands import comma_list, positive_int, warn_stamp

HELP = "run AIM on a sensitive table and write a DP release file (the only command that reads the data)"
DESCRIPTION = """Measure noisy marginals of DATA with AIM under (eps, delta)-DP and write one release file
holding the schema, the ledger, the noisy measurements and the fitted model. Everything else
(fit, synth, inspect) works from that file alone.

`ddssp release DATA --eps E` is enough on a raw table: every column the schema does not declare
(all of them, without --schema) is discovered under DP inside the same budget (levels by a
thresholded noisy-count key release, numeric bounds and bins from noisy counts), charged to the same
ledger. Columns a --schema or --domain file declares are public and cost nothing. The output is
DATA's stem + .release beside DATA unless -o is given."""


def add_discovery_arguments(p) -> None:
    """Options of private schema discovery (shared with `ddssp schema --eps`)."""
    p.add_argument("--categorical", type=comma_list, metavar="A,B",
                   help="columns that are categorical (with a domain file: its categorical columns); "
                        "discovery then skips deciding their kind")
    p.add_argument("--numeric", type=comma_list, metavar="A,B", help="columns that are numeric (discovery)")
    p.add_argument("--bins", type=positive_int,
                   help="bins per discovered numeric column (default: chosen for the budget, 4 to 10)")
    p.add_argument("--max-levels", type=positive_int, default=None,
                   help="whole-number columns with at most this many values in their DP range become "
                        "ordered levels instead of bins (default 32)")
    p.add_argument("--na-values", type=comma_list, metavar="X,Y",
                   help="cell values that mean missing, besides empty cells (e.g. '?')")
    p.add_argument("--columns", type=comma_list, metavar="A,B",
                   help="use only these columns of DATA (in this order)")
    p.add_argument("--drop", type=comma_list, metavar="X,Y", help="leave these columns of DATA out")


def add_arguments(p) -> None:
    p.add_argument("data", metavar="DATA", help="sensitive table (.csv or .parquet)")
    p.add_argument("--eps", type=float, default=None, help="privacy parameter epsilon (> 0); required")
    p.add_argument("--delta", type=float, default=None, help="privacy parameter delta, in (0, 1) (default 1e-9)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--schema", help="schema JSON (reviewed, or from `ddssp schema --eps`), or a domain file; "
                                      "may name only some columns (the rest are discovered)")
    src.add_argument("--domain", help='domain file {"column": levels}: DATA holds integer codes 0..levels-1')
    add_discovery_arguments(p)
    p.add_argument("--discovery-share", type=float, default=None,
                   help="share of the zCDP budget spent discovering undeclared columns (default 0.1)")
    p.add_argument("--strict", action="store_true",
                   help="refuse the release when some column cannot be discovered at this budget (by "
                        "default such columns are left out, with one warning listing them)")
    p.add_argument("--accept-draft-schema", action="store_true",
                   help="release with a data-derived draft schema (from `ddssp schema` without --eps); "
                        "the release is then marked 'schema not private'")
    p.add_argument("--target", help="regression target column (recorded; needed by --workload target)")
    p.add_argument("--workload", default="all-pairs",
                   help="all-pairs (default), target (pairs with --target), or a JSON file of cliques")
    p.add_argument("--max-cells", type=int, help="drop workload marginals with more cells than this")
    p.add_argument("--max-model-size", type=float, default=80.0, help="model size limit in MB (default 80)")
    p.add_argument("--rounds", type=int, help="AIM rounds (default 16 x number of columns)")
    p.add_argument("--iters", type=int, help="estimation iterations per round (default: adaptive)")
    p.add_argument("--engine", choices=["numpy", "mbi"], default="numpy",
                   help="estimation engine: numpy mirror descent (default, nothing compiled) or mbi's "
                        "JAX MirrorDescent (the slow reference path)")
    p.add_argument("--seed", type=int,
                   help="seed for what is not DP noise (default: fresh OS entropy); the noise itself always "
                        "comes from OpenDP's secure samplers and no seed reaches it")
    p.add_argument("--insecure-seed", type=int, metavar="N",
                   help="TESTING ONLY: draw the DP noise from a numpy generator seeded with N. The release is "
                        "then NOT PRIVATE (anyone with N can subtract the noise) and is stamped so")
    p.add_argument("--sign-key", metavar="KEY.pem",
                   help="sign the release with this Ed25519 private key (PEM; `openssl genpkey -algorithm ed25519 "
                        "-out key.pem`); readers check it with `ddssp verify --public-key`")
    g = p.add_argument_group("reading and counting the table")
    g.add_argument("--backend", choices=["numpy", "duckdb", "spark"], default="duckdb",
                   help="counting backend: duckdb (default; reads CSV / Parquet out of core, one scan), "
                        "numpy (pandas in memory) or spark (pip install \"ddssp[spark]\"; DATA is any "
                        "path Spark reads: local, HDFS, S3). Columns to discover are read in memory")
    g.add_argument("--memory-limit", metavar="SIZE",
                   help="duckdb: memory limit such as 2GB (DuckDB spills to a temporary directory beyond it)")
    g.add_argument("--spark-master", metavar="URL",
                   help="spark: master URL, e.g. local[4] or spark://host:7077 (default: the spark-submit "
                        "session, else local[*])")
    g.add_argument("--delimiter", default=",", help="CSV field delimiter (default ,; \\t for tab)")
    g.add_argument("--encoding", default="utf-8", help="CSV text encoding (default utf-8)")
    p.add_argument("-o", "--output", help="release file to write (default: DATA's stem + .release, beside DATA)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")


def need_eps(args, command: str) -> float:
    from ddssp.dp import check_eps
    from ddssp.errors import PrivacyParameterError

    if args.eps is None:
        raise PrivacyParameterError(
            f"give the privacy budget: `ddssp {command} {args.data} --eps 1` (eps > 0; smaller is more "
            "private). Columns without a declared schema are then discovered privately inside that budget; "
            "to declare one instead, see `ddssp schema --help`"
        )
    return check_eps(args.eps)


def load_declared(path, categorical):
    """A schema or domain file; ``categorical`` goes to a domain file, and is otherwise left for
    discovery. Returns (schema or None, categorical columns for discovery)."""
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


def read_raw(path, na_values, delimiter=",", encoding="utf-8"):
    from ddssp.data import read_table

    df = read_table(path, delimiter=delimiter, encoding=encoding)
    if na_values:
        df = df.mask(df.isin(list(na_values)))
    return df


def counting_options(args):
    """(CsvOptions, backend options) from the reading arguments; one-line errors for bad combinations."""
    from ddssp.data.counting import CsvOptions
    from ddssp.errors import DataError

    if args.backend != "duckdb" and args.memory_limit is not None:
        raise DataError("--memory-limit applies to --backend duckdb only")
    if args.backend != "spark" and args.spark_master is not None:
        raise DataError("--spark-master needs --backend spark")
    delimiter = "\t" if args.delimiter == "\\t" else args.delimiter
    return CsvOptions(delimiter=delimiter, na_values=tuple(args.na_values or ()), encoding=args.encoding)


def run(args) -> int:
    import sys
    import time
    from pathlib import Path

    from ddssp.data.fileio import check_output_path
    from ddssp.dp import check_delta
    from ddssp.pipeline import DEFAULT_DELTA, DEFAULT_DISCOVERY_SHARE, ReadOptions, plan_schema, release
    from ddssp.releasefile import SCHEMA_NOT_PRIVATE

    t0 = time.perf_counter()
    eps = need_eps(args, "release")
    delta_given = args.delta is not None
    delta = check_delta(args.delta if delta_given else DEFAULT_DELTA)
    if not delta_given and not args.quiet:
        print(f"ddssp: delta not given; using delta = {delta:g}", file=sys.stderr)
    data = Path(args.data)
    output = args.output if args.output is not None else data.with_suffix(".release")
    decl = args.schema or args.domain
    out = check_output_path(output, force=args.force, inputs=[args.data] + ([decl] if decl else []))
    sign_key = None
    if args.sign_key:
        from ddssp.releasefile import load_signing_key

        sign_key = load_signing_key(args.sign_key)  # a bad key fails before the data is read
    schema, cat = load_declared(decl, args.categorical)
    from ddssp.data.counting import table_columns

    csv_options = counting_options(args)
    read = ReadOptions(backend=args.backend, csv=csv_options, memory_limit=args.memory_limit,
                       spark_master=args.spark_master)
    import warnings

    from ddssp.data.tables import UnnamedColumnWarning, select_columns

    with warnings.catch_warnings(record=True) as hw:
        warnings.simplefilter("always", UnnamedColumnWarning)
        header = table_columns(args.data, csv_options)  # public: the column names only
    renamed = [w for w in hw if issubclass(w.category, UnnamedColumnWarning)]
    for w in renamed:
        print(f"ddssp: warning: {w.message}", file=sys.stderr)
    for w in hw:
        if not issubclass(w.category, UnnamedColumnWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    chosen = select_columns(header, args.columns, args.drop)  # before any noise is drawn
    # the counting backends read the file by its own column names: a renamed header cell or a
    # column selection is counted from the table in memory
    subset = bool(renamed) or chosen != list(header)
    share = DEFAULT_DISCOVERY_SHARE if args.discovery_share is None else args.discovery_share
    from ddssp.dp.noise import make_noise

    if schema is not None and all(n in schema for n in header) and args.backend != "numpy" and not subset:
        # every column declared: nothing to discover, the counting layer reads the file (one scan)
        table = args.data
        plan = plan_schema(header, schema, eps=eps, delta=delta, discovery_share=share,
                           accept_draft=args.accept_draft_schema, noise=make_noise(args.insecure_seed))
    else:  # discovery (or --backend numpy) reads the table in memory
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnnamedColumnWarning)  # said once above
            table = read_raw(args.data, csv_options.na_values, csv_options.delimiter, csv_options.encoding)
        table = table[chosen]
        from ddssp.pipeline import DroppedColumnsWarning

        with warnings.catch_warnings(record=True) as dw:
            warnings.simplefilter("always", DroppedColumnsWarning)
            plan = plan_schema(table, schema, eps=eps, delta=delta, discovery_share=share, categorical=cat or (),
                               numeric=args.numeric or (), bins=args.bins, max_levels=args.max_levels,
                               accept_draft=args.accept_draft_schema, noise=make_noise(args.insecure_seed),
                               strict=args.strict)
        for w in dw:
            if issubclass(w.category, DroppedColumnsWarning):
                print(f"ddssp: WARNING: {w.message}", file=sys.stderr)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if args.backend != "numpy" and not subset and not plan.dropped:
            table = args.data  # AIM's counts still come from the chosen backend
        else:
            table = table[[c for c in chosen if c not in plan.dropped]]
            read = ReadOptions(backend="numpy", csv=csv_options)
    if not args.quiet:
        if plan.discovered:
            disc = plan.ledger.discovery_entries
            rho_d = sum(e.rho for e in disc)
            print(f"ddssp: discovered {len(plan.discovered)} column(s) under DP (rho {rho_d:.4g} of "
                  f"{plan.ledger.rho_budget:.4g}, thresholding delta {plan.ledger.delta_budget:.3g}):",
                  file=sys.stderr)
            for name, note in plan.notes.items():
                print(f"ddssp:   {name}: {note}", file=sys.stderr)
        if plan.status == SCHEMA_NOT_PRIVATE:
            print(f"ddssp: WARNING: {SCHEMA_NOT_PRIVATE}", file=sys.stderr)

    bar = None
    if not args.quiet:
        from tqdm.auto import tqdm

        # disable=None: no bar when stderr is not a terminal (a redirected log gets no \r lines)
        bar = tqdm(total=100, desc="AIM", unit="% budget", file=sys.stderr, disable=None,
                   bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}")

    def progress(p) -> None:
        if bar is None:
            return
        done = min(100.0, 100.0 * p.rho_spent / p.rho_budget)
        bar.update(done - bar.n)
        clique = ",".join(p.clique) if p.clique else "one-way"
        bar.set_postfix_str(f"round {p.round}/{p.max_rounds} measured {clique} sigma={p.sigma:.3g}")

    from ddssp.data import ClipWarning

    clipped: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as cw:
            warnings.simplefilter("always", ClipWarning)
            rel = release(table, plan.schema, eps=eps, delta=delta, target=args.target, workload=args.workload,
                          max_cells=args.max_cells, max_model_size=args.max_model_size, seed=args.seed,
                          rounds=args.rounds, iters=args.iters, callback=progress, engine=args.engine,
                          plan=plan, insecure_seed=args.insecure_seed, read=read)
        for w in cw:
            if issubclass(w.category, ClipWarning):
                clipped.append(str(w.message).split(" value(s)")[0].replace("column ", "").replace(":", ""))
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    finally:
        if bar is not None:
            bar.close()
    if clipped and not args.quiet:  # one local note for the data holder; nothing of it is released
        print("ddssp: note (local, not released): values outside the discovered or declared range were "
              "clipped into it in " + ", ".join(dict.fromkeys(clipped)) + " (rows clipped)", file=sys.stderr)
    rel.save(out, force=args.force, inputs=[args.data], sign_key=sign_key)
    warn_stamp(rel, out)
    if not args.quiet:
        s = rel.summary()
        n_meas = sum(c["measurements"] for c in s["cliques"])
        t = rel.local_info.get("timings", {})
        if t:  # the data holder's terminal only: timings grow with the data and are never saved
            print("Timings (not saved in the release): "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in t.items() if isinstance(v, (int, float))),
                  file=sys.stderr)
        print(
            f"Released {len(rel.schema.names)} columns: {n_meas} noisy measurements of "
            f"{len(s['cliques'])} marginals in {s['rounds']} rounds, model of "
            f"{len(s['model_cliques'])} cliques. Privacy: eps={eps:g}, delta={delta:g} "
            f"(rho budget {rel.rho_budget:.6g}, spent {rel.rho_spent:.6g}"
            + (f", of which discovery {s['discovery']['rho']:.4g}; thresholding delta "
               f"{rel.ledger.delta_budget:.3g}" if s["discovery"]["entries"] else "")
            + f"). Wall time {time.perf_counter() - t0:.1f} s. "
            f"Wrote {out}; inspect it with `ddssp inspect {out}`."
        )
    return 0
