"""What a long command shows on stderr while it runs: one phase at a time, with elapsed time.

On a terminal each phase is a line that ticks its elapsed time (reading, discovery, counting,
final fit, writing); AIM's rounds are a bar over the privacy budget spent, since the number of
rounds is not known in advance (a round's share of the budget shrinks when the run anneals) but
the budget always ends fully spent. The bar's estimate of the time left covers the rounds only, not
the final fit that follows them, and says so. In a Jupyter notebook the same bars are drawn by
``tqdm.auto``. When stderr is neither a terminal nor a notebook (a log file) nothing is shown, or with
``verbose`` one line per finished phase.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where stderr is not a terminal but bars are wanted).

    Returns
    -------
    bool
    """
    ipython = sys.modules.get("IPython")
    if ipython is None or "ipykernel" not in sys.modules:
        return False
    try:
        shell = ipython.get_ipython()
    except AttributeError:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _tqdm():
    if in_notebook():
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm


def _seconds(t: float) -> str:
    return f"{t:.1f} s" if t < 60 else f"{int(t // 60)} min {t % 60:02.0f} s"


class PhaseProgress:
    """Phases of one command on a stream: one line (or bar) per phase, with elapsed time.

    ``start(name)`` ends the current phase and begins another; ``aim`` is the callback of
    :func:`ddssp.marginals.aim.run_aim` (it starts the counting, rounds and final-fit phases);
    ``close()`` ends the last phase. Safe to use as a context manager.

    Parameters
    ----------
    stream : text file, optional
        Where to write; stderr by default.
    quiet : bool
        Show nothing.
    verbose : bool
        When the stream is not a terminal (a log file), write one line per finished phase.
    live : bool, optional
        Force the live bars on (True) or off (False); by default they are shown on a terminal and in a
        Jupyter notebook.
    """

    def __init__(
        self, stream: TextIO | None = None, *, quiet: bool = False, verbose: bool = False, live: bool | None = None
    ):
        self.stream = sys.stderr if stream is None else stream
        try:
            tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            tty = False
        notebook = stream is None and in_notebook()
        self.live = ((tty or notebook) if live is None else live) and not quiet
        self.log = (not tty) and verbose and not quiet
        self.phase: str | None = None
        self._t = 0.0
        self._bar: Any = None
        self._stop: threading.Event | None = None
        self._detail = ""

    # ---------------------------------------------------------------- phases
    def start(self, name: str) -> None:
        """End the current phase and begin the phase ``name``.

        Parameters
        ----------
        name : str
            The phase's name (e.g. "reading", "discovery").
        """
        self.end()
        self.phase, self._t, self._detail = name, time.perf_counter(), ""
        if self.live:
            tqdm = _tqdm()
            self._bar = tqdm(total=None, desc=name, file=self.stream, bar_format="{desc}: {elapsed}", leave=True)
            self._stop = threading.Event()
            threading.Thread(target=self._tick, args=(self._bar, self._stop), daemon=True).start()

    def _tick(self, bar, stop: threading.Event) -> None:
        while not stop.wait(1.0):  # a phase with no steps of its own still shows time passing
            bar.refresh()

    def end(self) -> None:
        """End the current phase, if any (its bar is closed; with ``verbose`` its line is written)."""
        if self.phase is None:
            return
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.log:
            detail = f" ({self._detail})" if self._detail else ""
            print(
                f"ddssp: {self.phase}: {_seconds(time.perf_counter() - self._t)}{detail}", file=self.stream, flush=True
            )
        self.phase = None

    def close(self) -> None:
        """End the last phase."""
        self.end()

    def __enter__(self) -> PhaseProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- AIM's callback
    def aim(self, p: Any) -> None:
        """Callback for :func:`ddssp.marginals.aim.run_aim`: starts the counting, rounds and final-fit phases.

        Parameters
        ----------
        p : AIMProgress
            What the run reports.
        """
        phase = getattr(p, "phase", "round")
        if phase == "counting":
            self.start("counting marginals")
        elif phase == "final":
            self.start("final fit")
        else:
            if self.phase != "AIM rounds":
                self._start_rounds()
            done = min(100.0, 100.0 * p.rho_spent / p.rho_budget) if p.rho_budget > 0 else 100.0
            what = ",".join(p.clique) if p.clique else "one-way marginals"
            self._detail = f"{p.round} rounds"
            if self._bar is not None:
                self._bar.info = f"round {p.round}: measured {what}"
                self._bar.update(done - self._bar.n)

    def _start_rounds(self) -> None:
        self.end()
        self.phase, self._t, self._detail = "AIM rounds", time.perf_counter(), ""
        if self.live:
            self._bar = _Bar(
                total=100,
                desc="AIM rounds",
                file=self.stream,
                leave=True,
                bar_format="{desc}: {percentage:3.0f}% of budget |{bar}| {elapsed} (rounds left ~{remaining}) {info}",
            )


def _bar_class():
    tqdm = _tqdm()

    class Bar(tqdm):
        """tqdm with an ``info`` field in the bar format (tqdm's own postfix starts with ", ")."""

        info = ""

        @property
        def format_dict(self):
            d = super().format_dict
            d["info"] = self.info
            return d

    return Bar


def _Bar(**kwargs):  # noqa: N802  (a class made on first use, so importing this module skips tqdm)
    return _bar_class()(**kwargs)
