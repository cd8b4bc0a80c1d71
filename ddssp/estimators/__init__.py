"""DP regression estimators behind one scikit-learn style interface (see :mod:`ddssp.estimators.base`).

Every estimator is importable from here (loaded on first use):

- from a release (post-processing): ``DDSSPLinearRegression``, ``DDSSPLogisticRegression`` (their
  shared base ``DDSSPEstimator``; interval settings ``IntervalOptions``);
- from rows: ``AdaSSP``, ``ObjectivePerturbation``, ``PDPOutputPerturbation`` with its baselines
  ``NonPersonalizedOutputPerturbation`` and ``JorgensenSampleMechanism``, ``NAPPERM``;
- multi-task (user-level DP): ``MultiTaskSSP``, ``MultiTaskNoisyGD``, ``DPALS``;
- non-private references: ``PublicLinearRegression``, ``PublicLogisticRegression``.
"""

from __future__ import annotations

from ddssp._lazy import lazy_getattr
from ddssp.estimators.base import DPClassifier, DPEstimator, DPRegressor

_LAZY = {
    "DDSSPLinearRegression": "ddssp.estimators.ddssp",
    "DDSSPLogisticRegression": "ddssp.estimators.ddssp",
    "DDSSPEstimator": "ddssp.estimators.ddssp",
    "IntervalOptions": "ddssp.estimators.ddssp_intervals",
    "AdaSSP": "ddssp.estimators.adassp",
    "ObjectivePerturbation": "ddssp.estimators.objpert",
    "PDPOutputPerturbation": "ddssp.estimators.pdp_op",
    "NonPersonalizedOutputPerturbation": "ddssp.estimators.pdp_op",
    "JorgensenSampleMechanism": "ddssp.estimators.pdp_op",
    "NAPPERM": "ddssp.estimators.napp_erm",
    "MultiTaskSSP": "ddssp.estimators.multitask",
    "MultiTaskNoisyGD": "ddssp.estimators.multitask",
    "DPALS": "ddssp.estimators.multitask",
    "PublicLinearRegression": "ddssp.estimators.public",
    "PublicLogisticRegression": "ddssp.estimators.public",
}

__all__ = ["DPEstimator", "DPRegressor", "DPClassifier", *_LAZY]

__getattr__ = lazy_getattr(__name__, _LAZY)
