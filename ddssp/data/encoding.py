"""DataFrame <-> integer codes under a :class:`~ddssp.data.schema.Schema`.

:func:`encode` maps labels and numeric values to codes (clipping numeric values outside declared
bounds, with one local :class:`ClipWarning` per column, and a number between two explicit levels to
the nearest one; unknown labels and missing values go to a declared missing level or raise
:class:`~ddssp.errors.SchemaError`). :func:`decode` maps codes back to
labels and representative values. ``Schema.encode`` / ``Schema.decode`` call these.
"""

from __future__ import annotations

import warnings
from typing import Protocol

import numpy as np
import pandas as pd

from ddssp.data.columns import (
    INFER_MISSING_LABEL,
    Column,
    _as_label,
    _few,
    _fmt,
    _numeric_label,
    nearest_level,
)
from ddssp.errors import SchemaError


class _Columns(Protocol):
    """What encode and decode read of a :class:`~ddssp.data.schema.Schema` (this module sits below
    the schema, which calls it)."""

    columns: list[Column]
    names: list[str]
    _by_name: dict[str, Column]


class ClipWarning(UserWarning):
    """Numeric values outside the declared bounds were clipped (a local note for the data holder)."""


def encode(schema: _Columns, df: pd.DataFrame) -> pd.DataFrame:
    """Integer codes (int64), columns in schema order, same index as ``df``.

    Raises SchemaError when the columns differ from the schema, for unknown labels and missing
    values (unless the column declares ``missing``), non-numeric values in numeric columns, and
    codes outside a domain file's sizes. Numeric values outside the declared bounds are clipped,
    with one :class:`ClipWarning` per column saying how many.
    """
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"encode needs a pandas DataFrame, got {type(df).__name__}")
    cols = [str(c) for c in df.columns]
    if len(set(cols)) < len(cols):
        dup = sorted({c for c in cols if cols.count(c) > 1})
        raise SchemaError(f"the data has duplicate column names: {_few(dup)}")
    extra = [c for c in cols if c not in schema._by_name]
    if extra:
        raise SchemaError(
            f"the data has column(s) not in the schema: {_few(extra)}; add them to the schema "
            "or drop them from the data"
        )
    absent = [n for n in schema.names if n not in set(cols)]
    if absent:
        raise SchemaError(f"schema column(s) missing from the data: {_few(absent)}; the data has {_few(cols, 20)}")
    data = df.copy()
    data.columns = cols
    out = {c.name: _encode_column(c, data[c.name]) for c in schema.columns}
    return pd.DataFrame(out, index=df.index, columns=schema.names)


def _encode_column(col: Column, s: pd.Series) -> np.ndarray:
    if col.kind == "categorical":
        return _encode_categorical(col, s)
    return _encode_numeric(col, s)


def _domain_hint(col: Column) -> str:
    if col.is_codes:
        return (
            f"; the domain says column {col.name!r} has size {col.size} (codes "
            f"0..{col.size - 1}) but the data has other values: the domain does not fit the data"
        )
    return ""


def _encode_categorical(col: Column, s: pd.Series) -> np.ndarray:
    isna = s.isna().to_numpy()
    codes = np.empty(len(s), dtype=np.int64)
    lookup = {lab: i for i, lab in enumerate(col.labels)}
    present = s[~isna]
    uniq = pd.unique(present)
    ulabels = [_as_label(v) for v in uniq]
    ucodes = np.array([lookup.get(lab, lookup.get(_numeric_label(lab), -1)) for lab in ulabels], dtype=np.int64)
    if len(uniq):
        idx = pd.Index(uniq).get_indexer(present)
        codes[~isna] = ucodes[idx]
    codes[isna] = -2
    unknown = [lab for lab, c in zip(ulabels, ucodes) if c < 0]
    mc = col.missing_code
    if unknown and mc is None:
        raise SchemaError(
            f"column {col.name!r}: {len(unknown)} value(s) not among the schema's levels: "
            f"{_few(sorted(unknown))}{_domain_hint(col) or '; add them to the levels or declare a missing/other level'}"
        )
    nc = col.na_code
    if isna.any() and nc is None:
        raise SchemaError(
            f"column {col.name!r}: {int(isna.sum())} missing (empty) value(s), e.g. in row(s) "
            f'{_few(list(s.index[isna]))}; fill them or declare a "missing" level'
        )
    if nc is not None:
        codes[isna] = nc
    if mc is not None:
        codes[codes < 0] = mc
    return codes


def parse_numeric(s: pd.Series) -> np.ndarray:
    """A column's values as float: text stripped, unparseable and missing -> NaN (the numeric parse
    of :func:`encode`, shared with the counting backends so they agree cell by cell)."""
    isna = s.isna().to_numpy()
    if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
        x = pd.to_numeric(
            s.astype(object).where(~isna, None).map(lambda v: v.strip() if isinstance(v, str) else v), errors="coerce"
        )
    else:
        try:
            x = pd.to_numeric(s, errors="coerce")
        except (TypeError, ValueError):
            x = pd.to_numeric(s.astype(object), errors="coerce")
    return x.to_numpy(dtype=float, na_value=np.nan)


def _encode_numeric(col: Column, s: pd.Series) -> np.ndarray:
    isna = s.isna().to_numpy()
    x = parse_numeric(s)
    bad = np.isnan(x) & ~isna
    mc = col.missing_code
    nc = col.na_code  # empty and non-numeric cells
    if bad.any() and nc is None:
        vals = sorted({_as_label(v) for v in s[bad]})
        raise SchemaError(
            f"column {col.name!r} is numeric but has {int(bad.sum())} non-numeric value(s): "
            f"{_few(vals)}; fix the data, declare a missing level, or make the column categorical"
        )
    if isna.any() and nc is None:
        raise SchemaError(
            f"column {col.name!r}: {int(isna.sum())} missing (empty) value(s), e.g. in row(s) "
            f'{_few(list(s.index[isna]))}; fill them or declare a "missing" level'
        )
    miss = np.isnan(x)
    xv = x[~miss]
    lo, hi = col.bounds
    out_lo, out_hi = xv < lo, xv > hi
    n_out = int(out_lo.sum() + out_hi.sum())
    outside = out_lo | out_hi
    if n_out and not col.clip and mc is not None and col.edges is None:
        n_out = 0  # explicit levels, not clipped, with a missing/other level: outside values go there
    if n_out:
        if not col.clip:
            offending = sorted(set(xv[out_lo | out_hi].tolist()))
            raise SchemaError(
                f"column {col.name!r}: {n_out} value(s) outside [{_fmt(lo)}, {_fmt(hi)}]: "
                f"{_few([_fmt(v) for v in offending])}"
                + (_domain_hint(col) or '; this column is not clipped ("clip": false)')
            )
        xv = np.clip(xv, lo, hi)
        warnings.warn(
            f"column {col.name!r}: {n_out} of {len(s)} value(s) outside the schema's range "
            f"[{_fmt(lo)}, {_fmt(hi)}] (declared, or discovered under DP) were clipped to it (local "
            "note for the data holder; nothing about this is released)",
            ClipWarning,
            stacklevel=3,
        )
    n = col.size - (mc is not None)
    if col.edges is not None:
        e = np.asarray(col.edges, dtype=float)
        c = np.searchsorted(e, xv, side="right") - 1
        c = np.clip(c, 0, n - 1)
    else:
        levels = col.values[:n]
        c = np.searchsorted(levels, xv, side="left")
        c = np.clip(c, 0, n - 1)
        off = levels[c] != xv
        if off.any() and col.clip:  # between two levels: the nearest one (a 2.5 among whole numbers)
            c[off] = nearest_level(levels, xv[off])
        elif off.any():
            offending = sorted(set(xv[off].tolist()))
            if mc is None:
                raise SchemaError(
                    f"column {col.name!r}: {int(off.sum())} value(s) not among the declared levels "
                    f"{_few([_fmt(v) for v in levels], 8)}: {_few([_fmt(v) for v in offending])}"
                    + (_domain_hint(col) or "; use bin edges or declare a missing level")
                )
            c[off] = mc
    if not col.clip and mc is not None and col.edges is None:
        c[outside] = mc
    codes = np.empty(len(s), dtype=np.int64)
    codes[~miss] = c
    if miss.any():
        codes[miss] = nc
    return codes


def decode(schema: _Columns, codes: pd.DataFrame | np.ndarray) -> pd.DataFrame:
    """Labels (categorical, as strings; None for the ``"<missing>"`` level of empty cells) and
    representative values (numeric: int64 when every level value is a whole number and there is no
    missing level, else float with NaN for a missing level) from integer codes: a missing value
    comes out missing for every kind (an empty cell in a CSV), ``"<other>"`` stays a label. A DataFrame may hold any subset of the schema's columns
    (output in schema order); an array must have one column per schema column, in order."""
    if isinstance(codes, pd.DataFrame):
        cols = [str(c) for c in codes.columns]
        extra = [c for c in cols if c not in schema._by_name]
        if extra:
            raise SchemaError(f"cannot decode column(s) not in the schema: {_few(extra)}")
        names = [n for n in schema.names if n in set(cols)]
        frame = codes.copy()
        frame.columns = cols
        arrays = {n: frame[n].to_numpy() for n in names}
        index = codes.index
    else:
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[1] != len(schema.columns):
            raise SchemaError(f"codes must be a 2-D array with {len(schema.columns)} columns, got shape {arr.shape}")
        names = schema.names
        arrays = {n: arr[:, j] for j, n in enumerate(names)}
        index = None
    out = {}
    for n in names:
        col = schema._by_name[n]
        a = arrays[n]
        try:
            af = np.asarray(a, dtype=float)
        except (TypeError, ValueError):
            raise SchemaError(f"column {n!r}: codes must be integers") from None
        if np.isnan(af).any() or (af != np.round(af)).any():
            raise SchemaError(f"column {n!r}: codes must be integers")
        ai = af.astype(np.int64)
        bad = (ai < 0) | (ai >= col.size)
        if bad.any():
            raise SchemaError(f"column {n!r}: codes outside 0..{col.size - 1}: {_few(sorted(set(ai[bad].tolist())))}")
        if col.kind == "categorical":
            labels = np.asarray(col.labels, dtype=object)
            na = col.na_code
            if na is not None and col.labels[na] == INFER_MISSING_LABEL:  # empty cells' own level
                labels = labels.copy()
                labels[na] = None
            out[n] = labels[ai]
        else:
            v = col.values[ai]
            out[n] = v.astype(np.int64) if col.integral_values else v
    return pd.DataFrame(out, index=index, columns=names)
