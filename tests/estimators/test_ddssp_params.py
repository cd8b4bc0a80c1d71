"""DD-SSP estimator parameters: one constraint table checked in fit, interval options as a validated
constructor parameter, get_params / set_params / clone round trips, and the shared base class."""

from __future__ import annotations

import numpy as np
import pytest

from ddssp.errors import DDSSPError
from ddssp.estimators.ddssp import DDSSPEstimator, DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.estimators.ddssp_intervals import IntervalOptions
from ddssp.estimators.params import InvalidParameterError
from ddssp.estimators.suffstats import ExactMarginals
from tests.estimators.test_suffstats import mixed_codes, mixed_schema

BOTH = [(DDSSPLinearRegression, "y"), (DDSSPLogisticRegression, "member")]


@pytest.fixture(scope="module")
def source():
    return ExactMarginals(mixed_codes(800, seed=3), mixed_schema())


@pytest.mark.parametrize(
    "cls,param,value",
    [
        (DDSSPLinearRegression, "ridge", -1.0),
        (DDSSPLinearRegression, "ridge", float("nan")),
        (DDSSPLinearRegression, "ridge", "0.5"),
        (DDSSPLinearRegression, "psd", "eigen"),
        (DDSSPLinearRegression, "missing_target", "impute"),
        (DDSSPLinearRegression, "features", "age"),
        (DDSSPLinearRegression, "encoding", ["age"]),
        (DDSSPLinearRegression, "ci", 0.0),
        (DDSSPLinearRegression, "ci", 1.0),
        (DDSSPLinearRegression, "ci", "0.95"),
        (DDSSPLinearRegression, "intervals", {"boot": 5}),
        (DDSSPLogisticRegression, "degree", 3),
        (DDSSPLogisticRegression, "R", 0.0),
        (DDSSPLogisticRegression, "R", float("inf")),
        (DDSSPLogisticRegression, "ci", 1.5),
    ],
)
def test_constraint_table_names_the_bad_parameter(source, cls, param, value):
    est = cls(**{param: value})
    assert est.get_params()[param] is value  # the constructor stores, fit checks
    target = "y" if cls is DDSSPLinearRegression else "member"
    with pytest.raises(InvalidParameterError) as err:
        est.fit(source, target=target)
    assert err.value.parameter == param
    message = str(err.value)
    assert message.startswith(f"{param} must be ") and f"got {value!r}" in message
    assert "\n" not in message
    assert not hasattr(est, "coef_")


def test_every_constructor_parameter_is_constrained():
    for cls in (DDSSPLinearRegression, DDSSPLogisticRegression):
        assert set(cls._parameter_constraints) == set(cls().get_params())


@pytest.mark.parametrize(
    "options,param",
    [
        (dict(boot=1), "boot"),
        (dict(boot=2.5), "boot"),
        (dict(boot=True), "boot"),
        (dict(seed=-1), "seed"),
        (dict(seed="1"), "seed"),
        (dict(dp_noise="yes"), "dp_noise"),
        (dict(sampling="bootstrap"), "sampling"),
        (dict(boot_iters=0), "boot_iters"),
        (dict(sampling_rows=99), "sampling_rows"),
        (dict(bootstrap="jackknife"), "bootstrap"),
        (dict(interval="studentized"), "interval"),
        (dict(interval="percentile"), "interval"),  # replicate quantiles need the mechanism bootstrap
        (dict(unmeasured="drop"), "unmeasured"),
        (dict(bootstrap="mechanism", dp_noise=False, boot=1), "boot"),
    ],
)
def test_interval_options_are_validated_when_made(options, param):
    with pytest.raises(InvalidParameterError) as err:
        IntervalOptions(**options)
    assert err.value.parameter == param and str(err.value).startswith(param)


def test_interval_options_accepted_values():
    assert IntervalOptions(dp_noise=False, boot=0).boot == 0  # no DP part: no replicates needed
    assert IntervalOptions(bootstrap="mechanism", interval="percentile", seed=np.random.default_rng(0)).interval
    with pytest.raises(AttributeError):  # frozen
        IntervalOptions().boot = 5  # type: ignore[misc]


def test_get_params_and_clone_keep_the_interval_options(source):
    sklearn_base = pytest.importorskip("sklearn.base")
    options = IntervalOptions(dp_noise=False, sampling="ols", unmeasured="keep")
    est = DDSSPLinearRegression(ridge=0.5, features=["age", "color"], ci=0.9, intervals=options)
    params = est.get_params()
    assert params["ci"] == 0.9 and params["intervals"] is options
    for copy in (type(est)(**params), sklearn_base.clone(est)):
        assert copy is not est and copy.get_params()["intervals"] == options
        assert copy.get_params() == params
        a, b = est.fit(source, "y").conf_int(), copy.fit(source, "y").conf_int()
        np.testing.assert_array_equal(a[["estimate", "stderr"]].to_numpy(), b[["estimate", "stderr"]].to_numpy())
    assert repr(est).startswith("DDSSPLinearRegression(ridge=0.5") and "IntervalOptions(" in repr(est)
    with pytest.raises(DDSSPError, match="unknown parameter 'boot'"):
        est.set_params(boot=5)


def test_set_params_then_refit_without_ci_drops_the_intervals(source):
    est = DDSSPLinearRegression(ci=0.9, intervals=IntervalOptions(dp_noise=False)).fit(source, "y")
    assert "stderr" in est.coef_table().columns
    est.set_params(ci=None, intervals=None).fit(source, "y")
    assert not hasattr(est, "stderr_") and "stderr" not in est.coef_table().columns
    with pytest.raises(DDSSPError, match="no standard errors"):
        est.conf_int()


def test_interval_options_without_ci_and_misplaced_fit_keywords(source):
    with pytest.raises(InvalidParameterError, match="ci=0.95") as err:
        DDSSPLinearRegression(intervals=IntervalOptions(dp_noise=False)).fit(source, "y")
    assert err.value.parameter == "intervals"
    with pytest.raises(InvalidParameterError, match="replicates apply to standard errors"):
        DDSSPLinearRegression().fit(source, "y", replicates=[])
    with pytest.raises(DDSSPError, match=r"constructor parameters: DDSSPLinearRegression\(ci=0.9, intervals="):
        DDSSPLinearRegression().fit(source, "y", ci=0.9, dp_noise=False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'tagret'"):
        DDSSPLinearRegression().fit(source, tagret="y")


def test_linear_and_logistic_share_one_base_and_one_fit(source):
    for cls, _ in BOTH:
        assert issubclass(cls, DDSSPEstimator)
        assert cls.fit is DDSSPEstimator.fit and cls.conf_int is DDSSPEstimator.conf_int
    assert DDSSPLinearRegression._chebyshev_step is DDSSPEstimator._chebyshev_step
    assert DDSSPLogisticRegression._chebyshev_step is not DDSSPEstimator._chebyshev_step
    # the hook is the only difference in the solve: logistic = factor * (least squares on the -1/+1 target)
    enc = DDSSPLogisticRegression().fit(source, "member").encoding_
    logit = DDSSPLogisticRegression(encoding=enc).fit(source, "member")
    b = logit.chebyshev_coef_
    ls = DDSSPEstimator._solve(logit, logit.suffstats_, enc)
    np.testing.assert_allclose(
        np.concatenate([[logit.intercept_], logit.coef_]), (-b[1] / (2 * b[2])) * ls, rtol=1e-12, atol=1e-14
    )
