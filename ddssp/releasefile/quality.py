"""The grade of a release: how much each column and pair can be trusted, from the release alone.

Everything here is post-processing of what the release file holds (noisy marginals with their noise
scales, the model fitted to them, the public schema and ledger, and the discovery evidence the file
records): it reads no data, so the grade of a published file is itself public, and two tables whose
releases hold the same noisy outputs get the same grade.

Per column (:class:`ColumnGrade`):

* the noise of its one-way marginal: the sd per cell of the inverse-variance combination of every
  measured marginal that holds the column (a clique of ``K`` cells summed down to the column's ``m``
  cells has variance ``sigma**2 * K / m`` per cell), its signal-to-noise ratio ``snr = n / (m * sd)``
  (rows per cell over the noise sd of a cell) and the expected total-variation error that noise
  alone gives the one-way, ``error = sqrt(2/pi) / 2 * m * sd / n`` (about ``0.4 / snr``); a column
  no measurement holds is ``inferred`` (its distribution is the model's guess);
* its clipped shares below / above its range: discovery's noisy estimate (the noisy counts a grid's
  cut left out) when the release records one, ``declared`` for a public range, else unknown; and
  the share of the rows in a binned column's end bin, which is where clipped rows go (a range that
  clips most rows shows as an end bin holding them);
* the share of its rows in its catch-all level (``<other>``: labels not released or not declared),
  read from the model's one-way marginal.

Per pair: ``measured`` (the cliques that hold both columns, and the noise sd per cell of the pair's
marginal relative to the rows) or ``inferred`` by the model.

A column is weak (:data:`WEAK_ERROR`, :data:`WEAK_CLIPPED`, :data:`WEAK_FOLDED`, :data:`WEAK_END_BIN`)
when any of those says its released distribution is poor; :func:`problems` turns the weak columns
into one line per problem, each naming its fix.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddssp.releasefile.conditions import is_catch_all, level_sums

#: a one-way marginal whose expected total-variation error from noise exceeds this is weak
#: (an snr below about 8 rows per cell per noise sd); see the benchmarks page for the measurement
WEAK_ERROR = 0.05
#: a numeric column with more than this share of its numbers estimated outside its range is weak
WEAK_CLIPPED = 0.05
#: a numeric column whose clipped estimate cannot rule out more than this share outside its range
#: (estimate + 2 sd, on either side) has an unchecked range: weak, with the same fix as clipping
WEAK_UNCHECKED = 0.25
#: a categorical column with more than this share of its rows in its catch-all level is weak
WEAK_FOLDED = 0.10
#: an end bin of a binned numeric column (3 bins or more) holding more than this share of the rows
#: is where a range that clips them would put them: weak (not a first bin starting at zero, a
#: natural floor of counts and amounts, nor a point mass such as exact zeros)
WEAK_END_BIN = 0.5
#: sqrt(2 / pi) / 2: the expected |N(0, 1)|, halved (total variation is half the L1 distance)
_TV_PER_SD = math.sqrt(2.0 / math.pi) / 2.0
#: the release file's optional section of discovery evidence
SECTION = "grade_evidence"
#: bounds of that section: the longest reason string, and the most entries of each part
MAX_REASON = 400
MAX_ENTRIES = 100_000
#: the largest noise sd of a clipped share the file may state (a share's sd can exceed 1 on a tiny table)
MAX_SD = 1e6


class WeakReleaseWarning(UserWarning):
    """A release whose grade shows weak columns: one warning per kind of problem, naming the fix."""


@dataclass
class ColumnGrade:
    """How far one column of a release can be trusted (see the module docstring).

    Attributes
    ----------
    name, kind : str
        The column and its kind.
    size : int
        Its number of levels (cells of its one-way marginal).
    source : str
        ``"declared"`` or ``"discovered"``.
    measured : str
        ``"one-way"`` (its own marginal was measured), ``"in cliques"`` (only larger marginals hold
        it) or ``"inferred"`` (no measurement holds it).
    sd : float or None
        Noise sd per cell of its one-way marginal (None when inferred).
    snr : float or None
        ``n / (size * sd)``.
    error : float or None
        Expected total-variation error of its one-way from noise alone.
    clipped : tuple of float or None
        Estimated shares of its numbers below and above its range (numeric).
    clipped_sd : tuple of float or None
        The noise sds of those two estimates (as shares).
    clip_source : str
        ``"estimated"``, ``"declared"`` (a public range), ``"unknown"`` or ``""`` (not numeric).
    end_bin : float or None
        The larger share of rows in the first or last bin (binned numeric columns of 3+ bins).
    folded : float or None
        Share of rows in discovery's catch-all level ``<other>`` (a declared missing level such as N is not one).
    emptied : list of str
        End bins of a discovered binned column marked empty because AIM's counts did not show rows
        in them (no synthetic rows are drawn there).
    emptied_share : tuple of float or None
        AIM's combined noisy share of the rows in those bins, and its noise sd.
    weak : list of str
        Why it is weak (empty: it is not).
    """

    name: str
    kind: str
    size: int
    source: str
    measured: str
    sd: float | None = None
    snr: float | None = None
    error: float | None = None
    clipped: tuple[float, float] | None = None
    clipped_sd: tuple[float, float] | None = None
    clip_source: str = ""
    end_bin: float | None = None
    folded: float | None = None
    emptied: list[str] = field(default_factory=list)
    emptied_share: tuple[float, float] | None = None
    weak: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The grade as a JSON-ready dict.

        Returns
        -------
        dict
        """
        d = dict(self.__dict__)
        d["clipped"] = list(self.clipped) if self.clipped is not None else None
        d["clipped_sd"] = list(self.clipped_sd) if self.clipped_sd is not None else None
        d["weak"] = list(self.weak)
        d["emptied"] = list(self.emptied)
        d["emptied_share"] = list(self.emptied_share) if self.emptied_share is not None else None
        return d


@dataclass
class PairGrade:
    """Whether a pair of columns was measured together.

    Attributes
    ----------
    columns : tuple of str
        The two columns.
    cliques : list of tuple of str
        The measured marginals that hold both (empty: inferred by the model).
    sd_share : float or None
        Noise sd per cell of the pair's marginal, over the rows (None when inferred).
    error : float or None
        Expected total-variation error of the pair's marginal from noise alone.
    """

    columns: tuple[str, str]
    cliques: list[tuple[str, ...]]
    sd_share: float | None = None
    error: float | None = None

    @property
    def measured(self) -> bool:
        """Some measured marginal holds both columns."""
        return bool(self.cliques)


@dataclass
class Grade:
    """The grade of a release: its columns, pairs and dropped columns (see the module docstring).

    Attributes
    ----------
    rows : float
        The model's noisy estimate of the rows.
    columns : dict
        ``{name: ColumnGrade}`` in schema order.
    pairs : list of PairGrade
        Every pair of columns, in schema order.
    dropped : dict
        ``{column: why}``: discovered columns (in the ledger) that the release left out; the reason
        is empty when the file does not record it.
    """

    rows: float
    columns: dict[str, ColumnGrade]
    pairs: list[PairGrade]
    dropped: dict[str, str]

    @property
    def weak(self) -> list[str]:
        """The weak columns, in schema order."""
        return [n for n, c in self.columns.items() if c.weak]

    @property
    def inferred_pairs(self) -> list[tuple[str, str]]:
        """The pairs no measured marginal holds."""
        return [p.columns for p in self.pairs if not p.measured]

    def to_dict(self) -> dict[str, Any]:
        """The grade as a JSON-ready dict (the ``grade`` of ``ddssp inspect --json``).

        Returns
        -------
        dict
            Rows, thresholds, columns, weak columns, pairs (measured count, inferred pairs), dropped
            columns and the problem lines.
        """
        return {
            "rows": self.rows,
            "thresholds": {
                "error": WEAK_ERROR,
                "clipped": WEAK_CLIPPED,
                "folded": WEAK_FOLDED,
                "end_bin": WEAK_END_BIN,
                "unchecked": WEAK_UNCHECKED,
            },
            "columns": {n: c.to_dict() for n, c in self.columns.items()},
            "weak": self.weak,
            "pairs": {
                "measured": sum(p.measured for p in self.pairs),
                "inferred": [list(p) for p in self.inferred_pairs],
                "measured_pairs": [
                    {"columns": list(p.columns), "cliques": [list(c) for c in p.cliques], "sd_share": p.sd_share}
                    for p in self.pairs
                    if p.measured
                ],
            },
            "dropped": dict(self.dropped),
            "problems": problems(self),
        }


def _tv_error(cells: float, sd: float, rows: float) -> float:
    """Expected total-variation error of a marginal of ``cells`` cells with noise ``sd`` per cell."""
    return min(1.0, _TV_PER_SD * cells * sd / max(rows, 1.0))


def _combined_sd(
    measurements: list[Any], holding: list[int], sizes: dict[str, int], cols: tuple[str, ...]
) -> tuple[float, list]:
    """The noise sd per cell of the marginal over ``cols`` from the measurements ``holding`` (the
    indices of those that hold every column of ``cols``; inverse-variance combination, a clique's
    cells summed down to the marginal's), and those measurements' cliques (inf and none when no
    measurement holds them)."""
    m = math.prod(sizes[c] for c in cols)
    precision, cliques = 0.0, []
    for i in holding:
        meas = measurements[i]
        k = math.prod(sizes[c] for c in meas.clique)
        var = float(meas.sigma) ** 2 * k / m
        if var > 0:
            precision += 1.0 / var
        cliques.append(tuple(meas.clique))
    return (1.0 / math.sqrt(precision) if precision > 0 else math.inf), list(dict.fromkeys(cliques))


def _grade_key(rel: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """What a release's grade is computed from: the objects it reads (compared by identity, and held
    so that their ids cannot be reused) and a snapshot of the parts that can change in place (the
    measurement list, the ledger's discovery entries, the evidence, the model's total)."""
    meas = list(getattr(rel, "measurements", None) or [])
    ledger = getattr(rel, "ledger", None)
    entries = list(getattr(ledger, "discovery_entries", None) or [])
    refs = (getattr(rel, "schema", None), getattr(rel, "model", None), ledger, *meas, *entries)
    evidence = getattr(rel, "evidence", None) or {}
    snapshot = (
        tuple((tuple(m.clique), float(m.sigma)) for m in meas),
        tuple(getattr(e, "clique", None) for e in entries),
        repr(evidence),
        float(rel.total),
        tuple(getattr(getattr(rel, "schema", None), "names", ()) or ()),
    )
    return refs, snapshot


def grade(rel: Any) -> Grade:
    """The grade of a release, from the release alone.

    The grade is cached on the release object and computed again only when what it reads has
    changed (an attribute replaced, a measurement added, removed or re-scaled, discovery entries,
    evidence or the model's total changed): ``inspect``, ``repr``, ``synth`` and ``fit`` each ask for
    it, and on a wide release it takes seconds. The cached :class:`Grade` is shared: treat it as
    read-only.

    Parameters
    ----------
    rel : Release
        The release (made, or loaded from a file).

    Returns
    -------
    Grade
    """
    key = _grade_key(rel)
    store = getattr(rel, "__dict__", None)
    cached = store.get("_grade_cache") if store is not None else None
    if (
        cached is not None
        and len(cached[0][0]) == len(key[0])
        and all(a is b for a, b in zip(cached[0][0], key[0]))
        and cached[0][1] == key[1]
    ):
        return cached[1]
    out = _compute_grade(rel)
    if store is not None:
        store["_grade_cache"] = (key, out)
    return out


def _compute_grade(rel: Any) -> Grade:
    """:func:`grade` without the cache."""
    sizes = dict(rel.schema.domain)
    rows = max(float(rel.total), 1.0)
    discovered = {e.clique[0] for e in rel.ledger.discovery_entries if e.clique}
    evidence = getattr(rel, "evidence", None) or {}
    clipped = evidence.get("clipped", {})
    holding: dict[str, list[int]] = {c: [] for c in sizes}  # column -> the measurements that hold it
    for i, meas in enumerate(rel.measurements):
        for c in dict.fromkeys(meas.clique):
            holding[c].append(i)
    columns: dict[str, ColumnGrade] = {}
    for col in rel.schema.columns:
        name = col.name
        sd, cliques = _combined_sd(rel.measurements, holding[name], sizes, (name,))
        g = ColumnGrade(
            name=name,
            kind=col.kind,
            size=col.size,
            source="discovered" if name in discovered else "declared",
            measured="inferred" if not cliques else ("one-way" if (name,) in cliques else "in cliques"),
        )
        if cliques:
            g.sd = sd
            g.snr = rows / (col.size * sd) if sd > 0 else math.inf
            g.error = _tv_error(col.size, sd, rows)
        _clipping(g, col, rel, clipped)
        if g.source == "discovered":
            _emptied(g, col, rel)
        if is_catch_all(col):  # discovery's <other>, not a declared missing level such as N
            g.folded = _share(rel, name, col.missing_code)
        g.weak = _weak(g)
        columns[name] = g
    pairs = []
    names = list(rel.schema.names)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            both = sorted(set(holding[a]).intersection(holding[b]))
            sd, cliques = _combined_sd(rel.measurements, both, sizes, (a, b))
            p = PairGrade((a, b), cliques)
            if cliques:
                p.sd_share = sd / rows
                p.error = _tv_error(sizes[a] * sizes[b], sd, rows)
            pairs.append(p)
    reasons = evidence.get("dropped", {})
    dropped = {c: reasons.get(c, "") for c in sorted(discovered - set(names))}
    return Grade(rows=rows, columns=columns, pairs=pairs, dropped=dropped)


def _share(rel: Any, name: str, code: int | None) -> float | None:
    """The share of the rows at one level in the model's one-way marginal of ``name``."""
    if code is None:
        return None
    p = np.clip(np.asarray(rel.model.marginal((name,)), dtype=float), 0.0, None)
    total = float(p.sum())
    return float(p[code] / total) if total > 0 else None


def _clipping(g: ColumnGrade, col: Any, rel: Any, clipped: dict[str, Any]) -> None:
    """The column's clipped shares and its end-bin share.

    The clipped shares are discovery's estimate when the file records one (``"estimated"``); for a
    discovered binned column without it (bins from private medians, nominally of equal frequency)
    the excess of each end bin's share over the median share of the inner bins (``"end bins"``);
    ``"declared"`` for a public range. Post-processing of the model's one-way marginal."""
    if col.kind != "numeric":
        return
    g.clip_source = "declared" if g.source == "declared" else "unknown"
    if g.name in clipped:
        below, above, sd_below, sd_above = clipped[g.name]
        g.clipped, g.clipped_sd, g.clip_source = (below, above), (sd_below, sd_above), "estimated"
    if col.edges is None:
        return
    p = np.clip(np.asarray(rel.model.marginal((g.name,)), dtype=float), 0.0, None)
    keep = [i for i in range(col.size) if i != col.missing_code and col.values[i] == col.values[i]]
    total = float(p[keep].sum()) if keep else 0.0
    if total <= 0 or len(keep) < 3:
        return
    share = p[keep] / total
    # a first bin at a floor of zero, or a point mass (exact zeros), holds real values, not clipped ones
    floor = float(col.edges[0]) == 0.0 or _point(col, 0)
    g.end_bin = float(max(0.0 if floor else share[0], 0.0 if _point(col, len(keep) - 1) else share[-1]))
    if g.clip_source == "unknown" and len(keep) >= 4:
        typical = float(np.median(share[1:-1]))
        below = 0.0 if _point(col, 0) else max(share[0] - typical, 0.0)
        above = 0.0 if _point(col, len(keep) - 1) else max(share[-1] - typical, 0.0)
        sd = 1.0 / (g.snr * g.size) if g.snr else 0.0  # a cell's noise sd as a share of the rows
        g.clipped, g.clipped_sd, g.clip_source = (below, above), (sd, sd), "end bins"


def _emptied(g: ColumnGrade, col: Any, rel: Any) -> None:
    """The end bins of a binned column marked empty (:func:`ddssp.releasefile.conditions.end_levels_empty_from_measurements`)
    and AIM's combined noisy share of the rows in them with its sd: under large noise real rows may
    lie there, and no synthetic row will. Post-processing of the measurements."""

    binned = col.kind == "numeric" and col.edges is not None
    idx = [i for i, lab in enumerate(col.labels) if binned and lab in col.empty and lab != col.missing]
    if not idx:
        return
    (x, w, _, _), rows = level_sums(g.name, col.size, rel.measurements), max(float(rel.total), 1.0)
    g.emptied = [col.labels[i] for i in idx]
    if w > 0:
        g.emptied_share = (float(np.sum(x[idx]) / w) / rows, math.sqrt(len(idx) / w) / rows)


def _emptied_up_to(g: ColumnGrade) -> float | None:
    """The share of rows the emptied end bins may hold (noisy share + 2 sds) if over WEAK_UNCHECKED."""
    up = min(max(g.emptied_share[0], 0.0) + 2.0 * g.emptied_share[1], 1.0) if g.emptied_share else 0.0
    return up if up > WEAK_UNCHECKED else None


def _point(col: Any, i: int) -> bool:
    """Whether bin ``i`` of a binned column is a point mass (it decodes to exactly one value)."""
    within = getattr(col, "within", None)
    return within is not None and i < len(within.bins) and within.bins[i] is None


def _weak(g: ColumnGrade) -> list[str]:
    """Why a column is weak, one short reason per threshold crossed."""
    out = []
    if g.measured == "inferred":
        out.append("never measured (the model's guess)")
    elif g.error is not None and g.error > WEAK_ERROR:
        out.append(f"one-way error ~{g.error:.0%} from noise")
    if _clips(g):
        out.append(f"~{g.clipped[0]:.0%} below / {g.clipped[1]:.0%} above its range, clipped")
    elif _unchecked(g) is not None:
        out.append(f"range unchecked: up to ~{_unchecked(g):.0%} of its numbers may lie outside it")
    elif g.end_bin is not None and g.end_bin > WEAK_END_BIN:
        out.append(f"{g.end_bin:.0%} of rows in an end bin (its range may clip them)")
    if g.folded is not None and g.folded > WEAK_FOLDED:
        out.append(f"{g.folded:.0%} of rows folded into its catch-all level")
    if _emptied_up_to(g) is not None:
        out.append(f"no rows drawn in {len(g.emptied)} end bin(s) that may hold ~{_emptied_up_to(g):.0%} of rows")
    return out


def _clips(g: ColumnGrade) -> bool:
    """Whether a clipped share of the column is above :data:`WEAK_CLIPPED` by twice its noise sd
    (a noisy estimate must show it, not merely allow it)."""
    if g.clipped is None:
        return False
    sd = g.clipped_sd or (0.0, 0.0)
    return any(v - 2.0 * s > WEAK_CLIPPED for v, s in zip(g.clipped, sd))


def _unchecked(g: ColumnGrade) -> float | None:
    """The share of the column's numbers its clipped estimate cannot rule out lying outside its range
    (estimate + 2 sd, the larger side), when above :data:`WEAK_UNCHECKED`; else None."""
    if g.clipped is None or g.clip_source != "estimated":
        return None
    sd = g.clipped_sd or (0.0, 0.0)
    top = max(min(v + 2.0 * s, 1.0) for v, s in zip(g.clipped, sd))
    return top if top > WEAK_UNCHECKED else None


def problems(gr: Grade) -> list[str]:
    """One line per kind of problem of the weak columns, each naming the columns and the fix.

    Parameters
    ----------
    gr : Grade

    Returns
    -------
    list of str
        Empty when no column is weak.
    """
    cols = gr.columns.values()
    out = []

    def names(gs, what) -> str:
        shown = [f"{g.name!r} ({what(g)})" for g in gs]
        return ", ".join(shown[:6]) + (f" and {len(shown) - 6} more" if len(shown) > 6 else "")

    noisy = [g for g in cols if g.error is not None and g.error > WEAK_ERROR]
    if noisy:
        out.append(
            "noise swamps the one-way marginal of "
            + names(noisy, lambda g: f"expected error ~{g.error:.0%}")
            + ": a larger eps or fewer columns (ReadOptions.columns/drop), or fewer levels "
            "(DiscoveryOptions.bins, DiscoveryOptions.max_levels)"
        )
    never = [g for g in cols if g.measured == "inferred"]
    if never:
        out.append(
            "no measured marginal holds "
            + names(never, lambda g: "its distribution is the model's guess")
            + ": a larger eps or more rounds (AimOptions.rounds), or fewer columns (ReadOptions.columns/drop)"
        )
    clip = [g for g in cols if _clips(g)]
    end = [g for g in cols if g not in clip and g.end_bin is not None and g.end_bin > WEAK_END_BIN]
    if clip or end:
        what = names(clip, lambda g: f"~{g.clipped[0]:.0%} below, ~{g.clipped[1]:.0%} above") if clip else ""
        if end:
            what += (", " if what else "") + names(end, lambda g: f"{g.end_bin:.0%} of rows in an end bin")
        out.append(
            "values outside the range are clipped into the end bins of "
            + what
            + ": declare the range (a codebook, DiscoveryOptions.hints bounds), or give discovery more budget "
            "(DiscoveryOptions.share, or a larger eps or fewer columns)"
        )
    unchecked = [g for g in cols if not _clips(g) and _unchecked(g) is not None]
    if unchecked:
        out.append(
            "the noisy counts cannot check the range of "
            + names(unchecked, lambda g: f"up to ~{_unchecked(g):.0%} may lie outside it")
            + ": declare the range (a codebook, DiscoveryOptions.hints bounds), or give discovery more budget "
            "(DiscoveryOptions.share, or a larger eps or fewer columns)"
        )
    emptied = [g for g in cols if _emptied_up_to(g) is not None]
    if emptied:
        out.append(
            "end bins whose rows the noisy counts cannot show draw no synthetic rows in "
            + names(emptied, lambda g: f"{', '.join(g.emptied)}: up to ~{_emptied_up_to(g):.0%} of rows")
            + ": declare the range (a codebook, DiscoveryOptions.hints bounds), or a larger eps or fewer columns"
        )
    folded = [g for g in cols if g.folded is not None and g.folded > WEAK_FOLDED]
    if folded:
        out.append(
            "labels not released are folded into the catch-all level of "
            + names(folded, lambda g: f"{g.folded:.0%} of rows")
            + ": declare its labels (a codebook, DiscoveryOptions.hints levels), or give discovery more budget "
            "(DiscoveryOptions.share, or a larger eps or fewer columns)"
        )
    return out


def grade_lines(gr: Grade, width: int = 24) -> list[str]:
    """The grade as text lines (``ddssp inspect``): one line per column, then the pairs and the
    dropped columns.

    Parameters
    ----------
    gr : Grade
    width : int
        The width of the name column.

    Returns
    -------
    list of str
    """
    out = [f"grade (from the noisy outputs only; {len(gr.weak)} weak column(s) of {len(gr.columns)}):"]
    for g in gr.columns.values():
        noise = "inferred by the model" if g.error is None else f"snr {g.snr:.3g}, one-way error ~{g.error:.1%}"
        extra = []
        if g.clipped is not None:
            sd = g.clipped_sd or (0.0, 0.0)
            extra.append(
                f"clipped ~{g.clipped[0]:.1%} (sd {sd[0]:.1%}) below / ~{g.clipped[1]:.1%} (sd {sd[1]:.1%}) above"
                + ("" if g.clip_source == "estimated" else f" ({g.clip_source})")
            )
        elif g.clip_source == "declared":
            extra.append("range declared")
        extra += [f"end bin {g.end_bin:.0%}"] if g.end_bin is not None else []
        extra += [f"<other> {g.folded:.1%}"] if g.folded is not None else []
        mark = "WEAK " if g.weak else "     "
        out.append(f"  {mark}{g.name:<{width}} {noise}" + ("; " + "; ".join(extra) if extra else ""))
    measured = sum(p.measured for p in gr.pairs)
    inferred = gr.inferred_pairs
    line = f"  pairs: {measured} of {len(gr.pairs)} measured"
    if inferred:
        shown = ", ".join(f"{a} x {b}" for a, b in inferred[:8])
        line += f"; inferred by the model: {shown}" + (f" and {len(inferred) - 8} more" if len(inferred) > 8 else "")
    out.append(line)
    if gr.dropped:
        out.append("  dropped: " + "; ".join(f"{c}" + (f" ({why})" if why else "") for c, why in gr.dropped.items()))
    return out


def grade_html(gr: Grade) -> str:
    """The grade as an HTML table (the release's ``_repr_html_``).

    Parameters
    ----------
    gr : Grade

    Returns
    -------
    str
    """
    e = html.escape
    rows = []
    for g in gr.columns.values():
        noise = "inferred" if g.error is None else f"{g.error:.1%}"
        clip = f"{g.clipped[0]:.1%} / {g.clipped[1]:.1%}" if g.clipped is not None else e(g.clip_source)
        folded = "" if g.folded is None else f"{g.folded:.1%}"
        weak = "; ".join(g.weak)
        style = ' style="color:#b00"' if g.weak else ""
        rows.append(
            f"<tr{style}><td>{e(g.name)}</td><td>{e(g.kind)}</td><td>{g.size}</td><td>{e(g.measured)}</td>"
            f"<td>{noise}</td><td>{clip}</td><td>{folded}</td><td>{e(weak)}</td></tr>"
        )
    head = (
        "<tr><th>column</th><th>kind</th><th>levels</th><th>measured</th><th>one-way error</th>"
        "<th>clipped below / above</th><th>&lt;other&gt;</th><th>weak</th></tr>"
    )
    measured = sum(p.measured for p in gr.pairs)
    foot = f"<p>pairs: {measured} of {len(gr.pairs)} measured, the others inferred by the model"
    if gr.dropped:
        foot += "; dropped: " + e(", ".join(gr.dropped))
    return f"<table>{head}{''.join(rows)}</table>{foot}</p>"


def evidence_section(clipped: dict[str, tuple[float, ...]], dropped: dict[str, str]) -> dict[str, Any]:
    """The release file's discovery evidence (:data:`SECTION`): empty when there is none.

    Parameters
    ----------
    clipped : dict
        ``{column: (below, above, sd_below, sd_above)}``: discovery's noisy clipped shares and
        their noise sds (public post-processing).
    dropped : dict
        ``{column: why}``: the discovered columns left out.

    Returns
    -------
    dict
    """
    out: dict[str, Any] = {}
    if clipped:
        out["clipped"] = {
            c: [min(max(float(v), 0.0), 1.0) for v in bv[:2]] + [min(max(float(v), 0.0), MAX_SD) for v in bv[2:]]
            for c, bv in clipped.items()
        }
    if dropped:
        out["dropped"] = {c: str(why)[:MAX_REASON] for c, why in dropped.items()}
    return out


def check_evidence(section: Any, columns: list[str], discovered: set[str]) -> dict[str, Any]:
    """The discovery evidence section of a release file, validated (old files have none).

    Parameters
    ----------
    section : any
        The section as read.
    columns : list of str
        The schema's columns: ``clipped`` may name only these.
    discovered : set of str
        The columns the ledger's discovery entries name: ``dropped`` may name only those not in
        ``columns``.

    Returns
    -------
    dict
        ``{"clipped": {column: (below, above, sd_below, sd_above)}, "dropped": {column: why}}``
        (parts that are absent are left out).

    Raises
    ------
    ValueError
        For anything else: a malformed part, an unknown column, a share outside [0, 1], a reason
        that is not a short line.
    """
    if not isinstance(section, dict) or set(section) - {"clipped", "dropped"}:
        raise ValueError(f"{SECTION} must be an object with 'clipped' and/or 'dropped'")
    out: dict[str, Any] = {}
    clipped = section.get("clipped", {})
    if not isinstance(clipped, dict) or len(clipped) > min(len(columns), MAX_ENTRIES):
        raise ValueError(f"{SECTION}.clipped must be an object with one entry per column at most")
    known = set(columns)
    checked = {}
    for c, v in clipped.items():
        if c not in known:
            raise ValueError(f"{SECTION}.clipped names a column the schema does not hold")
        ok = isinstance(v, list) and len(v) == 4
        if not ok or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise ValueError(f"{SECTION}.clipped[{c!r}] must be four numbers")
        if not (all(0 <= x <= 1 for x in v[:2]) and all(0 <= x <= MAX_SD for x in v[2:])):
            raise ValueError(f"{SECTION}.clipped[{c!r}] must be two shares in [0, 1] and their sds in [0, {MAX_SD:g}]")
        checked[c] = tuple(float(x) for x in v)
    if "clipped" in section:
        out["clipped"] = checked
    dropped = section.get("dropped", {})
    left_out = discovered - known
    if not isinstance(dropped, dict) or len(dropped) > min(len(left_out), MAX_ENTRIES):
        raise ValueError(f"{SECTION}.dropped must name only discovered columns the release left out")
    for c, why in dropped.items():
        if c not in left_out:
            raise ValueError(f"{SECTION}.dropped must name only discovered columns the release left out")
        if not isinstance(why, str) or len(why) > MAX_REASON or any(ch in why for ch in "\r\n"):
            raise ValueError(f"{SECTION}.dropped[{c!r}] must be one line of at most {MAX_REASON} characters")
    if "dropped" in section:
        out["dropped"] = dict(dropped)
    return out
