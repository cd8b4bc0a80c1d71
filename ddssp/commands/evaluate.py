from ddssp.commands import comma_list, input_group, model_group, output_group, warn_stamp

HELP = "data holder only: compare a release with the sensitive data it came from (NOT for publication)"

DESCRIPTION = """For the data holder, before publishing: reads the SENSITIVE table and the release, and reports
how far the released model is from the data. Total-variation error of every one- and two-way marginal,
the one-way distributions side by side, and (with --target) the DD-SSP regression from the release
against the same regression on the data's exact marginals. The report contains exact statistics of the
data: it is NOT private and NOT for publication. Written as one self-contained HTML file (figures
embedded; needs matplotlib, the `plot` extra).

With --agency (or any option of its group), also the measures of NIST's SDNist report on synthetic
rows (sampled from the release, or --synthetic FILE): the k-marginal score (0-1000) and the size of a
random sub-sample of the data that scores the same, the score within each --group value, unique exact
matches, apparent matches on --quasi-identifiers, and the propensity mean squared error (pMSE, a
depth-6 decision tree; needs scikit-learn)."""


EXAMPLES = """
    ddssp evaluate adult.release adult.csv --target income -o report.html   # data holder only
    ddssp evaluate ma.release ma2019.csv -o report.html --group PUMA --exclude INDP \
        --quasi-identifiers SEX,MSP,RAC1P,OWN_RENT,EDU,PUMA,INDP_CAT,HISP --seed 1
"""


def add_arguments(p) -> None:
    """Add the options of ``ddssp evaluate`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument("release", help="release file written by `ddssp release`")
    p.add_argument("data", metavar="DATA", help="the sensitive table the release was made from (.csv or .parquet)")
    output_group(p).add_argument("-o", "--output", required=True, metavar="REPORT.html", help="HTML report to write")
    model_group(p).add_argument("--target", help="also compare the DD-SSP regression of this column (release vs data)")
    model_group(p).add_argument(
        "--model",
        choices=["linear", "logistic"],
        default=None,
        help="regression model for --target (default: logistic for a two-level target, else linear)",
    )
    model_group(p).add_argument(
        "--features", type=comma_list, help="feature columns for --target (default: all others)"
    )
    input_group(p).add_argument(
        "--na-values",
        type=comma_list,
        metavar="X,Y",
        default=None,
        help="cell values that mean missing, besides empty cells (default: those the release "
        "records, i.e. the --na-values it was made with)",
    )
    input_group(p).add_argument(
        "--delimiter", default=None, help="CSV field delimiter (default: the release's, else ,)"
    )
    input_group(p).add_argument(
        "--encoding", default=None, help="CSV text encoding (default: the release's, else utf-8)"
    )
    ag = p.add_argument_group("agency measures of synthetic rows (SDNist's k-marginal, matches, pMSE)")
    ag.add_argument(
        "--agency",
        action="store_true",
        help="score synthetic rows sampled from the release (implied by the options below)",
    )
    ag.add_argument(
        "--synthetic",
        metavar="FILE",
        help="score these synthetic rows instead (e.g. from `ddssp synth`; read like DATA)",
    )
    ag.add_argument(
        "--synthetic-rows", type=int, metavar="N", help="rows to sample from the release (default: as many as DATA)"
    )
    ag.add_argument("--seed", type=int, help="makes the sampled rows, the sub-samples and the pMSE tree reproducible")
    ag.add_argument("--group", metavar="COL", help="also score the k-marginal within each value of COL (e.g. PUMA)")
    ag.add_argument("--quasi-identifiers", type=comma_list, metavar="A,B", help="columns for the apparent-match count")
    ag.add_argument(
        "--exclude", type=comma_list, metavar="A,B", help="columns left out of the k-marginal (SDNist leaves out INDP)"
    )
    ag.add_argument(
        "--fractions",
        type=comma_list,
        metavar="F,G",
        help="sub-sample fractions of the calibration (default: 0.01,0.05,0.1,0.2,...,0.9)",
    )
    ag.add_argument(
        "--edges",
        action="append",
        metavar="COL=E1,E2,...",
        help="fixed k-marginal bins of a numeric column, (E1,E2], (E2,E3], ... (default: 20 percentile bins of "
        "the data); repeat for several columns",
    )
    output_group(p).add_argument("--json", action="store_true", help="print the summary as JSON")
    output_group(p).add_argument("--force", action="store_true", help="replace an existing report")


def run(args) -> int:
    """Run ``ddssp evaluate``: an HTML report comparing a release with its sensitive table.

    NOT private: the report is for the data holder.

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
    import json
    import sys

    from ddssp.data.fileio import atomic_write, check_output_path
    from ddssp.errors import DDSSPError
    from ddssp.evaluation import BANNER, evaluate
    from ddssp.releasefile import Release

    out = check_output_path(args.output, force=args.force, inputs=[args.release, args.data])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise DDSSPError("evaluate draws its report with matplotlib: pip install 'ddssp[plot]'") from None
    extra = _agency_options(args)
    print(f"ddssp: {BANNER}", file=sys.stderr)
    rel = Release.load(args.release)
    warn_stamp(rel, args.release)
    report = evaluate(
        rel,
        args.data,
        target=args.target,
        model=args.model,
        features=args.features,
        na_values=args.na_values,
        delimiter=args.delimiter,
        encoding=args.encoding,
        **extra,
    )
    report.title = f"ddssp evaluate: {args.release} vs {args.data}"
    page = report.to_html()
    with atomic_write(out, "w", encoding="utf-8") as fh:
        fh.write(page)
    res = report.to_dict()
    res["stamp"] = rel.stamp
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    _print_summary(args, rel, res)
    print(f"  report written to {out} ({BANNER})")
    return 0


def _agency_options(args) -> dict:
    """The agency keywords of :func:`ddssp.evaluate` from the command line (empty when none is asked for).

    Raises
    ------
    DDSSPError
        For malformed ``--fractions``, ``--edges`` or ``--synthetic-rows``.
    """
    from ddssp.errors import DDSSPError

    fractions = None
    if args.fractions is not None:
        try:
            fractions = [float(f) for f in args.fractions]
        except ValueError:
            raise DDSSPError(f"--fractions takes numbers between 0 and 1, got {','.join(args.fractions)}") from None
        if not fractions or not all(0 < f < 1 for f in fractions):
            raise DDSSPError(f"--fractions takes numbers between 0 and 1, got {','.join(args.fractions)}")
    edges = None
    for spec in args.edges or []:
        col, _, vals = spec.partition("=")
        try:
            e = [float(v) for v in vals.split(",")]
        except ValueError:
            e = []
        if not col or len(e) < 2 or any(b <= a for a, b in zip(e, e[1:])):
            raise DDSSPError(f"--edges takes COL=E1,E2,... with at least two increasing numbers, got {spec!r}")
        edges = {**(edges or {}), col: e}
    if args.synthetic_rows is not None and args.synthetic_rows < 1:
        raise DDSSPError(f"--synthetic-rows must be a positive number of rows, got {args.synthetic_rows}")
    asked = args.agency or any(
        x is not None
        for x in (
            args.synthetic,
            args.synthetic_rows,
            args.group,
            args.quasi_identifiers,
            args.exclude,
            fractions,
            edges,
        )
    )
    if not asked:
        return {}
    return {
        "synthetic": args.synthetic,
        "synthetic_rows": args.synthetic_rows,
        "seed": args.seed,
        "group": args.group,
        "quasi_identifiers": args.quasi_identifiers,
        "exclude": args.exclude or [],
        "fractions": fractions,
        "edges": edges,
    }


def _print_summary(args, rel, res: dict) -> None:
    """The report's summary on stdout: marginal errors, the regression agreement, the agency scores."""
    from ddssp.evaluation.page import agency_lines

    print(
        f"Release {args.release} vs data {args.data} ({res['rows_data']} rows; release total {res['rows_release']:.1f})"
    )
    print(
        f"  two-way marginals: {len(res['two_way'])}, TV error mean {res['two_way_mean_tv']:.4f}, "
        f"max {res['two_way_max_tv']:.4f}"
    )
    for p in res["two_way"][:5]:
        print(f"    {' x '.join(p['columns']):<40} TV {p['tv']:.4f}")
    width = max(len(c) for c in rel.schema.names)
    print("  one-way TV error:")
    for c in rel.schema.names:
        print(f"    {c:<{width}}  {res['one_way'][c]['tv']:.4f}")
    if "grade" in res:
        from ddssp.evaluation.grade import grade_lines

        for line in grade_lines(res["grade"]):
            print(f"  {line}")
    if "regression" in res:
        reg = res["regression"]
        print(
            f"  DD-SSP {reg['model']} regression of {reg['target']!r}: release vs data, max |diff| "
            f"{reg['max_abs_diff']:.4g}, relative L2 error {reg['rel_l2_error']:.4g}"
        )
    if "agency" in res:
        for line in agency_lines(res["agency"]):
            print(f"  {line}")
