"""The data holder's quality report: a release against the sensitive data it came from.

NOT FOR PUBLICATION: everything here holds exact statistics of the data. Modules:
:mod:`~ddssp.evaluation.scores` (:func:`compare`: total-variation errors and the regression
agreement, as a plain dict), :mod:`~ddssp.evaluation.report` (:func:`evaluate` and
:class:`QualityReport`, what ``ddssp.evaluate`` and ``ddssp evaluate`` return and print),
:mod:`~ddssp.evaluation.page` (the self-contained HTML page), :mod:`~ddssp.evaluation.agency`
(the statistical agency's measures of synthetic rows: exact and apparent matches, pMSE, rule
violations, and all of them at once) and :mod:`~ddssp.evaluation.marginals` (SDNist's k-marginal
and its sub-sample calibration).
"""

from __future__ import annotations

from ddssp.evaluation.agency import agency_scores, kmarginal
from ddssp.evaluation.page import render_html
from ddssp.evaluation.report import QualityReport, evaluate
from ddssp.evaluation.scores import BANNER, compare, tv

__all__ = ["BANNER", "QualityReport", "agency_scores", "compare", "evaluate", "kmarginal", "render_html", "tv"]
