"""Multi-task adaptive SSP: the data model, budget and weights (:mod:`.model`), the weighted SSP and
noisy GD regressions (:mod:`.regression`), DP-ALS (:mod:`.als`), the synthetic generators
(:mod:`.synthetic`) and the estimators behind the common interface (:mod:`.estimators`)."""

from ddssp.estimators.multitask.estimators import DPALS, MultiTaskNoisyGD, MultiTaskSSP
from ddssp.estimators.multitask.model import MultiTaskData

__all__ = ["DPALS", "MultiTaskNoisyGD", "MultiTaskSSP", "MultiTaskData"]
