"""DD-SSP from a one-shot release against dedicated DP regressions run on the raw rows at the same budget.

``run(spec, ctx)`` for ``ddssp bench`` with ``kind = "real-baselines"`` (spec:
workloads/realtables-baselines.toml). The tables, sizes, samples and 80/20 splits are those of the
real-tables kind (:mod:`.realtables`, same spec keys, same fixed seeds), plus ``trials`` (releases per
cell, default 5) and ``delta`` (default 1e-9, the release default). Per (table, size, eps) and trial the
80% is released in a subprocess as a user fitting that outcome would release it,
``python -m ddssp release train.csv --eps E --delta D --target T`` (secure noise: each trial is a new
release), and on the 20% hold-out are scored (``method`` column; ``metric`` is ``r2`` for a linear
target, ``auc`` and ``accuracy`` for a logistic one):

- ``ddssp``: ``DDSSPLinearRegression`` / ``DDSSPLogisticRegression`` fitted on the release (no options);
- ``adassp``: AdaSSP (:class:`~ddssp.estimators.adassp.AdaSSP`) on the raw training rows at the same
  (eps, delta). Logistic targets too, as a linear probability model on the -1/+1 labels (scored by the
  AUC and sign of its linear score): the code has no logistic variant of AdaSSP;
- ``objpert``: objective perturbation (:class:`~ddssp.estimators.objpert.ObjectivePerturbation`) on the
  raw training rows at the same (eps, delta), logistic targets only;
- ``adassp_b`` / ``objpert_b``: the same on the same design at a smaller eps, the one whose rho is
  the release's budget less its discovery charges (:func:`eps_after_discovery`): the baselines
  charged the discovery share, at the same total privacy as the release;
- ``adassp_pb`` / ``objpert_pb``: the same two mechanisms at the same (eps, delta) on the raw rows
  in a design of their own that needs no release (:func:`.public_bounds.bounded_design`: the training rows' ranges
  and labels taken as public bounds, as papers that assume public bounds run them);
- ``ddssp_pb``: DD-SSP on a second release of the same rows made with the ``_pb`` baselines'
  knowledge declared (:func:`.public_bounds.declared_args`: ``--bounds`` COL=min:max for numeric columns, ``--levels``
  for text columns of 2 to ``max_onehot`` labels and a logistic target), so that DD-SSP and
  ``adassp_pb`` / ``objpert_pb`` start from the same public knowledge (spec key ``declared``, default
  true; ``release_pb`` holds that release's ``ok``, ``cpu_s`` and ``columns_released``);
- ``synth_fit``: the non-private least squares / logistic fit on synthetic rows drawn from the release
  (as many as the training rows), the AIM-Synth route;
- ``schema_public``: the non-private fit on the real training rows through the release's schema (what
  the schema alone keeps), ``public``: the non-private fit on the real rows in their own encoding
  (:func:`.realtables.public_scores`), ``majority``: always the majority class of the training rows
  (AUC 0.5 by definition; its accuracy on the hold-out);
- ``release``: ``ok``, ``cpu_s``, ``columns_released`` and ``target_levels`` of the release.

Fairness of the raw-row baselines. AdaSSP and objective perturbation need a public bound on ``||x||``
(and AdaSSP on ``|y|``). They are given the schema the release discovered, taken as if it were public:
the training rows are encoded with it (``rel.schema.encode``) into exactly the design DD-SSP uses
(:class:`~ddssp.estimators.design.Encoding`: intercept, reduced one-hot levels, numeric levels scaled
to [-1, 1], the target scaled to [-1, 1]), with the bounds ``Encoding.row_norm_bound()`` and 1, and
the whole (eps, delta) is spent on the mechanism (``adassp``, ``objpert``). This favours them: the release also paid for that
schema out of its eps, so the baselines' real cost is eps plus the release's discovery share. Where the
release kept no usable target (dropped, or the positive label not among its levels) they have no
target bound either and are not scored (the note says so); the ``_pb`` variants, whose bounds
come from the rows themselves (not private), are scored in every cell and show what a dedicated
mechanism does when its bounds are known. A logistic target's labels come from the raw
rows (the positive label against everything else), not from the schema.

``results.md`` holds one line per (table, size, eps): per method the mean and standard deviation over the
trials that fitted, with the count, and the best raw-row baseline next to DD-SSP.
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

from ddssp.bench.public_bounds import _scores, ddssp_scores, declared_release, raw_bounds_methods
from ddssp.bench.realtables import _truth, parse_spec, public_scores
from ddssp.bench.release_process import run_release
from ddssp.bench.spec_options import read_trials
from ddssp.bench.table_sources import load_table, named_rng, sample_split
from ddssp.bench.tv_distance import column_kind
from ddssp.errors import WorkloadError

OWN_KEYS = {"trials", "delta", "declared"}
COLUMNS = ["method", "table", "sample", "rows", "epsilon", "trial", "metric", "value", "seconds", "note"]
#: method order of the summary table
METHODS = [
    "ddssp",
    "adassp",
    "objpert",
    "adassp_b",
    "objpert_b",
    "ddssp_pb",
    "adassp_pb",
    "objpert_pb",
    "synth_fit",
    "schema_public",
    "public",
    "majority",
]


def parse(spec: dict, ctx: Any) -> dict:
    """The real-tables settings (:func:`ddssp.bench.realtables.parse_spec`) plus ``trials``, ``delta``
    and ``declared``.

    Parameters
    ----------
    spec, ctx
        As for :func:`ddssp.bench.realtables.parse_spec`.

    Returns
    -------
    dict

    Raises
    ------
    WorkloadError
        For invalid values.
    """
    s = parse_spec({k: v for k, v in spec.items() if k not in OWN_KEYS}, ctx)
    trials = read_trials(spec, ctx, 5)
    delta = spec.get("delta", 1e-9)
    if not isinstance(delta, float) or not 0 < delta < 1:
        raise WorkloadError(f"delta must be a number in (0, 1), got {delta!r}")
    declared = spec.get("declared", True)
    if not isinstance(declared, bool):
        raise WorkloadError(f"declared must be true or false, got {declared!r}")
    return {**s, "trials": trials, "delta": delta, "declared": declared}


# ------------------------------------------------------------------------------------- scoring
def _design(rel: Any, t: dict):
    """The release's encoding of the target's regression (DD-SSP's design), or None with the reason."""
    from ddssp.estimators.design import Encoding

    if t["target"] not in rel.schema.names:
        return None, "the release has no target column"
    positive = t["positive"] if t["task"] == "logistic" else None
    try:
        return Encoding(rel.schema, None, t["target"], t["task"], positive=positive), ""
    except Exception as exc:  # noqa: BLE001 - a target the schema cannot encode is recorded, not raised
        return None, f"{type(exc).__name__}: {exc}"


def raw_row_baselines(enc: Any, tr_codes: pd.DataFrame, te_codes: pd.DataFrame, y_tr, y_te, t, eps, delta, noise=None):
    """AdaSSP (and, logistic, objective perturbation) on the encoded raw training rows, scored on the hold-out.

    Parameters
    ----------
    enc : Encoding
        The design (from the release's schema).
    tr_codes, te_codes : pandas.DataFrame
        Codes of the training rows with a known target, and of the hold-out rows with one.
    y_tr, y_te : numpy.ndarray
        Their targets: a linear target's values (only ``y_te`` is used; the training target is the
        encoded level value, as in DD-SSP's design), a logistic target's 0/1 labels.
    t : dict
        The table entry.
    eps, delta : float
        The budget, spent whole on each mechanism.
    noise : NoiseSource, optional
        For tests; the secure sampler by default.

    Returns
    -------
    dict
        ``{method: {metric: value}}``.
    """
    from ddssp.estimators.adassp import AdaSSP
    from ddssp.estimators.objpert import ObjectivePerturbation

    X_tr, X_te = enc.transform(tr_codes), enc.transform(te_codes)
    B = enc.row_norm_bound()
    out: dict[str, dict[str, float]] = {}
    if t["task"] == "linear":
        ytr = enc.target_vector(tr_codes)
        m = AdaSSP(eps, delta, x_bound=B, y_bound=1.0, noise=noise).fit(X_tr, ytr)
        out["adassp"] = _scores(y_te, enc.decode_target(X_te @ m.coef_), "linear")
        return out
    ypm = 2.0 * y_tr - 1.0
    m = AdaSSP(eps, delta, x_bound=B, y_bound=1.0, noise=noise).fit(X_tr, ypm)
    out["adassp"] = _scores(y_te, X_te @ m.coef_, "logistic")
    o = ObjectivePerturbation(eps, delta, x_bound=B, noise=noise).fit(X_tr, ypm)
    out["objpert"] = _scores(y_te, X_te @ o.coef_, "logistic")
    return out


def eps_after_discovery(rel: Any, delta: float) -> float:
    """The eps whose zCDP rho is the release's budget less its discovery charges (what AIM had).

    Parameters
    ----------
    rel : Release
        The release.
    delta : float
        The delta of the conversion.

    Returns
    -------
    float
    """
    from ddssp.dp.zcdp import eps_from_rho_delta

    ledger = rel.ledger
    discovery = sum(e.rho for e in ledger.discovery_entries)
    return eps_from_rho_delta(ledger.rho_budget - discovery, delta)


def _fit_public(X: np.ndarray, y: np.ndarray, task: str):
    from ddssp.estimators.public import PublicLinearRegression, PublicLogisticRegression

    if task == "linear":
        return PublicLinearRegression(fit_intercept=True).fit(X[:, 1:], y)
    return PublicLogisticRegression(ridge=1e-4, fit_intercept=True).fit(X[:, 1:], y)


def release_methods(rel: Any, train: pd.DataFrame, test: pd.DataFrame, t: dict, eps: float, delta: float, rng):
    """Every method that needs the release, scored on the hold-out.

    Parameters
    ----------
    rel : Release
        The release.
    train, test : pandas.DataFrame
        The split, read as the release read it.
    t : dict
        The table entry.
    eps, delta : float
        The budget.
    rng : numpy.random.Generator
        For the synthetic rows (post-processing).

    Returns
    -------
    tuple
        (``{method: {metric: value}}``, notes).
    """
    out: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    task, target = t["task"], t["target"]
    y_te, known_te = _truth(test, t)
    y_tr, known_tr = _truth(train, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipping and conditioning warnings: the scores tell
        got, why = ddssp_scores(rel, test, t)
        if got is None:
            notes.append(f"ddssp: {why}")
        else:
            out["ddssp"] = got
        enc, why = _design(rel, t)
        if enc is None:
            notes.append(f"no design for the baselines: {why}")
            return out, notes
        names = list(rel.schema.names)
        tr_all = rel.schema.encode(train[names])
        te_codes = rel.schema.encode(test[names])[known_te]
        try:
            if task == "linear":  # rows whose target is known and encoded as a value (not the missing level)
                keep = known_tr & ~np.isin(tr_all[target].to_numpy(), enc.unobserved_target_codes)
            else:
                keep = known_tr
            out.update(raw_row_baselines(enc, tr_all[keep], te_codes, y_tr[keep], y_te[known_te], t, eps, delta))
            # option (b): the same mechanisms charged the release's discovery share, i.e. at the eps whose
            # rho is what the release had left for AIM
            eps_b = eps_after_discovery(rel, delta)
            b = raw_row_baselines(enc, tr_all[keep], te_codes, y_tr[keep], y_te[known_te], t, eps_b, delta)
            out.update({f"{m}_b": v for m, v in b.items()})
        except Exception as exc:  # noqa: BLE001
            notes.append(f"baselines: {type(exc).__name__}: {exc}")
        for method, codes_tr in (("schema_public", tr_all), ("synth_fit", None)):
            try:
                if codes_tr is None:
                    codes_tr = rel.synthesize_codes(len(train), rng)
                X_tr, X_te = enc.transform(codes_tr), enc.transform(te_codes)
                if task == "linear":
                    ok = ~np.isin(codes_tr[target].to_numpy(), enc.unobserved_target_codes)
                    m = _fit_public(X_tr[ok], enc.target_vector(codes_tr[ok]), task)
                    out[method] = _scores(y_te[known_te], enc.decode_target(m.predict(X_te[:, 1:])), task)
                else:
                    yv = enc.target_vector(codes_tr)
                    ok = yv != 0  # levels in neither class (the '<other>' level) are left out
                    m = _fit_public(X_tr[ok], (yv[ok] > 0).astype(float), task)
                    out[method] = _scores(y_te[known_te], m.decision_function(X_te[:, 1:]), task)
            except Exception as exc:  # noqa: BLE001
                notes.append(f"{method}: {type(exc).__name__}: {exc}")
    return out, notes


def reference_methods(train: pd.DataFrame, test: pd.DataFrame, t: dict, s: dict) -> dict[str, dict[str, float]]:
    """The non-private fit on the real rows (``public``) and the majority-class rule (``majority``).

    Parameters
    ----------
    train, test : pandas.DataFrame
        The split as sampled (the table's missing markers still in it).
    t : dict
        The table entry.
    s : dict
        The parsed spec.

    Returns
    -------
    dict
        ``{method: {metric: value}}``.
    """
    na = set(t["na_values"]) | {""}
    real_tr, real_te = train.where(~train.isin(na)), test.where(~test.isin(na))
    kinds = {c: column_kind(real_tr[c], c in t["dates"]) for c in real_tr.columns}
    y, score = public_scores(real_tr, real_te, t, kinds, s["max_onehot"])
    out = {"public": _scores(y, score, t["task"])}
    if t["task"] == "logistic":
        y_tr, known_tr = _truth(train, t)
        major = float(np.mean(y_tr[known_tr]) > 0.5)
        out["majority"] = {"auc": 0.5, "accuracy": float(np.mean(y == major))}
    return out


def run(spec: dict, ctx: Any) -> pd.DataFrame:
    """DD-SSP from releases made with ``--target`` against AdaSSP / objective perturbation on the raw rows.

    The runner of ``kind = "real-baselines"`` for ``ddssp bench`` (see the module docstring).

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        Overrides, data paths, progress and the finished cells of a resumed run.

    Returns
    -------
    pandas.DataFrame
        One row per (method, trial, metric).

    Raises
    ------
    WorkloadError
        For an invalid spec.
    """
    from ddssp.data.tables import read_table
    from ddssp.releasefile import Release

    s = parse(spec, ctx)
    rows: list[dict] = []
    work = Path(tempfile.mkdtemp(prefix="ddssp-baselines-"))
    keep = ctx.outdir / "releases"
    keep.mkdir(parents=True, exist_ok=True)
    plan = []
    for t in s["tables"]:
        df = load_table(t["source"], ctx)
        if df is None:
            ctx.log(f"{t['name']}: {t['source']} not found; table skipped")
            continue
        if t["target"] not in df.columns:
            raise WorkloadError(f"table {t['name']!r} has no column {t['target']!r}")
        for size in s["sizes"]:
            if size == "full" or len(df) > size:
                plan.extend((t, df, size, e, k) for e in s["eps"] for k in range(s["trials"]))
    bar = ctx.progress(len(plan), s["name"])
    try:
        for t, df, size, eps, k in plan:
            key = {"table": t["name"], "sample": str(size), "epsilon": eps, "trial": k}
            done = ctx.cell(key)
            if done is None:
                sample, train, test = sample_split(df, size, s["max_rows"], s["test_fraction"], t["name"])
                stem = f"{t['name']}-{size}-{eps:g}-{k}".replace("/", "_")
                train_csv, test_csv = work / f"{stem}-train.csv", work / f"{stem}-test.csv"
                train.to_csv(train_csv, index=False)
                test.to_csv(test_csv, index=False)
                rel_path = keep / f"{stem}.release"
                rel_path.unlink(missing_ok=True)
                extra = [*s["release_args"], "--target", t["target"], "--delta", repr(s["delta"])]
                r = run_release(train_csv, rel_path, eps, t["na_values"], s["timeout"], extra)
                results: dict[str, dict[str, float]] = {
                    "release": {"ok": float(r["ok"]), "cpu_s": r["cpu_s"]},
                }
                notes = [r["error"]] if r["error"] else []
                notes += r["warnings"]
                if r["ok"]:
                    rel = Release.load(rel_path)
                    results["release"]["columns_released"] = float(len(rel.schema.names))
                    if t["target"] in rel.schema.names:
                        results["release"]["target_levels"] = float(rel.schema.column(t["target"]).size)
                    tr = read_table(train_csv, na_values=t["na_values"])
                    te = read_table(test_csv, na_values=t["na_values"])
                    got, more = release_methods(rel, tr, te, t, eps, s["delta"], named_rng("synth", stem))
                    results.update(got)
                    notes += more
                if s["declared"]:
                    got, more = declared_release(train_csv, test_csv, train, t, s, eps, keep / f"{stem}-pb.release")
                    results.update(got)
                    notes += more
                try:
                    results.update(raw_bounds_methods(train, test, t, s, eps))
                except Exception as exc:  # noqa: BLE001 - recorded in the note
                    notes.append(f"public-bounds baselines: {type(exc).__name__}: {exc}")
                if k == 0:
                    try:
                        results.update(reference_methods(train, test, t, s))
                    except Exception as exc:  # noqa: BLE001 - recorded in the note
                        notes.append(f"public fit: {type(exc).__name__}: {exc}")
                note = " | ".join(n for n in notes if n)
                base = {"table": t["name"], "sample": str(size), "rows": len(sample), "epsilon": eps, "trial": k}
                done = [
                    {**base, "method": m, "metric": name, "value": float(v), "seconds": r["wall_s"], "note": note}
                    for m, vals in results.items()
                    for name, v in vals.items()
                ]
                ctx.log(
                    f"{t['name']} {size} eps={eps:g} #{k}: "
                    + ", ".join(
                        f"{m}={v['r2' if 'r2' in v else 'auc']:.3f}"
                        for m, v in results.items()
                        if not m.startswith("release")
                    )
                    + (f" | {note[:300]}" if note else "")
                )
                ctx.save_cell(done)
            rows.extend(done)
            bar.update(1)
    finally:
        bar.close()
        shutil.rmtree(work, ignore_errors=True)
    out = pd.DataFrame(rows, columns=COLUMNS)
    with open(ctx.outdir / "results.md", "w") as fh:
        fh.write(summary_table(out))
    return out


def _cell(vals: pd.Series) -> str:
    vals = vals.dropna()
    if vals.empty:
        return ""
    if len(vals) == 1:
        return f"{vals.iloc[0]:.3f} (1)"
    return f"{vals.mean():.3f} ± {vals.std(ddof=1):.3f} ({len(vals)})"


def summary_table(results: pd.DataFrame) -> str:
    """One line per (table, size, eps): mean ± sd (trials fitted) of each method, and DD-SSP's standing.

    For a logistic target the cells are AUC, and accuracy in a second line of the same cell group
    (``accuracy``). The last three columns are DD-SSP's mean minus the best mean of AdaSSP and objective
    perturbation on the release's schema with the whole eps, charged the discovery share (``_b``),
    and on the public-bounds design (``_pb``); then the declared release's DD-SSP (``ddssp_pb``) minus
    the best ``_pb`` baseline (the same public knowledge on both sides).

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
    head = [
        "table",
        "rows",
        "eps",
        "metric",
        "released",
        "released (declared)",
        *METHODS,
        "DD-SSP - best (schema)",
        "DD-SSP - best (b)",
        "DD-SSP - best (pb)",
        "DD-SSP declared - best (pb)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (table, _sample, n, eps), g in results.groupby(["table", "sample", "rows", "epsilon"], sort=False):
        rel = g[(g["method"] == "release") & (g["metric"] == "ok")]["value"]
        rel_pb = g[(g["method"] == "release_pb") & (g["metric"] == "ok")]["value"]
        for metric in ("r2", "auc", "accuracy"):
            gm = g[g["metric"] == metric]
            if gm.empty:
                continue
            by = {m: gm[gm["method"] == m]["value"] for m in METHODS}
            gaps = []
            for own, pair in (
                ("ddssp", ("adassp", "objpert")),
                ("ddssp", ("adassp_b", "objpert_b")),
                ("ddssp", ("adassp_pb", "objpert_pb")),
                ("ddssp_pb", ("adassp_pb", "objpert_pb")),
            ):
                best = max((by[m].mean() for m in pair if not by[m].dropna().empty), default=math.nan)
                gap = by[own].mean() - best if not by[own].dropna().empty else math.nan
                gaps.append("" if math.isnan(gap) else f"{gap:+.3f}")
            cells = [_cell(by[m]) for m in METHODS]
            lines.append(
                "| "
                + " | ".join(
                    [
                        str(table),
                        f"{n:,}",
                        f"{eps:g}",
                        metric,
                        f"{int(rel.sum())}/{len(rel)}",
                        f"{int(rel_pb.sum())}/{len(rel_pb)}" if len(rel_pb) else "",
                        *cells,
                        *gaps,
                    ]
                )
                + " |"
            )
    return "\n".join(lines) + "\n"


__all__ = ["parse", "raw_row_baselines", "release_methods", "run", "summary_table"]
