"""DD-SSP linear and Chebyshev-logistic regression from marginals."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Column, Schema
from ddssp.errors import DDSSPError
from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.ddssp_math import (
    chebyshev_coefficients,
    chebyshev_error_bound,
    log_sigmoid,
    solve_normal_equations,
)
from ddssp.estimators.suffstats import Encoding, ExactMarginals, sufficient_statistics
from tests.estimators.test_suffstats import mixed_codes, mixed_schema


# ------------------------------------------------------------------------------------- Chebyshev
def test_chebyshev_coefficients_R6():
    b = chebyshev_coefficients(2, 6.0)
    np.testing.assert_allclose(b, [-0.693147, 0.5, -0.0707575], atol=5e-7)
    assert -b[1] / (2 * b[2]) == pytest.approx(3.53320, abs=5e-5)


@pytest.mark.parametrize("R", [1.0, 3.0, 6.0, 10.0])
def test_chebyshev_coefficients_closed_form(R):
    # 3 Chebyshev nodes 0, +-a with a = R cos(pi/6); phi(a) - phi(-a) = a exactly, so b1 = 1/2
    a = R * math.cos(math.pi / 6)
    phi = lambda s: -math.log1p(math.exp(-s))  # noqa: E731
    b = chebyshev_coefficients(2, R)
    assert b[0] == pytest.approx(-math.log(2), rel=1e-12)
    assert b[1] == pytest.approx(0.5, rel=1e-12)
    assert b[2] == pytest.approx((phi(a) + phi(-a) - 2 * phi(0.0)) / (2 * a * a), rel=1e-12)
    # the polynomial interpolates phi at the nodes
    p = np.polynomial.Polynomial(b)
    np.testing.assert_allclose(p(np.array([-a, 0.0, a])), log_sigmoid([-a, 0.0, a]), rtol=1e-12, atol=1e-13)


def test_chebyshev_error_on_range():
    b = chebyshev_coefficients(2, 6.0)
    s = np.linspace(-6, 6, 200001)
    err = np.max(np.abs(log_sigmoid(s) - np.polynomial.Polynomial(b)(s)))
    bound = chebyshev_error_bound(2, 6.0)  # max|phi'''| R^3 / (3! 2^2) = 9 / (6 sqrt 3)
    assert bound == pytest.approx(9 / (6 * math.sqrt(3)))
    assert err <= bound
    assert 0.23 < err < 0.245  # measured: 0.2379, attained at the ends of the range
    # the authors' raw Chebyshev-series coefficients used as power coefficients are far off (the FIX)
    raw = np.polynomial.chebyshev.Chebyshev.interpolate(log_sigmoid, 2, domain=[-6, 6]).coef
    assert np.max(np.abs(log_sigmoid(s) - np.polynomial.Polynomial(raw)(s))) > 10 * bound


def test_chebyshev_bad_parameters():
    with pytest.raises(DDSSPError, match="positive"):
        chebyshev_coefficients(2, -1.0)
    with pytest.raises(DDSSPError, match="degree"):
        chebyshev_coefficients(0, 6.0)


# ------------------------------------------------------------------------------------- linear
def encoded(codes, enc):
    return enc.transform(codes), enc.target_vector(codes)


def test_linear_equals_lstsq_with_exact_marginals():
    schema, codes = mixed_schema(), mixed_codes()
    src = ExactMarginals(codes, schema)
    est = DDSSPLinearRegression().fit(src, target="y")
    X, y = encoded(codes, est.encoding_)
    theta, *_ = np.linalg.lstsq(X, y, rcond=None)
    np.testing.assert_allclose(est.intercept_, theta[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(est.coef_, theta[1:], rtol=1e-8, atol=1e-10)
    assert est.feature_names_in_ == est.encoding_.names[1:]
    assert est.privacy_.details == {"post_processing": True}
    assert est.privacy_.eps is None and est.privacy_.delta is None and est.privacy_.rho is None
    assert est.n_ == len(codes)
    # predict: codes, encoded matrix (with or without intercept), encoded DataFrame all agree with X theta
    pred = X @ theta
    np.testing.assert_allclose(est.decision_function(codes, codes=True), pred, atol=1e-9)
    np.testing.assert_allclose(est.decision_function(X[:, 1:]), pred, atol=1e-9)
    np.testing.assert_allclose(est.decision_function(X), pred, atol=1e-9)
    np.testing.assert_allclose(est.decision_function(est.encoding_.frame(codes)), pred, atol=1e-9)
    np.testing.assert_allclose(est.predict_original(codes, codes=True), est.encoding_.decode_target(pred))
    assert est.coef_table().loc["intercept", "coef_scaled"] == est.intercept_
    np.testing.assert_allclose(est.predict(codes, codes=True), est.encoding_.decode_target(pred), atol=1e-9)


def _data_unit_prediction(est, raw):
    """The prediction from the coefficients in data units, by hand: intercept + sum coef * value."""
    tab = est.coef_table()
    out = np.full(len(raw), tab.loc["intercept", "coef"])
    for name, row in tab.iloc[1:].iterrows():
        if row["unit"].startswith("per 1 "):
            out += row["coef"] * pd.to_numeric(raw[name]).to_numpy(dtype=float)
        else:
            col, level = name.split("=", 1)
            out += row["coef"] * (raw[col].astype(str).to_numpy() == level)
    return out


@pytest.mark.parametrize("kind", ["linear", "logistic"])
def test_coefficients_in_data_units_reproduce_predictions(kind):
    """Predict in original units (raw values x coefficients in data units) equals predict on the
    scaled encoding, for both models."""
    schema, codes = mixed_schema(), mixed_codes(600, seed=11)
    src = ExactMarginals(codes, schema)
    if kind == "linear":
        feats = ["color", "score", "member", "age"]
        est = DDSSPLinearRegression(features=feats).fit(src, target="y")
    else:
        feats = ["color", "score", "age"]
        est = DDSSPLogisticRegression(features=feats).fit(src, target="member")
    raw = schema.decode(codes)
    by_hand = _data_unit_prediction(est, raw)
    scaled = est.decision_function(codes, codes=True)
    if kind == "linear":
        np.testing.assert_allclose(by_hand, est.encoding_.decode_target(scaled), atol=1e-9)
        np.testing.assert_allclose(est.predict(raw[feats]), by_hand, atol=1e-9)
        truth = raw["y"].to_numpy(dtype=float)
        r2 = 1 - np.sum((truth - by_hand) ** 2) / np.sum((truth - truth.mean()) ** 2)
        assert est.score(raw[feats], raw["y"]) == pytest.approx(r2)
    else:
        np.testing.assert_allclose(by_hand, scaled, atol=1e-9)  # log-odds of the second class
        acc = np.mean(est.predict(codes, codes=True) == codes["member"].to_numpy())
        assert 0.5 < acc < 1 and est.score(raw[feats], raw["member"]) == pytest.approx(acc)
    tab = est.coef_table()
    assert list(tab.columns) == ["coef", "unit", "coef_scaled", "measured", "level_share"] and tab["measured"].all()


def test_linear_ridge_and_features():
    schema, codes = mixed_schema(), mixed_codes(seed=1)
    est = DDSSPLinearRegression(ridge=50.0, features=["age", "color"]).fit(ExactMarginals(codes, schema), target="y")
    X, y = encoded(codes, est.encoding_)
    pen = np.eye(X.shape[1])
    pen[0, 0] = 0.0  # intercept not penalised
    theta = np.linalg.solve(X.T @ X + 50.0 * pen, X.T @ y)
    np.testing.assert_allclose(np.r_[est.intercept_, est.coef_], theta, rtol=1e-9)
    assert est.feature_names_in_ == ["age", "color=green", "color=blue", "color=yellow"]
    with pytest.raises(DDSSPError, match="lacks feature"):
        est.predict(codes[["age"]])
    with pytest.raises(DDSSPError, match="columns"):
        est.predict(np.zeros((3, 2)))


def test_linear_encoding_argument():
    schema, codes = mixed_schema(), mixed_codes(seed=2)
    src = ExactMarginals(codes, schema)
    est = DDSSPLinearRegression(encoding={"score": "onehot"}).fit(src, target="y")
    assert "score=5" in est.feature_names_in_
    enc = Encoding(schema, ["age"], "y")
    est2 = DDSSPLinearRegression(encoding=enc).fit(src)
    assert est2.feature_names_in_ == ["age"]
    with pytest.raises(DDSSPError, match="differs"):
        DDSSPLinearRegression(encoding=enc).fit(src, target="score")
    with pytest.raises(DDSSPError, match="logistic"):
        DDSSPLogisticRegression(encoding=enc).fit(src)
    with pytest.raises(DDSSPError, match="target"):
        DDSSPLinearRegression().fit(src)


def test_raw_values_are_encoded_with_the_schema():
    schema, codes = mixed_schema(), mixed_codes(400, seed=4)
    est = DDSSPLinearRegression(features=["color", "score", "member"]).fit(ExactMarginals(codes, schema), target="y")
    raw = schema.decode(codes)[["color", "score", "member"]]
    assert not pd.api.types.is_integer_dtype(raw["color"])
    np.testing.assert_allclose(est.predict(raw), est.predict(codes, codes=True), atol=1e-12)


def test_singular_design_gives_min_norm_solution_with_warning():
    schema, codes = mixed_schema(), mixed_codes(seed=5)
    codes = codes[codes["color"] != 2]  # level "blue" never occurs: a zero column
    with pytest.warns(UserWarning, match="singular"):
        est = DDSSPLinearRegression().fit(ExactMarginals(codes, schema), target="y")
    X, y = encoded(codes, est.encoding_)
    theta, *_ = np.linalg.lstsq(X, y, rcond=None)
    np.testing.assert_allclose(np.r_[est.intercept_, est.coef_], theta, rtol=1e-7, atol=1e-9)
    assert est.coef_[est.feature_names_in_.index("color=blue")] == pytest.approx(0.0, abs=1e-9)


# ------------------------------------------------------------------------------------- non-PD
def indefinite_system():
    rng = np.random.default_rng(7)
    Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    w = np.array([-3.0, -0.5, 2.0, 5.0, 10.0])
    return Q @ np.diag(w) @ Q.T, rng.normal(size=5), Q, w


def test_indefinite_matrix_clip_projection():
    A, b, Q, w = indefinite_system()
    with pytest.warns(UserWarning, match=r"not positive semi-definite.*clipped 2 negative"):
        theta, info = solve_normal_equations(A, b, psd="clip")
    expect = np.linalg.pinv(Q @ np.diag(np.maximum(w, 0)) @ Q.T) @ b
    np.testing.assert_allclose(theta, expect, rtol=1e-10, atol=1e-12)
    assert info["min_eig"] == pytest.approx(-3.0) and info["rank"] == 3


def test_indefinite_matrix_smallest_ridge():
    A, b, _, _ = indefinite_system()
    with pytest.warns(UserWarning, match=r"added ridge 3"):
        theta, info = solve_normal_equations(A, b, psd="ridge")
    shift = info["extra_ridge"]
    assert 3.0 < shift < 3.001
    assert np.all(np.linalg.eigvalsh(A + shift * np.eye(5)) > 0)
    np.testing.assert_allclose((A + shift * np.eye(5)) @ theta, b, rtol=1e-6)
    with pytest.raises(DDSSPError, match="psd"):
        solve_normal_equations(A, b, psd="eh")


class NoisySource:
    """Exact marginals plus large Gaussian noise on every query (seeded): makes X^T X indefinite."""

    def __init__(self, inner, sigma, seed):
        self.inner, self.schema, self.total = inner, inner.schema, inner.total
        self.rng, self.sigma = np.random.default_rng(seed), sigma
        self.eps, self.delta = 0.5, 1e-6

    def marginal(self, cols):
        m = self.inner.marginal(cols)
        return m + self.rng.normal(0, self.sigma, m.shape)


def test_estimator_warns_on_indefinite_noisy_marginals():
    schema, codes = mixed_schema(), mixed_codes(200, seed=8)
    enc = Encoding(schema, None, "member", kind="logistic")
    xtx = sufficient_statistics(NoisySource(ExactMarginals(codes, schema), 200.0, 9), enc).xtx
    assert np.linalg.eigvalsh(xtx)[0] < 0  # precondition: the noisy matrix really is indefinite
    with pytest.warns(UserWarning, match="not positive semi-definite"):
        est = DDSSPLogisticRegression().fit(NoisySource(ExactMarginals(codes, schema), 200.0, 9), target="member")
    assert np.all(np.isfinite(est.coef_)) and math.isfinite(est.intercept_)
    assert est.privacy_.details == {"post_processing": True}
    assert (est.privacy_.eps, est.privacy_.delta, est.privacy_.rho) == (0.5, 1e-6, None)


# ------------------------------------------------------------------------------------- logistic
def test_logistic_equals_scaled_least_squares():
    schema, codes = mixed_schema(), mixed_codes(seed=10)
    src = ExactMarginals(codes, schema)
    est = DDSSPLogisticRegression().fit(src, target="member")
    X, y = encoded(codes, est.encoding_)
    b = chebyshev_coefficients(2, 6.0)
    theta = -b[1] / (2 * b[2]) * np.linalg.solve(X.T @ X, X.T @ y)
    np.testing.assert_allclose(np.r_[est.intercept_, est.coef_], theta, rtol=1e-8)
    np.testing.assert_allclose(est.chebyshev_coef_, b)
    proba = est.predict_proba(codes, codes=True)
    assert proba.shape == (len(codes), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-(X @ theta))), rtol=1e-9)
    assert set(np.unique(est.predict(codes, codes=True))) <= {0, 1}
    assert est.target_labels_ == ["no", "yes"]
    # the signal is there: members have higher predicted probability on average
    assert proba[codes["member"] == 1, 1].mean() > proba[codes["member"] == 0, 1].mean()


def test_logistic_degree_other_than_2_refused():
    schema, codes = mixed_schema(), mixed_codes(100)
    with pytest.raises(DDSSPError, match="degree must be 2: DD-SSP from two-way marginals.*got 4"):
        DDSSPLogisticRegression(degree=4).fit(ExactMarginals(codes, schema), target="member")
    with pytest.raises(DDSSPError, match="binary"):
        DDSSPLogisticRegression().fit(ExactMarginals(codes, schema), target="y")


def test_not_a_source():
    with pytest.raises(DDSSPError, match="not a marginal source"):
        DDSSPLinearRegression().fit(np.zeros((3, 3)), target="y")


# ------------------------------------------------------------------------------------- real data
ADULT_CATEGORICAL = [
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
    "income>50K",
]


def auc(scores, labels):
    from scipy.stats import rankdata

    r = rankdata(scores)
    pos = labels == 1
    n1, n0 = pos.sum(), (~pos).sum()
    return (r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)


@pytest.mark.slow
def test_adult_exact_marginals(shared_data):
    """DD-SSP with EXACT train marginals vs the non-private fits on the same encoding (Adult)."""
    from scipy.optimize import minimize

    domain = json.loads((shared_data / "adult-domain.json").read_text())
    schema = Schema.from_domain(domain, categorical=ADULT_CATEGORICAL)
    train = pd.read_csv(shared_data / "adult_train.csv")[schema.names]
    test = pd.read_csv(shared_data / "adult_test.csv")[schema.names]
    src = ExactMarginals(train, schema)
    feats = [c for c in schema.names if c not in ("education", "education-num")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty levels make X^T X singular: min-norm, as lstsq
        lin = DDSSPLinearRegression(features=feats).fit(src, target="education-num")
    X, y = encoded(train, lin.encoding_)
    theta, *_ = np.linalg.lstsq(X, y, rcond=None)
    Xt, yt = encoded(test, lin.encoding_)
    mse_dd = np.mean((lin.decision_function(test) - yt) ** 2)
    mse_ls = np.mean((Xt @ theta - yt) ** 2)
    assert mse_dd == pytest.approx(mse_ls, rel=1e-6)

    feats = [c for c in schema.names if c != "income>50K"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = DDSSPLogisticRegression(features=feats).fit(src, target="income>50K")
    X, y = encoded(train, log.encoding_)
    Xt, yt = encoded(test, log.encoding_)

    def nll(t):
        m = y * (X @ t)
        return np.sum(np.logaddexp(0, -m)), -X.T @ (y * (1 / (1 + np.exp(m))))

    opt = minimize(nll, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 2000})
    auc_dd = auc(log.decision_function(test), test["income>50K"].to_numpy())
    auc_lr = auc(Xt @ opt.x, test["income>50K"].to_numpy())
    print(
        f"\nAdult exact marginals: linear MSE DD-SSP {mse_dd:.5f} lstsq {mse_ls:.5f}; "
        f"logistic AUC DD-SSP {auc_dd:.4f} MLE {auc_lr:.4f}"
    )
    assert auc_dd > 0.85 and auc_lr > 0.85


def test_target_defaults_to_the_sources_declared_target():
    schema, codes = mixed_schema(), mixed_codes(300, seed=13)
    src = ExactMarginals(codes, schema)
    src.target = "member"
    est = DDSSPLogisticRegression().fit(src)
    assert est.target_ == "member"
    np.testing.assert_allclose(est.coef_, DDSSPLogisticRegression().fit(src, target="member").coef_)


def test_logistic_target_other_level_is_neither_class():
    """A binary target with an '<other>' level (labels that were not released): the two real labels
    are the classes, '<other>' is coded 0; with no row in '<other>' the fit equals the plain binary one."""
    rng = np.random.default_rng(3)
    n = 400
    x = rng.integers(0, 3, n)
    y = (rng.random(n) < 0.2 + 0.25 * x).astype(int)
    plain = Schema([Column.categorical("x", ["a", "b", "c"]), Column.categorical("y", ["no", "yes"])])
    other = Schema(
        [Column.categorical("x", ["a", "b", "c"]), Column.categorical("y", ["no", "yes"], missing="<other>")]
    )
    codes = pd.DataFrame({"x": x, "y": y})
    enc = Encoding(other, None, "y", kind="logistic")
    assert list(enc.target_levels) == [-1.0, 1.0, 0.0]
    est = DDSSPLogisticRegression().fit(ExactMarginals(codes, other), target="y")
    ref = DDSSPLogisticRegression().fit(ExactMarginals(codes, plain), target="y")
    assert np.allclose(est.coef_, ref.coef_) and math.isclose(est.intercept_, ref.intercept_)
    assert list(est.classes_) == [0, 1] and est.target_labels_ == ["no", "yes"]
    three = Schema([Column.categorical("x", ["a", "b", "c"]), Column.categorical("y", ["no", "yes", "maybe"])])
    with pytest.raises(DDSSPError, match="binary target; 'y' has 3 levels \\('no', 'yes', 'maybe'\\)") as err:
        DDSSPLogisticRegression().fit(ExactMarginals(codes, three), target="y")
    assert "--categorical" not in str(err.value)


def test_logistic_target_discovered_as_numbers_says_how_to_declare_it():
    """A 0/1 column discovered as a number with an empty third level (noise): the refusal names the
    levels and tells the data holder to declare the column categorical."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, 400)
    y = (rng.random(400) < 0.5).astype(int)
    schema = Schema([Column.categorical("x", ["a", "b", "c"]), Column.levels("y", [0, 1, 2])])
    with pytest.raises(DDSSPError, match="binary target; 'y' has 3 levels \\('0', '1', '2'\\)") as err:
        DDSSPLogisticRegression().fit(ExactMarginals(pd.DataFrame({"x": x, "y": y}), schema), target="y")
    assert "--categorical y" in str(err.value) and "--model linear" in str(err.value)


def _missing_target_table(n=6000, seed=0):
    """y depends on x and z; y is missing far more often when x is high (missing at random given x)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, n)
    z = rng.integers(0, 3, n)
    y = np.clip(x + z + rng.integers(-1, 2, n), 0, 5)
    missing = rng.random(n) < np.array([0.05, 0.1, 0.5, 0.8])[x]
    y = np.where(missing, 6, y)  # code 6: the missing level
    schema = Schema(
        [
            Column.categorical("x", ["x0", "x1", "x2", "x3"]),
            Column.categorical("z", ["z0", "z1", "z2"]),
            Column.levels("y", [0, 1, 2, 3, 4, 5], missing="<missing>"),
        ]
    )
    return schema, pd.DataFrame({"x": x, "z": z, "y": y}), missing


def test_missing_target_rows_are_left_out():
    """With exact marginals, the default fit equals the complete-case least squares exactly; keeping
    the rows (coded as the centre of the range) is further from it, and says so."""
    schema, codes, missing = _missing_target_table()
    assert schema.domain["y"] == 7
    est = DDSSPLinearRegression().fit(ExactMarginals(codes, schema), target="y")
    cc = codes[~missing]
    X, y = encoded(cc, est.encoding_)
    theta, *_ = np.linalg.lstsq(X, y, rcond=None)
    np.testing.assert_allclose(np.concatenate([[est.intercept_], est.coef_]), theta, atol=1e-9)
    assert est.n_ == len(cc) and est.target_unobserved_share_ == pytest.approx(missing.mean())
    with pytest.warns(UserWarning, match="kept and coded 0"):
        kept = DDSSPLinearRegression(missing_target="keep").fit(ExactMarginals(codes, schema), target="y")
    full = np.concatenate([[kept.intercept_], kept.coef_])
    assert np.linalg.norm(full - theta) > 10 * np.linalg.norm(np.concatenate([[est.intercept_], est.coef_]) - theta)
    with pytest.raises(DDSSPError, match="missing_target"):
        DDSSPLinearRegression(missing_target="impute").fit(ExactMarginals(codes, schema), target="y")


def test_missing_target_left_out_of_a_dp_release():
    """The same on a DP release: leaving the rows out is closer to the complete-case fit."""
    from ddssp.pipeline import AimOptions, ReadOptions, release

    schema, codes, missing = _missing_target_table(n=20000, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(
            codes,
            schema,
            eps=4.0,
            seed=0,
            target="y",
            progress=False,
            read=ReadOptions(encoded=True),
            aim=AimOptions(rounds=24),
        )
        drop = DDSSPLinearRegression().fit(rel, target="y")
        keep = DDSSPLinearRegression(missing_target="keep").fit(rel, target="y")
    cc = codes[~missing]
    X, y = encoded(cc, drop.encoding_)
    theta, *_ = np.linalg.lstsq(X, y, rcond=None)
    err = {
        name: np.linalg.norm(np.concatenate([[m.intercept_], m.coef_]) - theta)
        for name, m in (("drop", drop), ("keep", keep))
    }
    assert err["drop"] < err["keep"], err


def test_level_share_is_the_data_share_of_each_one_hot_level():
    """Exactness: from noise-free marginals, ``level_share`` of each one-hot term is the data's share
    of rows at that level (0 for an '<other>' level that holds none); NaN for the intercept and a
    numeric term."""
    rng = np.random.default_rng(0)
    n = 1000
    x = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    z = rng.integers(0, 5, n)
    y = (rng.random(n) < 0.3 + 0.2 * (x == 1)).astype(int)
    schema = Schema(
        [
            Column.categorical("x", ["a", "b", "c"], missing="<other>"),
            Column.levels("z", [0, 1, 2, 3, 4]),
            Column.categorical("y", ["no", "yes"]),
        ]
    )
    est = DDSSPLogisticRegression().fit(ExactMarginals(pd.DataFrame({"x": x, "z": z, "y": y}), schema), target="y")
    share = est.coef_table()["level_share"]
    truth = np.bincount(x, minlength=4) / n
    np.testing.assert_allclose(share[["x=b", "x=c", "x=<other>"]].to_numpy(), truth[1:], atol=1e-12)
    assert share["x=<other>"] == 0.0
    assert np.isnan(share["intercept"]) and np.isnan(share["z"])
