"""Sub-commands of the ``ddssp`` CLI (one module each; see ddssp.cli).

Options are shown in named groups, the same titles and order in every command. A command adds an
option to a group with e.g. ``input_group(p).add_argument(...)``; the group is made on first use, so
a command shows only the groups it has options in. ``testing_option`` adds an option that ``--help``
hides and ``--help-all`` lists under a "testing only" heading.
"""

import argparse

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
    """The argument group ``key`` (one of :data:`GROUPS`) of ``p``, made on first use."""
    groups = p.__dict__.setdefault("_ddssp_groups", {})
    if key not in groups:
        title = dict(GROUPS)[key]
        groups[key] = p.add_argument_group(title)
    return groups[key]


def input_group(p):
    """Options that say what to read and how (files, delimiters, backends)."""
    return option_group(p, "input")


def privacy_group(p):
    """Privacy parameters and what is declared public."""
    return option_group(p, "privacy")


def discovery_group(p):
    """Options of private schema discovery."""
    return option_group(p, "discovery")


def aim_group(p):
    """Options of AIM's select-measure-estimate loop."""
    return option_group(p, "aim")


def model_group(p):
    """Options of a fitted regression (target, features, encoding)."""
    return option_group(p, "model")


def intervals_group(p):
    """Options of confidence intervals (``fit --ci``)."""
    return option_group(p, "intervals")


def output_group(p):
    """Where results go and how they are printed."""
    return option_group(p, "output")


def testing_option(p, *flags, help: str, **kwargs):  # noqa: A002  (argparse's own keyword)
    """Add an option for tests only: ``--help`` leaves it out, ``--help-all`` lists it under
    "testing only". The option works the same either way."""
    action = option_group(p, "testing").add_argument(*flags, help=argparse.SUPPRESS, **kwargs)
    p.__dict__.setdefault("_ddssp_hidden_help", {})[action.dest] = (action, help)
    return action


def show_hidden_options(p: argparse.ArgumentParser) -> None:
    """Give the options that :func:`testing_option` hid their help text back (for ``--help-all``)."""
    for action, text in p.__dict__.get("_ddssp_hidden_help", {}).values():
        action.help = text


def required_in_usage(action) -> None:
    """Show an option that the command checks itself (with a message that says what to give) as
    required in the usage line: ``--eps EPS`` instead of ``[--eps EPS]``."""
    action.show_required = True


def comma_list(text: str) -> list[str]:
    """argparse type for "a,b,c": the non-empty, stripped names."""
    return [t.strip() for t in text.split(",") if t.strip()]


def positive_int(text: str) -> int:
    """argparse type for a positive integer (``--bins``, ``--max-levels``)."""
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
    Every command that writes or reads a release calls this, on every use."""
    import sys

    stamp = getattr(rel, "stamp", None)
    if stamp:
        print(f"ddssp: WARNING: {path}: {stamp}", file=sys.stderr)


#: Infix of a CSV file written from an insecure-seed release with ``--allow-insecure``.
NOT_PRIVATE_INFIX = ".NOT-PRIVATE"


def stamped_output(rel, out, allow_insecure: bool, force: bool = False, inputs=()):
    """Where a CSV made from ``rel`` goes: ``out`` for a private release; for a stamped (insecure-seed)
    release a :class:`~ddssp.errors.DDSSPError` unless ``allow_insecure``, and then ``out`` with a
    ``.NOT-PRIVATE`` infix before its suffix, so the stamp travels with the file."""
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
