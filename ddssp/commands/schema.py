from ddssp.commands import comma_list

HELP = "draft a schema (column kinds, levels, bins) from a table, or --check a table against a schema"

DESCRIPTION = """Draft a schema JSON from a table (CSV or Parquet), or with --check SCHEMA check that
the table encodes under a reviewed schema or domain file (writes nothing).

WARNING: the levels, bounds and bin edges in the draft are read from the data. They are NOT private
(a bound is often one person's value). Review them and replace them with public knowledge (official
code lists, legal or physical ranges, round numbers) before using the schema for a release."""

WARNING = (
    "ddssp: WARNING: the levels, bounds and bin edges in {out} were read from the data and are NOT "
    "private.\n"
    "ddssp: WARNING: review them and replace them with public knowledge (official code lists, "
    "legal/physical ranges, round numbers) before using this schema for a release."
)


def _positive_int(text: str) -> int:
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def add_arguments(p) -> None:
    p.add_argument("data", metavar="DATA", help="table to draft the schema from (.csv or .parquet)")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("-o", "--output", help="schema JSON to write, e.g. DATA.schema.json")
    mode.add_argument("--check", metavar="SCHEMA",
                      help="check that DATA encodes under this schema JSON or domain file; writes nothing")
    p.add_argument("--bins", type=_positive_int, default=10,
                   help="equal-width bins per numeric column (default 10); numeric columns with at most "
                        "this many distinct values keep them as explicit levels")
    p.add_argument("--categorical", type=comma_list, default=None, metavar="A,B",
                   help="columns to treat as categorical even if they hold numbers (with --check and a "
                        "domain file: the categorical columns of the domain)")
    p.add_argument("--max-levels", type=_positive_int, default=100,
                   help="refuse categorical columns with more distinct values than this (default 100)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")


def run(args) -> int:
    if args.check:
        return _check(args)
    return _draft(args)


def _check(args) -> int:
    import sys
    import warnings

    from ddssp.data.tables import read_table
    from ddssp.data import load_schema

    schema = load_schema(args.check, categorical=args.categorical)
    df = read_table(args.data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema.encode(df)
    for w in caught:  # clipping notes etc.: local to the data holder
        print(f"ddssp: warning: {w.message}", file=sys.stderr)
    print(f"ddssp: {args.data} ({len(df)} rows) encodes under {args.check}: "
          f"{len(schema)} columns ({len(schema.categorical)} categorical, {len(schema.numeric)} numeric), "
          f"domain {schema.domain}", file=sys.stderr)
    return 0


def _draft(args) -> int:
    import sys

    from ddssp.data.tables import read_table
    from ddssp.data.fileio import check_output_path
    from ddssp.data import Schema

    out = check_output_path(args.output, force=args.force, inputs=[args.data])
    df = read_table(args.data)
    schema = Schema.infer(df, bins=args.bins, categorical=args.categorical,
                          max_categorical_levels=args.max_levels)
    schema.encode(df)  # the draft must encode its own table (raises on a bug, writes nothing)
    schema.save(out, force=args.force)
    n_cat, n_num = len(schema.categorical), len(schema.numeric)
    print(f"ddssp: wrote {out}: {len(schema)} columns ({n_cat} categorical, {n_num} numeric), "
          f"{len(df)} rows read", file=sys.stderr)
    print(WARNING.format(out=out), file=sys.stderr)
    return 0
