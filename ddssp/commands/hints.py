"""The command-line options of public knowledge per column (``--codebook``, ``--bounds``, ``--levels``,
``--missing``), shared by ``ddssp release`` and ``ddssp schema``."""

from ddssp.commands import privacy_group


def add_hint_arguments(p) -> None:
    """Add the options of public knowledge per column: ``--codebook``, ``--bounds``, ``--levels``,
    ``--missing`` (shared with ``ddssp schema --eps``).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    g = privacy_group(p)
    g.add_argument(
        "--codebook",
        metavar="FILE",
        help="data dictionary declaring columns in part or whole (public, free): a Frictionless Table "
        "Schema, a NIST-style JSON codebook, or a ddssp codebook (`ddssp schema --from-dictionary`); "
        "its columns DATA lacks are ignored, and a --schema column wins over it",
    )
    g.add_argument(
        "--bounds",
        action="append",
        metavar="COL=LO:HI",
        help="declared range of a numeric column (public, free): discovery only bins inside it, values "
        "outside are clipped; repeat, or separate by commas (age=0:120,hours=0:99)",
    )
    g.add_argument(
        "--levels",
        action="append",
        metavar="COL=A,B,C",
        help=(
            "declared levels of a categorical column (public, free, not discovered); a label holding a comma"
            ' in double quotes (COL="A, B",C); repeat for more columns'
        ),
    )
    g.add_argument(
        "--missing",
        action="append",
        metavar="COL=LABEL",
        help="label of a column's missing / not-applicable level (such as N): cells holding it and "
        "empty cells are coded to it; repeat, or separate by commas",
    )


def hints(args):
    """The public knowledge per column from ``--codebook``, ``--bounds``, ``--levels`` and
    ``--missing`` (the flags win over the file, column by column).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    Codebook

    Raises
    ------
    SchemaError
        For an unreadable dictionary or a malformed flag value (one line naming the flag).
    """
    from ddssp.data.codebook import Codebook, parse_bounds, parse_levels, parse_missing
    from ddssp.data.dictionary import load_codebook

    book = load_codebook(args.codebook) if getattr(args, "codebook", None) else Codebook()
    flags = (
        parse_bounds(getattr(args, "bounds", None) or ())
        + parse_levels(getattr(args, "levels", None) or ())
        + parse_missing(getattr(args, "missing", None) or ())
    )
    return book + Codebook(tuple(flags))
