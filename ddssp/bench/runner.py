"""Benchmark runner: a workloads/*.toml spec -> results.csv, a summary table and a plot.

A spec is TOML with a ``kind`` that names its experiment runner (default ``"ddssp-paper"``):

    kind = "ddssp-paper"        # ddssp.bench.ddssp_paper:run  (DD-SSP vs baselines on a table)
    kind = "pdp-op-synthetic"   # ddssp.bench.pdp_op:run
    kind = "napp-erm-simulation"
    kind = "multitask-synthetic"
    kind = "ci-coverage"        # ddssp.bench.ci_coverage:run  (coverage of DD-SSP confidence intervals)
    kind = "mixed-release"      # ddssp.bench.mixed:run  (release cost and workload error on mixed tables)

A runner is ``run(spec: dict, ctx: BenchContext) -> pandas.DataFrame`` with one row per measured number
and at least the columns ``method, trial, metric, value, seconds`` plus the setting columns
(``epsilon`` and/or others such as ``lambda``). The summary groups by every column except
``trial, value, seconds`` and reports mean, standard error and count.
"""

from __future__ import annotations

import importlib
import math
import sys
import time
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.fileio import atomic_write
from ddssp.errors import WorkloadError

RUNNERS: dict[str, str] = {
    "ddssp-paper": "ddssp.bench.ddssp_paper:run",
    "pdp-op-synthetic": "ddssp.bench.pdp_op:run",
    "napp-erm-simulation": "ddssp.bench.napp_erm:run",
    "multitask-synthetic": "ddssp.bench.multitask:run",
    "ci-coverage": "ddssp.bench.ci_coverage:run",
    "real-tables": "ddssp.bench.realtables:run",
    "real-baselines": "ddssp.bench.baselines:run",
    "impossible-values": "ddssp.bench.impossible:run",
    "mixed-release": "ddssp.bench.mixed:run",
    "agency": "ddssp.bench.agency:run",
}

REQUIRED_COLUMNS = ("method", "trial", "metric", "value", "seconds")


@dataclass
class BenchContext:
    """What a runner gets besides its spec. ``None`` overrides mean "use the spec's value".

    Attributes
    ----------
    spec_path : pathlib.Path
        The spec file.
    outdir : pathlib.Path
        Where results go.
    data_dir : pathlib.Path or None
        ``--data-dir``.
    trials : int or None
        ``--trials``.
    eps : list of float or None
        ``--eps``.
    methods : list of str or None
        ``--methods``.
    seed : int or None
        The base seed.
    quiet : bool
        No progress output.
    extra : dict
        Runner-specific objects (e.g. a noise source in tests).
    rows : list of dict
        The rows of the finished cells.
    previous : pandas.DataFrame or None
        The results of a resumed run.
    """

    spec_path: Path
    outdir: Path
    data_dir: Path | None = None
    trials: int | None = None
    eps: list[float] | None = None
    methods: list[str] | None = None
    seed: int | None = 0
    quiet: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def setting(self, spec: dict, key: str, override: Any, default: Any = None, old: str | None = None) -> Any:
        """A setting: ``override`` if given, else ``spec[key]``, else ``default``.

        Parameters
        ----------
        spec : dict
            The parsed spec.
        key : str
            The spec key.
        override : any
            The command-line value, or None.
        default : any
            The default.
        old : str, optional
            The key's former spelling (e.g. ``epsilon`` for ``eps``), still read with a DeprecationWarning.

        Returns
        -------
        any

        Raises
        ------
        WorkloadError
            When the spec gives both spellings.
        """
        if old is not None and old in spec:
            if key in spec:
                raise WorkloadError(f"benchmark spec gives both {key!r} and its old spelling {old!r}; keep {key!r}")
            warnings.warn(
                f"benchmark spec key {old!r} is deprecated; call it {key!r}", DeprecationWarning, stacklevel=2
            )
            spec = {**spec, key: spec[old]}
        if override is not None:
            return override
        return spec.get(key, default)

    def data_path(self, name: str) -> Path:
        """Resolve a dataset file named in a spec: absolute, relative to --data-dir, or to the spec.

        Parameters
        ----------
        name : str
            The file name.

        Returns
        -------
        pathlib.Path

        Raises
        ------
        WorkloadError
            When no candidate exists.
        """
        p = Path(name)
        candidates = [p] if p.is_absolute() else []
        if not p.is_absolute():
            if self.data_dir is not None:
                candidates.append(self.data_dir / p)
            candidates.append(self.spec_path.parent / p)
        for c in candidates:
            if c.exists():
                return c
        raise WorkloadError(
            f"data file {name!r} not found (looked in: {', '.join(str(c) for c in candidates)}); pass --data-dir"
        )

    def progress(self, total: int, desc: str):
        """A progress bar over ``total`` steps.

        Silent with --quiet, and when stderr is not a terminal (tqdm's ``disable=None``), so a redirected
        log gets no carriage-return lines.

        Parameters
        ----------
        total : int
            The number of steps.
        desc : str
            Its label.

        Returns
        -------
        tqdm.tqdm
        """
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, disable=True if self.quiet else None, file=sys.stderr, leave=False)

    def log(self, msg: str) -> None:
        """Print a line to stderr unless quiet.

        Parameters
        ----------
        msg : str
            The line.
        """
        if not self.quiet:
            print(msg, file=sys.stderr)

    # ----------------------------------------------------------------- incremental results / resume
    #: rows of every cell finished so far (this run's and the resumed run's), in loop order
    rows: list[dict] = field(default_factory=list)
    #: the results.csv of the stopped run being resumed (None when not resuming)
    previous: pd.DataFrame | None = None

    @property
    def results_path(self) -> Path:
        """The results.csv of the output directory."""
        return self.outdir / "results.csv"

    def cell(self, key: dict[str, Any]) -> list[dict] | None:
        """The rows of a cell the resumed run already finished (and adds them to ``rows``), else None.

        A cell is a runner's unit of work whose random streams depend only on the base seed and the cell's
        own key (e.g. ``{"epsilon": 1.0, "trial": 3}``), so skipping it leaves every other cell unchanged.
        Keys are matched on their CSV text (how results.csv stores them).

        Parameters
        ----------
        key : dict
            The cell's key; a list, tuple, set or range value matches any of its values.

        Returns
        -------
        list of dict or None
        """
        prev = self.previous
        if prev is None or prev.empty:
            return None
        mask = np.ones(len(prev), dtype=bool)
        for col, val in key.items():
            if col not in prev.columns:
                return None
            text = prev[col].astype(str)
            if isinstance(val, (list, tuple, set, range)):  # any of these values (e.g. a chunk of trials)
                mask &= text.isin([str(v) for v in val]).to_numpy()
            else:
                mask &= (text == str(val)).to_numpy()
        if not mask.any():
            return None
        done = prev[mask].to_dict("records")
        self.rows.extend(done)
        self._csv = None  # the next save writes every row again
        return done

    #: (columns, CSV text) of the rows saved so far: a new cell only converts its own rows
    _csv: tuple[list, str] | None = field(default=None, init=False, repr=False)

    def save_cell(self, rows: list[dict]) -> None:
        """Record a finished cell: append its rows and rewrite results.csv.

        The file is written atomically, so a kill never leaves half a cell; a run that is stopped keeps
        every finished cell and ``--resume`` continues from there.

        Parameters
        ----------
        rows : list of dict
            The cell's rows.
        """
        self.rows.extend(rows)
        if not self.rows:
            return
        new = pd.DataFrame(rows)
        if self._csv is None or not set(new.columns) <= set(self._csv[0]):
            full = pd.DataFrame(self.rows)
            self._csv = (list(full.columns), full.to_csv(index=False))
        elif rows:
            cols, text = self._csv
            self._csv = (cols, text + new.reindex(columns=cols).to_csv(index=False, header=False))
        with atomic_write(self.results_path, "w", newline="") as fh:
            fh.write(self._csv[1])


RUN_FILE = "run.json"


def load_spec(path: str | Path) -> dict:
    """Read a benchmark spec (TOML) and check its ``kind`` (default ``"ddssp-paper"``).

    Parameters
    ----------
    path : str or pathlib.Path
        The spec file.

    Returns
    -------
    dict

    Raises
    ------
    WorkloadError
        For a missing file, invalid TOML or an unknown kind.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            spec = tomllib.load(fh)
    except FileNotFoundError:
        raise WorkloadError(f"benchmark spec {path} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"benchmark spec {path} is not valid TOML: {exc}") from None
    kind = spec.get("kind", "ddssp-paper")
    if kind not in RUNNERS:
        raise WorkloadError(f"benchmark spec {path}: unknown kind {kind!r}; known: {', '.join(RUNNERS)}")
    spec["kind"] = kind
    return spec


def get_runner(kind: str) -> Callable[[dict, BenchContext], pd.DataFrame]:
    """The runner function of a spec kind (imported on demand).

    Parameters
    ----------
    kind : str
        A key of :data:`RUNNERS`.

    Returns
    -------
    callable
        ``run(spec, ctx) -> pandas.DataFrame``.
    """
    modname, func = RUNNERS[kind].split(":")
    return getattr(importlib.import_module(modname), func)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error and count of ``value`` per setting (all columns but trial/value/seconds).

    The standard error of a single trial is unknown: NaN, printed as ``-``.

    Parameters
    ----------
    results : pandas.DataFrame
        The results.

    Returns
    -------
    pandas.DataFrame
        With ``mean``, ``count``, ``se`` and mean ``seconds``.
    """
    keys = [c for c in results.columns if c not in ("trial", "value", "seconds")]
    g = results.groupby(keys, sort=True, dropna=False)
    out = g["value"].agg(["mean", "std", "count"]).reset_index()
    out["se"] = out["std"] / np.sqrt(out["count"])  # NaN for one trial (pandas' std has ddof=1)
    out["seconds"] = g["seconds"].mean().to_numpy()
    return out.drop(columns="std")


def format_summary(summary: pd.DataFrame) -> str:
    """The summary as aligned text (4 significant digits; ``-`` for the standard error of one trial).

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`summarize`.

    Returns
    -------
    str
    """

    def fmt(x: float) -> str:
        return "nan" if not math.isfinite(x) else f"{x:.4g}"

    s = summary.copy()
    s["mean"] = s["mean"].map(fmt)
    s["se"] = [fmt(se) if n > 1 else "-" for se, n in zip(s["se"], s["count"])]
    s["seconds"] = s["seconds"].map(lambda x: f"{x:.2f}")
    return s.to_string(index=False)


#: legend names of the benchmark methods (ids as in the specs); an id not listed is shown as it is
METHOD_LABELS: dict[str, str] = {
    "ddssp": "DD-SSP (from the release)",
    "ddssp-discovered": "DD-SSP, schema discovered under DP",
    "aim-synth": "AIM synthetic data + regression",
    "adassp": "AdaSSP",
    "objpert": "objective perturbation",
    "public": "non-private regression",
    "non-private": "non-private regression",
    "ssp": "multitask SSP",
    "gd": "multitask DP gradient descent",
}

#: axis names of the summary's columns
AXIS_LABELS: dict[str, str] = {
    "epsilon": "epsilon (privacy budget)",
    "mse": "test mean squared error",
    "auc": "test AUC",
    "accuracy": "test accuracy",
    "rmse": "test RMSE",
}


def _plain_log_ticks(ax, values) -> None:
    """Ticks of a log x axis at the values run, labelled as plain numbers (0.5, 2) not 5x10^-1."""
    import matplotlib.ticker as mticker

    vals = sorted({float(v) for v in values if np.isfinite(v) and v > 0})
    ax.xaxis.set_major_locator(mticker.FixedLocator(vals))
    ax.xaxis.set_major_formatter(mticker.FixedFormatter([f"{v:g}" for v in vals]))
    ax.xaxis.set_minor_formatter(mticker.NullFormatter())


def plot_results(
    summary: pd.DataFrame, path: Path, x: str = "epsilon", logx: bool = True, title: str | None = None
) -> bool:
    """Metric vs ``x`` per method with standard-error bars (none for one trial), one panel per metric.

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`summarize`.
    path : pathlib.Path
        The PNG to write.
    x : str
        The column on the x axis.
    logx : bool
        A log-scale x axis.
    title : str, optional
        The title (the spec's name).

    Returns
    -------
    bool
        False without matplotlib, or when ``x`` is not a column.
    """
    from ddssp.bench.plotting import pyplot

    plt = pyplot()
    if plt is None:
        return False
    if x not in summary.columns:
        return False
    metrics = list(dict.fromkeys(summary["metric"]))
    ncols = min(4, len(metrics))  # panels in rows of at most four, so many metrics stay legible
    nrows = -(-len(metrics) // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(max(6.5, 5 * ncols), 4.2 * nrows + 0.6), squeeze=False)
    axes = list(grid.ravel())
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    for ax, metric in zip(axes, metrics):
        sub = summary[summary["metric"] == metric]
        for method, grp in sub.groupby("method", sort=False):
            grp = grp.sort_values(x)
            yerr = grp["se"].where(grp["count"] > 1)
            ax.errorbar(
                grp[x],
                grp["mean"],
                yerr=None if yerr.isna().all() else yerr.fillna(0.0),
                marker="o",
                capsize=3,
                label=METHOD_LABELS.get(str(method), str(method)),
            )
        if logx:
            ax.set_xscale("log")
            _plain_log_ticks(ax, sub[x])
        ax.set_xlabel(AXIS_LABELS.get(x, x))
        ax.set_ylabel(AXIS_LABELS.get(metric, metric))
        ax.grid(True, alpha=0.3)
        trials = int(sub["count"].max()) if len(sub) else 0
        ax.set_title(
            f"{AXIS_LABELS.get(metric, metric)} ({trials} trial{'s' if trials != 1 else ''} per point"
            + (", bars: 1 standard error)" if trials > 1 else ")"),
            fontsize=9,
        )
    if title:
        fig.suptitle(title)
    # one legend for the figure, below the panels (the methods are the same in every panel)
    handles, labels = axes[0].get_legend_handles_labels()
    ncol = min(len(labels), 2 if len(metrics) == 1 else 5)
    nrow = -(-len(labels) // max(ncol, 1))
    fig.legend(handles, labels, loc="lower center", ncol=max(ncol, 1), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, (0.06 * nrow + 0.02) / nrows, 1, 1))
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)
    return True


def default_outdir(spec_path: str | Path) -> Path:
    """Where ``ddssp bench`` writes when no ``-o`` is given: ``bench-out/<spec stem>``.

    Parameters
    ----------
    spec_path : str or pathlib.Path
        The spec file.

    Returns
    -------
    pathlib.Path
    """
    return Path("bench-out") / Path(spec_path).stem


def _run_identity(spec_path: Path, spec: dict, trials, eps, methods, seed) -> dict[str, Any]:
    """What must be equal for ``--resume`` to continue a stopped run: the spec's text and the overrides."""
    import hashlib

    return {
        "spec": str(spec_path),
        "spec_sha256": hashlib.sha256(spec_path.read_bytes()).hexdigest(),
        "kind": spec["kind"],
        "trials": trials,
        "eps": eps,
        "methods": methods,
        "seed": seed,
    }


def run_bench(
    spec_path: str | Path,
    outdir: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    trials: int | None = None,
    eps: list[float] | None = None,
    methods: list[str] | None = None,
    seed: int | None = 0,
    quiet: bool = False,
    force: bool = False,
    resume: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run a spec; write ``results.csv``, ``summary.csv`` and ``plot.png`` into ``outdir``.

    ``results.csv`` grows as the run goes: every finished cell (a runner's unit of work, e.g. one
    (eps, trial)) is written at once, so a stopped run keeps what it finished.

    Parameters
    ----------
    spec_path : str or pathlib.Path
        The spec file.
    outdir : str or pathlib.Path, optional
        The output directory; ``bench-out/<spec stem>`` by default.
    data_dir : str or pathlib.Path, optional
        Where the spec's data files are.
    trials : int, optional
        Overrides the spec's trial count.
    eps : list of float, optional
        Overrides the spec's eps grid.
    methods : list of str, optional
        Overrides the spec's methods.
    seed : int, optional
        The base seed.
    quiet : bool
        No progress output.
    force : bool
        Replace existing results.
    resume : bool
        Continue a stopped run: cells already in ``results.csv`` are read back, not recomputed, and
        since every cell's random streams come from the base seed and the cell's key, the finished file
        is the one an uninterrupted run writes (up to the ``seconds`` column).

    Returns
    -------
    results : pandas.DataFrame
    summary : pandas.DataFrame

    Raises
    ------
    WorkloadError
        For an invalid spec, output directory or combination of options.
    """
    import json

    spec = load_spec(spec_path)
    spec_path = Path(spec_path)
    outdir = Path(outdir) if outdir is not None else default_outdir(spec_path)
    if outdir.exists() and not outdir.is_dir():
        raise WorkloadError(f"output {outdir} exists and is not a directory")
    if force and resume:
        raise WorkloadError("--force (start over) and --resume (continue) exclude each other; choose one")
    if trials is not None and trials < 1:
        raise WorkloadError("--trials must be at least 1")
    if eps is not None and any(not (e > 0 and math.isfinite(e)) for e in eps):
        raise WorkloadError("every --eps value must be positive and finite")
    identity = _run_identity(spec_path, spec, trials, eps, methods, seed)
    results_path, run_path = outdir / "results.csv", outdir / RUN_FILE
    previous = None
    if resume:
        if not results_path.exists():
            raise WorkloadError(f"nothing to resume: {results_path} does not exist (run without --resume)")
        try:
            before = json.loads(run_path.read_text())
        except (OSError, ValueError):
            raise WorkloadError(
                f"cannot resume: {run_path} is missing or unreadable (pass --force to start over)"
            ) from None
        if (outdir / "summary.csv").exists() and before.get("trials") == identity["trials"]:
            raise WorkloadError(
                f"the run in {outdir} already finished (summary.csv exists); pass --force to "
                "redo it, or --resume --trials N to extend it to N trials"
            )
        # --trials may change: a trial's cells depend on its own index only, so a stopped run can be
        # finished with fewer trials (those it completed) or extended with more
        diff = sorted(k for k in identity if k not in ("spec", "trials") and before.get(k) != identity[k])
        if diff:
            raise WorkloadError(
                f"cannot resume: the stopped run in {outdir} used different {', '.join(diff)} "
                "(resume with the same spec file, --trials, --eps, --methods and --seed, or pass --force)"
            )
        try:
            previous = pd.read_csv(results_path)
        except (OSError, ValueError, pd.errors.EmptyDataError):
            raise WorkloadError(f"cannot resume: {results_path} is unreadable (pass --force to start over)") from None
    elif results_path.exists() and not force:
        if (outdir / "summary.csv").exists():
            raise WorkloadError(f"{results_path} already exists; pass --force to replace it")
        raise WorkloadError(
            f"{results_path} holds a stopped run; pass --resume to continue it or --force to start over"
        )
    outdir.mkdir(parents=True, exist_ok=True)
    if not resume:
        for name in ("results.csv", "summary.csv", RUN_FILE):
            (outdir / name).unlink(missing_ok=True)
    else:
        (outdir / "summary.csv").unlink(missing_ok=True)
    with atomic_write(run_path, "w") as fh:
        json.dump(identity, fh, indent=1)
    ctx = BenchContext(
        spec_path=spec_path,
        outdir=outdir,
        data_dir=Path(data_dir) if data_dir is not None else None,
        trials=trials,
        eps=eps,
        methods=methods,
        seed=seed,
        quiet=quiet,
        previous=previous,
    )
    if previous is not None:
        ctx.log(f"resuming {outdir}: {len(previous)} result rows of finished cells are kept")
    t0 = time.perf_counter()
    results = get_runner(spec["kind"])(spec, ctx)
    missing = [c for c in REQUIRED_COLUMNS if c not in results.columns]
    if missing:  # pragma: no cover - a runner bug
        raise RuntimeError(f"runner for {spec['kind']} returned no {missing} columns")
    with atomic_write(results_path, "w", newline="") as fh:
        results.to_csv(fh, index=False)
    # one parse for every run, so a resumed run's table has the same types as an uninterrupted one's
    results = pd.read_csv(results_path)
    summary = summarize(results)
    with atomic_write(outdir / "summary.csv", "w", newline="") as fh:
        summary.to_csv(fh, index=False)
    x = spec.get("plot_x", "epsilon")
    if spec.get("plot", True):  # a kind whose output is a table of cases sets plot = false
        plot_results(
            summary,
            outdir / "plot.png",
            x=x,
            logx=bool(spec.get("plot_logx", True)),
            title=spec.get("title") or f"{spec.get('name', spec_path.stem)} ({spec['kind']})",
        )
    if not quiet:
        print(f"# {spec.get('name', spec_path.stem)}: {spec['kind']}")
    print(format_summary(summary))
    if not quiet:
        print(f"# total wall time {time.perf_counter() - t0:.1f} s; results in {outdir}")
    return results, summary
