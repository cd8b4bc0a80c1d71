"""Coverage of DD-SSP confidence intervals: ``kind = "ci-coverage"``.

A known discrete population (a small Bayesian network over integer codes, written out as its full
joint probability table), many samples of ``rows`` rows from it, one AIM release per (eps, trial),
and DD-SSP linear and logistic fits with confidence intervals from each release
(:class:`ddssp.estimators.ddssp.DDSSPLinearRegression` with ``ci=0.95``).

The "true" value an interval should cover is the DD-SSP target on the population: the coefficients
DD-SSP computes from the *exact population marginals* (infinite data, no noise) with the same
encoding. For the linear model that is the population least-squares coefficient of the encoded target
on the encoded features; for the logistic model it is c times the population least-squares
coefficient of the -1/+1 target, c = -b1 / (2 b2) from the degree-2 Chebyshev approximation -- the
estimand of DD-SSP logistic, not the population logistic-regression coefficient. Exact marginals
carry no noise, so ``ridge="floor"`` lifts nothing: the truth is *unpenalised*; a release's intervals
hold its floor P fixed and aim at the truth at P (:func:`penalised_truth`; ``dp+sampling-vs-penalised``).

Population (columns, all codes): x1 numeric 5 levels, x2 numeric 4 levels (depends on x1), x3
categorical 3 levels (depends on x1), x4 binary categorical (depends on x3); y numeric 6 levels
(a discretised noisy linear function of the features) and z binary (logistic in the features).
The linear fit regresses y on x1..x4 and the logistic fit z on x1..x4 (the other target is not a
feature). Both fits share one release per trial.

Rows (method = ``<model>/<variant>``), metrics ``cover90`` and ``cover95`` (fraction of the trial's
coefficients whose interval covers the population value) and ``width95`` (mean 95% width). Variants:

- ``fit --ci``'s default with the sandwich sampling variance: ``dp+sampling`` (the DP part by the
  projected delta method, :func:`~ddssp.estimators.ddssp_delta.projected_dp_draws`, plus the model's imputation error of the
  unmeasured (feature, target) pairs, :func:`~ddssp.estimators.ddssp_delta.model_error_weight`:
  the model-based part), ``boot-dp+sampling`` (the fixed-selection bootstrap's DP part for every
  coefficient, ``dp_method="bootstrap"``, :mod:`ddssp.estimators.bootstrap`), ``sampling-only``
  (without the DP part), ``dp-only-vs-data-fit`` (a diagnostic: the DP part alone against the
  sample's own exact-marginal DD-SSP fit); ``<variant>/measured`` and ``<variant>/model`` rows
  count, per trial, the coefficients of each basis (``n``) and how many of their 95% intervals
  covered (``covered95``), so coverage by basis is pooled over trials;
- mechanism bootstrap (:mod:`ddssp.estimators.mechanism_bootstrap`; rows drawn from the released
  model and the release's AIM re-run, ``mechanism_boot`` replicates): ``mech-<interval>`` for each of
  ``mechanism_intervals`` (normal, bc-normal, basic, percentile), and ``mech-sampling-only-<interval>``
  (the same drawn rows refitted on their exact marginals: no DP part);
- ``...+unmeasured-inf``: as the variant, with the interval of every coefficient whose (feature,
  target) pair is in no measured clique replaced by the whole line (the release holds nothing on the
  pair: the model imputes it from conditional independences).

Per-coefficient rows also hold ``se_dp``, ``se_model``, ``se_sampling`` and ``sens_e_t`` /
``sens_e_o`` (the imputation-error sensitivity at unit kappa of the unmeasured pairs with / without
the target), and ``release`` rows ``kappa_median`` (:func:`~ddssp.estimators.ddssp_delta.dependence_strength`),
``sigma_max`` and ``sigma_min``, so another share of kappa can be evaluated from results.csv.

With ``data`` (a CSV of codes with ``domain``, ``categorical``, ``targets`` and optionally
``features``) the population is that table: each trial resamples ``rows`` rows (default: all) with
replacement, and the truth is DD-SSP on the table's exact marginals (workloads/ci-coverage-adult.toml).

``release_target`` declares the release's target (``ddssp release --target``: AIM measures that
column with every other first; workloads/ci-coverage-adult-target.toml). Per-coefficient rows also
hold ``err_data_fit`` (estimate - the sample's own exact-marginal DD-SSP fit: the DP part's error)
and ``level_count`` (the release's count of a one-hot coefficient's level; NaN otherwise); all of
them ``err_penalised`` (against the truth at the fit's P) and ``shrink`` (conf_int's shrinkage).
``compare_ridge = r`` also fits each release at ridge r: rows ``<model>/ridge<r>``; per coefficient ``err_``,
``err_data_fit_``, ``se_``, ``se_dp_``, ``se_sampling_`` and ``se_model_`` with the suffix ``ridge<r>``.

Also ``release/cliques_measured``, ``<model>/estimate`` (``abs_err``, ``pair_measured``: the fraction of
coefficients whose pair was measured), ``cost`` (``cpu_fixed_bootstrap``, ``cpu_mechanism_bootstrap``:
CPU seconds per release, shared by both models) and per-coefficient rows ``<model>/coef/<name>``
(``err`` = estimate - population value, ``pair_measured``, ``se_fixed``, ``se_mech``,
``se_mech_sampling``, ``bias_mech`` and replicate quantiles ``qXXX_mech`` minus the estimate) from
which other intervals can be evaluated afterwards. ``seconds`` is CPU time (time.process_time).

Spec keys: ``rows`` (default 20000), ``eps`` (list), ``delta`` (default 1e-9), ``trials``, ``boot``
(fixed-selection replicates, default 50), ``boot_iters`` (mirror-descent iterations per replicate),
``sampling_rows`` (rows drawn from the model for the sandwich, default 50000), ``boot_compare_trials``
(only trials below it run the bootstrap for every coefficient, ``boot-dp+sampling``, and the
bootstrap itself when every pair was measured; default: all), ``mechanism_boot``
(default 0 = not run), ``mechanism_intervals``, ``compare_ridge`` (a number >= 0, default none),
``[aim]`` (passed to :func:`ddssp.release`).
Cells are (trial, eps) with trials outermost and a random stream per cell, so a stopped run keeps
equal trials per eps and ``--resume`` continues it.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from ddssp.bench import BenchContext
from ddssp.bench.ci_coverage_plot import VARIANT_STYLES, plot_coverage  # noqa: F401 (the plot's styles, re-exported)
from ddssp.errors import WorkloadError

FEATURES = ["x1", "x2", "x3", "x4"]
DOMAIN = {"x1": 5, "x2": 4, "x3": 3, "x4": 2, "y": 6, "z": 2}
CATEGORICAL = ["x3", "x4", "z"]


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def population() -> np.ndarray:
    """The population's joint probability table, axes in DOMAIN order (x1, x2, x3, x4, y, z).

    Returns
    -------
    numpy.ndarray
        Sums to 1.
    """
    p1 = np.array([0.15, 0.25, 0.3, 0.2, 0.1])
    x1 = np.arange(5)
    p2 = _softmax(-0.5 * (np.arange(4)[None, :] - 0.7 * x1[:, None]) ** 2)  # x2 | x1
    p3 = _softmax(np.array([[0.0, 0.3 * a, -0.4 * a] for a in x1]))  # x3 | x1
    p4 = np.array([[0.7, 0.3], [0.4, 0.6], [0.55, 0.45]])  # x4 | x3
    grid = np.meshgrid(np.arange(5), np.arange(4), np.arange(3), np.arange(2), indexing="ij")
    g1, g2, g3, g4 = grid
    # y | x: discretised N(lin, 1.2^2) onto 0..5
    lin = 1.0 + 0.6 * g1 + 0.4 * g2 + np.array([0.0, 0.8, -0.5])[g3] + 0.7 * g4
    edges = np.arange(6)[None] + 0.5
    cdf = norm.cdf((edges - lin[..., None]) / 1.2)  # P(Y <= k)
    cdf[..., -1] = 1.0
    py = np.diff(np.concatenate([np.zeros(lin.shape + (1,)), cdf], axis=-1), axis=-1)
    # z | x: logistic
    eta = -1.5 + 0.5 * g1 - 0.3 * g2 + np.array([0.0, 1.0, 0.4])[g3] - 0.8 * g4
    pz1 = 1.0 / (1.0 + np.exp(-eta))
    pz = np.stack([1 - pz1, pz1], axis=-1)
    px = p1[:, None, None, None] * p2[:, :, None, None] * p3[:, None, :, None] * p4[None, None, :, :]
    joint = px[..., None, None] * py[..., :, None] * pz[..., None, :]
    return joint / joint.sum()


class _PopulationMarginals:
    """Marginal source of the population table (counts scaled to ``total``)."""

    def __init__(self, joint: np.ndarray, schema: Any, total: float = 1.0):
        self.joint = joint
        self.schema = schema
        self.total = float(total)
        self.names = list(DOMAIN)

    def marginal(self, cols):
        cols = (cols,) if isinstance(cols, str) else tuple(cols)
        axes = tuple(i for i, c in enumerate(self.names) if c not in cols)
        m = self.joint.sum(axis=axes) * self.total
        kept = [c for c in self.names if c in cols]
        return np.transpose(m, [kept.index(c) for c in cols])


def schema():
    """The population's schema (integer codes; x3, x4 and z categorical).

    Returns
    -------
    Schema
    """
    from ddssp.data.schema import Schema

    return Schema.from_domain(dict(DOMAIN), categorical=CATEGORICAL)


def sample_codes(joint: np.ndarray, rows: int, rng: np.random.Generator) -> pd.DataFrame:
    """Rows drawn from the population (integer codes).

    Parameters
    ----------
    joint : numpy.ndarray
        The joint probability table (:func:`population`).
    rows : int
        The number of rows.
    rng : numpy.random.Generator
        The random source.

    Returns
    -------
    pandas.DataFrame
        Columns in DOMAIN order.
    """
    idx = rng.choice(joint.size, size=rows, p=joint.ravel())
    cols = np.unravel_index(idx, joint.shape)
    return pd.DataFrame({c: v.astype(np.int64) for c, v in zip(DOMAIN, cols)})


def estimators():
    """The two DD-SSP fits of the benchmark, unfitted, with their targets.

    Returns
    -------
    dict
        ``{"linear": (DDSSPLinearRegression, "y"), "logistic": (DDSSPLogisticRegression, "z")}``.
    """
    from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

    return {
        "linear": (DDSSPLinearRegression(features=FEATURES), "y"),
        "logistic": (DDSSPLogisticRegression(features=FEATURES), "z"),
    }


def true_coefficients(joint: np.ndarray, sch: Any) -> dict[str, np.ndarray]:
    """DD-SSP coefficients (intercept first) from the exact population marginals.

    Parameters
    ----------
    joint : numpy.ndarray
        The joint probability table.
    sch : Schema
        The population's schema.

    Returns
    -------
    dict
        ``{model: coefficients}``.
    """
    src = _PopulationMarginals(joint, sch, total=1e6)
    out = {}
    for model, (est, target) in estimators().items():
        est.fit(src, target)
        out[model] = np.concatenate([[est.intercept_], est.coef_])
    return out


class _Population:
    """The benchmark's population: the built-in joint table, or a real table (spec ``data``).

    With ``data`` (a CSV of integer codes, with ``domain`` and ``categorical`` as for a release)
    the table itself is the population: each trial resamples ``rows`` rows (default: as many as the
    table has) with replacement, and the "true" coefficients are DD-SSP on the table's exact
    marginals. ``targets`` names the target of each model (``{linear = "...", logistic = "..."}``);
    the features are every other column but the targets, or ``features``: one list for both models,
    or a table ``{model = [...]}`` where ``"others"`` stands for every column but that model's target."""

    def __init__(self, spec: dict, ctx: BenchContext):
        self.table = None
        if "data" not in spec:
            self.joint = population()
            self.schema = schema()
            self.rows = 20000
            self.targets = {"linear": "y", "logistic": "z"}
            self.features = {"linear": list(FEATURES), "logistic": list(FEATURES)}
            return
        from ddssp.data import load_schema
        from ddssp.data.tables import read_table

        if "domain" not in spec:
            raise WorkloadError("ci-coverage: a 'data' table needs its 'domain' file")
        self.schema = load_schema(ctx.data_path(spec["domain"]), categorical=list(spec.get("categorical", [])))
        self.table = self.schema.encode(read_table(ctx.data_path(spec["data"])))
        self.rows = len(self.table)
        self.targets = dict(spec.get("targets", {}))
        if not self.targets or set(self.targets) - {"linear", "logistic"}:
            raise WorkloadError("ci-coverage: give targets = {linear = COLUMN, logistic = COLUMN} (one or both)")
        names = list(self.schema.names)
        feats = spec.get("features", [c for c in names if c not in self.targets.values()])
        # one list for both models, or {model: list, or "others" for every column but its own target}
        if not isinstance(feats, dict):
            feats = {m: feats for m in self.targets}
        self.features = {
            m: [c for c in names if c != t] if feats.get(m) == "others" else list(feats.get(m, []))
            for m, t in self.targets.items()
        }
        if not all(self.features.values()):
            raise WorkloadError("ci-coverage: features must name columns for every model (a list, or 'others')")

    def sample(self, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        if self.table is None:
            return sample_codes(self.joint, rows, rng)
        idx = rng.integers(0, len(self.table), size=rows)
        return self.table.iloc[idx].reset_index(drop=True)

    def estimators(self) -> dict:
        from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

        cls = {"linear": DDSSPLinearRegression, "logistic": DDSSPLogisticRegression}
        return {m: (cls[m](features=list(self.features[m])), t) for m, t in self.targets.items()}

    def exact(self, rows: int) -> Any:
        """The population's exact marginals, counts scaled to ``rows`` (a release's total)."""
        if self.table is None:
            return _PopulationMarginals(self.joint, self.schema, total=float(rows))
        from ddssp.estimators.suffstats import ExactMarginals

        return ExactMarginals(self.table, self.schema)

    def truth(self) -> dict[str, np.ndarray]:
        if self.table is None:
            return true_coefficients(self.joint, self.schema)
        src = self.exact(self.rows)
        out = {}
        for model, (est, target) in self.estimators().items():
            est.fit(src, target)
            out[model] = np.concatenate([[est.intercept_], est.coef_])
        return out


def penalised_truth(est: Any, exact: Any, target: str) -> np.ndarray:
    """DD-SSP on the population's marginals with the penalty ``est`` solved with held fixed.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        Fitted on a release (its intervals aim at this coefficient).
    exact : marginal source
        The population's exact marginals at the release's total.
    target : str
        The fit's target.

    Returns
    -------
    numpy.ndarray
        The coefficients, intercept first.
    """
    from ddssp.estimators.ddssp_ridge import point_copy

    ref = point_copy(est, est.encoding_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(exact, target)
    return np.concatenate([[ref.intercept_], ref.coef_])


def _covers(est_v, lo, hi, ref) -> float:
    return float(np.mean((lo <= ref) & (ref <= hi)))


def _level_counts(est: Any, rel: Any) -> np.ndarray:
    """The release's noisy count of the level behind each one-hot coefficient (intercept first; NaN
    for the intercept and numeric features): how rare the level is, to read coverage by level size."""
    enc = est.encoding_
    out = [np.nan] if enc.intercept else []
    for a in enc.attributes:
        if not a.width:
            continue
        if a.how != "onehot":
            out.extend([np.nan] * a.width)
            continue
        out.extend(np.asarray(a.matrix, dtype=float) @ np.asarray(rel.marginal([a.column]), dtype=float))
    return np.asarray(out, dtype=float)


def _per_coef(add, model, names, values: dict) -> None:
    """Per-coefficient rows (method ``<model>/coef/<name>``): the error against the population value and
    the bootstrap summaries, so any other interval can be evaluated from results.csv afterwards."""
    for j, name in enumerate(names):
        for metric, arr in values.items():
            add(f"{model}/coef/{name}", metric, float(arr[j]), 0.0)


def run(spec: dict, ctx: BenchContext) -> pd.DataFrame:
    """Coverage and width of DD-SSP confidence intervals over many releases of samples of a known population.

    The runner of ``kind = "ci-coverage"`` for ``ddssp bench`` (see the module docstring for the spec keys,
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
    from ddssp.dp import make_rng
    from ddssp.estimators.bootstrap import bootstrap_models
    from ddssp.estimators.ddssp_delta import dependence_strength, independence_counts, unmeasured_sensitivity
    from ddssp.estimators.ddssp_intervals import IntervalOptions
    from ddssp.estimators.mechanism_bootstrap import bootstrap_interval, mechanism_replicates
    from ddssp.estimators.suffstats import ExactMarginals
    from ddssp.pipeline import AimOptions, ReadOptions, release

    eps_list = ctx.setting(spec, "eps", ctx.eps)
    if not eps_list:
        raise WorkloadError("ci-coverage: give eps (a list)")
    trials = int(ctx.setting(spec, "trials", ctx.trials, 1))
    delta = float(spec.get("delta", 1e-9))
    boot = int(spec.get("boot", 50))
    mech_boot = int(spec.get("mechanism_boot", 0))
    compare = spec.get("boot_compare_trials")  # trials that also run the bootstrap for every coefficient
    intervals = list(spec.get("mechanism_intervals", ["normal", "bc-normal", "basic", "percentile"]))
    boot_iters = spec.get("boot_iters")
    sampling_rows = int(spec.get("sampling_rows", 50000))
    aim = dict(spec.get("aim", {}))
    pop = _Population(spec, ctx)
    sch = pop.schema
    release_target = spec.get("release_target")  # the release's declared target (ddssp release --target)
    if release_target is not None and release_target not in sch.names:
        raise WorkloadError(f"ci-coverage: release_target {release_target!r} is not a column of the population")
    rows = int(spec.get("rows", pop.rows))
    truth = pop.truth()
    exact_pop = pop.exact(rows)  # for the truth at each fit's own penalty
    compare_ridge = spec.get("compare_ridge")  # also fit each release at this ridge (e.g. 0.0)
    if compare_ridge is not None and not (isinstance(compare_ridge, (int, float)) and compare_ridge >= 0):
        raise WorkloadError(f"ci-coverage: compare_ridge must be a number >= 0, got {compare_ridge!r}")
    ctx.log("population DD-SSP targets: " + "; ".join(f"{m}: {np.round(v, 4).tolist()}" for m, v in truth.items()))
    # trials outermost, so a run stopped early has the same number of releases at every eps
    cells = [(t, e) for t in range(trials) for e in eps_list]
    columns = ["method", "epsilon", "trial", "metric", "value", "seconds"]
    out: list[dict] = []
    bar = ctx.progress(len(cells), "ci-coverage")
    for trial, eps in cells:
        done = ctx.cell({"epsilon": float(eps), "trial": trial})
        if done is not None:
            out.extend(done)
            bar.update(1)
            continue
        cell: list[dict] = []

        def add(method, metric, value, seconds):
            cell.append(
                {
                    "method": method,
                    "epsilon": float(eps),
                    "trial": trial,
                    "metric": metric,
                    "value": float(value),
                    "seconds": float(seconds),
                }
            )

        # the cell's own streams (base seed, eps, trial): a resumed or extended run skips cells exactly
        ss = np.random.SeedSequence([int(ctx.seed or 0), int(round(float(eps) * 1e6)), int(trial)])
        data_ss, rel_ss, boot_ss, mech_ss = ss.spawn(4)
        codes = pop.sample(rows, np.random.default_rng(data_ss))
        t0 = time.process_time()
        rel = release(
            codes,
            sch,
            eps=float(eps),
            delta=delta,
            target=release_target,
            seed=np.random.default_rng(rel_ss),
            read=ReadOptions(encoded=True),
            aim=AimOptions(**aim),
        )
        t_rel = time.process_time() - t0
        pairs = {frozenset(m.clique) for m in rel.measurements if len(m.clique) >= 2}
        add("release", "cliques_measured", len(pairs), t_rel)
        measured = [set(m.clique) for m in rel.measurements]
        brng = make_rng(np.random.default_rng(boot_ss))
        # the fixed-selection bootstrap, shared by both fits, for the bootstrap-for-every-coefficient
        # comparison
        boot_all = compare is None or trial < int(compare)
        sigmas = [float(m.sigma) for m in rel.measurements]
        add("release", "sigma_max", max(sigmas), 0.0)
        add("release", "sigma_min", min(sigmas), 0.0)
        add("release", "kappa_median", dependence_strength(rel, list(rel.measurements)), 0.0)
        reps, t_fixed = None, 0.0
        if boot_all:
            t1 = time.process_time()
            reps = bootstrap_models(rel, boot, brng, boot_iters)
            t_fixed = time.process_time() - t1
            add("cost", "cpu_fixed_bootstrap", t_fixed, t_fixed)
        mreps = None
        if mech_boot:
            t1 = time.process_time()
            mreps = mechanism_replicates(rel, mech_boot, np.random.default_rng(mech_ss))
            t_mech = time.process_time() - t1
            add("cost", "cpu_mechanism_bootstrap", t_mech, t_mech)
        for model, (est, target) in pop.estimators().items():
            truth_v = truth[model]
            exact = est.fit(ExactMarginals(codes, sch), target)  # the data's own DD-SSP fit (diagnostic)
            exact_v = np.concatenate([[exact.intercept_], exact.coef_])
            t1 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                options = IntervalOptions(
                    boot=boot,
                    seed=brng,
                    boot_iters=boot_iters,
                    sampling_rows=sampling_rows,
                    unmeasured="model",
                )
                est.set_params(ci=0.95, intervals=options).fit(rel, target, replicates=reps)
            secs = time.process_time() - t1 + (t_fixed / 2 if not est.pair_measured_.all() else 0.0)
            tab = est.conf_int()
            est_v = tab["estimate"].to_numpy()
            add(f"{model}/estimate", "abs_err", float(np.mean(np.abs(est_v - truth_v))), 0.0)
            # is each coefficient's (feature, target) pair inside a measured clique? (intercept: yes)
            ident = np.array(
                [n == "intercept" or any({n.split("=")[0], target} <= m for m in measured) for n in tab["name"]]
            )
            add(f"{model}/estimate", "pair_measured", ident.mean(), 0.0)
            pen_v = penalised_truth(est, exact_pop, target)  # what intervals at the fit's fixed penalty cover
            # the imputation-error sensitivity at unit kappa (any share of kappa can be evaluated afterwards)
            sens_e = unmeasured_sensitivity(est, list(rel.measurements), lambda S: independence_counts(rel, S))
            per_coef = {
                "err": est_v - truth_v,
                "err_data_fit": est_v - exact_v,
                "level_count": _level_counts(est, rel),
                "pair_measured": ident.astype(float),
                "se_fixed": tab["stderr"].to_numpy(),
                "se_dp": tab["stderr_dp"].to_numpy(),
                "se_model": tab["stderr_model"].to_numpy(),
                "se_sampling": tab["stderr_sampling"].to_numpy(),
                "sens_e_t": sens_e[0],
                "sens_e_o": sens_e[1],
                "err_penalised": est_v - pen_v,
                "shrink": tab["shrinkage"].to_numpy(),
            }
            variants = [
                ("dp+sampling", tab["stderr"].to_numpy(), truth_v, secs),
                ("dp+sampling-vs-penalised", tab["stderr"].to_numpy(), pen_v, secs),
                ("sampling-only", tab["stderr_sampling"].to_numpy(), truth_v, secs),
                ("dp-only-vs-data-fit", tab["stderr_dp"].to_numpy(), exact_v, secs),
            ]
            if boot_all:  # the same fit with the bootstrap's DP part for every coefficient
                t2 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    boot_opts = dataclasses.replace(options, dp_method="bootstrap")
                    boot_tab = est.set_params(intervals=boot_opts).fit(rel, target, replicates=reps).conf_int()
                secs_boot = time.process_time() - t2 + t_fixed / 2
                per_coef["se_boot"] = boot_tab["stderr"].to_numpy()
                variants.insert(1, ("boot-dp+sampling", boot_tab["stderr"].to_numpy(), truth_v, secs_boot))
            centres = {}
            if compare_ridge is not None:  # the same release fitted at a fixed ridge (0: no floor)
                t2, name = time.process_time(), f"ridge{float(compare_ridge):g}"
                other = type(est)(**{**est.get_params(), "ridge": float(compare_ridge), "intervals": options})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    other_tab = other.fit(rel, target, replicates=reps).conf_int()
                centres[name] = other_tab["estimate"].to_numpy()
                parts = {
                    "se": "stderr",
                    "se_dp": "stderr_dp",
                    "se_sampling": "stderr_sampling",
                    "se_model": "stderr_model",
                }
                per_coef.update({f"{k}_{name}": other_tab[col].to_numpy() for k, col in parts.items()})
                per_coef.update(
                    {f"err_{name}": centres[name] - truth_v, f"err_data_fit_{name}": centres[name] - exact_v}
                )
                variants.append((name, other_tab["stderr"].to_numpy(), truth_v, time.process_time() - t2))
            # the default fit widens its intervals by the floor's estimated pull (conf_int's "pull"):
            # the analyst's interval is estimate -+ (z se + |pull|)
            pulled = np.abs(tab["pull"].to_numpy())
            per_coef["pull"] = tab["pull"].to_numpy()
            for variant, se, ref, s_ in variants:
                est_v = centres.get(variant, tab["estimate"].to_numpy())
                w = pulled if variant == "dp+sampling" else 0.0
                for level, name in ((0.90, "cover90"), (0.95, "cover95")):
                    z = norm.ppf(0.5 + level / 2)
                    add(f"{model}/{variant}", name, _covers(est_v, est_v - z * se - w, est_v + z * se + w, ref), s_)
                add(f"{model}/{variant}", "width95", np.mean(2 * (norm.ppf(0.975) * se + w)), s_)
                if variant in ("dp+sampling", "boot-dp+sampling", "dp+sampling-vs-penalised") or variant in centres:
                    # coverage by basis, as counts (pooled over trials afterwards): the measured pairs'
                    # intervals and the model-based ones of unmeasured pairs
                    z = norm.ppf(0.975)
                    hit = (est_v - z * se - w <= ref) & (ref <= est_v + z * se + w)
                    estimable = np.isfinite(se)  # an empty level's coefficient has no interval
                    for basis, sel in (("measured", ident & estimable), ("model", ~ident & estimable)):
                        add(f"{model}/{variant}/{basis}", "covered95", float(np.sum(hit[sel])), s_)
                        add(f"{model}/{variant}/{basis}", "n", float(np.sum(sel)), s_)
                    # unmeasured pairs flagged: their interval is the whole line (unmeasured="infinite")
                    for level, name in ((0.90, "cover90"), (0.95, "cover95")):
                        z = norm.ppf(0.5 + level / 2)
                        lo = np.where(ident, est_v - z * se - w, -np.inf)
                        hi = np.where(ident, est_v + z * se + w, np.inf)
                        add(f"{model}/{variant}+unmeasured-inf", name, _covers(est_v, lo, hi, ref), s_)
            est_v = tab["estimate"].to_numpy()
            if mreps is None:
                _per_coef(add, model, tab["name"], per_coef)
                continue
            t1 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.set_params(intervals=IntervalOptions(bootstrap="mechanism")).fit(rel, target, replicates=mreps)
            secs = time.process_time() - t1 + t_mech / 2
            full = est.boot_coefs_
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mech_sampling = IntervalOptions(bootstrap="mechanism", dp_noise=False)
                est.set_params(intervals=mech_sampling).fit(rel, target, replicates=mreps)
            samp = est.boot_coefs_
            for part, rep in (("mech", full), ("mech-sampling-only", samp)):
                for how in intervals:
                    for level, name in ((0.90, "cover90"), (0.95, "cover95")):
                        lo, hi = bootstrap_interval(est_v, rep, level, how)
                        add(f"{model}/{part}-{how}", name, _covers(est_v, lo, hi, truth_v), secs)
                        if part == "mech" and how in ("normal", "bc-normal"):
                            lo, hi = np.where(ident, lo, -np.inf), np.where(ident, hi, np.inf)
                            add(f"{model}/{part}-{how}+unmeasured-inf", name, _covers(est_v, lo, hi, truth_v), secs)
                    lo, hi = bootstrap_interval(est_v, rep, 0.95, how)
                    add(f"{model}/{part}-{how}", "width95", np.mean(hi - lo), secs)
            per_coef.update(
                se_mech=full.std(axis=0, ddof=1),
                bias_mech=full.mean(axis=0) - est_v,
                se_mech_sampling=samp.std(axis=0, ddof=1),
                **{
                    f"q{int(q * 1000):03d}_mech": np.quantile(full, q, axis=0) - est_v
                    for q in (0.025, 0.05, 0.95, 0.975)
                },
            )
            _per_coef(add, model, tab["name"], per_coef)
        bar.update(1)
        out.extend(cell)
        ctx.save_cell(cell)
    bar.close()
    res = pd.DataFrame(out, columns=columns)
    plot_coverage(res, ctx.outdir / "coverage.png", trials)
    return res
