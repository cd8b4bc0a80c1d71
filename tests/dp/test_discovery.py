"""The discovery mechanisms (OpenDP), run through ChargedMechanisms: key release by thresholded
noisy counts, noisy counts and private medians.

Statistical tests state their false-alarm rate; each is at most 1e-6 per run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ddssp.dp import ChargedMechanisms, Ledger
from ddssp.dp.discovery import (
    choose_threshold,
    discrete_tail_bound,
    gaussian_counts_rho,
    threshold_cost,
)
from ddssp.errors import PrivacyParameterError


def _discrete_tail(sigma: float, m: int) -> float:
    k = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    w = np.exp(-(k.astype(float) ** 2) / (2 * sigma**2))
    return float(w[k >= m].sum() / w.sum())


@pytest.mark.parametrize("sigma", [0.7, 1.0, 3.0, 20.0])
def test_delta_bounds_the_exact_discrete_gaussian_tail(sigma):
    # exact (brute-force) probability that a one-row label reaches the threshold, for several thresholds
    for threshold in (2, 3, int(3 * sigma) + 2, int(6 * sigma) + 2):
        exact = _discrete_tail(sigma, threshold - 1)
        _, delta = threshold_cost(sigma, threshold)
        assert delta >= exact
        assert discrete_tail_bound(sigma, threshold - 1) >= exact


def test_choose_threshold_is_the_smallest_feasible():
    for sigma, delta in [(1.0, 0.02), (5.0, 1e-6), (82.0, 3e-11)]:
        t = choose_threshold(sigma, delta)
        assert threshold_cost(sigma, t)[1] <= delta
        assert threshold_cost(sigma, t - 1)[1] > delta


def test_one_row_label_released_at_most_delta_and_a_big_label_always():
    """4,000 key releases of {big: 3000 rows, one: 1 row} at sigma 1 (delta ~ 0.006 per run).
    The one-row label's release count must not exceed the binomial(4000, delta) upper quantile at
    1e-6 (false-alarm rate 1e-6); a 3000-row label with threshold 4 is released every time (it fails
    only if the noise is below -2996, probability < 1e-300 per run)."""
    sigma = 1.0
    threshold = choose_threshold(sigma, 0.02)
    _, delta = threshold_cost(sigma, threshold)
    runs, hits, big = 4000, 0, 0
    for _ in range(runs):
        out, used = ChargedMechanisms(Ledger(1.0, delta_budget=0.5)).keys(
            {"big": 3000, "one": 1}, sigma, 0.02, column="c"
        )
        assert used == threshold
        hits += "one" in out
        big += "big" in out
    assert hits <= stats.binom.isf(1e-6, runs, delta)
    assert big == runs


def test_noisy_counts_cost_and_spread():
    """rho = 1 / (2 sigma^2) (OpenDP's map); noise mean and variance within 5 standard errors
    (false-alarm rate < 1e-6 each)."""
    sigma = 4.0
    assert math.isclose(gaussian_counts_rho(sigma), 1 / (2 * sigma**2), rel_tol=1e-12)
    counts = np.full(20000, 1000, dtype=np.int64)
    ledger = Ledger(1.0)
    y = ChargedMechanisms(ledger).counts(counts, sigma, column="c", note="cells")
    assert y.dtype == np.int64
    (e,) = ledger.entries
    assert e.kind == "discover-counts" and math.isclose(e.rho, 1 / (2 * sigma**2), rel_tol=1e-12)
    z = y - counts
    assert abs(z.mean()) < 5 * sigma / math.sqrt(z.size)
    assert abs(z.var() / sigma**2 - 1) < 5 * math.sqrt(2 / z.size)


def test_bad_parameters():
    mech = ChargedMechanisms(Ledger(1.0))
    with pytest.raises(PrivacyParameterError):
        mech.counts([1, 2], 0.0, column="c", note="")
    with pytest.raises(PrivacyParameterError):
        mech.counts([1.5, 2], 1.0, column="c", note="")
    with pytest.raises(PrivacyParameterError):
        mech.counts([1, -2], 1.0, column="c", note="")
    assert mech.ledger.entries == []
    with pytest.raises(PrivacyParameterError):
        choose_threshold(1.0, 1.5)


# ----------------------------------------------------------------------------- private medians
def test_median_scores_change_by_at_most_half_when_one_row_is_added():
    from ddssp.dp.discovery import MEDIAN_SENSITIVITY, median_scores

    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(200):
        c = rng.integers(0, 20, rng.integers(1, 12))
        for i in range(c.size):
            d = c.copy()
            d[i] += 1
            worst = max(worst, float(np.max(np.abs(median_scores(d) - median_scores(c)))))
    assert worst == MEDIAN_SENSITIVITY  # reached, never passed
    # the best edge of [1, 2, 3, 4] is the one with 6 rows below and 4 at or above
    assert int(np.argmax(median_scores(np.array([1, 2, 3, 4])))) == 3


def test_medians_charge_one_entry_per_level_at_opendps_cost():
    from ddssp.dp.entries import entry_problem

    ledger = Ledger(1.0)
    picks = ChargedMechanisms(ledger).medians(
        [np.array([3, 0, 2]), np.array([1, 1]), np.array([0])], 1e-3, column="x", note="level 1"
    )
    assert len(picks) == 3 and 0 <= picks[0] <= 3 and 0 <= picks[1] <= 2 and picks[2] in (0, 1)
    (e,) = ledger.entries
    assert e.kind == "discover-medians" and math.isclose(e.rho, 1e-3, rel_tol=1e-9) and e.params["groups"] == 3
    assert entry_problem(e) is None
    e.params["sensitivity"] = 1.0
    assert "sensitivity" in entry_problem(e)
    with pytest.raises(PrivacyParameterError):
        ChargedMechanisms(Ledger(1.0)).medians([np.array([], dtype=np.int64)], 1e-3, column="x", note="")


def test_medians_draw_as_the_exponential_mechanism():
    """Chi-square of 3,000 secure draws against exp(score / scale) (false alarm 1e-6)."""
    from ddssp.dp.discovery import median_scale, median_scores

    counts = np.array([4, 0, 6, 2])
    rho = 0.03125  # scale 2
    want = np.exp(median_scores(counts) / median_scale(rho))
    want /= want.sum()
    mech = ChargedMechanisms(Ledger(1e9))
    draws = mech.medians([counts] * 3000, rho, column="x", note="")
    seen = np.bincount(draws, minlength=counts.size + 1)
    assert stats.chisquare(seen, 3000 * want).pvalue > 1e-6
    # and it is not uniform: the statistic can fail
    assert stats.chisquare(seen, np.full(counts.size + 1, 600.0)).pvalue < 1e-6
