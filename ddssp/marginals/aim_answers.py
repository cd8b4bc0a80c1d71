"""The exact answers AIM measures: every candidate marginal counted once, before the rounds.

From a DataFrame of integer codes (checked against the domain, counted with numpy ``bincount``) or
from a counting function (:func:`ddssp.data.counting.count_marginals` bound to a table, one scan),
whose output is checked for shape, integer counts and equal totals. Nothing here is noisy:
:func:`ddssp.marginals.aim.run_aim` charges the ledger and adds the noise.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddssp.errors import DataError
from ddssp.types import Clique, Domain


def validate_codes(data: pd.DataFrame, domain: Domain) -> dict[str, np.ndarray]:
    """The domain's columns of a DataFrame of integer codes, checked and as int64 arrays.

    Parameters
    ----------
    data : pandas.DataFrame
        Integer codes (floats holding integers are accepted), one column per domain column at least.
    domain : dict
        ``{column: number of codes}``.

    Returns
    -------
    dict
        ``{column: int64 codes}``.

    Raises
    ------
    DataError
        For no rows, a missing column, missing values, non-integer codes or a code outside 0..n-1.
    """
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame of integer codes, got {type(data).__name__}")
    if len(data) == 0:
        raise DataError("the data has no rows")
    missing = [a for a in domain if a not in data.columns]
    if missing:
        raise DataError(f"the data has no column(s) {missing} named in the domain")
    codes = {}
    for a, n in domain.items():
        series = data[a]
        if series.isna().any():
            raise DataError(f"column {a!r} has missing values; AIM needs integer codes 0..{n - 1}")
        if pd.api.types.is_integer_dtype(series.dtype):
            col = series.to_numpy(dtype=np.int64)
        else:
            col = series.to_numpy()
        if not np.issubdtype(col.dtype, np.integer):
            if np.issubdtype(col.dtype, np.floating) and np.all(np.isfinite(col)) and np.all(col == np.round(col)):
                col = col.astype(np.int64)
            else:
                raise DataError(f"column {a!r} must hold integer codes 0..{n - 1} (dtype {col.dtype})")
        lo, hi = int(col.min()), int(col.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise DataError(f"column {a!r} has code {bad} outside its domain 0..{n - 1}")
        codes[a] = col.astype(np.int64)
    return codes


def exact_marginal(codes: dict[str, np.ndarray], domain: Domain, clique: Clique) -> np.ndarray:
    """The exact counts of a marginal of checked codes (:func:`validate_codes`).

    Parameters
    ----------
    codes : dict
        ``{column: int64 codes}``.
    domain : dict
        ``{column: number of codes}``.
    clique : tuple of str
        The marginal's columns, in the order of its axes.

    Returns
    -------
    numpy.ndarray
        Counts (float), shaped ``[domain[a] for a in clique]``.
    """
    shape = [domain[a] for a in clique]
    idx = np.ravel_multi_index([codes[a] for a in clique], shape)
    return np.bincount(idx, minlength=math.prod(shape)).astype(float).reshape(shape)


def answers_from_counter(counter, domain: Domain, needed: list[Clique]) -> dict[Clique, np.ndarray]:
    """Exact answers from a counting function, checked for shape, integer counts and equal totals.

    Parameters
    ----------
    counter : callable
        ``cliques -> {clique: exact int64 counts}`` (axes in the clique's order).
    domain : dict
        ``{column: number of codes}``.
    needed : list of tuple of str
        The cliques to count (one call).

    Returns
    -------
    dict
        ``{clique: counts (float)}``.

    Raises
    ------
    DataError
        When an answer is missing, misshaped or not counts, or the totals differ.
    """
    got = counter(list(needed))
    answers = {}
    for c in needed:
        a = got.get(c) if hasattr(got, "get") else None
        shape = tuple(domain[x] for x in c)
        if a is None or np.shape(a) != shape:
            raise DataError(f"the counting function gave no {shape} array for clique {list(c)}")
        a = np.asarray(a)
        if a.dtype.kind not in "iu" or (a < 0).any():
            raise DataError(f"the counting function gave non-count values for clique {list(c)}")
        answers[c] = a.astype(float)
    if answers and len({float(a.sum()) for a in answers.values()}) > 1:
        raise DataError("the counting function gave marginals with different totals")
    return answers
