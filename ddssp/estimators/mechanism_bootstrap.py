"""Mechanism parametric bootstrap of a release: simulate the WHOLE release from the released model.

Ferrando, Wang and Sheldon, "Parametric Bootstrap for Differentially Private Confidence Intervals"
(AISTATS 2022): treat the released model as the population, and repeat what produced the release on
data drawn from it. Per replicate:

1. draw N-hat rows from the released model (N-hat = the model's noisy total): the sampling noise;
2. re-run the release's AIM on them with the release's own recorded settings (zCDP budget, workload,
   rounds T, model-size cap, iteration settings from ``release.info["settings"]``): the DP noise of
   the measurements AND the randomness of AIM's selection (which cliques get measured, and so which
   pairs the model imputes from conditional independences);
3. refit the regression on the replicate's model (and, for the "sampling only" part, on the exact
   marginals of the drawn rows).

Why not the fixed-selection bootstrap (:mod:`ddssp.estimators.bootstrap`) alone: it redraws the
measurements of the cliques AIM chose and so misses the selection, which matters most at small eps,
where AIM measures only part of the pairs. Sampling is inside the simulation, so no separate
sandwich term is added.

Why it is an option, not the default: on the coverage benchmark (docs, benchmark page) its intervals
cover about as well as the fixed-selection bootstrap's (better only for logistic at the smallest
eps), at a few times its CPU: selection is not what the intervals miss; imputation of unmeasured
pairs is (docs, confidence intervals page).

The bootstrap's "truth" is the fit on the released model's own marginals, which is exactly the point
estimate ``fit(release)``: the replicates' offset from it estimates the estimator's bias (AIM's
imputation shrinks coefficients of unmeasured pairs), which the ``basic`` and ``bc-normal``
intervals subtract (:func:`bootstrap_interval`).

THE NOISE HERE IS NOT DP NOISE. The simulated AIM runs draw their Gaussian and selection noise from
:class:`ddssp.dp.noise.InsecureSeededNoise` seeded from the caller's numpy Generator. That source is
"insecure" because a seed lets anyone subtract the noise from a PUBLISHED count; here nothing is
published and nothing reads the data: the simulated counts are of rows drawn from the public released
model, so the whole bootstrap is post-processing of the release (no privacy spent), and it has to be
reproducible from ``seed``. Each simulated run charges its own throw-away :class:`~ddssp.dp.Ledger`
inside :func:`~ddssp.marginals.aim.run_aim` (AIM's bookkeeping of the simulated budget); the release's
ledger is never touched and the secure sampler is never called (both tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import DDSSPError

#: AIM settings that :func:`aim_settings` reads from ``release.info["settings"]`` and passes to run_aim.
_RUN_AIM_KEYS = ("max_model_size", "iters", "final_iters", "final_tol", "engine", "fit", "min_rounds_left")


def aim_settings(source: Any) -> dict[str, Any]:
    """run_aim keyword arguments that reproduce the release's AIM.

    Releases record these in ``info["settings"]`` (public: they are the mechanism's parameters). A
    release without them (older files) falls back to AIM's defaults and the rho of its non-discovery
    ledger entries.

    Parameters
    ----------
    source : Release
        The release (its model, workload, ledger and ``info``).

    Returns
    -------
    dict
        ``rho`` (the zCDP budget AIM spent, i.e. without schema discovery), ``rounds``, and the
        recorded iteration / model-size settings.

    Raises
    ------
    DDSSPError
        When ``source`` is not a release or records no AIM budget.
    """
    model = getattr(source, "model", None)
    ledger = getattr(source, "ledger", None)
    if model is None or ledger is None or getattr(source, "workload", None) is None:
        raise DDSSPError(
            "the mechanism bootstrap needs a release (its model, workload and ledger); "
            "use dp_noise=False or bootstrap='measurements' for other sources"
        )
    rec = dict((getattr(source, "info", None) or {}).get("settings", {}) or {})
    out: dict[str, Any] = {}
    rho = rec.get("rho")
    if rho is None:
        rho = math.fsum(e.rho for e in ledger.entries if not e.is_discovery)
    out["rho"] = float(rho)
    if not out["rho"] > 0:
        raise DDSSPError("the release records no AIM budget (rho); the mechanism cannot be simulated")
    if rec.get("rounds_T") is not None:
        out["rounds"] = int(rec["rounds_T"])
    for k in _RUN_AIM_KEYS:
        if rec.get(k) is not None:
            out[k] = rec[k]
    if "rounds_T" in rec and "min_rounds_left" not in rec:
        out["min_rounds_left"] = 0  # a release made before the rule: AIM annealed whenever it stopped learning
    if out.get("final_tol") is None and "final_tol" in rec:
        out["final_tol"] = None  # recorded as "no early stop" (the reference setting)
    return out


@dataclass
class MechanismReplicates:
    """Replicates of a release (:func:`mechanism_replicates`).

    Attributes
    ----------
    models : list
        The simulated releases' models: the DP + sampling part (empty with ``dp=False``).
    samples : list of pandas.DataFrame
        The drawn rows as integer codes: their exact marginals give the sampling-only part.
    settings : dict
        The run_aim arguments used.
    rows : int
        The rows drawn per replicate.
    """

    models: list[Any] = field(default_factory=list)
    samples: list[pd.DataFrame] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    rows: int = 0


def simulation_noise(rng: np.random.Generator):
    """The noise of one simulated AIM run.

    Not DP noise (see the module docstring): the simulated counts are of rows drawn from the released
    model and are never published.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the seed.

    Returns
    -------
    InsecureSeededNoise
        :class:`~ddssp.dp.noise.InsecureSeededNoise` seeded from ``rng``.
    """
    from ddssp.dp.noise import InsecureSeededNoise

    return InsecureSeededNoise(int(rng.integers(0, 2**63 - 1)))


def mechanism_replicates(
    source: Any, boot: int, rng: np.random.Generator, *, dp: bool = True, rows: int | None = None
) -> MechanismReplicates:
    """``boot`` simulated releases of ``source``.

    Parameters
    ----------
    source : Release
        The release (:class:`ddssp.Release`) to simulate.
    boot : int
        Number of replicates, at least 2.
    rng : numpy.random.Generator
        Every draw, including the simulated DP noise, comes from it, so a seed reproduces the
        replicates exactly.
    dp : bool
        False: only draw the rows (the sampling-only bootstrap; no AIM runs).
    rows : int or None
        Rows per replicate instead of N-hat (tests).

    Returns
    -------
    MechanismReplicates

    Raises
    ------
    DDSSPError
        When ``boot`` is not an integer >= 2, ``source`` is not a release, or there is not one row
        to draw (N-hat or ``rows`` below 1).
    """
    from ddssp.marginals.aim import run_aim

    if isinstance(boot, bool) or not isinstance(boot, (int, np.integer)) or boot < 2:
        raise DDSSPError(f"boot must be an integer >= 2 (bootstrap replicates), got {boot!r}")
    model = getattr(source, "model", None)
    if model is None or not hasattr(model, "sample"):
        raise DDSSPError("the mechanism bootstrap needs a release (a model to draw rows from)")
    settings = aim_settings(source) if dp else {}
    n = int(round(float(model.total))) if rows is None else int(rows)
    if n < 1:
        raise DDSSPError(f"the release's noisy total is {float(model.total):.3g}; there are no rows to simulate")
    domain = {str(a): int(k) for a, k in source.schema.domain.items()}
    names = list(domain)
    small = np.int16 if max(domain.values()) < 2**15 else np.int64
    workload = list(source.workload) if dp else []
    out = MechanismReplicates(settings=settings, rows=n)
    for _ in range(int(boot)):
        codes = model.sample(n, rng)[names]
        out.samples.append(codes.astype(small))
        if dp:
            res = run_aim(codes, domain, workload, rng=rng, noise=simulation_noise(rng), **settings)
            out.models.append(res.model)
    return out


#: interval constructions (see :func:`bootstrap_interval`)
INTERVALS = ("normal", "bc-normal", "basic", "percentile")


def bootstrap_interval(
    theta: np.ndarray, reps: np.ndarray, level: float, how: str, center: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval of each coefficient from bootstrap replicates.

    With z = z_{(1+level)/2}, a = 1 - level, s = the replicates' sd and q_a their a-quantile:

    - ``normal``: theta +- z s (ignores bias);
    - ``bc-normal``: (theta - bias) +- z s with bias = mean(reps) - center;
    - ``basic`` (pivotal): [theta - (q_{1-a/2} - center), theta - (q_{a/2} - center)];
    - ``percentile``: [q_{a/2}, q_{1-a/2}] shifted by theta - center (plain percentile when equal).

    Parameters
    ----------
    theta : numpy.ndarray
        The point estimates (p).
    reps : numpy.ndarray
        The replicates' estimates (B x p).
    level : float
        Confidence level in (0, 1).
    how : {"normal", "bc-normal", "basic", "percentile"}
        The construction (see above).
    center : numpy.ndarray or None
        The bootstrap world's truth (default ``theta``: the fit on the released model's marginals,
        which is the point estimate).

    Returns
    -------
    low, high : numpy.ndarray
        The bounds of each coefficient's interval.

    Raises
    ------
    DDSSPError
        For an unknown ``how``.
    """
    from scipy.stats import norm

    theta = np.asarray(theta, dtype=float)
    reps = np.asarray(reps, dtype=float)
    c = theta if center is None else np.asarray(center, dtype=float)
    a = 1.0 - float(level)
    if how in ("normal", "bc-normal"):
        z = float(norm.ppf(1.0 - a / 2.0))
        s = reps.std(axis=0, ddof=1)
        mid = theta - (reps.mean(axis=0) - c) if how == "bc-normal" else theta
        return mid - z * s, mid + z * s
    lo_q, hi_q = np.quantile(reps, [a / 2.0, 1.0 - a / 2.0], axis=0)
    if how == "basic":
        return theta - (hi_q - c), theta - (lo_q - c)
    if how == "percentile":
        return lo_q + (theta - c), hi_q + (theta - c)
    raise DDSSPError(f"interval must be one of {', '.join(INTERVALS)}; got {how!r}")
