import contextlib

from ddssp.commands import (
    comma_list,
    intervals_group,
    model_group,
    output_group,
    stamped_output,
    warn_stamp,
    warn_weak,
)

HELP = "fit a DD-SSP linear or logistic regression from a release file (post-processing, no privacy cost)"

DESCRIPTION = (
    "Fit a regression from the released marginals alone (DD-SSP): Z^T Z is built from the release's "
    "one- and two-way marginals and the normal equations are solved (logistic: degree-2 Chebyshev "
    "approximation of the log-likelihood). Categorical features are reduced one-hot (first level dropped), "
    "numeric ones scalars rescaled to [-1, 1]; a linear target is rescaled to [-1, 1], a logistic target "
    "coded -1/+1 (its second level is the positive class, or the level --positive names; a target with more "
    "levels is fitted as --positive LEVEL against all its other levels)."
)


EXAMPLES = """
    ddssp fit adult.release --target income --model logistic
    ddssp fit adult.release --target income --model logistic --ci 0.95 -o coef.csv
    ddssp fit adult.release --target education --model logistic --positive Bachelors
"""


def add_model_arguments(p) -> None:
    """Add the regression's options, shared by ``fit`` and ``predict``.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    model_group(p).add_argument("--target", required=True, help="target column")
    model_group(p).add_argument(
        "--model", choices=["linear", "logistic"], default="linear", help="regression model (default linear)"
    )
    model_group(p).add_argument(
        "--features", type=comma_list, help="comma-separated feature columns (default: all but the target)"
    )
    model_group(p).add_argument(
        "--categorical", type=comma_list, default=[], help="columns to encode one-hot (override the schema)"
    )
    model_group(p).add_argument(
        "--numeric", type=comma_list, default=[], help="columns to encode as a scalar in [-1, 1] (override)"
    )
    model_group(p).add_argument(
        "--ridge",
        type=_ridge_arg,
        default=None,
        help="'floor' (the default): lift only the directions of X^T X whose eigenvalue is below the "
        "release's own noise in that direction (from its public sigmas; none on a well-measured release); by "
        "default --ci widens each interval by the floor's estimated pull, so it covers the unpenalised "
        "coefficient (give --ridge floor for intervals at the floor held fixed); 'auto': one ridge "
        "that lifts the smallest eigenvalue to the noise's norm; or a ridge penalty >= 0 added to X^T X, not on "
        "the intercept (0: plain least squares)",
    )
    model_group(p).add_argument(
        "--R",
        type=float,
        default=6.0,
        dest="R",
        help="logistic only: Chebyshev approximation range [-R, R] (default 6)",
    )
    model_group(p).add_argument(
        "--positive",
        default=None,
        metavar="LEVEL",
        help="logistic only: the target level that is the positive class; a target with more than two "
        "levels is fitted as LEVEL against all its other levels (one vs the rest)",
    )
    model_group(p).add_argument(
        "--keep-missing-target",
        action="store_true",
        help="keep the rows whose target is missing (coded as the centre of its range, or between the "
        "two classes for logistic); by default they are left out of the fit",
    )


def add_arguments(p) -> None:
    """Add the options of ``ddssp fit`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument("release", help="release file written by `ddssp release`")
    add_model_arguments(p)
    output_group(p).add_argument("--json", action="store_true", help="print the result as JSON")
    intervals_group(p).add_argument(
        "--ci",
        type=float,
        default=None,
        metavar="LEVEL",
        help="confidence level, e.g. 0.95: add standard errors and intervals (DP noise of the "
        "release's measurements by the delta method, kept nonnegative, + sampling variance, + for pairs the release did "
        "not measure the model's imputation error, see --unmeasured)",
    )
    intervals_group(p).add_argument(
        "--boot",
        type=int,
        default=100,
        help="with --ci: bootstrap replicates (default 100; run for --dp-method bootstrap or --boot-method mechanism)",
    )
    intervals_group(p).add_argument(
        "--dp-method",
        choices=["projected", "delta", "bootstrap"],
        default=None,
        dest="dp_method",
        help="with --ci: DP part of the measured pairs' intervals: 'projected' (default: the "
        "measurements' noise redrawn, kept nonnegative as the model's marginals are, and propagated "
        "to first order through the solve, no refits), 'delta' (the same propagation in closed form, "
        "without positivity: wider on sparse cells) or 'bootstrap' (parametric bootstrap: --boot "
        "re-estimations of the model)",
    )
    intervals_group(p).add_argument(
        "--boot-method",
        choices=["measurements", "mechanism"],
        default=None,
        dest="boot_method",
        help="with --ci: 'measurements' redraws the release's measurements (AIM's selection held "
        "fixed) and adds a sandwich sampling variance; 'mechanism' simulates the whole release "
        "(rows drawn from the model, the release's AIM re-run with simulated noise), so the "
        "randomness of AIM's selection is included; ~4x the CPU (default: measurements)",
    )
    intervals_group(p).add_argument(
        "--interval",
        choices=["normal", "bc-normal", "basic", "percentile"],
        default=None,
        help="with --ci: interval construction (normal: estimate +- z stderr; bc-normal: centre "
        "corrected by the bootstrap bias; basic / percentile: replicate quantiles, mechanism only)",
    )
    intervals_group(p).add_argument(
        "--unmeasured",
        choices=["model", "infinite", "keep"],
        default=None,
        help="with --ci: interval of a coefficient whose (feature, target) pair the release never "
        "measured (the model imputes it): 'model' (default: the delta method plus an error scale for "
        "the model's imputed pairs taken from the release itself, marked basis 'model'; it also "
        "widens other coefficients that an imputed feature pair moves) or 'infinite' (unbounded: the "
        "release holds no measurement of the pair); 'keep' = 'model'",
    )
    intervals_group(p).add_argument(
        "--boot-iters",
        type=int,
        default=None,
        dest="boot_iters",
        help="with --ci: re-estimation iterations per replicate (default 150)",
    )
    intervals_group(p).add_argument(
        "--no-dp-noise",
        action="store_true",
        dest="no_dp_noise",
        help="with --ci: sampling variance only (intervals that ignore the DP noise; not recommended)",
    )
    intervals_group(p).add_argument(
        "--seed",
        type=int,
        default=None,
        help="with --ci: seed of the bootstrap (post-processing randomness, not DP noise)",
    )
    output_group(p).add_argument(
        "-o",
        "--output",
        default=None,
        metavar="COEF.csv",
        help="also write the coefficient table as CSV (refused if it exists, unless --force)",
    )
    output_group(p).add_argument("--force", action="store_true", help="replace an existing -o file")
    output_group(p).add_argument(
        "--allow-insecure",
        action="store_true",
        help="write -o from an insecure-seed (NOT PRIVATE) release, with a .NOT-PRIVATE infix",
    )


def _ridge_arg(text: str):
    """``--ridge``: 'floor', 'auto' or a number (the estimator checks that it is >= 0)."""
    import argparse

    if text.strip().lower() in ("floor", "auto"):
        return text.strip().lower()
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'floor', 'auto' or a number >= 0, got {text!r}") from None


def _overrides(categorical: list[str], numeric: list[str]) -> dict[str, str]:
    from ddssp.errors import DDSSPError

    both = sorted(set(categorical) & set(numeric))
    if both:
        raise DDSSPError(f"column(s) {both} given both in --categorical and --numeric")
    out = {c: "onehot" for c in categorical}
    out.update({c: "numeric" for c in numeric})
    return out


#: the command-line flag of each estimator / interval parameter, for error messages
_FLAGS = {
    "ridge": "--ridge",
    "R": "--R",
    "ci": "--ci",
    "boot": "--boot",
    "seed": "--seed",
    "boot_iters": "--boot-iters",
    "bootstrap": "--boot-method",
    "interval": "--interval",
    "unmeasured": "--unmeasured",
    "dp_method": "--dp-method",
    "features": "--features",
    "positive": "--positive",
}


def build_estimator(args):
    """The (unfitted) DD-SSP estimator the parsed arguments describe.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``fit`` (or ``predict``, which has no interval options).

    Returns
    -------
    DDSSPLinearRegression or DDSSPLogisticRegression

    Raises
    ------
    DDSSPError
        For invalid interval options (the error names the flag), or ``--positive`` with a linear model.
    """
    from ddssp.errors import DDSSPError
    from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
    from ddssp.estimators.ddssp_intervals import IntervalOptions

    common = dict(
        ridge=args.ridge,
        features=args.features,
        encoding=_overrides(args.categorical, args.numeric),
        missing_target="keep" if getattr(args, "keep_missing_target", False) else "drop",
        ci=getattr(args, "ci", None),
    )
    if common["ci"] is not None:
        given = {
            "boot": args.boot,
            "seed": args.seed,
            "dp_noise": not getattr(args, "no_dp_noise", False),
            "boot_iters": args.boot_iters,
            "bootstrap": getattr(args, "boot_method", None),
            "interval": getattr(args, "interval", None),
            "unmeasured": getattr(args, "unmeasured", None),
            "dp_method": getattr(args, "dp_method", None),
        }
        with _flag_errors():
            common["intervals"] = IntervalOptions(**{k: v for k, v in given.items() if v is not None})
    positive = getattr(args, "positive", None)
    if args.model == "linear":
        if positive is not None:
            raise DDSSPError("--positive applies to --model logistic only")
        return DDSSPLinearRegression(**common)
    return DDSSPLogisticRegression(R=args.R, positive=positive, **common)


@contextlib.contextmanager
def _flag_errors():
    """A parameter error re-worded with the command-line flag it came from."""
    from ddssp.errors import DDSSPError
    from ddssp.estimators.params import InvalidParameterError

    try:
        yield
    except InvalidParameterError as err:
        message = str(err)
        if err.parameter not in _FLAGS or not message.startswith(err.parameter):
            raise
        raise DDSSPError(_FLAGS[err.parameter] + message[len(err.parameter) :]) from None


def fit_estimator(source, args):
    """The DD-SSP estimator for parsed arguments, fitted on a marginal source (separate for testing).

    Parameters
    ----------
    source : Release or marginal source
        What to fit on (post-processing).
    args : argparse.Namespace
        The parsed options of ``fit`` (or ``predict``).

    Returns
    -------
    DDSSPLinearRegression or DDSSPLogisticRegression

    Raises
    ------
    DDSSPError
        For invalid option values (naming the flag), or a source the fit cannot use.
    """
    with _flag_errors():
        return build_estimator(args).fit(source, target=args.target)


def _finite_or_none(v) -> float | None:
    """JSON has no infinity: an unbounded interval end is null."""
    import math

    return float(v) if math.isfinite(float(v)) else None


def result_dict(est, model: str) -> dict:
    """Everything the fit says, as JSON.

    The coefficients in data units and on the encoded scale, and for every feature and the target the
    public schema entry (levels, bin edges and the representative values a bin stands for) that a
    prediction needs.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        The fitted estimator.
    model : str
        ``"linear"`` or ``"logistic"``.

    Returns
    -------
    dict
    """
    tab = est.coef_table()
    enc = est.encoding_
    out = {
        "model": model,
        "target": est.target_,
        "n": est.n_,
        "intercept": est.intercept_data_,
        "coef": {n: float(v) for n, v in zip(est.feature_names_in_, est.coef_data_)},
        "intercept_scaled": est.intercept_,
        "coef_scaled": {n: float(v) for n, v in zip(est.feature_names_in_, est.coef_)},
        "coefficients": [
            {
                "name": str(name),
                "coef": float(r["coef"]),
                "unit": r["unit"],
                "coef_scaled": float(r["coef_scaled"]),
                "pair_measured": bool(r["measured"]),
                "level_share": _finite_or_none(r["level_share"]),
                **{k: _finite_or_none(r[k]) for k in ("stderr", "ci_low", "ci_high") if k in tab.columns},
                **({"basis": str(r["basis"])} if "basis" in tab.columns else {}),
            }
            for name, r in tab.iterrows()
        ],
        "encoding": enc.describe(),
        "columns": {c: _column_entry(est.schema_.column(c)) for c in [*enc.features, enc.target]},
        "how_to_predict": (
            "map each raw value to its column's level (categorical) or to the representative value of "
            "its bin (numeric: 'values' of the column, bins by 'edges'); the prediction is intercept + "
            "sum of coef x value for numeric features + coef of each 'column=level' term that matches"
            + (
                f"; that is the log-odds of {est.target_} = {est.positive_!r}"
                + (" against all its other levels" if est.encoding_.one_vs_rest else "")
                if model == "logistic"
                else " (target units)"
            )
        ),
        "privacy": est.privacy_.to_dict(entries=False),
        "ridge": {k: _plain(v) for k, v in est.ridge_info_.items()},
    }
    if hasattr(est, "ci_table_"):
        out["ci"] = dict(est.ci_info_)
        out["coefficients_scaled"] = [
            {
                "name": str(r.name),
                "estimate": float(r.estimate),
                "stderr": _finite_or_none(r.stderr),
                "ci_low": _finite_or_none(r.ci_low),
                "ci_high": _finite_or_none(r.ci_high),
                "stderr_dp": _finite_or_none(r.stderr_dp),
                "stderr_model": _finite_or_none(r.stderr_model),
                "stderr_sampling": _finite_or_none(r.stderr_sampling),
                "pair_measured": bool(r.pair_measured),
                "basis": str(r.basis),
            }
            for r in est.conf_int().itertuples(index=False)
        ]
    if model == "logistic":
        out["positive_class"] = est.positive_
        out["negative_levels"] = list(est.negative_levels_)
        out["one_vs_rest"] = bool(est.encoding_.one_vs_rest)
        out["chebyshev"] = {"R": est.R, "coef": [float(b) for b in est.chebyshev_coef_]}
    else:
        a, _, c, d, _ = est._units()
        out["target_scale"] = {
            "scaled": "y_scaled = (y - centre) / half_range, in [-1, 1]",
            "centre": d,
            "half_range": c,
        }
    return out


def _column_entry(col) -> dict:
    """The column's public schema entry, with the representative value of every level or bin spelled
    out (a binned column's defaults are not stored in its schema entry)."""
    d = dict(col.to_dict())
    vals = getattr(col, "values", None)
    if vals is not None:
        d["values"] = [None if v != v else float(v) for v in vals]
    return d


def coefficient_frame(est):
    """The coefficient table as a DataFrame.

    Parameters
    ----------
    est : DDSSPLinearRegression or DDSSPLogisticRegression
        The fitted estimator.

    Returns
    -------
    pandas.DataFrame
        name, coef (data units), unit, coef_scaled, pair_measured, level_share (one-hot terms), and
        with intervals stderr, ci_low, ci_high (data units).
    """
    tab = est.coef_table().rename(columns={"measured": "pair_measured"}).reset_index()
    return tab


def _num(v: float) -> float:
    return v if abs(v) >= 5e-7 else 0.0  # no "-0.000000"


def run(args) -> int:
    """Run ``ddssp fit``: a DD-SSP regression from a release (post-processing).

    Printed, or as JSON, and optionally written as CSV.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    int
        The exit status, 0 (failures raise).

    Raises
    ------
    DDSSPError
        For bad input or a failed step: the CLI prints it as one line and exits non-zero.
    """
    import json

    from ddssp.data.fileio import check_output_path, write_table
    from ddssp.releasefile import Release

    out_path = None
    if args.output is not None:
        out_path = check_output_path(args.output, force=args.force, inputs=[args.release])
    source = Release.load(args.release)
    warn_stamp(source, args.release)
    if out_path is not None:
        out_path = stamped_output(source, out_path, args.allow_insecure, force=args.force, inputs=[args.release])
    est = fit_estimator(source, args)
    used = [est.target_, *[c for c in getattr(est, "feature_names_in_", None) or () if c in source.schema.names]]
    warn_weak(source, args.release, columns=used, what="the model")
    res = result_dict(est, args.model)
    res["schema_status"] = getattr(source, "schema_status", "declared")
    res["stamp"] = getattr(source, "stamp", None)
    if out_path is not None:
        write_table(coefficient_frame(est), out_path)  # level labels a spreadsheet would run get a leading '

    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    from ddssp.data.safetext import terminal_text

    def say(line: str) -> None:  # column names and labels come from the release: no control characters
        print(terminal_text(line))

    priv = res["privacy"]
    cost = ", ".join(f"{k}={priv[k]:g}" for k in ("eps", "delta", "rho") if priv.get(k) is not None)
    if not getattr(source, "schema_private", True):
        say(f"WARNING: {source.schema_status}")
    say(f"DD-SSP {args.model} regression of {res['target']!r} from {args.release}")
    say(f"  n (model total) = {res['n']:.1f}; release privacy: {cost or 'unknown'} (the fit is post-processing)")
    if res["ridge"]["rule"] in ("auto", "floor") or res["ridge"]["ridge"]:
        say(_ridge_line(res["ridge"]))
    share = getattr(est, "target_unobserved_share_", None)
    if share is not None and not getattr(args, "keep_missing_target", False):
        say(f"  rows with a missing target ({share:.1%} of the release) are left out; --keep-missing-target keeps them")
    if args.model == "logistic":
        neg = res["negative_levels"]
        rest = ", ".join(repr(v) for v in neg) if len(neg) <= 3 else f"its {len(neg)} other levels"
        say(
            f"  positive class: {res['target']} = {res['positive_class']!r} (vs {rest}); coefficients in "
            f"log-odds; Chebyshev degree 2 on [-{est.R:g}, {est.R:g}]"
        )
    else:
        say(f"  coefficients in the units of {res['target']!r} per unit of each numeric feature")
    ci = "ci" in res
    if ci:
        info = res["ci"]
        say(_ci_line(info))
    rows = res["coefficients"]
    if args.model == "logistic":  # the intercept's unit names the positive class, said in the header above
        rows = [{**rows[0], "unit": "log-odds"}, *rows[1:]]
    width = max(len(r["name"]) for r in rows + [{"name": "feature"}])
    uw = max(len(r["unit"]) for r in rows + [{"unit": "unit"}])
    head = f"  {'feature':<{width}}  {'coef':>12}  {'unit':<{uw}}  {'share':>7}"
    if ci:
        lo, hi = f"[{(1 - info['level']) / 2:.3g}", f"{(1 + info['level']) / 2:.3g}]"
        head += f"  {'std err':>10}  {lo:>11}  {hi:>11}  {'basis':<8}"
    say(head + f"  {'scaled':>10}")

    def end(v, measured):
        if v is None:  # unbounded for an unmeasured pair; n/a for a coefficient that is not estimable
            return f"{'unbounded' if not measured else 'n/a':>11}"
        return f"{_num(v):>11.6g}"

    for r in rows:
        share = "" if r.get("level_share") is None else f"{r['level_share']:.3f}"  # one-hot terms
        line = f"  {r['name']:<{width}}  {_num(r['coef']):>12.6g}  {r['unit']:<{uw}}  {share:>7}"
        if ci:
            se = "" if r.get("stderr") is None else f"{r['stderr']:.4g}"
            ok = r["pair_measured"]
            line += f"  {se:>10}  {end(r.get('ci_low'), ok)}  {end(r.get('ci_high'), ok)}  {r.get('basis', ''):<8}"
        line += f"  {_num(r['coef_scaled']):>10.4f}"
        say(line + ("" if r["pair_measured"] else "  *"))
    if any(r.get("level_share") is not None for r in rows):
        say(
            "  share: the release's share of the fitted rows at that level; a level that holds almost "
            "none rests on noise, whatever its coefficient"
        )
    if ci and info.get("floor_pull"):
        say(
            "  interval: each side also holds the noise floor's estimated pull on the coefficient "
            "(conf_int()'s pull), so it can be wider than the std err alone gives"
        )
    if not all(r["pair_measured"] for r in rows):
        say(
            "  * no released marginal holds this feature together with the target: the model imputed the "
            "pair (often as independence, coefficient 0); `ddssp release --target Y` measures every pair with Y"
            + (
                "; its interval is unbounded (--unmeasured model gives one from the model and an error scale "
                "for its imputations)"
                if ci and not any(r.get("basis") == "model" for r in rows)
                else ""
            )
        )
        if ci and any(r.get("basis") == "model" for r in rows):
            say(
                "  basis 'model': the interval adds to the measurements' noise an error scale for the model's "
                "imputation of the pair, estimated from the release (half the measured pairs' typical dependence; "
                "wider than a measured pair's); --unmeasured infinite reports (-inf, inf) for them instead"
            )
    if ci and any(r.get("basis") == "empty" for r in rows):
        say(
            "  basis 'empty': the release holds no rows at this level (or the feature is 0 on every row), "
            "so its coefficient is not estimable: the 0 shown is a placeholder, with no standard error "
            "or interval (n/a)"
        )
    if out_path is not None:
        say(f"  coefficient table written to {out_path}")
    return 0


def _plain(v):
    """A JSON value for an entry of ``ridge_info_``: counts stay whole numbers, other numbers are floats."""
    import numpy as np

    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return float(v) if isinstance(v, (float, np.floating)) else v


def _ridge_line(info: dict) -> str:
    """The printed line that says which ridge the fit used (the fit JSON's ``ridge`` entry)."""
    if info.get("rule") == "floor":
        if not info["directions"]:
            return (
                f"  noise floor: none of the {info['of']} directions of X^T X is below the release's noise in it "
                "(plain least squares)"
            )
        return (
            f"  noise floor: {info['directions']} of {info['of']} directions of X^T X lifted to the release's noise "
            f"in them (largest lift {info['largest_lift']:.4g}; smallest eigenvalue {info['min_eig']:.4g} -> "
            f"{info['min_eig_after']:.4g}); the other directions are the plain fit; --ridge 0 gives it in all"
        )
    if info.get("rule") != "auto":
        return f"  ridge = {info['ridge']:g}"
    return (
        f"  ridge = {info['ridge']:.4g} (auto: noise bound {info['noise_bound']:.4g} on X^T X from the release's "
        f"sigmas, smallest eigenvalue {info['min_eig']:.4g} -> {info['min_eig_after']:.4g})"
    )


def _ci_line(info: dict) -> str:
    """The printed line that says how the intervals were made (the fit JSON's ``ci`` entry)."""
    parts = []
    if info.get("bootstrap") == "mechanism":
        what = "rows + AIM re-run" if info["dp_noise"] else "rows only; DP noise NOT included (--no-dp-noise)"
        parts.append(f"mechanism bootstrap, {info['boot']} simulated releases of {info['rows']} rows ({what})")
    else:
        if info["dp_noise"] and info.get("dp_method") in ("delta", "projected"):
            parts.append(
                "DP noise: delta method over the release's measurements"
                + (", kept nonnegative" if info["dp_method"] == "projected" else "")
            )
            if info.get("model_based"):
                parts.append(
                    f"{info['model_based']} model-based interval(s): imputation error variance per cell "
                    f"{info['model_error_kappa']:.3g} x its count under independence"
                )
        elif info["dp_noise"]:
            parts.append(f"DP noise: parametric bootstrap, {info['boot']} replicates of the release's measurements")
        else:
            parts.append("DP noise: NOT included (--no-dp-noise)")
        parts.append(f"sampling: {info['sampling']} variance at n = model total")
    if info.get("floor_directions") and info.get("floor_pull"):
        parts.append(
            f"around the fit with its noise floor ({info['floor_directions']} direction(s)), each widened by the "
            "release's estimate of the floor's pull (conf_int's pull), so they cover the unpenalised coefficients"
        )
    elif info.get("floor_directions"):
        parts.append(
            f"around the fit with its noise floor ({info['floor_directions']} direction(s)) held fixed: they leave "
            "out its shrinkage toward 0 in those directions (not intervals for the unpenalised coefficients)"
        )
    if info.get("ridge"):
        parts.append(
            f"around the fit at ridge {info['ridge']:.4g}, the ridge held fixed: they leave out its shrinkage "
            "toward 0 (not intervals for the unpenalised coefficients)"
        )
    return (
        f"  {info['level']:.0%} confidence intervals ({info.get('interval', 'normal')}); "
        + "; ".join(parts)
        + f"; {info['seconds']:.1f} s"
    )
