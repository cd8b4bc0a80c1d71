"""Values drawn inside their bins for synthetic rows (:func:`ddssp.data.encoding.decode` with a
generator): each bin's within-bin distribution, independently per row or balanced over strata of
other columns' codes, kept inside the bin and rounded to what the bin's width can tell."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ddssp.data.columns import Column


def round_in_bin(x: np.ndarray, a: float, b: float) -> np.ndarray:
    """Drawn values of bin [a, b) rounded to three significant digits of its width (a draw carries
    no information finer than that), kept inside the bin.

    Parameters
    ----------
    x : numpy.ndarray
        Values inside the bin.
    a, b : float
        The bin's edges.

    Returns
    -------
    numpy.ndarray
    """
    width = b - a
    if not (math.isfinite(width) and width > 0):
        return x
    decimals = 2 - math.floor(math.log10(width))
    step = 10.0**-decimals
    y = np.round(x, decimals)
    y = np.where(y >= b, y - step, y)
    y = np.where(y < a, y + step, y)
    return np.where((y >= a) & (y <= b), y, x)


#: The additive recurrence k * (sqrt(5) - 1) / 2 mod 1 spreads any run of consecutive terms evenly
#: over [0, 1): the quantiles of a balanced within-bin draw (:func:`draw_within`).
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def strata_key(columns: Iterable[tuple[np.ndarray, int]], n: int) -> np.ndarray:
    """One int64 key per row from columns of codes ``(codes, size)``, the first most significant:
    columns of one level are skipped, and columns stop once their product would not fit an int64.

    Parameters
    ----------
    columns : iterable of (numpy.ndarray, int)
        Codes and their number of levels.
    n : int
        The number of rows.

    Returns
    -------
    numpy.ndarray
    """
    key = np.zeros(n, dtype=np.int64)
    room = 2**62
    for codes, size in columns:
        if size <= 1:
            continue
        if size > room:
            break
        key = key * size + codes
        room //= size
    return key


def strata_order(
    arrays: Mapping[str, np.ndarray],
    strata: Mapping[str, Sequence[str]] | None,
    name: str,
    n: int,
    rng: np.random.Generator,
) -> np.ndarray | None:
    """The row order of a balanced draw of column ``name``: by the codes of its ``strata`` columns
    (:func:`strata_key`), ties in random order.

    Parameters
    ----------
    arrays : mapping
        ``{column: codes}`` of the rows.
    strata : mapping, optional
        ``{column: columns}`` (:func:`ddssp.data.encoding.decode`).
    name : str
        The column drawn.
    n : int
        The number of rows.
    rng : numpy.random.Generator
        Post-processing randomness.

    Returns
    -------
    numpy.ndarray or None
        A permutation of the rows; None when ``strata`` does not name the column (independent draws).
    """
    if strata is None or name not in strata:
        return None
    codes = [np.asarray(arrays[o], dtype=np.int64) for o in strata[name] if o != name and o in arrays]
    key = strata_key(((c, int(c.max()) + 1 if n else 1) for c in codes), n)
    return np.lexsort((rng.random(n), key))


def draw_within(
    col: Column, codes: np.ndarray, rng: np.random.Generator, order: np.ndarray | None = None
) -> np.ndarray:
    """Values for the codes of a binned column with a within-bin distribution: for each bin, a
    sub-cell by weight, then a value uniform inside it (a whole number ``lo <= v < hi`` when the
    distribution says whole). Bins without an entry and the missing level keep their
    representative value (NaN). Every value stays inside its bin, so inside the column's range.

    Without ``order`` each row's quantile in its bin is drawn independently. With ``order`` (a
    permutation of the rows, :func:`strata_order`) a bin's rows, taken in that order, get the
    quantiles ``u + k * _GOLDEN mod 1`` (one uniform ``u`` per bin): each row's quantile is still
    uniform, but any run of rows in the order, hence any stratum, gets quantiles spread evenly over
    the bin instead of a random share (the counts of a finer grid inside the bin then follow the
    distribution within a few rows per stratum, as the sampler's controlled rounding does for the
    codes).

    Parameters
    ----------
    col : Column
        A binned numeric column with a within-bin distribution.
    codes : numpy.ndarray
        The rows' codes of the column.
    rng : numpy.random.Generator
        Post-processing randomness.
    order : numpy.ndarray, optional
        The balanced draw's row order.

    Returns
    -------
    numpy.ndarray
        One value per row.
    """
    v = col.values[codes].astype(float)
    edges = col.edges
    m = len(edges) - 1
    balanced = order is not None
    if order is None:
        order = np.argsort(codes, kind="stable")  # rows grouped by code: one pass, whatever the number of bins
    else:
        order = order[np.argsort(codes[order], kind="stable")]  # grouped by code, in ``order`` inside each
    present, starts, counts = np.unique(codes[order], return_index=True, return_counts=True)
    for i, start, count in zip(present.tolist(), starts.tolist(), counts.tolist()):
        if i >= m:  # the missing level
            continue
        rows = order[start : start + count]
        sub = col.within.sub_edges(i, edges[i], edges[i + 1])
        if sub is None:
            continue
        w = np.asarray(col.within.bins[i][1], dtype=float)
        w = w / w.sum()
        if balanced:
            q = np.mod(rng.random() + np.arange(rows.size) * _GOLDEN, 1.0)
        else:
            q = rng.random(rows.size)
        cum = np.concatenate([[0.0], np.cumsum(w)])
        cum[-1] = 1.0
        cell = np.minimum(np.searchsorted(cum, q, side="right") - 1, len(w) - 1)  # inverse CDF over sub-cells
        r = np.clip((q - cum[cell]) / np.maximum(w[cell], 1e-300), 0.0, np.nextafter(1.0, 0.0))
        lo, hi = sub[cell], sub[cell + 1]
        if col.within.whole:
            first = np.ceil(lo)
            k = np.ceil(hi) - first  # the whole numbers first, ..., first + k - 1 lie in [lo, hi)
            x = first + np.floor(r * k)
            x = np.minimum(x, first + k - 1)
        else:
            x = np.clip(lo * (1 - r) + hi * r, lo, hi)  # no overflow for bins as wide as the floats
            x = round_in_bin(x, float(edges[i]), float(edges[i + 1]))
            if i < m - 1:  # bins are half-open (the last is closed): stay below the next bin
                x = np.minimum(x, np.nextafter(edges[i + 1], -np.inf))
        v[rows] = x
    return v
