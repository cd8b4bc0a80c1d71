"""Multi-task adaptive SSP: the data model, weights and algorithms (:mod:`.model`) and the
estimators behind the common interface (:mod:`.estimators`)."""

from ddssp.estimators.multitask.estimators import DPALS, MultiTaskNoisyGD, MultiTaskSSP
from ddssp.estimators.multitask.model import MultiTaskData

__all__ = ["DPALS", "MultiTaskNoisyGD", "MultiTaskSSP", "MultiTaskData"]
