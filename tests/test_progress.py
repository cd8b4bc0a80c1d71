"""Progress on stderr: phases with elapsed time on a terminal, nothing in a redirected log unless
--verbose (then one line per phase), and no round cap the run never reaches."""

from __future__ import annotations

import io
import re

from ddssp.marginals.aim import AIMProgress
from ddssp.progress import PhaseProgress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run_phases(progress: PhaseProgress) -> None:
    progress.start("reading")
    progress.start("discovery")
    progress.aim(AIMProgress(0, 240, 0.0, 1.0, None, float("nan"), phase="counting"))
    for rnd in range(3):
        progress.aim(AIMProgress(rnd, 240, 0.2 * (rnd + 1), 1.0, ("a", "b") if rnd else None, 1.5))
    progress.aim(AIMProgress(3, 240, 1.0, 1.0, ("a", "c"), 0.9))
    progress.aim(AIMProgress(3, 240, 1.0, 1.0, None, float("nan"), phase="final"))
    progress.start("writing")
    progress.close()


def test_redirected_stderr_gets_nothing_without_verbose():
    log = io.StringIO()
    _run_phases(PhaseProgress(log))
    assert log.getvalue() == ""


def test_verbose_redirected_stderr_gets_one_line_per_phase():
    log = io.StringIO()
    _run_phases(PhaseProgress(log, verbose=True))
    lines = log.getvalue().splitlines()
    assert [line.split(":")[1].strip() for line in lines] == [
        "reading",
        "discovery",
        "counting marginals",
        "AIM rounds",
        "final fit",
        "writing",
    ]
    assert all(re.fullmatch(r"ddssp: [a-zA-Z ]+: [0-9.]+ s( \(\d+ rounds\))?", line) for line in lines)
    assert "\r" not in log.getvalue()


def test_quiet_shows_nothing_even_on_a_terminal():
    term = _Terminal()
    _run_phases(PhaseProgress(term, quiet=True, verbose=True))
    assert term.getvalue() == ""


def test_terminal_bar_is_by_budget_with_elapsed_time_and_no_round_cap():
    term = _Terminal()
    _run_phases(PhaseProgress(term))
    text = term.getvalue()
    assert "final fit: 00:00" in text  # the final fit has its own line, not a silent 100%
    assert "100% of budget" in text
    assert "round 3: measured a,c" in text
    assert "/240" not in text  # the round count AIM was sized for is not a cap the run reaches
    assert ", round" not in text and "| , " not in text
    assert re.search(r"\| 00:0\d \(rounds left", text)


def _small_table(tmp_path):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "examples"
    lines = (root / "census.csv").read_text().splitlines()[:1501]
    data = tmp_path / "t.csv"
    data.write_text("\n".join(lines) + "\n")
    return data, root / "census.schema.json"


def test_release_log_has_one_line_per_phase_with_verbose(tmp_path, capsys):
    from ddssp.cli import main

    data, schema = _small_table(tmp_path)
    argv = ["release", str(data), "--schema", str(schema), "--eps", "1", "--rounds", "16", "--seed", "1"]
    assert main([*argv, "-o", str(tmp_path / "a.release")]) == 0
    plain = capsys.readouterr().err  # stderr is not a terminal here
    assert "\r" not in plain and "AIM rounds" not in plain and "final fit" not in plain
    assert main([*argv, "-o", str(tmp_path / "b.release"), "--verbose"]) == 0
    err = capsys.readouterr().err
    phases = [m.group(1) for m in re.finditer(r"^ddssp: ([a-zA-Z ]+): [0-9.]+ s", err, flags=re.M)]
    assert phases == ["reading", "counting marginals", "AIM rounds", "final fit", "writing"]
    assert "\r" not in err
