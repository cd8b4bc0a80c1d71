"""``ridge="floor"`` (the default): a lift only in the directions where the release's noise dominates.

Releases are the small and large AIM runs of ``test_ddssp_ridge``; the per-direction noise is checked
against the independent implementation of the noise model in ``test_ci_basis`` (``_Perturbed``)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from ddssp.cli import main
from ddssp.estimators import ddssp_ridge
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.ddssp_delta import pooled_precisions
from ddssp.estimators.ddssp_intervals import IntervalOptions
from ddssp.estimators.ddssp_ridge import floor_penalty, schur_noise, xtx_noise_draws
from ddssp.estimators.design import INTERCEPT
from ddssp.estimators.suffstats import ExactMarginals, sufficient_statistics
from tests.estimators import test_ddssp_ridge as ridge_tests
from tests.estimators.test_ci_basis import _Perturbed
from tests.estimators.test_ddssp_ridge import FEATS, MODELS, _fit

large, small = ridge_tests.large, ridge_tests.small  # the same two releases (module-scoped fixtures)


def _centred(A: np.ndarray) -> np.ndarray:
    """The Schur complement of the intercept entry (index 0): the centred X^T X."""
    return A[1:, 1:] - np.outer(A[1:, 0], A[1:, 0]) / A[0, 0]


@pytest.mark.parametrize("cls,target", MODELS)
def test_floor_is_the_plain_fit_without_noise_and_on_a_well_measured_release(large, cls, target):
    rel, codes = large
    for source in (ExactMarginals(codes, rel.schema), rel):
        floor, plain = _fit(cls, source, target), _fit(cls, source, target, ridge=0.0)
        info = floor.ridge_info_
        assert info["rule"] == "floor" and info["directions"] == 0, info
        np.testing.assert_array_equal(floor.coef_, plain.coef_)
        assert floor.intercept_ == plain.intercept_ and not floor.penalty_.any()


@pytest.mark.parametrize("cls,target", MODELS)
def test_floor_lifts_only_the_directions_below_their_noise(small, cls, target):
    """The penalty is PSD, leaves the intercept alone, changes each eigenvalue of the centred matrix
    to max(w_i, t_i) and leaves every direction above its noise as it was."""
    rel, _ = small
    floor = _fit(cls, rel, target)
    P, info = floor.penalty_, floor.ridge_info_
    assert info["directions"] > 0 and info["largest_lift"] > 0
    assert not P[0].any() and not P[:, 0].any()
    assert np.linalg.eigvalsh(P).min() > -1e-8 * np.abs(P).max()
    A = floor.suffstats_.xtx
    w, V = np.linalg.eigh(_centred((A + A.T) / 2))
    after = np.diag(V.T @ _centred((A + A.T) / 2 + P) @ V)  # P is diagonal in S's eigenbasis
    off = V.T @ P[1:, 1:] @ V - np.diag(np.diag(V.T @ P[1:, 1:] @ V))
    assert np.abs(off).max() < 1e-8 * max(1.0, np.abs(P).max())
    lifted = after > w + 1e-8 * np.abs(w).max()
    assert int(lifted.sum()) == info["directions"]
    np.testing.assert_allclose(after[~lifted], w[~lifted], atol=1e-8 * np.abs(w).max())
    assert after.min() == pytest.approx(info["min_eig_after"])
    given = _fit(cls, rel, target, ridge=P)  # the same penalty given as a matrix: the same fit
    np.testing.assert_allclose(given.coef_, floor.coef_)


def test_floor_is_the_noise_in_each_direction(small):
    """t_i, the noise in direction v_i, is the 95% quantile of ||E_S v_i|| for E_S the exact change of
    the centred matrix when the release is moved by the noise model (an independent implementation);
    the floor lifts exactly the directions below it, to it."""
    rel, _ = small
    est = _fit(DDSSPLinearRegression, rel, "y")
    A = (est.suffstats_.xtx + est.suffstats_.xtx.T) / 2
    S = _centred(A)
    w, V = np.linalg.eigh(S)
    pooled = pooled_precisions(list(rel.measurements))
    dom = dict(rel.schema.domain)
    rng = np.random.default_rng(2)
    norms = []
    for _ in range(800):
        e = {k: rng.standard_normal([dom[c] for c in cols]) / math.sqrt(p) for k, (cols, p) in pooled.items()}
        moved = sufficient_statistics(_Perturbed(rel, pooled, e), est.encoding_).xtx
        norms.append(np.linalg.norm((_centred((moved + moved.T) / 2) - S) @ V, axis=0))
    ref = np.quantile(np.array(norms), 0.95, axis=0)
    # many draws, so that the Monte Carlo error of both quantiles (about 15% at 200) stays inside the tolerance
    many = xtx_noise_draws(est.encoding_, list(rel.measurements), draws=3000)
    t = np.quantile(np.linalg.norm(schur_noise(many, A, 0) @ V, axis=1), 0.95, axis=0)
    assert np.all((t / ref > 0.88) & (t / ref < 1.12)), t / ref
    t200 = np.quantile(
        np.linalg.norm(schur_noise(xtx_noise_draws(est.encoding_, list(rel.measurements)), A, 0) @ V, axis=1),
        0.95,
        axis=0,
    )
    after = np.diag(V.T @ _centred(A + est.penalty_) @ V)
    np.testing.assert_allclose(after, np.maximum(w, t200), rtol=1e-9, atol=1e-9 * np.abs(w).max())
    assert np.any(w < t200) and est.ridge_info_["directions"] == int(np.sum(w < t200))


def test_floor_stops_a_sign_flip_on_collinear_features(monkeypatch):
    """How a release's fit flips, and that the floor stops it. Two nearly collinear features,
    y = x1 + x2 + noise. Noise in X^T X leaves a weak eigenvector v that is not the true weak
    direction x1 - x2 but turned 30 degrees toward the signal x1 + x2, with eigenvalue 0.5, and noise
    in X^T y flips the sign of its component along v. The plain fit's component along v is that
    flipped signal divided by 0.5: its predictions run against y. The floor (noise draws of the size
    of that noise) lifts v alone and the fit agrees with y again."""
    rng = np.random.default_rng(1)
    n = 400
    x1 = rng.uniform(-1, 1, n)
    x2 = np.clip(x1 + rng.normal(0, 0.05, n), -1, 1)
    X = np.column_stack([np.ones(n), x1, x2])
    y = np.clip(0.4 * (x1 + x2) + rng.normal(0, 0.3, n), -1, 1)
    A, b = X.T @ X, X.T @ y
    w, V = np.linalg.eigh(_centred(A))
    th = math.radians(30)
    v = math.cos(th) * V[:, 0] + math.sin(th) * V[:, 1]
    u = -math.sin(th) * V[:, 0] + math.cos(th) * V[:, 1]
    E0 = np.zeros((3, 3))
    E0[1:, 1:] = w[1] * np.outer(u, u) + 0.5 * np.outer(v, v) - _centred(A)
    A_rel, b_rel = A + E0, b.copy()
    c = b[1:] - A[1:, 0] * b[0] / A[0, 0]  # X^T y of the centred features
    b_rel[1:] -= 1.3 * float(v @ c) * v
    G = rng.standard_normal((200, 3, 3))
    G = (G + np.swapaxes(G, 1, 2)) / 2
    G[:, 0, :] = G[:, :, 0] = 0.0
    draws = 0.5 * np.abs(E0).max() * G
    monkeypatch.setattr(ddssp_ridge, "xtx_noise_draws", lambda *a, **k: draws)
    stats = SimpleNamespace(xtx=A_rel)
    enc = SimpleNamespace(names=[INTERCEPT, "x1", "x2"], intercept=True)
    P, info = floor_penalty(stats, enc, SimpleNamespace(measurements=[object()]))
    assert info["directions"] == 1  # v only: the other direction is far above this noise
    plain = np.linalg.solve(A_rel, b_rel)
    floored = np.linalg.solve(A_rel + P, b_rel)
    assert np.corrcoef(X @ plain, y)[0, 1] < -0.5
    assert np.corrcoef(X @ floored, y)[0, 1] > 0.5


def test_intervals_hold_the_floor_fixed(small):
    """The delta method and the refits of the bootstrap use the fit's own floor, as a given matrix does."""
    rel, _ = small
    opts = IntervalOptions(boot=4, boot_iters=20, seed=0, dp_method="bootstrap")
    floor = _fit(DDSSPLinearRegression, rel, "y", ridge="floor", ci=0.95, intervals=opts)
    given = _fit(DDSSPLinearRegression, rel, "y", ridge=floor.penalty_, ci=0.95, intervals=opts)
    assert floor.ci_info_["floor_directions"] == floor.ridge_info_["directions"] > 0
    np.testing.assert_allclose(floor.boot_coefs_, given.boot_coefs_)
    delta = IntervalOptions(seed=0, sampling_rows=2000, dp_method="delta")
    a = _fit(DDSSPLinearRegression, rel, "y", ridge="floor", ci=0.95, intervals=delta)
    b = _fit(DDSSPLinearRegression, rel, "y", ridge=floor.penalty_, ci=0.95, intervals=delta)
    np.testing.assert_allclose(a.conf_int()["ci_low"], b.conf_int()["ci_low"])


def test_a_penalty_matrix_of_the_wrong_size_is_refused(small):
    rel, _ = small
    with pytest.raises(Exception, match="penalty matrix must be 6 x 6"):
        _fit(DDSSPLinearRegression, rel, "y", ridge=np.eye(3))


def test_cli_says_what_the_floor_did(small, large, tmp_path, capsys):
    for name, (rel, _) in (("small", small), ("large", large)):
        path = tmp_path / f"{name}.release"
        rel.save(path)
        argv = ["fit", str(path), "--target", "y", "--features", ",".join(FEATS)]
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert main(argv + ["--json"]) == 0
        res = json.loads(capsys.readouterr().out)["ridge"]
        assert res["rule"] == "floor" and isinstance(res["directions"], int)
        if name == "large":
            assert res["directions"] == 0 and "noise floor: none of the 5 directions" in out
            continue
        assert res["directions"] > 0 and f"noise floor: {res['directions']} of 5 directions" in out
        assert main(argv + ["--ci", "0.95", "--seed", "0", "--ridge", "floor"]) == 0
        ci = capsys.readouterr().out
        assert "around the fit with its noise floor (" in ci and "held fixed" in ci
        # intervals asked without a ridge: the floored fit, each interval widened by the floor's pull
        assert main(argv + ["--ci", "0.95", "--seed", "0"]) == 0
        printed = capsys.readouterr().out
        assert "widened by the release's estimate of the floor's pull" in printed
        assert "each side also holds the noise floor's estimated pull" in printed
        assert main(argv + ["--ci", "0.95", "--seed", "0", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["ridge"]["rule"] == "floor"
        assert main(argv + ["--ridge", "0", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["ridge"] == {"rule": "given", "ridge": 0.0}
        assert main(argv + ["--ridge", "floor"]) == 0
        assert capsys.readouterr().out == out


@pytest.mark.parametrize("ridge", [0.0, "floor"])
def test_a_source_with_one_target_value_gives_no_slopes(large, ridge):
    """A source that holds every row at one level of the target carries no information on the
    features' effect: the fit says so and has every coefficient 0, the intercept at that level."""
    rel, codes = large
    flat = codes.copy()
    flat["z"] = codes["z"].max()
    with pytest.warns(UserWarning, match="one value of the target 'z'"):
        est = DDSSPLogisticRegression(features=FEATS, ridge=ridge).fit(ExactMarginals(flat, rel.schema), "z")
    assert not est.coef_.any() and est.intercept_ > 0
    assert est.solve_info_["action"].startswith("flat target")
    with pytest.warns(UserWarning, match="one value of the target 'y'"):
        lin = DDSSPLinearRegression(features=FEATS, ridge=ridge).fit(ExactMarginals(flat.assign(y=0), rel.schema), "y")
    assert not lin.coef_.any()
    assert lin.predict(flat, codes=True) == pytest.approx(lin.encoding_.decode_target(lin.intercept_))
