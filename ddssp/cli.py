"""The ``ddssp`` command: argument parsing and messages only.

Each sub-command lives in ``ddssp/commands/<name>.py`` and defines ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. Heavy imports (pandas, jax, mbi) happen inside
``run`` so that ``ddssp --help`` stays fast.
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
    ("evaluate", "ddssp.commands.evaluate"),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ddssp",
        description="Differentially private marginals, regressions and synthetic data from one release file.",
    )
    parser.add_argument("--version", action="version", version=f"ddssp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, modname in COMMANDS:
        mod = importlib.import_module(modname)
        p = sub.add_parser(name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def _format_warning(message, category, filename, lineno, line=None):  # noqa: ARG001
    return f"ddssp: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)
    debug = bool(os.environ.get("DDSSP_DEBUG"))
    if not debug:
        warnings.formatwarning = _format_warning
    try:
        return int(args._run(args) or 0)
    except DDSSPError as exc:
        if debug:
            raise
        print(f"ddssp: error: {exc}", file=sys.stderr)
        return 1
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        if debug:
            raise
        print(f"ddssp: error: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
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
            f"ddssp: internal error: {type(exc).__name__}: {exc} (set DDSSP_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
