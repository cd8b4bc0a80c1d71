"""Drafting a schema from data: NOT PRIVATE.

:func:`draft_columns` reads levels, bounds and bin edges from the data itself, to save typing. Its
output must be reviewed and replaced with public knowledge before any release (the ``ddssp schema``
command says so loudly). :meth:`Schema.infer <ddssp.data.schema.Schema.infer>` and
:func:`ddssp.data.schema.draft_schema` wrap the columns in a stamped schema; this module does not
import the schema, so the schema can import it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddssp.data.columns import INFER_MISSING_LABEL, Column
from ddssp.data.dates import is_datetime_dtype, parse_clock, parse_days
from ddssp.data.values import as_label, first_few
from ddssp.errors import SchemaError

#: the stamp ``ddssp schema`` (without --eps) puts in a schema drafted from data (key "draft")
DRAFT_STAMP = (
    "data-derived draft: levels, bounds and bin edges were read from the data WITHOUT "
    "privacy; review them, replace them with public knowledge, then delete this key"
)


def draft_columns(
    df: pd.DataFrame,
    bins: int = 10,
    categorical: list[str] | None = None,
    max_categorical_levels: int = 100,
) -> list[Column]:
    """The columns of a schema drafted from data. NOT PRIVATE.

    Levels, bounds and edges come from the data and must be reviewed or replaced with public
    knowledge before any release.

    Parameters
    ----------
    df : pandas.DataFrame
        The raw table.
    bins : int
        Numeric columns with at most ``bins`` distinct values get explicit levels; others get
        ``bins`` equal-width bins between the observed min and max. A column whose values are all
        ISO dates or timestamps gets ``bins`` equal-width bins on the time axis (days since
        1970-01-01, ``unit`` "date" or "timestamp"; edges on whole days when the bins are a day wide
        or more); one of clock times ``HH:MM[:SS]`` gets them on minutes since midnight ("time").
    categorical : list of str, optional
        Columns to make categorical; columns with non-numeric values (other than dates and clock
        times) are categorical anyway (levels sorted, numbers in numeric order).
    max_categorical_levels : int
        A categorical column with more distinct values is refused.

    Returns
    -------
    list of Column
        Columns with empty cells get a missing level ``"<missing>"``.

    Raises
    ------
    SchemaError
        For an empty table, a bad ``bins``, unknown categorical columns, a column without values, or
        too many categorical levels.
    """
    if not isinstance(df, pd.DataFrame) or df.shape[0] == 0 or df.shape[1] == 0:
        raise SchemaError("cannot infer a schema from an empty table")
    if not isinstance(bins, int) or bins < 1:
        raise SchemaError(f"bins must be a positive integer, got {bins!r}")
    names = [str(c) for c in df.columns]
    cat = set(map(str, categorical or []))
    unknown = sorted(cat - set(names))
    if unknown:
        raise SchemaError(f"categorical column(s) not in the data: {first_few(unknown)}")
    cols = []
    for name, (_, s) in zip(names, df.items()):
        isna = s.isna()
        present = s[~isna]
        missing = INFER_MISSING_LABEL if isna.any() else None
        if present.empty:
            raise SchemaError(f"column {name!r} has no values; cannot infer its levels")
        if is_datetime_dtype(present.dtype):  # typed dates: never their ticks since 1970
            x = pd.Series(np.nan, index=present.index)
        else:
            x = pd.to_numeric(present, errors="coerce")
        numeric_ok = not x.isna().any() and np.isfinite(x.to_numpy(dtype=float)).all()
        if name not in cat and not numeric_ok:
            days, timed = parse_days(present)
            if not np.isnan(days).any():
                unit = "timestamp" if timed.any() else "date"
                lo, hi = float(days.min()), float(days.max())
                if unit == "date":
                    hi += 1.0  # the last day, whole
                edges = np.linspace(lo, max(hi, lo + 1.0), bins + 1)
                if (edges[-1] - edges[0]) / bins >= 1.0:
                    edges = np.unique(np.concatenate([[np.floor(lo)], np.round(edges[1:-1]), [np.ceil(edges[-1])]]))
                cols.append(Column.binned(name, edges, missing=missing, unit=unit))
                continue
            mins, _ = parse_clock(present)
            if not np.isnan(mins).any():  # clock times: minutes since midnight, whole-minute edges
                lo, hi = float(np.floor(mins.min())), float(min(np.floor(mins.max()) + 1.0, 1440.0))
                edges = np.unique(np.round(np.linspace(lo, hi, bins + 1)))
                cols.append(Column.binned(name, edges, missing=missing, unit="time"))
                continue
        if name in cat or not numeric_ok:
            labels = sorted({as_label(v) for v in present})
            if numeric_ok:
                labels = sorted(labels, key=float)
            if len(labels) > max_categorical_levels:
                raise SchemaError(
                    f"column {name!r} has {len(labels)} distinct values (more than "
                    f"{max_categorical_levels}); group them, or mark it numeric if it is a number"
                )
            if missing is not None and missing in labels:
                missing = None  # the label already exists; empty cells stay an error
            cols.append(Column.categorical(name, labels, missing=missing))
            continue
        xv = x.to_numpy(dtype=float)
        distinct = np.unique(xv)
        if len(distinct) <= bins:
            cols.append(Column.levels(name, distinct, missing=missing))
        else:
            lo, hi = float(distinct[0]), float(distinct[-1])
            edges = np.linspace(lo, hi, bins + 1)
            short = np.array([float(f"{x:.6g}") for x in edges])
            if np.all(np.diff(short) > 0):
                edges = short  # readable inner edges for the reviewer
            edges[0], edges[-1] = lo, hi
            cols.append(Column.binned(name, edges, missing=missing))
    return cols
