"""ddssp: differentially private marginals, regressions (DD-SSP) and synthetic data.

Every public name is imported lazily (PEP 562) from the module that defines it: ``import ddssp``
imports neither numpy, pandas nor JAX, so the ``ddssp`` command (whose modules live in this package)
starts without them.
"""

from __future__ import annotations

from ddssp._lazy import lazy_getattr
from ddssp._version import __version__

# public name -> module that defines it. ``ddssp.release(...)`` is the function (no module is named
# ``release``).
_LAZY = {
    "release": "ddssp.pipeline",
    "Release": "ddssp.releasefile",
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
    "evaluate": "ddssp.evaluation",
    "QualityReport": "ddssp.evaluation",
}

__all__ = ["__version__", *_LAZY]

__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    """The module's names and the lazy exports, for tab completion in notebooks."""
    return sorted({*globals(), *_LAZY})
