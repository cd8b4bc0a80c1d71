"""Integer-coded clock times HHMM (0..2359, minutes below 60): discovery tells them from other whole
numbers by two noisy counts, and their synthetic values are clock times."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Schema
from ddssp.data.dates import hhmm_cells, hhmm_snap, hhmm_sub_cells, hhmm_valid, may_be_hhmm
from ddssp.data.discovery import discover
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise


def test_clock_time_cells_and_candidates():
    x = np.array([0, 59, 60, 1259, 1260, 2359, 2400, 12.5, np.nan])
    assert hhmm_valid(x[:8]).tolist() == [True, True, False, True, False, True, False, False]
    assert hhmm_cells(x).tolist() == [4, 4]
    assert may_be_hhmm(0.0, 3162.3, True) and may_be_hhmm(100.0, 1778.3, True)
    assert may_be_hhmm(1000.0, 3162.3, True) and not may_be_hhmm(1778.3, 3162.3, True)  # years 2003-2009
    assert not may_be_hhmm(0.0, 100.0, True) and not may_be_hhmm(0.0, 3162.3, False)
    assert may_be_hhmm(0.0, 5623.4, True)
    assert not may_be_hhmm(-10.0, 3162.3, True) and not may_be_hhmm(0.0, 10000.0, True)


def test_sub_cells_put_no_weight_on_minutes_60_to_99():
    """A bin [1230, 1410) split in two sub-cells: the weights go to 1230-1259, 1300-1359 and
    1400-1409 in proportion to their whole numbers; representative values snap to clock times."""
    cuts, w = hhmm_sub_cells(1230.0, 1410.0, (1300.0,), (0.5, 0.5))
    sub = np.array([1230.0, *cuts, 1410.0])
    w = np.asarray(w)
    assert np.isclose(w.sum(), 1.0)
    for lo, hi, wi in zip(sub, sub[1:], w):
        ok = hhmm_valid(np.arange(np.ceil(lo), np.ceil(hi)))
        assert (wi > 0) == bool(ok.all()) and (ok.all() or not ok.any())
    assert hhmm_snap(1275.0, 1230.0, 1410.0) == 1259.0
    assert hhmm_snap(1275.0, 1262.0, 1410.0) == 1300.0
    assert hhmm_snap(1230.0, 1230.0, 1410.0) == 1230.0


def _flights(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mins = np.clip(rng.normal(13 * 60, 240, n), 0, 1439).astype(int)
    return pd.DataFrame(
        {
            "dep": (mins // 60) * 100 + mins % 60,
            "dist": np.round(rng.gamma(2, 400, n)),
            "carrier": rng.choice(list("ABCD"), n),
        }
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_departure_times_decode_to_clock_times(seed):
    """3,000 rows at eps 1: HHMM departure times are found to be clock times and no synthetic value
    has minutes of 60 or more (without the check, 30-37% did on these seeds); a distance column in
    the same range of whole numbers is not taken for clock times."""
    df = _flights(3000)
    rho = rho_from_eps_delta(1.0, 1e-9)
    mech = ChargedMechanisms(Ledger(rho, delta_budget=1e-9), InsecureSeededNoise(seed))
    cols, rep, _ = discover(df, list(df.columns), mech, rho=0.1 * rho, delta=5e-10, rho_max=rho, collect=True)
    assert "clock times HHMM" in rep.notes["dep"]
    assert "clock times" not in rep.notes.get("dist", "")
    col = cols["dep"]
    rng = np.random.default_rng(seed)
    syn = Schema([col]).decode(pd.DataFrame({"dep": rng.integers(0, col.size, 5000)}), rng=rng)["dep"].to_numpy(float)
    assert hhmm_valid(syn).all()
    assert hhmm_valid(np.asarray(col.values[: len(col.edges) - 1], dtype=float)).all()
