"""What a release's model is conditioned on: the levels its schema marks empty and its declared rules.

Both are public (post-processing of noisy outputs, or declared input), so conditioning on them costs
nothing; :class:`~ddssp.releasefile.model.Release` applies them on load and when sampling.
"""

from __future__ import annotations

from typing import Any


def structural_zero_model(schema: Any, model: Any) -> Any:
    """The model conditioned on the levels ``schema`` marks empty (no mass on them); itself when none.

    Post-processing of the model: see :func:`ddssp.marginals.model.with_structural_zeros`.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The release's schema (its columns' ``empty`` levels).
    model : ddssp.marginals.model.GraphicalModel
        The fitted model.

    Returns
    -------
    GraphicalModel
    """
    zeros = {}
    for c in getattr(schema, "columns", ()):
        if c.empty:
            code = {x: i for i, x in enumerate(c.labels)}
            zeros[c.name] = [code[x] for x in c.empty]
    if not zeros:
        return model
    from ddssp.marginals.model import with_structural_zeros

    return with_structural_zeros(model, zeros)


def sample_under_rules(rel: Any, rows: int, rng: Any, method: str) -> Any:
    """Codes drawn from the release's model; with rules, from the model fitted again to its noisy
    marginals with the rules' structural zeros (:mod:`ddssp.marginals.rules_model`; a declared
    dependency's and an order's from the model, :func:`~ddssp.marginals.rules_model.dependency_zeros`
    and :func:`~ddssp.marginals.rules_model.order_zeros`) when the
    model breaks them often, and conditioned on the schema's empty levels either way.

    Parameters
    ----------
    rel : ddssp.releasefile.model.Release
        The release.
    rows : int
        Rows to draw.
    rng : numpy.random.Generator
        Post-processing randomness.
    method : str
        The model's sampling method (``"rounded"`` or ``"iid"``).

    Returns
    -------
    pandas.DataFrame
        Integer codes, one column per schema column.
    """
    from ddssp.data.rules import dependencies, orders
    from ddssp.marginals import rules_model

    compiled = rel.compiled_rules()
    model = rel.model
    if rel.rules:  # declared dependencies and orders: their cells decided from the model
        compiled = compiled + rules_model.dependency_zeros(model, dependencies(rel.rules))
        compiled = compiled + rules_model.order_zeros(model, orders(rel.rules), rel.schema)
    workload = [c for c, _ in rel.workload]
    if compiled and rel.measurements and rules_model.forbidden_mass(model, compiled) > rules_model.REFIT_ABOVE:
        # the refit starts from the measurements, which know nothing of the schema's empty levels:
        # it is conditioned on them again (cells the rules forbid stay 0), then drawn under the rules
        model = structural_zero_model(rel.schema, rules_model.refitted(model, compiled, rel.measurements))
        return rules_model.sample_under_rules(model, compiled, rows, rng, method=method, workload=workload)
    return rules_model.sample_under_rules(
        model, compiled, rows, rng, method=method, measurements=rel.measurements, workload=workload
    )


def checked_rules(rules: Any, schema: Any) -> list[str]:
    """Rules compiled under a schema, as their canonical text (what a release stores).

    Parameters
    ----------
    rules : any
        What :func:`ddssp.data.rules.as_rules` takes (a list of rule strings or rules).
    schema : ddssp.data.Schema
        The release's schema.

    Returns
    -------
    list of str

    Raises
    ------
    ddssp.data.rules.RuleError
        For a rule that cannot be read or does not fit ``schema``.
    """
    from ddssp.data.rules import as_rules, compile_rules

    read = as_rules(rules)
    compile_rules(read, schema)
    return [r.text for r in read]


def stored_rules(stored: Any, schema: Any) -> list[str]:
    """The rules of a release document, read and compiled under its schema, as their canonical text.

    Parameters
    ----------
    stored : any
        The document's ``rules`` member (a list of rule strings).
    schema : ddssp.data.Schema
        The release's schema.

    Returns
    -------
    list of str

    Raises
    ------
    ddssp.data.rules.RuleError
        For anything but a short list of rules that compile under ``schema``.
    """
    from ddssp.data.rules import MAX_RULES, RuleError

    if not isinstance(stored, list) or len(stored) > MAX_RULES or not all(isinstance(r, str) for r in stored):
        raise RuleError(f"rules must be a list of at most {MAX_RULES} rule strings")
    return checked_rules(stored, schema)


def _candidates(schema: Any, columns: Any) -> list[str]:
    """The columns of ``columns`` (in their order) with a catch-all level that may hold rows
    (:func:`catch_all_levels`). Public."""
    levels = catch_all_levels(schema)
    return [name for name in columns if name in levels]


def level_sums(name: str, size: int, measurements: Any) -> tuple[Any, float, float, float]:
    """Inverse-variance sums of AIM's noisy counts of each level of a column, and of its total.

    Each measurement with the column gives an unbiased noisy count of each level (its cells summed,
    noise variance ``sigma**2`` per cell) and of the column's total (every cell summed); independent
    noises combine by inverse variance, so the combined count of a level is ``x[i] / w`` with noise
    sd ``w**-0.5``, and of the total ``xt / wt``. Post-processing.

    Parameters
    ----------
    name : str
        The column.
    size : int
        Its number of levels.
    measurements : list of ddssp.marginals.aim.Measurement
        AIM's noisy marginals (those without the column are passed over).

    Returns
    -------
    x : numpy.ndarray
        Per level, the sum of count / variance.
    w : float
        The sum of 1 / variance of a level's count (the same for every level); 0 when no
        measurement holds the column.
    xt, wt : float
        The same two sums for the column's total.
    """
    import numpy as np

    x = np.zeros(size)
    w = xt = wt = 0.0
    for m in measurements:
        if name not in m.clique:
            continue
        v = np.moveaxis(np.asarray(m.values, dtype=float), m.clique.index(name), 0)
        var = float(m.sigma) ** 2 * (v.size // size)
        w += 1.0 / var
        x += v.reshape(size, -1).sum(axis=1) / var
        var_t = float(m.sigma) ** 2 * v.size
        wt, xt = wt + 1.0 / var_t, xt + float(v.sum()) / var_t
    return x, w, xt, wt


def _combined(col: Any, name: str, measurements: Any) -> tuple[float, float, float, float]:
    """AIM's combined noisy count of a column's catch-all level (:func:`level_sums`): (sum of
    count / variance, sum of 1 / variance, the same two for the column's total). Post-processing."""
    x, w, xt, wt = level_sums(name, col.size, measurements)
    return float(x[list(col.labels).index(col.missing)]), w, xt, wt


def outside_reserve(schema: Any, columns: Any, rows: float | None, rho_budget: float) -> float:
    """The zCDP budget held back from AIM for counts of catch-all levels AIM may leave undecided.

    ``OUTSIDE_COUNTS`` counts whose noise sd is ``OUTSIDE_SD`` of the noisy row count, at most
    ``OUTSIDE_CAP`` of the release's budget; none when no discovered column has a catch-all level
    that may hold rows, when there is no noisy row count, or when even one count with all of it
    could not bound that level under ``OTHER_AFTER_SHARE`` of the rows (2 sds of it are more: a
    small table). Decides from the public schema and a noisy count only.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The release's schema.
    columns : iterable of str
        The discovered columns.
    rows : float or None
        Discovery's noisy row count.
    rho_budget : float
        The release's zCDP budget.

    Returns
    -------
    float
    """
    from ddssp.data.discovery.labels import (
        OTHER_AFTER_SHARE,
        OTHER_SDS,
        OUTSIDE_CAP,
        OUTSIDE_COUNTS,
        OUTSIDE_SD,
    )

    if rows is None or rows <= 0 or not _candidates(schema, columns):
        return 0.0
    rho = min(OUTSIDE_COUNTS / (2.0 * (OUTSIDE_SD * rows) ** 2), OUTSIDE_CAP * float(rho_budget))
    if OTHER_SDS * (2.0 * rho) ** -0.5 > OTHER_AFTER_SHARE * rows:
        return 0.0
    return rho


def count_outside(counts: Any, schema: Any, measurements: Any, columns: Any, rho: float, mech: Any) -> dict:
    """Spend the budget held back from AIM on noisy counts of the catch-all levels AIM left undecided.

    A discovered column's catch-all level is undecided when AIM's combined count of it
    (:func:`empty_from_measurements`) neither shows at ``OUTSIDE_SHOW_SDS`` sds (above the rule's
    ``OTHER_SHOW_SDS``: a level that shows only by a little may show by noise) nor is bounded near
    none (or AIM never measured the column). ``rho`` is split evenly among those columns, one count
    each of the rows in that level (sensitivity 1); when AIM left none undecided, among every
    discovered column whose level may hold rows, so that the budget is spent in full. The counts are
    charged to ``mech``'s ledger.

    Parameters
    ----------
    counts : callable
        ``counts(columns) -> {column: exact count of the rows in its catch-all level}``.
    schema : ddssp.data.Schema
        The release's schema.
    measurements : list of ddssp.marginals.aim.Measurement
        AIM's noisy marginals.
    columns : iterable of str
        The discovered columns.
    rho : float
        The budget held back (:func:`outside_reserve`); nothing is counted when 0.
    mech : ddssp.dp.discovery.ChargedMechanisms
        Draws the noisy counts and charges them.

    Returns
    -------
    dict
        ``{column: (noisy count, its noise sd)}``.
    """
    import numpy as np

    from ddssp.data.discovery.labels import OUTSIDE_SHOW_SDS, other_empty_after

    todo = _candidates(schema, columns)
    if rho <= 0 or not todo:
        return {}
    undecided = []
    for name in todo:
        x, w, xt, wt = _combined(schema.column(name), name, measurements)
        if w == 0.0 or not (x / w >= OUTSIDE_SHOW_SDS * w**-0.5 or other_empty_after(x / w, w**-0.5, xt / wt)):
            undecided.append(name)
    todo = undecided or todo
    exact = counts(todo)
    sd = (2.0 * rho / len(todo)) ** -0.5
    out = {}
    for name in todo:
        y = mech.counts(np.array([int(exact[name])], dtype=np.int64), sd, column=name, note="rows in <other>")
        out[name] = (float(y[0]), sd)
    return out


def empty_from_measurements(schema: Any, measurements: Any, columns: Any, outside: Any = None) -> list[str]:
    """Mark a discovered column's catch-all level empty when AIM's noisy marginals show no rows in it.

    Discovery decides whether a column's catch-all level (``<other>``: labels it did not release)
    holds rows from its own noisy counts, whose noise on a small table is as large as a label
    (:func:`ddssp.data.discovery.labels.other_shows`). AIM's measurements of the column are usually
    far less noisy (a one-way marginal, a target's pairs): each gives an unbiased noisy count of the
    level (its cells summed, noise variance ``sigma**2`` per cell), and so does a count of the level
    on the budget held back from AIM where one was drawn (``outside``, :func:`count_outside`); their
    independent noises combine by inverse variance. The level is marked empty whenever the combined
    count does not show above ``OTHER_SHOW_SDS`` sds of its noise, so that ``<other>`` reaches
    synthetic rows only where its noisy share shows above its noise: when every label was released
    it holds no rows, and a level of the schema with no rows is never drawn into synthetic records.
    A true share under the noise is zeroed with it (its rows go to the released labels in the
    model's proportions); the held-back count is bought where AIM's marginals alone could neither
    show nor bound the level (:func:`count_outside`), so that a share worth keeping shows.
    Post-processing of noisy measurements already charged to the ledger.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The release's schema; columns are changed in place.
    measurements : list of ddssp.marginals.aim.Measurement
        AIM's noisy marginals.
    columns : iterable of str
        The discovered columns (only their catch-all levels are decided here; a declared level is
        the publisher's).
    outside : dict, optional
        ``{column: (noisy count, its noise sd)}`` of the rows in a column's catch-all level
        (:func:`count_outside`).

    Returns
    -------
    list of str
        The columns whose catch-all level was marked empty.
    """
    from ddssp.data.discovery.labels import OTHER_SHOW_SDS

    marked = []
    for name in _candidates(schema, columns):
        col = schema.column(name)
        x, w, xt, wt = _combined(col, name, measurements)
        if outside and name in outside:  # the count on the held-back budget: independent noise
            count, sd = outside[name]
            x, w = x + count / sd**2, w + 1.0 / sd**2
        if w == 0.0 or wt == 0.0:  # never measured by AIM: discovery decided
            continue
        sd = (1.0 / w) ** 0.5
        if x / w < OTHER_SHOW_SDS * sd:  # the level keeps rows only where they show
            col.with_empty([*col.empty, col.missing])
            marked.append(name)
    return marked


#: a level of a declared whole-number range is taken as holding no rows when AIM's combined noisy
#: count of it stays under this many noise sds (see :func:`range_levels_empty_from_measurements`)
RANGE_LEVEL_SHOW_SDS = 2.0


def range_levels_empty_from_measurements(schema: Any, measurements: Any, columns: Any) -> dict[str, list[str]]:
    """Mark empty the levels of declared whole-number ranges that AIM's noisy marginals show no rows in.

    A codebook's range (NOC 0..19, NPF 2..20) becomes one level per whole number
    (:meth:`ddssp.data.codebook.ColumnHint.column`): every value the data can hold, most of which an
    extract may never take (NOC above 5 in Massachusetts). A level without rows still gets noisy
    cells in every marginal with the column, and the fitted model puts their positive noise on it,
    so synthetic rows land there. Each measurement with the column gives an unbiased noisy count of
    each level (its cells summed, noise variance ``sigma**2`` per cell); independent noises combine
    by inverse variance. A level whose combined count stays under ``RANGE_LEVEL_SHOW_SDS`` sds of
    its noise is marked empty (a level of the schema with no rows): the model is conditioned on it
    holding none, and a few true rows under the noise go to the other levels in the model's
    proportions. The missing level (``N``, a declared code) is not decided here, and at least one
    level of the range is kept. Post-processing of noisy measurements already charged to the ledger.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The release's schema; columns are changed in place.
    measurements : list of ddssp.marginals.aim.Measurement
        AIM's noisy marginals.
    columns : iterable of str
        The columns whose levels are a declared whole-number range (from a codebook's bounds).

    Returns
    -------
    dict
        ``{column: [labels marked empty]}`` for the columns where some were.
    """
    return _mark_weak_levels(
        schema, measurements, columns, lambda col: col.kind == "numeric", under_the_noise(RANGE_LEVEL_SHOW_SDS)
    )


def under_the_noise(sds: float, skip_na: bool = False) -> Any:
    """A ``weak`` rule (:func:`weak_levels`): the levels it may mark are all but the missing one
    (with ``skip_na``, the level of empty cells too) and those already empty, and it marks those
    whose noisy count is under ``sds`` sds of its noise.

    Parameters
    ----------
    sds : float
        The level, in noise sds.
    skip_na : bool
        Leave the level of empty cells alone too.

    Returns
    -------
    callable
        ``weak(col, count, sd) -> (candidates, picked)``.
    """

    def weak(col: Any, count: Any, sd: float) -> tuple[list[int], list[int]]:
        na = col.na_code if skip_na else None
        codes = [i for i, lab in enumerate(col.labels) if lab != col.missing and lab not in col.empty and i != na]
        return codes, [i for i in codes if count[i] < sds * sd]

    return weak


def weak_levels(col: Any, count: Any, sd: float, weak: Any) -> list[int]:
    """The level codes ``weak`` picks from noisy counts, keeping the strongest candidate when it picks
    them all (a column keeps a level). Post-processing.

    Parameters
    ----------
    col : ddssp.data.Column
        The column.
    count : numpy.ndarray
        A noisy count per level.
    sd : float
        Their noise sd.
    weak : callable
        ``weak(col, count, sd) -> (candidates, picked)`` (e.g. :func:`under_the_noise`).

    Returns
    -------
    list of int
    """
    codes, low = weak(col, count, sd)
    if codes and len(low) == len(codes):  # keep the level the counts show most
        keep = max(codes, key=lambda i: count[i])
        low = [i for i in low if i != keep]
    return low


#: a level of the grouping column is taken as holding no rows when AIM's combined noisy count of it
#: stays under this many noise sds (see :func:`group_levels_empty_from_measurements`)
GROUP_LEVEL_SHOW_SDS = 5.0


def group_levels_empty_from_measurements(schema: Any, measurements: Any, by: str | None) -> dict[str, list[str]]:
    """Mark empty the levels of the grouping column (``--by``) that AIM's noisy marginals show no rows in.

    A publisher declares a geography with a codebook's whole list (every PUMA of a national
    dictionary) while a table covers some of its areas. An area without rows still gets noisy cells in
    every marginal with the column, and the fitted model puts their positive noise on it, so synthetic
    rows land in areas the table does not hold, and the areas it holds get fewer rows than their
    share (on the NIST excerpts of two states declared with the dictionary's 31 PUMAs, the grouped
    k-marginal lost 6-16 points), and a tool that scores by group may refuse the rows (SDNist's
    grouped k-marginal raises an error on a PUMA the data lack). As for a declared range
    (:func:`range_levels_empty_from_measurements`), an area whose combined count over AIM's
    measurements stays under a number of sds of its noise is marked empty, and at least one is kept;
    the number is ``GROUP_LEVEL_SHOW_SDS``, not 2: with 20 absent areas, one fresh release in six
    kept one at 2 sds (it read 3.1), while the grouped workload measures the groups in every marginal and areas of real
    rows showed 42-78 sds above the noise at eps 1 and 320-590 at eps 10 (the two NIST excerpts
    stacked, 1,200-2,300 rows an area; the absent ones at most 3.1). Only the grouping column is
    decided so: emptying the rare levels of every listed column (a codebook's) cost the NIST excerpts
    2-5 points, the rows of real but rare levels going elsewhere. Post-processing of noisy
    measurements already charged to the ledger.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The release's schema; the column is changed in place.
    measurements : list of ddssp.marginals.aim.Measurement
        AIM's noisy marginals.
    by : str or None
        The grouping column (None: nothing is done).

    Returns
    -------
    dict
        ``{column: [labels marked empty]}`` when some were.
    """
    columns = [by] if by is not None else []
    return _mark_weak_levels(
        schema, measurements, columns, lambda col: col.kind == "categorical", under_the_noise(GROUP_LEVEL_SHOW_SDS)
    )


def end_levels_empty_from_measurements(schema: Any, measurements: Any, columns: Any) -> dict[str, list[str]]:
    """Mark empty the outer bins of discovered numeric columns that AIM's noisy marginals show no rows in.

    A discovered range ends where discovery's noisy counts placed it; on a small table a scan band of
    noise next to the rows, or a private median drawn in empty space, can leave end bins (ages
    [164, 317]) that hold no row. Every level still gets noisy cells in every marginal with the column,
    the fitted model puts their positive noise on it, and synthetic rows land on values no record
    holds. From each end inwards, a level whose combined count over AIM's measurements (inverse
    variance, :func:`level_sums`) stays under ``RANGE_LEVEL_SHOW_SDS`` sds of its noise is marked
    empty (a level of the schema with no rows), up to the first level that shows; inner levels are
    left alone, so the rows the model holds stay inside the levels the counts show. When no level
    shows (a small table at a small budget), the counts cannot tell where the rows are and nothing is
    marked: the range stands on discovery's evidence. A range declared public (``--bounds``, a
    codebook) is not passed here: every value inside it is possible by declaration. The missing
    level is not decided here. Discovery's recycled counts are not
    used: they chose the range, so they are biased towards showing at its ends. Post-processing of
    noisy measurements already charged to the ledger.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The release's schema; columns are changed in place.
    measurements : list of ddssp.marginals.aim.Measurement
        AIM's noisy marginals.
    columns : iterable of str
        The columns whose range was discovered (others are passed over, as are columns that are not
        binned numeric ones: a whole-number level of a discovered column was released on its own
        count already).

    Returns
    -------
    dict
        ``{column: [labels marked empty]}`` for the columns where some were.
    """
    import numpy as np

    def weak(col: Any, count: Any, sd: float) -> tuple[list[int], list[int]]:
        values = np.asarray(col.values, dtype=float) if col.values is not None else np.zeros(col.size)
        codes = [
            i
            for i, lab in enumerate(col.labels)
            if lab != col.missing and lab not in col.empty and np.isfinite(values[i])
        ]
        # the level empty cells are coded to holds those rows whatever its count: never emptied
        inner = [i for i in codes if count[i] >= RANGE_LEVEL_SHOW_SDS * sd or col.labels[i] == col.na]
        if not inner:  # the counts cannot tell where the rows are: the discovered range stands
            return codes, []
        return codes, [i for i in codes if i < inner[0] or i > inner[-1]]

    return _mark_weak_levels(
        schema, measurements, columns, lambda col: col.kind == "numeric" and col.edges is not None, weak
    )


def _mark_weak_levels(schema: Any, measurements: Any, columns: Any, applies: Any, weak: Any) -> dict[str, list[str]]:
    """Mark empty, in each named column that ``applies(col)``, the levels ``weak`` picks from the
    combined noisy counts of AIM's measurements (:func:`level_sums`), keeping the strongest
    candidate when it picks them all (:func:`weak_levels`). Post-processing.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The release's schema; columns are changed in place.
    measurements : list of ddssp.marginals.aim.Measurement
        AIM's noisy marginals.
    columns : iterable of str
        The columns to decide (others are passed over).
    applies : callable
        ``applies(col) -> bool``: whether the rule decides this column.
    weak : callable
        ``weak(col, count, sd) -> (candidates, picked)``: the level codes the rule may mark and
        those it marks, from each level's combined count and their common noise sd.

    Returns
    -------
    dict
        ``{column: [labels marked empty]}`` for the columns where some were.
    """
    marked: dict[str, list[str]] = {}
    for name in columns:
        col = schema.column(name) if name in schema else None
        if col is None or not applies(col):
            continue
        x, w, _, _ = level_sums(name, col.size, measurements)
        if w == 0.0:
            continue
        count, sd = x / w, (1.0 / w) ** 0.5  # sd: the same for every level
        low = weak_levels(col, count, sd, weak)
        if low:
            labels = [col.labels[i] for i in low]
            col.with_empty([*col.empty, *labels])
            marked[name] = labels
    return marked


def catch_all_levels(schema: Any) -> dict[str, str]:
    """The catch-all level of each discovered categorical column that may hold rows.

    Discovery names that level ``<other>`` (made unique against the released labels); a level the
    schema marks empty holds no rows and is left out, as are declared missing levels (``N``), which
    name a value records have. Reads the public schema only.

    Parameters
    ----------
    schema : ddssp.data.Schema
        A release's schema.

    Returns
    -------
    dict
        ``{column: label of its catch-all level}``.
    """
    return {c.name: c.missing for c in getattr(schema, "columns", ()) if is_catch_all(c) and c.missing not in c.empty}


def is_catch_all(col: Any) -> bool:
    """Whether a column's missing level is discovery's catch-all ``<other>`` (made unique against the
    released labels), not a declared missing level such as ``N``. Reads the public schema only.

    Parameters
    ----------
    col : ddssp.data.Column
        A column of a release's schema.

    Returns
    -------
    bool
    """
    from ddssp.data.discovery.labels import OTHER_LABEL

    return col.kind == "categorical" and col.missing is not None and col.missing.rstrip("_") == OTHER_LABEL


def without_catch_all(rel: Any, columns: Any) -> Any:
    """The release with the catch-all levels of ``columns`` marked empty: its model conditioned on
    no row taking them (the rest in the model's own proportions).

    Post-processing of the released model, for synthetic rows that hold only labels the release
    names; the release itself (its file, its statistics) is unchanged.

    Parameters
    ----------
    rel : ddssp.releasefile.model.Release
        The release.
    columns : iterable of str
        Columns of :func:`catch_all_levels`.

    Returns
    -------
    Release
        A new release object (``rel`` unchanged).
    """
    import copy
    import dataclasses

    schema = copy.deepcopy(rel.schema)
    for name in columns:
        col = schema.column(name)
        col.with_empty([*col.empty, col.missing])
    return dataclasses.replace(rel, schema=schema, model=rel.fitted_model)
