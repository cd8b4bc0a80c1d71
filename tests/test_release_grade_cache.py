"""A release's grade is computed once and reused until the release changes
(:func:`ddssp.releasefile.quality.grade`)."""

from __future__ import annotations

import copy
import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.pipeline import AimOptions, ReadOptions, release
from ddssp.releasefile import quality


@pytest.fixture()
def rel():
    rng = np.random.default_rng(0)
    codes = pd.DataFrame({"a": rng.integers(0, 3, 400), "b": rng.integers(0, 4, 400), "c": rng.integers(0, 2, 400)})
    from ddssp.data.schema import Schema

    schema = Schema.from_domain({"a": 3, "b": 4, "c": 2}, categorical=["a", "c"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release(
            codes,
            schema,
            eps=2.0,
            insecure_seed=1,
            seed=1,
            read=ReadOptions(encoded=True),
            aim=AimOptions(rounds=6),
            progress=False,
        )


@pytest.fixture()
def counted(monkeypatch):
    calls = []
    compute = quality._compute_grade

    def counting(r):
        calls.append(r)
        return compute(r)

    monkeypatch.setattr(quality, "_compute_grade", counting)
    return calls


def test_grade_is_cached_until_the_release_changes(rel, counted):
    first = rel.grade()
    assert len(counted) <= 1  # (the release may have graded itself when it was made)
    n = len(counted)
    assert rel.grade() is first and len(counted) == n
    repr(rel)
    rel._repr_html_()
    assert len(counted) == n  # repr and the notebook view reuse it
    # a measurement re-scaled in place, one replaced, one removed, an attribute replaced: each
    # computes it again, and the new grade says what changed
    rel.measurements[-1].sigma = float(rel.measurements[-1].sigma) * 4
    second = rel.grade()
    assert len(counted) == n + 1 and second is not first and repr(second) != repr(first)
    assert rel.grade() is second and len(counted) == n + 1
    rel.measurements[0] = dataclasses.replace(rel.measurements[0])
    rel.grade()
    assert len(counted) == n + 2
    rel.measurements.pop()
    rel.grade()
    assert len(counted) == n + 3
    rel.evidence = {"dropped": {"zz": "too rare"}}
    rel.grade()
    assert len(counted) == n + 4


def test_cached_grade_equals_a_fresh_one(rel):
    cached = rel.grade()
    fresh = quality._compute_grade(copy.deepcopy(rel))
    assert repr(cached) == repr(fresh)
    rel.measurements.pop(0)
    assert repr(rel.grade()) == repr(quality._compute_grade(rel))
