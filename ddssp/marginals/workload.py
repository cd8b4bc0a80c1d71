"""Marginal workloads: which marginals the release should answer well, with weights.

A workload is a list of ``(clique, weight)`` pairs; a clique is a tuple of column names.
AIM selects among the *downward closure* of the workload (every non-empty subset of a workload
clique), scoring candidate r with weight w_r = sum over workload cliques s of c_s * |r & s|.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ddssp.data.limits import MAX_WORKLOAD_CLIQUES
from ddssp.errors import WorkloadError
from ddssp.marginals.named_tables import canonical, cells
from ddssp.types import Clique, Domain

Workload = list[tuple[tuple[str, ...], float]]


def _cells(domain: Domain, clique: Iterable[str]) -> int:
    return math.prod(int(domain[a]) for a in clique)


def all_pairs(domain: Domain, max_cells: int | None = None, max_pairs: int = MAX_WORKLOAD_CLIQUES) -> Workload:
    """Every two-way marginal (columns in domain order), weight 1; on a wide table, a capped set of pairs.

    When the table has more pairs than ``max_pairs`` (from 143 columns with the default cap, the
    release file's clique limit), the workload is :func:`circular_pairs`: each column paired with
    the next ``k`` columns in domain order, wrapping around, with ``k = max_pairs // d``. It depends
    on the column order only, never on the data.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    max_cells : int, optional
        Drop pairs with more cells (:func:`cap_cells`).
    max_pairs : int
        At most this many pairs.

    Returns
    -------
    Workload

    Raises
    ------
    WorkloadError
        For fewer than two columns, or when the cap leaves nothing.
    """
    cols = list(domain)
    if len(cols) < 2:
        raise WorkloadError(f"all pairs needs at least two columns, the domain has {len(cols)}: {cols}")
    d = len(cols)
    if d * (d - 1) // 2 > max_pairs:
        wl = circular_pairs(domain, max(max_pairs // d, 1))
    else:
        wl = [((a, b), 1.0) for a, b in itertools.combinations(cols, 2)]
    return cap_cells(wl, domain, max_cells) if max_cells is not None else wl


def circular_pairs(domain: Domain, k: int) -> Workload:
    """Each column paired with the ``k`` columns that follow it in domain order (wrapping around), weight 1.

    Every column is in ``2k`` pairs (fewer when ``2k >= d``: then every pair is listed once); the
    workload has at most ``d * k`` pairs, each listed once, in order of the first column, then the
    offset.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    k : int
        Offsets 1..k.

    Returns
    -------
    Workload
    """
    cols = list(domain)
    d = len(cols)
    seen: set[frozenset] = set()
    wl: Workload = []
    for i in range(d):
        for j in range(1, min(k, d - 1) + 1):
            a, b = cols[i], cols[(i + j) % d]
            key = frozenset((a, b))
            if key not in seen:
                seen.add(key)
                wl.append(((a, b) if i < (i + j) % d else (b, a), 1.0))
    return wl


def target_pairs(domain: Domain, target: str, max_cells: int | None = None) -> Workload:
    """The target's one-way marginal plus every pair (target, other column), weight 1.

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    target : str
        The target column.
    max_cells : int, optional
        Drop marginals with more cells (:func:`cap_cells`).

    Returns
    -------
    Workload

    Raises
    ------
    WorkloadError
        When the target is not in the domain, or the cap leaves nothing.
    """
    if target not in domain:
        raise WorkloadError(f"target column {target!r} is not in the domain (columns: {', '.join(domain)})")
    wl: Workload = [((target,), 1.0)]
    wl += [((target, c), 1.0) for c in domain if c != target]
    return cap_cells(wl, domain, max_cells) if max_cells is not None else wl


def grouped_pairs(
    domain: Domain,
    by: str,
    max_cells: int | None = None,
    max_cliques: int = MAX_WORKLOAD_CLIQUES,
    fixed: Sequence[str] = (),
) -> Workload:
    """The pairs within each group: every three-way marginal (``by``, a, b), weight 1.

    A publication by geography (tables per PUMA, county, ...) reads each pair of columns inside
    each group; this workload asks AIM for exactly those. With one other column, the workload is
    the pair (``by``, that column). The group column's own one-way and two-way marginals are in
    the downward closure AIM selects from. A column of ``fixed`` (declared to depend on ``by``
    alone, ``DENSITY depends on PUMA``) is asked for only with the group, (``by``, c): each group
    holds one of its levels, so (``by``, c, a) says no more than (``by``, a), and AIM's rounds go to
    the other columns (on the NIST excerpts at eps 1, +2.0 and +3.4 points of the grouped k-marginal,
    seeded: the benchmarks page, "Agencies, round 5").

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    by : str
        The public grouping column.
    max_cells : int, optional
        Drop marginals with more cells (:func:`cap_cells`).
    max_cliques : int
        At most this many triples (the release file's clique limit): beyond it, each other column is
        paired within the group with the columns that follow it in domain order (:func:`circular_pairs`).
    fixed : sequence of str
        Columns fixed by the group (those not in the domain are ignored).

    Returns
    -------
    Workload

    Raises
    ------
    WorkloadError
        When ``by`` is not in the domain, it is the only column, or the cap leaves nothing.
    """
    if by not in domain:
        raise WorkloadError(
            f"grouping column {by!r} (AimOptions.by) is not in the domain (columns: {', '.join(domain)})"
        )
    if len(domain) < 2:
        raise WorkloadError(f"grouping by {by!r} needs at least one other column")
    fixed = set(fixed)
    pinned = [c for c in domain if c in fixed and c != by]
    others = {a: n for a, n in domain.items() if a != by and a not in pinned}
    if len(others) == 1:
        wl: Workload = [((by, next(iter(others))), 1.0)]
    elif others:
        wl = [((by, *cl), w) for cl, w in all_pairs(others, max_pairs=max_cliques)]
    else:
        wl = []
    wl += [((by, c), 1.0) for c in pinned]
    return cap_cells(wl, domain, max_cells) if max_cells is not None else wl


def cap_cells(workload: Workload, domain: Domain, max_cells: int) -> Workload:
    """Drop workload cliques whose marginal has more than ``max_cells`` cells.

    Parameters
    ----------
    workload : Workload
        The workload.
    domain : dict
        ``{column: size}``.
    max_cells : int
        A positive cap.

    Returns
    -------
    Workload

    Raises
    ------
    WorkloadError
        For an invalid cap, or when nothing is left.
    """
    if max_cells is None or max_cells < 1:
        raise WorkloadError(f"max_cells must be a positive integer, got {max_cells!r}")
    kept = [(cl, w) for cl, w in workload if _cells(domain, cl) <= max_cells]
    if not kept:
        raise WorkloadError(f"no workload marginal has at most {max_cells} cells; raise the cell cap")
    return kept


def load_workload(path: str | Path, domain: Domain) -> Workload:
    """Read a workload from JSON, then validate it against a domain.

    Parameters
    ----------
    path : str or pathlib.Path
        A JSON list: ``[{"clique": ["a", "b"], "weight": 1.0}, ...]`` or ``[["a", "b"], ...]``
        (weight 1).
    domain : dict
        ``{column: size}``.

    Returns
    -------
    Workload

    Raises
    ------
    WorkloadError
        For a missing or unreadable file, a malformed entry, or a workload that does not fit the
        domain (:func:`validate_workload`).
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise WorkloadError(f"workload file not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise WorkloadError(f"cannot read workload file {path}: {e}") from None
    if not isinstance(raw, list):
        raise WorkloadError(f"workload file {path} must hold a JSON list of cliques")
    wl: Workload = []
    for i, item in enumerate(raw):
        weight: Any = 1.0
        if isinstance(item, dict):
            if "clique" not in item:
                raise WorkloadError(f"workload entry {i} in {path} has no 'clique' key")
            clique, weight = item["clique"], item.get("weight", 1.0)
        else:
            clique = item
        if isinstance(clique, str):
            clique = [clique]
        if not isinstance(clique, list) or not all(isinstance(c, str) for c in clique):
            raise WorkloadError(f"workload entry {i} in {path} must be a list of column names, got {clique!r}")
        try:
            weight = float(weight)
        except (TypeError, ValueError):
            raise WorkloadError(f"workload entry {i} in {path} has a non-numeric weight {weight!r}") from None
        wl.append((tuple(clique), weight))
    return validate_workload(wl, domain)


def validate_workload(workload: Workload, domain: Domain) -> Workload:
    """Check a workload against a domain.

    Parameters
    ----------
    workload : Workload
        ``(clique, weight)`` pairs; a clique may be a single column name.
    domain : dict
        ``{column: size}``.

    Returns
    -------
    Workload
        Cliques as tuples, weights as floats.

    Raises
    ------
    WorkloadError
        For an empty workload, an empty clique, a column not in the domain (named in the message), a
        column repeated in a clique, or a weight that is not finite and > 0.
    """
    if workload is None or len(workload) == 0:
        raise WorkloadError("the workload is empty: give at least one marginal (clique)")
    out: Workload = []
    for item in workload:
        try:
            clique, weight = item
        except (TypeError, ValueError):
            raise WorkloadError(f"workload entries must be (clique, weight) pairs, got {item!r}") from None
        if isinstance(clique, str):
            clique = (clique,)
        clique = tuple(clique)
        if len(clique) == 0:
            raise WorkloadError("the workload contains an empty clique")
        unknown = [c for c in clique if c not in domain]
        if unknown:
            raise WorkloadError(
                f"workload clique {list(clique)} names unknown column(s) {unknown}; known columns: {', '.join(domain)}"
            )
        if len(set(clique)) != len(clique):
            raise WorkloadError(f"workload clique {list(clique)} repeats a column")
        try:
            weight = float(weight)
        except (TypeError, ValueError):
            raise WorkloadError(f"workload clique {list(clique)} has a non-numeric weight {weight!r}") from None
        if not math.isfinite(weight) or weight <= 0:
            raise WorkloadError(f"workload clique {list(clique)} has weight {weight}; weights must be > 0")
        out.append((clique, weight))
    return out


def downward_closure(workload: Workload) -> dict[tuple[str, ...], float]:
    """AIM candidates: every non-empty subset r of a workload clique, with its weight.

    The weight is w_r = sum over workload cliques s of c_s * abs(r & s).
    Subsets keep the column order of the first workload clique they come from; cliques that are
    permutations of each other count as the same candidate.

    Parameters
    ----------
    workload : Workload
        A validated workload.

    Returns
    -------
    dict
        ``{clique: weight}``.
    """
    seen: dict[frozenset, tuple[str, ...]] = {}
    touching: dict[str, list[int]] = {}  # column -> the workload entries that hold it
    for j, (clique, _) in enumerate(workload):
        for a in clique:
            touching.setdefault(a, []).append(j)
        for k in range(1, len(clique) + 1):
            for sub in itertools.combinations(clique, k):
                seen.setdefault(frozenset(sub), sub)
    weights = [float(w) for _, w in workload]
    out = {}
    for key, r in seen.items():
        # |key & s| = how many of key's columns the entry s holds; only entries holding one count
        shared = Counter(j for a in key for j in touching[a])
        out[r] = math.fsum(weights[j] * k for j, k in sorted(shared.items()))
    return out


def total_variation(p, q) -> float:
    """Total-variation distance between two count tables, each normalised to sum 1.

    Negative entries of ``q`` (noisy counts) are clipped to 0 first; an all-zero table stays zero.
    This is the workload error AIM's benchmarks and ``ddssp evaluate`` report.

    Parameters
    ----------
    p : array-like
        The reference counts.
    q : array-like
        The counts compared with it (may be noisy).

    Returns
    -------
    float
        In [0, 1].
    """
    p = np.asarray(p, dtype=float).ravel()
    q = np.asarray(q, dtype=float).ravel()
    p = p / p.sum() if p.sum() > 0 else p
    q = np.clip(q, 0.0, None)
    q = q / q.sum() if q.sum() > 0 else q
    return 0.5 * float(np.abs(p - q).sum())


def check_release_size(domain: Domain, workload: Workload, rounds: int | None, ledger: Any = None) -> None:
    """Refuse, before AIM runs, a release its reader would refuse (:func:`ddssp.data.limits.check_release_plan`).

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    workload : Workload
        The release's workload.
    rounds : int or None
        AIM's T (None: its default for the table's width).
    ledger : Ledger, optional
        The ledger so far (schema discovery's entries).

    Raises
    ------
    DDSSPError
        Naming the option that fixes it.
    """
    from ddssp.data.limits import check_release_plan
    from ddssp.marginals.aim_settings import default_rounds

    d = len(domain)
    entries = list(getattr(ledger, "entries", []) or [])
    check_release_plan(
        domain,
        len(workload),
        default_rounds(d) if rounds is None else int(rounds),
        ledger_entries=len(entries),
        discovery_entries=sum(1 for e in entries if getattr(e, "is_discovery", False)),
        listed_levels=sum(int(n) for n in domain.values()),
    )


def inside_measured(measured: list[Clique], candidates: Mapping[Clique, float]) -> set[Clique]:
    """The candidates inside some measured clique (measuring them again costs no model growth).

    Parameters
    ----------
    measured : list of tuple of str
        The measured cliques.
    candidates : mapping
        The candidates (cliques as keys).

    Returns
    -------
    set of tuple of str
    """
    longest = max(map(len, candidates), default=0)
    free: set[Clique] = set()
    for m in set(measured):
        if len(m) <= 12:  # the subsets of a small clique are fewer than the candidates
            for k in range(1, min(len(m), longest) + 1):
                free.update(c for c in itertools.combinations(m, k) if c in candidates)
        else:
            free.update(c for c in candidates if set(c) <= set(m))
    return free


def workload_candidates(workload: Workload, domain: Domain, max_model_size: float) -> dict[Clique, float]:
    """AIM's candidates: the workload's downward closure (in ``domain``'s column order) with summed
    weights; every candidate must fit the model size limit alone.

    Parameters
    ----------
    workload : Workload
        The weighted cliques.
    domain : dict
        ``{column: size}`` in the order the cliques are written in.
    max_model_size : float
        The model size limit (MB).

    Returns
    -------
    dict
        ``{clique: weight}``.

    Raises
    ------
    WorkloadError
        For a candidate larger than the limit alone.
    """
    candidates: dict[Clique, float] = {}
    for r, w in downward_closure(workload).items():
        c = canonical(domain, r)
        candidates[c] = candidates.get(c, 0.0) + w if c in candidates else w
    for c in candidates:
        mb = cells(domain, c) * 8 / 2**20
        if mb > max_model_size:
            raise WorkloadError(
                f"marginal {list(c)} alone has {cells(domain, c):,} cells = {mb:.1f} MB, more than the "
                f"model size limit of {max_model_size:g} MB; drop it from the workload, cap the cells "
                f"per marginal, or raise max_model_size"
            )
    return candidates
