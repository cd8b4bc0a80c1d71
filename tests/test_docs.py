"""The documentation site builds with ``mkdocs build --strict`` and its CLI reference is the CLI's ``--help``.

The build turns any warning into an error: a broken link or anchor, a page missing from the nav, a
mkdocstrings target that no longer exists. The CLI reference page is generated at build time by the
hook in ``docs/hooks/cli_reference.py``; the test reads the *built* page and compares every code
block with what ``ddssp COMMAND --help`` prints, so a hand-edited or stale page fails.
"""

from __future__ import annotations

import contextlib
import html
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install '.[docs]')")
pytest.importorskip("material", reason="mkdocs-material is not installed (pip install '.[docs]')")
pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed (pip install '.[docs]')")

WIDTH = "80"  # the width docs/hooks/cli_reference.py renders at


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    # (no --quiet: it hides warnings from the strict-mode count, so a broken link would pass)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_site_builds_strict_with_every_page(site):
    nav_pages = re.findall(r":\s*([\w/-]+)\.md\s*$", (ROOT / "mkdocs.yml").read_text(), flags=re.M)
    assert len(nav_pages) >= 20
    for page in nav_pages:
        built = site / ("index.html" if page == "index" else f"{page}/index.html")
        assert built.is_file(), f"{page}.md was not built"


def _help_output(argv: list[str]) -> str:
    """What ``ddssp ARGV --help`` prints, from the installed command's own entry point."""
    from ddssp.cli import main

    buf = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as exc:
            main([*argv, "--help"])
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    assert exc.value.code == 0
    return buf.getvalue()


def _code_blocks(page: Path) -> list[str]:
    blocks = re.findall(r"<pre[^>]*>(.*?)</pre>", page.read_text(), flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks]


def test_cli_reference_matches_help_of_every_command(site):
    from ddssp.cli import COMMANDS

    blocks = [b.strip("\n") for b in _code_blocks(site / "reference" / "cli" / "index.html")]
    expected = {"ddssp": _help_output([])}
    expected.update({name: _help_output([name]) for name, _ in COMMANDS})
    assert len(expected) == len(COMMANDS) + 1 >= 9
    for name, text in expected.items():
        assert text.strip("\n") in blocks, f"the CLI reference does not show `{name} --help` as printed"
    assert len(blocks) == len(expected), "the CLI reference has blocks that are no command's --help"


def test_cli_reference_source_is_generated_not_written():
    """The page's source holds the generation marker and no help text of its own to drift."""
    source = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert "<!-- cli-reference -->" in source
    assert "usage: ddssp" not in source
    assert "docs/hooks/cli_reference.py" in (ROOT / "mkdocs.yml").read_text()
