"""The DD-SSP paper's experiment (Figure 3): DD-SSP vs AIM-Synth vs AdaSSP / ObjPert vs Public.

``run(spec, ctx)`` for ``ddssp bench`` with ``kind = "ddssp-paper"`` (spec keys: workloads/README.md).

Per (eps, trial):

- ONE private AIM release of the training table (:func:`ddssp.release`, budget (eps, delta)) is
  shared by ``ddssp`` (DD-SSP regression from the release's marginals) and ``aim-synth`` (an ordinary,
  non-private fit on synthetic rows sampled from the same release);
- ``adassp`` (linear) / ``objpert`` (logistic) spend their own (eps, delta) directly on the training
  rows, with the row-norm bound of the encoding (paper Prop 3.1; ``Encoding.row_norm_bound()``) and the
  label bound of the encoded target (1: targets are coded in [-1, 1]) -- never bounds measured on data;
- ``public`` is the non-private fit on the real training rows (computed once; repeated per cell so it
  draws as a flat reference line).

Every method sees the same encoding (``ddssp.estimators.design.Encoding``: reduced one-hot for categorical
columns, numeric columns rescaled to [-1, 1], an intercept; the linear target rescaled to [-1, 1], the
logistic target coded -1/+1). Metrics on the test rows: ``mse`` (linear; on the encoded target scale
[-1, 1]) or ``auc`` (logistic; Mann-Whitney rank formula). ``seconds`` is each method's wall time; for
``ddssp`` and ``aim-synth`` it includes the shared AIM release (the cost of running that method alone).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ddssp.bench.filter_recode import apply_filter, apply_recode, parse_filter, parse_recode, recode_schema
from ddssp.bench.metrics import accuracy, auc_score, log_loss, mse
from ddssp.bench.spec_options import check_keys, read_eps, read_trials
from ddssp.errors import WorkloadError

METHODS_LINEAR = ("ddssp", "aim-synth", "adassp", "public", "ddssp-discovered")
METHODS_LOGISTIC = ("ddssp", "aim-synth", "objpert", "public", "ddssp-discovered")
RELEASE_METHODS = ("ddssp", "aim-synth")
#: methods that discover the schema of the raw training table under DP in every trial (``raw = true``)
DISCOVERED_METHODS = ("ddssp-discovered",)

SPEC_KEYS = {
    "name",
    "kind",
    "description",
    "train",
    "test",
    "test_rows",
    "domain",
    "schema",
    "categorical",
    "drop",
    "target",
    "task",
    "eps",
    "delta",
    "trials",
    "methods",
    "aim",
    "ddssp",
    "train_rows",
    "synth_rows",
    "public_ridge",
    "encoding",
    "plot_x",
    "plot_logx",
    "filter",
    "recode",
    "metrics",
    "raw",
    "na_values",
    "discovery_share",
}
METRICS = {"linear": ("mse",), "logistic": ("auc", "accuracy", "log_loss")}
#: test rows held out when the table is too small for ``test_rows`` (and no test table is given)
SMALL_TABLE_TEST_FRACTION = 0.2
AIM_KEYS = {"max_model_size", "iters", "rounds", "workload", "max_cells"}
DDSSP_KEYS = {"ridge", "psd", "R"}


# ------------------------------------------------------------------------------------- spec parsing
def _require(spec: dict, key: str) -> Any:
    if key not in spec:
        raise WorkloadError(f"benchmark spec needs {key!r}")
    return spec[key]


def _str_list(spec: dict, key: str) -> list[str]:
    v = spec.get(key, [])
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise WorkloadError(f"spec key {key!r} must be a list of column names")
    return list(v)


def parse_spec(spec: dict, ctx: Any) -> dict:
    """Validate a ddssp-paper spec (with the context's overrides) into plain settings.

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
    check_keys(spec, SPEC_KEYS, "a ddssp-paper spec")
    task = _require(spec, "task")
    if task not in ("linear", "logistic"):
        raise WorkloadError(f"task must be 'linear' or 'logistic', got {task!r}")
    target = _require(spec, "target")
    if not isinstance(target, str):
        raise WorkloadError("target must be a column name")
    eps = read_eps(spec, ctx)
    delta = float(_require(spec, "delta"))
    if not (0 < delta < 1):
        raise WorkloadError(f"delta must lie strictly between 0 and 1, got {delta}")
    trials = read_trials(spec, ctx, 1)
    allowed = METHODS_LINEAR if task == "linear" else METHODS_LOGISTIC
    methods = ctx.setting(spec, "methods", ctx.methods, list(allowed))
    if isinstance(methods, str):
        methods = [methods]
    bad = [m for m in methods if m not in allowed]
    if bad or not methods:
        raise WorkloadError(f"method(s) {bad} not available for task {task!r}; choose from {list(allowed)}")
    aim = dict(spec.get("aim", {}))
    check_keys(aim, AIM_KEYS, "[aim]")
    dd = dict(spec.get("ddssp", {}))
    check_keys(dd, DDSSP_KEYS, "[ddssp]")
    if ("domain" in spec) == ("schema" in spec):
        raise WorkloadError("give exactly one of 'domain' (a domain file) or 'schema' (a ddssp schema file)")
    if "schema" in spec and "categorical" in spec:
        raise WorkloadError("'categorical' applies to a domain file; a ddssp schema declares kinds itself")
    for key in ("train_rows", "synth_rows") + (() if isinstance(spec.get("test_rows"), float) else ("test_rows",)):
        v = spec.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise WorkloadError(f"{key} must be a positive integer, got {v!r}")
    enc = spec.get("encoding", {})
    if not isinstance(enc, dict):
        raise WorkloadError("'encoding' must be a table {column = 'onehot' | 'numeric'}")
    metrics = spec.get("metrics", list(METRICS[task]))
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, list) or not metrics or any(m not in METRICS[task] for m in metrics):
        raise WorkloadError(f"metrics for task {task!r}: a non-empty list from {list(METRICS[task])}, got {metrics!r}")
    raw = spec.get("raw", False)
    if not isinstance(raw, bool):
        raise WorkloadError("'raw' must be true or false")
    if any(m in DISCOVERED_METHODS for m in methods) and not raw:
        raise WorkloadError("method 'ddssp-discovered' needs raw tables: set raw = true and give a raw CSV")
    share = spec.get("discovery_share")
    if share is not None and not (isinstance(share, (int, float)) and 0 < share <= 1):
        raise WorkloadError(f"discovery_share must be in (0, 1], got {share!r}")
    test_rows = spec.get("test_rows", 1000)
    if isinstance(test_rows, float) and not (0 < test_rows < 1):
        raise WorkloadError(f"test_rows must be a positive integer or a fraction in (0, 1), got {test_rows!r}")
    return {
        "raw": raw,
        "na_values": _str_list(spec, "na_values"),
        "discovery_share": share,
        "name": spec.get("name", "ddssp-paper"),
        "task": task,
        "target": target,
        "eps": eps,
        "delta": delta,
        "trials": trials,
        "methods": list(methods),
        "aim": aim,
        "ddssp": dd,
        "drop": _str_list(spec, "drop"),
        "categorical": _str_list(spec, "categorical") if "categorical" in spec else None,
        "train_rows": spec.get("train_rows", 50000),
        "test_rows": test_rows,
        "test_rows_given": "test_rows" in spec,
        "metrics": list(metrics),
        "filter": parse_filter(spec.get("filter")),
        "recode": parse_recode(spec.get("recode")),
        "synth_rows": spec.get("synth_rows"),
        "public_ridge": float(spec.get("public_ridge", 1.0)),
        "encoding": enc,
    }


# ------------------------------------------------------------------------------------------- data
def load_data(spec: dict, settings: dict, ctx: Any, rng: np.random.Generator):
    """The schema and the train and test codes, with dropped columns removed and row caps applied.

    Parameters
    ----------
    spec : dict
        The parsed spec.
    settings : dict
        From :func:`parse_spec`.
    ctx : BenchContext
        Resolves the data files.
    rng : numpy.random.Generator
        Draws the row caps and a split when the spec gives no test table.

    Returns
    -------
    tuple
        (schema, train codes, test codes), then the raw train and test tables when the spec asks for
        raw-table releases.
    """
    from ddssp.data import load_schema
    from ddssp.data.tables import read_table

    if "domain" in spec:
        schema = load_schema(ctx.data_path(spec["domain"]), categorical=settings["categorical"])
    else:
        schema = load_schema(ctx.data_path(spec["schema"]))
    train = read_table(ctx.data_path(_require(spec, "train")))
    test = read_table(ctx.data_path(spec["test"])) if "test" in spec else None
    na = settings.get("na_values") or []
    if na:
        train = train.mask(train.isin(na))
        test = test.mask(test.isin(na)) if test is not None else None
    for col in [c for c, _, _ in settings["filter"]] + list(settings["recode"]):
        if col not in schema:
            raise WorkloadError(f"filter/recode: column {col!r} is not in the schema ({schema.names})")
    if settings["filter"]:
        n0 = len(train)
        train = apply_filter(train, settings["filter"], "train")
        if test is not None:
            test = apply_filter(test, settings["filter"], "test")
        ctx.log(f"filter keeps {len(train)} of {n0} training rows")
        if len(train) == 0:
            raise WorkloadError("the filter leaves no training rows")
    if settings["recode"]:
        train = apply_recode(train, settings["recode"], "train")
        if test is not None:
            test = apply_recode(test, settings["recode"], "test")
        schema = recode_schema(schema, settings["recode"])
    drop = settings["drop"]
    missing = [c for c in drop if c not in schema]
    if missing:
        raise WorkloadError(f"drop: column(s) {missing} are not in the schema ({schema.names})")
    if settings["target"] in drop:
        raise WorkloadError(f"the target {settings['target']!r} is in 'drop'")
    keep = [c for c in schema.names if c not in drop]
    schema = schema.subset(keep)
    train = train.drop(columns=[c for c in drop if c in train.columns]).reset_index(drop=True)
    train_codes = schema.encode(train)
    if test is None:
        # hold out test_rows random training rows (a fraction of the table when test_rows is one, or when
        # the table is too small for the number)
        n_rows, n_test = len(train_codes), settings["test_rows"]
        if isinstance(n_test, float):
            n_test = int(round(n_test * n_rows))
        elif 2 * n_test > n_rows:
            frac = SMALL_TABLE_TEST_FRACTION
            msg = (
                f"the table has {n_rows} rows, too few for test_rows = {n_test}"
                f"{'' if settings['test_rows_given'] else ' (the default)'}: holding out {frac:.0%} "
                f"({int(round(frac * n_rows))} rows) as test rows instead (set test_rows to a number or "
                "a fraction to choose)"
            )
            warnings.warn(msg, UserWarning, stacklevel=2)
            n_test = int(round(frac * n_rows))
        if not 1 <= n_test < n_rows:
            raise WorkloadError(
                f"test_rows = {settings['test_rows']} leaves no training or no test rows (the table has {n_rows})"
            )
        perm = rng.permutation(len(train_codes))
        test_codes = train_codes.iloc[perm[:n_test]].reset_index(drop=True)
        test = train.iloc[perm[:n_test]].reset_index(drop=True)
        train_codes = train_codes.iloc[perm[n_test:]].reset_index(drop=True)
        train = train.iloc[perm[n_test:]].reset_index(drop=True)
    else:
        test = test.drop(columns=[c for c in drop if c in test.columns]).reset_index(drop=True)
        test_codes = schema.encode(test)
        cap = settings["test_rows"]
        cap = int(round(cap * len(test_codes))) if isinstance(cap, float) else cap
        if len(test_codes) > cap:
            idx = np.sort(rng.choice(len(test_codes), cap, replace=False))
            test_codes = test_codes.iloc[idx].reset_index(drop=True)
            test = test.iloc[idx].reset_index(drop=True)
    if len(train_codes) > settings["train_rows"]:
        idx = np.sort(rng.choice(len(train_codes), settings["train_rows"], replace=False))
        train_codes = train_codes.iloc[idx].reset_index(drop=True)
        train = train.iloc[idx].reset_index(drop=True)
    if settings.get("raw"):  # the raw rows too, aligned with the codes (for discovery and scoring)
        return schema, train_codes, test_codes, train, test
    return schema, train_codes, test_codes


# ------------------------------------------------------------------------------------------ runner
def _seed_sequence(seed: int | None) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed)


def run(spec: dict, ctx: Any) -> pd.DataFrame:
    """DD-SSP vs AIM-Synth vs AdaSSP / ObjPert vs Public on a table, per (eps, trial).

    The runner of ``kind = "ddssp-paper"`` for ``ddssp bench`` (see the module docstring for the spec keys,
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
    from ddssp.estimators.adassp import AdaSSP
    from ddssp.estimators.objpert import ObjectivePerturbation
    from ddssp.estimators.public import PublicLinearRegression, PublicLogisticRegression
    from ddssp.estimators.suffstats import Encoding

    s = parse_spec(spec, ctx)
    root = _seed_sequence(ctx.seed)
    data_ss, *cell_root = root.spawn(1 + len(s["eps"]) * s["trials"])
    loaded = load_data(spec, s, ctx, np.random.default_rng(data_ss))
    schema, train_codes, test_codes = loaded[:3]
    train_raw, test_raw = (loaded[3], loaded[4]) if s["raw"] else (None, None)
    task, target = s["task"], s["target"]
    enc = Encoding(schema, None, target, kind=task, overrides=s["encoding"] or None)
    X_train, y_train = enc.transform(train_codes), enc.target_vector(train_codes)
    X_test, y_test = enc.transform(test_codes), enc.target_vector(test_codes)
    x_bound, y_bound = enc.row_norm_bound(), enc.label_bound()
    ctx.log(
        f"{s['name']}: {len(train_codes)} train / {len(test_codes)} test rows, {X_train.shape[1]} encoded "
        f"features (||x|| <= {x_bound:.4g}), target {target!r} ({task}); methods {', '.join(s['methods'])}"
    )
    scorers = {"mse": mse, "auc": auc_score, "accuracy": accuracy, "log_loss": log_loss}

    if s["raw"]:
        # raw mode: score against the raw test values, so that methods whose schemas differ (declared vs
        # discovered per trial) compare on one scale: linear MSE in the target's own units ("mse_original";
        # predictions mapped back with each encoding's target scale), logistic metrics against the raw labels
        if task == "linear":
            y_truth = pd.to_numeric(test_raw[target], errors="coerce").to_numpy(dtype=float)
        else:
            y_truth = np.where(test_raw[target].astype(str).to_numpy() == _positive_label(schema, target), 1.0, -1.0)

    def score(model, encoding=None, X=None) -> dict[str, float]:
        encoding = encoding or enc
        X = X_test if X is None else X
        pred = model.decision_function(X)  # the encoded scale for every estimator
        if s["raw"]:
            if task == "linear":
                ok = np.isfinite(y_truth)
                return {"mse_original": mse(y_truth[ok], encoding.decode_target(pred)[ok])}
            return {m: scorers[m](y_truth, pred) for m in s["metrics"]}
        return {m: scorers[m](y_test, pred) for m in s["metrics"]}

    def nonprivate(X, y):
        # the intercept is column 0 of the encoding; fit it as an unpenalised intercept
        if task == "linear":
            m = PublicLinearRegression(fit_intercept=True).fit(X[:, 1:], y)
        else:
            m = PublicLogisticRegression(ridge=s["public_ridge"], fit_intercept=True).fit(X[:, 1:], y)
        return _WithInterceptColumn(m)

    rows: list[dict] = []
    columns = ["method", "epsilon", "trial", "metric", "value", "seconds"]
    public_result: tuple[float, float] | None = None
    cells = [(e, t) for e in s["eps"] for t in range(s["trials"])]
    bar = ctx.progress(len(cells), s["name"])
    try:
        for (eps, trial), ss in zip(cells, cell_root):
            rel_ss, synth_ss, _base_ss = ss.spawn(
                3
            )  # 3rd stream (once the baselines' noise) unused: DP noise is secure
            done = ctx.cell({"epsilon": eps, "trial": trial})  # finished in the run being resumed
            if done is not None:
                rows.extend(done)
                bar.update(1)
                continue
            cell_rows: list[dict] = []

            def add(method: str, values: dict[str, float], seconds: float) -> None:
                for metric, value in values.items():
                    cell_rows.append(
                        dict(method=method, epsilon=eps, trial=trial, metric=metric, value=value, seconds=seconds)
                    )

            rel, rel_seconds = None, 0.0
            if any(m in s["methods"] for m in RELEASE_METHODS):

                def show(p, eps=eps, trial=trial) -> None:
                    if not hasattr(p, "rho_spent"):  # the pipeline's own events: phases, the plan
                        return
                    spent = 100.0 * p.rho_spent / p.rho_budget if p.rho_budget else 0.0
                    bar.set_postfix_str(f"eps={eps:g} trial={trial}: AIM round {p.round}, {spent:.0f}% of budget")

                rel, rel_seconds = _release(
                    train_codes, schema, eps, s, target, np.random.default_rng(rel_ss), callback=show
                )

            def _run_method(method: str) -> None:
                nonlocal public_result
                t0 = time.perf_counter()
                if method == "ddssp":
                    model = _ddssp_model(task, enc, s["ddssp"]).fit(rel, target=target)
                    add(method, score(model), rel_seconds + time.perf_counter() - t0)
                elif method == "aim-synth":
                    n_synth = s["synth_rows"] or max(int(round(rel.total)), 1)
                    synth = rel.synthesize_codes(n_synth, np.random.default_rng(synth_ss))
                    Xs, ys = enc.transform(synth), enc.target_vector(synth)
                    if task == "logistic" and np.unique(ys).size < 2:
                        model = _Constant(ys)  # one class in the synthetic rows: a constant classifier
                    else:
                        model = nonprivate(Xs, ys)
                    add(method, score(model), rel_seconds + time.perf_counter() - t0)
                elif method == "adassp":
                    model = AdaSSP(eps, s["delta"], x_bound, y_bound)  # secure noise: no seed
                    model.fit(X_train, y_train)
                    add(method, score(model), time.perf_counter() - t0)
                elif method == "objpert":
                    model = ObjectivePerturbation(eps, s["delta"], x_bound)  # secure noise
                    model.fit(X_train, y_train)
                    add(method, score(model), time.perf_counter() - t0)
                elif method == "ddssp-discovered":
                    values, secs = _discovered_ddssp(
                        train_raw, test_raw, eps, s, target, task, np.random.default_rng(rel_ss), score
                    )
                    add(method, values, secs)
                elif method == "public":
                    if public_result is None:
                        model = nonprivate(X_train, y_train)
                        public_result = (score(model), time.perf_counter() - t0)
                    add(method, *public_result)

            for method in s["methods"]:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    _run_method(method)
                for w in caught:  # say which method, eps and trial raised it
                    warnings.warn(f"{method}, eps={eps:g}, trial {trial}: {w.message}", w.category, stacklevel=2)
            rows.extend(cell_rows)
            ctx.save_cell(cell_rows)
            bar.update(1)
    finally:
        bar.close()
    return pd.DataFrame(rows, columns=columns)


def _positive_label(schema: Any, target: str) -> str:
    """The positive class of a two-level target: its second level (as the encoding codes it)."""
    return schema.column(target).labels[1]


def _discovered_ddssp(train_raw, test_raw, eps, s, target, task, rng, score):
    """One trial of DD-SSP on the raw training table with its schema discovered under DP inside the same
    (eps, delta) (``plan_schema`` + ``release``); returns (scores, seconds)."""
    from ddssp.data.encoding import ClipWarning
    from ddssp.estimators.suffstats import Encoding
    from ddssp.pipeline import DEFAULT_DISCOVERY_SHARE, AimOptions, DiscoveryOptions, plan_schema, release

    t0 = time.perf_counter()
    share = s["discovery_share"] or DEFAULT_DISCOVERY_SHARE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)  # clipping into discovered ranges is by design
        plan = plan_schema(train_raw, None, eps=eps, delta=s["delta"], discovery=DiscoveryOptions(share=share))
        rel = release(
            train_raw,
            plan.schema,
            eps=eps,
            delta=s["delta"],
            target=target,
            seed=rng,
            plan=plan,
            aim=AimOptions(**dict(s["aim"])),
        )
        if task == "logistic" and plan.schema.column(target).size != 2:
            # the discovered target is not binary: score a constant classifier
            return score(_Constant(np.array([-1.0, 1.0]))), time.perf_counter() - t0
        enc = Encoding(plan.schema, None, target, kind=task, overrides=s["encoding"] or None)
        model = _ddssp_model(task, enc, s["ddssp"]).fit(rel, target=target)
        X = enc.transform(plan.schema.encode(test_raw))
    return score(model, enc, X), time.perf_counter() - t0


class _Constant:
    """The classifier a one-class synthetic sample gives: every row gets the smoothed share of that class
    (AUC 0.5, finite log loss)."""

    def __init__(self, y):
        y = np.asarray(y, dtype=float)
        p = (np.sum(y > 0) + 0.5) / (y.size + 1.0)
        self.logit = math.log(p / (1.0 - p))

    def decision_function(self, X):
        return np.full(X.shape[0], self.logit)

    predict = decision_function


class _WithInterceptColumn:
    """Adapter: a model fitted on X without its leading intercept column, applied to full X."""

    def __init__(self, model):
        self.model = model

    def predict(self, X):
        return self.model.predict(X[:, 1:])

    def decision_function(self, X):
        return self.model.decision_function(X[:, 1:])


def _ddssp_model(task: str, enc: Any, options: dict):
    from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

    if task == "linear":
        opts = {k: v for k, v in options.items() if k != "R"}
        return DDSSPLinearRegression(encoding=enc, **opts)
    return DDSSPLogisticRegression(encoding=enc, **options)


def _release(
    codes: pd.DataFrame, schema: Any, eps: float, s: dict, target: str, rng: np.random.Generator, callback=None
):
    from ddssp.pipeline import AimOptions, ReadOptions, release

    aim = dict(s["aim"])
    t0 = time.perf_counter()
    rel = release(
        codes,
        schema,
        eps=eps,
        delta=s["delta"],
        target=target,
        seed=rng,
        read=ReadOptions(encoded=True),
        aim=AimOptions(**aim),
        progress=callback,
    )
    return rel, time.perf_counter() - t0


__all__ = ["run", "auc_score", "accuracy", "log_loss", "mse", "parse_spec", "load_data"]
