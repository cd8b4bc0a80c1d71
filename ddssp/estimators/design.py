"""How a table's columns become the regression's design: per column, one-hot indicators or numeric
values with their scale (:class:`AttributeEncoding`), and the whole design (:class:`Encoding`) that
turns marginals into X^T X and X^T y blocks.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.columns import INFER_MISSING_LABEL
from ddssp.errors import DataError, DDSSPError, SchemaError
from ddssp.estimators.params import InvalidParameterError
from ddssp.types import Domain

INTERCEPT = "intercept"
_ENCODINGS = ("onehot", "numeric")
_KINDS = ("linear", "logistic")


# ---------------------------------------------------------------------------------------------- codes
def check_codes(codes: pd.DataFrame, domain: Domain, columns: Sequence[str]) -> pd.DataFrame:
    """Selected columns of a table as int64 codes, after checking every value is a code in 0..size-1.

    Parameters
    ----------
    codes : pandas.DataFrame
        A table of integer codes.
    domain : dict
        ``{column: size}``.
    columns : sequence of str
        The columns to check and return.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    DataError
        For a missing column, missing values, values that are not integers, or codes out of range.
    """
    if not isinstance(codes, pd.DataFrame):
        raise DataError(f"expected a pandas DataFrame of integer codes, got {type(codes).__name__}")
    missing = [c for c in columns if c not in codes.columns]
    if missing:
        raise DataError(f"columns {missing} are missing from the table (it has {list(codes.columns)})")
    out = {}
    for c in columns:
        col = codes[c]
        if col.isna().any():
            raise DataError(f"column {c!r} has missing values; expected integer codes")
        vals = col.to_numpy()
        if not np.issubdtype(vals.dtype, np.integer):
            as_float = np.asarray(vals, dtype=float) if np.issubdtype(vals.dtype, np.number) else None
            if as_float is None or not np.all(as_float == np.round(as_float)):
                raise DataError(
                    f"column {c!r} is not integer-coded (dtype {col.dtype}); encode it with the schema first"
                )
        vals = np.asarray(vals, dtype=np.int64)
        size = int(domain[c])
        if len(vals) and (vals.min() < 0 or vals.max() >= size):
            raise DataError(f"column {c!r} has codes outside 0..{size - 1}")
        out[c] = vals
    return pd.DataFrame(out, index=codes.index)


# ------------------------------------------------------------------------------------------- encoding
@dataclass(frozen=True)
class AttributeEncoding:
    """One attribute's encoding.

    Attributes
    ----------
    column : str
        The attribute.
    how : str
        ``"onehot"``, ``"numeric"``, ``"intercept"`` or ``"target"``.
    matrix : numpy.ndarray
        A_j (p_j x m_j): maps the attribute's one-hot vector to its encoded features.
    names : list of str
        The encoded features' names.
    """

    column: str
    how: str  # "onehot" | "numeric" | "intercept" | "target"
    matrix: np.ndarray
    names: list[str] = field(default_factory=list)

    @property
    def width(self) -> int:
        """p_j, the number of encoded features."""
        return self.matrix.shape[0]


def level_values(column: Any) -> np.ndarray:
    """Public level values of a column: its numeric representatives, else the codes 0..m-1.

    Parameters
    ----------
    column : schema column
        A column of the source's (public) schema.

    Returns
    -------
    numpy.ndarray
        One value per level; a declared missing level has value NaN.

    Raises
    ------
    SchemaError
        When the column's values are not one finite number per level.
    """
    vals = getattr(column, "values", None)
    if vals is None:
        return np.arange(column.size, dtype=float)
    vals = np.asarray(vals, dtype=float).reshape(-1)
    if vals.shape[0] != column.size or np.any(np.isinf(vals)) or np.all(np.isnan(vals)):
        raise SchemaError(f"column {column.name!r}: its level values are not {column.size} finite numbers")
    return vals


def _unit_scale(values: np.ndarray, name: str = "", warn: bool = True) -> np.ndarray:
    """Rescale linearly so min -> -1 and max -> +1 (a single distinct value maps to 0).

    A missing level (value NaN) is encoded 0, the centre of the range, with a warning unless ``warn``
    is False."""
    finite = values[np.isfinite(values)]
    lo, hi = float(finite.min()), float(finite.max())
    out = np.zeros_like(values) if hi == lo else 2.0 * (values - lo) / (hi - lo) - 1.0
    if np.any(np.isnan(values)) and not warn:
        out = np.where(np.isnan(values), 0.0, out)
    elif np.any(np.isnan(values)):
        warnings.warn(
            f"numeric feature {name!r} has a level without a numeric value (missing, or '<other>' for the "
            "values discovery did not resolve); its rows are encoded as 0 (the centre of [-1, 1]). Encode "
            f"the column one-hot to give that level its own coefficient (--categorical {name}; "
            f"encoding={{{name!r}: 'onehot'}} in Python)",
            stacklevel=4,
        )
        out = np.where(np.isnan(values), 0.0, out)
    return out


def _labels(column: Any) -> list[str]:
    return [str(x) for x in getattr(column, "labels", None) or range(int(column.size))]


def class_levels(column: Any) -> list[int]:
    """The codes of a logistic target's levels that are a class.

    Not a class: the column's ``'<other>'`` level (labels that were not released) and its empty-cell
    level; those are coded 0, the middle of -1/+1, so they pull towards neither class (and are left
    out of a fit by default). An empty-cell level that is a real label (e.g. a discovered column's
    median bin) stays a class.

    Parameters
    ----------
    column : schema column
        The target's column.

    Returns
    -------
    list of int
    """
    na_own = column.na is not None and column.na == INFER_MISSING_LABEL
    extra = {i for i in (column.missing_code, column.na_code if na_own else None) if i is not None}
    return [i for i in range(int(column.size)) if i not in extra]


def positive_code(column: Any, positive: str | int) -> int:
    """The code of the level a logistic model takes as its positive class.

    Parameters
    ----------
    column : schema column
        The target's column.
    positive : str or int or float
        A label of one of the column's class levels (compared as text), or a number equal to the
        level value of a numeric column (``2`` finds a level labelled ``'2.0'``).

    Returns
    -------
    int

    Raises
    ------
    InvalidParameterError
        When no class level matches, or the target has fewer than two class levels; the message
        lists the levels.
    """
    real = class_levels(column)
    labels = _labels(column)
    shown = ", ".join(repr(labels[i]) for i in real)
    name = getattr(column, "name", "the target")
    if len(real) < 2:
        raise InvalidParameterError(
            "positive", f"positive: {name!r} has {len(real)} class level(s) ({shown}); there is nothing to classify"
        )
    found = [i for i in real if labels[i] == str(positive).strip()]
    vals = getattr(column, "values", None)
    if not found and vals is not None:
        try:
            x = float(positive)
        except (TypeError, ValueError):
            x = math.nan
        found = [i for i in real if np.isfinite(vals[i]) and float(vals[i]) == x]
    if len(found) != 1:
        raise InvalidParameterError(
            "positive", f"positive level {positive!r} is not a level of {name!r}; its levels are {shown}"
        )
    return found[0]


def _column_name(column: Any, default: str) -> str:
    return str(getattr(column, "name", default))


class Encoding:
    """The numeric encoding of features and target, fixed from public schema data only.

    ``names`` are the columns of X (``"intercept"`` first, then e.g. ``"workclass=Private"``,
    ``"age"``); ``transform(codes)`` gives X, ``target_vector(codes)`` gives y, ``matrices`` the A_j.

    Parameters
    ----------
    schema : Schema
        The public schema.
    features : sequence of str or None
        The feature columns; every column but the target by default.
    target : str
        The target column.
    kind : str
        ``"linear"`` or ``"logistic"``.
    overrides : mapping, optional
        ``{column: "onehot" | "numeric"}``; features default to the schema's kinds (categorical ->
        reduced one-hot, numeric -> scalar in [-1, 1]).
    intercept : bool
        Include an intercept column.
    positive : str or int or None
        Logistic only: the target level coded +1 (the positive class), every other class level
        coded -1 (one vs the rest; with two class levels, which one is positive). A label of the
        target, or a number equal to a numeric target's level value. None: the target must have
        two class levels, the second is positive.

    Raises
    ------
    DDSSPError
        For an unknown kind.
    InvalidParameterError
        For a ``positive`` that is not a class level of the target (the message lists them).
    SchemaError
        For unknown columns, or an override that is unknown or names neither a feature nor the target.
    """

    def __init__(
        self,
        schema: Any,
        features: Sequence[str] | None,
        target: str,
        kind: str = "linear",
        overrides: Mapping[str, str] | None = None,
        intercept: bool = True,
        positive: str | int | None = None,
    ):
        if kind not in _KINDS:
            raise DDSSPError(f"unknown model kind {kind!r}; use 'linear' or 'logistic'")
        self.schema = schema
        self.kind = kind
        self.domain = dict(schema.domain)
        names = list(self.domain)
        if not isinstance(target, str) or target not in self.domain:
            raise SchemaError(f"unknown target column {target!r}; the columns are {names}")
        if features is None:
            features = [c for c in names if c != target]
        elif isinstance(features, str):
            features = [features]
        features = list(features)
        unknown = [c for c in features if c not in self.domain]
        if unknown:
            raise SchemaError(f"unknown feature column(s) {unknown}; the columns are {names}")
        if target in features:
            raise SchemaError(f"the target {target!r} cannot also be a feature")
        if len(set(features)) != len(features):
            raise SchemaError(f"repeated feature column(s) in {features}")
        overrides = dict(overrides or {})
        for c, how in overrides.items():
            if c not in self.domain:
                raise SchemaError(f"encoding override for unknown column {c!r}; the columns are {names}")
            if how not in _ENCODINGS:
                raise SchemaError(f"encoding override {c}={how!r}: use 'onehot' or 'numeric'")
            if c not in features and c != target:
                raise SchemaError(f"encoding override for {c!r}, which is neither a feature nor the target")
        self.features = features
        self.target = target
        self.overrides = overrides
        self.intercept = bool(intercept)
        self.positive: int | None = None
        if positive is not None:
            if kind != "logistic":
                raise InvalidParameterError("positive", "positive applies to a logistic model only")
            self.positive = positive_code(schema.column(target), positive)

        self.attributes: list[AttributeEncoding] = []
        for c in features:
            self.attributes.append(self._feature(c, overrides.get(c)))
        self.target_encoding = self._target(target, overrides.get(target))
        self.names: list[str] = ([INTERCEPT] if self.intercept else []) + [n for a in self.attributes for n in a.names]
        if len(set(self.names)) != len(self.names):
            dup = sorted({n for n in self.names if self.names.count(n) > 1})
            raise SchemaError(f"encoded feature names collide: {dup}; rename the columns or labels")

    # ------------------------------------------------------------------ construction
    def _default_how(self, c: str) -> str:
        return "onehot" if self.schema.column(c).kind == "categorical" else "numeric"

    def _feature(self, c: str, how: str | None) -> AttributeEncoding:
        col = self.schema.column(c)
        how = how or self._default_how(c)
        m = int(col.size)
        if how == "onehot":
            labels = [str(x) for x in getattr(col, "labels", None) or range(m)]
            A = np.hstack([np.zeros((m - 1, 1)), np.eye(m - 1)]) if m > 1 else np.zeros((0, 1))
            return AttributeEncoding(c, "onehot", A, [f"{c}={lab}" for lab in labels[1:]])
        if m < 2:
            warnings.warn(
                f"numeric feature {c!r} has a single level; it carries no information and is dropped", stacklevel=3
            )
            return AttributeEncoding(c, "numeric", np.zeros((0, m)), [])
        return AttributeEncoding(c, "numeric", _unit_scale(level_values(col), c)[None, :], [c])

    def _target(self, c: str, how: str | None) -> AttributeEncoding:
        col = self.schema.column(c)
        m = int(col.size)
        if self.kind == "logistic":
            real = class_levels(col)
            if self.positive is not None:
                # one vs the rest: +1 for the positive level, -1 for every other class level; each
                # block of Z^T Z is then the target's blocks summed over the rest's levels
                row = np.zeros((1, m))
                row[0, real] = -1.0
                row[0, self.positive] = 1.0
                return AttributeEncoding(c, "target", row, [c])
            if len(real) != 2:
                labels = [str(x) for x in getattr(col, "labels", None) or range(m)]
                shown = ", ".join(repr(labels[i]) for i in real[:4]) + (", ..." if len(real) > 4 else "")
                if col.kind == "numeric":
                    # a 0/1 column discovered as a number can get an empty level or bin from noise
                    how = (
                        f"use --model linear; a data holder who means it as two classes declares it with "
                        f"--categorical {c} (categorical=[{c!r}] in ddssp.release) when releasing, so that "
                        f"its labels are released as they are"
                    )
                else:
                    how = "recode it to two levels, or use another target"
                if len(real) > 2:
                    how += (
                        "; or fit one level against the rest with --positive LEVEL "
                        "(positive='LEVEL' in DDSSPLogisticRegression)"
                    )
                raise SchemaError(
                    f"logistic regression needs a binary target; {c!r} has {len(real)} levels ({shown}) ({how})"
                )
            row = np.zeros((1, m))
            row[0, real[0]], row[0, real[1]] = -1.0, 1.0
            return AttributeEncoding(c, "target", row, [c])
        how = how or self._default_how(c)
        if how != "numeric":
            real = m - sum(i is not None for i in {col.missing_code, col.na_code})
            if real == 2:
                raise SchemaError(
                    f"{c!r} is a two-level categorical target: fit a logistic regression "
                    f"(--model logistic; DDSSPLogisticRegression in Python)"
                )
            raise SchemaError(
                f"linear regression needs a numeric target; {c!r} is categorical with {real} levels "
                f"(recode it to two levels for --model logistic, or regress on its level codes with --numeric {c})"
            )
        if m < 2:
            raise SchemaError(f"the target {c!r} has a single level; there is nothing to predict")
        # a missing level is coded 0; the estimators leave its rows out (see observed_target)
        return AttributeEncoding(c, "target", _unit_scale(level_values(col), c, warn=False)[None, :], [c])

    @property
    def unobserved_target_codes(self) -> list[int]:
        """Codes of the target that are not a value to fit: a linear target's missing level (no
        numeric value), a logistic target's levels that are neither class (``'<other>'``, a dedicated
        ``'<missing>'`` level). Their rows are coded 0 in y."""
        col = self.schema.column(self.target)
        if self.kind == "logistic":
            return [int(i) for i in np.flatnonzero(self.target_encoding.matrix[0] == 0.0)]
        return [int(i) for i in np.flatnonzero(np.isnan(level_values(col)))]

    @property
    def positive_label(self) -> str | None:
        """The label of the positive class's level when ``positive`` was given, else None."""
        if self.positive is None:
            return None
        return _labels(self.schema.column(self.target))[self.positive]

    @property
    def one_vs_rest(self) -> bool:
        """The positive class is one level and the negative class more than one."""
        return self.kind == "logistic" and int(np.sum(self.target_encoding.matrix[0] == -1.0)) > 1

    def classes(self) -> tuple[np.ndarray, list[str], str, list[str]]:
        """A logistic target's classes: what ``predict`` returns for them, their labels, the positive
        class's label and the labels of the levels in class 0.

        Returns
        -------
        tuple
            ``(classes, labels, positive, negative_levels)``: for a binary target ``classes`` holds
            the two classes' codes (class 0, class 1); one vs the rest it is [0, 1] (the target is
            not the positive level, it is) and ``labels`` is ``['not LEVEL', 'LEVEL']``.
        """
        tl = self.target_levels  # -1 / +1 for the classes, 0 for '<other>' or empty cells
        labels = _labels(self.schema.column(self.target))
        neg, pos = [int(i) for i in np.flatnonzero(tl == -1.0)], int(np.flatnonzero(tl == 1.0)[0])
        if self.one_vs_rest:
            return np.array([0, 1]), [f"not {labels[pos]}", labels[pos]], labels[pos], [labels[i] for i in neg]
        return np.array([neg[0], pos]), [labels[neg[0]], labels[pos]], labels[pos], [labels[neg[0]]]

    @property
    def intercept_unit(self) -> str:
        """The intercept's unit in a coefficient table: "intercept", or for a logistic model the
        log-odds of which class."""
        if self.kind != "logistic":
            return "intercept"
        _, _, positive, negative = self.classes()
        rest = "the other levels" if self.one_vs_rest else repr(negative[0])
        return f"log-odds of {self.target}={positive!r} vs {rest}"

    # ------------------------------------------------------------------ public API
    @property
    def feature_names(self) -> list[str]:
        """Names of the columns of X without the intercept."""
        return [n for n in self.names if n != INTERCEPT] if self.intercept else list(self.names)

    @property
    def matrices(self) -> dict[str, np.ndarray]:
        """{column: A_j} for the features and the target (the intercept is the constant 1)."""
        out = {a.column: a.matrix for a in self.attributes}
        out[self.target] = self.target_encoding.matrix
        return out

    @property
    def target_levels(self) -> np.ndarray:
        """Encoded value of each target code (numeric: in [-1, 1]; logistic: -1, +1)."""
        return self.target_encoding.matrix[0].copy()

    def decode_target(self, y: Any) -> np.ndarray:
        """Map encoded target values (in [-1, 1]) back to the target's level-value scale (linear only).

        Parameters
        ----------
        y : array-like
            Encoded values.

        Returns
        -------
        numpy.ndarray

        Raises
        ------
        DDSSPError
            For a logistic encoding.
        """
        if self.kind != "linear":
            raise DDSSPError("decode_target applies to a numeric (linear) target only")
        vals = level_values(self.schema.column(self.target))
        lo, hi = float(np.nanmin(vals)), float(np.nanmax(vals))
        return lo + (np.asarray(y, dtype=float) + 1.0) * (hi - lo) / 2.0

    def transform(self, codes: pd.DataFrame, intercept: bool | None = None) -> np.ndarray:
        """X (n x len(names)) for a DataFrame of integer codes.

        Parameters
        ----------
        codes : pandas.DataFrame
            Integer codes of the feature columns.
        intercept : bool, optional
            False drops the intercept column; the encoding's setting by default.

        Returns
        -------
        numpy.ndarray
        """
        codes = check_codes(codes, self.domain, self.features)
        blocks = []
        if self.intercept if intercept is None else intercept:
            blocks.append(np.ones((len(codes), 1)))
        for a in self.attributes:
            if a.width:
                blocks.append(a.matrix[:, codes[a.column].to_numpy()].T)
        return np.hstack(blocks) if blocks else np.zeros((len(codes), 0))

    def frame(self, codes: pd.DataFrame) -> pd.DataFrame:
        """``transform`` as a DataFrame with the encoded names as columns.

        Parameters
        ----------
        codes : pandas.DataFrame
            Integer codes of the feature columns.

        Returns
        -------
        pandas.DataFrame
        """
        return pd.DataFrame(self.transform(codes), columns=self.names, index=codes.index)

    def target_vector(self, codes: pd.DataFrame) -> np.ndarray:
        """y for a DataFrame of integer codes (numeric target in [-1, 1]; logistic target -1/+1).

        Parameters
        ----------
        codes : pandas.DataFrame
            Integer codes holding the target column.

        Returns
        -------
        numpy.ndarray
        """
        t = check_codes(codes, self.domain, [self.target])[self.target].to_numpy()
        return self.target_encoding.matrix[0, t]

    def row_norm_bound(self) -> float:
        """Bound on ||x|| for every possible row (paper Prop 3.1: sqrt(||U||^2 + c), intercept included).

        Computed from the A_j as sqrt(sum_j max_s ||A_j e_s||^2 + [intercept]): each scalar feature
        contributes max abs(v_j) = 1, each one-hot attribute at most 1, the intercept 1.

        Returns
        -------
        float
        """
        sq = float(self.intercept)
        for a in self.attributes:
            if a.width:
                sq += float(np.max(np.sum(a.matrix**2, axis=0)))
        return math.sqrt(sq)

    def label_bound(self) -> float:
        """Bound on abs(y) (1: targets are coded in [-1, 1]).

        Returns
        -------
        float
        """
        return float(np.max(np.abs(self.target_encoding.matrix)))

    def describe(self) -> dict[str, str]:
        """How each feature and the target is encoded.

        Returns
        -------
        dict
            ``{column: how}``.
        """
        out = {a.column: a.how for a in self.attributes}
        out[self.target] = "target(-1/+1)" if self.kind == "logistic" else "target(numeric in [-1,1])"
        if self.positive is not None:
            out[self.target] = f"target(+1: {self.positive_label!r}, -1: the rest)"
        return out

    def __repr__(self) -> str:
        return (
            f"Encoding(kind={self.kind!r}, target={self.target!r}, features={self.features!r}, width={len(self.names)})"
        )
