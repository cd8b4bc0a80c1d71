"""Synthetic rows brought closer to the model's answers on the release's workload (post-processing).

Rows drawn from a model, even by controlled rounding, answer a marginal that spans several of its
cliques with sampling error: each row's values come from conditional draws, and the counts of a pair
or triple across cliques scatter around the model's own. :func:`match_workload` swaps rows of a drawn
sample for rows of a second draw from the same model while the swap lowers the L1 distance between
the sample's counts and the model's expected counts (``rows * P``), summed over the workload's
marginals. Every row still comes from the model (and follows whatever the model's draws follow, such
as declared rules, when the pool is filtered the same way); only which rows are kept changes, so no
cell the model gives no mass is ever filled.

Swaps of whole rows stall far above what rounding allows: a swap moves a row out of, and another
into, one cell of every marginal, and few pool rows differ from a kept row only where the counts
need it. :func:`move_values` then changes one value of a row at a time (the marginals holding that
column change, no others), to the value that lowers the distance most, while the changed row keeps
positive probability under the model (every clique of it) and passes the caller's check (declared
rules): so, again, no cell the model gives no mass is filled. Both read only the model and its own
draws: no data, no privacy cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

#: Proposals per pass: this many (row, pool row) pairs are scored at once, the improving ones applied.
BATCH = 4096
#: Passes stop when a pass of proposals improves the distance by less than this share of it...
MIN_GAIN = 1e-5
#: ...or after this many passes in all. Both bounds are loose on purpose: the late passes still
#: raise the NIST excerpts' grouped k-marginal (0.3 at eps 1, 0.4-0.8 at eps 10, seeded), leave
#: Adult's unchanged, and cost ``ddssp synth`` at most twice its CPU on Adult (benchmarks page,
#: "Agencies, round 8").
MAX_PASSES = 400
#: Marginals with more cells than this many times the rows are left out (their expected counts are
#: well under one row a cell: matching them only moves rows between near-empty cells).
MAX_CELLS_PER_ROW = 4.0
#: No matching when rows x marginals exceeds this (the cell index of every row in every marginal is
#: held in memory: 8 bytes each, twice with the pool); large draws keep their rounded rows.
MAX_ENTRIES = 20_000_000
#: Sweeps of :func:`move_values` over the columns, at most (each stops early when no value moves)...
MOVE_SWEEPS = 20
#: ...and they stop once a sweep lowers the distance by less than this share of it. On the NIST TX
#: excerpt (eps 1, 9,276 rows, 172 marginals) six sweeps took the L1 distance from 55,400 after the
#: swaps to 33,100 (x16 rows drawn and scaled down: 9,700); the later sweeps move few rows and cost
#: little, and these bounds score 0.3 above six sweeps with a 3% stop (benchmarks page, "Agencies,
#: round 13").
MOVE_MIN_GAIN = 0.005
#: Rows x candidate values x marginals of one column scored at once by :func:`move_values`.
MOVE_CHUNK = 4_000_000


def _cell_index(codes: pd.DataFrame, clique: Sequence[str], domain: dict[str, int]) -> np.ndarray:
    return np.ravel_multi_index([codes[a].to_numpy(np.int64) for a in clique], [domain[a] for a in clique])


def _move_change(count: np.ndarray, target: np.ndarray, out: np.ndarray, into: np.ndarray) -> float:
    """The change of the L1 distance when one row leaves the cells ``out`` and enters ``into``
    (distinct cells within each)."""
    return float(
        (
            np.abs(count[out] - 1 - target[out])
            - np.abs(count[out] - target[out])
            + np.abs(count[into] + 1 - target[into])
            - np.abs(count[into] - target[into])
        ).sum()
    )


def match_workload(
    codes: pd.DataFrame,
    pool: pd.DataFrame,
    model,
    cliques: Sequence[Sequence[str]],
    rng: np.random.Generator,
    allowed: Callable[[pd.DataFrame], np.ndarray] | None = None,
) -> pd.DataFrame:
    """Rows of ``codes`` swapped with rows of ``pool`` while each swap lowers the L1 distance, summed
    over ``cliques``, between the rows' counts and ``len(codes)`` times the model's probabilities.

    Swaps are proposed in batches of random (row, pool row) pairs; a pair's change of the distance is
    computed exactly from the current counts right before it is applied, so the distance never
    rises. A swapped-out row goes into the pool.

    Parameters
    ----------
    codes : pandas.DataFrame
        The drawn rows (integer codes of the model's columns).
    pool : pandas.DataFrame
        More rows drawn from the same model (same columns).
    model : GraphicalModel
        The model both were drawn from.
    cliques : sequence of sequence of str
        The marginals to match (the release's workload); those with a column the model lacks or
        with more than :data:`MAX_CELLS_PER_ROW` cells a row are skipped, and nothing is matched
        when the rows of both draws times the marginals exceed :data:`MAX_ENTRIES`.
    rng : numpy.random.Generator
        Post-processing randomness.
    allowed : callable, optional
        ``allowed(rows) -> bool array``: which changed rows may be kept (the declared rules); the
        swaps' pool is expected to pass it already. With it or without, :func:`move_values` follows
        the swaps.

    Returns
    -------
    pandas.DataFrame
        ``len(codes)`` rows, columns and dtypes as ``codes``.
    """
    n = len(codes)
    domain = dict(model.domain)
    qs, seen = [], set()
    for c in cliques:
        c = tuple(c)
        size = int(np.prod([domain.get(a, 0) for a in c])) if c else 0
        if c and all(a in domain for a in c) and size <= MAX_CELLS_PER_ROW * n and frozenset(c) not in seen:
            seen.add(frozenset(c))
            qs.append(c)
    if not qs or n == 0 or len(pool) == 0 or (n + len(pool)) * len(qs) > MAX_ENTRIES:
        return codes
    probs = model.marginals(qs)
    offsets = np.cumsum([0] + [p.size for p in probs])
    target = np.concatenate([(p / max(float(p.sum()), 1e-300)).ravel() * n for p in probs])
    # cell of every row in every marginal, as indices into the flat concatenation
    rows = np.stack([_cell_index(codes, q, domain) + offsets[i] for i, q in enumerate(qs)], axis=1)
    spare = np.stack([_cell_index(pool, q, domain) + offsets[i] for i, q in enumerate(qs)], axis=1)
    count = np.bincount(rows.ravel(), minlength=offsets[-1]).astype(np.float64)
    keep = np.arange(n)  # which row of the union (codes, then pool) each kept row is
    spare_id = np.arange(n, n + len(pool))
    both = pd.concat([codes, pool], ignore_index=True)
    start = float(np.abs(count - target).sum())
    for _ in range(MAX_PASSES):
        before = float(np.abs(count - target).sum())
        i = rng.integers(0, n, BATCH)
        j = rng.integers(0, len(spare_id), BATCH)
        a, b = rows[i], spare[j]
        same = a == b
        gain = np.where(
            same,
            0.0,
            np.abs(count[a] - 1 - target[a])
            - np.abs(count[a] - target[a])
            + np.abs(count[b] + 1 - target[b])
            - np.abs(count[b] - target[b]),
        ).sum(axis=1)
        for k in np.flatnonzero(gain < 0):
            ik, jk = i[k], j[k]
            ak, bk = rows[ik], spare[jk]
            diff = ak != bk
            ak, bk = ak[diff], bk[diff]
            if _move_change(count, target, ak, bk) >= 0:
                continue
            count[ak] -= 1
            count[bk] += 1
            rows[ik], spare[jk] = spare[jk].copy(), rows[ik].copy()
            keep[ik], spare_id[jk] = spare_id[jk], keep[ik]
        after = float(np.abs(count - target).sum())
        if before - after < MIN_GAIN * start:
            break
    out = both.iloc[keep].reset_index(drop=True).astype(codes.dtypes.to_dict())
    return move_values(out, model, qs, target, rows, count, rng, allowed)


def move_values(
    codes: pd.DataFrame,
    model,
    qs: Sequence[tuple[str, ...]],
    target: np.ndarray,
    rows: np.ndarray,
    count: np.ndarray,
    rng: np.random.Generator,
    allowed: Callable[[pd.DataFrame], np.ndarray] | None = None,
) -> pd.DataFrame:
    """Values of single cells of ``codes`` changed while each change lowers the L1 distance between
    the rows' counts and ``target`` over the marginals ``qs`` (see the module docstring).

    Column by column (in random order, up to :data:`MOVE_SWEEPS` sweeps, stopping when a sweep gains
    less than :data:`MOVE_MIN_GAIN` of the distance), every row whose leaving lowers the distance
    has its best other value of the column scored on the current counts (scoring every row for every
    value costs about three times the CPU on Adult's 48,842 rows for 0.3 points of the NIST excerpt's
    grouped k-marginal, TX eps 1, one release); the improving rows whose changed row keeps positive
    probability under every clique of the model and passes ``allowed`` are then changed one by one,
    each checked again on the counts as they are then, so the distance never rises.

    Parameters
    ----------
    codes : pandas.DataFrame
        The rows (integer codes).
    model : GraphicalModel
        The model the rows were drawn from.
    qs : sequence of tuple of str
        The marginals.
    target : numpy.ndarray
        Their expected counts, the marginals' cells concatenated.
    rows : numpy.ndarray
        ``(len(codes), len(qs))``: each row's cell (an index into ``target``) in each marginal
        (updated in place).
    count : numpy.ndarray
        The rows' counts per cell (updated in place).
    rng : numpy.random.Generator
        The order of the columns.
    allowed : callable, optional
        ``allowed(rows) -> bool array``: which changed rows may be kept.

    Returns
    -------
    pandas.DataFrame
        The rows, columns and dtypes as ``codes``.
    """
    n = len(codes)
    domain = dict(model.domain)
    names = list(codes.columns)
    X = codes.to_numpy(np.int64).copy()
    where = {a: i for i, a in enumerate(names)}
    strides: dict[str, list[tuple[int, int]]] = {}
    for i, q in enumerate(qs):
        sizes = [domain[a] for a in q]
        for k, a in enumerate(q):
            strides.setdefault(a, []).append((i, int(np.prod(sizes[k + 1 :], dtype=np.int64))))
    beliefs = [([where[a] for a in c], b) for c, b in zip(model.cliques, model.beliefs) if all(a in where for a in c)]
    movable = [a for a in names if a in strides and domain[a] > 1]
    for _ in range(MOVE_SWEEPS):
        moved, gained, distance = 0, 0.0, float(np.abs(count - target).sum())
        for a in rng.permutation(movable).tolist():
            qi = np.array([i for i, _ in strides[a]])
            step = np.array([s for _, s in strides[a]], dtype=np.int64)
            size = domain[a]
            best = np.zeros(n, dtype=np.int64)
            gain = np.zeros(n)
            dev = count - target
            leave = (np.abs(dev - 1) - np.abs(dev))[rows[:, qi]].sum(axis=1)
            # only rows whose cells lose by their leaving are scored for every value (the counts of
            # the cells they would enter rarely outweigh the rest): a fraction of the rows
            scored = np.flatnonzero(leave < 0)
            chunk = max(1, MOVE_CHUNK // max(1, size * len(qi)))
            for lo in range(0, scored.size, chunk):
                part = scored[lo : lo + chunk]
                old = rows[part][:, qi]
                v = X[part, where[a]]
                new = old[:, :, None] + (np.arange(size)[None, None, :] - v[:, None, None]) * step[None, :, None]
                g = (np.abs(dev[new] + 1) - np.abs(dev[new])).sum(axis=1) + leave[part][:, None]
                g[np.arange(part.size), v] = 0.0
                g[(target[new] <= 0).any(axis=1)] = 0.0  # a cell the model gives no mass
                best[part] = g.argmin(axis=1)
                gain[part] = g[np.arange(part.size), best[part]]
            cand = np.flatnonzero(gain < -1e-9)
            if cand.size == 0:
                continue
            trial = X[cand].copy()
            trial[:, where[a]] = best[cand]
            ok = np.ones(cand.size, dtype=bool)
            for idx, b in beliefs:
                ok &= b[tuple(trial[:, idx].T)] > 0
            if allowed is not None and ok.any():
                ok[ok] = allowed(pd.DataFrame(trial[ok], columns=names))
            cand = cand[ok]
            for r in cand[np.argsort(gain[cand], kind="stable")].tolist():
                old = rows[r, qi]
                new = old + (best[r] - X[r, where[a]]) * step
                delta = _move_change(count, target, old, new)
                if delta >= 0:
                    continue
                count[old] -= 1
                count[new] += 1
                rows[r, qi] = new
                X[r, where[a]] = best[r]
                moved += 1
                gained -= float(delta)
        if moved == 0 or gained < MOVE_MIN_GAIN * distance:
            break
    return pd.DataFrame(X, columns=names, index=codes.index).astype(codes.dtypes.to_dict())


__all__ = ["match_workload", "move_values"]
