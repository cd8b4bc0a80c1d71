"""Encodings A_j and the sufficient statistics Z^T Z of a regression, from marginals alone.

DD-SSP (Ferrando et al., paper sections 3.1-3.2; docs/method/ddssp.md).

Every attribute j with m_j levels is encoded by a fixed matrix A_j (p_j x m_j) applied to its one-hot
vector: a record's encoded features are z_[j] = A_j[:, code_j].

- categorical, reduced one-hot (drop the first level): A_j = [0 | I_{m_j - 1}], names "col=label";
- numeric (or ordinal) scalar: A_j = v_j^T with the level values rescaled linearly to [-1, 1]
  (smallest level value -> -1, largest -> +1). Level values come from the schema (public), never
  from the data;
- intercept: a constant 1 (name "intercept");
- target: a numeric target is rescaled to [-1, 1] like a numeric feature; a binary target of a
  logistic model is coded -1 (first level) / +1 (second level).

Then block (j, k) of Z^T Z, Z = [X, y], is A_j <mu_jk> A_k^T with <mu_jk> the (j, k) two-way marginal
as an m_j x m_k count matrix, <mu_jj> = diag(mu_j) (one-way marginal), and the intercept blocks are the
total and A_j mu_j. With exact marginals this is exactly Z^T Z of the encoded rows.

The encodings themselves (:class:`~ddssp.estimators.design.Encoding`) live in
:mod:`ddssp.estimators.design`; this module turns a source of marginals into Z^T Z.

A *marginal source* is any object with ``.schema``, ``.total`` and ``.marginal(cols) -> counts``:
a :class:`ddssp.Release` (noisy, private) or :class:`ExactMarginals` (exact counts of a table of
integer codes: the non-private reference and the test oracle).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import DDSSPError, SchemaError
from ddssp.estimators.design import INTERCEPT, Encoding, check_codes
from ddssp.types import Domain


class ExactMarginals:
    """Exact marginal counts of a table of integer codes (not private: the reference and test oracle).

    A marginal source like a release: ``.marginal(cols)`` returns the count array of shape (sizes
    of cols), ``.total`` the row count, ``.schema`` the schema.

    Parameters
    ----------
    codes : pandas.DataFrame
        One integer column per schema column (extra columns are ignored).
    schema : Schema
        The schema the codes belong to.
    """

    def __init__(self, codes: pd.DataFrame, schema: Any):
        self.schema = schema
        self.domain = dict(schema.domain)
        self._codes = check_codes(codes, self.domain, list(self.domain))
        self.total = float(len(self._codes))

    def marginal(self, cols: str | Sequence[str]) -> np.ndarray:
        """Exact counts over some columns.

        Parameters
        ----------
        cols : str or sequence of str
            The columns, in the order of the result's axes.

        Returns
        -------
        numpy.ndarray
            Float counts of shape (sizes of ``cols``).

        Raises
        ------
        SchemaError
            For unknown or repeated columns.
        """
        cols = (cols,) if isinstance(cols, str) else tuple(cols)
        unknown = [c for c in cols if c not in self.domain]
        if unknown:
            raise SchemaError(f"unknown column(s) {unknown}; the schema has {list(self.domain)}")
        if len(set(cols)) != len(cols):
            raise SchemaError(f"repeated column in marginal query {cols}")
        shape = tuple(self.domain[c] for c in cols)
        if not cols:
            return np.array(self.total)
        idx = np.ravel_multi_index(tuple(self._codes[c].to_numpy() for c in cols), shape)
        return np.bincount(idx, minlength=math.prod(shape)).astype(float).reshape(shape)


# -------------------------------------------------------------------------------------- Z^T Z
@dataclass
class SuffStats:
    """Z^T Z for Z = [X, y], with named rows and columns.

    Attributes
    ----------
    matrix : numpy.ndarray
        Z^T Z, shape (p + 1, p + 1).
    names : list of str
        X's names, then the target.
    target : str
        The target column.
    n : float
        The total (number of rows, noisy for a release).
    """

    matrix: np.ndarray
    names: list[str]
    target: str
    n: float

    @property
    def p(self) -> int:
        """The number of features p."""
        return len(self.names) - 1

    @property
    def xtx(self) -> np.ndarray:
        """X^T X, shape (p, p)."""
        return self.matrix[: self.p, : self.p]

    @property
    def xty(self) -> np.ndarray:
        """X^T y, shape (p,)."""
        return self.matrix[: self.p, self.p]

    @property
    def yty(self) -> float:
        """y^T y."""
        return float(self.matrix[self.p, self.p])

    @property
    def feature_names(self) -> list[str]:
        """X's names."""
        return self.names[: self.p]

    def frame(self) -> pd.DataFrame:
        """Z^T Z as a DataFrame labelled by ``names``.

        Returns
        -------
        pandas.DataFrame
        """
        return pd.DataFrame(self.matrix, index=self.names, columns=self.names)


def _marginal(source: Any, cols: Sequence[str], domain: Domain) -> np.ndarray:
    shape = tuple(int(domain[c]) for c in cols)
    arr = np.asarray(source.marginal(list(cols)), dtype=float)
    if arr.size != math.prod(shape):
        raise DDSSPError(f"marginal {tuple(cols)} has {arr.size} cells, expected shape {shape}")
    arr = arr.reshape(shape)
    if not np.all(np.isfinite(arr)):
        raise DDSSPError(f"marginal {tuple(cols)} has NaN or infinite counts")
    return arr


def sufficient_statistics(source: Any, encoding: Encoding) -> SuffStats:
    """Z^T Z from a marginal source: every one-way marginal and every pair marginal queried once.

    Each block is A_j <mu_jk> A_k^T, with A_j the encoding matrix of column j and mu_jk the
    source's marginal of (j, k).

    Parameters
    ----------
    source : Release or ExactMarginals
        Anything with ``schema``, ``total`` and ``marginal(cols)``.
    encoding : Encoding
        How features and target are encoded (built from the same schema).

    Returns
    -------
    SuffStats
        Z^T Z with Z = [X, y]: X^T X, X^T y, y^T y and the total.

    Raises
    ------
    SchemaError
        When the encoding was built for another schema.
    """
    check_source(source)
    dom = dict(source.schema.domain)
    if dom != encoding.domain:
        raise SchemaError("the encoding was built for a different schema than the marginal source's")
    attrs = [a for a in encoding.attributes if a.width] + [encoding.target_encoding]
    cols = [a.column for a in attrs]
    total = float(source.total)
    one = {c: _marginal(source, [c], dom) for c in cols}

    offsets, start = [], 1 if encoding.intercept else 0
    for a in attrs:
        offsets.append(start)
        start += a.width
    dim = start
    Z = np.zeros((dim, dim))
    if encoding.intercept:
        Z[0, 0] = total
        for a, o in zip(attrs, offsets):
            v = a.matrix @ one[a.column]
            Z[0, o : o + a.width] = v
            Z[o : o + a.width, 0] = v
    for i, (a, o) in enumerate(zip(attrs, offsets)):
        Z[o : o + a.width, o : o + a.width] = (a.matrix * one[a.column]) @ a.matrix.T
        for b, q in zip(attrs[i + 1 :], offsets[i + 1 :]):
            block = a.matrix @ _marginal(source, [a.column, b.column], dom) @ b.matrix.T
            Z[o : o + a.width, q : q + b.width] = block
            Z[q : q + b.width, o : o + a.width] = block.T
    names = ([INTERCEPT] if encoding.intercept else []) + [n for a in attrs[:-1] for n in a.names]
    assert names == encoding.names
    return SuffStats(matrix=Z, names=names + [encoding.target], target=encoding.target, n=total)


def suffstats_from_codes(codes: pd.DataFrame, encoding: Encoding) -> SuffStats:
    """Z^T Z computed row by row from integer codes (reference for tests; not private).

    Parameters
    ----------
    codes : pandas.DataFrame
        Integer codes of the features and target.
    encoding : Encoding
        The encoding.

    Returns
    -------
    SuffStats
    """
    X = encoding.transform(codes)
    Z = np.column_stack([X, encoding.target_vector(codes)])
    return SuffStats(
        matrix=Z.T @ Z, names=encoding.names + [encoding.target], target=encoding.target, n=float(len(codes))
    )


class ObservedTarget:
    """A marginal source restricted to the rows whose target is observed.

    Every marginal is the source's marginal of those rows: a query over ``cols`` with the target is
    the source's with the unobserved target levels set to 0; without the target it is the source's
    marginal over ``cols + (target,)`` summed over the observed levels (a three-way query for a
    feature pair, which the release's graphical model answers). With exact marginals this is the
    complete-case analysis exactly.

    Parameters
    ----------
    source : marginal source
        A release or :class:`ExactMarginals`.
    target : str
        The target column.
    unobserved : sequence of int
        The target's codes that mean "not observed".
    """

    def __init__(self, source: Any, target: str, unobserved: Sequence[int]):
        self.source, self.target, self.unobserved = source, target, list(unobserved)
        self.schema = source.schema
        keep = np.ones(int(source.schema.domain[target]), dtype=bool)
        keep[self.unobserved] = False
        self._keep = keep
        one = np.asarray(source.marginal([target]), dtype=float)
        self.total = float(one[keep].sum())

    def marginal(self, cols: Sequence[str]) -> np.ndarray:
        """The source's marginal over the rows with an observed target.

        Parameters
        ----------
        cols : sequence of str
            The columns, in the order of the result's axes.

        Returns
        -------
        numpy.ndarray
        """
        cols = list(cols)
        if self.target in cols:
            arr = np.array(self.source.marginal(cols), dtype=float)
            idx = [slice(None)] * len(cols)
            idx[cols.index(self.target)] = ~self._keep
            arr[tuple(idx)] = 0.0
            return arr
        arr = np.asarray(self.source.marginal([*cols, self.target]), dtype=float)
        return np.tensordot(arr, self._keep.astype(float), axes=([arr.ndim - 1], [0]))

    def __getattr__(self, name: str) -> Any:  # measurements, eps, ledger, ... of the source
        if name == "source":
            raise AttributeError(name)
        return getattr(self.source, name)


def observed_target(source: Any, encoding: Encoding) -> Any:
    """A source restricted to rows with an observed target (:class:`ObservedTarget`), when needed.

    Parameters
    ----------
    source : marginal source
        A release or :class:`ExactMarginals`.
    encoding : Encoding
        Says which target codes are unobserved.

    Returns
    -------
    marginal source
        ``source`` itself when the target has no unobserved level with mass in it.
    """
    codes = encoding.unobserved_target_codes
    if not codes:
        return source
    one = np.asarray(source.marginal([encoding.target]), dtype=float)
    if not np.any(one[codes] > 0):
        return source
    return ObservedTarget(source, encoding.target, codes)


def check_source(source: Any) -> None:
    """Refuse an object that is not a marginal source (needs .schema, .total, .marginal).

    Parameters
    ----------
    source : any
        The object.

    Raises
    ------
    DDSSPError
        When an attribute is missing.
    """
    missing = [a for a in ("schema", "total", "marginal") if not hasattr(source, a)]
    if missing:
        raise DDSSPError(
            f"{type(source).__name__} is not a marginal source (missing {missing}); pass a Release "
            "(ddssp.Release.load(path)) or ExactMarginals(codes, schema)"
        )
