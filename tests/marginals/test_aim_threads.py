"""AIM runs its matrix products on one BLAS thread, and gives the caller's thread limits back."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from ddssp.dp import InsecureSeededNoise
from ddssp.marginals.aim import run_aim
from ddssp.marginals.threads import one_blas_thread
from ddssp.marginals.workload import all_pairs

DOM = {"a": 3, "b": 4, "c": 2, "d": 3}


def _blas_threads() -> list[int]:
    return [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]


def _data(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    return pd.DataFrame({"a": a, "b": b, "c": (b > 1).astype(int), "d": (a + rng.integers(0, 2, n)) % 3})


def test_a_run_is_on_one_blas_thread_and_restores_the_limit():
    if not _blas_threads():
        pytest.skip("no BLAS library loaded")
    seen: list[list[int]] = []
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        res = run_aim(
            _data(300),
            DOM,
            all_pairs(DOM),
            0.5,
            rng=np.random.default_rng(0),
            noise=InsecureSeededNoise(3),
            callback=lambda progress: seen.append(_blas_threads()),
        )
        after = _blas_threads()
    assert res.rounds >= 1 and len(seen) >= 2
    assert all(t == [1] * len(t) for t in seen)  # every callback (counting, each round, final) saw one thread
    assert after == before  # the caller's own limit is back


def test_the_wrapper_keeps_the_function_and_restores_on_error():
    def boom(x: int) -> int:
        """Doc."""
        raise ValueError(str(x))

    wrapped = one_blas_thread(boom)
    assert wrapped.__doc__ == "Doc." and wrapped.__wrapped__ is boom
    before = _blas_threads()
    with pytest.raises(ValueError, match="7"):
        wrapped(7)
    assert _blas_threads() == before
