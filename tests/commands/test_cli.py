"""The CLI shell around the commands: behaviour a user sees whatever the command."""

import os
import subprocess
import sys

import pytest

from tests.test_release import DOMAIN, make_codes


@pytest.fixture(scope="module")
def tiny_release(tmp_path_factory):
    from ddssp.data import Schema
    from ddssp.pipeline import AimOptions, ReadOptions, release

    rel = release(
        make_codes(500),
        Schema.from_domain(DOMAIN, categorical=["a", "b", "y"]),
        eps=1.0,
        delta=1e-6,
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=8),
    )
    path = tmp_path_factory.mktemp("cli") / "tiny.release"
    rel.save(path)
    return path


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_closed_stdout_is_not_an_internal_error(tiny_release, unbuffered):
    """`ddssp inspect X | head` closes the pipe early: no 'internal error', no traceback, and the
    exit status of a tool stopped by SIGPIPE (141), with Python's stdout buffered or not."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    p = subprocess.Popen(
        [sys.executable, "-m", "ddssp", "inspect", str(tiny_release)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    p.stdout.close()  # the reader is gone before ddssp writes anything
    err = p.stderr.read().decode()
    code = p.wait(timeout=300)
    assert "internal error" not in err and "Traceback" not in err and "BrokenPipe" not in err, err
    assert code == 141
