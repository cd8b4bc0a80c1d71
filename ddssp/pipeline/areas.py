"""The areas of a grouping column (``--by``) that hold rows, decided before AIM from one noisy count each.

A publisher declares a geography with a codebook's whole list (every PUMA of a national dictionary)
while the table covers some of its areas. Every marginal AIM measures with the grouping column then
holds the absent areas' cells: their noise takes a share of every measurement's size penalty and of
the model's mass, and the grouped workload's marginals are several times larger than the table's
areas need (on the NIST excerpts of two states declared with the dictionary's 31 PUMAs, 22 points of
SDNist's grouped k-marginal at eps 10 and two to three times the CPU, even with the absent areas
emptied after AIM).

When asked (``--absent-areas``, :attr:`ddssp.pipeline.options.AimOptions.absent_areas`),
:func:`areas_shown` spends a small share of AIM's budget on one noisy count per area, charged to the
ledger. When the areas under ``AREA_SHOW_SDS`` sds of that noise together show no rows either (their
summed count under ``TOGETHER_SDS`` sds of its noise), they become one catch-all level, marked
empty: AIM, the model and the synthetic rows see only the areas that hold rows. When they do show
rows together (small areas of a small table, each under the noise), nothing changes. The decision
reads the noisy counts only (post-processing). The counts are not fitted with AIM's measurements:
round 0 measures the column's one-way marginal on a larger share, and fitting these too made some
eps-10 releases' AIM runs much longer (83 against 59 CPU s on one seeded release). It is off by
default: on tables holding every declared area, seeded eps-10 releases took more CPU with the count
than without (the benchmarks page, "Agencies, round 12"), for a cause not found yet.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ddssp.data.discovery.labels import OTHER_LABEL
from ddssp.data.discovery.shared import noise_sd
from ddssp.releasefile.conditions import GROUP_LEVEL_SHOW_SDS, under_the_noise, weak_levels

__all__ = [
    "AREA_SHARE",
    "AREA_SHOW_SDS",
    "TOGETHER_SDS",
    "AreasLeftOutWarning",
    "AreasShown",
    "applies",
    "areas_shown",
]

#: share of AIM's budget spent on the noisy count of each area of the grouping column
AREA_SHARE = 0.01
#: an area is taken as absent when its noisy count stays under this many sds of its noise (the level
#: of the rule that empties areas after AIM), and the absent areas together under ``TOGETHER_SDS``
AREA_SHOW_SDS = GROUP_LEVEL_SHOW_SDS


class AreasLeftOutWarning(UserWarning):
    """Declared areas of the grouping column that the noisy counts show no rows in were left out of
    the release (folded into one empty level); a DP output, shown to the data holder."""


#: the areas under the noise stay when their summed count reaches this many sds of its noise: small
#: areas of a small table hold rows together (folding them would send those rows to the catch-all),
#: while absent areas' sum passes it on noise alone in about 2% of releases, which then stay as
#: declared (emptied after AIM as before)
TOGETHER_SDS = 2.0


@dataclasses.dataclass
class AreasShown:
    """What :func:`areas_shown` decided.

    Attributes
    ----------
    column : Column or None
        The grouping column with the absent areas folded into one empty catch-all level, or None
        when every area stays.
    recode : numpy.ndarray or None
        Old code -> new code (None: unchanged).
    absent : list of str
        The labels folded away.
    """

    column: Any
    recode: np.ndarray | None
    absent: list[str]


def applies(col: Any) -> bool:
    """Whether :func:`areas_shown` decides a grouping column: a categorical one of three levels or more.

    Parameters
    ----------
    col : ddssp.data.Column
        The grouping column.

    Returns
    -------
    bool
    """
    return col.kind == "categorical" and col.size >= 3


def areas_shown(exact: np.ndarray, col: Any, mech: Any, rho: float) -> AreasShown | None:
    """Charge one noisy count per level of the grouping column ``col`` and fold away the absent ones.

    Parameters
    ----------
    exact : numpy.ndarray
        The exact count of rows in each level (as the column encodes them).
    col : ddssp.data.Column
        The grouping column (categorical, declared).
    mech : ChargedMechanisms
        Draws the noisy counts and charges them to the ledger.
    rho : float
        The zCDP cost of the counts.

    Returns
    -------
    AreasShown or None
        None for a column this does not apply to (:func:`applies`).
    """
    if not applies(col):
        return None
    sd = noise_sd(rho)
    y = mech.counts(np.asarray(exact, dtype=np.int64), sd, column=col.name, note="areas of the grouping column").astype(
        float
    )
    # the areas under the noise, as after AIM (the level of empty cells is no area)
    absent = weak_levels(col, y, sd, under_the_noise(AREA_SHOW_SDS, skip_na=True))
    shown_together = absent and float(y[absent].sum()) >= TOGETHER_SDS * sd * math.sqrt(len(absent))
    if not absent or shown_together or col.missing is not None:
        # nothing absent; or the areas under the noise hold rows together (small areas); or the
        # column has a catch-all already, whose rows the folded areas would join: unchanged
        return AreasShown(None, None, [])
    gone = set(absent)
    labels = [lab for i, lab in enumerate(col.labels) if i not in gone]
    other = OTHER_LABEL
    while other in labels:
        other = f"<{other}>"
    labels.append(other)
    new = dataclasses.replace(col, labels=labels, missing=other, empty=(*col.empty, other))
    new.validate()
    recode = np.array([labels.index(lab) if i not in gone else len(labels) - 1 for i, lab in enumerate(col.labels)])
    return AreasShown(new, recode, [col.labels[i] for i in absent])
