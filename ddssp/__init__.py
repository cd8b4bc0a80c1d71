"""ddssp: differentially private marginals, regressions (DD-SSP) and synthetic data.

Heavy modules are imported lazily: ``import ddssp`` does not import JAX.
"""

from __future__ import annotations

from ddssp._lazy import lazy_getattr
from ddssp._version import __version__

# ``ddssp.release(...)`` is the function (no module is named ``release``); these import numpy and
# pandas, not JAX.
from ddssp.pipeline import release
from ddssp.releasefile import Release

# public name -> module that defines it (filled in as features land)
_LAZY = {
    "Ledger": "ddssp.dp",
    "rho_from_eps_delta": "ddssp.dp",
    "eps_from_rho_delta": "ddssp.dp",
    "DDSSPError": "ddssp.errors",
    "run_bench": "ddssp.bench",
    "Schema": "ddssp.data",
    "load_schema": "ddssp.data",
    "read_table": "ddssp.data.tables",
    "ReadOptions": "ddssp.pipeline",
    "DiscoveryOptions": "ddssp.pipeline",
    "AimOptions": "ddssp.pipeline",
    "DDSSPLinearRegression": "ddssp.estimators.ddssp",
    "DDSSPLogisticRegression": "ddssp.estimators.ddssp",
    "evaluate": "ddssp.report",
    "QualityReport": "ddssp.report",
}

__all__ = ["__version__", "release", "Release", *_LAZY]

__getattr__ = lazy_getattr(__name__, _LAZY)
