"""Real public tables, released as a new user would: ``ddssp release FILE --eps E`` and nothing else.

``run(spec, ctx)`` for ``ddssp bench`` with ``kind = "real-tables"`` (spec: workloads/realtables.toml).

Each ``[[tables]]`` entry names a raw table that a pip package ships inside its wheel (no download at
run time) or a CSV file:

- ``source = "sklearn:breast_cancer"`` (``load_<name>(as_frame=True).frame``; ``diabetes`` unscaled),
- ``source = "statsmodels:fair"`` (``statsmodels.api.datasets.<name>.load_pandas().data``),
- ``source = "palmerpenguins:penguins_raw"`` (or ``penguins``),
- ``source = "vega:seattle-weather"`` (``vega_datasets.local_data``; local files only),
- ``source = "file:adult_raw.csv"`` (a CSV resolved like any bench data file: absolute, ``--data-dir``,
  or beside the spec; its cells are copied as text, so its own missing markers stay). A missing file
  skips the table with a logged note, so the suite runs where that file is absent.

Per table and per size (``sizes``: ``"full"`` and row counts; a size is used only where the table has
more rows than it; ``max_rows`` caps "full") the table is sampled with a fixed seed, split 80/20 (fixed
seed), and per epsilon the 80% is written to a CSV and released in a subprocess,
``python -m ddssp release train.csv --eps E -o rel`` (plus ``--na-values`` only when the table entry
gives ``na_values``, i.e. when the file really uses such a marker; ``release_args`` adds flags for a
diagnostic variant, e.g. ``["--discovery-share", "0.5"]``, and is empty in the headline spec). Recorded per cell (one row per
metric, ``method = "release"``):

- ``ok`` (1 or 0) and, in the ``note`` column, the ``ddssp: error:`` line of a failure and every
  ``ddssp: warning`` / dropped-column line of a success;
- ``cpu_s`` (user + system CPU of the release process) and ``peak_rss_mb`` (its peak resident set);
- ``columns`` (of the table), ``columns_released`` (in the release's schema), ``columns_dropped``;
- ``tv1`` / ``tv2``: mean total variation distance of one-way / two-way marginals, synthetic rows drawn
  from the release (as many as the training rows) vs the real training rows. Numeric columns are
  compared on the deciles of the REAL values, date columns (``dates``) on the deciles of their time
  axis, other columns on their labels; missing is a category of its own, and a synthetic value that is
  neither (e.g. a text label in a numeric column) is one more category. Only released columns are
  compared (a dropped column shows in ``columns_dropped``);
- ``ddssp_r2`` / ``ddssp_auc``: DD-SSP (``ddssp fit`` with no options) on the release for the entry's
  ``target`` (``task = "linear"`` or ``"logistic"`` with ``positive`` the label of class 1), scored on
  the real 20% hold-out; ``public_r2`` / ``public_auc`` the non-private least squares / logistic fit on
  the real training rows (numeric columns standardized with median imputation and missing indicators,
  dates as numbers, columns of at most ``max_onehot`` labels one-hot, other text columns left out), the
  reference of what the data allows; ``schema_public_r2`` / ``schema_public_auc`` the non-private fit on
  the real training rows passed through the release's schema and encoding (what the schema alone keeps).

A failed step leaves its metrics out of the cell and says why in ``note``; the release failing leaves
only ``ok = 0`` and ``cpu_s`` / ``peak_rss_mb``. ``results.md`` beside ``results.csv`` holds one line
per cell; ``releases/`` keeps each cell's release file (DP output, for ``ddssp inspect``), while the
train / test CSVs (copies of the data) live in a temporary directory removed at the end.

The tables and their samples come from :mod:`.table_sources`, each release runs in a measured
subprocess (:mod:`.release_process`), and ``tv1`` / ``tv2`` are :mod:`.tv_distance`.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.bench.release_process import run_release
from ddssp.bench.spec_options import check_keys, read_eps, read_sizes
from ddssp.bench.table_sources import load_table, named_rng, sample_split
from ddssp.bench.tv_distance import MISSING, column_kind, discretize, is_missing, to_axis, tv_distances
from ddssp.errors import WorkloadError

SPEC_KEYS = {
    "name",
    "kind",
    "description",
    "eps",
    "tables",
    "sizes",
    "max_rows",
    "test_fraction",
    "max_pairs",
    "max_onehot",
    "timeout",
    "release_args",
    "plot",
    "plot_x",
    "plot_logx",
}
TABLE_KEYS = {"name", "source", "target", "task", "positive", "na_values", "dates", "description"}


# ------------------------------------------------------------------------------------------- spec
def parse_spec(spec: dict, ctx: Any) -> dict:
    """Validate a real-tables spec (with the context's overrides) into plain settings.

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        The overrides.

    Returns
    -------
    dict

    Raises
    ------
    WorkloadError
        For unknown keys or invalid values.
    """
    check_keys(spec, SPEC_KEYS, "a real-tables spec")
    eps = read_eps(spec, ctx, [0.1, 1.0])
    tables = spec.get("tables")
    if not isinstance(tables, list) or not tables:
        raise WorkloadError("a real-tables spec needs [[tables]] entries (name, source, target, task)")
    parsed = []
    for t in tables:
        check_keys(t, TABLE_KEYS, f"[[tables]] {t.get('name')!r}" if isinstance(t, dict) else "[[tables]]")
        for key in ("name", "source", "target", "task"):
            if not isinstance(t.get(key), str):
                raise WorkloadError(f"[[tables]] entry {t.get('name')!r} needs {key!r} (a string)")
        if t["task"] not in ("linear", "logistic"):
            raise WorkloadError(f"table {t['name']!r}: task must be 'linear' or 'logistic', got {t['task']!r}")
        if t["task"] == "logistic" and not isinstance(t.get("positive"), str):
            raise WorkloadError(f"table {t['name']!r}: a logistic target needs 'positive' (the label of class 1)")
        parsed.append({**t, "na_values": list(t.get("na_values", [])), "dates": list(t.get("dates", []))})
    names = [t["name"] for t in parsed]
    if len(set(names)) != len(names):
        raise WorkloadError(f"table names must be unique, got {names}")
    sizes = read_sizes(spec, ["full", 1000, 5000])
    release_args = spec.get("release_args", [])
    if not isinstance(release_args, list) or not all(isinstance(a, str) for a in release_args):
        raise WorkloadError(
            f"release_args must be a list of strings (extra `ddssp release` flags), got {release_args!r}"
        )
    test_fraction = float(spec.get("test_fraction", 0.2))
    if not 0 < test_fraction < 1:
        raise WorkloadError(f"test_fraction must be in (0, 1), got {test_fraction}")
    return {
        "name": spec.get("name", "real-tables"),
        "eps": eps,
        "tables": parsed,
        "sizes": sizes,
        "max_rows": int(spec.get("max_rows", 20000)),
        "test_fraction": test_fraction,
        "max_pairs": int(spec.get("max_pairs", 300)),
        "max_onehot": int(spec.get("max_onehot", 50)),
        "timeout": float(spec.get("timeout", 3600)),
        "release_args": list(release_args),
    }


# ------------------------------------------------------------------------------------- regression
def _auc(y: np.ndarray, score: np.ndarray) -> float:
    from ddssp.bench.metrics import auc_score

    return auc_score(y, score)


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ok = np.isfinite(y) & np.isfinite(pred)
    y, pred = y[ok], pred[ok]
    var = float(np.var(y))
    return 1.0 - float(np.mean((y - pred) ** 2)) / var if var > 0 else float("nan")


def _truth(test: pd.DataFrame, t: dict) -> tuple[np.ndarray, np.ndarray]:
    """(y, rows with a known target) of the hold-out."""
    col = test[t["target"]]
    known = ~is_missing(col)
    if t["task"] == "linear":
        y = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        known &= np.isfinite(y)
        return y, known
    return (col.astype(str).to_numpy() == t["positive"]).astype(float), known


def public_fit(train: pd.DataFrame, test: pd.DataFrame, t: dict, kinds: dict[str, str], max_onehot: int) -> float:
    """R^2 / AUC on the hold-out of the non-private fit on the real training rows (sklearn).

    Parameters
    ----------
    train, test : pandas.DataFrame
        The split.
    t : dict
        The table entry (target, task, positive).
    kinds : dict
        ``{column: kind}``.
    max_onehot : int
        Text columns with at most this many labels are one-hot; others are left out.

    Returns
    -------
    float
    """
    y, score = public_scores(train, test, t, kinds, max_onehot)
    return _r2(y, score) if t["task"] == "linear" else _auc(y, score)


def public_scores(
    train: pd.DataFrame, test: pd.DataFrame, t: dict, kinds: dict[str, str], max_onehot: int
) -> tuple[np.ndarray, np.ndarray]:
    """The hold-out's known targets and the non-private fit's predictions (linear) or scores (logistic).

    The fit is on the real training rows (sklearn): numeric columns standardized with median imputation
    and missing indicators, dates as numbers, text columns of at most ``max_onehot`` labels one-hot.

    Parameters
    ----------
    train, test : pandas.DataFrame
        The split.
    t : dict
        The table entry (target, task, positive).
    kinds : dict
        ``{column: kind}``.
    max_onehot : int
        Text columns with at most this many labels are one-hot; others are left out.

    Returns
    -------
    tuple of numpy.ndarray
        (y, prediction or score) of the hold-out rows with a known target.
    """
    from sklearn.linear_model import LinearRegression, LogisticRegression

    target = t["target"]
    feats = [c for c in train.columns if c != target]

    def design(df: pd.DataFrame, ref: pd.DataFrame) -> np.ndarray:
        parts = []
        for c in feats:
            if kinds[c] in ("numeric", "date"):
                v, rv = (
                    to_axis(df[c].where(~is_missing(df[c])), kinds[c]),
                    to_axis(ref[c].where(~is_missing(ref[c])), kinds[c]),
                )
                med = float(np.nanmedian(rv)) if rv.notna().any() else 0.0
                sd = float(np.nanstd(rv)) if rv.notna().sum() > 1 else 1.0
                parts.append(((v.fillna(med) - med) / (sd or 1.0)).to_numpy(dtype=float)[:, None])
                if rv.isna().any():
                    parts.append(v.isna().to_numpy(dtype=float)[:, None])
            else:
                ref_lab = np.where(is_missing(ref[c]), MISSING, ref[c].astype(str).to_numpy(dtype=object))
                labels = np.array(list(dict.fromkeys(ref_lab)), dtype=object)
                if 1 < len(labels) <= max_onehot:
                    lab = np.where(is_missing(df[c]), MISSING, df[c].astype(str).to_numpy(dtype=object))
                    parts.append((lab[:, None] == labels[None, 1:]).astype(float))
        return np.hstack(parts) if parts else np.zeros((len(df), 0))

    y_tr, known_tr = _truth(train, t)
    y_te, known_te = _truth(test, t)
    X_tr, X_te = design(train, train), design(test, train)
    if t["task"] == "linear":
        m = LinearRegression().fit(X_tr[known_tr], y_tr[known_tr])
        return y_te[known_te], m.predict(X_te[known_te])
    m = LogisticRegression(max_iter=2000).fit(X_tr[known_tr], y_tr[known_tr])
    return y_te[known_te], m.decision_function(X_te[known_te])


def _same_label(label: Any, positive: str) -> bool:
    """``label`` is ``positive``, or its integral number written as the schema writes it (the raw
    file's "1.0" is the level "1"), by the rule encoding uses for a label with no exact match."""
    from ddssp.data.values import numeric_label

    return str(label) in (positive, numeric_label(positive))


def _orient(labels: list[str], positive: str) -> float:
    if len(labels) != 2:
        raise ValueError(f"the release's {len(labels)}-level target is not binary ({labels[:5]})")
    if _same_label(labels[1], positive):
        return 1.0
    if _same_label(labels[0], positive):
        return -1.0
    raise ValueError(f"the positive label {positive!r} is not among the release's target labels {labels}")


def release_fits(rel: Any, train_csv: Path, test_csv: Path, t: dict) -> dict[str, float]:
    """DD-SSP on the release and the non-private fit through the release's schema, scored on the hold-out.

    Parameters
    ----------
    rel : Release
        The release.
    train_csv, test_csv : pathlib.Path
        The split.
    t : dict
        The table entry (target, task, positive).

    Returns
    -------
    dict
        ``ddssp_r2`` / ``ddssp_auc`` and ``schema_public_r2`` / ``schema_public_auc``.
    """
    from ddssp.data.encoding import ClipWarning
    from ddssp.data.tables import read_table
    from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
    from ddssp.estimators.public import PublicLinearRegression, PublicLogisticRegression

    target, task = t["target"], t["task"]
    if target not in rel.schema.names:
        raise ValueError(f"the release has no target column {target!r}")
    names = list(rel.schema.names)
    test = read_table(test_csv, na_values=t["na_values"])
    train = read_table(train_csv, na_values=t["na_values"])
    y, known = _truth(test, t)
    out: dict[str, float] = {}
    key = "r2" if task == "linear" else "auc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        est = (DDSSPLinearRegression() if task == "linear" else DDSSPLogisticRegression()).fit(rel, target=target)
        codes = rel.schema.encode(test[names])
        enc = est.encoding_
        if task == "linear":
            out[f"ddssp_{key}"] = _r2(y[known], est.predict_original(codes, codes=True)[known])
        else:
            sign = _orient(list(est.target_labels_), t["positive"])
            out[f"ddssp_{key}"] = _auc(y[known], sign * est.decision_function(codes, codes=True)[known])
        tr_codes = rel.schema.encode(train[names])
        X_tr, y_tr = enc.transform(tr_codes), enc.target_vector(tr_codes)
        X_te = enc.transform(codes)
        if task == "linear":
            m = PublicLinearRegression(fit_intercept=True).fit(X_tr[:, 1:], y_tr)
            out[f"schema_public_{key}"] = _r2(y[known], enc.decode_target(m.predict(X_te[:, 1:]))[known])
        else:
            m = PublicLogisticRegression(ridge=1e-4, fit_intercept=True).fit(X_tr[:, 1:], y_tr)
            out[f"schema_public_{key}"] = _auc(y[known], sign * m.decision_function(X_te[:, 1:])[known])
    return out


# ------------------------------------------------------------------------------------------- run
def run(spec: dict, ctx: Any) -> pd.DataFrame:
    """Release real public tables as a new user would, and score the releases.

    The runner of ``kind = "real-tables"`` for ``ddssp bench`` (see the module docstring for the spec keys,
    methods and metrics).

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        Overrides, data paths, progress and the finished cells of a resumed run.

    Returns
    -------
    pandas.DataFrame
        One row per measured number (method, trial, metric, value, seconds and the setting columns).

    Raises
    ------
    WorkloadError
        For an invalid spec.
    """
    from ddssp.releasefile import Release

    s = parse_spec(spec, ctx)
    columns = ["method", "table", "sample", "rows", "epsilon", "trial", "metric", "value", "seconds", "note"]
    rows: list[dict] = []
    # the train / test CSVs are copies of the data: they live in a temporary directory that is removed at
    # the end; the releases (DP outputs) are kept in the output directory for `ddssp inspect`
    work = Path(tempfile.mkdtemp(prefix="ddssp-realtables-"))
    keep = ctx.outdir / "releases"
    keep.mkdir(parents=True, exist_ok=True)
    plan = []
    for t in s["tables"]:
        df = load_table(t["source"], ctx)
        if df is None:
            ctx.log(f"{t['name']}: {t['source']} not found; table skipped")
            continue
        missing = [c for c in [t["target"], *t["dates"]] if c not in df.columns]
        if missing:
            raise WorkloadError(f"table {t['name']!r} has no column(s) {missing}")
        for size in s["sizes"]:
            if size == "full" or len(df) > size:
                plan.extend((t, df, size, e) for e in s["eps"])
    bar = ctx.progress(len(plan), s["name"])
    try:
        for t, df, size, eps in plan:
            key = {"table": t["name"], "sample": str(size), "epsilon": eps}
            done = ctx.cell(key)
            if done is not None:
                rows.extend(done)
                bar.update(1)
                continue
            cell_rows = run_cell(t, df, size, eps, s, work, keep, Release)
            ctx.log(
                f"{t['name']} {size} eps={eps:g}: "
                + ", ".join(f"{r['metric']}={r['value']:.4g}" for r in cell_rows)
                + f" | {cell_rows[0]['note']}"
            )
            rows.extend(cell_rows)
            ctx.save_cell(cell_rows)
            bar.update(1)
    finally:
        bar.close()
        shutil.rmtree(work, ignore_errors=True)
    results = pd.DataFrame(rows, columns=columns)
    with open(ctx.outdir / "results.md", "w") as fh:
        fh.write(markdown_table(results))
    return results


def run_cell(
    t: dict, df: pd.DataFrame, size: Any, eps: float, s: dict, work: Path, keep: Path, Release: Any
) -> list[dict]:
    """Release one (table, size, eps) cell and compute its metrics.

    Parameters
    ----------
    t : dict
        The table entry.
    df : pandas.DataFrame
        The raw table.
    size : str or int
        The sample size.
    eps : float
        The budget.
    s : dict
        The parsed spec.
    work : pathlib.Path
        The temporary directory for the train / test CSVs.
    keep : pathlib.Path
        Where the release file is kept.
    Release : type
        The release class (imported once by the caller).

    Returns
    -------
    list of dict
        One row per metric.
    """
    sample, train, test = sample_split(df, size, s["max_rows"], s["test_fraction"], t["name"])
    stem = f"{t['name']}-{size}-{eps:g}".replace("/", "_")
    train_csv, test_csv, rel_path = work / f"{stem}-train.csv", work / f"{stem}-test.csv", keep / f"{stem}.release"
    train.to_csv(train_csv, index=False)
    test.to_csv(test_csv, index=False)
    rel_path.unlink(missing_ok=True)
    r = run_release(train_csv, rel_path, eps, t["na_values"], s["timeout"], s["release_args"])
    metrics: dict[str, float] = {"ok": float(r["ok"]), "cpu_s": r["cpu_s"], "peak_rss_mb": r["peak_rss_mb"]}
    notes = [r["error"]] if r["error"] else []
    notes += r["warnings"]
    if r["ok"]:
        try:
            rel = Release.load(rel_path)
            released = [c for c in train.columns if c in rel.schema.names]
            dropped = [c for c in train.columns if c not in rel.schema.names]
            metrics.update(columns=len(train.columns), columns_released=len(released), columns_dropped=len(dropped))
            if dropped:
                notes.append(f"not in the release: {', '.join(dropped)}")
            na = set(t["na_values"]) | {""}
            real = train.where(~train.isin(na))
            kinds = {c: column_kind(real[c], c in t["dates"]) for c in real.columns}
            synth = rel.synthesize(len(train), named_rng("synth", t["name"], size, eps))
            metrics["tv1"], metrics["tv2"] = tv_distances(real[released], synth, kinds, s["max_pairs"], stem)
            try:
                metrics.update(release_fits(rel, train_csv, test_csv, t))
            except Exception as exc:  # noqa: BLE001 - a failed fit is a finding of the suite, not a crash of it
                notes.append(f"fit: {type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - recorded in the cell's note
            notes.append(f"evaluation: {type(exc).__name__}: {exc}")
    try:
        na = set(t["na_values"]) | {""}
        real_tr, real_te = train.where(~train.isin(na)), test.where(~test.isin(na))
        kinds = {c: column_kind(real_tr[c], c in t["dates"]) for c in real_tr.columns}
        key = "r2" if t["task"] == "linear" else "auc"
        metrics[f"public_{key}"] = public_fit(real_tr, real_te, t, kinds, s["max_onehot"])
    except Exception as exc:  # noqa: BLE001 - recorded in the cell's note
        notes.append(f"public fit: {type(exc).__name__}: {exc}")
    note = " | ".join(n for n in notes if n)
    cell = {
        "method": "release",
        "table": t["name"],
        "sample": str(size),
        "rows": len(sample),
        "epsilon": eps,
        "trial": 0,
    }
    return [{**cell, "metric": m, "value": float(v), "seconds": r["wall_s"], "note": note} for m, v in metrics.items()]


def markdown_table(results: pd.DataFrame) -> str:
    """One line per (table, sample, eps): the cell's metrics and its note.

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
    wide = results.pivot_table(
        index=["table", "sample", "rows", "epsilon"], columns="metric", values="value", aggfunc="first", sort=False
    )
    notes = results.groupby(["table", "sample", "rows", "epsilon"], sort=False)["note"].first()
    order = [
        "ok",
        "cpu_s",
        "peak_rss_mb",
        "columns",
        "columns_dropped",
        "tv1",
        "tv2",
        "ddssp_r2",
        "schema_public_r2",
        "public_r2",
        "ddssp_auc",
        "schema_public_auc",
        "public_auc",
    ]
    cols = [c for c in order if c in wide.columns]
    head = ["table", "sample", "rows", "eps", *cols, "error / note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for idx, row in wide.iterrows():
        vals = []
        for c in cols:
            v = row.get(c)
            vals.append(
                ""
                if v is None or (isinstance(v, float) and math.isnan(v))
                else (f"{int(v)}" if c in ("ok", "columns", "columns_dropped") else f"{v:.3g}")
            )
        note = notes.get(idx, "")
        note = "" if not isinstance(note, str) else note.replace("|", "/")
        lines.append("| " + " | ".join([str(idx[0]), str(idx[1]), str(idx[2]), f"{idx[3]:g}", *vals, note]) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["discretize", "load_table", "markdown_table", "parse_spec", "run", "tv_distances"]
