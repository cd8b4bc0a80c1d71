"""A numeric column's ``<missing>`` level: given when the scan's one noisy count of missing cells shows
at the level of a single test (``MISSING_SDS``), so a code column whose "not applicable" marker holds a
few percent of the rows keeps it as a level instead of writing those rows as the median's code."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddssp.data.discovery.numeric import MISSING_SDS, _missing_level
from ddssp.data.discovery.scan import MISSING_LABEL, ScanResult
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.pipeline import DEFAULT_DELTA
from ddssp.pipeline.plan import plan_schema


def _scan(missing: float, sigma: float = 50.0, missing_sd: float = 50.0) -> ScanResult:
    return ScanResult(kind="numeric", n_present=5000.0, missing=missing, missing_sd=missing_sd, sigma=sigma)


def test_the_missing_level_follows_the_single_count_level():
    """The missing count is one count tested, at its own noise sd: 3.2 sds of it gives the level, 2.8
    sds does not, and the level is that of one test (3 sds), not the 4.5 of a scan cell among hundreds."""
    assert MISSING_SDS == 3.0
    for sd in (50.0, 50.0 * math.sqrt(2)):
        assert _missing_level(_scan(3.2 * sd, missing_sd=sd)) == MISSING_LABEL
        assert _missing_level(_scan(2.8 * sd, missing_sd=sd)) is None


def test_the_missing_count_sd_is_that_of_the_cells_it_sums():
    """The scan's missing count sums the missing cell and the text cells above the noise: its sd is the
    scan's sigma times the root of their number (each row in one cell, independent noises)."""
    from ddssp.data.discovery.scan import scan_column
    from ddssp.dp import ChargedMechanisms, Ledger

    rng = np.random.default_rng(0)
    x = rng.integers(1, 7, 5000).astype(float)
    isna = np.zeros(5000, dtype=bool)
    isna[:300] = True
    x[:300] = np.nan
    mech = ChargedMechanisms(Ledger(1.0), InsecureSeededNoise(0))
    plain = scan_column(x.copy(), isna.copy(), "a", 0.01, mech, None)
    assert plain.missing_sd == pytest.approx(plain.sigma)
    x[300:600] = np.nan  # 300 text cells (not numbers, not missing)
    text = scan_column(x, isna, "a", 0.01, mech, None)
    assert text.text > 0 and text.missing_sd == pytest.approx(text.sigma * math.sqrt(2))


def _codes(n=4000, na_share=0.0, seed=0):
    """Two code columns 1..6 (a tenth of the rows outside the commonest code), one with ``N`` in
    ``na_share`` of its rows, beside a categorical column."""
    rng = np.random.default_rng(seed)
    a = rng.choice([1, 2, 3, 4, 5, 6], n, p=[0.4, 0.2, 0.15, 0.1, 0.1, 0.05]).astype(object)
    a[rng.random(n) < na_share] = np.nan
    return pd.DataFrame({"edu": a, "b": rng.choice([1, 2, 3], n).astype(float), "c": rng.choice(list("xyz"), n)})


def test_a_marker_in_a_few_percent_of_the_rows_is_a_level_and_none_appears_without_one():
    """At eps 1, 4,000 rows: ``N`` in 5% of a code column's rows (about 200) is a ``<missing>`` level
    in at least 19 of 20 fixed draws (20 when written; at the scan cells' 4.5 sds, 13); the column
    without missing cells gets none in any of them."""
    df = _codes(na_share=0.05)
    kept = 0
    for seed in range(20):
        plan = plan_schema(df, None, eps=1.0, delta=DEFAULT_DELTA, noise=InsecureSeededNoise(seed))
        kept += plan.schema.column("edu").missing is not None
        assert plan.schema.column("b").missing is None
    assert kept >= 19, kept
