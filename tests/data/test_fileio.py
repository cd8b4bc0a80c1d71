import os

import pytest

from ddssp.data.fileio import atomic_write, check_output_path
from ddssp.errors import OutputExistsError


def test_atomic_write_leaves_target_untouched_on_error(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(p) as fh:
            fh.write("new, half written")
            raise RuntimeError("boom")
    assert p.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["out.txt"]  # no temporary left behind


def test_atomic_write_mode_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "a.txt") as fh:
            fh.write("x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644


def test_check_output_path(tmp_path):
    inp = tmp_path / "in.csv"
    inp.write_text("a\n1\n")
    with pytest.raises(OutputExistsError, match="--force"):
        check_output_path(inp)
    with pytest.raises(OutputExistsError, match="input"):
        check_output_path(inp, force=True, inputs=[inp])
    with pytest.raises(OutputExistsError, match="directory"):
        check_output_path(tmp_path)
    with pytest.raises(OutputExistsError, match="does not exist"):
        check_output_path(tmp_path / "nope" / "x.csv")
    assert check_output_path(tmp_path / "new.csv") == tmp_path / "new.csv"
