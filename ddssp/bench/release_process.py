"""One release run as a new user would run it, ``python -m ddssp release FILE --eps E``, in a subprocess
whose CPU time and peak memory are measured (:func:`run_release`).

The release runs under a small launcher that reports the CPU seconds and peak resident set of that
one child, and is stopped after a timeout. The ``ddssp: error`` line of a failure and the warning
lines of a success are returned for the bench's notes (:mod:`.realtables`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: runs the command in its argv[2:] and writes the CPU seconds and peak RSS of that one child to argv[1].
#: A process started directly from the bench would report the bench's own RSS as its peak: Linux carries
#: the high-water mark of the forked copy of the parent across exec. A small launcher has a small copy.
_LAUNCHER = (
    "import json, resource, subprocess, sys\n"
    "rc = subprocess.call(sys.argv[2:])\n"
    "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "scale = 1.0 if sys.platform == 'darwin' else 1024.0  # ru_maxrss: bytes on macOS, KiB on Linux\n"
    "json.dump({'cpu_s': ru.ru_utime + ru.ru_stime, 'peak_rss_mb': ru.ru_maxrss * scale / 2**20},"
    " open(sys.argv[1], 'w'))\n"
    "sys.exit(rc)\n"
)


def bench_env() -> dict:
    """The environment of a child ``python -m ddssp`` process: this one's, with the ddssp being
    benchmarked first on ``PYTHONPATH``.

    Returns
    -------
    dict
    """
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the ddssp being benchmarked
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_release(
    train_csv: Path, out: Path, eps: float, na_values: list[str], timeout: float, extra: list[str] = ()
) -> dict[str, Any]:
    """``python -m ddssp release train_csv --eps eps -o out [extra]`` in a subprocess.

    Parameters
    ----------
    train_csv : pathlib.Path
        The table to release.
    out : pathlib.Path
        The release file.
    eps : float
        The budget.
    na_values : list of str
        Passed as ``--na-values`` when not empty.
    timeout : float
        Stop the release after this many seconds.
    extra : list of str
        Further arguments.

    Returns
    -------
    dict
        ``ok``, ``error`` (line), ``warnings`` (lines), ``cpu_s``, ``peak_rss_mb``, ``wall_s``.
    """
    import json

    cmd = [sys.executable, "-m", "ddssp", "release", str(train_csv), "--eps", repr(eps), "-o", str(out)]
    if na_values:
        cmd += ["--na-values", ",".join(na_values)]
    cmd += list(extra)
    env = bench_env()
    err_path, usage_path = out.with_suffix(".stderr"), out.with_suffix(".usage")
    usage_path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    timed_out = False
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(usage_path), *cmd],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the launcher and the release
            code = proc.wait()
            timed_out = True
    try:
        usage = json.loads(usage_path.read_text())
    except (OSError, ValueError):
        usage = {"cpu_s": float("nan"), "peak_rss_mb": float("nan")}
    usage_path.unlink(missing_ok=True)
    text = err_path.read_text(errors="replace")
    err_path.unlink(missing_ok=True)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    error = None
    if timed_out:
        error = f"timed out after {timeout:g} s"
    elif code != 0:
        errs = [ln for ln in lines if ln.startswith("ddssp: error")]
        error = (
            errs[-1] if errs else f"exit {code}, no 'ddssp: error' line; last stderr line: {lines[-1] if lines else ''}"
        )
    return {
        "ok": code == 0 and not timed_out and out.exists(),
        "error": error,
        "warnings": [ln for ln in lines if not ln.startswith("ddssp: error") and "warning" in ln.lower()],
        "cpu_s": usage["cpu_s"],
        "peak_rss_mb": usage["peak_rss_mb"],
        "wall_s": time.perf_counter() - t0,
    }
