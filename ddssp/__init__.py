"""ddssp: differentially private marginals, regressions (DD-SSP) and synthetic data.

Heavy modules are imported lazily: ``import ddssp`` does not import JAX.
"""

from __future__ import annotations

from ddssp._lazy import lazy_getattr

from ddssp._version import __version__

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
}

# ``ddssp.release(...)`` is the function; importing it here, eagerly, keeps the name bound to the
# function even after the submodule ``ddssp.release`` is imported (use ``from ddssp.release import ...``
# for the module's other names). It imports numpy/pandas, not JAX.
from ddssp.release import Release, release  # noqa: E402

__all__ = ["__version__", "release", "Release", *_LAZY]

__getattr__ = lazy_getattr(__name__, _LAZY)
