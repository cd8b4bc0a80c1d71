"""Discovery of a table: its budget (from a noisy row count), one scan per column, then the
categorical columns' two key-release rounds and the numeric columns' grids.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.codebook import Codebook
from ddssp.data.dates import hhmm_cells
from ddssp.data.discovery.budget import TARGET_WEIGHT, column_shares, discovery_budget, raised_shares
from ddssp.data.discovery.labels import (
    KEY_FIRST,
    KEY_POWER,
    MISSING_LABEL,
    column_total,
    discover_categorical,
    key_release,
    unreleased_share,
)
from ddssp.data.discovery.numeric import DEFAULT_MAX_LEVELS, MEDIANS_BELOW, discover_numeric, grid_counts
from ddssp.data.discovery.scan import SCAN_FRACTION, ScanResult, rest_cells, scan_column, scan_dates
from ddssp.data.discovery.shared import noise_sd
from ddssp.data.discovery.slots import parse_numbers, parse_times_of_text, slot_cells
from ddssp.errors import SchemaError

#: share of the discovery budget spent on the noisy row count that sets discovery's budget (:mod:`.budget`)
ROWS_FRACTION = 0.01


#: a binned numeric column gets as many equal-frequency bins (between these) as its noisy count of
#: numbers holds ``BIN_ROWS_SDS`` noise sds of a count made with an even share of the release's whole
#: budget (``rho_max`` / columns): the bins a column declared with bounds gets when it is the only one
#: discovered (:mod:`ddssp.data.discovery.bounded`), whatever the number of undeclared columns. Its grid
#: counts are recycled as the bins' one-way marginal (:mod:`ddssp.marginals.recycled`) and AIM measures
#: the bins again: the grid's noise sets where the cuts fall, not how well the bins are known
RELEASE_BINS = (4, 10)
BIN_ROWS_SDS = 40.0


#: a declared target of whole numbers whose scanned range holds at most this many values is
#: discovered by key release, its released numbers becoming ordered levels (a 0/1 outcome keeps both)
TARGET_MAX_LABELS = 10


@dataclass
class DiscoveryReport:
    """What discovery decided, per column (printed by the CLI; the values are DP outputs).

    Attributes
    ----------
    notes : dict
        ``{column: what was found}``.
    categorical : list of str
        The columns discovered by key release: the categorical ones, and a target of few whole
        numbers (whose released labels become ordered levels).
    unresolved : dict
        ``{column: why}`` for the columns discovery could not resolve (no values, no label released,
        a single value, numbers mixed with text); post-processing of noisy counts, so public.
    rows : float or None
        The noisy row count, when one was drawn.
    rows_sd : float or None
        Its noise sd (public: set by the budget).
    share : float or None
        Discovery's share of the release's zCDP budget, when chosen from it.
    clipped : dict
        ``{column: (below, above, sd_below, sd_above)}``: the noisy shares of a numeric column's
        numbers left outside its range, and their noise sds (post-processing of noisy counts).
    grids : dict
        ``{column: [(edges, noisy counts, sigma, ledger index), ...]}``: every grid a numeric
        column's numbers were counted on, with its noisy counts and the charge that paid for them
        (recycled as one-way marginals, :mod:`ddssp.marginals.recycled`).
    whole : set of str
        The numeric columns whose scan found whole numbers only.
    """

    notes: dict[str, str] = field(default_factory=dict)
    categorical: list[str] = field(default_factory=list)
    #: columns discovery could not resolve, {name: why} (no values, no label released, a single
    #: value, numbers mixed with text); post-processing of noisy counts, so public
    unresolved: dict[str, str] = field(default_factory=dict)
    rows: float | None = None  # the noisy row count, when one was drawn
    rows_sd: float | None = None  # its noise sd
    share: float | None = None  # discovery's share of the release's zCDP budget, when chosen from it
    #: numeric columns: {name: (below, above, sd_below, sd_above)}, the noisy shares of their numbers
    #: left outside the range (clipped into the end bins) and their noise sds; post-processing of
    #: noisy counts, so public
    clipped: dict[str, tuple[float, ...]] = field(default_factory=dict)
    #: numeric columns: {name: [(edges, noisy counts, sigma, ledger index), ...]}, each grid its
    #: numbers were counted on (every number in one cell, the end cells holding those beyond), with
    #: the charge that paid for it; noisy outputs and public grids
    grids: dict[str, list[tuple[np.ndarray, np.ndarray, float, int]]] = field(default_factory=dict)
    #: the numeric columns whose scan found whole numbers only (noisy counts' outcome)
    whole: set[str] = field(default_factory=set)

    @property
    def dropped(self) -> dict[str, str]:
        """The unresolved columns, which the release leaves out (or refuses, when strict)."""
        return self.unresolved


def discover(
    df: pd.DataFrame,
    columns: list[str],
    mech,
    *,
    rho: float,
    delta: float,
    kinds: dict[str, str] | None = None,
    bins: int | None = None,
    max_levels: int = DEFAULT_MAX_LEVELS,
    rho_max: float | None = None,
    collect: bool = False,
    target: str | None = None,
    hints: Any = None,
) -> tuple[dict[str, Any], DiscoveryReport, float]:
    """Discover columns of a table, reading the data only through noisy counts charged to a ledger.

    The delta is split among the categorical columns only (known after the scans), so it is all used
    when there is one, and none is used otherwise; each column's part is halved between its two key
    releases (the second one's rho pooled over the categorical columns, see :func:`_first_key_round`).

    ``"date"`` declares a column of ISO dates / timestamps, ``"time"`` one of clock times,
    ``"dates"`` either (the noisy counts of parse outcomes decide which); a column is also discovered as one when the noisy count of values that parse as ISO dates (clock times)
    holds at least 80% of its scan (:func:`scan_column`). A date column spends another
    ``SCAN_FRACTION`` of its budget on the range of its days (:func:`scan_dates`) and the rest on its
    bins, on the axis of days since 1970-01-01; a clock-time column's axis (minutes since midnight,
    0..1440) is public, so it needs no range pass.

    With ``rho_max`` (the budget of the whole release), discovery first spends ``ROWS_FRACTION`` of
    ``rho`` on a noisy row count, and when the table is small raises the budget of the columns without
    declared bounds (up to ``MAX_AUTO_SHARE * rho_max`` in all) so that each one's noise sd is about
    ``TARGET_SD_SHARE`` of the rows: the noise of a count does not shrink with the table, so a small
    table needs a larger share of the budget for its schema to hold any information. A column with
    declared bounds other than the target needs no range search and keeps its part of ``rho``
    (:func:`~ddssp.data.discovery.budget.raised_shares`).

    A declared ``target`` gets priority (:func:`~ddssp.data.discovery.budget.column_shares`): ``TARGET_WEIGHT`` times another column's
    share of the budget, and when it is categorical ``TARGET_WEIGHT`` times another categorical
    column's share of delta, spent in one key release of its own (no first round, no part in the
    pool), so that its threshold is as low as its budget allows: a label held by a few percent of the
    rows is released (see the discovery method page). A target of whole numbers whose scanned range
    holds at most ``TARGET_MAX_LABELS`` values is discovered by that key release too, its released
    whole numbers becoming ordered levels (a 0/1 outcome keeps both levels rather than being cut to
    the values its noisy grid counts show). The totals of rho and
    delta are the same with or without a target. A target that still cannot be kept with two levels
    refuses the release (a release made for a target is of no use without it).

    Parameters
    ----------
    df : pandas.DataFrame
        The raw table.
    columns : list of str
        The columns to discover.
    mech : ChargedMechanisms
        :class:`ddssp.dp.discovery.ChargedMechanisms`: every noisy count is charged to its ledger.
    rho : float
        zCDP budget to spend (at most; more only with ``rho_max``, as above).
    delta : float
        Delta for the key release of categorical levels.
    kinds : dict, optional
        Declared kinds, ``{name: "numeric" | "categorical" | "date" | "time" | "dates"}``.
    bins : int, optional
        Bins per binned numeric column; chosen from the noisy counts when None.
    max_levels : int
        Whole numbers over at most this many values become ordered levels.
    rho_max : float, optional
        The zCDP budget of the whole release (enables the noisy row count, as above).
    collect : bool
        Report the columns that cannot be discovered in the report instead of raising.
    target : str, optional
        The column a regression will predict (one of ``columns``): its discovery gets priority.
    hints : Codebook, optional
        Public knowledge of some columns (:class:`ddssp.data.codebook.Codebook`): a hint's kind is
        declared, its missing marker read as a missing cell, and a column with declared bounds is
        discovered inside them (:func:`ddssp.data.discovery.bounded.discover_bounded`) with no scan.

    Returns
    -------
    columns : dict
        ``{name: Column}`` for the discovered columns.
    report : DiscoveryReport
        What was decided, per column.
    delta : float
        The delta used.

    Raises
    ------
    SchemaError
        When a column cannot be discovered (unless ``collect``): one message for all of them; and,
        ``collect`` or not, when the declared ``target`` is left out or kept with fewer than two
        levels a regression can fit on (:func:`target_levels`): the message names the hint to declare.
    """
    kinds = dict(kinds or {})
    if not columns:
        return {}, DiscoveryReport(), 0.0
    report = DiscoveryReport()
    if target not in columns:
        target = None
    df, kinds, bounded = _apply_hints(df, columns, kinds, hints)
    scanned = [n for n in columns if n not in bounded]
    if rho_max is None:
        share = column_shares(columns, rho, target)
    else:
        given, raised = _budget_from_rows(len(df), columns, mech, rho, float(rho_max), report)
        share = raised_shares(columns, [n for n in bounded if n != target], given, raised, target)
        report.share = (rho - given + sum(share.values())) / float(rho_max)
    scans, parsed = _scan_columns(df, scanned, kinds, {n: SCAN_FRACTION * share[n] for n in scanned}, mech, report)
    out = {}
    for name, hint in bounded.items():
        out[name], report.notes[name] = _discover_bounded(df[name], hint, share[name], mech, bins, max_levels)
    columns = scanned
    live = [n for n in columns if n not in report.unresolved]
    cat = [n for n in live if scans[n] is None or scans[n].kind == "categorical" or _few_values(scans[n], n, target)]
    report.categorical = cat
    left = {n: (1 - _passes(scans[n]) * SCAN_FRACTION) * share[n] for n in live}
    key_delta, target_delta = _key_deltas(cat, delta, target)
    keys = _first_key_round(df, [n for n in cat if n != target], scans, left, key_delta, mech, report.rows)
    counted = None if report.rows is None else (report.rows, report.rows_sd)
    bin_sd = None if rho_max is None or bins is not None else noise_sd(float(rho_max) / len(share))
    plan = _KeyPlan(cat, target, left, key_delta, target_delta, keys, counted, bin_sd)
    for name in live:
        try:
            col, note = _discover_one(df, name, scans, parsed, plan, mech, bins, max_levels, report)
        except SchemaError as exc:
            report.unresolved[name] = str(exc)
            continue
        out[name] = _declared_missing(col, Codebook.of(hints).get(name))
        report.notes[name] = note
    if target is not None:
        _check_target(target, out.get(target), report, scans.get(target), name_in_bounded=target in bounded)
    if report.unresolved and not collect:
        raise SchemaError(unresolved_message(report))
    return out, report, (delta if cat else 0.0)


def target_levels(col: Any) -> int:
    """How many levels of a discovered target a regression can fit on: a numeric column's levels with
    a finite value; a categorical column's released labels, without its catch-all ``<other>`` level
    and its level of missing cells (a fit counts them in neither class: they have no value), and
    without levels marked empty. Public (the schema only).

    Parameters
    ----------
    col : Column
        The discovered target column.

    Returns
    -------
    int
    """
    empty = set(col.empty)
    if col.kind != "categorical" and col.values is not None:
        vals = np.asarray(col.values, dtype=float).reshape(-1)
        return len({v for v, label in zip(vals, col.labels) if np.isfinite(v) and label not in empty})
    return sum(1 for label in col.labels if label not in empty and label not in (col.missing, col.na))


def _check_target(name: str, col: Any, report: DiscoveryReport, scan: ScanResult | None, name_in_bounded: bool) -> None:
    """Refuse the release when the declared target was dropped or kept with fewer than two levels a
    regression can fit on (:func:`target_levels`): a release made for a target is of no use
    without it, and the data holder should declare what is public about it rather than spend the
    budget on the other columns. Decides from the schema and the noisy counts' outcome only."""
    numbers = name_in_bounded or (scan is not None and scan.kind in ("numeric", "date"))
    labels = scan is not None and scan.kind == "categorical"
    if name in report.unresolved:
        why = report.unresolved[name]
    elif col is not None and target_levels(col) < 2:
        why = f"column {name!r}: kept with {target_levels(col)} level(s) a regression can fit on ({col.labels})"
    else:
        return
    bounds, levels = "--bounds " + shlex.quote(f"{name}=LO:HI"), "--levels " + shlex.quote(f"{name}=A,B,...")
    declare = bounds if numbers else levels if labels else f"{bounds} for numbers, {levels} for labels"
    raise SchemaError(
        f"the target {name!r} cannot be kept with two levels at this budget ({why.rstrip('.')}); declare "
        f"what is public about it ({declare}, or --codebook FILE: declared columns cost nothing), or give "
        "more rows or a larger --eps; the release is refused rather than made without its target"
    )


def _apply_hints(
    df: pd.DataFrame, columns: list[str], kinds: dict[str, str], hints: Any
) -> tuple[pd.DataFrame, dict[str, str], dict[str, Any]]:
    """The table with each hinted column's missing marker read as a missing cell, the kinds with
    the hints' kinds added, and the hints of the columns with declared bounds (discovered inside
    them, no scan). Public choices only."""
    book = Codebook.of(hints)
    bounded: dict[str, Any] = {}
    marked: dict[str, pd.Series] = {}
    for name in columns:
        h = book.get(name)
        if h is None:
            continue
        if h.kind is not None and name not in kinds:
            kinds[name] = h.kind
        if h.bounds is not None:
            bounded[name] = h
        s = df[name]
        if h.missing is not None and (s.dtype == object or pd.api.types.is_string_dtype(s.dtype)):
            text = s.astype(object).map(lambda v: v.strip() if isinstance(v, str) else v)
            marked[name] = s.where(text != h.missing)
    if marked:
        df = df.assign(**marked)
    return df, kinds, bounded


def _declared_missing(col: Any, hint: Any) -> Any:
    """A discovered column whose ``<missing>`` level (the level of its missing cells, never the
    ``<other>`` level) is labelled by the hint's declared missing marker, so that decoding writes
    ``N`` back where the data had ``N``; unchanged when discovery made no such level or the label
    is taken. Relabels public levels only."""
    if hint is None or hint.missing is None or MISSING_LABEL not in col.labels or hint.missing in col.labels:
        return col
    col.labels[col.labels.index(MISSING_LABEL)] = hint.missing
    if col.missing == MISSING_LABEL:
        col.missing = hint.missing
    if col.na == MISSING_LABEL:
        col.na = hint.missing
    col.validate()
    return col


def _discover_bounded(s: pd.Series, hint: Any, rho: float, mech, bins, max_levels) -> tuple[Any, str]:
    """A column with declared bounds: its values as numbers (text and missing cells NaN), binned
    inside the bounds (:func:`ddssp.data.discovery.bounded.discover_bounded`)."""
    from ddssp.data.discovery.bounded import QuantileHint, discover_bounded

    x, _ = parse_numbers(s)
    kw = {"whole": hint.whole, "missing": hint.missing, "quantiles": QuantileHint.of(hint)}
    return discover_bounded(x, hint.name, rho, mech, hint.bounds, bins=bins, max_levels=max_levels, **kw)


def _key_deltas(cat: list[str], delta: float, target: str | None) -> tuple[float, float]:
    """Each categorical column's delta per key release, and a categorical target's delta.

    Delta is split among the categorical columns (halved between a column's two key releases); a
    categorical target weighs ``TARGET_WEIGHT`` columns and spends its part in one key release.
    """
    if target in cat:
        return delta / (2 * (len(cat) - 1 + TARGET_WEIGHT)), delta * TARGET_WEIGHT / (len(cat) - 1 + TARGET_WEIGHT)
    return (delta / (2 * len(cat)) if cat else 0.0), 0.0


@dataclass(frozen=True)
class _KeyPlan:
    """What the columns' own discovery passes share: the categorical columns, the target, each
    column's remaining budget, the key releases' deltas, the first key round's outcome and the noisy
    row count with its noise sd (when drawn)."""

    cat: list[str]
    target: str | None
    left: dict[str, float]
    key_delta: float
    target_delta: float
    keys: Any
    rows: tuple[float, float] | None = None
    #: the noise sd that sets a binned column's number of bins (:func:`release_bins`); None: its own grid's
    bin_sd: float | None = None


def _discover_one(df, name: str, scans, parsed, plan: _KeyPlan, mech, bins, max_levels, report) -> tuple[Any, str]:
    """One column's discovery after the scans: a categorical target in one key release with its whole
    budget and delta, another categorical column in its second key release, a numeric column on its
    grids (each grid and its noisy counts noted in ``report.grids``)."""
    if name == plan.target and name in plan.cat:
        col, note = discover_categorical(
            df[name],
            name,
            plan.left[name],
            plan.target_delta,
            mech,
            scans[name],
            as_levels=_few_values(scans[name], name, plan.target),
            rows=plan.rows,
        )
        return col, note + f" (target: {TARGET_WEIGHT:g}x a column's budget, one key release)"
    if name in plan.cat:
        return discover_categorical(
            df[name],
            name,
            plan.keys.rho2(name),
            plan.key_delta * (1 + (name in plan.keys.skipped)),
            mech,
            scans[name],
            plan.keys.first[name],
            rows=plan.rows,
        )
    scan = scans[name]
    if scan.unit is not None or scan.kind != "numeric":  # dates and clock times: not measured again
        return discover_numeric(parsed[name], name, plan.left[name], mech, scan, bins, max_levels, report.clipped)
    x = _GridLog(parsed[name])
    logged = _CountLog(mech, x, report.grids.setdefault(name, []))
    if bins is None:
        bins = release_bins(scan.n_present, plan.left[name], plan.bin_sd)
    found = discover_numeric(x, name, plan.left[name], logged, scan, bins, max_levels, report.clipped)
    if scan.whole:  # as discovery left it: the rest's decade counts may show fractions the scan missed
        report.whole.add(name)
    return found


def release_bins(n: float, rho: float, sd: float | None) -> int | None:
    """The number of bins of a binned numeric column: ``n`` over ``BIN_ROWS_SDS`` noise sds ``sd``,
    within ``RELEASE_BINS``; None (the column's own grid decides) when that is the fewest, when no
    ``sd`` is given, or when the column's rows are too few for its budget ``rho`` for histograms (the
    numeric pass then takes private medians, :data:`~ddssp.data.discovery.numeric.MEDIANS_BELOW`).
    Public: from the noisy count of numbers and the budget only.

    Parameters
    ----------
    n : float
        The scan's noisy count of the column's numbers.
    rho : float
        The column's budget after its scan.
    sd : float or None
        The noise sd of a count with an even share of the release's budget.

    Returns
    -------
    int or None
    """
    if sd is None or n * math.sqrt(rho) < MEDIANS_BELOW:
        return None
    k = int(np.clip(n // (BIN_ROWS_SDS * sd), *RELEASE_BINS))
    return k if k > RELEASE_BINS[0] else None


class _GridLog:
    """A numeric column's numbers (an array, or a view counted where the table lives) that note the
    grid of the last grid count asked of them; every count is the one the numbers would give."""

    def __init__(self, x: Any):
        self.x = x
        self.pending: tuple[np.ndarray, np.ndarray] | None = None

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.x, dtype=dtype)

    def grid_counts(self, edges: np.ndarray) -> np.ndarray:
        out = grid_counts(self.x, edges)
        self.pending = (np.array(edges, dtype=float), out)
        return out

    def slot_cells(self) -> np.ndarray:
        return slot_cells(self.x)

    def rest_cells(self, v: float) -> np.ndarray:
        return rest_cells(self.x, v)

    def hhmm_cells(self) -> np.ndarray:
        return hhmm_cells(self.x)


class _CountLog:
    """Discovery's charged mechanisms, noting each grid count's grid, noisy counts, noise sd and ledger
    index in ``out`` (the noisy outputs, which are public); every call goes to ``mech`` unchanged."""

    def __init__(self, mech: Any, x: _GridLog, out: list):
        self._mech, self._x, self._out = mech, x, out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mech, name)

    def counts(self, counts, sigma: float, *, column: str, note: str) -> np.ndarray:
        y = self._mech.counts(counts, sigma, column=column, note=note)
        grid, self._x.pending = self._x.pending, None
        if grid is not None and grid[1] is counts:
            entry = len(self._mech.ledger.entries) - 1
            self._out.append((grid[0], np.asarray(y, dtype=float).copy(), float(sigma), entry))
        return y


def _few_values(scan: ScanResult | None, name: str, target: str | None) -> bool:
    """Whether ``name`` is the target and its scan shows whole numbers over at most
    ``TARGET_MAX_LABELS`` values (then it is discovered by key release). Decides from the scan's noisy
    range only."""
    if name != target or scan is None or scan.kind != "numeric" or not scan.whole:
        return False
    lo = math.ceil(scan.lo)
    hi = max(lo, math.floor(scan.hi) if scan.hi <= 0 else math.ceil(scan.hi) - 1)
    return hi - lo + 1 <= TARGET_MAX_LABELS


def _budget_from_rows(
    rows: int, columns: list[str], mech, rho: float, rho_max: float, report: DiscoveryReport
) -> tuple[float, float]:
    """Discovery's budget after a noisy row count: ``ROWS_FRACTION`` of ``rho`` on the count, then
    :func:`discovery_budget` of that noisy count, each less the count's share: returns (the given
    budget, the raised budget). Records the noisy count in ``report`` (the caller records the share it
    spends); decides from the noisy count only."""
    rho_n = ROWS_FRACTION * rho
    y = mech.counts(
        np.array([rows], dtype=np.int64),
        noise_sd(rho_n),
        column=columns[0],
        note="noisy row count (sets discovery's share of the budget)",
    )
    n = max(float(y[0]), 1.0)
    rho_use = discovery_budget(n, len(columns), rho, rho_max)
    report.rows = n
    report.rows_sd = noise_sd(rho_n)
    return rho - rho_n, rho_use - rho_n


def _scan_columns(
    df: pd.DataFrame,
    columns: list[str],
    kinds: dict[str, str],
    rho_scan: dict[str, float],
    mech,
    report: DiscoveryReport,
) -> tuple[dict[str, ScanResult | None], dict[str, np.ndarray]]:
    """The scan of each column not declared categorical (:func:`scan_column`, ``rho_scan[name]``),
    and the range pass of date columns (:func:`scan_dates`, another ``rho_scan``; a clock-time axis
    is public and needs none). Returns the scans (None for declared categorical columns) and the
    values each numeric or time-axis column is discovered on; a column the scan refuses goes to
    ``report.unresolved``."""
    scans: dict[str, ScanResult | None] = {}
    parsed = {}
    for name in columns:
        if kinds.get(name) == "categorical":
            scans[name] = None
            continue
        x, isna = parse_numbers(df[name])
        times = parse_times_of_text(df[name], x, isna)
        try:
            scan = scan_column(x, isna, name, rho_scan[name], mech, kinds.get(name), times=times, rows=report.rows)
            if scan.unit == "time":  # a public axis: no range pass
                x = times["minutes"]
            elif scan.kind == "date":
                x = times["days"]
                scan = scan_dates(x, name, rho_scan[name], mech, scan)
            scans[name] = scan
            parsed[name] = x
        except SchemaError as exc:
            report.unresolved[name] = str(exc)
    return scans, parsed


@dataclass
class _KeyRounds:
    """The first key-release round of the categorical columns, and the pooled budget of the second."""

    #: ``{column: (released, threshold, sigma)}`` of the first round
    first: dict[str, tuple]
    #: the columns whose first round was not run
    skipped: set[str]
    #: the second round's weight of each column
    weight: dict[str, float]
    #: the second round's pooled zCDP budget
    pool: float

    def rho2(self, name: str) -> float:
        """The column's share of the pooled budget, by its weight."""
        return self.pool * self.weight[name] / sum(self.weight.values())


def _first_key_round(
    df: pd.DataFrame,
    cat: list[str],
    scans: dict[str, ScanResult | None],
    left: dict[str, float],
    key_delta: float,
    mech,
    rows: float | None,
) -> _KeyRounds:
    """Two rounds of key release: a first small share (``KEY_FIRST``) of each categorical column's
    budget ``left`` releases its large labels; the rest is pooled and goes to the columns by the
    noisy share of their rows the first round left out (a binary column needs no second look, one of
    many mid-sized labels does). A first round whose threshold is above the column's noisy row count
    could release a label only by noise: it is not run, and its budget and delta go to the column's
    second round. Decides from the scans' noisy totals (or the noisy row count ``rows``) and the
    first round's released counts."""
    first, skipped = {}, set()
    for n in cat:
        sigma1 = noise_sd(KEY_FIRST * left[n])
        total, threshold = column_total(scans[n], rows), mech.key_threshold(sigma1, key_delta)
        if total is not None and threshold > total:
            first[n] = ({}, threshold, sigma1)
            skipped.add(n)
        else:
            first[n] = key_release(df[n], n, KEY_FIRST * left[n], key_delta, mech, {})
    weight = {n: unreleased_share(scans[n], first[n][0], rows) ** KEY_POWER for n in cat}
    pool = (1 - KEY_FIRST) * sum(left[n] for n in cat) + KEY_FIRST * sum(left[n] for n in skipped)
    return _KeyRounds(first, skipped, weight, pool)


def _passes(scan: ScanResult | None) -> int:
    """Scan-sized passes a column spent before its levels or bins: none (declared categorical), the
    scan, or the scan and a date range pass."""
    return 0 if scan is None else (2 if scan.kind == "date" and scan.unit != "time" else 1)


def unresolved_message(report: DiscoveryReport) -> str:
    """One message for every column discovery could not resolve, with what to do.

    Parameters
    ----------
    report : DiscoveryReport
        The report with its ``unresolved`` columns.

    Returns
    -------
    str
    """
    return (
        f"{len(report.unresolved)} column(s) could not be discovered at this budget: "
        f"{grouped_reasons(report.unresolved)}. Drop them, "
        "declare them in a schema (--categorical for codes), or give discovery more budget "
        "(--discovery-share, --eps); a new run spends its budget again"
    )


def grouped_reasons(reasons: dict[str, str]) -> str:
    """Columns that share a reason, listed once with it: ``'a', 'b': why; 'c': other``.

    A narrow table of few rows often loses every column for the same reason; the message then
    says it once instead of once per column.

    Parameters
    ----------
    reasons : dict
        ``{column: reason}``, each reason starting ``column 'name'`` as discovery writes it.

    Returns
    -------
    str
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for name, why in reasons.items():
        sep = ": "  # "column 'a': why", or "column 'a' holds ..." (a verb follows the name)
        for head, s in ((f"column {name!r}: ", ": "), (f"column {name!r} ", " ")):
            if why.startswith(head):
                why, sep = why[len(head) :], s
                break
        groups.setdefault((sep, why), []).append(name)
    out = []
    for (sep, why), names in groups.items():
        if sep == " " and len(names) > 1:
            sep, why = ": ", "each " + why
        out.append(f"{', '.join(map(repr, names))}{sep}{why}")
    return "; ".join(out)
