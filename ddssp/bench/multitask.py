"""`ddssp bench` runner for kind = "multitask-synthetic" (Krichene et al., Appendix C and D).

Two modes, chosen by the spec's ``mode`` key:

- ``mode = "regression"`` (default; workloads/multitask-synthetic.toml): m tasks of d-dimensional linear
  regression, n users, power-law task skew a (a list), ~tasks_per_user tasks per user, 80/20 split of the
  entries. For every a, trial, epsilon, mu and method ("ssp" = Algorithm 1, "gd" = Algorithm 2) one fit;
  metrics ``rmse`` (all test entries) and ``rmse_tail`` (test entries of the smallest quarter of tasks).
  A non-private weighted-ridge reference ("ridge-nonprivate", epsilon and mu empty) per (a, trial).
- ``mode = "als"`` (workloads/multitask-als.toml): a generated long-tail ratings matrix; DP-ALS with
  uniform sampling ("dpals-uniform"), tail sampling ("dpals-tail") and adaptive weights ("adadpals", one
  row per mu); test RMSE overall (bucket "all") and per item-popularity bucket (0 = rarest), with equally
  many items per bucket. A non-private ALS reference ("als-nonprivate").

The data set of a trial is shared by every method, epsilon and mu (paired comparison).

Seeds and noise: ``--seed`` (with a, trial, ...) fixes the generated data, the train/test split and, for
DP-ALS, the initial item factors and sampling keys (not privacy noise). Every DP draw comes from the
estimators' secure source (OpenDP; no seed reaches it), so a rerun gives other numbers within the trials'
standard errors; ``--resume`` keeps the finished cells of results.csv as they are.

Rows: method, a, epsilon, mu, bucket, trial, metric, value, seconds.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import WorkloadError
from ddssp.estimators.multitask import DPALS, ALSOptions, GradientSteps, MultiTaskNoisyGD, MultiTaskSSP, TaskWeighting
from ddssp.estimators.multitask.als import als_predict, dp_als, user_solve
from ddssp.estimators.multitask.regression import weighted_ridge
from ddssp.estimators.multitask.synthetic import synthetic_multitask, synthetic_ratings

REGRESSION_METHODS = ("ssp", "gd")
ALS_METHODS = ("dpals-uniform", "dpals-tail", "adadpals")


def _rng(seed: int | None, *keys: int) -> np.random.Generator:
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(np.random.SeedSequence([int(seed), *[int(k) for k in keys]]))


def _floats(spec: dict, key: str, default: list[float]) -> list[float]:
    vals = spec.get(key, default)
    if not isinstance(vals, list) or not vals:
        raise WorkloadError(f"spec key {key!r} must be a non-empty list of numbers")
    try:
        return [float(v) for v in vals]
    except (TypeError, ValueError):
        raise WorkloadError(f"spec key {key!r} must be a list of numbers, got {vals!r}") from None


def _rmse(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean((pred - y) ** 2))) if y.size else math.nan


def run(spec: dict, ctx) -> pd.DataFrame:
    """Multi-task DP regressions or DP-ALS on generated data, by the spec's ``mode``.

    The runner of ``kind = "multitask-synthetic"`` for ``ddssp bench`` (see the module docstring for the spec keys,
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
    mode = spec.get("mode", "regression")
    if mode == "regression":
        df = _run_regression(spec, ctx)
        _plot_panels(df, ctx.outdir / "rmse_vs_mu.png", x="mu", panel=("method", "per_user", "a"), line="epsilon")
        return df
    if mode == "als":
        df = _run_als(spec, ctx)
        _plot_panels(
            df[df.bucket != "all"], ctx.outdir / "rmse_by_bucket.png", x="bucket", panel=("epsilon",), line="name"
        )
        return df
    raise WorkloadError(f"multitask-synthetic: unknown mode {mode!r}; use 'regression' or 'als'")


def _plot_panels(df: pd.DataFrame, path, x: str, panel: tuple[str, ...], line: str) -> None:
    """Mean metric vs ``x``, one panel per ``panel`` setting and metric, one line per ``line`` value.
    (The generic bench plot overlays every setting of a method; this one keeps them apart.)"""
    from ddssp.bench.plotting import pyplot

    plt = pyplot()
    if plt is None:  # pragma: no cover
        return
    df = df.dropna(subset=[c for c in (x, *panel) if c != "bucket"]).copy()
    if df.empty:
        return
    if "name" not in df.columns:
        df["name"] = df["method"]
    if line == "name" and "mu" in df.columns:
        df["name"] = [
            m + ("" if (isinstance(u, float) and math.isnan(u)) else f" mu={u:g}")
            for m, u in zip(df["method"], df["mu"])
        ]
    groups = list(df.groupby(["metric", *panel], sort=True))
    if not groups:
        return
    cols = min(4, len(groups))
    rows_ = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(rows_, cols, figsize=(4.2 * cols, 3.4 * rows_), squeeze=False)
    for ax, (key, g) in zip(axes.ravel(), groups):
        mean = g.groupby([line, x])["value"].mean().reset_index()
        for lv, gg in mean.groupby(line, sort=True):
            ax.plot(
                gg[x].astype(str) if x == "bucket" else gg[x],
                gg["value"],
                marker="o",
                label=f"{line}={lv}" if line != "name" else str(lv),
            )
        ax.set_title(", ".join(f"{k}={v}" for k, v in zip(("metric", *panel), key)), fontsize=9)
        ax.set_xlabel(x)
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(groups) :]:
        ax.axis("off")
    fig.tight_layout()
    from ddssp.data.fileio import atomic_write

    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------- regression (Appendix C)
def _run_regression(spec: dict, ctx) -> pd.DataFrame:
    trials = int(ctx.setting(spec, "trials", ctx.trials, 3))
    eps_grid = [float(e) for e in ctx.setting(spec, "eps", ctx.eps, [1.0, 3.0, 10.0], old="epsilon")]
    methods = list(ctx.setting(spec, "methods", ctx.methods, ["ssp", "gd"]))
    bad = [m for m in methods if m not in REGRESSION_METHODS]
    if bad:
        raise WorkloadError(f"unknown methods {bad}; known: {', '.join(REGRESSION_METHODS)}")
    mus = _floats(spec, "mu", [0.0, 0.25, 0.5, 1.0])
    skews = _floats(spec, "a", [1.0, 2.0])
    delta = float(spec.get("delta", 1e-5))
    m = int(spec.get("n_tasks", 100))
    d = int(spec.get("n_features", 5))
    n = int(spec.get("n_users", 10_000))
    tpu = float(spec.get("tasks_per_user", 20))
    noise = float(spec.get("label_noise", 1e-3))
    test_fraction = float(spec.get("test_fraction", 0.2))
    common = dict(clip_x=float(spec.get("clip_x", 1.0)), clip_star=float(spec.get("clip_star", 1.0)))
    weighting = dict(
        beta_bar=float(spec.get("beta_bar", 1.0)),
        count_share=float(spec.get("count_share", 0.15)),
        count_clip=float(spec.get("count_clip", 32)),
    )
    per_user_modes = spec.get("per_user", "normalize")
    per_user_modes = per_user_modes if isinstance(per_user_modes, list) else [per_user_modes]
    bad = [u for u in per_user_modes if u not in ("clip", "normalize")]
    if bad or not per_user_modes:
        raise WorkloadError(f"per_user must be 'clip', 'normalize' or a list of them, got {spec.get('per_user')!r}")
    public_counts = bool(spec.get("public_counts", False))
    ssp_ridge = spec.get("ridge")
    descent = GradientSteps(
        steps=int(spec.get("gd_steps", 20)), lr=float(spec.get("gd_lr", 0.5)), radius=float(spec.get("gd_radius", 1.0))
    )
    tail_q = float(spec.get("tail_quantile", 0.25))

    rows: list[dict[str, Any]] = []
    n_fits = len(eps_grid) * len(mus) * len(methods) * len(per_user_modes)
    total = len(skews) * trials * (1 + n_fits)
    with ctx.progress(total, "multitask") as bar:
        for ai, a in enumerate(skews):
            for trial in range(trials):
                done = ctx.cell({"a": a, "trial": trial})  # finished in the run being resumed
                if done is not None:
                    rows.extend(done)
                    bar.update(1 + n_fits)
                    continue
                cell_rows: list[dict[str, Any]] = []
                rng = _rng(ctx.seed, 1, ai, trial)
                data, _ = synthetic_multitask(m, d, n, a, tpu, noise, rng)
                train, test = data.split(test_fraction, rng)
                counts = train.task_counts
                tail_tasks = counts <= np.quantile(counts, tail_q)  # evaluation only
                tail_mask = tail_tasks[test.task_idx]
                if trial == 0:
                    r1 = float(np.sum(1.0 / np.maximum(counts, 1)) * counts.sum() / m**2)
                    ctx.log(
                        f"a={a:g}: task sizes min {counts.min()}, median {int(np.median(counts))}, "
                        f"max {counts.max()}; R1 = {r1:.2f}"
                    )

                def record(method, eps, mu, pred, secs, per_user=""):
                    for metric, mask in (("rmse", slice(None)), ("rmse_tail", tail_mask)):
                        cell_rows.append(
                            dict(
                                method=method,
                                per_user=per_user,
                                a=a,
                                epsilon=eps,
                                mu=mu,
                                trial=trial,
                                metric=metric,
                                value=_rmse(pred[mask], test.y[mask]),
                                seconds=secs,
                            )
                        )

                t0 = time.perf_counter()
                ref = weighted_ridge(train, np.ones(train.n_entries), 1e-6)
                record(
                    "ridge-nonprivate",
                    math.nan,
                    math.nan,
                    np.einsum("ed,ed->e", test.X, ref[test.task_idx]),
                    time.perf_counter() - t0,
                )
                bar.update(1)
                for eps in eps_grid:
                    for mu in mus:
                        for method, pu in ((m_, u_) for m_ in methods for u_ in per_user_modes):
                            # no seed: all the estimators' randomness is DP noise, drawn by the secure source
                            kw = dict(
                                common,
                                weighting=TaskWeighting(mu=mu, per_user=pu, **weighting),
                                public_counts=counts if public_counts else None,
                            )
                            if method == "ssp":
                                est = MultiTaskSSP(eps, delta, ridge=ssp_ridge, **kw)
                            else:
                                est = MultiTaskNoisyGD(eps, delta, descent=descent, **kw)
                            t0 = time.perf_counter()
                            est.fit(train)
                            pred = np.einsum("ed,ed->e", test.X, est.coef_[test.task_idx])
                            record(method, eps, mu, pred, time.perf_counter() - t0, pu)
                            bar.update(1)
                rows.extend(cell_rows)
                ctx.save_cell(cell_rows)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- DP-ALS (Appendix D)
def _run_als(spec: dict, ctx) -> pd.DataFrame:
    trials = int(ctx.setting(spec, "trials", ctx.trials, 3))
    eps_grid = [float(e) for e in ctx.setting(spec, "eps", ctx.eps, [1.0, 5.0, 20.0], old="epsilon")]
    methods = list(ctx.setting(spec, "methods", ctx.methods, list(ALS_METHODS)))
    bad = [m for m in methods if m not in ALS_METHODS]
    if bad:
        raise WorkloadError(f"unknown methods {bad}; known: {', '.join(ALS_METHODS)}")
    mus = _floats(spec, "mu", [0.25, 0.5])
    delta = float(spec.get("delta", 1e-5))
    n_items = int(spec.get("n_items", 500))
    n_users = int(spec.get("n_users", 20_000))
    rank = int(spec.get("rank", 5))
    rpu = float(spec.get("ratings_per_user", 20))
    zipf = float(spec.get("zipf", 1.0))
    noise = float(spec.get("rating_noise", 0.1))
    rounds = int(spec.get("rounds", 5))
    k = int(spec.get("k", 10))
    n_buckets = int(spec.get("buckets", 5))
    test_fraction = float(spec.get("test_fraction", 0.2))
    common = dict(clip_x=float(spec.get("clip_x", 1.0)), clip_star=float(spec.get("clip_star", 1.0)))
    user_ridge = float(spec.get("user_ridge", 0.1))
    weighting = dict(
        count_share=float(spec.get("count_share", 0.15)),
        count_clip=float(spec.get("count_clip", 32)),
        per_user=str(spec.get("per_user", "normalize")),
        beta_bar=float(spec.get("beta_bar", 1.0)),
    )
    settings: list[tuple[str, float, dict]] = []
    for method in methods:
        if method == "adadpals":
            als = ALSOptions(rank=rank, rounds=rounds, allocation="adaptive", user_ridge=user_ridge)
            settings += [(method, mu, dict(als=als, weighting=TaskWeighting(mu=mu, **weighting))) for mu in mus]
        else:
            als = ALSOptions(rank=rank, rounds=rounds, allocation=method.split("-")[1], k=k, user_ridge=user_ridge)
            settings.append((method, math.nan, dict(als=als, weighting=TaskWeighting(mu=0.25, **weighting))))

    rows: list[dict[str, Any]] = []
    total = trials * (1 + len(eps_grid) * len(settings))
    with ctx.progress(total, "dp-als") as bar:
        for trial in range(trials):
            done = ctx.cell({"trial": trial})  # finished in the run being resumed
            if done is not None:
                rows.extend(done)
                bar.update(1 + len(eps_grid) * len(settings))
                continue
            cell_rows: list[dict[str, Any]] = []
            rng = _rng(ctx.seed, 3, trial)
            data = synthetic_ratings(n_items, n_users, rank, rpu, zipf, noise, rng)
            train, test = data.split(test_fraction, rng)
            counts = train.task_counts  # evaluation only: bucket boundaries
            order = np.argsort(counts, kind="stable")
            bucket_of = np.empty(n_items, dtype=int)
            bucket_of[order] = np.arange(n_items) * n_buckets // n_items
            tb = bucket_of[test.task_idx]
            if trial == 0:
                ctx.log(
                    f"ratings: {train.n_entries} train entries; item counts min {counts.min()}, median "
                    f"{int(np.median(counts))}, max {counts.max()}; test rating sd {np.std(test.y):.3f}"
                )

            def record(method, eps, mu, U, secs):
                V = user_solve(train, U, user_ridge)
                pred = als_predict(U, V, test.task_idx, test.user_idx)
                base = dict(method=method, epsilon=eps, mu=mu, trial=trial, metric="rmse", seconds=secs)
                cell_rows.append(dict(base, bucket="all", value=_rmse(pred, test.y)))
                for b in range(n_buckets):
                    sel = tb == b
                    cell_rows.append(dict(base, bucket=str(b), value=_rmse(pred[sel], test.y[sel])))

            t0 = time.perf_counter()
            nonprivate = ALSOptions(rank=rank, rounds=rounds, user_ridge=user_ridge)
            U, _, _ = dp_als(train, None, delta, _rng(ctx.seed, 4, trial), als=nonprivate)
            record("als-nonprivate", math.nan, math.nan, U, time.perf_counter() - t0)
            bar.update(1)
            for ei, eps in enumerate(eps_grid):
                for si, (method, mu, kw) in enumerate(settings):
                    # the seed fixes DP-ALS's initial factors and sampling keys; its DP noise is secure
                    seed = int(_rng(ctx.seed, 5, trial, ei, si).integers(2**31))
                    t0 = time.perf_counter()
                    est = DPALS(eps, delta, seed=seed, **common, **kw).fit(train)
                    record(method, eps, mu, est.coef_, time.perf_counter() - t0)
                    bar.update(1)
            rows.extend(cell_rows)
            ctx.save_cell(cell_rows)
    return pd.DataFrame(rows)
