"""Benchmark runner: a workloads/*.toml spec -> results.csv, a summary table and a plot.

A spec is TOML with a ``kind`` that names its experiment runner (default ``"ddssp-paper"``):

    kind = "ddssp-paper"        # ddssp.bench.ddssp_paper:run  (DD-SSP vs baselines on a table)
    kind = "pdp-op-synthetic"   # ddssp.bench.pdp_op:run
    kind = "napp-erm-simulation"
    kind = "multitask-synthetic"

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ddssp.errors import WorkloadError
from ddssp.data.fileio import atomic_write

RUNNERS: dict[str, str] = {
    "ddssp-paper": "ddssp.bench.ddssp_paper:run",
    "pdp-op-synthetic": "ddssp.bench.pdp_op:run",
    "napp-erm-simulation": "ddssp.bench.napp_erm:run",
    "multitask-synthetic": "ddssp.bench.multitask:run",
}

REQUIRED_COLUMNS = ("method", "trial", "metric", "value", "seconds")


@dataclass
class BenchContext:
    """What a runner gets besides its spec. ``None`` overrides mean "use the spec's value"."""

    spec_path: Path
    outdir: Path
    data_dir: Path | None = None
    trials: int | None = None
    eps: list[float] | None = None
    methods: list[str] | None = None
    seed: int | None = 0
    quiet: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def setting(self, spec: dict, key: str, override: Any, default: Any = None) -> Any:
        """``override`` if given, else ``spec[key]``, else ``default``."""
        if override is not None:
            return override
        return spec.get(key, default)

    def data_path(self, name: str) -> Path:
        """Resolve a dataset file named in a spec: absolute, relative to --data-dir, or to the spec."""
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
            f"data file {name!r} not found (looked in: {', '.join(str(c) for c in candidates)}); "
            "pass --data-dir"
        )

    def progress(self, total: int, desc: str):
        """A progress bar over ``total`` steps (silent with --quiet)."""
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, disable=self.quiet, file=sys.stderr, leave=False)

    def log(self, msg: str) -> None:
        if not self.quiet:
            print(msg, file=sys.stderr)

    @property
    def partial_path(self) -> Path:
        return self.outdir / "results.partial.csv"

    def checkpoint(self, rows: list[dict], columns: list[str]) -> None:
        """Save the rows finished so far to ``results.partial.csv`` (atomically), so a long run that is
        stopped keeps its finished cells. ``run_bench`` removes the file once ``results.csv`` is written."""
        with atomic_write(self.partial_path, "w", newline="") as fh:
            pd.DataFrame(rows, columns=columns).to_csv(fh, index=False)


def load_spec(path: str | Path) -> dict:
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
    modname, func = RUNNERS[kind].split(":")
    return getattr(importlib.import_module(modname), func)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error and count of ``value`` per setting (all columns but trial/value/seconds)."""
    keys = [c for c in results.columns if c not in ("trial", "value", "seconds")]
    g = results.groupby(keys, sort=True, dropna=False)
    out = g["value"].agg(["mean", "std", "count"]).reset_index()
    out["se"] = out["std"].fillna(0.0) / np.sqrt(out["count"])
    out["seconds"] = g["seconds"].mean().to_numpy()
    return out.drop(columns="std")


def format_summary(summary: pd.DataFrame) -> str:
    def fmt(x: float) -> str:
        return "nan" if not math.isfinite(x) else f"{x:.4g}"

    s = summary.copy()
    s["mean"] = s["mean"].map(fmt)
    s["se"] = s["se"].map(fmt)
    s["seconds"] = s["seconds"].map(lambda x: f"{x:.2f}")
    return s.to_string(index=False)


def plot_results(summary: pd.DataFrame, path: Path, x: str = "epsilon", logx: bool = True) -> bool:
    """Metric vs ``x`` per method with standard-error bars, one panel per metric. False if no matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    if x not in summary.columns:
        return False
    metrics = list(dict.fromkeys(summary["metric"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 4), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        sub = summary[summary["metric"] == metric]
        for method, grp in sub.groupby("method", sort=False):
            grp = grp.sort_values(x)
            ax.errorbar(grp[x], grp["mean"], yerr=grp["se"], marker="o", capsize=3, label=str(method))
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(x)
        ax.set_ylabel(metric)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)
    return True


def run_bench(
    spec_path: str | Path,
    outdir: str | Path,
    *,
    data_dir: str | Path | None = None,
    trials: int | None = None,
    eps: list[float] | None = None,
    methods: list[str] | None = None,
    seed: int | None = 0,
    quiet: bool = False,
    force: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run a spec; write ``results.csv``, ``summary.csv`` and ``plot.png`` into ``outdir``."""
    spec = load_spec(spec_path)
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise WorkloadError(f"output {outdir} exists and is not a directory")
    if (outdir / "results.csv").exists() and not force:
        raise WorkloadError(f"{outdir / 'results.csv'} already exists; pass --force to replace it")
    if trials is not None and trials < 1:
        raise WorkloadError("--trials must be at least 1")
    if eps is not None and any(not (e > 0 and math.isfinite(e)) for e in eps):
        raise WorkloadError("every --eps value must be positive and finite")
    outdir.mkdir(parents=True, exist_ok=True)
    ctx = BenchContext(
        spec_path=Path(spec_path),
        outdir=outdir,
        data_dir=Path(data_dir) if data_dir is not None else None,
        trials=trials,
        eps=eps,
        methods=methods,
        seed=seed,
        quiet=quiet,
    )
    t0 = time.perf_counter()
    results = get_runner(spec["kind"])(spec, ctx)
    missing = [c for c in REQUIRED_COLUMNS if c not in results.columns]
    if missing:  # pragma: no cover - a runner bug
        raise RuntimeError(f"runner for {spec['kind']} returned no {missing} columns")
    with atomic_write(outdir / "results.csv", "w", newline="") as fh:
        results.to_csv(fh, index=False)
    ctx.partial_path.unlink(missing_ok=True)
    summary = summarize(results)
    with atomic_write(outdir / "summary.csv", "w", newline="") as fh:
        summary.to_csv(fh, index=False)
    x = spec.get("plot_x", "epsilon")
    plot_results(summary, outdir / "plot.png", x=x, logx=bool(spec.get("plot_logx", True)))
    if not quiet:
        print(f"# {spec.get('name', Path(spec_path).stem)}: {spec['kind']}")
    print(format_summary(summary))
    if not quiet:
        print(f"# total wall time {time.perf_counter() - t0:.1f} s; results in {outdir}")
    return results, summary
