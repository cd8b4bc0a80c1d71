"""The ``ddssp`` command starts light: help, version and usage errors import none of the heavy stack.

Each case runs ``python -X importtime -m ddssp ...`` in a fresh interpreter and reads the modules it
imported from the interpreter's own import log, so an eager import anywhere on the way (the package's
``__init__``, ``ddssp.cli``, a command module's top level or its ``add_arguments``) is caught.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddssp.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]

#: top-level packages that only a command's ``run`` may import
HEAVY = {"pandas", "numpy", "opendp", "duckdb", "jax", "jaxlib", "mbi", "pyarrow", "scipy", "sklearn", "matplotlib"}


def _imported(args: list[str]) -> tuple[int, set[str], str]:
    """Exit status, the top-level packages imported, and stdout + stderr less the import log."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ddssp", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    log = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    rest = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    modules = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in log}
    return proc.returncode, modules, proc.stdout + "\n".join(rest)


CASES = [
    (["--version"], 0),
    (["--help"], 0),
    *[([name, "--help"], 0) for name, _ in COMMANDS],
    (["release"], 2),  # the data argument missing
    (["fit", "x.release", "--targt", "y"], 2),  # a mistyped option
    (["relase", "x.csv"], 2),  # a mistyped command
    (["release", "x.csv", "--eps", "1", "--stray"], 2),  # an argument the command does not take
]


@pytest.mark.parametrize(("args", "code"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_help_version_and_usage_errors_import_nothing_heavy(args, code):
    status, modules, output = _imported(args)
    assert status == code, output
    assert "ddssp" in modules, "the import log was not read"
    assert not modules & HEAVY, f"`ddssp {' '.join(args)}` imported {sorted(modules & HEAVY)}"


def test_import_ddssp_is_light_and_its_names_resolve():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    code = (
        f"import sys, ddssp; HEAVY = {sorted(HEAVY)!r}; "
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & set(HEAVY)); "
        "assert {'release', 'Release', 'evaluate'} <= set(dir(ddssp)); "
        "print(heavy, ddssp.release.__module__, ddssp.Release.__name__, ddssp.evaluate.__module__)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "ddssp.pipeline.run", "Release", "ddssp.evaluation.report"]


def test_the_import_log_sees_a_heavy_import(tmp_path):
    """The probe is not vacuous: a command that reaches its ``run`` loads numpy, and the log shows it."""
    missing = tmp_path / "missing.release"
    status, modules, output = _imported(["inspect", str(missing)])
    assert status == 1 and "ddssp: error:" in output
    assert "numpy" in modules


#: what a release file's refusal may not wait for: the reader needs numpy only
STACK = HEAVY - {"numpy"}


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory) -> dict[str, Path]:
    from tests import hostile

    d = tmp_path_factory.mktemp("hostile")
    base = hostile.two_column_base(d / "base.release")
    return {
        "list bomb in manifest.json": hostile.list_bomb(base, d / "lbm.release", total=4 << 20),
        "list bomb in release.json": hostile.list_bomb(base, d / "lbr.release", member="release.json", total=4 << 20),
        "deep manifest.json": hostile.deep_manifest(base, d / "deep.release"),
        "50,000 ledger entries": hostile.many_entries(base, d / "entries.release"),
        "20,000 members": hostile.many_members(base, d / "members.release", n=20_000),
    }


@pytest.mark.parametrize(
    "name",
    [
        "list bomb in manifest.json",
        "list bomb in release.json",
        "deep manifest.json",
        "50,000 ledger entries",
        "20,000 members",
    ],
)
def test_a_hostile_release_is_refused_before_the_numeric_stack_is_imported(hostile_files, name):
    status, modules, output = _imported(["inspect", str(hostile_files[name])])
    assert status == 1 and output.strip().startswith("ddssp: error:"), output
    assert len(output.strip().splitlines()) == 1, output
    assert "ddssp" in modules and not modules & STACK, f"refusing {name} imported {sorted(modules & STACK)}"


def test_a_valid_release_does_import_the_stack(hostile_files):
    """The check above can fail: inspecting the honest base release imports pandas."""
    status, modules, output = _imported(["inspect", str(hostile_files["deep manifest.json"].parent / "base.release")])
    assert status == 0, output
    assert "pandas" in modules
