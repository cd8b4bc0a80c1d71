"""Synthetic values of a binned column's end bins stop where a tail of their rows would end.

Discovery gives the outer bins of a binned numeric column a tail: rows thin out toward the outer
edge and stop where a tail of the bin's share would end (:func:`ddssp.data.discovery.bins.tail_end`).
Two kinds of end bin are spread over their whole width instead, and their synthetic values could
reach far past the data. After AIM, the end-bin rules (:mod:`ddssp.releasefile.conditions`) may
mark outer bins empty: the bin then left at the end was an inner bin (ages 92-98 drawn in [50, 99)
for a table whose oldest is 83). And an outer bin whose grid counts were noise is spread uniformly
(rainfall of 70-100 mm drawn in [12, 100] for a wettest day of 56); one whose noise
counts were shrunk to the tail discovery stopped three neighbour widths out has no reading of
counts either (ages 92-97 drawn in [59, 100] for a table whose oldest is 83), and one whose
spread kept part of its noise counts' deviation draws where noise cells near the outer edge came
out high (ages 92-97 in [63, 100], oldest 83). :func:`tail_end_bins` cuts such a bin's spread
where a tail holding its rows would end, from the release's own noisy outputs (its schema, AIM's
measurements, discovery's clipped shares and grid noise sds). :func:`drawing_schema` applies it
when synthetic rows are drawn, so rows drawn from a release file alone (any release file, older
ones too) follow it, and the file itself is unchanged.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

__all__ = [
    "BEYOND_SDS",
    "CLIPPED_SDS",
    "CONTINUE_SDS",
    "DECADE",
    "SPIKE",
    "TAIL_CELLS",
    "drawing_schema",
    "grid_sds",
    "tail_end_bins",
]

#: the bins emptied beyond an end bin whose combined noisy count reaches this many sds of its noise
#: show that the data goes on past the bin: it keeps its spread
CONTINUE_SDS = 1.0
#: discovery's noisy share of numbers beyond a column's range that reaches this many sds of its noise
#: shows that the data goes on past the column's own end bin: it keeps its spread. The share's sd is
#: about a tenth of the rows (raw Adult, 2,000 rows, eps 1), so the test must hold its level: over
#: 100 seeded releases, 1 sd passed at 12 of 93 column ends with nothing beyond (whose spread then
#: reaches the range's end, far past the data), 2 sds at 3
CLIPPED_SDS = 2.0
#: discovery's noisy grid counts beyond the end of a column's own end bin's tail, recovered from a
#: spread they shaped (:func:`_shows_beyond`), that reach this many sds of their noise together show
#: that the data goes on past it: the bin keeps its spread
BEYOND_SDS = 2.0
#: an end bin's inner neighbour this many times as dense as the next bin inwards is a spike, not the
#: start of a tail: the end bin keeps its spread
SPIKE = 4.0
#: sub-cells a column's own end bin is split into when its spread follows the tail (:func:`_tail_entry`)
TAIL_CELLS = 8
#: a column's own end bin on a log-spaced axis whose outer edge is this many times its inner one
#: (a decade) follows the tail when its spread reads no counts (:func:`_cut_entry`)
DECADE = 10.0


def _unread(entry: Any, a: float, b: float, tail: int) -> bool:
    """Whether a within-bin entry holds no reading of counts: uniform by width, or discovery's
    tail falling to the outer edge or to where it stopped it (the last sub-cell edge holding
    weight; :func:`ddssp.data.discovery.bins.tail_prior`); discovery's counts there were noise,
    shrunk to that shape. A stopped tail's end comes from the bins' design shares, not from counts."""
    from ddssp.data.discovery.bins import tail_prior

    sub = np.array([a, *entry[0], b], dtype=float)
    w = np.asarray(entry[1], dtype=float)
    if not w.sum() > 0:
        return False
    held = np.flatnonzero(w > 0)
    stop = float(sub[held[-1] + 1] if tail > 0 else sub[held[0]])
    shapes = [np.diff(sub), tail_prior(sub, a, b, tail)]
    if a < stop < b:
        shapes.append(tail_prior(sub, a, b, tail, stop))
    for u in shapes:
        if u.sum() > 0 and np.allclose(w / w.sum(), u / u.sum(), rtol=1e-3, atol=2e-5):
            return True
    return False


def drawing_schema(rel: Any) -> Any:
    """The schema a release's synthetic values are drawn by: its own, with the end bins of its
    discovered columns cut where their tails end (:func:`tail_end_bins`).

    A column counts as discovered when the release's ledger pays for its discovery; a declared
    column's within-bin spread is the publisher's and is kept. Post-processing of the release.

    Parameters
    ----------
    rel : ddssp.releasefile.Release
        The release.

    Returns
    -------
    ddssp.data.Schema
        The release's schema itself when no bin changes, else a changed copy.
    """
    found = {e.clique[0] for e in rel.ledger.discovery_entries if len(e.clique) == 1}
    names = [n for n in rel.schema.names if n in found and _binned(rel.schema.column(n))]
    if not names:
        return rel.schema
    schema = copy.deepcopy(rel.schema)
    clipped = dict((getattr(rel, "evidence", None) or {}).get("clipped", {}))
    sds = grid_sds(rel.ledger.discovery_entries)
    return schema if tail_end_bins(schema, rel.measurements, names, clipped, sds) else rel.schema


def grid_sds(entries: Any) -> dict[str, float]:
    """The noise sd of one cell of the numeric grid whose counts shaped each discovered column's
    within-bin spread: the coarse grid's when discovery counted one, else its last grid's.

    Parameters
    ----------
    entries : iterable of ddssp.dp.ledger.LedgerEntry
        The ledger's discovery entries.

    Returns
    -------
    dict
        ``{column: sd}``.
    """
    out: dict[str, float] = {}
    coarse: set[str] = set()
    for e in entries:
        note = e.note or ""
        if len(e.clique) != 1 or e.sigma is None or "counts on a" not in note or e.clique[0] in coarse:
            continue
        out[e.clique[0]] = float(e.sigma)
        if note.startswith("coarse"):
            coarse.add(e.clique[0])
    return out


def _binned(col: Any) -> bool:
    """Whether a column is binned numeric with a within-bin spread."""
    return col.kind == "numeric" and col.edges is not None and col.within is not None


def tail_end_bins(
    schema: Any, measurements: Any, columns: Any, clipped: Any = None, sds: Any = None
) -> dict[str, list[str]]:
    """Cut the spread of an end bin where a tail of its rows would end.

    The end bins are a binned column's lowest and highest bins not marked empty: one with bins
    marked empty beyond it (left at the end by the end-bin rules), or the column's own end bin when
    its spread reads no counts (uniform by width, or discovery's tail falling to the outer edge or
    to where the bins' design shares stopped it: its counts there were noise), or whose spread the
    counts shaped but whose counts beyond the tail's end, recovered from the spread, do not reach
    ``BEYOND_SDS`` sds of their noise together (:func:`_shows_beyond`; with ``sds`` only, else such
    a spread is kept). Its rows are taken to thin out from the density of its
    inner neighbour, as discovery takes an outer bin's (:func:`ddssp.data.discovery.bins.tail_end`):
    a tail holding the bin's rows (the ratio of the two bins' combined noisy counts over AIM's
    measurements, not capped at 1 as discovery's design shares are: an end bin holding many times its
    narrow neighbour's rows is no thin tail) ends ``TAIL_MEANS`` times that ratio of the
    neighbour's width past the bin's inner edge (in log units on a log-spaced axis). When that end
    lies inside the bin, the bin's spread draws nothing beyond it
    (:func:`ddssp.data.within.trimmed_entry`). A bin is left alone when the emptied bins beyond it
    read ``CONTINUE_SDS`` sds of rows together, or, for the column's own end bin, discovery's noisy
    share of numbers beyond the range reaches ``CLIPPED_SDS`` sds (the data goes on past it), when its
    neighbour is a spike
    (a point mass, one whole number, or ``SPIKE`` times as dense as the next bin inwards), reads no
    rows, or the bin is no wider than its tail; so are point masses and columns not named.
    Post-processing of noisy outputs already charged to the ledger.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The schema; columns are changed in place.
    measurements : list of ddssp.marginals.aim.Measurement
        AIM's noisy marginals.
    columns : iterable of str
        The columns to decide (the discovered ones).
    clipped : dict, optional
        ``{column: (below, above, sd below, sd above)}``: discovery's noisy shares of numbers left
        outside the range and their sds (the release's evidence).
    sds : dict, optional
        ``{column: sd}``: the noise sd of one cell of the grid whose counts shaped the column's
        within-bin spread (:func:`grid_sds`); without it a spread that reads counts is kept.

    Returns
    -------
    dict
        ``{column: [labels of the bins cut]}``.
    """
    from ddssp.data.within import Within
    from ddssp.errors import SchemaError
    from ddssp.releasefile.conditions import level_sums

    out: dict[str, list[str]] = {}
    for name in columns:
        col = schema.column(name) if name in schema else None
        if col is None or not _binned(col):
            continue
        edges = [float(e) for e in col.edges]
        m = len(edges) - 1
        live = [i for i in range(m) if col.labels[i] not in col.empty]
        if len(live) < 2:
            continue
        x, w, _, _ = level_sums(name, col.size, measurements)
        if w == 0.0:
            continue
        count, sd = x / w, w**-0.5
        bins = list(col.within.bins)
        for k, tail in ((0, -1), (len(live) - 1, 1)):
            i = live[k]
            read = False
            own = i == (0 if tail < 0 else m - 1)
            if own:  # the column's own end bin
                if bins[i] is None:
                    continue
                read = not _unread(bins[i], edges[i], edges[i + 1], tail)
                if read and (sds or {}).get(name) is None:
                    continue  # its spread reads counts whose noise is not known
                ev = (clipped or {}).get(name)
                if ev is not None and ev[1 if tail > 0 else 0] >= CLIPPED_SDS * ev[3 if tail > 0 else 2]:
                    continue  # numbers beyond the range show: the data goes on past it
            else:
                beyond = range(i) if tail < 0 else range(i + 1, m)
                if float(sum(count[b] for b in beyond)) >= CONTINUE_SDS * sd * math.sqrt(len(beyond)):
                    continue  # the emptied bins beyond show rows together: the data goes on past it
            entry = _cut_entry(edges, live, k, tail, count, bins, col.within.whole, shape=not read and own)
            if entry is None or (
                read and _shows_beyond(bins[i], entry, edges[i], edges[i + 1], tail, count[i], sds[name])
            ):
                continue
            trial = [*bins[: live[k]], entry, *bins[live[k] + 1 :]]
            try:
                Within(tuple(trial), whole=col.within.whole).check(name, edges)
            except SchemaError:
                continue
            bins = trial
            out.setdefault(name, []).append(col.labels[live[k]])
        if name in out:
            col.with_within(Within(tuple(bins), whole=col.within.whole))
    return out


def _shows_beyond(entry: Any, cut: Any, a: float, b: float, tail: int, total: float, sd: float) -> bool:
    """Whether discovery's noisy grid counts behind a within-bin spread show rows beyond the end of
    the cut entry ``cut`` together, at ``BEYOND_SDS`` sds of their noise.

    Discovery shrinks a bin's noisy sub-cell counts ``y`` (noise sd ``sd`` each) toward a prior
    spread ``u`` (:func:`ddssp.data.discovery.bins._shrunk_shares`): the spread is
    ``u + keep (y / T - u)`` with ``T`` the bin's total and ``keep = 1 - SHRINK_NOISE N / |y - T u|^2``
    (``N`` what the noise alone gives). With ``T`` from AIM's count of the bin (``total``) and ``u``
    the prior nearest the spread (uniform by width, or a tail falling to the outer edge), ``keep``
    and so the counts follow from the spread. The sum of the counts beyond the end is one test,
    whatever the number of sub-cells. Post-processing of public outputs."""
    from ddssp.data.discovery.bins import SHRINK_NOISE, tail_prior

    sub = np.array([a, *entry[0], b], dtype=float)
    w = np.asarray(entry[1], dtype=float) / float(np.sum(entry[1]))
    priors = [u / u.sum() for u in (np.diff(sub), tail_prior(sub, a, b, tail))]
    u = min(priors, key=lambda p: float(np.sum((w - p) ** 2)))
    dev = w - u
    size = float(np.linalg.norm(dev))
    if not (total > 0 and size > 0 and sd > 0):
        return False
    var = np.full(w.size, sd**2)
    noise = float(var.sum() - 2.0 * np.dot(u, var) + var.sum() * np.dot(u, u))
    norm = 0.5 * (total * size + math.sqrt((total * size) ** 2 + 4.0 * SHRINK_NOISE * noise))
    y = total * (u + dev * norm / (total * size))  # keep = total * size / norm
    end = cut[0][-1] if tail > 0 else cut[0][0]
    lo, hi = sub[:-1], sub[1:]
    part = np.clip(hi - np.maximum(lo, end), 0.0, None) if tail > 0 else np.clip(np.minimum(hi, end) - lo, 0.0, None)
    share = part / (hi - lo)  # each sub-cell's part beyond the end
    return float(np.dot(share, y)) >= BEYOND_SDS * sd * math.sqrt(float(np.sum(share)))


def _cut_entry(
    edges: list[float], live: list[int], k: int, tail: int, count: np.ndarray, bins: list, whole: bool, shape: bool
):
    """The within-bin entry of the end bin ``live[k]`` cut where its tail ends, or None (see
    :func:`tail_end_bins`). With ``shape`` (a column's own end bin whose spread reads no counts), a
    bin at least ``DECADE`` wide on a log-spaced axis follows the tail itself (:func:`_tail_entry`),
    also when the tail reaches the bin's outer edge: uniform by width, such a bin puts most of its
    draws in its outer decade, where the tail has thinned out (rain of 8.6-100 mm: half of the
    draws above 54 for a wettest day of 56). Other spreads are only cut."""
    from ddssp.data.discovery.bins import TAIL_MEANS, tail_end
    from ddssp.data.within import trimmed_entry

    i, j = live[k], live[k + 1] if tail < 0 else live[k - 1]
    if bins[i] is None or bins[j] is None or not count[j] > 0:
        return None
    a, b = edges[i], edges[i + 1]
    na, nb = edges[j], edges[j + 1]
    positive = [e for e in edges if e > 0]
    log = edges[0] >= 0 and len(positive) >= 2 and positive[-1] / positive[0] > 50 and na > 0
    if log and (a <= 0 if tail > 0 else b <= 0):
        return None
    width = math.log(nb / na) if log else nb - na
    if _spike(edges, live, k, tail, count, whole, log, bins):
        return None
    ratio = max(float(count[i]), 0.0) / float(count[j])
    end = tail_end(a, b, tail, ratio, width, log, whole)
    if shape and log and b >= DECADE * a:
        return _tail_entry(bins[i], a, b, tail, TAIL_MEANS * ratio * width, end, whole)
    if end is None:  # the bin is no wider than its tail: its spread stays
        return None
    sub = np.array([a, *bins[i][0], b], dtype=float)
    lo, hi = (np.ceil(sub[:-1]), np.ceil(sub[1:])) if whole else (sub[:-1], sub[1:])
    past = hi > end if tail > 0 else lo < end  # sub-cells holding values beyond the end
    if not np.any(np.asarray(bins[i][1])[past] > 0):  # its spread draws nothing there already
        return None
    return trimmed_entry(bins[i], a, b, end, tail, whole)


def _tail_entry(
    entry: Any, a: float, b: float, tail: int, length: float, end: float | None, whole: bool
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """A within-bin entry, for a bin on a log-spaced axis, whose weights follow a density falling
    linearly (in log units) from the bin's inner edge to zero ``length`` beyond it, as
    :func:`ddssp.data.discovery.bins.tail_end` takes an outer bin's rows to thin out, over
    ``entry``'s sub-cells and ``TAIL_CELLS`` log-equal ones up to ``end`` (where the tail ends
    inside the bin; whole numbers for a whole-number column); None when the density gives the bin
    no weight. Post-processing."""
    if not (length > 0 and math.isfinite(length)) or not (a > 0 and b > 0):
        return None
    lo, hi = (a, end) if tail > 0 and end is not None else (end, b) if end is not None else (a, b)
    even = np.geomspace(lo, hi, TAIL_CELLS + 1)
    cuts = np.concatenate([np.asarray(entry[0], dtype=float), even])
    cuts = np.ceil(cuts) if whole else cuts
    sub = np.unique(np.concatenate([[a], cuts[(cuts > a) & (cuts < b)], [b]]))
    inner = a if tail > 0 else b
    u = np.abs(np.log(sub / inner))
    mass = np.where(u < length, u - u**2 / (2.0 * length), length / 2.0)  # the density's integral from the edge
    w = np.abs(np.diff(mass))
    if not w.sum() > 0:
        return None
    return tuple(float(c) for c in sub[1:-1]), tuple(float(x) for x in w / w.sum())


def _spike(
    edges: list[float], live: list[int], k: int, tail: int, count: np.ndarray, whole: bool, log: bool, bins: list
) -> bool:
    """Whether the end bin's inner neighbour is a spike rather than the start of a tail: a bin of one
    whole number, or one whose density (combined noisy count over width) is over ``SPIKE`` times
    that of the next bin inwards (or that bin reads no rows). A tail starting from a spike's density
    would end at once (hours a week: 40 holds a third of the rows). A bin right above a point mass
    starts at the point's tiny offset (rain: [0.0004, 1.8) above the dry days' 0), a log width set
    by the offset and not by its rows, so the densities are then compared on the linear axis."""
    j = live[k + 1] if tail < 0 else live[k - 1]
    na, nb = edges[j], edges[j + 1]
    if whole and math.ceil(nb) - math.ceil(na) <= 1:
        return True
    gk = k + 2 if tail < 0 else k - 2
    if not 0 <= gk < len(live):  # no bin further in to compare with
        return False
    g = live[gk]
    ga, gb = edges[g], edges[g + 1]
    if log and ga <= 0:
        return False
    if log and tail > 0 and g > 0 and bins[g - 1] is None:  # the bin below is a point mass
        log = False

    def density(c: float, lo: float, hi: float) -> float:
        return c / (math.log(hi / lo) if log else hi - lo)

    inner = density(float(count[g]), ga, gb)
    return inner <= 0 or density(float(count[j]), na, nb) > SPIKE * inner


def balance_strata(schema: Any, workload: Any) -> dict[str, list[str]]:
    """For each column with a within-bin spread, the columns its synthetic values are balanced over
    (:func:`ddssp.data.encoding.decode`): those the workload asks for together with it, the most
    often first (by total weight; ties in schema order). A workload of marginals by a group (``--by``)
    puts the group first, since every marginal of the column holds it.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The release's schema.
    workload : sequence of (tuple of str, float)
        The release's workload.

    Returns
    -------
    dict
        ``{column: [columns]}``; a column the workload pairs with nothing gets ``[]`` (values still
        spread evenly over its bin's rows, in random order).
    """
    position = {n: i for i, n in enumerate(schema.names)}
    out: dict[str, list[str]] = {}
    for col in schema.columns:
        if col.within is None:
            continue
        weight: dict[str, float] = {}
        for clique, w in workload:
            if col.name in clique:
                for other in clique:
                    if other != col.name and other in position:
                        weight[other] = weight.get(other, 0.0) + float(w)
        out[col.name] = sorted(weight, key=lambda a: (-weight[a], position[a]))
    return out


def decoded_rows(rel: Any, codes: Any, rng: Any) -> Any:
    """Synthetic codes decoded to values (:func:`drawing_schema`: values drawn inside bins, balanced
    over the columns the workload pairs them with, :func:`balance_strata`, then exchanged inside
    their bins toward an even spread in every stratum, :func:`ddssp.releasefile.balance.balance_values`),
    then each declared order's second column sorted inside its bins by the first
    (:func:`ddssp.data.orders.arrange`).

    Parameters
    ----------
    rel : ddssp.releasefile.model.Release
        The release.
    codes : pandas.DataFrame
        Integer codes drawn from its model.
    rng : numpy.random.Generator
        Post-processing randomness.

    Returns
    -------
    pandas.DataFrame
    """
    from ddssp.data.orders import arrange
    from ddssp.data.rules import orders
    from ddssp.releasefile.balance import balance_values

    frame = drawing_schema(rel).decode(codes, rng=rng, strata=balance_strata(rel.schema, rel.workload))
    frame = balance_values(frame, codes, rel.schema, rel.workload, rng)
    declared = orders(rel.rules) if rel.rules else []
    return arrange(frame, codes, declared, rel.schema, rng) if declared else frame
