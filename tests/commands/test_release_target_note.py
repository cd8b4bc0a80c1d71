"""`ddssp release` without --target says, in one stderr line, that a regression fitted on the release
rests on the pairs AIM happened to measure, and how to measure for a target instead."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.commands.release import TARGET_NOTE
from ddssp.releasefile import Release


@pytest.fixture
def codes_table(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    a = rng.integers(0, 3, n)
    df = pd.DataFrame(
        {"a": a, "b": (a + rng.integers(0, 2, n)) % 3, "c": rng.integers(0, 2, n), "y": rng.integers(0, 2, n)}
    )
    data = tmp_path / "codes.csv"
    df.to_csv(data, index=False)
    domain = tmp_path / "domain.json"
    domain.write_text(json.dumps({"a": 3, "b": 3, "c": 2, "y": 2}))
    return data, domain


def _release(codes_table, tmp_path, capsys, *extra):
    data, domain = codes_table
    out = tmp_path / f"r{len(list(tmp_path.glob('*.release')))}.release"
    argv = ["release", str(data), "--domain", str(domain), "--eps", "1", "--delta", "1e-6", "--rounds", "8"]
    argv += ["--insecure-seed", "0", "-o", str(out), *extra]
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert Release.load(out).total > 0
    return captured.err


@pytest.mark.filterwarnings("ignore::ddssp.data.DomainKindsWarning")
def test_release_without_target_notes_the_measured_pairs_once(codes_table, tmp_path, capsys):
    err = _release(codes_table, tmp_path, capsys)
    lines = [ln for ln in err.splitlines() if "no --target" in ln]
    assert lines == [TARGET_NOTE]
    assert "pairs AIM happened to measure" in TARGET_NOTE and "release with --target Y" in TARGET_NOTE
    assert "\n" not in TARGET_NOTE
    # with a target, or with --quiet, no such note
    assert "no --target" not in _release(codes_table, tmp_path, capsys, "--target", "y", "--workload", "target")
    assert "no --target" not in _release(codes_table, tmp_path, capsys, "--target", "y")
    assert "no --target" not in _release(codes_table, tmp_path, capsys, "--quiet")
