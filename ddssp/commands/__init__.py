"""Sub-commands of the ``ddssp`` CLI (one module each; see ddssp.cli).

Options are shown in named groups, the same titles and order in every command. A command adds an
option to a group with e.g. ``input_group(p).add_argument(...)``; the group is made on first use, so
a command shows only the groups it has options in. ``testing_option`` adds an option that ``--help``
hides and ``--help-all`` lists under a "testing only" heading.
"""

import argparse
import contextlib
from collections.abc import Iterator

#: (key, title) of the option groups, in the order ``--help`` shows them
GROUPS: list[tuple[str, str]] = [
    ("input", "input and reading"),
    ("privacy", "privacy"),
    ("discovery", "discovery (columns not declared in a schema)"),
    ("aim", "AIM (which marginals to measure, how to estimate)"),
    ("model", "model"),
    ("runs", "what to run (overrides the spec)"),
    ("intervals", "confidence intervals"),
    ("output", "output"),
    ("testing", "testing only (NOT for releases you publish)"),
]


def option_group(p: argparse.ArgumentParser, key: str) -> argparse._ArgumentGroup:
    """The argument group ``key`` (one of :data:`GROUPS`) of a parser, made on first use.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    key : str
        The group's key.

    Returns
    -------
    argparse._ArgumentGroup
    """
    groups = p.__dict__.setdefault("_ddssp_groups", {})
    if key not in groups:
        title = dict(GROUPS)[key]
        groups[key] = p.add_argument_group(title)
    return groups[key]


class OptionGroup:
    """A callable that gives a parser's option group ``key`` (see :func:`option_group`).

    ``input_group(p).add_argument(...)`` adds an option to the "input and reading" group of ``p``.

    Parameters
    ----------
    key : str
        The group's key (one of :data:`GROUPS`).
    """

    def __init__(self, key: str):
        if key not in dict(GROUPS):
            raise ValueError(f"unknown option group {key!r}; the groups are {[k for k, _ in GROUPS]}")
        self.key = key

    def __call__(self, p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
        """The group of parser ``p``, made on first use.

        Parameters
        ----------
        p : argparse.ArgumentParser
            The command's parser.

        Returns
        -------
        argparse._ArgumentGroup
        """
        return option_group(p, self.key)


#: options that say what to read and how (files, delimiters, backends)
input_group = OptionGroup("input")
#: privacy parameters and what is declared public
privacy_group = OptionGroup("privacy")
#: options of private schema discovery
discovery_group = OptionGroup("discovery")
#: options of AIM's select-measure-estimate loop
aim_group = OptionGroup("aim")
#: options of a fitted regression (target, features, encoding)
model_group = OptionGroup("model")
#: options of a benchmark's runs (trials, eps grid, methods, seed)
runs_group = OptionGroup("runs")
#: options of confidence intervals (``fit --ci``)
intervals_group = OptionGroup("intervals")
#: where results go and how they are printed
output_group = OptionGroup("output")


def testing_option(p, *flags, help: str, **kwargs):  # noqa: A002  (argparse's own keyword)
    """Add an option for tests only: ``--help`` leaves it out, ``--help-all`` lists it under "testing only".

    The option works the same either way.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    *flags : str
        The option's flags.
    help : str
        Its help text (shown by ``--help-all``).
    **kwargs
        Passed to ``add_argument``.

    Returns
    -------
    argparse.Action
    """
    action = option_group(p, "testing").add_argument(*flags, help=argparse.SUPPRESS, **kwargs)
    p.__dict__.setdefault("_ddssp_hidden_help", {})[action.dest] = (action, help)
    return action


def show_hidden_options(p: argparse.ArgumentParser) -> None:
    """Give the options that :func:`testing_option` hid their help text back (for ``--help-all``).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    """
    for action, text in p.__dict__.get("_ddssp_hidden_help", {}).values():
        action.help = text


def required_in_usage(action) -> None:
    """Show an option the command checks itself as required in the usage line.

    The command refuses a missing value with a message that says what to give; the usage line then
    shows ``--eps EPS`` instead of ``[--eps EPS]``.

    Parameters
    ----------
    action : argparse.Action
        The option.
    """
    action.show_required = True


def comma_list(text: str) -> list[str]:
    """argparse type for "a,b,c": the non-empty, stripped names.

    Parameters
    ----------
    text : str
        The option's value.

    Returns
    -------
    list of str
    """
    return [t.strip() for t in text.split(",") if t.strip()]


def positive_int(text: str) -> int:
    """argparse type for a positive integer (``--bins``, ``--max-levels``).

    Parameters
    ----------
    text : str
        The option's value.

    Returns
    -------
    int

    Raises
    ------
    argparse.ArgumentTypeError
        When it is not a positive integer.
    """
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def warn_stamp(rel, path) -> None:
    """Print the release's privacy stamp (e.g. "NOT PRIVATE: noise reproducible from a seed") to stderr.

    Every command that writes or reads a release calls this, on every use.

    Parameters
    ----------
    rel : Release
        The release.
    path : str or path-like
        Its file, for the message.
    """
    import sys

    stamp = getattr(rel, "stamp", None)
    if stamp:
        print(f"ddssp: WARNING: {path}: {stamp}", file=sys.stderr)


def warn_weak(rel, path, columns=None, what: str = "this release") -> None:
    """Print one line to stderr naming the weak columns of the release's grade (from its noisy
    outputs only, :mod:`ddssp.releasefile.quality`), with why; nothing when none is weak.

    Parameters
    ----------
    rel : Release
        The release.
    path : str or path-like
        Its file, for the advice to inspect it.
    columns : iterable of str, optional
        Only these columns (those a model uses); all by default.
    what : str
        What the columns are, for the message.
    """
    import sys

    from ddssp.data.safetext import terminal_text

    if not callable(getattr(rel, "grade", None)):  # a source that is not a release (tests' stand-ins)
        return
    grade = rel.grade()
    keep = None if columns is None else set(columns)
    weak = [g for n, g in grade.columns.items() if g.weak and (keep is None or n in keep)]
    if not weak:
        return
    shown = "; ".join(f"{g.name!r} ({', '.join(g.weak)})" for g in weak[:6])
    more = f"; and {len(weak) - 6} more" if len(weak) > 6 else ""
    print(
        terminal_text(
            f"ddssp: note: weak columns in {what} (the release's own grade): {shown}{more}; "
            f"`ddssp inspect {path}` shows the grade"
        ),
        file=sys.stderr,
    )


#: Infix of a CSV file written from an insecure-seed release with ``--allow-insecure``.
NOT_PRIVATE_INFIX = ".NOT-PRIVATE"


def stamped_output(rel, out, allow_insecure: bool, force: bool = False, inputs=()):
    """Where a CSV made from a release goes, so that an insecure-seed stamp travels with the file.

    Parameters
    ----------
    rel : Release
        The release.
    out : str or path-like
        The requested output file.
    allow_insecure : bool
        Allow writing from a stamped (insecure-seed) release.
    force : bool
        Replace an existing file.
    inputs : iterable of path-like
        The command's inputs (never overwritten).

    Returns
    -------
    str or pathlib.Path
        ``out`` for a private release; for a stamped one, ``out`` with a ``.NOT-PRIVATE`` infix before
        its suffix (checked like any output path).

    Raises
    ------
    DDSSPError
        For a stamped release without ``allow_insecure``.
    """
    from pathlib import Path

    from ddssp.data.fileio import check_output_path
    from ddssp.errors import DDSSPError

    if not getattr(rel, "stamp", None):
        return out
    if not allow_insecure:
        raise DDSSPError(
            f"the release is stamped '{rel.stamp}'; refusing to write {out} from it (pass "
            f"--allow-insecure to write it anyway, as a {NOT_PRIVATE_INFIX} file)"
        )
    out = Path(out)
    if NOT_PRIVATE_INFIX not in out.name:
        out = out.with_name(out.stem + NOT_PRIVATE_INFIX + out.suffix)
    return check_output_path(out, force=force, inputs=inputs)


#: How the library names an option in its messages -> what ``ddssp release`` and ``ddssp schema``
#: call it (longer names first, so a name is replaced before a shorter name it starts with).
FLAGS: dict[str, str] = {
    "ReadOptions.columns/drop": "--columns/--drop",
    "ReadOptions.columns": "--columns",
    "ReadOptions.drop": "--drop",
    "ReadOptions.backend": "--backend",
    "ReadOptions.memory_limit": "--memory-limit",
    "ReadOptions.spark_master": "--spark-master",
    "DiscoveryOptions.share": "--discovery-share",
    "DiscoveryOptions.categorical": "--categorical",
    "DiscoveryOptions.numeric": "--numeric",
    "DiscoveryOptions.dates": "--dates",
    "DiscoveryOptions.bins": "--bins",
    "DiscoveryOptions.max_levels": "--max-levels",
    "(a codebook, DiscoveryOptions.hints bounds)": "(--bounds COL=LO:HI, or --codebook FILE)",
    "(a codebook, DiscoveryOptions.hints levels)": "(--levels COL=A,B,..., or --codebook FILE)",
    "(a codebook, DiscoveryOptions.hints bounds or levels;": "(--bounds COL=LO:HI, --levels COL=A,B,..., or --codebook FILE;",
    "DiscoveryOptions.strict": "--strict",
    "DiscoveryOptions.accept_draft=True": "--accept-draft-schema",
    "AimOptions.workload": "--workload",
    "AimOptions.max_cells": "--max-cells",
    "AimOptions.by": "--by",
    "AimOptions.max_model_size": "--max-model-size",
    "AimOptions.rounds": "--rounds",
    "AimOptions.iters": "--iters",
    "AimOptions.engine": "--engine",
    "AimOptions.target_share": "--target-share",
    # the release's own parameters, in the phrases the library's advice uses
    " or eps, or declare it in the schema ": " or --eps, or declare it in a --schema file ",
    "a larger eps or": "a larger --eps or",
    "leave out the schema)": "leave out --schema)",
    "(the target parameter)": "(--target)",
    "in a schema file": "in a --schema file",
}


def with_flags(text: str) -> str:
    """A library message with the options it names (:data:`FLAGS`) called by their CLI flags.

    Parameters
    ----------
    text : str
        The message.

    Returns
    -------
    str
    """
    for name, flag in FLAGS.items():
        text = text.replace(name, flag)
    return text


@contextlib.contextmanager
def flag_errors() -> Iterator[None]:
    """Re-raise a :class:`~ddssp.errors.DDSSPError` of the block with :func:`with_flags` applied, so
    the CLI's one error line names its flags rather than the library's option fields.

    Yields
    ------
    None
    """
    from ddssp.errors import DDSSPError

    try:
        yield
    except DDSSPError as exc:
        raise type(exc)(with_flags(str(exc))) from None
