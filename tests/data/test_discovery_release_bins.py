"""A binned column's number of bins from the release's budget (:func:`ddssp.data.discovery.table.release_bins`)."""

from __future__ import annotations


def test_bins_follow_the_release_budget_not_the_number_of_columns():
    """A binned column's number of bins is what a column alone would get from an even share of the
    release's budget: more than its own grid's noise gives when ten columns share discovery, never
    fewer, and left to the column's own rule where its rows are too few for histograms."""
    from ddssp.data.discovery.shared import noise_sd
    from ddssp.data.discovery.table import RELEASE_BINS, release_bins

    rho_max = 0.0144  # eps 1, delta 1e-9
    sd = noise_sd(rho_max / 10)
    assert release_bins(7634.0, 0.000588, sd) >= 9  # the NIST excerpt's AGEP: 4 from its own grid
    assert release_bins(100000.0, 0.01, sd) == RELEASE_BINS[1]
    assert release_bins(1000.0, 0.0009, sd) is None  # 4 bins at most: the column's own rule decides
    assert release_bins(7634.0, 1e-5, sd) is None  # medians: too few rows for the budget
    assert release_bins(7634.0, 0.000588, None) is None
