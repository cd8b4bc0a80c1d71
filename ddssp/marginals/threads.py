"""AIM's numpy work on one BLAS thread.

Scoring the candidates (:mod:`ddssp.marginals.pairs`: batched matrix products) and fitting the
model run many products of moderate size, one after another. A multi-threaded BLAS (OpenBLAS,
numpy's default) splits each across its threads, whose workers spin while they wait for the next
one; on a machine whose cores are busy with other work that spinning costs CPU and time (on a
loaded 2-core machine the same seeded release took 1.4 to 2 times the CPU of one thread: the
benchmarks' "Agencies: the eps-10 release's CPU"). A release is one sequential loop of such
products, so :func:`one_blas_thread` runs it on one thread. Its numbers are then also the same
whatever the machine's number of cores (a product split across threads may round differently).
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
