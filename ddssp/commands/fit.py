from ddssp.commands import comma_list, warn_stamp

HELP = "fit a DD-SSP linear or logistic regression from a release file (post-processing, no privacy cost)"

DESCRIPTION = (
    "Fit a regression from the released marginals alone (DD-SSP): Z^T Z is built from the release's "
    "one- and two-way marginals and the normal equations are solved (logistic: degree-2 Chebyshev "
    "approximation of the log-likelihood). Categorical features are reduced one-hot (first level dropped), "
    "numeric ones scalars rescaled to [-1, 1]; a linear target is rescaled to [-1, 1], a logistic target "
    "coded -1/+1 (its second level is the positive class)."
)


def add_arguments(p) -> None:
    p.add_argument("release", help="release file written by `ddssp release`")
    p.add_argument("--target", required=True, help="target column")
    p.add_argument("--model", choices=["linear", "logistic"], default="linear", help="regression model (default linear)")
    p.add_argument("--features", type=comma_list, help="comma-separated feature columns (default: all but the target)")
    p.add_argument("--categorical", type=comma_list, default=[], help="columns to encode one-hot (override the schema)")
    p.add_argument("--numeric", type=comma_list, default=[], help="columns to encode as a scalar in [-1, 1] (override)")
    p.add_argument("--ridge", type=float, default=0.0, help="ridge penalty added to X^T X (not on the intercept)")
    p.add_argument("--R", type=float, default=6.0, dest="R",
                   help="logistic only: Chebyshev approximation range [-R, R] (default 6)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _overrides(categorical: list[str], numeric: list[str]) -> dict[str, str]:
    from ddssp.errors import DDSSPError

    both = sorted(set(categorical) & set(numeric))
    if both:
        raise DDSSPError(f"column(s) {both} given both in --categorical and --numeric")
    out = {c: "onehot" for c in categorical}
    out.update({c: "numeric" for c in numeric})
    return out


def fit_release(source, args):
    """The fitted estimator for parsed ``args`` on a marginal source (separate for testing)."""
    from ddssp.errors import DDSSPError
    from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

    if args.ridge < 0 or args.ridge != args.ridge:
        raise DDSSPError(f"--ridge must be >= 0, got {args.ridge}")
    overrides = _overrides(args.categorical, args.numeric)
    if args.model == "linear":
        est = DDSSPLinearRegression(ridge=args.ridge, features=args.features, encoding=overrides)
    else:
        est = DDSSPLogisticRegression(R=args.R, ridge=args.ridge, features=args.features, encoding=overrides)
    return est.fit(source, target=args.target)


def result_dict(est, model: str) -> dict:
    out = {
        "model": model,
        "target": est.target_,
        "n": est.n_,
        "intercept": est.intercept_,
        "coef": {n: float(v) for n, v in zip(est.feature_names_in_, est.coef_)},
        "encoding": est.encoding_.describe(),
        "privacy": est.privacy_,
    }
    if model == "logistic":
        out["positive_class"] = est.target_labels_[1]
        out["chebyshev"] = {"R": est.R, "coef": [float(b) for b in est.chebyshev_coef_]}
    else:
        out["target_scale"] = "target level values rescaled linearly to [-1, 1]"
    return out


def run(args) -> int:
    import json

    from ddssp.release import Release

    source = Release.load(args.release)
    warn_stamp(source, args.release)
    est = fit_release(source, args)
    res = result_dict(est, args.model)
    res["schema_status"] = getattr(source, "schema_status", "declared")
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    priv = res["privacy"]
    cost = ", ".join(f"{k}={v:g}" for k, v in priv.items() if k != "post_processing")
    if not getattr(source, "schema_private", True):
        print(f"WARNING: {source.schema_status}")
    print(f"DD-SSP {args.model} regression of {res['target']!r} from {args.release}")
    print(f"  n (model total) = {res['n']:.1f}; release privacy: {cost or 'unknown'} (the fit is post-processing)")
    if args.model == "logistic":
        print(f"  positive class: {res['target']} = {res['positive_class']!r}; Chebyshev degree 2 on [-{est.R:g}, {est.R:g}]")
    else:
        print("  target rescaled to [-1, 1]; numeric features in [-1, 1]; categorical one-hot (first level dropped)")
    rows = [("intercept", res["intercept"])] + list(res["coef"].items())
    width = max(len(n) for n, _ in rows)
    print(f"  {'feature':<{width}}  {'coef':>12}")
    for n, v in rows:
        print(f"  {n:<{width}}  {(v if abs(v) >= 5e-7 else 0.0):>12.6f}")  # no "-0.000000"
    return 0
