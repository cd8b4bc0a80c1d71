"""Columns, kinds and the schema file; DataFrame <-> integer codes.

A :class:`Schema` is an ordered list of :class:`Column`. Each column has ``size`` levels with codes
``0..size-1``:

* ``categorical``: an ordered list of labels (strings). Data values are compared as strings, so a CSV
  cell ``1`` matches the label ``"1"`` whether the table was read as text or as numbers.
* ``numeric``: either bins (edges ``e_0 < ... < e_m``; bin ``i`` is ``[e_i, e_{i+1})``, the last one
  closed) with a representative value per bin (the midpoint unless given), or explicit levels
  (``values``; a data value must equal one of them). Values outside the declared ``bounds`` are
  clipped to them (one local warning per column saying how many). Columns that come from a
  private-pgm domain file are ordinal codes and are never clipped: a code outside ``0..size-1`` is
  an error (the domain file does not fit the data).
* ``missing`` (optional): the label of a declared missing/"other" level. Empty cells, unknown labels
  and (for numeric columns) non-numeric values map to it instead of raising. For numeric columns it
  is the last code and its representative value is NaN.

The schema file (JSON, ``"format": "ddssp-schema/1"``) is documented in the README; a private-pgm /
hd-datasets domain file ``{"attr": size, ...}`` is accepted too (:func:`load_schema`).

Nothing here is private: levels, bounds and edges must be public knowledge. :meth:`Schema.infer`
reads them from the data and is for drafting only (the ``ddssp schema`` command says so loudly).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from ddssp.errors import SchemaError

FORMAT = "ddssp-schema/1"
KINDS = ("categorical", "numeric")
#: no column may have more levels than this (a typo in a domain file should not exhaust memory)
MAX_LEVELS = 1_000_000
#: default label of the missing level :meth:`Schema.infer` adds when a column has empty cells
INFER_MISSING_LABEL = "<missing>"


class ClipWarning(UserWarning):
    """Numeric values outside the declared bounds were clipped (a local note for the data holder)."""


class DomainKindsWarning(UserWarning):
    """A domain file was loaded without saying which columns are categorical."""


def _fmt(x: float) -> str:
    """Short printable number: 20 -> '20', 2.5 -> '2.5'."""
    x = float(x)
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"


def _as_label(v: Any) -> str:
    """A data value as a categorical label: ints and integral floats without '.0', strings as is."""
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isfinite(f) and f == int(f):
            return str(int(f))
        return repr(f)
    return str(v)


def _numeric_label(label: str) -> str | None:
    """'1.0' -> '1', ' 7 ' -> '7' (an integral number written differently); None otherwise. Used only
    when a label has no exact match, so it can never change which level an exact label maps to."""
    try:
        f = float(label)
    except (TypeError, ValueError):
        return None
    if math.isfinite(f) and f == int(f):
        return str(int(f))
    return None


def _few(values: Iterable[Any], k: int = 5) -> str:
    vals = list(values)
    shown = ", ".join(repr(v) for v in vals[:k])
    more = f" (and {len(vals) - k} more)" if len(vals) > k else ""
    return shown + more


@dataclass(eq=False)
class Column:
    """One column of a schema. Build through the helpers (:meth:`categorical`, :meth:`binned`,
    :meth:`levels`, :meth:`ordinal`) or ``Schema.from_dict``; they validate."""

    name: str
    kind: str
    labels: list[str]
    values: np.ndarray | None = None
    edges: list[float] | None = None
    bounds: tuple[float, float] | None = None
    missing: str | None = None
    #: numeric only: clip values outside ``bounds`` (True) or treat them as an error (False;
    #: domain-file / ordinal-code columns)
    clip: bool = True
    #: labels were given explicitly for a numeric column (kept in the schema file)
    custom_labels: bool = field(default=False, repr=False)

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def missing_code(self) -> int | None:
        return None if self.missing is None else self.labels.index(self.missing)

    @property
    def is_codes(self) -> bool:
        """Integer codes 0..size-1 already in the data (a domain-file column)."""
        if self.missing is not None or self.custom_labels:
            return False
        if self.labels != [str(i) for i in range(self.size)]:
            return False
        if self.kind == "categorical":
            return True
        return (self.edges is None and not self.clip
                and np.array_equal(self.values, np.arange(self.size, dtype=float)))

    @property
    def integral_values(self) -> bool:
        """Numeric, no missing level, and every representative value is a whole number: decode
        returns int64 (so codes 0..m-1 of a domain file come back as 0..m-1, not 0.0..)."""
        return (self.kind == "numeric" and self.missing is None
                and bool(np.all(np.mod(self.values, 1) == 0)) and bool(np.all(np.abs(self.values) < 2**53)))

    @property
    def is_binned(self) -> bool:
        return self.kind == "numeric" and self.edges is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Column):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    # ----------------------------------------------------------------- constructors
    @classmethod
    def categorical(cls, name: str, levels: Iterable[Any], missing: Any = None) -> "Column":
        labels = [_as_label(v) for v in levels]
        if missing is not None:
            missing = _as_label(missing)
            if missing not in labels:
                labels.append(missing)
        col = cls(name=str(name), kind="categorical", labels=labels, missing=missing)
        col.validate()
        return col

    @classmethod
    def binned(
        cls,
        name: str,
        edges: Iterable[float],
        values: Iterable[float] | None = None,
        missing: Any = None,
        labels: Iterable[str] | None = None,
    ) -> "Column":
        """Numeric column with bins ``[e_i, e_{i+1})`` (last closed); bounds are the outer edges."""
        try:
            e = [float(x) for x in edges]
        except (TypeError, ValueError):
            raise SchemaError(f"column {name!r}: edges must be numbers, got {edges!r}") from None
        if len(e) < 2:
            raise SchemaError(f"column {name!r}: need at least 2 edges (1 bin), got {len(e)}")
        if not all(math.isfinite(x) for x in e):
            raise SchemaError(f"column {name!r}: edges must be finite numbers")
        if any(b <= a for a, b in zip(e, e[1:])):
            raise SchemaError(f"column {name!r}: edges must be strictly increasing, got {e}")
        m = len(e) - 1
        if values is None:
            v = [(a + b) / 2 for a, b in zip(e, e[1:])]
        else:
            try:
                v = [float(x) for x in values]
            except (TypeError, ValueError):
                raise SchemaError(f"column {name!r}: values must be numbers") from None
            if len(v) != m:
                raise SchemaError(f"column {name!r}: {m} bins but {len(v)} representative values")
            for i, x in enumerate(v):
                hi_ok = x <= e[i + 1] if i == m - 1 else x < e[i + 1]
                if not (e[i] <= x and hi_ok):
                    raise SchemaError(
                        f"column {name!r}: representative value {_fmt(x)} is outside its bin "
                        f"[{_fmt(e[i])}, {_fmt(e[i + 1])}{']' if i == m - 1 else ')'}"
                    )
        if labels is None:
            labs = [f"[{_fmt(a)}, {_fmt(b)})" for a, b in zip(e, e[1:])]
            labs[-1] = labs[-1][:-1] + "]"
            if len(set(labs)) < len(labs):  # edges too close for 6 digits
                labs = [f"[{a!r}, {b!r})" for a, b in zip(e, e[1:])]
                labs[-1] = labs[-1][:-1] + "]"
            custom = False
        else:
            labs = [str(x) for x in labels]
            custom = True
        return cls._numeric(name, labs, v, e, (e[0], e[-1]), missing, True, custom)

    @classmethod
    def levels(
        cls,
        name: str,
        values: Iterable[float],
        missing: Any = None,
        labels: Iterable[str] | None = None,
        clip: bool = True,
    ) -> "Column":
        """Numeric column with explicit levels (sorted); a data value must equal one of them
        after clipping to ``[min, max]`` of the levels."""
        try:
            v = [float(x) for x in values]
        except (TypeError, ValueError):
            raise SchemaError(f"column {name!r}: values must be numbers, got {values!r}") from None
        if not v:
            raise SchemaError(f"column {name!r}: needs at least one value")
        if not all(math.isfinite(x) for x in v):
            raise SchemaError(f"column {name!r}: values must be finite numbers")
        if any(b <= a for a, b in zip(v, v[1:])):
            raise SchemaError(f"column {name!r}: values must be strictly increasing, got {v}")
        custom = labels is not None
        labs = [str(x) for x in labels] if labels is not None else [_fmt(x) for x in v]
        if not custom and len(set(labs)) < len(labs):
            labs = [repr(x) for x in v]
        return cls._numeric(name, labs, v, None, (v[0], v[-1]), missing, clip, custom)

    @classmethod
    def ordinal(cls, name: str, size: int) -> "Column":
        """Integer codes 0..size-1 already in the data, used as numbers (domain files)."""
        size = _check_size(name, size)
        return cls.levels(name, range(size), clip=False)

    @classmethod
    def coded(cls, name: str, size: int) -> "Column":
        """Integer codes 0..size-1 already in the data, as categories labelled '0'..'size-1'."""
        size = _check_size(name, size)
        return cls.categorical(name, [str(i) for i in range(size)])

    @classmethod
    def _numeric(cls, name, labs, v, e, bounds, missing, clip, custom) -> "Column":
        if len(labs) != len(v):
            raise SchemaError(f"column {name!r}: {len(v)} levels but {len(labs)} labels")
        vals = np.asarray(v, dtype=float)
        if missing is not None:
            missing = _as_label(missing)
            if missing in labs:
                raise SchemaError(
                    f"column {name!r}: missing label {missing!r} clashes with a numeric level label"
                )
            labs = [*labs, missing]
            vals = np.append(vals, np.nan)
        col = cls(
            name=str(name),
            kind="numeric",
            labels=list(labs),
            values=vals,
            edges=e,
            bounds=(float(bounds[0]), float(bounds[1])),
            missing=missing,
            clip=bool(clip),
            custom_labels=custom,
        )
        col.validate()
        return col

    def validate(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"column names must be non-empty strings, got {self.name!r}")
        if self.kind not in KINDS:
            raise SchemaError(f"column {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.size < 1:
            raise SchemaError(f"column {self.name!r}: needs at least one level")
        if len(set(self.labels)) < len(self.labels):
            dup = sorted({x for x in self.labels if self.labels.count(x) > 1})
            raise SchemaError(f"column {self.name!r}: duplicate labels {_few(dup)}")
        if self.missing is not None and self.missing not in self.labels:
            raise SchemaError(f"column {self.name!r}: missing label {self.missing!r} is not a level")
        if self.kind == "numeric":
            if self.values is None or len(self.values) != self.size:
                raise SchemaError(f"column {self.name!r}: numeric column needs one value per level")

    # ----------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.is_codes:
            d["size"] = self.size
            return d
        if self.kind == "categorical":
            d["levels"] = list(self.labels)
        else:
            n = self.size - (self.missing is not None)
            vals = [float(x) for x in self.values[:n]]
            if self.edges is not None:
                d["edges"] = [float(x) for x in self.edges]
                mids = [(a + b) / 2 for a, b in zip(self.edges, self.edges[1:])]
                if vals != mids:
                    d["values"] = vals
            else:
                d["values"] = vals
            d["bounds"] = [float(self.bounds[0]), float(self.bounds[1])]
            if not self.clip:
                d["clip"] = False
            if self.custom_labels:
                d["labels"] = list(self.labels[:n])
            d = {k: (_int_if_whole(v) if k in ("edges", "values", "bounds") else v) for k, v in d.items()}
        if self.missing is not None:
            d["missing"] = self.missing
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Column":
        if not isinstance(d, dict):
            raise SchemaError(f"each column must be a JSON object, got {d!r}")
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise SchemaError(f"column without a valid \"name\": {d!r}")
        kind = d.get("kind")
        if kind not in KINDS:
            raise SchemaError(f"column {name!r}: \"kind\" must be one of {KINDS}, got {kind!r}")
        allowed = {
            "categorical": {"name", "kind", "levels", "size", "missing", "description"},
            "numeric": {"name", "kind", "edges", "values", "bounds", "bins", "size", "clip",
                        "labels", "missing", "description"},
        }[kind]
        extra = sorted(set(d) - allowed)
        if extra:
            raise SchemaError(f"column {name!r}: unknown keys {extra} for a {kind} column")
        missing = d.get("missing")
        if kind == "categorical":
            if ("levels" in d) == ("size" in d):
                raise SchemaError(f"column {name!r}: give exactly one of \"levels\" or \"size\"")
            if "size" in d:
                if missing is not None:
                    raise SchemaError(f"column {name!r}: \"missing\" needs explicit \"levels\"")
                return cls.coded(name, d["size"])
            levels = d["levels"]
            if not isinstance(levels, list):
                raise SchemaError(f"column {name!r}: \"levels\" must be a list")
            odd = [v for v in levels if isinstance(v, bool) or not isinstance(v, (str, int, float))]
            if odd:
                raise SchemaError(f"column {name!r}: levels must be strings or numbers, got {_few(odd)}")
            return cls.categorical(name, levels, missing=missing)
        # numeric
        forms = [k for k in ("edges", "bins", "size") if k in d]
        if "size" in d:
            if len(d) - ("description" in d) != 3:
                raise SchemaError(f"column {name!r}: \"size\" (ordinal codes) takes no other keys")
            return cls.ordinal(name, d["size"])
        if len(forms) > 1:
            raise SchemaError(f"column {name!r}: give only one of \"edges\" or \"bins\"")
        bounds = d.get("bounds")
        if bounds is not None:
            if (not isinstance(bounds, list) or len(bounds) != 2
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in bounds)
                    or not bounds[0] <= bounds[1]):
                raise SchemaError(f"column {name!r}: \"bounds\" must be [low, high] with low <= high")
        labels = d.get("labels")
        if labels is not None and (not isinstance(labels, list)
                                   or not all(isinstance(x, str) for x in labels)):
            raise SchemaError(f"column {name!r}: \"labels\" must be a list of strings")
        if "bins" in d:
            bins = d["bins"]
            if bounds is None:
                raise SchemaError(f"column {name!r}: \"bins\" needs \"bounds\"")
            if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
                raise SchemaError(f"column {name!r}: \"bins\" must be a positive integer")
            if bins > MAX_LEVELS:
                raise SchemaError(f"column {name!r}: \"bins\" {bins} is more than {MAX_LEVELS}")
            if not bounds[0] < bounds[1]:
                raise SchemaError(f"column {name!r}: \"bins\" needs bounds [low, high] with low < high")
            if "clip" in d and d["clip"] is not True:
                raise SchemaError(f"column {name!r}: binned columns always clip to their edges")
            edges = np.linspace(bounds[0], bounds[1], bins + 1).tolist()
            return cls.binned(name, edges, d.get("values"), missing, labels)
        if "edges" in d:
            if not isinstance(d["edges"], list):
                raise SchemaError(f"column {name!r}: \"edges\" must be a list")
            col = cls.binned(name, d["edges"], d.get("values"), missing, labels)
            if bounds is not None and tuple(float(x) for x in bounds) != col.bounds:
                raise SchemaError(
                    f"column {name!r}: \"bounds\" {bounds} must equal the outer edges "
                    f"[{_fmt(col.bounds[0])}, {_fmt(col.bounds[1])}]"
                )
            if "clip" in d and d["clip"] is not True:
                raise SchemaError(f"column {name!r}: binned columns always clip to their edges")
            return col
        if "values" in d:
            if not isinstance(d["values"], list):
                raise SchemaError(f"column {name!r}: \"values\" must be a list")
            clip = d.get("clip", True)
            if not isinstance(clip, bool):
                raise SchemaError(f"column {name!r}: \"clip\" must be true or false")
            col = cls.levels(name, d["values"], missing, labels, clip=clip)
            if bounds is not None and tuple(float(x) for x in bounds) != col.bounds:
                raise SchemaError(
                    f"column {name!r}: \"bounds\" {bounds} must equal [min, max] of the values "
                    f"[{_fmt(col.bounds[0])}, {_fmt(col.bounds[1])}]"
                )
            return col
        raise SchemaError(
            f"column {name!r}: a numeric column needs \"edges\", \"bins\" + \"bounds\", \"values\" or \"size\""
        )


def _int_if_whole(xs):
    if isinstance(xs, list):
        return [int(x) if float(x).is_integer() and abs(x) < 1e15 else x for x in xs]
    return xs


def _check_size(name: str, size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise SchemaError(f"column {name!r}: domain size must be a positive integer, got {size!r}")
    if size > MAX_LEVELS:
        raise SchemaError(
            f"column {name!r}: domain size {size} is more than {MAX_LEVELS} levels; group or bin the column"
        )
    return int(size)


class Schema:
    """An ordered list of columns. See the module docstring."""

    def __init__(self, columns: Iterable[Column], source: str = "schema"):
        self.columns: list[Column] = list(columns)
        #: "schema" (a ddssp schema), "domain" (from a domain file: codes already in the data) or
        #: "inferred" (drafted from data by :meth:`infer`)
        self.source = source
        if not self.columns:
            raise SchemaError("a schema needs at least one column")
        seen: set[str] = set()
        for c in self.columns:
            if not isinstance(c, Column):
                raise SchemaError(f"schema columns must be Column objects, got {type(c).__name__}")
            if c.name in seen:
                raise SchemaError(f"column {c.name!r} appears twice in the schema")
            seen.add(c.name)
        self._by_name = {c.name: c for c in self.columns}

    # ----------------------------------------------------------------- views
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def domain(self) -> dict[str, int]:
        return {c.name: c.size for c in self.columns}

    @property
    def categorical(self) -> list[str]:
        return [c.name for c in self.columns if c.kind == "categorical"]

    @property
    def numeric(self) -> list[str]:
        return [c.name for c in self.columns if c.kind == "numeric"]

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self):
        return iter(self.columns)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return self.columns == other.columns

    def __repr__(self) -> str:
        cols = ", ".join(f"{c.name}:{c.kind[:3]}[{c.size}]" for c in self.columns)
        return f"Schema({cols})"

    def column(self, name: str) -> Column:
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(
                f"column {name!r} is not in the schema (columns: {_few(self.names, 20)})"
            ) from None

    def subset(self, names: Iterable[str]) -> "Schema":
        return Schema([self.column(n) for n in names], source=self.source)

    # ----------------------------------------------------------------- encode / decode
    def encode(self, df: pd.DataFrame) -> pd.DataFrame:
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
        extra = [c for c in cols if c not in self._by_name]
        if extra:
            raise SchemaError(
                f"the data has column(s) not in the schema: {_few(extra)}; add them to the schema "
                "or drop them from the data"
            )
        absent = [n for n in self.names if n not in set(cols)]
        if absent:
            raise SchemaError(
                f"schema column(s) missing from the data: {_few(absent)}; the data has {_few(cols, 20)}"
            )
        data = df.copy()
        data.columns = cols
        out = {c.name: self._encode_column(c, data[c.name]) for c in self.columns}
        return pd.DataFrame(out, index=df.index, columns=self.names)

    def _encode_column(self, col: Column, s: pd.Series) -> np.ndarray:
        if col.kind == "categorical":
            return self._encode_categorical(col, s)
        return self._encode_numeric(col, s)

    def _domain_hint(self, col: Column) -> str:
        if col.is_codes:
            return (f"; the domain says column {col.name!r} has size {col.size} (codes "
                    f"0..{col.size - 1}) but the data has other values: the domain does not fit the data")
        return ""

    def _encode_categorical(self, col: Column, s: pd.Series) -> np.ndarray:
        isna = s.isna().to_numpy()
        codes = np.empty(len(s), dtype=np.int64)
        lookup = {lab: i for i, lab in enumerate(col.labels)}
        present = s[~isna]
        uniq = pd.unique(present)
        ulabels = [_as_label(v) for v in uniq]
        ucodes = np.array([lookup.get(lab, lookup.get(_numeric_label(lab), -1)) for lab in ulabels],
                          dtype=np.int64)
        if len(uniq):
            idx = pd.Index(uniq).get_indexer(present)
            codes[~isna] = ucodes[idx]
        codes[isna] = -2
        unknown = [lab for lab, c in zip(ulabels, ucodes) if c < 0]
        mc = col.missing_code
        if unknown and mc is None:
            raise SchemaError(
                f"column {col.name!r}: {len(unknown)} value(s) not among the schema's levels: "
                f"{_few(sorted(unknown))}{self._domain_hint(col) or '; add them to the levels or declare a missing/other level'}"
            )
        if isna.any() and mc is None:
            raise SchemaError(
                f"column {col.name!r}: {int(isna.sum())} missing (empty) value(s), e.g. in row(s) "
                f"{_few(list(s.index[isna]))}; fill them or declare a \"missing\" level"
            )
        if mc is not None:
            codes[codes < 0] = mc
        return codes

    def _encode_numeric(self, col: Column, s: pd.Series) -> np.ndarray:
        isna = s.isna().to_numpy()
        if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            x = pd.to_numeric(s.astype(object).where(~isna, None).map(
                lambda v: v.strip() if isinstance(v, str) else v), errors="coerce")
        else:
            try:
                x = pd.to_numeric(s, errors="coerce")
            except (TypeError, ValueError):
                x = pd.to_numeric(s.astype(object), errors="coerce")
        x = x.to_numpy(dtype=float, na_value=np.nan)
        bad = np.isnan(x) & ~isna
        mc = col.missing_code
        if bad.any() and mc is None:
            vals = sorted({_as_label(v) for v in s[bad]})
            raise SchemaError(
                f"column {col.name!r} is numeric but has {int(bad.sum())} non-numeric value(s): "
                f"{_few(vals)}; fix the data, declare a missing level, or make the column categorical"
            )
        if isna.any() and mc is None:
            raise SchemaError(
                f"column {col.name!r}: {int(isna.sum())} missing (empty) value(s), e.g. in row(s) "
                f"{_few(list(s.index[isna]))}; fill them or declare a \"missing\" level"
            )
        miss = np.isnan(x)
        xv = x[~miss]
        lo, hi = col.bounds
        out_lo, out_hi = xv < lo, xv > hi
        n_out = int(out_lo.sum() + out_hi.sum())
        if n_out:
            if not col.clip:
                offending = sorted(set(xv[out_lo | out_hi].tolist()))
                raise SchemaError(
                    f"column {col.name!r}: {n_out} value(s) outside [{_fmt(lo)}, {_fmt(hi)}]: "
                    f"{_few([_fmt(v) for v in offending])}"
                    + (self._domain_hint(col) or "; this column is not clipped (\"clip\": false)")
                )
            xv = np.clip(xv, lo, hi)
            warnings.warn(
                f"column {col.name!r}: {n_out} of {len(s)} value(s) outside the declared bounds "
                f"[{_fmt(lo)}, {_fmt(hi)}] were clipped to them (local note for the data holder; "
                "nothing about this is released)",
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
            if off.any():
                offending = sorted(set(xv[off].tolist()))
                if mc is None:
                    raise SchemaError(
                        f"column {col.name!r}: {int(off.sum())} value(s) not among the declared levels "
                        f"{_few([_fmt(v) for v in levels], 8)}: {_few([_fmt(v) for v in offending])}"
                        + (self._domain_hint(col) or "; use bin edges or declare a missing level")
                    )
                c[off] = mc
        codes = np.empty(len(s), dtype=np.int64)
        codes[~miss] = c
        if miss.any():
            codes[miss] = mc
        return codes

    def decode(self, codes: pd.DataFrame | np.ndarray) -> pd.DataFrame:
        """Labels (categorical, as strings) and representative values (numeric: int64 when every
        level value is a whole number and there is no missing level, else float with NaN for a
        missing level) from integer codes. A DataFrame may hold any subset of the schema's columns
        (output in schema order); an array must have one column per schema column, in order."""
        if isinstance(codes, pd.DataFrame):
            cols = [str(c) for c in codes.columns]
            extra = [c for c in cols if c not in self._by_name]
            if extra:
                raise SchemaError(f"cannot decode column(s) not in the schema: {_few(extra)}")
            names = [n for n in self.names if n in set(cols)]
            frame = codes.copy()
            frame.columns = cols
            arrays = {n: frame[n].to_numpy() for n in names}
            index = codes.index
        else:
            arr = np.asarray(codes)
            if arr.ndim != 2 or arr.shape[1] != len(self.columns):
                raise SchemaError(
                    f"codes must be a 2-D array with {len(self.columns)} columns, got shape {arr.shape}"
                )
            names = self.names
            arrays = {n: arr[:, j] for j, n in enumerate(names)}
            index = None
        out = {}
        for n in names:
            col = self._by_name[n]
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
                raise SchemaError(
                    f"column {n!r}: codes outside 0..{col.size - 1}: {_few(sorted(set(ai[bad].tolist())))}"
                )
            if col.kind == "categorical":
                out[n] = np.asarray(col.labels, dtype=object)[ai]
            else:
                v = col.values[ai]
                out[n] = v.astype(np.int64) if col.integral_values else v
        return pd.DataFrame(out, index=index, columns=names)

    # ----------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        return {"format": FORMAT, "columns": [c.to_dict() for c in self.columns]}

    @classmethod
    def from_dict(cls, d: Any) -> "Schema":
        """A full ddssp schema dict (``"format": "ddssp-schema/1"``)."""
        if not isinstance(d, dict):
            raise SchemaError("a schema must be a JSON object")
        fmt = d.get("format")
        if fmt != FORMAT:
            raise SchemaError(f"unknown schema format {fmt!r}; expected {FORMAT!r}")
        extra = sorted(set(d) - {"format", "columns", "description"})
        if extra:
            raise SchemaError(f"unknown top-level schema keys {extra}")
        cols = d.get("columns")
        if not isinstance(cols, list) or not cols:
            raise SchemaError("a schema needs a non-empty \"columns\" list")
        return cls([Column.from_dict(c) for c in cols])

    def to_json(self) -> str:
        """JSON text, one line per column (easy to review and diff)."""
        cols = ",\n".join(
            "    " + json.dumps(c.to_dict(), allow_nan=False, ensure_ascii=False) for c in self.columns
        )
        return f'{{\n  "format": {json.dumps(FORMAT)},\n  "columns": [\n{cols}\n  ]\n}}\n'


    def save(self, path: str | os.PathLike, force: bool = False) -> Path:
        """Write the schema as JSON, atomically; refuses an existing file unless ``force``."""
        from ddssp.data.fileio import atomic_write, check_output_path

        out = check_output_path(path, force=force)
        text = self.to_json()
        with atomic_write(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        return out

    # ----------------------------------------------------------------- other sources
    @classmethod
    def from_domain(cls, domain: dict[str, int], categorical: list[str] | None = None) -> "Schema":
        """A schema for a private-pgm / hd-datasets domain file: integer codes ``0..m-1`` are
        already in the data.

        Columns listed in ``categorical`` get labels ``"0".."m-1"``; the others are numeric with
        value = code (ordinal) and bounds ``(0, m-1)``, never clipped (a code ``>= m`` is an error).
        With ``categorical=None`` every column is categorical (the conservative one-hot default:
        nothing is assumed about the order of codes) and a :class:`DomainKindsWarning` says so.
        """
        if not isinstance(domain, dict) or not domain:
            raise SchemaError("a domain must be a non-empty mapping {column: size}")
        names = [str(n) for n in domain]
        if categorical is None:
            cat = set(names)
        else:
            cat = {str(c) for c in categorical}
            unknown = sorted(cat - set(names))
            if unknown:
                raise SchemaError(
                    f"categorical column(s) not in the domain file: {_few(unknown)}; "
                    f"the domain has {_few(names, 20)}"
                )
        cols = []
        for name, size in zip(names, domain.values()):
            cols.append(Column.coded(name, size) if name in cat else Column.ordinal(name, size))
        if categorical is None:
            warnings.warn(
                f"the domain file does not say which of its {len(domain)} columns are categorical; "
                "treating all as categorical (one-hot). Pass the categorical columns (the rest become "
                "ordinal numeric codes) or write a full ddssp schema",
                DomainKindsWarning,
                stacklevel=2,
            )
        return cls(cols, source="domain")

    @classmethod
    def infer(
        cls,
        df: pd.DataFrame,
        bins: int = 10,
        categorical: list[str] | None = None,
        max_categorical_levels: int = 100,
    ) -> "Schema":
        """Draft a schema from data. NOT PRIVATE: levels, bounds and edges come from the data and
        must be reviewed or replaced with public knowledge before any release.

        Columns in ``categorical`` or with non-numeric values are categorical (levels sorted, numbers
        in numeric order). Numeric columns with at most ``bins`` distinct values get explicit levels;
        others get ``bins`` equal-width bins between the observed min and max. Columns with empty
        cells get a missing level ``"<missing>"``.
        """
        if not isinstance(df, pd.DataFrame) or df.shape[0] == 0 or df.shape[1] == 0:
            raise SchemaError("cannot infer a schema from an empty table")
        if not isinstance(bins, int) or bins < 1:
            raise SchemaError(f"bins must be a positive integer, got {bins!r}")
        names = [str(c) for c in df.columns]
        cat = set(map(str, categorical or []))
        unknown = sorted(cat - set(names))
        if unknown:
            raise SchemaError(f"categorical column(s) not in the data: {_few(unknown)}")
        cols = []
        for name, (_, s) in zip(names, df.items()):
            isna = s.isna()
            present = s[~isna]
            missing = INFER_MISSING_LABEL if isna.any() else None
            if present.empty:
                raise SchemaError(f"column {name!r} has no values; cannot infer its levels")
            x = pd.to_numeric(present, errors="coerce")
            numeric_ok = not x.isna().any() and np.isfinite(x.to_numpy(dtype=float)).all()
            if name in cat or not numeric_ok:
                labels = sorted({_as_label(v) for v in present})
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
        return cls(cols, source="inferred")


def load_schema(path: str | os.PathLike, categorical: list[str] | None = None) -> Schema:
    """Read a schema file: a full ddssp schema (``"format": "ddssp-schema/1"``) or a private-pgm /
    hd-datasets domain file ``{"attr": size, ...}`` (see :meth:`Schema.from_domain` for
    ``categorical``). ``categorical`` must be None for a full schema (kinds are in the file)."""
    p = Path(path)
    if not p.exists():
        raise SchemaError(f"schema file {p} not found")
    if p.is_dir():
        raise SchemaError(f"schema path {p} is a directory, not a JSON file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SchemaError(f"schema file {p} is not text (expected JSON)") from None
    except OSError as exc:
        raise SchemaError(f"cannot read schema file {p}: {exc.strerror or exc}") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"schema file {p} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    try:
        if isinstance(d, dict) and "format" in d:
            if categorical is not None:
                raise SchemaError(
                    f"schema file {p} is a full ddssp schema: the column kinds are in the file; "
                    "do not pass categorical columns"
                )
            return Schema.from_dict(d)
        if isinstance(d, dict) and d and all(
            isinstance(v, int) and not isinstance(v, bool) for v in d.values()
        ):
            return Schema.from_domain(d, categorical=categorical)
    except SchemaError as exc:
        raise SchemaError(f"schema file {p}: {exc}") from None
    raise SchemaError(
        f"schema file {p} is neither a ddssp schema (with \"format\": \"{FORMAT}\") nor a domain file "
        "({\"column\": size, ...})"
    )
