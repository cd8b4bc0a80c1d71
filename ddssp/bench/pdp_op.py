"""Reproduction of the PDP-OP paper's synthetic experiment (Tables 1 and 3): ``kind = "pdp-op-synthetic"``.

Per trial: theta* uniform on the unit sphere S^{d-1}, x ~ U[0, 1]^d, y = x.theta* / sqrt(d) (no noise),
n rows split into n_train / n - n_train (paper: d = 30, n = 100, 80 / 20). Per-row eps for the training
rows from :func:`ddssp.estimators.pdp_op.privacy_profile` (spec ``profile`` = "default" (0.34, 0.43, 0.23)
or "jorgensen" (0.54, 0.37, 0.09), or explicit ``fractions``; ``levels`` (eps_c, eps_m, eps_l)).
For every lambda and method, the trial's data and profile are shared (paired comparison).

Two protocols (spec ``protocol``):
  "fresh" (default)  every trial draws a new theta*, X, y and eps profile: the means estimate the
                     expected test loss over the data-generating process.
  "paper"            the authors' code (github.com/krishnacharya/pp-ridge, ``pp_estimator`` /
                     ``jorgensen_private_estimator``): ONE dataset and profile (drawn from the seed),
                     ``trials`` repetitions of the noise (and of the Jorgensen sampling) only. Its means
                     depend on that one draw, notably at large lambda (bias of the one theta*) and for
                     NonPers (the one min eps_i).

Methods (spec ``methods``, or ``ddssp bench --methods``):
  PDP-OP       weights eps_i / sum eps, eta = sum(eps) / C                       (Thm 3.2 / 3.4)
  NonPers      eps* = min eps_i for all rows, w = 1/n, eta = n eps* / C
  J-max        Jorgensen sample mechanism, t = max eps_i; N_s = 0 -> theta = 0
  J-mean       the same with t = mean eps_i
  non-private  unweighted ridge at the same lambda, no noise (reference only)
with C = 2 R (1 + R Bt) / lambda, R = sqrt(d), Bt = min(1/sqrt(lambda), sqrt(d)/lambda) (or the spec's
``theta_bound``). Metrics on the test rows: ``mse`` (unregularised test MSE, the paper's main number)
and ``mse_reg`` = mse + lambda ||theta_hat||^2. Pure numpy, vectorised over trials in chunks, with the
same formulas as the estimator classes (:mod:`ddssp.estimators.pdp_op`).

Randomness: ``--seed`` drives the simulated data and privacy profiles (and with protocol "paper" the
one dataset); the DP noise and the Jorgensen coin flips come from :class:`~ddssp.dp.noise.SecureNoise`
(OpenDP / the OS's CSPRNG), so a run is not bit-reproducible (its means are, up to Monte Carlo error).
The secure samplers are far slower than numpy's, so they are called once per chunk, lambda and method.

Output rows: method, lambda, trial, metric, value, seconds (seconds = that method's compute time per
trial, averaged over its chunk). There is no ``epsilon`` column: the privacy levels are a per-row
profile, fixed by the spec.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd

from ddssp.bench import BenchContext
from ddssp.dp.noise import NoiseSource, SecureNoise
from ddssp.errors import WorkloadError
from ddssp.estimators.pdp_op_math import (
    jorgensen_probabilities,
    pdp_weights,
    sample_l2_laplace,
    sensitivity_constant,
    weighted_ridge,
)
from ddssp.estimators.pdp_op_profiles import DEFAULT_LEVELS, PROFILES, privacy_profile

METHODS = ("PDP-OP", "NonPers", "J-max", "J-mean", "non-private")
DEFAULT_METHODS = METHODS


def _int(spec: dict, key: str, default: int, lo: int = 1) -> int:
    v = spec.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise WorkloadError(f"spec key {key!r} must be an integer >= {lo}, got {v!r}")
    return v


def _settings(spec: dict, ctx: BenchContext) -> dict[str, Any]:
    if ctx.eps is not None:
        raise WorkloadError(
            "--eps does not apply to kind 'pdp-op-synthetic' (privacy levels are a per-row profile); "
            "set 'levels' / 'profile' / 'fractions' in the spec instead"
        )
    d = _int(spec, "d", 30)
    n = _int(spec, "n", 100, lo=2)
    if "n_train" in spec:
        n_train = _int(spec, "n_train", 80)
    else:
        frac = spec.get("train_fraction", 0.8)
        if not isinstance(frac, (int, float)) or not 0 < frac < 1:
            raise WorkloadError(f"train_fraction must be in (0, 1), got {frac!r}")
        n_train = int(round(frac * n))
    if not 1 <= n_train < n:
        raise WorkloadError(f"n_train must be between 1 and n - 1 = {n - 1}, got {n_train}")
    trials = ctx.trials if ctx.trials is not None else _int(spec, "trials", 10000)
    chunk = _int(spec, "chunk", 500)
    lambdas = spec.get("lambdas", [1, 10, 100, 200])
    if (
        not isinstance(lambdas, list)
        or not lambdas
        or any(
            isinstance(lam, bool) or not isinstance(lam, (int, float)) or not (lam > 0 and math.isfinite(lam))
            for lam in lambdas
        )
    ):
        raise WorkloadError(
            f"'lambdas' must be a non-empty list of positive numbers (lambda = 0 is refused), got {lambdas!r}"
        )
    profile = spec.get("profile", "default")
    if "fractions" in spec:
        fractions = tuple(float(f) for f in spec["fractions"])
    elif profile in PROFILES:
        fractions = PROFILES[profile]
    else:
        raise WorkloadError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)} (or give 'fractions')")
    levels = tuple(float(v) for v in spec.get("levels", DEFAULT_LEVELS))
    methods = list(ctx.methods) if ctx.methods is not None else list(spec.get("methods", DEFAULT_METHODS))
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise WorkloadError(f"unknown method(s) {unknown} for pdp-op-synthetic; known: {', '.join(METHODS)}")
    protocol = spec.get("protocol", "fresh")
    if protocol not in ("fresh", "paper"):
        raise WorkloadError(f"protocol must be 'fresh' or 'paper', got {protocol!r}")
    theta_bound = spec.get("theta_bound")
    if theta_bound is not None and not (isinstance(theta_bound, (int, float)) and theta_bound > 0):
        raise WorkloadError(f"theta_bound must be a positive number, got {theta_bound!r}")
    try:  # validate fractions / levels once, with the library's messages
        privacy_profile(n_train, fractions, levels, rng=0)
    except Exception as exc:
        raise WorkloadError(f"spec profile: {exc}") from None
    return dict(
        d=d,
        n=n,
        n_train=n_train,
        trials=trials,
        chunk=chunk,
        lambdas=[float(lam) for lam in lambdas],
        fractions=fractions,
        levels=levels,
        methods=methods,
        theta_bound=theta_bound,
        protocol=protocol,
    )


def simulate_chunk(
    rng: np.random.Generator, T: int, d: int, n: int, n_train: int, fractions, levels
) -> dict[str, np.ndarray]:
    """T independent synthetic datasets and privacy profiles (the paper's generator).

    Parameters
    ----------
    rng : numpy.random.Generator
        The random source.
    T : int
        The number of datasets.
    d, n, n_train : int
        Dimension, rows and training rows.
    fractions, levels : sequence of float
        The privacy profile (:func:`ddssp.estimators.pdp_op.privacy_profile`).

    Returns
    -------
    dict
        ``Xtr``, ``ytr``, ``Xte``, ``yte`` and ``eps``, each with a leading axis of length T.
    """
    theta = rng.standard_normal((T, d))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    X = rng.random((T, n, d))
    y = np.einsum("tnd,td->tn", X, theta) / math.sqrt(d)
    eps = privacy_profile(n_train, fractions, levels, rng=rng, size=T)
    return dict(Xtr=X[:, :n_train], ytr=y[:, :n_train], Xte=X[:, n_train:], yte=y[:, n_train:], eps=eps)


def _estimates(method: str, data: dict[str, np.ndarray], lam: float, C: float, noise: NoiseSource) -> np.ndarray:
    """theta_hat for every trial of a chunk, shape (T, d)."""
    Xtr, ytr, eps = data["Xtr"], data["ytr"], data["eps"]
    T, m, d = Xtr.shape
    if method == "PDP-OP":
        theta_bar = weighted_ridge(Xtr, ytr, pdp_weights(eps), lam)
        eta = eps.sum(axis=1) / C
        return theta_bar + sample_l2_laplace(d, eta, noise)
    if method == "non-private":
        return weighted_ridge(Xtr, ytr, np.full((T, m), 1.0 / m), lam)
    if method == "NonPers":
        theta_bar = weighted_ridge(Xtr, ytr, np.full((T, m), 1.0 / m), lam)
        eta = m * eps.min(axis=1) / C
        return theta_bar + sample_l2_laplace(d, eta, noise)
    if method in ("J-max", "J-mean"):
        t = eps.max(axis=1) if method == "J-max" else eps.mean(axis=1)
        keep = noise.bernoulli(jorgensen_probabilities(eps, t))
        ns = keep.sum(axis=1)
        empty = ns == 0
        w = keep / np.maximum(ns, 1)[:, None]
        theta_bar = weighted_ridge(Xtr, ytr, w, lam)
        eta = t * np.maximum(ns, 1) / C
        theta = theta_bar + sample_l2_laplace(d, eta, noise)
        theta[empty] = 0.0  # N_s = 0: the data-independent output theta = 0 (as JorgensenSampleMechanism)
        return theta
    raise WorkloadError(f"unknown method {method!r}")  # pragma: no cover - checked in _settings


def run(spec: dict, ctx: BenchContext) -> pd.DataFrame:
    """The PDP-OP synthetic experiment: each method per lambda, vectorised over trials in chunks.

    The runner of ``kind = "pdp-op-synthetic"`` for ``ddssp bench`` (see the module docstring for the spec keys,
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
    s = _settings(spec, ctx)
    root = np.random.SeedSequence(ctx.seed)
    base_ss, *chunk_ss = root.spawn(1 + math.ceil(s["trials"] / s["chunk"]))
    rng = np.random.default_rng(base_ss)
    noise = ctx.extra.get("noise") or SecureNoise()
    d, n, n_train, trials, chunk = s["d"], s["n"], s["n_train"], s["trials"], s["chunk"]
    ctx.log(
        f"pdp-op-synthetic: d={d}, n={n} ({n_train} train / {n - n_train} test), {trials} trials, "
        f"lambdas={s['lambdas']}, fractions={s['fractions']}, levels={s['levels']}, methods={s['methods']}, "
        f"protocol={s['protocol']}"
    )
    base = None
    if s["protocol"] == "paper":
        base = simulate_chunk(rng, 1, d, n, n_train, s["fractions"], s["levels"])
    R = math.sqrt(d)
    frames: list[pd.DataFrame] = []
    n_chunks = math.ceil(trials / chunk)
    bar = ctx.progress(n_chunks * len(s["lambdas"]), "pdp-op-synthetic")
    try:
        for c in range(n_chunks):
            start = c * chunk
            T = min(chunk, trials - start)
            trial_ids = np.arange(start, start + T)
            # each chunk has its own random stream, so a resumed run skips finished chunks exactly
            done = ctx.cell({"trial": range(start, start + T)})
            if done is not None:
                frames.append(pd.DataFrame(done))
                bar.update(len(s["lambdas"]))
                continue
            rng = np.random.default_rng(chunk_ss[c])
            cell_frames: list[pd.DataFrame] = []
            if base is None:
                data = simulate_chunk(rng, T, d, n, n_train, s["fractions"], s["levels"])
            else:  # the one dataset, repeated: only the noise / the sampling varies
                data = {k: np.broadcast_to(v, (T,) + v.shape[1:]) for k, v in base.items()}
            for lam in s["lambdas"]:
                C = sensitivity_constant(lam, R, 1.0, s["theta_bound"])
                for method in s["methods"]:
                    t0 = time.perf_counter()
                    theta = _estimates(method, data, lam, C, noise)
                    resid = data["yte"] - np.einsum("tnd,td->tn", data["Xte"], theta)
                    mse = np.mean(resid**2, axis=1)
                    reg = mse + lam * np.sum(theta**2, axis=1)
                    sec = (time.perf_counter() - t0) / T
                    for metric, vals in (("mse", mse), ("mse_reg", reg)):
                        cell_frames.append(
                            pd.DataFrame(
                                {
                                    "method": method,
                                    "lambda": lam,
                                    "trial": trial_ids,
                                    "metric": metric,
                                    "value": vals,
                                    "seconds": sec,
                                }
                            )
                        )
                bar.update(1)
            cell = pd.concat(cell_frames, ignore_index=True)
            frames.append(cell)
            ctx.save_cell(cell.to_dict("records"))
    finally:
        bar.close()
    return pd.concat(frames, ignore_index=True)
