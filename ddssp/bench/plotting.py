"""matplotlib for the bench's figures: an optional dependency, drawn off-screen."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """matplotlib's ``pyplot`` on the non-interactive Agg backend (figures are written to files,
    never shown), or None when matplotlib is not installed (the bench then skips its figures).

    Returns
    -------
    module or None
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
