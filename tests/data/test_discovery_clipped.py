"""The noisy clipped shares discovery records (``grade_evidence``) name discovered columns only: a
numeric column refused after its range was cut leaves no entry, which a release file would reject
("one entry per column at most", an unknown column)."""

from __future__ import annotations

import numpy as np
import pytest

import ddssp.data.discovery.numeric as numeric
from ddssp.data.discovery.scan import ScanResult
from ddssp.errors import SchemaError


class _Exact:
    """A stand-in for the charged mechanisms: exact counts."""

    def counts(self, cells, sigma, column=None, note=None):
        return np.asarray(cells, dtype=float)


def _scan(n: int) -> ScanResult:
    return ScanResult(kind="numeric", n_present=float(n), missing=0.0, lo=0.0, hi=100.0, lo_pos=1.0, sigma=5.0)


def test_a_column_refused_after_its_cut_leaves_no_clipped_share(monkeypatch):
    x = np.random.default_rng(0).uniform(1, 99, 3000)
    clipped: dict = {}
    col, _ = numeric.discover_numeric(x, "x", 1.0, _Exact(), _scan(x.size), None, 32, clipped)
    assert set(clipped) == {"x"}  # a discovered column records its shares

    def refuse(st):
        raise SchemaError("column 'x': refused after the cut")

    monkeypatch.setattr(numeric, "_bins_column", refuse)
    clipped = {}
    with pytest.raises(SchemaError):
        numeric.discover_numeric(x, "x", 1.0, _Exact(), _scan(x.size), None, 32, clipped)
    assert clipped == {}
