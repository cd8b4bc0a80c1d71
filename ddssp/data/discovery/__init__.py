"""Private schema discovery: column kinds, categorical levels, numeric bounds and bin edges, all
read from the data only through noisy counts charged to a privacy ledger.

First (when the pipeline passes the release's budget) a noisy row count: a small table gets a larger
share of the budget for its columns without declared bounds (up to ``MAX_AUTO_SHARE``,
:mod:`.budget`), since the noise of a count does not shrink with the table. Then, per discovered column (names are public; nothing else about the data is):

1. **Scan** (every column whose kind or range is unknown): one vector of counts, one cell per row,
   noised with the discrete Gaussian (:func:`ddssp.dp.discovery.noisy_counts`). The cells are fixed
   in advance (public): missing, text (not a number), and for numbers a signed log-spaced band
   (four per decade from 1e-6 to 1e12, exact zero its own cell), split by whole / not whole, and
   four cells for text that parses as an ISO date, an ISO timestamp, a clock time HH:MM or
   HH:MM:SS. From the noisy cells (only cells clearly above the noise count) come the kind
   (numeric, categorical, or a date / clock-time column when those values hold at least 80% of
   the present values; a mix of numbers and text is refused), the range (outer edges of the
   populated bands, grown by neighbouring bands that show, alone or a few together), whether the
   numbers are whole, and the mass at exactly zero. A range read only from windows of several
   bands (no single band shows) needs a window at the union level of all the windows tested, keeps
   the strongest segment cut to bands that show at its ends, and does not grow; a column whose
   numbers show only at the level of noise is left out with that reason.
   **Date columns** then spend another scan's share on the range of their values as days since
   1970-01-01 (the same log-band slots, on that axis, grown the same way), and go on as numeric
   columns on that axis with linear grids (step 3); values that are not dates are missing values
   of the column. They decode to ISO dates (or timestamps, when at least 20% of the dates carry a
   time of day). **Clock-time columns** live on minutes since midnight, a public axis [0, 1440]:
   no range pass; they go straight to step 3 and decode to HH:MM.
2. **Categorical**: stable key release (:func:`ddssp.dp.discovery.threshold_counts`): noisy counts
   of the observed labels, kept when they reach a threshold chosen so that a label held by one row
   is released with probability at most the column's delta share. Missing cells are a label like any
   other. Labels not released (and labels never seen) map to the ``<other>`` level. Two rounds: a
   first small share of each column's key budget releases its large labels; the rest of all the
   categorical columns' key budgets is pooled and spent on a second key release of the labels not
   yet released, shared by the noisy share of each column's rows the first round left out.
3. **Numeric**: noisy counts on a public grid inside the range found in step 1: one cell per whole
   number when the numbers are whole and few; else coarse to fine, half the budget each: a 16-cell
   grid (log-spaced when the range spans decades) cut to its populated span, grown by windows of
   adjacent cells whose noisy sum shows (thin tails), then a finer grid (or one cell per whole
   number) inside that span, trimmed only inside the outer coarse cells (by a step fit). Cells are windows of
   adjacent cells when single cells are lost in the noise (small tables). A value found alone by
   the scan gets its own bin, the other values are located by decade and binned. Whole numbers
   over a short range (at most ``max_levels``) become ordered levels; otherwise equal-frequency bin
   edges are read from the cumulative noisy counts, and a heavy point mass (a whole number, or
   zero, holding at least 1/bins of the rows) gets its own bin that decodes to exactly that value.
   Each other bin decodes to the median of the noisy fine counts inside it (fits, every decode),
   and keeps how those counts spread inside it (at most ``bins.WITHIN_CELLS`` weighted runs of cells,
   shrunk toward uniform spreading where the counts are mostly noise), from which synthetic rows
   draw values inside the bin. Values outside the range are clipped into
   the end bins.

Decisions use noisy outputs only (post-processing), so the column kind, the number of levels and
even the refusals ("a single value", "an identifier", "all missing") are DP outputs.

The package, one module per phase: :mod:`.table` (the budget and the order of the phases),
:mod:`.scan` (each column's scan), :mod:`.labels` (categorical levels), :mod:`.numeric` (levels and
bins on grids), :mod:`.bounded` (bins inside declared bounds, with no scan), with :mod:`.bins` (what a bin decodes to and how its rows spread), :mod:`.spans`
(where a noisy grid is populated) and :mod:`.shared` (noise sd, single-value refusal) as
post-processing helpers. The functions that read rows are named in each module's docstring; every
count they make goes straight to the charged mechanism.
"""

from ddssp.data.discovery.budget import MAX_AUTO_SHARE, discovery_budget
from ddssp.data.discovery.labels import MISSING_LABEL, OTHER_LABEL, discover_categorical
from ddssp.data.discovery.numeric import DEFAULT_MAX_LEVELS, discover_numeric
from ddssp.data.discovery.scan import ScanResult, scan_column
from ddssp.data.discovery.table import DiscoveryReport, discover, unresolved_message

__all__ = [
    "DEFAULT_MAX_LEVELS",
    "MAX_AUTO_SHARE",
    "MISSING_LABEL",
    "OTHER_LABEL",
    "DiscoveryReport",
    "ScanResult",
    "discover",
    "discover_categorical",
    "discover_numeric",
    "discovery_budget",
    "scan_column",
    "unresolved_message",
]
