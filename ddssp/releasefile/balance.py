"""Synthetic values balanced across the workload's strata inside their bins (post-processing).

A binned numeric column's synthetic values are drawn inside their bins (balanced over the first
columns the workload pairs the column with, :func:`ddssp.data.encoding.decode`). That balance holds
for the leading sort keys only: the rows of a bin that share the code of a later column (AGEP's
bin and an industry, within one PUMA) get a random share of the bin's values. A scorer that bins the
values more finely than the release (SDNist's k-marginal cuts at the data's percentiles) sees that
share's sampling error in every pair.

:func:`balance_values` exchanges values between rows of the same bin while the exchange brings
closer, for every marginal of the workload that holds the column, how each stratum's rows (their
codes of the marginal's other columns) spread over the parts of the bin (cut at the bin's values'
octiles): toward the bin's own spread. An exchange changes no code and no bin's set of values, so
every count the release answers, every rule and the column's distribution inside each bin stay as
drawn. It reads only the synthetic rows: no data, no privacy cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.drawing import strata_key

#: Parts of a bin the spread is balanced over (cut at the bin's values' quantiles j / PARTS).
PARTS = 8
#: Proposed exchanges per pass (random pairs of rows of one bin), the improving ones applied...
BATCH = 4096
#: ...until a pass improves the distance by less than this share of its start, or after this many.
MIN_GAIN = 1e-4
MAX_PASSES = 200
#: A column is left as drawn when its rows x strata sets exceed this (each row's cell in every set
#: is held in memory, 8 bytes each) or its cells (strata x bins x parts) do.
MAX_ENTRIES = 20_000_000


def strata_sets(workload: Sequence[tuple[Sequence[str], float]], name: str, columns: Sequence[str]) -> list[tuple]:
    """The column sets whose codes define a stratum of column ``name``: for each workload marginal
    holding it, the marginal's other columns (once each, those in ``columns`` only).

    Parameters
    ----------
    workload : sequence of (tuple of str, float)
        The release's workload.
    name : str
        The column.
    columns : sequence of str
        The columns the rows have.

    Returns
    -------
    list of tuple of str
    """
    have = set(columns)
    sets = (tuple(a for a in clique if a != name) for clique, _ in workload if name in clique)
    return [s for s in dict.fromkeys(sets) if s and all(a in have for a in s)]


def balance_values(
    frame: pd.DataFrame, codes: pd.DataFrame, schema: Any, workload: Sequence, rng: np.random.Generator
) -> pd.DataFrame:
    """``frame`` with the values of its binned numeric columns exchanged between rows of the same
    bin toward an even spread in every stratum (see the module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        Decoded synthetic rows.
    codes : pandas.DataFrame
        Their integer codes (same rows).
    schema : ddssp.data.Schema
        The release's schema.
    workload : sequence of (tuple of str, float)
        The release's workload.
    rng : numpy.random.Generator
        Post-processing randomness.

    Returns
    -------
    pandas.DataFrame
        ``frame``, changed in place where a column is balanced.
    """
    for col in schema.columns:
        name = col.name
        if col.within is None or name not in frame.columns or frame[name].dtype.kind not in "iuf":
            continue
        sets = strata_sets(workload, name, list(codes.columns))
        if not sets or len(frame) < 2 or len(frame) * len(sets) > MAX_ENTRIES:
            continue
        keys = []
        for s in sets:
            cols = [codes[a].to_numpy(np.int64) for a in s]
            key = strata_key(((c, int(c.max()) + 1) for c in cols), len(codes))
            keys.append(np.unique(key, return_inverse=True)[1].astype(np.int64))
        v = frame[name].to_numpy()
        frame[name] = _balanced(v, codes[name].to_numpy(np.int64), keys, rng)
    return frame


def _parts(v: np.ndarray, bins: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Each value's part of its bin: cut at the bin's values' quantiles j / PARTS (equal values
    always share a part). ``order``: the rows with a value, grouped by bin."""
    part = np.zeros(v.size, dtype=np.int64)
    cuts_at = np.flatnonzero(np.diff(bins[order])) + 1
    for idx in np.split(order, cuts_at):
        cuts = np.unique(np.quantile(v[idx], np.arange(1, PARTS) / PARTS, method="lower"))
        part[idx] = np.searchsorted(cuts, v[idx], side="right")
    return part


def _balanced(v: np.ndarray, bins: np.ndarray, keys: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Values exchanged between rows of one bin while the L1 distance between each (stratum, bin,
    part) count and its stratum's rows times the bin's share of the part falls."""
    v = v.copy()
    ok = np.isfinite(v.astype(float))
    if ok.sum() < 2:
        return v
    rows = np.flatnonzero(ok)
    order = rows[np.argsort(bins[rows], kind="stable")]  # the rows with a value, grouped by bin
    part = _parts(v.astype(float), bins, order)
    nb = int(bins[ok].max()) + 1
    sizes = [(int(k.max()) + 1) * nb * PARTS for k in keys]
    if sum(sizes) > MAX_ENTRIES:
        return v
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    base = (np.stack(keys, axis=1) * nb + bins[:, None]) * PARTS + offsets[None, :]  # the cell at part 0
    total = int(sum(sizes))
    count = np.bincount((base + part[:, None])[ok].ravel(), minlength=total).astype(np.float64)
    stratum = np.bincount(base[ok].ravel(), minlength=total).astype(np.float64)
    share = np.zeros((nb, PARTS))
    np.add.at(share, (bins[ok], part[ok]), 1.0)
    share /= np.maximum(share.sum(axis=1, keepdims=True), 1.0)
    at = np.flatnonzero(stratum)
    target = np.zeros(total)
    for p in range(PARTS):
        target[at + p] = stratum[at] * share[(at // PARTS) % nb, p]
    lo = np.searchsorted(bins[order], bins[order], side="left")
    width = np.searchsorted(bins[order], bins[order], side="right") - lo

    def change(c: np.ndarray, d: float) -> np.ndarray:
        return np.abs(count[c] + d - target[c]) - np.abs(count[c] - target[c])

    start = float(np.abs(count - target).sum())
    for _ in range(MAX_PASSES):
        before = float(np.abs(count - target).sum())
        j = rng.integers(0, order.size, BATCH)
        r1, r2 = order[j], order[lo[j] + (rng.random(BATCH) * width[j]).astype(np.int64)]
        p1, p2 = part[r1], part[r2]
        b1, b2 = base[r1], base[r2]
        gain = (
            change(b1 + p1[:, None], -1)
            + change(b1 + p2[:, None], 1)
            + change(b2 + p2[:, None], -1)
            + change(b2 + p1[:, None], 1)
        )
        gain = np.where(b1 == b2, 0.0, gain).sum(axis=1)
        for k in np.flatnonzero((gain < 0) & (p1 != p2)).tolist():
            x, y = r1[k], r2[k]
            px, py = part[x], part[y]
            if px == py:
                continue
            m = base[x] != base[y]
            cells = np.concatenate([base[x][m] + px, base[x][m] + py, base[y][m] + py, base[y][m] + px])
            step = np.repeat([-1.0, 1.0, -1.0, 1.0], int(m.sum()))
            old = float(np.abs(count[cells] - target[cells]).sum())
            np.add.at(count, cells, step)
            if float(np.abs(count[cells] - target[cells]).sum()) >= old:  # the exact change, on the counts now
                np.add.at(count, cells, -step)
                continue
            part[x], part[y] = py, px
            v[x], v[y] = v[y], v[x]
        if before - float(np.abs(count - target).sum()) < MIN_GAIN * start:
            break
    return v


__all__ = ["balance_values", "strata_sets"]
