"""JAX settings that must be in place before :mod:`mbi` is imported.

mbi (private-pgm 2.x) runs on JAX. It needs float64 (float32 stalls on counts of ~50,000 rows), and
the persistent compilation cache is counter-productive for its many small programs. Call
:func:`configure_jax` before ``import mbi``; it is idempotent and cheap.
"""

from __future__ import annotations

_DONE = False


def configure_jax() -> None:
    """Enable float64 and disable the persistent compilation cache (idempotent)."""
    global _DONE
    if _DONE:
        return
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    _DONE = True
