"""The ``ddssp`` command: argument parsing and messages only.

Each sub-command lives in ``ddssp/commands/<name>.py`` and defines ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. Heavy imports (numpy, pandas, OpenDP, DuckDB,
JAX, mbi) happen inside ``run``, and the package's public names are lazy, so that ``ddssp --help``,
``--version`` and usage errors start in a few tens of milliseconds without them
(tests/commands/test_cli_startup.py checks every command).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from ddssp._version import __version__
from ddssp.errors import DDSSPError

#: (command name, module). Add a line here to add a command.
COMMANDS: list[tuple[str, str]] = [
    ("release", "ddssp.commands.release"),
    ("inspect", "ddssp.commands.inspect"),
    ("verify", "ddssp.commands.verify"),
    ("synth", "ddssp.commands.synth"),
    ("bench", "ddssp.commands.bench"),
    ("schema", "ddssp.commands.schema"),
    ("fit", "ddssp.commands.fit"),
    ("predict", "ddssp.commands.predict"),
    ("evaluate", "ddssp.commands.evaluate"),
]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, with paragraphs and examples kept.

    Descriptions are re-wrapped to the terminal one paragraph at a time (argparse's own formatter
    joins all paragraphs into one); indented lines (the examples in the epilog) are printed as
    written. Options marked with :func:`ddssp.commands.required_in_usage` show as required in the
    usage line.
    """

    def _fill_text(self, text, width, indent):
        import textwrap

        out: list[str] = []
        for para in textwrap.dedent(text).strip("\n").split("\n\n"):
            lines = para.split("\n")
            if any(line.startswith(" ") for line in lines):
                out.append("\n".join(indent + line for line in lines))
            else:
                out.append(textwrap.fill(" ".join(lines), width, initial_indent=indent, subsequent_indent=indent))
        return "\n\n".join(out)

    def _format_usage(self, usage, actions, groups, prefix):
        marked = [a for a in actions if getattr(a, "show_required", False) and not a.required]
        for a in marked:
            a.required = True
        try:
            return super()._format_usage(usage, actions, groups, prefix)
        finally:
            for a in marked:
                a.required = False


class _HelpAll(argparse.Action):
    """``--help-all``: the help with the testing-only options shown."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):  # noqa: A002
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from ddssp.commands import show_hidden_options

        show_hidden_options(parser)
        parser.print_help()
        parser.exit()


def _epilog(examples: str | None) -> str | None:
    if not examples:
        return None
    lines = [line.strip() for line in examples.strip().splitlines()]
    return "examples:\n" + "\n".join(f"  {line}" if line else "" for line in lines)


def _order_groups(p: argparse.ArgumentParser) -> None:
    """Show the named option groups in the order of ddssp.commands.GROUPS, after argparse's own."""
    from ddssp.commands import GROUPS

    named = p.__dict__.get("_ddssp_groups", {})
    rank = {named[k]: i for i, (k, _) in enumerate(GROUPS) if k in named}
    p._action_groups.sort(key=lambda g: rank.get(g, -1))  # stable: argparse's groups stay first


def build_parser() -> argparse.ArgumentParser:
    """The ``ddssp`` argument parser, with one sub-parser per command (options in the shared groups).

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog="ddssp",
        description="Differentially private marginals, regressions and synthetic data from one release file.",
        epilog=_epilog("""
            ddssp release adult.csv --eps 1          # the data holder, once
            ddssp fit adult.release --target income  # anyone, from the release alone
            ddssp COMMAND --help                     # options and examples of one command"""),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ddssp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, modname in COMMANDS:
        mod = importlib.import_module(modname)
        p = sub.add_parser(
            name,
            help=mod.HELP,
            description=getattr(mod, "DESCRIPTION", mod.HELP),
            epilog=_epilog(getattr(mod, "EXAMPLES", None)),
            formatter_class=HelpFormatter,
        )
        mod.add_arguments(p)
        if p.__dict__.get("_ddssp_hidden_help"):
            p.add_argument("--help-all", action=_HelpAll, help="show this help with the testing-only options too")
        _order_groups(p)
        p.set_defaults(_run=mod.run)
    return parser


def subcommand_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    """The parser of a sub-command.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``ddssp`` parser (:func:`build_parser`).
    name : str
        The sub-command.

    Returns
    -------
    argparse.ArgumentParser or None
        None when there is no such sub-command.
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name)
    return None


def _reject_mistyped_options(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A ``--option`` the sub-command does not know is reported first, with the closest one: argparse
    would otherwise report a required option it then misses (``--targt y`` -> "--target is required")."""
    if not argv or argv[0].startswith("-"):
        return
    sub = subcommand_parser(parser, argv[0])
    if sub is None:
        import difflib

        close = difflib.get_close_matches(argv[0], [name for name, _ in COMMANDS], n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else f" (choose from {', '.join(n for n, _ in COMMANDS)})"
        parser.error(f"unknown command {argv[0]!r}{hint}")
    known = [s for a in sub._actions for s in a.option_strings]
    for arg in argv[1:]:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if arg.startswith("--") and name not in known and not any(k.startswith(name) for k in known):
            _reject_unknown(sub, [arg])


def _reject_unknown(sub: argparse.ArgumentParser, extras: list[str]) -> None:
    """Usage error for arguments the sub-command does not take, printed with the sub-command's usage
    and, for a mistyped option, the closest one (``--esp`` -> ``--eps``)."""
    import difflib

    known = [s for a in sub._actions for s in a.option_strings if s.startswith("--")]
    msg = f"unrecognized arguments: {' '.join(extras)}"
    for arg in extras:
        if arg.startswith("--"):
            close = difflib.get_close_matches(arg.split("=", 1)[0], known, n=1, cutoff=0.6)
            if close:
                msg += f"; did you mean {close[0]}?"
                break
    sub.error(msg)


def _format_warning(message, category, filename, lineno, line=None):  # noqa: ARG001
    from ddssp.data.safetext import terminal_text

    return f"ddssp: warning: {terminal_text(message)}\n"


def main(argv: list[str] | None = None) -> int:
    """Run the ``ddssp`` command line.

    Bad input is one ``ddssp: error:`` line on stderr, never a traceback (``DDSSP_DEBUG=1`` shows
    one); a reader that goes away (``ddssp inspect X | head``) stops the command quietly.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        The exit status: 0 on success, 1 for bad input, 3 for an internal error, 130 when interrupted,
        141 when the reader of stdout went away.

    Raises
    ------
    SystemExit
        From argparse, for ``--help``, ``--version`` and usage errors (after printing).
    """
    try:
        try:
            code = _main(argv)
        except SystemExit:  # argparse's --help / --version / usage errors print, then exit
            sys.stdout.flush()
            raise
        sys.stdout.flush()  # inside the try: a reader that went away is seen here, not at exit
        return code
    except BrokenPipeError:
        # the reader went away (``ddssp inspect X | head``): stop quietly, like any Unix tool that
        # gets SIGPIPE; point stdout at /dev/null so the interpreter's final flush does not fail again
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    _reject_mistyped_options(parser, sys.argv[1:] if argv is None else list(argv))
    args, extras = parser.parse_known_args(argv)
    if extras:
        _reject_unknown(subcommand_parser(parser, args.command) or parser, extras)
    debug = bool(os.environ.get("DDSSP_DEBUG"))
    before = warnings.formatwarning
    if not debug:
        warnings.formatwarning = _format_warning
    try:
        return _run(args, debug)
    finally:
        warnings.formatwarning = before  # a command run inside Python leaves its caller's format


def _run(args, debug: bool) -> int:
    from ddssp.data.safetext import terminal_text  # names and labels in messages come from the input

    try:
        return int(args._run(args) or 0)
    except DDSSPError as exc:
        if debug:
            raise
        print(f"ddssp: error: {terminal_text(exc)}", file=sys.stderr)
        return 1
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        if debug:
            raise
        print(f"ddssp: error: {terminal_text(exc.strerror or exc)}: {terminal_text(exc.filename)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        raise  # not an error of ours: main() handles it
    except KeyboardInterrupt:
        print("ddssp: interrupted; nothing was written", file=sys.stderr)
        return 130
    except MemoryError:
        print("ddssp: error: out of memory; reduce the domain sizes or --max-model-size", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug, not bad input: say so in one line, traceback on request
        if debug:
            raise
        print(
            f"ddssp: internal error: {type(exc).__name__}: {terminal_text(exc)} (set DDSSP_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
