"""The DP side of private schema discovery, by the names discovery's callers import.

:class:`~ddssp.dp.charged.ChargedMechanisms` runs discovery's mechanisms (charged to a ledger, then
drawn); :mod:`ddssp.dp.discovery_mechanisms` holds their costs, thresholds, scores and entry
checks. Both are available from here.
"""

from ddssp.dp.charged import ChargedMechanisms
from ddssp.dp.discovery_mechanisms import (
    MEDIAN_SENSITIVITY,
    choose_threshold,
    discrete_tail_bound,
    gaussian_counts_rho,
    gaussian_threshold_measurement,
    median_scale,
    median_scores,
    threshold_cost,
    threshold_fallback,
)

__all__ = [
    "MEDIAN_SENSITIVITY",
    "ChargedMechanisms",
    "choose_threshold",
    "discrete_tail_bound",
    "gaussian_counts_rho",
    "gaussian_threshold_measurement",
    "median_scale",
    "median_scores",
    "threshold_cost",
    "threshold_fallback",
]
