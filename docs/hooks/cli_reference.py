"""MkDocs hook: the CLI reference page is generated from ``ddssp.cli.build_parser()`` at build time.

``docs/reference/cli.md`` holds the marker ``<!-- cli-reference -->``; this hook replaces it with the
``--help`` text of ``ddssp`` and of every sub-command, so the page cannot drift from the argparse
definitions. ``tests/test_docs.py`` builds the site and compares the rendered page with ``--help``.
"""

from __future__ import annotations

import argparse
import os

MARKER = "<!-- cli-reference -->"
#: argparse wraps help text to the terminal width; a fixed width makes the page reproducible
WIDTH = "80"


def subcommand_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-command parsers of ``parser``, by command name, in definition order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def help_texts() -> dict[str, str]:
    """``{"ddssp": top-level help, "release": help of ddssp release, ...}`` at a fixed width."""
    from ddssp.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser()
        texts = {"ddssp": parser.format_help()}
        for name, sub in subcommand_parsers(parser).items():
            texts[name] = sub.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return texts


def reference_markdown() -> str:
    """The generated part of the CLI reference page: one section per command, help text verbatim."""
    texts = help_texts()
    out = ["## `ddssp`", "", "```text", texts.pop("ddssp").rstrip("\n"), "```", ""]
    for name, text in texts.items():
        out += [f"## `ddssp {name}`", "", "```text", text.rstrip("\n"), "```", ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files):  # noqa: ARG001  (MkDocs hook signature)
    if MARKER in markdown:
        return markdown.replace(MARKER, reference_markdown())
    return markdown
