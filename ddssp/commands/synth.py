import sys

from ddssp.commands import output_group, stamped_output, warn_stamp, warn_weak

HELP = "draw synthetic microdata from a release file (decoded to the schema's labels)"


EXAMPLES = """
    ddssp synth adult.release -o synthetic.csv                # as many rows as the release estimates
    ddssp synth adult.release --rows 1000 -o synthetic.csv
"""


def add_arguments(p) -> None:
    """Add the options of ``ddssp synth`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument("release", metavar="RELEASE", help="release file written by `ddssp release`")
    output_group(p).add_argument(
        "--rows",
        type=int,
        help="number of synthetic rows (>= 1; default: the release's estimated row count, the model's noisy "
        "total, as `ddssp inspect` shows it)",
    )
    output_group(p).add_argument(
        "-o", "--output", required=True, help="CSV file to write (.parquet: Parquet; - for standard output)"
    )
    output_group(p).add_argument("--seed", type=int, help="random seed (default: fresh OS entropy)")
    output_group(p).add_argument("--codes", action="store_true", help="write integer codes instead of labels")
    output_group(p).add_argument(
        "--na-rep",
        metavar="TEXT",
        help="what a missing cell reads in a CSV (default: the first missing-value marker the release's "
        "data was read with, e.g. --na-values N gives N; else an empty cell); Parquet keeps nulls",
    )
    output_group(p).add_argument(
        "--no-other",
        action="store_true",
        help="draw no row in a discovered column's <other> level (labels the release did not name, each "
        "held by too few rows to release): such rows are drawn again from the model conditioned on the "
        "named labels, and their share is reported (post-processing; that column's shares then leave "
        "out those rows)",
    )
    output_group(p).add_argument("--force", action="store_true", help="replace an existing output file")
    output_group(p).add_argument(
        "--raw-cells",
        action="store_true",
        help="write text cells as they are; by default a cell a spreadsheet would run as a formula "
        "(starting with = + - @, a tab or a carriage return) gets a leading ' (numeric columns never change)",
    )
    output_group(p).add_argument(
        "--allow-insecure",
        action="store_true",
        help="write rows from an insecure-seed (NOT PRIVATE) release, as OUTPUT with a .NOT-PRIVATE infix",
    )


def run(args) -> int:
    """Run ``ddssp synth``: write synthetic rows sampled from a release's model (post-processing).

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
    from ddssp.data.fileio import check_output_path
    from ddssp.errors import DDSSPError
    from ddssp.releasefile import Release

    if args.rows is not None and args.rows < 1:
        raise DDSSPError(f"--rows must be at least 1, got {args.rows}")
    if args.output == "-":
        rel = Release.load(args.release)
        warn_stamp(rel, args.release)
        _default_rows(rel, args)
        _write(rel, args, sys.stdout)
        warn_weak(rel, args.release, what="the synthetic rows")
        return 0
    out = check_output_path(args.output, force=args.force, inputs=[args.release])
    rel = Release.load(args.release)
    warn_stamp(rel, args.release)
    _default_rows(rel, args)
    out = stamped_output(rel, out, args.allow_insecure, force=args.force, inputs=[args.release])
    df = _write(rel, args, out)
    print(f"wrote {len(df)} synthetic rows x {df.shape[1]} columns to {out}")
    warn_weak(rel, args.release, what="the synthetic rows")
    return 0


def _default_rows(rel, args) -> None:
    """Without ``--rows``, draw as many rows as the release estimates the table held: the model's
    total, a noisy output of the release (post-processing), rounded; the note says so."""
    if args.rows is not None:
        return
    import math

    from ddssp.errors import DDSSPError

    if not math.isfinite(rel.total):
        raise DDSSPError("the release holds no usable row count estimate; give the number of rows with --rows N")
    args.rows = max(1, round(rel.total))
    print(
        f"ddssp: note: drawing {args.rows} rows, the release's estimated row count (noisy); --rows sets another",
        file=sys.stderr,
    )


def _write(rel, args, out):
    """Draw the rows and write them in the input's conventions: missing cells as ``--na-rep`` or
    else the first marker the data was read with (public reading settings stored in the release),
    whole-number columns as integers (read from the public schema). Returns the rows drawn."""
    from ddssp.data.fileio import whole_number_columns, write_table

    if args.codes:
        df = rel.synthesize_codes(args.rows, args.seed)
        write_table(df, out, raw_cells=args.raw_cells)
        return df
    df = _rows(rel, args)
    markers = rel.reading["na_values"]
    na_rep = args.na_rep if args.na_rep is not None else (markers[0] if markers else "")
    integers = whole_number_columns(rel.schema)
    written = df
    if args.na_rep is None:
        written, integers = _declared_markers(df, rel.schema, integers, na_rep)
    write_table(written, out, raw_cells=args.raw_cells, na_rep=na_rep, integers=integers)
    return df


def _rows(rel, args):
    """The synthetic rows, decoded. Where a discovered column's ``<other>`` level (labels the release
    did not name) draws rows, a note gives their share; with ``--no-other`` the rows are drawn again
    from the model conditioned on the named labels (post-processing), and the note says so."""
    from ddssp.releasefile.conditions import catch_all_levels, without_catch_all

    df = rel.synthesize(args.rows, args.seed)
    other = catch_all_levels(rel.schema)
    shares = {c: float((df[c] == label).mean()) for c, label in other.items() if c in df}
    shares = {c: v for c, v in shares.items() if v > 0}
    if not shares:
        return df
    listed = ", ".join(f"{c!r} {v:.1%}" for c, v in shares.items())
    if getattr(args, "no_other", False):
        df = without_catch_all(rel, shares).synthesize(args.rows, args.seed)
        print(
            f"ddssp: note: --no-other: rows in <other> (labels the release did not name) drawn again from the "
            f"model without it: {listed} of the rows; those columns' shares leave out the labels not named",
            file=sys.stderr,
        )
    else:
        print(
            f"ddssp: note: rows in <other> (labels the release did not name: each held by too few rows to "
            f"release; it shows above the noise): {listed}; --no-other draws them from the named labels",
            file=sys.stderr,
        )
    return df


def _declared_markers(df, schema, integers, na_rep):
    """``df`` with the missing cells of each numeric column whose schema names its missing level
    by a declared marker (a codebook's ``"missing": "N"``) written as that marker, the column's
    numbers as text (whole numbers without ``.0``); returns the table and the integer columns left
    to ``write_table``. A categorical column decodes to its marker already; the other missing cells
    keep ``na_rep``. Reads the public schema only."""
    import numpy as np

    from ddssp.data.columns import INFER_MISSING_LABEL

    out = df
    integers = list(integers)
    for col in schema.columns:
        marker = col.missing
        if col.kind != "numeric" or marker is None or marker in (INFER_MISSING_LABEL, na_rep) or col.name not in df:
            continue
        x = df[col.name].to_numpy(dtype=float, na_value=np.nan)
        whole = col.name in integers
        text = [marker if np.isnan(v) else (str(int(v)) if whole and np.isfinite(v) else repr(float(v))) for v in x]
        out = out.copy() if out is df else out
        out[col.name] = text
        if whole:
            integers.remove(col.name)
    return out, integers
