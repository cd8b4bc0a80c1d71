"""The DD-SSP paper's experiment (Figure 3): DD-SSP vs AIM-Synth vs AdaSSP / ObjPert vs Public.

``run(spec, ctx)`` for ``ddssp bench`` with ``kind = "ddssp-paper"`` (spec keys: workloads/README.md).

Per (eps, trial):

- ONE private AIM release of the training table (``ddssp.release.release``, budget (eps, delta)) is
  shared by ``ddssp`` (DD-SSP regression from the release's marginals) and ``aim-synth`` (an ordinary,
  non-private fit on synthetic rows sampled from the same release);
- ``adassp`` (linear) / ``objpert`` (logistic) spend their own (eps, delta) directly on the training
  rows, with the row-norm bound of the encoding (paper Prop 3.1; ``Encoding.row_norm_bound()``) and the
  label bound of the encoded target (1: targets are coded in [-1, 1]) -- never bounds measured on data;
- ``public`` is the non-private fit on the real training rows (computed once; repeated per cell so it
  draws as a flat reference line).

Every method sees the same encoding (``ddssp.estimators.suffstats.Encoding``: reduced one-hot for categorical
columns, numeric columns rescaled to [-1, 1], an intercept; the linear target rescaled to [-1, 1], the
logistic target coded -1/+1). Metrics on the test rows: ``mse`` (linear; on the encoded target scale
[-1, 1]) or ``auc`` (logistic; Mann-Whitney rank formula). ``seconds`` is each method's wall time; for
``ddssp`` and ``aim-synth`` it includes the shared AIM release (the cost of running that method alone).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ddssp.errors import WorkloadError

METHODS_LINEAR = ("ddssp", "aim-synth", "adassp", "public")
METHODS_LOGISTIC = ("ddssp", "aim-synth", "objpert", "public")
RELEASE_METHODS = ("ddssp", "aim-synth")

SPEC_KEYS = {
    "name", "kind", "description", "train", "test", "test_rows", "domain", "schema", "categorical", "drop",
    "target", "task", "eps", "delta", "trials", "methods", "aim", "ddssp", "train_rows", "synth_rows",
    "public_ridge", "encoding", "plot_x", "plot_logx",
}
AIM_KEYS = {"max_model_size", "iters", "rounds", "workload", "max_cells"}
DDSSP_KEYS = {"ridge", "psd", "R"}


# ------------------------------------------------------------------------------------------ metrics
def auc_score(y: Any, score: Any) -> float:
    """Area under the ROC curve by the Mann-Whitney rank formula (ties count one half).

    ``y``: labels, the positive class being the larger value (0/1 or -1/+1). NaN when only one class."""
    y = np.asarray(y, dtype=float).reshape(-1)
    score = np.asarray(score, dtype=float).reshape(-1)
    if y.shape != score.shape:
        raise ValueError(f"y has {y.size} values, score has {score.size}")
    levels = np.unique(y)
    if levels.size != 2:
        return float("nan")
    pos = y == levels[1]
    n1 = int(pos.sum())
    n0 = y.size - n1
    ranks = stats.rankdata(score)  # average ranks for ties
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def mse(y: Any, pred: Any) -> float:
    y = np.asarray(y, dtype=float)
    pred = np.asarray(pred, dtype=float)
    return float(np.mean((y - pred) ** 2))


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
    """Validate a ddssp-paper spec (with the context's overrides) into plain settings."""
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise WorkloadError(f"unknown key(s) {unknown} in a ddssp-paper spec; known: {sorted(SPEC_KEYS)}")
    task = _require(spec, "task")
    if task not in ("linear", "logistic"):
        raise WorkloadError(f"task must be 'linear' or 'logistic', got {task!r}")
    target = _require(spec, "target")
    if not isinstance(target, str):
        raise WorkloadError("target must be a column name")
    eps = ctx.setting(spec, "eps", ctx.eps)
    if eps is None:
        raise WorkloadError("benchmark spec needs 'eps' (a list of epsilons)")
    if isinstance(eps, (int, float)):
        eps = [eps]
    try:
        eps = [float(e) for e in eps]
    except (TypeError, ValueError):
        raise WorkloadError(f"eps must be a list of numbers, got {eps!r}") from None
    if not eps or any(not (e > 0 and math.isfinite(e)) for e in eps):
        raise WorkloadError(f"every eps must be positive and finite, got {eps}")
    delta = float(_require(spec, "delta"))
    if not (0 < delta < 1):
        raise WorkloadError(f"delta must lie strictly between 0 and 1, got {delta}")
    trials = ctx.setting(spec, "trials", ctx.trials, 1)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise WorkloadError(f"trials must be a positive integer, got {trials!r}")
    allowed = METHODS_LINEAR if task == "linear" else METHODS_LOGISTIC
    methods = ctx.setting(spec, "methods", ctx.methods, list(allowed))
    if isinstance(methods, str):
        methods = [methods]
    bad = [m for m in methods if m not in allowed]
    if bad or not methods:
        raise WorkloadError(f"method(s) {bad} not available for task {task!r}; choose from {list(allowed)}")
    aim = dict(spec.get("aim", {}))
    bad_aim = sorted(set(aim) - AIM_KEYS)
    if bad_aim:
        raise WorkloadError(f"unknown [aim] key(s) {bad_aim}; known: {sorted(AIM_KEYS)}")
    dd = dict(spec.get("ddssp", {}))
    bad_dd = sorted(set(dd) - DDSSP_KEYS)
    if bad_dd:
        raise WorkloadError(f"unknown [ddssp] key(s) {bad_dd}; known: {sorted(DDSSP_KEYS)}")
    if ("domain" in spec) == ("schema" in spec):
        raise WorkloadError("give exactly one of 'domain' (a domain file) or 'schema' (a ddssp schema file)")
    if "schema" in spec and "categorical" in spec:
        raise WorkloadError("'categorical' applies to a domain file; a ddssp schema declares kinds itself")
    for key in ("train_rows", "test_rows", "synth_rows"):
        v = spec.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise WorkloadError(f"{key} must be a positive integer, got {v!r}")
    enc = spec.get("encoding", {})
    if not isinstance(enc, dict):
        raise WorkloadError("'encoding' must be a table {column = 'onehot' | 'numeric'}")
    return {
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
        "test_rows": spec.get("test_rows", 1000),
        "synth_rows": spec.get("synth_rows"),
        "public_ridge": float(spec.get("public_ridge", 1.0)),
        "encoding": enc,
    }


# ------------------------------------------------------------------------------------------- data
def load_data(spec: dict, settings: dict, ctx: Any, rng: np.random.Generator):
    """(schema, train codes, test codes) with dropped columns removed and row caps applied."""
    from ddssp.data.tables import read_table
    from ddssp.data import load_schema

    if "domain" in spec:
        schema = load_schema(ctx.data_path(spec["domain"]), categorical=settings["categorical"])
    else:
        schema = load_schema(ctx.data_path(spec["schema"]))
    train = read_table(ctx.data_path(_require(spec, "train")))
    test = read_table(ctx.data_path(spec["test"])) if "test" in spec else None
    drop = settings["drop"]
    missing = [c for c in drop if c not in schema]
    if missing:
        raise WorkloadError(f"drop: column(s) {missing} are not in the schema ({schema.names})")
    if settings["target"] in drop:
        raise WorkloadError(f"the target {settings['target']!r} is in 'drop'")
    keep = [c for c in schema.names if c not in drop]
    schema = schema.subset(keep)
    train_codes = schema.encode(train.drop(columns=[c for c in drop if c in train.columns]))
    if test is None:
        # hold out test_rows random training rows
        n_test = settings["test_rows"]
        if n_test >= len(train_codes):
            raise WorkloadError(f"test_rows = {n_test} leaves no training rows (the table has {len(train_codes)})")
        perm = rng.permutation(len(train_codes))
        test_codes = train_codes.iloc[perm[:n_test]].reset_index(drop=True)
        train_codes = train_codes.iloc[perm[n_test:]].reset_index(drop=True)
    else:
        test_codes = schema.encode(test.drop(columns=[c for c in drop if c in test.columns]))
        if len(test_codes) > settings["test_rows"]:
            idx = np.sort(rng.choice(len(test_codes), settings["test_rows"], replace=False))
            test_codes = test_codes.iloc[idx].reset_index(drop=True)
    if len(train_codes) > settings["train_rows"]:
        idx = np.sort(rng.choice(len(train_codes), settings["train_rows"], replace=False))
        train_codes = train_codes.iloc[idx].reset_index(drop=True)
    return schema, train_codes, test_codes


# ------------------------------------------------------------------------------------------ runner
def _seed_sequence(seed: int | None) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed)


def run(spec: dict, ctx: Any) -> pd.DataFrame:
    from ddssp.estimators.adassp import AdaSSP
    from ddssp.estimators.objpert import ObjectivePerturbation
    from ddssp.estimators.public import PublicLinearRegression, PublicLogisticRegression
    from ddssp.estimators.suffstats import Encoding

    s = parse_spec(spec, ctx)
    root = _seed_sequence(ctx.seed)
    data_ss, *cell_root = root.spawn(1 + len(s["eps"]) * s["trials"])
    schema, train_codes, test_codes = load_data(spec, s, ctx, np.random.default_rng(data_ss))
    task, target = s["task"], s["target"]
    enc = Encoding(schema, None, target, kind=task, overrides=s["encoding"] or None)
    X_train, y_train = enc.transform(train_codes), enc.target_vector(train_codes)
    X_test, y_test = enc.transform(test_codes), enc.target_vector(test_codes)
    x_bound, y_bound = enc.row_norm_bound(), enc.label_bound()
    ctx.log(
        f"{s['name']}: {len(train_codes)} train / {len(test_codes)} test rows, {X_train.shape[1]} encoded "
        f"features (||x|| <= {x_bound:.4g}), target {target!r} ({task}); methods {', '.join(s['methods'])}"
    )
    metric = "mse" if task == "linear" else "auc"

    def score(model) -> float:
        pred = model.decision_function(X_test) if task == "logistic" else model.predict(X_test)
        return mse(y_test, pred) if task == "linear" else auc_score(y_test, pred)

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
            rel_ss, synth_ss, base_ss = ss.spawn(3)
            done = ctx.cell({"epsilon": eps, "trial": trial})  # finished in the run being resumed
            if done is not None:
                rows.extend(done)
                bar.update(1)
                continue
            cell_rows: list[dict] = []

            def add(method: str, value: float, seconds: float) -> None:
                cell_rows.append(dict(method=method, epsilon=eps, trial=trial, metric=metric, value=value,
                                      seconds=seconds))

            rel, rel_seconds = None, 0.0
            if any(m in s["methods"] for m in RELEASE_METHODS):

                def show(p, eps=eps, trial=trial) -> None:
                    spent = 100.0 * p.rho_spent / p.rho_budget if p.rho_budget else 0.0
                    bar.set_postfix_str(f"eps={eps:g} trial={trial}: AIM round {p.round}, {spent:.0f}% of budget")

                rel, rel_seconds = _release(
                    train_codes, schema, eps, s, target, np.random.default_rng(rel_ss), callback=show
                )
            for method in s["methods"]:
                t0 = time.perf_counter()
                if method == "ddssp":
                    model = _ddssp_model(task, enc, s["ddssp"]).fit(rel, target=target)
                    add(method, score(model), rel_seconds + time.perf_counter() - t0)
                elif method == "aim-synth":
                    n_synth = s["synth_rows"] or max(int(round(rel.total)), 1)
                    synth = rel.synthesize_codes(n_synth, np.random.default_rng(synth_ss))
                    Xs, ys = enc.transform(synth), enc.target_vector(synth)
                    if task == "logistic" and np.unique(ys).size < 2:
                        add(method, 0.5, rel_seconds + time.perf_counter() - t0)  # constant classifier
                        continue
                    model = nonprivate(Xs, ys)
                    add(method, score(model), rel_seconds + time.perf_counter() - t0)
                elif method == "adassp":
                    model = AdaSSP(eps, s["delta"], x_bound, y_bound, seed=np.random.default_rng(base_ss))
                    model.fit(X_train, y_train)
                    add(method, score(model), time.perf_counter() - t0)
                elif method == "objpert":
                    model = ObjectivePerturbation(eps, s["delta"], x_bound, seed=np.random.default_rng(base_ss))
                    model.fit(X_train, y_train)
                    add(method, score(model), time.perf_counter() - t0)
                elif method == "public":
                    if public_result is None:
                        model = nonprivate(X_train, y_train)
                        public_result = (score(model), time.perf_counter() - t0)
                    add(method, *public_result)
            rows.extend(cell_rows)
            ctx.save_cell(cell_rows)
            bar.update(1)
    finally:
        bar.close()
    return pd.DataFrame(rows, columns=columns)


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


def _release(codes: pd.DataFrame, schema: Any, eps: float, s: dict, target: str, rng: np.random.Generator,
             callback=None):
    from ddssp.release import release

    aim = dict(s["aim"])
    t0 = time.perf_counter()
    rel = release(
        codes, schema, eps=eps, delta=s["delta"], target=target, seed=rng, encoded=True, callback=callback, **aim
    )
    return rel, time.perf_counter() - t0


__all__ = ["run", "auc_score", "mse", "parse_spec", "load_data"]
