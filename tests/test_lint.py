"""The code passes ruff's lint and format checks with the settings in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["ddssp", "tests", "examples", "docs/hooks"]

pytest.importorskip("ruff", reason="ruff is in the test extra")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_is_clean():
    out = _ruff("check", "--no-cache", *PATHS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format_is_clean():
    out = _ruff("format", "--check", "--no-cache", *PATHS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nx = undefined_name\n")
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0 and "F821" in out.stdout and "F401" in out.stdout
