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


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")


def _markdown_pages() -> list[Path]:
    return sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)


def fence_problems(text: str) -> list[str]:
    """Code fences that do not close as written: a closing fence with text after it (Markdown then
    reads it as code, and the block runs on to the next fence), or a fence never closed.

    Parameters
    ----------
    text : str
        A Markdown page.

    Returns
    -------
    list of str
        One line per problem, with its line number.
    """
    problems, opened = [], None  # opened: (line number, fence characters)
    for i, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if not m:
            continue
        fence, rest = m.groups()
        if opened is None:
            opened = (i, fence)
        elif fence[0] == opened[1][0] and len(fence) >= len(opened[1]):
            if rest.strip():  # not a closing fence: the block runs on
                problems.append(f"line {i}: text after the closing fence of the block opened on line {opened[0]}")
            else:
                opened = None
    if opened is not None:
        problems.append(f"line {opened[0]}: a code fence that is never closed")
    return problems


def test_fence_check_finds_trailing_text_and_unclosed_fences():
    assert fence_problems("```python\nx = 1\n```\n\ntext\n") == []
    assert fence_problems("````\n```\nnested\n```\n````\n") == []
    assert fence_problems("```python\nx = 1\n``` More text.\n\n## Heading\n```\n") == [
        "line 3: text after the closing fence of the block opened on line 1"
    ]
    assert fence_problems("```\nx\n") == ["line 1: a code fence that is never closed"]


@pytest.mark.parametrize("page", _markdown_pages(), ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_code_fences_close(page):
    problems = fence_problems(page.read_text(encoding="utf-8"))
    assert not problems, f"{page.relative_to(ROOT)}: " + "; ".join(problems)


def _text(fragment: str) -> str:
    """Visible text of Markdown or HTML inline content, for comparing headings."""
    fragment = re.sub(r"<[^>]+>", "", fragment)  # HTML tags
    fragment = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", fragment)  # Markdown links
    fragment = html.unescape(fragment).replace("¶", "")
    fragment = re.sub(r"[`*_]", "", fragment)
    return " ".join(fragment.split())


def _markdown_headings(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)):
            out.append(_text(re.sub(r"\{[^}]*\}\s*$", "", m.group(2))))  # attr_list {#id}
    return out


def test_every_heading_of_a_page_is_rendered_as_one(site):
    """A page whose Markdown swallows its own structure (an unclosed code block, a stray fence) loses
    headings: every heading of the source must be a heading of the built page."""
    nav_pages = re.findall(r":\s*([\w/-]+)\.md\s*$", (ROOT / "mkdocs.yml").read_text(), flags=re.M)
    lost = []
    for page in nav_pages:
        built = site / ("index.html" if page == "index" else f"{page}/index.html")
        rendered = {_text(h) for h in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", built.read_text(), flags=re.S)}
        source = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8")
        lost += [f"{page}.md: {h!r}" for h in _markdown_headings(source) if h not in rendered]
    assert not lost, "headings not rendered as headings:\n" + "\n".join(lost)


def test_no_sphinx_role_is_left_as_text(site):
    """Docstrings name objects with Sphinx roles (``:func:`x```): the built pages show the code only."""
    left = {
        page: found
        for page in sorted(site.rglob("index.html"))
        if (found := sorted(set(re.findall(r":(?:func|meth|class|mod|attr|data|exc|obj):", page.read_text()))))
    }
    assert not left, f"Sphinx roles rendered as text: {left}"
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "<code>plan_schema</code>" in api and "<code>INSECURE_STAMP</code>" in api


def test_role_hook_keeps_the_name_as_sphinx_shows_it():
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        from sphinx_roles import strip_roles
    finally:
        sys.path.remove(str(ROOT / "docs" / "hooks"))
    assert (
        strip_roles("see :func:<code>f</code> and :data:<code>~a.b.C</code>.")
        == "see <code>f</code> and <code>C</code>."
    )
    assert strip_roles("a :ratio: <code>x</code>") == "a :ratio: <code>x</code>"
