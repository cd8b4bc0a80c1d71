"""Impossible synthetic values: how often released tables yield values the real data cannot hold.

``run(spec, ctx)`` for ``ddssp bench`` with ``kind = "impossible-values"`` (spec:
workloads/impossible.toml). Each ``[[tables]]`` entry names a raw table as in
:mod:`.realtables` (``source``, ``na_values``) and optionally ``schema`` (a public codebook beside
the spec, released as a second method ``codebook`` with ``--schema``) and ``clock_hhmm`` (columns
that hold integer-coded clock times HHMM). Per table and per size (``sizes``: row counts smaller
than the table, or ``"full"``, capped at ``max_rows``) the table is sampled once with a fixed seed; per method it is then
released ``releases`` times, each a fresh release with secure noise (``ddssp release FILE --eps E``
plus ``--na-values`` where the entry gives them, nothing else), and as many synthetic rows as the
sample are drawn from each release. Recorded per release (``trial``), one row per metric:

- ``ok``, ``columns_released``;
- ``negative``: synthetic values below 0 in numeric columns whose real values are all >= 0;
- ``over_10x``: synthetic values above 10x the real maximum (columns with a positive maximum);
- ``out_of_range``: synthetic values outside [real min - w, real max + w], ``w`` the width of one
  bin when the real range is cut into as many equal bins as the release gives the column;
- ``bad_clock``: values of a ``clock_hhmm`` column that are no clock time (minutes >= 60, a
  negative value, 2400 or more, or not whole);
- ``impossible``: ``negative + over_10x + bad_clock``;
- ``other_share``: share of ``<other>`` among the synthetic cells of categorical columns whose real
  labels were all released (NaN when there is none); ``other_columns``: how many such columns hold
  an ``<other>`` cell;
- with a ``target`` (method ``target``, ``--target T``): ``target_labels``, how many of the target's
  real labels the release keeps as levels that hold rows;
- ``tv1`` / ``tv2``: mean one-way / two-way total variation distance against the sample
  (:func:`ddssp.bench.tv_distance.tv_distances`).

The ``note`` column holds the release's error line, its warnings, and the columns it left out.
``results.md`` holds one line per (table, size, method) with the sums (counts) and means (shares, TV)
over the releases. The sample CSVs live in a temporary directory removed at the end.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.bench.release_process import run_release
from ddssp.bench.spec_options import check_keys, read_eps, read_releases, read_sizes
from ddssp.bench.table_sources import load_table, named_rng
from ddssp.bench.tv_distance import column_kind, is_missing, tv_distances
from ddssp.errors import WorkloadError

SPEC_KEYS = {
    "name",
    "kind",
    "description",
    "eps",
    "tables",
    "sizes",
    "max_rows",
    "releases",
    "timeout",
    "max_pairs",
    "plot",
}
TABLE_KEYS = {"name", "source", "na_values", "schema", "clock_hhmm", "dates", "description", "target", "methods"}
METHODS = ("release", "codebook", "target")
COUNTS = ("negative", "over_10x", "out_of_range", "bad_clock", "impossible")


def parse_spec(spec: dict, ctx: Any) -> dict:
    """Validate an impossible-values spec into plain settings.

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        The overrides (``--eps``, ``--trials`` for the number of releases).

    Returns
    -------
    dict

    Raises
    ------
    WorkloadError
        For unknown keys or invalid values.
    """
    check_keys(spec, SPEC_KEYS, "an impossible-values spec")
    eps = read_eps(spec, ctx, 1.0)[0]  # one budget: the first
    releases = read_releases(spec, ctx, 10)
    tables = spec.get("tables")
    if not isinstance(tables, list) or not tables:
        raise WorkloadError("an impossible-values spec needs [[tables]] entries (name, source)")
    parsed = []
    for t in tables:
        check_keys(t, TABLE_KEYS, "[[tables]]")
        if not isinstance(t.get("name"), str) or not isinstance(t.get("source"), str):
            raise WorkloadError("each [[tables]] entry needs 'name' and 'source' (strings)")
        methods = t.get("methods", list(METHODS))
        if not isinstance(methods, list) or not set(methods) <= set(METHODS):
            raise WorkloadError(f"methods must be a list of {list(METHODS)}, got {methods!r}")
        parsed.append(
            {
                **t,
                "na_values": list(t.get("na_values", [])),
                "clock_hhmm": list(t.get("clock_hhmm", [])),
                "dates": list(t.get("dates", [])),
                "methods": list(methods),
            }
        )
    sizes = read_sizes(spec, [300, 500, 1000, 2000])
    return {
        "name": spec.get("name", "impossible-values"),
        "eps": eps,
        "releases": releases,
        "tables": parsed,
        "sizes": sizes,
        "max_rows": int(spec.get("max_rows", 20000)),
        "timeout": float(spec.get("timeout", 1800)),
        "max_pairs": int(spec.get("max_pairs", 300)),
    }


def _bins_of(col: Any) -> int:
    """The number of bins (or levels) a released numeric column has, its missing level left out."""
    return max(1, int(col.size) - (col.missing is not None))


def impossible_counts(real: pd.DataFrame, synth: pd.DataFrame, schema: Any, clock_hhmm: list[str]) -> dict[str, float]:
    """Counts of synthetic values the real columns cannot hold, and the ``<other>`` share.

    Parameters
    ----------
    real : pandas.DataFrame
        The real rows (missing cells as NaN / None).
    synth : pandas.DataFrame
        The synthetic rows (decoded).
    schema : Schema
        The release's schema (bin counts, released labels).
    clock_hhmm : list of str
        Columns that hold integer-coded clock times HHMM.

    Returns
    -------
    dict
        ``negative``, ``over_10x``, ``out_of_range``, ``bad_clock``, ``impossible``, ``other_share``,
        ``other_columns``.
    """
    from ddssp.data.discovery import OTHER_LABEL

    out = dict.fromkeys(COUNTS, 0.0)
    other, cells, shown = 0, 0, 0
    for name in synth.columns:
        if name not in real.columns:
            continue
        col = schema.column(name)
        if col.kind == "numeric" and col.unit is None:
            rv = pd.to_numeric(real[name], errors="coerce").dropna().to_numpy(dtype=float)
            sv = pd.to_numeric(synth[name], errors="coerce").dropna().to_numpy(dtype=float)
            if rv.size == 0 or sv.size == 0:
                continue
            lo, hi = float(rv.min()), float(rv.max())
            w = (hi - lo) / _bins_of(col)
            if lo >= 0:
                out["negative"] += float(np.sum(sv < 0))
            if hi > 0:
                out["over_10x"] += float(np.sum(sv > 10 * hi))
            out["out_of_range"] += float(np.sum((sv < lo - w) | (sv > hi + w)))
            if name in clock_hhmm:
                bad = (sv < 0) | (sv >= 2400) | (sv != np.floor(sv)) | (np.mod(sv, 100) >= 60)
                out["bad_clock"] += float(np.sum(bad))
        elif col.kind == "categorical":
            labels = set(map(str, col.labels))
            seen = set(real[name][~is_missing(real[name])].astype(str))
            if OTHER_LABEL in labels and seen and seen <= labels:
                s = synth[name].astype(str)
                other += int(np.sum(s == OTHER_LABEL))
                shown += bool(np.any(s == OTHER_LABEL))
                cells += len(s)
    out["impossible"] = out["negative"] + out["over_10x"] + out["bad_clock"]
    out["other_share"] = other / cells if cells else float("nan")
    out["other_columns"] = float(shown)
    return out


def run(spec: dict, ctx: Any) -> pd.DataFrame:
    """Release tables repeatedly and count the impossible synthetic values of each release.

    The runner of ``kind = "impossible-values"`` for ``ddssp bench`` (see the module docstring).

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        Overrides, data paths, progress.

    Returns
    -------
    pandas.DataFrame
        One row per measured number (method, table, sample, trial, metric, value, seconds, note).
    """
    from ddssp.releasefile import Release

    s = parse_spec(spec, ctx)
    columns = ["method", "table", "sample", "rows", "epsilon", "trial", "metric", "value", "seconds", "note"]
    rows: list[dict] = []
    work = Path(tempfile.mkdtemp(prefix="ddssp-impossible-"))
    plan = []
    for t in s["tables"]:
        df = load_table(t["source"], ctx)
        if df is None:
            ctx.log(f"{t['name']}: {t['source']} not found; table skipped")
            continue
        methods = [("release", [])]
        if t.get("schema"):
            methods.append(("codebook", ["--schema", str(ctx.data_path(t["schema"]))]))
        if t.get("target"):
            methods.append(("target", ["--target", str(t["target"])]))
        methods = [m for m in methods if m[0] in t.get("methods", METHODS)]
        for size in s["sizes"]:
            if size == "full" or len(df) > size:
                plan.extend((t, df, size, m, a, i) for m, a in methods for i in range(s["releases"]))
    bar = ctx.progress(len(plan), s["name"])
    try:
        for t, df, size, method, args, i in plan:
            cell = _run_one(t, df, size, method, args, i, s, work, Release, ctx.outdir / "kept")
            rows.extend(cell)
            bar.update(1)
    finally:
        bar.close()
        shutil.rmtree(work, ignore_errors=True)
    results = pd.DataFrame(rows, columns=columns)
    with open(ctx.outdir / "results.md", "w") as fh:
        fh.write(markdown_table(results))
    return results


def _run_one(
    t: dict,
    df: pd.DataFrame,
    size: Any,
    method: str,
    args: list[str],
    trial: int,
    s: dict,
    work: Path,
    Release: Any,
    keep: Path,
) -> list[dict]:
    """One fresh release of one sample, its synthetic rows and their counts (one row per metric).

    A release whose synthetic rows hold an impossible value, a value outside the real range by
    more than one bin width, or ``<other>`` in a column whose real labels were all released, is
    moved to ``keep`` (for its schema and ledger to be read afterwards: a
    fresh release with secure noise cannot be made again); the others are deleted."""
    n = min(len(df), s["max_rows"]) if size == "full" else int(size)
    sample = df
    if n < len(df):
        sample = df.iloc[np.sort(named_rng("sample", t["name"], size).choice(len(df), n, replace=False))]
    sample = sample.reset_index(drop=True)
    stem = f"{t['name']}-{size}".replace("/", "_")
    csv = work / f"{stem}.csv"
    if not csv.exists():
        sample.to_csv(csv, index=False)
    rel_path = work / f"{stem}-{method}-{trial}.release"
    rel_path.unlink(missing_ok=True)
    r = run_release(csv, rel_path, s["eps"], t["na_values"], s["timeout"], args)
    metrics: dict[str, float] = {"ok": float(r["ok"])}
    notes = [r["error"]] if r["error"] else []
    notes += r["warnings"]
    if r["ok"]:
        rel = Release.load(rel_path)
        released = [c for c in sample.columns if c in rel.schema.names]
        metrics["columns_released"] = float(len(released))
        na = set(t["na_values"]) | {""}
        real = sample.where(~sample.isin(na))
        synth = rel.synthesize(len(sample), named_rng("synth", t["name"], size, method, trial))
        metrics.update(impossible_counts(real[released], synth, rel.schema, t["clock_hhmm"]))
        kinds = {c: column_kind(real[c], c in t["dates"]) for c in released}
        metrics["tv1"], metrics["tv2"] = tv_distances(real[released], synth, kinds, s["max_pairs"], stem)
        if t.get("target") and t["target"] in rel.schema.names:
            col = rel.schema.column(t["target"])
            seen = set(real[t["target"]][~is_missing(real[t["target"]])].astype(str))
            metrics["target_labels"] = float(len(seen & (set(map(str, col.labels)) - set(col.empty))))
        if any(metrics.get(m, 0) > 0 for m in ("impossible", "out_of_range", "other_columns")):
            keep.mkdir(parents=True, exist_ok=True)
            shutil.move(str(rel_path), str(keep / rel_path.name))
        rel_path.unlink(missing_ok=True)
    note = " | ".join(x for x in notes if x)
    cell = {"method": method, "table": t["name"], "sample": str(size), "rows": len(sample), "epsilon": s["eps"]}
    return [
        {**cell, "trial": trial, "metric": m, "value": float(v), "seconds": r["wall_s"], "note": note}
        for m, v in metrics.items()
    ]


def markdown_table(results: pd.DataFrame) -> str:
    """One line per (table, sample, method): releases that succeeded, the counts summed over the
    releases, the ``<other>`` share, columns released and TV averaged.

    Parameters
    ----------
    results : pandas.DataFrame
        The results.

    Returns
    -------
    str
    """
    if results.empty:
        return "(no cells)\n"
    head = ["table", "rows", "method", "releases ok", *COUNTS, "other share", "other columns", "columns", "tv1", "tv2"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (table, rows, method), g in results.groupby(["table", "rows", "method"], sort=False):

        def vals(m: str) -> pd.Series:
            return g.loc[g["metric"] == m, "value"]

        ok = vals("ok")
        cells = [table, str(rows), method, f"{int(ok.sum())}/{len(ok)}"]
        cells += [f"{int(vals(m).sum())}" for m in COUNTS]
        cells.append(f"{vals('other_share').dropna().mean():.3f}" if len(vals("other_share").dropna()) else "")
        cells.append(f"{int(vals('other_columns').sum())} in {int((vals('other_columns') > 0).sum())}")
        for m, fmt in (("columns_released", "{:.1f}"), ("tv1", "{:.3f}"), ("tv2", "{:.3f}")):
            v = vals(m).dropna()
            cells.append(fmt.format(v.mean()) if len(v) else "")
        if len(vals("target_labels")):
            cells[2] += f" (target labels kept: {vals('target_labels').tolist()})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["impossible_counts", "markdown_table", "parse_spec", "run"]
