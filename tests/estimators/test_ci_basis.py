"""Interval bases of DD-SSP fits: the delta method for measured pairs, model-based intervals for
unmeasured ones, and the strict unbounded option.

Releases are AIM runs on samples of the known population of the ci-coverage benchmark
(:mod:`ddssp.bench.ci_coverage`)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.bench import ci_coverage as cc
from ddssp.cli import main
from ddssp.estimators import bootstrap as bootstrap_mod
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.ddssp_delta import (
    delta_dp_variance,
    dependence_strength,
    independence_counts,
    model_error_weight,
    pooled_precisions,
    unmeasured_sensitivity,
)
from ddssp.estimators.ddssp_intervals import IntervalOptions
from ddssp.pipeline import ReadOptions, release

FEATS = cc.FEATURES
MODELS = ((DDSSPLinearRegression, "y"), (DDSSPLogisticRegression, "z"))


def _release(rows: int, eps: float, seed: int):
    # seeded noise: which pairs AIM measures at eps 0.05 depends on the draw, and the fixtures below
    # need a fixed answer (secure noise left every pair measured in some runs)
    codes = cc.sample_codes(cc.population(), rows, np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release(
            codes, cc.schema(), eps=eps, seed=seed + 100, insecure_seed=seed + 200, read=ReadOptions(encoded=True)
        )


@pytest.fixture(scope="module")
def full():
    """A release that measured every (feature, target) pair of both fits."""
    rel = _release(20000, 1.0, 3)
    cliques = [set(m.clique) for m in rel.measurements]
    assert all(any({f, t} <= c for c in cliques) for f in FEATS for t in ("y", "z"))
    return rel


@pytest.fixture(scope="module")
def partial():
    """A low-eps release that leaves some pairs with the targets unmeasured."""
    return _release(3000, 0.05, 3)


def _fit(cls, rel, target, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(features=FEATS, ci=0.95, intervals=IntervalOptions(boot=8, boot_iters=60, seed=0, **kw)).fit(
            rel, target
        )


class _Perturbed:
    """The release's model marginals moved by the delta method's linear noise model, for a draw ``e``
    of every pooled measured clique's noise: the ANOVA component of the marginals on each set of
    columns S moves by the precision-weighted pool of the same component of the measured cliques that
    hold S, and a marginal over q moves by its components on every S in q, spread evenly over q's
    other columns."""

    def __init__(self, rel, pooled, e):
        self.rel, self.pooled, self.e = rel, pooled, e
        self.schema = rel.schema
        self.dom = dict(rel.schema.domain)
        self._u = {}
        self.total = float(self.marginal(()))

    def _component(self, S):
        if S not in self._u:
            hold = [(k, c, prec) for k, (c, prec) in self.pooled.items() if set(S) <= k]
            u = np.zeros([self.dom[c] for c in S])
            if hold:
                cs = math.prod(self.dom[c] for c in S)
                pis = [prec * cs / math.prod(self.dom[c] for c in cols) for _, cols, prec in hold]
                for (k, cols, _), pi in zip(hold, pis):
                    axes = tuple(i for i, c in enumerate(cols) if c not in S)
                    part = self.e[k].sum(axis=axes) if axes else self.e[k]
                    kept = [c for c in cols if c in S]
                    part = np.transpose(part, [kept.index(c) for c in S]) if S else part
                    for ax in range(len(S)):
                        part = part - part.mean(axis=ax, keepdims=True)
                    u = u + pi / sum(pis) * part
            self._u[S] = u
        return self._u[S]

    def marginal(self, cols):
        q = tuple(cols)
        out = np.array(self.rel.model.marginal(q) if q else self.rel.total, dtype=float)
        for mask in range(1 << len(q)):
            S = tuple(c for i, c in enumerate(q) if mask >> i & 1)
            rest = math.prod(self.dom[c] for c in q if c not in S)
            u = self._component(S).reshape([self.dom[c] if c in S else 1 for c in q])
            out = out + u / rest
        return out


@pytest.mark.parametrize("cls,target", MODELS)
def test_delta_variance_matches_monte_carlo_of_its_noise_model(full, cls, target):
    """The delta method is exact for small noise: refits on marginals moved by many small draws of
    the measurements' noise spread as it says (within Monte Carlo error)."""
    est = cls(features=FEATS).fit(full, target)
    var = delta_dp_variance(est, list(full.measurements))
    pooled = pooled_precisions(list(full.measurements))
    dom = dict(full.schema.domain)
    rng = np.random.default_rng(0)
    scale = 1e-3  # linear regime
    draws = []
    for _ in range(300):
        e = {k: rng.standard_normal([dom[c] for c in cols]) * scale / math.sqrt(p) for k, (cols, p) in pooled.items()}
        m = cls(features=FEATS, encoding=est.encoding_).fit(_Perturbed(full, pooled, e), target)
        draws.append(np.concatenate([[m.intercept_], m.coef_]))
    mc = np.std(draws, axis=0, ddof=1) / scale
    ratio = np.sqrt(var) / mc
    assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio


def test_measured_pairs_need_no_refits(full, monkeypatch):
    """With every pair measured the default intervals come from the (projected) delta method alone: no model is
    re-estimated, and they agree with the bootstrap's to within its understatement."""

    def boom(*a, **k):
        raise AssertionError("a bootstrap model was made")

    monkeypatch.setattr(bootstrap_mod, "iter_bootstrap_models", boom)
    for cls, target in MODELS:
        est = _fit(cls, full, target)
        tab = est.conf_int()
        assert list(tab["basis"]) == ["measured"] * len(tab) and est.boot_coefs_.shape[0] == 0
        assert est.ci_info_["dp_method"] == "projected" and np.all(tab["stderr_dp"] > 0)
    monkeypatch.undo()
    for cls, target in MODELS:
        delta = _fit(cls, full, target).conf_int()
        boot = _fit(cls, full, target, dp_method="bootstrap").conf_int()
        ratio = np.median(delta["stderr_dp"] / boot["stderr_dp"])
        assert 0.8 < ratio < 3.0, ratio  # 60-iteration refits understate the bootstrap's spread


class _Imputed:
    """The release's model marginals with the components no measured clique holds (the imputed
    pairs) moved by a draw ``e`` of independent per-cell errors: a marginal over q moves by the
    centred part of the draw of every unheld S inside q, spread evenly over q's other columns."""

    def __init__(self, rel, e):
        self.rel, self.e = rel, e
        self.schema = rel.schema
        self.dom = dict(rel.schema.domain)
        self.total = float(rel.total)

    def marginal(self, cols):
        q = tuple(cols)
        out = np.array(self.rel.model.marginal(q), dtype=float)
        for S, d in self.e.items():
            if not set(S) <= set(q):
                continue
            u = np.transpose(d, [S.index(c) for c in q if c in S])
            for ax in range(u.ndim):
                u = u - u.mean(axis=ax, keepdims=True)
            rest = math.prod(self.dom[c] for c in q if c not in S)
            out = out + u.reshape([self.dom[c] if c in S else 1 for c in q]) / rest
        return out


@pytest.mark.parametrize("cls,target", MODELS)
def test_model_error_variance_matches_monte_carlo(partial, cls, target):
    """The model part of an interval is exact for small imputation errors: refits on marginals whose
    unmeasured pairs are moved by independent per-cell draws of the weighted variance spread as
    :func:`unmeasured_sensitivity` says."""
    est = cls(features=FEATS).fit(partial, target)
    meas = list(partial.measurements)
    weight = model_error_weight(partial, meas)
    with_t, without_t = unmeasured_sensitivity(est, meas, weight)
    assert np.any(with_t > 0)  # some pair with the target is unmeasured here
    dom = dict(partial.schema.domain)
    held = [set(m.clique) for m in meas]
    cols = [c for c in FEATS + [target]]
    unheld = [(a, b) for i, a in enumerate(cols) for b in cols[i + 1 :] if not any({a, b} <= k for k in held)]
    rng = np.random.default_rng(1)
    scale = 1e-3
    draws = []
    for _ in range(300):
        e = {S: rng.standard_normal([dom[c] for c in S]) * np.sqrt(weight(S)) * scale for S in unheld}
        m = cls(features=FEATS, encoding=est.encoding_, ridge=est.penalty_).fit(_Imputed(partial, e), target)
        draws.append(np.concatenate([[m.intercept_], m.coef_]))
    mc = np.std(draws, axis=0, ddof=1) / scale
    sd = np.sqrt(with_t + without_t)
    moved = sd > 1e-9 * np.max(sd)
    ratio = sd[moved] / mc[moved]
    assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio
    assert np.all(mc[~moved] < 1e-3 * np.max(mc))  # second order only


class _Meas:
    def __init__(self, clique, sigma, values):
        self.clique, self.sigma, self.values = clique, sigma, values


class _OneWays:
    """A source with given one-way marginals (what :func:`independence_counts` reads)."""

    def __init__(self, one):
        self.one = one
        self.total = float(next(iter(one.values())).sum())

    def marginal(self, cols):
        return self.one[cols[0]]


def test_dependence_strength_is_the_noise_corrected_chi_square_per_dof():
    a, b = np.array([30.0, 70.0]), np.array([20.0, 50.0, 30.0])
    src = _OneWays({"a": a, "b": b, "c": b})
    e = np.outer(a, b) / 100.0
    d = np.array([[6.0, -4.0, -2.0], [-6.0, 4.0, 2.0]])  # rows and columns sum to 0
    chi = float(np.sum(d**2 / e)) / 2.0  # 2 degrees of freedom
    sigma = 0.5
    meas = [_Meas(("a", "b"), sigma, (e + d).ravel()), _Meas(("a",), 9.0, a)]
    expect = chi - sigma**2 * float(np.sum(1.0 / e)) / 2.0
    assert math.isclose(dependence_strength(src, meas), expect, rel_tol=1e-12)
    # two measurements of one pair pool their precision; an independent pair's strength floors at 1
    meas.append(_Meas(("a", "b"), sigma, (e + d).ravel()))
    pooled = chi - sigma**2 / 2.0 * float(np.sum(1.0 / e)) / 2.0
    assert math.isclose(dependence_strength(src, meas), pooled, rel_tol=1e-12)
    assert dependence_strength(src, [_Meas(("a", "c"), sigma, e.ravel())]) == 1.0
    w = model_error_weight(src, meas, share=0.25)
    assert math.isclose(w.kappa, 0.25 * pooled)
    np.testing.assert_allclose(w(("a", "b")), 0.25 * pooled * e)
    np.testing.assert_allclose(independence_counts(src, ("b", "a")), e.T)


def test_unmeasured_pairs_get_model_based_or_unbounded_intervals(partial, monkeypatch):
    """Model-based intervals are finite, add the model's imputation error to the delta method's DP
    part, and need no refits; the strict option leaves those coefficients unbounded."""

    def boom(*a, **k):
        raise AssertionError("a bootstrap model was made")

    monkeypatch.setattr(bootstrap_mod, "iter_bootstrap_models", boom)
    cliques = [set(m.clique) for m in partial.measurements]
    for cls, target in MODELS:
        model = _fit(cls, partial, target, unmeasured="model")
        strict = _fit(cls, partial, target, unmeasured="infinite")
        legacy = _fit(cls, partial, target, unmeasured="keep")
        a, b = model.conf_int(), strict.conf_int()
        m = a["pair_measured"].to_numpy()
        expect = [n == "intercept" or any({n.split("=")[0], target} <= c for c in cliques) for n in a["name"]]
        assert list(m) == expect and m[0] and not m.all()
        assert np.all(np.isfinite(a["ci_low"])) and np.all(np.isfinite(a["ci_high"]))
        assert list(a["basis"]) == ["measured" if x else "model" for x in m]
        assert list(b["basis"]) == ["measured" if x else "none" for x in m]
        assert np.all(np.isneginf(b["ci_low"][~m])) and np.all(np.isposinf(b["ci_high"][~m]))
        assert legacy.intervals.unmeasured == "model" and legacy.conf_int().equals(a)
        assert model.ci_info_["model_based"] == int((~m).sum()) and model.boot_coefs_.shape[0] == 0
        # the same DP and sampling parts; the model part on top, positive where an imputed pair matters
        np.testing.assert_allclose(a["stderr_dp"], b["stderr_dp"])
        np.testing.assert_allclose(a["stderr"] ** 2, b["stderr"] ** 2 + a["stderr_model"] ** 2)
        assert np.all(a["stderr_model"][~m] > 0) and np.all(b["stderr_model"] == 0)
        tab = model.coef_table()
        assert list(tab["basis"]) == list(a["basis"])


def test_fully_measured_release_has_no_model_part(full):
    """With every (feature, target) pair measured no imputed pair holds the target: the model-based
    option changes nothing."""
    for cls, target in MODELS:
        a = _fit(cls, full, target, unmeasured="model").conf_int()
        b = _fit(cls, full, target, unmeasured="infinite").conf_int()
        assert np.all(a["stderr_model"] == 0)
        pd.testing.assert_frame_equal(a, b)


def test_cli_basis_column_and_strict_option(partial, tmp_path, capsys):
    path = tmp_path / "low.release"
    partial.save(path)
    argv = ["fit", str(path), "--target", "y", "--features", ",".join(FEATS), "--ci", "0.95", "--seed", "0"]
    assert main(argv + ["--json"]) == 0  # the default: model-based intervals for unmeasured pairs
    res = json.loads(capsys.readouterr().out)
    rows = res["coefficients"]
    assert {r["basis"] for r in rows} == {"measured", "model"}
    assert all(r["ci_low"] is not None for r in rows[1:])
    scaled = res["coefficients_scaled"]
    assert {r["basis"] for r in scaled} == {"measured", "model"}
    assert all(r["stderr_model"] > 0 for r in scaled if r["basis"] == "model")
    assert res["ci"]["model_based"] == sum(r["basis"] == "model" for r in scaled)
    assert main(argv + ["--unmeasured", "model"]) == 0
    out = capsys.readouterr().out
    assert "basis 'model'" in out and "model-based interval(s)" in out
    assert main(argv + ["--unmeasured", "infinite"]) == 0
    out = capsys.readouterr().out
    assert "its interval is unbounded (--unmeasured model" in out and "basis 'model'" not in out
    assert main(argv + ["--unmeasured", "infinite", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    rows = res["coefficients"]
    assert {r["basis"] for r in rows} == {"measured", "none"}
    assert all((r["ci_low"] is None) == (r["basis"] == "none") for r in rows[1:])
    assert all(r["stderr_model"] == 0 for r in res["coefficients_scaled"])


def _empty_level_release():
    """A small release whose schema marks a fourth level of x3 empty: its model holds no mass there."""
    from ddssp.data.schema import Schema

    codes = cc.sample_codes(cc.population(), 400, np.random.default_rng(0))
    sch = Schema.from_domain({**cc.DOMAIN, "x3": 4}, categorical=cc.CATEGORICAL)
    sch.column("x3").with_empty([sch.column("x3").labels[3]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release(codes, sch, eps=1.0, seed=1, target="y", read=ReadOptions(encoded=True))


def test_empty_level_is_not_estimable(tmp_path, capsys):
    rel = _empty_level_release()
    assert float(np.asarray(rel.marginal(["x3"]))[3]) == 0.0
    est = _fit(DDSSPLinearRegression, rel, "y")
    tab = est.conf_int().set_index("name")
    assert list(tab.index[tab["basis"] == "empty"]) == ["x3=3"]
    row = tab.loc["x3=3"]
    for col in ("stderr", "stderr_dp", "stderr_model", "stderr_sampling", "ci_low", "ci_high"):
        assert math.isnan(row[col]), col
    rest = tab.drop(index="x3=3")
    assert (rest["basis"] == "measured").all() and np.isfinite(rest[["ci_low", "ci_high"]].to_numpy()).all()
    assert (rest["stderr"] > 0).all()
    coef = est.coef_table()
    assert coef.loc["x3=3", "basis"] == "empty" and math.isnan(coef.loc["x3=3", "stderr"])
    assert math.isnan(coef.loc["x3=3", "ci_low"]) and math.isnan(coef.loc["x3=3", "ci_high"])
    path = tmp_path / "empty.release"
    rel.save(path)
    argv = ["fit", str(path), "--target", "y", "--features", ",".join(FEATS), "--ci", "0.95", "--seed", "0"]
    assert main(argv + ["--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    for key in ("coefficients", "coefficients_scaled"):
        (row,) = [r for r in res[key] if r["name"] == "x3=3"]
        assert row["basis"] == "empty" and row["stderr"] is None and row["ci_low"] is None and row["ci_high"] is None
    assert main(argv) == 0
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith("x3=3")]
    assert line.count("n/a") == 2 and "empty" in line
    assert "basis 'empty'" in out and "not estimable" in out
