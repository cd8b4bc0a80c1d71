"""The mixed-table generator and the mixed-release bench kind, on tiny sizes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.bench.mixed import generate_mixed, main, write_mixed


def test_generate_mixed_shapes_and_dependence():
    df = generate_mixed(4000, 9, 7, seed=3)
    assert df.shape == (4000, 9)
    num, cat = df.columns[:7], df.columns[7:]
    assert all(pd.api.types.is_numeric_dtype(df[c]) for c in num)
    assert all(not pd.api.types.is_numeric_dtype(df[c]) and df[c].str.startswith("c").all() for c in cat)
    assert (df["x3"] == 0).mean() > 0.2  # the zero-inflated column has a point mass at 0
    assert (df["x4"] == df["x4"].round()).all()  # the integer column
    assert df["x1"].skew() > 1  # lognormal
    # columns 0 and 3 load on the same factor: clearly dependent
    assert abs(np.corrcoef(df["x0"], df["x3"] > 0)[0, 1]) > 0.2
    assert generate_mixed(4000, 9, 7, seed=3).equals(df)
    assert not generate_mixed(4000, 9, 7, seed=4).equals(df)
    with pytest.raises(ValueError):
        generate_mixed(10, 3, 4)


def test_write_mixed_chunks(tmp_path):
    p = write_mixed(tmp_path / "m.csv", 250_001, 3, 2, seed=1)
    lines = p.read_text().splitlines()
    assert len(lines) == 250_002 and lines[0] == "x0,x1,c2"


def test_mixed_release_kind(tmp_path, capsys):
    from ddssp.cli import main as cli_main

    spec = tmp_path / "tiny.toml"
    spec.write_text(
        'name = "tiny"\nkind = "mixed-release"\ntimeout = 600\n'
        'cases = [{name = "tiny", kind = "mixed", rows = 5000, columns = 4, numeric = 2, eps = 4, '
        'release_args = ["--rounds", "8", "--bins", "4"]}]\n'
    )
    assert cli_main(["bench", str(spec), "-o", str(tmp_path / "out"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "wl error" in out and "tiny" in out
    res = pd.read_csv(tmp_path / "out" / "results.csv")
    got = dict(zip(res["metric"], res["value"]))
    assert set(got) >= {"cpu_s", "peak_mb", "rounds", "workload_tv"}
    assert 0 <= got["workload_tv"] < 0.5 and 1 <= got["rounds"] <= 8 and got["cpu_s"] > 0


def test_failed_cases_are_one_line_error(tmp_path, capsys):
    from ddssp.cli import main as cli_main

    spec = tmp_path / "bad.toml"
    spec.write_text('name = "bad"\nkind = "mixed-release"\ncases = [{kind = "mixed", rows = 0, columns = 2}]\n')
    assert cli_main(["bench", str(spec), "-o", str(tmp_path / "out"), "--quiet"]) != 0
    assert "ddssp: error: mixed-release" in capsys.readouterr().err


def test_unknown_case_is_one_line_error(capsys):
    assert main(["--cases", "zz"]) == 1
    assert "unknown case" in capsys.readouterr().err


def test_run_case_reports_its_own_release(tmp_path):
    """One case through the CLI: CPU and peak RSS are that release's (read through the wrapper),
    the workload error is a TV in [0, 1], and seeded noise makes the run repeatable."""
    from ddssp.bench.mixed import Case, run_case

    case = Case("t tiny", "mixed", 1.0, 3000, 4, 2)
    a = run_case(case, tmp_path, tmp_path, timeout=300, insecure_seed=3)
    b = run_case(case, tmp_path, tmp_path, timeout=300, insecure_seed=3)
    assert a["error"] is None and b["error"] is None
    assert a["cpu_s"] > 0 and 50 < a["peak_mb"] < 4000
    assert 0 <= a["tv"] <= 1 and a["tv"] == b["tv"] and a["rounds"] == b["rounds"]


def test_run_case_timeout_stops_the_release_too(tmp_path, monkeypatch):
    """A case over its time limit is stopped with its release process, not only the wrapper."""
    import os
    import time

    from ddssp.bench import mixed

    case = mixed.Case("t slow", "mixed", 1.0, 3000, 4, 2)
    marker = tmp_path / "pid"
    # stand in for the release command: a process that records its pid and sleeps
    sleeper = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    real_popen = mixed.subprocess.Popen

    def popen(args, **kw):
        return real_popen([args[0], "-c", args[2], mixed.sys.executable, "-c", sleeper], **kw)

    monkeypatch.setattr(mixed.subprocess, "Popen", popen)
    out = mixed.run_case(case, tmp_path, tmp_path, timeout=3)
    assert out["error"] == "stopped after 3 s"
    pid = int(marker.read_text())
    for _ in range(50):  # the sleeper is gone (killed with the wrapper's session)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the release process outlived the timeout")


def test_adult_rows_case_resamples_and_scores(tmp_path):
    """The adult-rows kind: Adult resampled to the case's rows, released under the public domain
    by DuckDB, scored against the resampled file."""
    from pathlib import Path

    from ddssp.bench.mixed import DEFAULT_DATA, Case, run_case

    if not (Path(DEFAULT_DATA) / "adult.csv").exists():
        pytest.skip("../shared/data/adult.csv is absent")
    case = Case("s tiny", "adult-rows", 1.0, 5000)
    r = run_case(case, Path(DEFAULT_DATA), tmp_path, timeout=300, insecure_seed=2)
    assert r["error"] is None, r
    assert len(pd.read_csv(tmp_path / "adult_5000.csv")) == 5000
    assert case.columns == 15 and 0 < r["tv"] < 0.5 and r["rounds"] > 0
