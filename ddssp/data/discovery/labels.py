"""Categorical levels by stable key release, in two rounds.

:func:`label_counts` reads the data (a row adds one to its label's count); :func:`key_release` hands the
exact counts straight to the charged key release and reads only the labels it releases. Labels not
released, and labels never seen, go to an ``<other>`` level of their own, never to a released label.
When the noisy counts bound the rows outside the released labels to a small share of the column
(:func:`other_shows`), ``<other>`` stays a level of the schema but is marked empty: a release's
model gives it no mass, so synthetic rows never carry it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddssp.data.columns import Column
from ddssp.data.discovery.scan import MISSING_LABEL, ScanResult
from ddssp.data.discovery.shared import confident_single, noise_sd, single_value_message
from ddssp.data.values import as_label
from ddssp.errors import SchemaError


def label_counts(s: pd.Series) -> dict[str, int]:
    """Exact counts of a column's values as categorical labels (noised by the caller).

    Parameters
    ----------
    s : pandas.Series
        The raw column.

    Returns
    -------
    dict
        ``{label: count}``; missing cells under one key, ``"<missing>"``.
    """
    if not isinstance(s, pd.Series):  # counted where the table lives (discovery/source.py)
        return s.label_counts()
    isna = s.isna()
    if isinstance(s.dtype, pd.StringDtype):  # text cells are their own labels: counted per distinct value
        vc = s[~isna].value_counts(sort=False)
    else:
        vc = s[~isna].map(as_label).value_counts(sort=False)
    out = {str(k): int(v) for k, v in vc.items()}
    if isna.any():  # a literal "<missing>" label joins the missing cells
        out[MISSING_LABEL] = out.get(MISSING_LABEL, 0) + int(isna.sum())
    return out


OTHER_LABEL = "<other>"


MAX_CATEGORICAL_LEVELS = 200


#: share of a categorical column's key budget spent on the first of its two key releases; the rest
#: of every categorical column's key budget is pooled for the second round
KEY_FIRST = 0.2


#: a column's weight in the second round: (noisy share of its rows left unreleased) ** KEY_POWER,
#: at least KEY_FLOOR (so the pool is always spent)
KEY_POWER = 1.5


KEY_FLOOR = 1e-4


#: ``<other>`` is marked empty when the noisy count of the rows outside the released labels is under
#: this many sds of its noise (it does not show), and that count plus as many sds stays under
#: ``OTHER_SHARE`` of the column's noisy total (the noisy counts bound those rows to a few percent).
#: Not showing alone is not enough: on a small table discovery's noise is as large as a label the
#: key release missed (a fifth of the rows at 500 rows), and zeroing ``<other>`` would drop those rows
OTHER_SDS = 2.0


#: see ``OTHER_SDS``
OTHER_SHARE = 0.05


#: after AIM, ``<other>`` is marked empty when the combined noisy count of its rows (AIM's
#: measurements of the column) does not show above this many sds of its noise (a count of pure noise
#: shows at 3 sds in 0.13% of columns: when every label was released, ``<other>`` draws no rows) ...
OTHER_SHOW_SDS = 3.0


#: AIM's marginals decide a column's ``<other>`` on their own when their combined count of it shows,
#: or when that count plus ``OTHER_SDS`` sds stays under this share of the column's noisy total (it
#: bounds the level to a tenth of the rows). Otherwise a count on a held-back budget is bought
#: (:data:`OUTSIDE_SD`): on a small table (500 rows) the noise of AIM's marginals hides a label the
#: key release missed (a fifth to a third of the rows), which that count then shows
OTHER_AFTER_SHARE = 0.10


#: AIM's marginals leave a column's ``<other>`` undecided when their combined count of it neither
#: shows nor is bounded (a column AIM measured once, in its one-way marginal, on a small table): a
#: share of the budget is then held back from AIM for one noisy count of that level's rows per such
#: column (:func:`ddssp.releasefile.conditions.count_outside`). Its noise sd is this share of the
#: noisy row count (2e-4 of zCDP on 2,000 rows, 1.4% of the budget at eps 1) ...
OUTSIDE_SD = 0.025


#: ... for this many such columns, and at most ``OUTSIDE_CAP`` of the release's budget (on a small
#: table that sd would cost more than the release has)
OUTSIDE_COUNTS = 2


#: see ``OUTSIDE_COUNTS``
OUTSIDE_CAP = 0.025


#: a level whose combined count shows at ``OTHER_SHOW_SDS`` sds but not at this many is counted too
#: (noise alone shows at 3 sds in 0.13% of columns, at 4 in 0.003%): its count can take it back under
#: the 3 sds, where the rule decides
OUTSIDE_SHOW_SDS = 4.0


def _unique_label(label: str, taken: set[str]) -> str:
    while label in taken:
        label = label + "_"
    return label


def key_release(
    s: pd.Series, name: str, rho: float, delta: float, mech, known: dict
) -> tuple[dict[str, float], int, float]:
    """Stable key release of the labels of ``s`` not in ``known`` (released before).

    Parameters
    ----------
    s : pandas.Series
        The raw column.
    name : str
        The column name.
    rho : float
        The release's zCDP budget.
    delta : float
        Its delta: a label held by one row is released with at most this probability.
    mech : ChargedMechanisms
        Draws the noisy counts and charges them to the ledger.
    known : dict
        Labels released before, left out of this release.

    Returns
    -------
    released : dict
        ``{label: noisy count}`` of the released labels.
    threshold : int
        The release threshold.
    sigma : float
        The noise sd of the counts.
    """
    counts = {k: v for k, v in label_counts(s).items() if k not in known}
    return (*mech.keys(counts, noise_sd(rho), delta, column=name), noise_sd(rho))


def discover_categorical(
    s: pd.Series,
    name: str,
    rho: float,
    delta: float,
    mech,
    scan: ScanResult | None,
    first: tuple | None = None,
    as_levels: bool = False,
    rows: tuple[float, float] | None = None,
):
    """Discover a categorical column's levels by stable key release.

    Labels not released (and labels never seen) go to an ``<other>`` level of their own; missing
    cells get their own level when released. ``<other>`` is marked empty (a structural zero, see
    :attr:`Column.empty`) when the noisy counts bound the rows outside the released labels to a small
    share of the column (:func:`other_shows`). With ``first`` (an earlier key release of the column,
    from :func:`key_release`), this is its second round: a key release of the labels the first did not
    release, and the levels are the labels either round released.

    Parameters
    ----------
    s : pandas.Series
        The raw column.
    name : str
        The column name.
    rho : float
        The column's zCDP budget.
    delta : float
        The delta of this key release: a label held by one row is released by it with at most this
        probability.
    mech : ChargedMechanisms
        Draws the noisy counts and charges them to the ledger.
    scan : ScanResult or None
        The column's scan, if it had one (used to refuse a single-valued column).
    first : tuple, optional
        ``(released, threshold, sigma)`` of the column's first key release.
    as_levels : bool
        When every released label is a whole number (and there are at least two), return them as
        ordered numeric levels (:meth:`Column.levels`; another number is coded to the nearest level,
        a missing or non-numeric cell to the missing level when released, else to the level of the
        largest noisy count) rather than as labels with ``<other>``.
    rows : tuple of float, optional
        ``(noisy row count, its noise sd)``: the column's total when it had no scan.

    Returns
    -------
    col : Column
    note : str
        What was found, for the report.

    Raises
    ------
    SchemaError
        When no label is released, or the column holds a single value.
    """
    released, threshold, sigma = key_release(s, name, rho, delta, mech, first[0] if first else {})
    sds = {k: sigma for k in released}
    if first:  # the labels of both rounds (each counted by one of them)
        sds.update({k: first[2] for k in first[0]})
        released = {**first[0], **released}
        if first[0]:  # a first round that was skipped (or released nothing) set no label's threshold
            threshold = min(first[1], threshold)
    has_missing = MISSING_LABEL in released
    labels = {k: v for k, v in released.items() if k != MISSING_LABEL}
    if not labels:
        raise SchemaError(
            f"column {name!r}: no label is held by enough rows to be released at this budget (a label "
            f"needs about {threshold} rows): an identifier or free-text column, or too few rows"
        )
    shows = other_shows(scan, rows, released, sds)
    if len(labels) > MAX_CATEGORICAL_LEVELS:  # post-processing: keep the largest noisy counts
        keep = sorted(labels, key=lambda k: -labels[k])[:MAX_CATEGORICAL_LEVELS]
        labels = {k: labels[k] for k in keep}
        shows = True  # the released labels left out go to <other>
    if len(labels) == 1 and not has_missing and scan is not None:
        # rows outside the one label, estimated from the scan (present + missing) minus its count
        rest = scan.n_present + scan.missing - next(iter(labels.values()))
        sd = math.sqrt(2 * scan.sigma**2 + (first[2] if first and set(labels) <= set(first[0]) else sigma) ** 2)
        if confident_single(rest, sd, scan.n_present):
            raise SchemaError(single_value_message(name))
    if as_levels and len(labels) >= 2:
        col = _whole_levels(name, labels, has_missing)
        if col is not None:
            values = col.labels[: len(labels)]
            return col, (
                f"whole numbers {values[0]}..{values[-1]} as {len(labels)} ordered levels, by key release"
                + (" + missing" if has_missing else "")
                + f" (threshold {threshold})"
            )
    keys = list(labels)
    try:
        keys.sort(key=float)
    except ValueError:
        keys.sort()
    other = _unique_label(OTHER_LABEL, set(keys) | {MISSING_LABEL})
    # labels that are not released (and labels never seen) go to an <other> level of their own,
    # never to a released label: a binary column keeps <other> as its third level
    levels = list(keys) + [other]
    catch = other
    na = catch
    if has_missing:
        na = MISSING_LABEL
        levels.insert(len(keys), na)
    col = Column.categorical(name, levels, missing=catch).with_na(na)
    if not shows:
        col.with_empty([other])
    note = (
        f"categorical, {len(keys)} released label(s)"
        + (" + missing" if has_missing else "")
        + f" + {other}"
        + ("" if shows else f" (empty: the rows outside the labels do not show, and are under {OTHER_SHARE:.0%})")
        + f" (threshold {threshold})"
    )
    return col, note


def other_shows(
    scan: ScanResult | None,
    rows: tuple[float, float] | None,
    released: dict[str, float],
    sds: dict[str, float],
) -> bool:
    """Whether the rows outside a categorical column's released labels may hold a share worth keeping.

    Their noisy count is the column's noisy total (its scan's present and missing counts, else the
    noisy row count) less the noisy counts of the released labels (the missing label among them).
    They are taken as none (False) when that count is under ``OTHER_SDS`` sds of its noise (the sum
    of the counts' noises), so they do not show, and the count plus as many sds stays under
    ``OTHER_SHARE`` of the total, so the noisy counts bound them to a few percent of the rows. Post-processing of noisy
    counts already charged to the ledger: the answer (written to the schema as the ``<other>`` level
    being empty or not) costs nothing more.

    Parameters
    ----------
    scan : ScanResult or None
        The column's scan, if it had one.
    rows : tuple of float, optional
        ``(noisy row count, its noise sd)``, the total when there was no scan.
    released : dict
        ``{label: noisy count}`` of every released label.
    sds : dict
        ``{label: noise sd}`` of those counts.

    Returns
    -------
    bool
        True also when no noisy total is known (nothing says the rows outside are none).
    """
    if scan is not None:  # the scan's present and missing cells, each with its own noise
        total, total_sd = scan.n_present + scan.missing, math.sqrt(2.0) * scan.sigma
    elif rows is not None:
        total, total_sd = rows
    else:
        return True
    rest = total - math.fsum(released.values())
    sd = math.sqrt(total_sd**2 + math.fsum(sds[k] ** 2 for k in released))
    return not other_bounded(rest, sd, total)


def other_bounded(rest: float, sd: float, total: float) -> bool:
    """Whether a noisy count of the rows outside the released labels bounds them near none.

    True when ``rest`` is under ``OTHER_SDS`` sds (the rows do not show) and ``rest`` plus as many
    sds stays within ``OTHER_SHARE`` of ``total`` (the noisy counts bound them to a few percent).
    The one rule of an empty catch-all level, in discovery (:func:`other_shows`) and after AIM
    (:func:`ddssp.releasefile.conditions.empty_from_measurements`). Post-processing.

    Parameters
    ----------
    rest : float
        The noisy count of those rows.
    sd : float
        Its noise sd.
    total : float
        The column's noisy total.

    Returns
    -------
    bool
    """
    return rest < OTHER_SDS * sd and rest + OTHER_SDS * sd <= OTHER_SHARE * total


def other_empty_after(rest: float, sd: float, total: float) -> bool:
    """Whether AIM's combined noisy count of the rows outside the released labels bounds them near
    none.

    True when ``rest`` does not show (under ``OTHER_SHOW_SDS`` sds) and ``rest`` plus ``OTHER_SDS``
    sds stays within ``OTHER_AFTER_SHARE`` of ``total``. Such a column needs no count on the budget
    held back from AIM (:func:`ddssp.releasefile.conditions.count_outside`); a column whose count
    neither shows nor is bounded gets one. Post-processing.

    Parameters
    ----------
    rest : float
        The noisy count of those rows.
    sd : float
        Its noise sd.
    total : float
        The column's noisy total.

    Returns
    -------
    bool
    """
    return rest < OTHER_SHOW_SDS * sd and rest + OTHER_SDS * sd <= OTHER_AFTER_SHARE * total


def _whole_levels(name: str, labels: dict[str, float], has_missing: bool) -> Column | None:
    """Released labels that are all whole numbers as ordered levels (None when one is not).
    Post-processing of the released labels and their noisy counts."""
    try:
        values = {k: float(k) for k in labels}
    except ValueError:
        return None
    if not all(math.isfinite(v) and v == round(v) for v in values.values()):
        return None
    order = sorted(labels, key=values.get)
    col = Column.levels(name, [values[k] for k in order], missing=MISSING_LABEL if has_missing else None)
    top = max(order, key=labels.get)
    return col.with_na(MISSING_LABEL if has_missing else col.labels[order.index(top)])


def unreleased_share(scan: ScanResult | None, released: dict[str, float], rows: float | None) -> float:
    """The noisy share of a categorical column's rows outside the labels released so far.

    The rows are its scan's total, else the noisy row count. Post-processing of noisy counts.

    Parameters
    ----------
    scan : ScanResult or None
        The column's scan, if it had one.
    released : dict
        ``{label: noisy count}`` released so far.
    rows : float or None
        The table's noisy row count, if one was drawn.

    Returns
    -------
    float
        In ``[KEY_FLOOR, 1]``; 1 when no total is known.
    """
    total = column_total(scan, rows)
    if total is None or total <= 0:
        return 1.0
    return float(np.clip(1.0 - sum(released.values()) / total, KEY_FLOOR, 1.0))


def column_total(scan: ScanResult | None, rows: float | None) -> float | None:
    """A categorical column's noisy row count. Post-processing of noisy counts.

    Parameters
    ----------
    scan : ScanResult or None
        The column's scan, if it had one.
    rows : float or None
        The table's noisy row count, if one was drawn.

    Returns
    -------
    float or None
        The scan's total (present and missing), else ``rows`` (None when neither was drawn).
    """
    return scan.n_present + scan.missing if scan is not None else rows
