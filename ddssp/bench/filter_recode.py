"""A benchmark spec's ``filter`` and ``recode`` of a table: the rows kept, and column values mapped to
new levels before the schema is applied.

:func:`parse_filter` and :func:`parse_recode` read the spec's values; :func:`apply_filter` and
:func:`apply_recode` apply them to the raw train and test tables, and :func:`recode_schema` gives
the recoded columns their new levels. Everything here is public preparation of the experiment, done
before any private step (:mod:`.ddssp_paper`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import WorkloadError

_FILTER_RE = re.compile(r"^\s*(`[^`]+`|[^\s<>=!`]+)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$")


def _filter_value(text: str) -> Any:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return float(text)
    except ValueError:
        return text


def parse_filter(raw: Any) -> list[tuple[str, str, Any]]:
    """Parse the spec's ``filter``: one condition or a list of them (all must hold).

    A condition is ``column OP value`` with OP one of ``== != < <= > >=``; a column name with spaces or
    operators goes in backticks; a value in quotes is text, otherwise a number if it reads as one
    (compared with the table's raw values).

    Parameters
    ----------
    raw : str or list of str or None
        The spec's value.

    Returns
    -------
    list of (str, str, any)
        (column, operator, value) triples.

    Raises
    ------
    WorkloadError
        For a condition that does not parse.
    """
    if raw is None:
        return []
    conds = [raw] if isinstance(raw, str) else raw
    if not isinstance(conds, list) or not all(isinstance(c, str) for c in conds):
        raise WorkloadError("'filter' must be a condition string or a list of them, e.g. \"Survived != 2\"")
    out = []
    for c in conds:
        m = _FILTER_RE.match(c)
        if not m:
            raise WorkloadError(f"filter {c!r}: expected 'column OP value' with OP one of == != < <= > >=")
        col = m.group(1).strip("`")
        out.append((col, m.group(2), _filter_value(m.group(3))))
    return out


def parse_recode(raw: Any) -> dict[str, dict[str, str]]:
    """Parse the spec's ``recode``: ``{column = {old = new, ...}}``.

    The column's levels become the distinct new values (in order of first appearance); every value left
    after ``filter`` must be an old value listed.

    Parameters
    ----------
    raw : dict or None
        The spec's value.

    Returns
    -------
    dict
        ``{column: {old: new}}``.

    Raises
    ------
    WorkloadError
        For a malformed value.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, dict) and v for v in raw.values()):
        raise WorkloadError(
            "'recode' must be a table {column = {old = new, ...}}, e.g. recode.Survived = {0 = 0, 1 = 1}"
        )
    out = {}
    for col, mapping in raw.items():
        for new in mapping.values():
            if isinstance(new, (dict, list)):
                raise WorkloadError(f"recode.{col}: new values must be numbers or text, got {new!r}")
        out[str(col)] = {str(k): v for k, v in mapping.items()}
    return out


def _label(v: Any) -> str:
    from ddssp.data.values import as_label

    return as_label(v)


def apply_filter(df: pd.DataFrame, conds: list[tuple[str, str, Any]], what: str) -> pd.DataFrame:
    """The rows of a table that meet every condition.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    conds : list of (str, str, any)
        Conditions from :func:`parse_filter`.
    what : str
        Which table, for messages.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    WorkloadError
        For a column not in the table, or a value that cannot be compared.
    """
    import operator

    ops = {
        "==": operator.eq,
        "!=": operator.ne,
        "<": operator.lt,
        "<=": operator.le,
        ">": operator.gt,
        ">=": operator.ge,
    }
    keep = np.ones(len(df), dtype=bool)
    for col, op, val in conds:
        if col not in df.columns:
            raise WorkloadError(
                f"filter: column {col!r} is not in the {what} table ({', '.join(map(str, df.columns))})"
            )
        s = df[col]
        if isinstance(val, float) and not pd.api.types.is_numeric_dtype(s):
            s = pd.to_numeric(s, errors="coerce")
        elif isinstance(val, str) and op in ("==", "!="):
            s = s.map(lambda v: None if pd.isna(v) else _label(v))
        try:
            hit = ops[op](s, val)
            keep &= np.asarray(hit.fillna(False) if isinstance(hit, pd.Series) else hit, dtype=bool)
        except TypeError:
            raise WorkloadError(f"filter: cannot compare column {col!r} with {val!r} by {op}") from None
    return df[keep].reset_index(drop=True)


def apply_recode(df: pd.DataFrame, recode: dict[str, dict[str, Any]], what: str) -> pd.DataFrame:
    """A copy of a table with the recoded columns' values replaced.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    recode : dict
        ``{column: {old: new}}`` from :func:`parse_recode`.
    what : str
        Which table, for messages.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    WorkloadError
        For a column not in the table, or a value not listed.
    """
    df = df.copy()
    for col, mapping in recode.items():
        if col not in df.columns:
            raise WorkloadError(f"recode: column {col!r} is not in the {what} table")
        labels = df[col].map(lambda v: None if pd.isna(v) else _label(v))
        unmapped = sorted({str(v) for v in labels if v not in mapping})
        if unmapped:
            raise WorkloadError(
                f"recode.{col}: value(s) {unmapped[:5]} in the {what} table have no new value; list them in "
                f'recode.{col} or remove those rows with a filter (e.g. filter = "{col} != {unmapped[0]}")'
            )
        df[col] = labels.map(lambda v: mapping[v])
    return df


def recode_schema(schema: Any, recode: dict[str, dict[str, Any]]) -> Any:
    """The schema with each recoded column replaced.

    Categorical with the new values as levels, or numeric levels when the column was numeric and every
    new value is a number.

    Parameters
    ----------
    schema : Schema
        The schema.
    recode : dict
        ``{column: {old: new}}``.

    Returns
    -------
    Schema
    """
    from ddssp.data.columns import Column
    from ddssp.data.schema import Schema

    cols = []
    for c in schema:
        if c.name not in recode:
            cols.append(c)
            continue
        news = list(dict.fromkeys(recode[c.name].values()))
        numeric = c.kind == "numeric" and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in news)
        cols.append(
            Column.levels(c.name, sorted(float(v) for v in news)) if numeric else Column.categorical(c.name, news)
        )
    return Schema(cols, source=schema.source)
