"""How far the DP-noise bootstrap's re-estimation gets in a budget: CPU per replicate and coefficient spread.

For one release, draws ``--draws`` redraws of its measurements (:class:`~ddssp.estimators.bootstrap.MeasurementRefit`),
re-estimates the model from each under every schedule asked for (momentum rule x iterations, same
redraws, same starting step), fits DD-SSP linear and logistic regressions on each re-estimated model
and prints, per schedule, the CPU seconds per re-estimation, the mean final loss and the median over
coefficients of the root-mean-square deviation from the released fit, as a ratio to that of the
longest schedule (1.0: as spread as the long re-estimation; the bootstrap's DP standard errors scale
with it). Post-processing of the release only: no data, no privacy.

    python -m ddssp.bench.boot_convergence adult.release --linear hours-per-week --logistic 'income>50K'
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

#: default schedules: momentum rule and iteration budget; the last one is the reference
DEFAULT_SCHEDULES = "k3:150,heavy:150,heavy:600,heavy:1000,heavy:3000"


def parse_schedules(text: str) -> list[tuple[str, int]]:
    """``"rule:iters,..."`` as a list of (momentum rule, iterations).

    Parameters
    ----------
    text : str
        Comma-separated ``rule:iters`` items, rule ``heavy`` or ``k3``.

    Returns
    -------
    list of (str, int)

    Raises
    ------
    ValueError
        For a malformed item.
    """
    out = []
    for item in text.split(","):
        rule, _, iters = item.strip().partition(":")
        if rule not in ("heavy", "k3") or not iters.isdigit() or int(iters) < 1:
            raise ValueError(f"schedule {item!r}: expected heavy:N or k3:N with N >= 1")
        out.append((rule, int(iters)))
    return out


def measure(release_path: str, linear: str, logistic: str | None, schedules, draws: int, seed: int) -> list[dict]:
    """Re-estimate ``draws`` redraws under each schedule and score the fits (see the module docstring).

    Parameters
    ----------
    release_path : str
        The release file.
    linear : str
        Target of the linear fit.
    logistic : str or None
        Target of the logistic fit (a two-level column), or None.
    schedules : list of (str, int)
        Momentum rule and iterations; the last is the reference.
    draws : int
        Number of redraws.
    seed : int
        Seeds the redraws (post-processing randomness).

    Returns
    -------
    list of dict
        Per schedule: ``rule``, ``iters``, ``cpu_s`` (per re-estimation), ``loss`` (mean) and
        ``ratio_linear`` / ``ratio_logistic``.
    """
    from ddssp.estimators.bootstrap import MeasurementRefit, ModelSource
    from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
    from ddssp.releasefile import Release

    rel = Release.load(release_path)
    refit = MeasurementRefit(rel.model, list(rel.measurements))
    rng = np.random.default_rng(seed)
    redraws = [refit.draw(rng) for _ in range(int(draws))]
    alpha = refit.step_size(*redraws[0])

    def coefs(source) -> list[np.ndarray]:
        out = [np.asarray(DDSSPLinearRegression().fit(source, target=linear).coef_, float).ravel()]
        if logistic:
            out.append(np.asarray(DDSSPLogisticRegression().fit(source, target=logistic).coef_, float).ravel())
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = coefs(rel)
        rows = []
        for rule, iters in schedules:
            t = time.process_time()
            models, losses = [], []
            for ybar, total in redraws:
                model, info = refit.refit(ybar, total, iters=iters, alpha=alpha, momentum=rule)
                models.append(model)
                losses.append(info["loss"])
            cpu = (time.process_time() - t) / len(redraws)
            dev = [np.zeros_like(b) for b in base]
            for model in models:
                for j, c in enumerate(coefs(ModelSource(rel.schema, model))):
                    dev[j] += (c - base[j]) ** 2
            rms = [np.sqrt(d / len(models)) for d in dev]
            rows.append({"rule": rule, "iters": iters, "cpu_s": cpu, "loss": float(np.mean(losses)), "rms": rms})
    ref = rows[-1]["rms"]
    for r in rows:
        for j, name in enumerate(["ratio_linear", "ratio_logistic"][: len(ref)]):
            ok = ref[j] > 1e-12
            r[name] = float(np.median(r["rms"][j][ok] / ref[j][ok])) if ok.any() else float("nan")
        del r["rms"]
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the table for one release.

    Parameters
    ----------
    argv : list of str, optional
        The command line (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        The exit status.
    """
    ap = argparse.ArgumentParser(prog="python -m ddssp.bench.boot_convergence", description=__doc__.split("\n\n")[0])
    ap.add_argument("release")
    ap.add_argument("--linear", required=True, help="target of the linear fit")
    ap.add_argument("--logistic", default=None, help="target of the logistic fit (two levels)")
    ap.add_argument("--schedules", default=DEFAULT_SCHEDULES, help="rule:iters,... (the last is the reference)")
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    try:
        schedules = parse_schedules(args.schedules)
    except ValueError as e:
        ap.error(str(e))
    rows = measure(args.release, args.linear, args.logistic, schedules, args.draws, args.seed)
    print(f"{'rule':<6} {'iters':>6} {'CPU s/rep':>10} {'mean loss':>10} {'linear':>7} {'logistic':>9}")
    for r in rows:
        print(
            f"{r['rule']:<6} {r['iters']:>6} {r['cpu_s']:>10.2f} {r['loss']:>10.1f} "
            f"{r['ratio_linear']:>7.2f} {r.get('ratio_logistic', float('nan')):>9.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
