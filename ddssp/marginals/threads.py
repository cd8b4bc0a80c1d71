"""AIM's numpy work on one BLAS thread.

Scoring candidates (:mod:`ddssp.marginals.pairs`) and calibrating the model run many matrix
products of moderate size, one after another. A multi-threaded BLAS (OpenBLAS, numpy's default)
splits each across its threads, whose workers wait for the next product by spinning: on a machine
whose cores are busy with other work they burn CPU while they wait for a core, so the same release
costs from one to three times the CPU of a single thread, and takes longer. A release is one
sequential loop of such products, so :func:`one_blas_thread` runs it on one thread. The result is
also the same whatever the machine's number of cores (a product split across threads may round
differently).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from threadpoolctl import threadpool_limits

F = TypeVar("F", bound=Callable[..., Any])


def one_blas_thread(fn: F) -> F:
    """Run ``fn`` with every loaded BLAS library limited to one thread, restored after it returns.

    Parameters
    ----------
    fn : callable
        The function to wrap.

    Returns
    -------
    callable
        ``fn`` under the limit (same signature and docstring).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


__all__ = ["one_blas_thread"]
