"""How consistency rules read a schema's levels (:mod:`ddssp.data.rules`, :mod:`ddssp.data.orders`):
which levels satisfy a condition, the number a level stands for, and a rule as the cells it forbids.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import SchemaError

#: the unquoted value naming a column's missing level (when no level is labelled so)
MISSING = "missing"


class RuleError(SchemaError):
    """A consistency rule that cannot be read, or does not fit the schema."""


@dataclass(frozen=True)
class CompiledRule:
    """A rule as the cells it forbids, on the codes of a schema.

    Attributes
    ----------
    rule : Rule, Dependency or Order
        The rule (a dependency's or an order's table is decided from a model:
        :func:`ddssp.marginals.rules_model.dependency_zeros`, :func:`~ddssp.marginals.rules_model.order_zeros`).
    columns : tuple of str
        The columns of the forbidden table, in schema order.
    forbidden : numpy.ndarray
        Boolean, one axis per column (its levels): True on the cells that break the rule.
    """

    rule: Any
    columns: tuple[str, ...]
    forbidden: np.ndarray

    def broken(self, codes: pd.DataFrame) -> np.ndarray:
        """For every row of integer codes, whether it breaks the rule.

        Parameters
        ----------
        codes : pandas.DataFrame
            Integer codes under the rule's schema (at least the rule's columns).

        Returns
        -------
        numpy.ndarray
            Boolean, one entry per row.
        """
        idx = tuple(np.asarray(codes[c], dtype=np.int64) for c in self.columns)
        return self.forbidden[idx]


def quote(s: str) -> str:
    """A name or value as a rule writes it: in double quotes when it holds a space, an operator
    character or a quote, or is a keyword.

    Parameters
    ----------
    s : str
        The name or value.

    Returns
    -------
    str
    """
    return s if re.fullmatch(r'[^\s"=!<>]+', s) and s not in ("and", "or") and s != "->" else f'"{s}"'


def number(s: Any) -> float | None:
    """A finite number, or None.

    Parameters
    ----------
    s : any
        A label or value.

    Returns
    -------
    float or None
    """
    try:
        x = float(s)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def level_truth(column: Any, cond: Any, rule: str) -> np.ndarray:
    """For each level of ``column``: does ``cond`` hold (a threshold inside a bin is refused).

    Parameters
    ----------
    column : ddssp.data.columns.Column
        The column the condition reads.
    cond : Condition
        ``column op value``.
    rule : str
        The rule's name, for the messages.

    Returns
    -------
    numpy.ndarray
        Boolean, one entry per level.

    Raises
    ------
    RuleError
        For a level the column does not have, a comparison with a value that is not a number, or a
        threshold inside a bin.
    """
    labels = [str(x) for x in column.labels]
    v, op = cond.value, cond.op
    num = number(v)
    n = len(labels)
    missing = column.missing_code
    if op in ("==", "!="):
        eq = np.array([lab == v or (num is not None and number(lab) == num) for lab in labels])
        if column.kind == "numeric" and column.edges is None and num is not None:
            vals = np.asarray(column.values, dtype=float)
            eq |= np.isfinite(vals) & (vals == num)
        if not eq.any() and v == MISSING and not cond.literal and missing is not None:
            eq[missing] = True  # the column's missing level, whatever its label
        if not eq.any():
            shown = ", ".join(labels[:12]) + (" ..." if n > 12 else "")
            raise RuleError(f"rule {rule!r}: column {column.name!r} has no level {v!r} (its levels: {shown})")
        return eq if op == "==" else ~eq
    if num is None:
        raise RuleError(f"rule {rule!r}: {cond} compares with {v!r}, which is not a number")
    cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[op]
    out = np.zeros(n, dtype=bool)
    if column.kind == "numeric" and column.edges is not None:
        edges = [float(e) for e in column.edges]
        for i in range(len(edges) - 1):
            lo, hi, last = edges[i], edges[i + 1], i == len(edges) - 2
            # the bin holds [lo, hi) (the last one [lo, hi]); does op hold on all of it, none of it?
            if op == "<":
                every, none = (hi < num) if last else (hi <= num), lo >= num
            elif op == "<=":
                every, none = hi <= num, lo > num
            elif op == ">":
                every, none = lo > num, hi <= num
            else:  # >=
                every, none = lo >= num, (hi < num) if last else (hi <= num)
            if not (every or none):
                raise RuleError(
                    f"rule {rule!r}: {cond} cuts the bin {labels[i]} of {column.name!r}; "
                    f"declare an edge at {v} in the schema (rules must follow bin edges)"
                )
            out[i] = every
        return out
    if column.kind == "numeric":
        vals = np.asarray(column.values, dtype=float)
    else:
        vals = np.array([np.nan if number(lab) is None else number(lab) for lab in labels])
    if missing is not None:
        vals[missing] = np.nan
    if not np.isfinite(vals).any():
        raise RuleError(f"rule {rule!r}: {cond} compares numbers, but {column.name!r} has no numeric level")
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(vals), cmp(vals, num), False)


def level_values(column: Any, rule: str) -> np.ndarray:
    """The number each level stands for (NaN: not a number, or the missing level); a binned column
    is refused (its levels are ranges).

    Parameters
    ----------
    column : ddssp.data.columns.Column
        The column.
    rule : str
        The rule's name, for the messages.

    Returns
    -------
    numpy.ndarray
        float64, one entry per level.

    Raises
    ------
    RuleError
        For a binned column.
    """
    if column.kind == "numeric" and column.edges is not None:
        raise RuleError(
            f"rule {rule!r}: {column.name!r} is binned; compare it with a number at a bin edge, not a column"
        )
    if column.kind == "numeric":
        vals = np.asarray(column.values, dtype=float).copy()
    else:
        vals = np.array([np.nan if number(lab) is None else number(lab) for lab in column.labels])
    if column.missing_code is not None:
        vals[column.missing_code] = np.nan
    return vals


def pair_truth(a: Any, b: Any, cond: Any, rule: str) -> np.ndarray:
    """For each pair of levels (a's, b's): does ``a op b`` hold. ``==`` / ``!=`` compare numbers, or
    labels where a level is not a number; order comparisons need two numbers.

    Parameters
    ----------
    a, b : ddssp.data.columns.Column
        The two columns.
    cond : Condition
        ``a op b``.
    rule : str
        The rule's name, for the messages.

    Returns
    -------
    numpy.ndarray
        Boolean, levels of ``a`` by levels of ``b``.
    """
    va, vb = level_values(a, rule), level_values(b, rule)
    x, y = va[:, None], vb[None, :]
    both = np.isfinite(x) & np.isfinite(y)
    if cond.op in ("==", "!="):
        la = np.array([str(v) for v in a.labels], dtype=object)[:, None]
        lb = np.array([str(v) for v in b.labels], dtype=object)[None, :]
        with np.errstate(invalid="ignore"):
            eq = np.where(both, x == y, la == lb)
        return eq if cond.op == "==" else ~eq
    cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[cond.op]
    with np.errstate(invalid="ignore"):
        return np.where(both, cmp(x, y), False)
