"""Reproduction of the NAPP-ERM simulation (Li and Liu, Table 4): ``kind = "napp-erm-simulation"``.

Designs (spec ``[[designs]]``, one table per loss and n; p = 16, 8 non-zero coefficients):
  linear    x ~ U(-0.25, 0.25)^16, beta_nz = 1 - 0.8k/7 (k = 0..7), y = x.beta + N(0, 0.25^2) truncated to
            [-0.5, 0.5]
  poisson   x ~ U(-0.25, 0.25)^16, beta_nz = 4 - 0.5k/7, y ~ Poisson(exp(x.beta))
  logistic  x ~ U(-0.5, 0.5)^16,   beta_nz = 4 - 0.5k/7, y ~ Bernoulli(1 / (1 + exp(-x.beta)))
Each design declares the bounds the privacy guarantee rests on (``zeta1``, ``y_bound``, ``theta_bound``;
they are properties of the design, not of the drawn data) and the lasso weight ``Lambda`` (summed-loss
scale; a list gives one setting per value, column ``lambda``).

Methods (spec ``methods`` or ``ddssp bench --methods``):
  NAPP-ERM          lasso, max form (MOOR), plain DP term b^T theta
  DP-ERM            the same without MOOR (sum form: Kifer et al.'s objective, Claim 2)
  NAPP-VS, NAPP-VS+ sign-flipped DP term (VS+: half distribution), with MOOR
  NAPP-VS/noMOOR, NAPP-VS+/noMOOR   the same without MOOR
  NAPP-ERM/recycle  NAPP-ERM with one round of budget recycling, Algorithm 2 as printed: step 6 rescales
                    the first run's e* by r eps / (r eps + Delta_eps) (reported privacy is the paper's
                    accounting, eps; see the estimator's caveat)
  NAPP-ERM/recycle-fresh  the same with a fresh draw of b at budget r eps + Delta_eps
  MOOR(b=0), noMOOR(b=0)   non-private noise augmentation (Sec. 5.1, Fig. 3): DP noise off
                    (eps_internal = 1e12), Lambda0 = zeta3 / (2 (1-r) eps) of the row's eps
  lasso             non-private lasso at the same Lambda (FISTA), the reference
Every method of a trial sees the same training and test rows (paired comparison).

Seeds and noise: ``--seed`` (with the design, Lambda and trial) fixes the simulated rows and, through the
estimator's ``seed``, the augmented rows' regularisation draws (data-independent, not privacy noise). The
DP noise b comes from the secure source (OpenDP, no seed reaches it), so a rerun gives other numbers
(within the trials' standard errors); ``--resume`` keeps finished cells as they are in results.csv.

Lambda: the spec's ``Lambda`` is the code's scale (the target penalty Lambda ||theta||_1 on the summed loss).
The paper's Table 2 weight Lambda_paper |theta_j|^-1 realises 2 Lambda_paper ||theta||_1, so
Lambda_paper = Lambda / 2 (bridge: (2 - gamma) Lambda / 2); every output row carries both, columns
``lambda`` and ``lambda_paper``. Lambda0 = zeta3 / (2 (1 - r) eps) of the row's eps (the minimum the
guarantee needs; the estimator's default).

Iterations: ``max_iter`` (T, a cap; the paper used T = 80 on Adult) and ``tol`` (stop when the relative
change of the augmented objective falls below it; 0 = always T). Selection: ``selection_rule`` =
"sign" (default: a coefficient whose sign changed in the last ``sign_window`` = K iterations is set to 0,
the paper's Sec 3.5) or "threshold" (a magnitude rule).

A ``Lambda`` list traces the paper's Figure 4 ROC (one common sweep for every method): with
``plot = "roc"`` the runner also draws ``roc.png``, mean FPR vs mean TPR over the sweep, one panel per
(loss, n, eps), one line per method.

Metrics per fit: ``test_mse`` (linear, Poisson: mean squared error of the predicted mean on ``n_test``
fresh rows) or ``misclass`` (logistic); ``tpr`` / ``fpr`` of the selected support (``selected_``;
lasso: non-zero); ``n_iter`` (iterations run, private methods); ``l2_to_lasso`` (distance to the non-private lasso on the same rows); for private
methods ``retrieved_frac`` = Delta_eps / ((1 - r) eps) (Proposition 6, corrected) and ``dp_term_shift``
= |e* . theta| (above ~0.1 the augmented rows no longer realise the DP term b^T theta and the paper's
privacy argument does not cover the fit; see :func:`ddssp.estimators.napp_math.dp_shift`).

Output rows: method, loss, n, lambda, lambda_paper, epsilon, trial, metric, value, seconds.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ddssp.bench import BenchContext
from ddssp.errors import WorkloadError
from ddssp.estimators.napp_erm import NAPPERM, NAPPApproximationWarning
from ddssp.estimators.napp_math import declared_constants, penalized_fit
from ddssp.estimators.napp_options import Augmentation, Budget, DeclaredBounds, Penalty, Selection

P = 16
METHODS: dict[str, dict[str, Any]] = {
    "NAPP-ERM": dict(moor=True, selection=None),
    "DP-ERM": dict(moor=False, selection=None),
    "NAPP-VS": dict(moor=True, selection="vs"),
    "NAPP-VS+": dict(moor=True, selection="vs+"),
    "NAPP-VS/noMOOR": dict(moor=False, selection="vs"),
    "NAPP-VS+/noMOOR": dict(moor=False, selection="vs+"),
    "NAPP-ERM/recycle": dict(moor=True, selection=None, budget="recycle", recycle_noise="rescale"),
    "NAPP-ERM/recycle-fresh": dict(moor=True, selection=None, budget="recycle", recycle_noise="fresh"),
    "MOOR(b=0)": dict(moor=True, selection=None, nonprivate=True),
    "noMOOR(b=0)": dict(moor=False, selection=None, nonprivate=True),
    "lasso": {},
}
DEFAULT_METHODS = [
    "NAPP-ERM",
    "DP-ERM",
    "NAPP-VS",
    "NAPP-VS+",
    "NAPP-VS/noMOOR",
    "NAPP-VS+/noMOOR",
    "MOOR(b=0)",
    "noMOOR(b=0)",
    "lasso",
]
EPS_NONPRIVATE = 1e12


def true_beta(loss: str) -> np.ndarray:
    """The simulation's true coefficients: 8 non-zero (decreasing), the rest 0.

    Parameters
    ----------
    loss : str
        ``"linear"``, ``"poisson"`` or ``"logistic"``.

    Returns
    -------
    numpy.ndarray
    """
    k = np.arange(8)
    nz = 1 - 0.8 * k / 7 if loss == "linear" else 4 - 0.5 * k / 7
    return np.r_[nz, np.zeros(P - 8)]


def simulate(loss: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the paper's design for a loss (see the module docstring).

    Parameters
    ----------
    loss : str
        ``"linear"``, ``"poisson"`` or ``"logistic"``.
    n : int
        The number of rows.
    rng : numpy.random.Generator
        The random source.

    Returns
    -------
    X : numpy.ndarray
    y : numpy.ndarray
    """
    beta = true_beta(loss)
    half = 0.5 if loss == "logistic" else 0.25
    X = rng.uniform(-half, half, (n, P))
    eta = X @ beta
    if loss == "linear":
        return X, eta + stats.truncnorm.rvs(-2.0, 2.0, scale=0.25, size=n, random_state=rng)
    if loss == "poisson":
        return X, rng.poisson(np.exp(eta)).astype(float)
    return X, (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)


def _num(d: dict, key: str, default: Any = None, required: bool = False) -> Any:
    if key not in d:
        if required:
            raise WorkloadError(f"design {d.get('loss')!r}: missing key {key!r}")
        return default
    v = d[key]
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise WorkloadError(f"design key {key!r} must be a positive number, got {v!r}")
    return float(v)


def _designs(spec: dict) -> list[dict[str, Any]]:
    raw = spec.get("designs")
    if not isinstance(raw, list) or not raw:
        raise WorkloadError("spec needs at least one [[designs]] table (loss, n, Lambda, bounds)")
    out = []
    for d in raw:
        loss = d.get("loss")
        if loss not in ("linear", "logistic", "poisson"):
            raise WorkloadError(f"design loss must be linear, logistic or poisson, got {loss!r}")
        n = d.get("n")
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise WorkloadError(f"design {loss}: n must be an integer >= 2, got {n!r}")
        lams = d.get("Lambda")
        lams = lams if isinstance(lams, list) else [lams]
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in lams):
            raise WorkloadError(f"design {loss}: Lambda must be a non-negative number or a list of them")
        out.append(
            dict(
                loss=loss,
                n=n,
                lambdas=[float(v) for v in lams],
                zeta1=_num(d, "zeta1", 1.0),
                y_bound=_num(d, "y_bound"),
                theta_bound=_num(d, "theta_bound"),
            )
        )
    return out


def _support_rates(selected: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    tp = np.sum(selected & truth)
    fp = np.sum(selected & ~truth)
    return tp / truth.sum(), fp / (~truth).sum()


def _test_error(loss: str, theta: np.ndarray, Xt: np.ndarray, yt: np.ndarray) -> tuple[str, float]:
    eta = Xt @ theta
    if loss == "logistic":
        return "misclass", float(np.mean((eta > 0) != (yt > 0.5)))
    pred = np.exp(np.minimum(eta, 700.0)) if loss == "poisson" else eta
    return "test_mse", float(np.mean((yt - pred) ** 2))


def run(spec: dict, ctx: BenchContext) -> pd.DataFrame:
    """The NAPP-ERM simulation: each method on each design, Lambda, eps and trial.

    The runner of ``kind = "napp-erm-simulation"`` for ``ddssp bench`` (see the module docstring for the spec keys,
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
    designs = _designs(spec)
    eps_grid = ctx.setting(spec, "eps", ctx.eps, [0.4, 0.6, 0.8, 1.0], old="epsilons")
    if (
        not isinstance(eps_grid, list)
        or not eps_grid
        or any(isinstance(e, bool) or not isinstance(e, (int, float)) or not e > 0 for e in eps_grid)
    ):
        raise WorkloadError(f"eps must be a non-empty list of positive numbers, got {eps_grid!r}")
    trials = ctx.setting(spec, "trials", ctx.trials, 20)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise WorkloadError(f"trials must be an integer >= 1, got {trials!r}")
    methods = ctx.setting(spec, "methods", ctx.methods, DEFAULT_METHODS)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise WorkloadError(f"unknown methods {unknown}; known: {', '.join(METHODS)}")
    delta = spec.get("delta", 1e-4)
    delta = None if delta in (0, 0.0, None, "none") else float(delta)
    n_e = int(spec.get("n_e", 10000))
    r = float(spec.get("r", 0.5))
    max_iter = int(spec.get("max_iter", 80))
    tol = float(spec.get("tol", 0.0))
    rule = spec.get("selection_rule", "sign")
    if rule not in ("sign", "threshold"):
        raise WorkloadError(f"selection_rule must be 'sign' or 'threshold', got {rule!r}")
    K = spec.get("sign_window", 10)
    if isinstance(K, bool) or not isinstance(K, int) or K < 1:
        raise WorkloadError(f"sign_window must be an integer >= 1, got {K!r}")
    if not (tol >= 0 and max_iter >= 1):
        raise WorkloadError("tol must be >= 0 and max_iter >= 1")
    n_test = int(spec.get("n_test", 10000))
    base_seed = 0 if ctx.seed is None else int(ctx.seed)

    rows: list[dict[str, Any]] = []
    total = trials * sum(len(d["lambdas"]) for d in designs)
    bar = ctx.progress(total, "napp-erm trials")
    # repeats outermost: a run stopped part-way holds complete repeats of every design (each cell's
    # random streams depend only on (seed, design, Lambda, trial), so the order changes no number)
    cells = [
        (trial, di, li) for trial in range(trials) for di, d in enumerate(designs) for li in range(len(d["lambdas"]))
    ]
    for trial, di, li in cells:
        d = designs[di]
        loss, Lam = d["loss"], d["lambdas"][li]
        truth = true_beta(loss) != 0
        zeta3 = declared_constants(loss, d["zeta1"], d["y_bound"], d["theta_bound"])[1]
        done = ctx.cell({"loss": loss, "n": d["n"], "lambda": Lam, "trial": trial})
        if done is not None:  # finished in the run being resumed
            rows.extend(done)
            bar.update(1)
            continue
        cell_rows: list[dict[str, Any]] = []
        rng = np.random.default_rng([base_seed, di, li, trial])
        X, y = simulate(loss, d["n"], rng)
        Xt, yt = simulate(loss, n_test, rng)
        t0 = time.perf_counter()
        ref = penalized_fit(loss, X, y, Lam, "lasso")
        t_ref = time.perf_counter() - t0
        common = dict(loss=loss, n=d["n"], **{"lambda": Lam, "lambda_paper": Lam / 2.0}, trial=trial)
        for eps in eps_grid:
            for mi, name in enumerate(methods):
                cfg = METHODS[name]
                t0 = time.perf_counter()
                retrieved = n_iter = None
                if name == "lasso":
                    theta, sel, secs = ref, np.abs(ref) > 1e-8, t_ref
                else:
                    nonprivate = cfg.get("nonprivate")
                    floor = zeta3 / (2 * (1 - r) * float(eps)) if nonprivate else None
                    # the seed reaches only the augmented rows; b is drawn by the secure source
                    seed = int(
                        np.random.SeedSequence([base_seed, di, li, trial, mi, int(eps * 1e6)]).generate_state(1)[0]
                    )
                    est = NAPPERM(
                        loss=loss,
                        penalty=Penalty("lasso", Lambda=Lam),
                        eps=EPS_NONPRIVATE if nonprivate else float(eps),
                        delta=delta,
                        bounds=DeclaredBounds(zeta1=d["zeta1"], y_bound=d["y_bound"], theta_bound=d["theta_bound"]),
                        augmentation=Augmentation(n_e=n_e, Lambda0=floor, moor=cfg["moor"], max_iter=max_iter, tol=tol),
                        selection=Selection(cfg["selection"], rule=rule, sign_window=K),
                        budget=Budget(
                            r=r, retrieval=cfg.get("budget", "none"), recycle_noise=cfg.get("recycle_noise", "rescale")
                        ),
                        seed=seed,
                    )
                    with warnings.catch_warnings():  # recorded as the dp_term_shift metric
                        warnings.simplefilter("ignore", NAPPApproximationWarning)
                        m = est.fit(X, y)
                    theta, sel = m.coef_, m.selected_
                    n_iter = m.n_iter_
                    secs = time.perf_counter() - t0
                    if not cfg.get("nonprivate"):
                        retrieved = m.privacy_.details["retrievable_eps"] / ((1 - r) * float(eps))
                        shift = m.privacy_.details["dp_term_shift"]
                tpr, fpr = _support_rates(sel, truth)
                err_name, err = _test_error(loss, theta, Xt, yt)
                vals = {err_name: err, "tpr": tpr, "fpr": fpr, "l2_to_lasso": float(np.linalg.norm(theta - ref))}
                if n_iter is not None:
                    vals["n_iter"] = float(n_iter)
                if retrieved is not None:
                    vals["retrieved_frac"] = retrieved
                    vals["dp_term_shift"] = shift
                for metric, value in vals.items():
                    cell_rows.append(
                        dict(method=name, epsilon=float(eps), metric=metric, value=value, seconds=secs, **common)
                    )
        rows.extend(cell_rows)
        ctx.save_cell(cell_rows)
        bar.update(1)
    bar.close()
    cols = ["method", "loss", "n", "lambda", "lambda_paper", "epsilon", "trial", "metric", "value", "seconds"]
    df = pd.DataFrame(rows)[cols]
    if spec.get("plot") == "roc":
        plot_roc(df, ctx.outdir / "roc.png")
    return df


def roc_table(df: pd.DataFrame) -> pd.DataFrame:
    """Mean TPR and FPR per (loss, n, eps, method, Lambda) with the number of repeats.

    Parameters
    ----------
    df : pandas.DataFrame
        The results.

    Returns
    -------
    pandas.DataFrame
    """
    sub = df[df.metric.isin(["tpr", "fpr"])]
    t = sub.pivot_table(
        index=["loss", "n", "epsilon", "method", "lambda", "lambda_paper"],
        columns="metric",
        values="value",
        aggfunc="mean",
    ).reset_index()
    reps = sub[sub.metric == "tpr"].groupby(["loss", "n", "epsilon", "method", "lambda"]).size()
    t["repeats"] = reps.to_numpy()
    return t


def plot_roc(df: pd.DataFrame, path) -> bool:
    """The paper's Figure 4: mean (FPR, TPR) over the Lambda sweep, one panel per (loss, n, eps).

    Parameters
    ----------
    df : pandas.DataFrame
        The results.
    path : str or path-like
        The PNG to write.

    Returns
    -------
    bool
        False when matplotlib is missing or there is nothing to plot.
    """
    from ddssp.bench.plotting import pyplot

    plt = pyplot()
    if plt is None:  # pragma: no cover
        return False
    from ddssp.data.fileio import atomic_write

    t = roc_table(df)
    panels = list(t.groupby(["loss", "n", "epsilon"], sort=True))
    if not panels:
        return False
    # one row per loss, its (n, eps) settings side by side
    losses = list(dict.fromkeys(loss for (loss, _, _), _ in panels))
    by_loss = {loss: [(key, g) for key, g in panels if key[0] == loss] for loss in losses}
    cols = max(len(v) for v in by_loss.values())
    fig, axes = plt.subplots(len(losses), cols, figsize=(3.0 * cols, 2.9 * len(losses) + 1.2), squeeze=False)
    styles = {
        "NAPP-VS+": ("tab:red", "-"),
        "NAPP-VS": ("tab:blue", "-"),
        "NAPP-ERM": ("tab:green", "-"),
        "DP-ERM": ("tab:gray", "--"),
        "NAPP-VS+/noMOOR": ("tab:red", "--"),
        "NAPP-VS/noMOOR": ("tab:blue", "--"),
        "lasso": ("black", ":"),
    }
    labels = {
        "NAPP-VS+/noMOOR": "NAPP-VS+ (no MOOR)",
        "NAPP-VS/noMOOR": "NAPP-VS (no MOOR)",
        "lasso": "non-private lasso",
    }
    seen: dict[str, Any] = {}
    for row, loss in zip(axes, losses):
        for ax, ((_, n, eps), g) in zip(row, by_loss[loss]):
            for method, gm in g.groupby("method", sort=False):
                gm = gm.sort_values("lambda")
                color, ls = styles.get(method, (None, "-."))
                (line,) = ax.plot(
                    gm["fpr"], gm["tpr"], marker=".", color=color, linestyle=ls, label=labels.get(method, method)
                )
                seen.setdefault(labels.get(method, method), line)
            ax.plot([0, 1], [0, 1], color="0.8", lw=0.5)
            ax.set_xlim(-0.03, 1.03)
            ax.set_ylim(-0.03, 1.03)
            ax.set_title(f"{loss}, n = {n}, eps = {eps:g}", fontsize=9)
            ax.set_xlabel("false positive rate", fontsize=8)
            ax.set_ylabel("true positive rate", fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in row[len(by_loss[loss]) :]:
            ax.axis("off")
    reps = int(t["repeats"].min())
    fig.suptitle(
        "Variable selection by NAPP-ERM and baselines: ROC over one common Lambda sweep\n"
        f"(mean of {reps} repeat{'s' if reps != 1 else ''} per point; grey diagonal: random selection)",
        fontsize=10,
    )
    order = [
        "NAPP-ERM",
        "NAPP-VS",
        "NAPP-VS+",
        "NAPP-VS (no MOOR)",
        "NAPP-VS+ (no MOOR)",
        "DP-ERM",
        "non-private lasso",
    ]
    names = sorted(seen, key=lambda k: order.index(k) if k in order else len(order))
    fig.legend(
        [seen[k] for k in names],
        names,
        loc="lower center",
        ncol=min(len(names), 7 if cols >= 4 else 4),
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.55 / fig.get_figheight(), 1, 1))
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)
    return True
