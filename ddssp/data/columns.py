"""The column model: one :class:`Column` per schema column (kind, levels, bins, bounds, missing level).

A column has ``size`` levels with codes ``0..size-1``:

* ``categorical``: an ordered list of labels (strings). Data values are compared as strings, so a CSV
  cell ``1`` matches the label ``"1"`` whether the table was read as text or as numbers.
* ``numeric``: either bins (edges ``e_0 < ... < e_m``; bin ``i`` is ``[e_i, e_{i+1})``, the last one
  closed) with a representative value per bin (the midpoint unless given), or explicit levels
  (``values``). Values outside the declared ``bounds`` are clipped to them, and a value between two
  levels goes to the nearest one (so no single value can stop an encoding). Columns that come from a private-pgm domain file are ordinal codes and are never
  clipped.
* ``unit`` (numeric only, optional): ``"date"`` or ``"timestamp"``: the numbers are days since
  1970-01-01; ``"time"``: minutes since midnight (:mod:`ddssp.data.dates`). Raw values are ISO dates
  / timestamps / clock times, parsed on encoding and written back as text on decoding; bins and
  levels are labelled the same way.
* ``within`` (optional, binned numeric columns): how values spread inside each bin, as a few
  sub-cells with weights (:class:`~ddssp.data.within.Within`; discovery derives it from the noisy
  fine-grid counts it already paid for). Synthetic rows draw a value inside the bin by it; fits and
  every other decode keep the representative value. Without it a bin always decodes to its
  representative value.
* ``missing`` (optional): the label of a declared missing/"other" level. Empty cells, unknown labels
  and (for numeric columns) non-numeric values map to it instead of raising. For numeric columns it
  is the last code and its representative value is NaN.
* ``empty`` (optional): labels of levels that hold no rows (structural zeros): still levels (a value
  coded to one encodes), but a release's model gives them no mass (discovery: an ``<other>`` unseen).

Nothing here reads data. The schema container is :mod:`ddssp.data.schema`; encoding and decoding
:mod:`ddssp.data.encoding`; single values as labels and levels :mod:`ddssp.data.values`; the
columns of a domain file :mod:`ddssp.data.domainfile`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddssp.data.dates import TIME_UNITS, format_day, on_axis, schema_entry_on_axis
from ddssp.data.values import as_label, first_few, format_number, int_if_whole
from ddssp.data.within import Within
from ddssp.errors import SchemaError

KINDS = ("categorical", "numeric")
#: no column may have more levels than this (a typo in a domain file should not exhaust memory)
MAX_LEVELS = 1_000_000
#: default label of the missing level :func:`ddssp.data.draft.draft_schema` adds when a column has empty cells
INFER_MISSING_LABEL = "<missing>"


@dataclass(eq=False)
class Column:
    """One column of a schema: its kind, levels and (numeric) bins, bounds and missing level.

    Build through the helpers (:meth:`categorical`, :meth:`binned`, :meth:`levels`, :meth:`ordinal`,
    :meth:`coded`) or ``Schema.from_dict``; they validate.

    Attributes
    ----------
    name : str
        The column name.
    kind : str
        ``"categorical"`` or ``"numeric"``.
    labels : list of str
        One label per level, in code order.
    values : numpy.ndarray or None
        Numeric only: the representative value of each level (NaN for a missing level).
    edges : list of float or None
        Binned numeric only: the bin edges ``e_0 < ... < e_m``.
    bounds : tuple of float or None
        Numeric only: the range values are clipped to.
    missing : str or None
        The label of a declared missing/"other" level: empty cells, unknown labels and (numeric)
        non-numeric values map to it instead of raising.
    clip : bool
        Numeric only: clip values outside ``bounds`` (True) or treat them as an error (False;
        domain-file / ordinal-code columns).
    custom_labels : bool
        Labels were given explicitly for a numeric column (kept in the schema file).
    na : str or None
        The label of the level that empty cells (and, numeric, non-numeric cells) are coded to, when
        that is not the ``missing`` level (discovered schemas: a released missing level, the
        ``<other>`` level, or the bin of the noisy median).
    unit : str or None
        Numeric only: a time axis, ``"date"`` / ``"timestamp"`` (days since 1970-01-01) or ``"time"``
        (minutes since midnight); raw values are ISO text, read and written by :mod:`ddssp.data.dates`.
    within : Within or None
        Binned numeric columns: how values spread inside each bin, for synthetic rows (None: every
        bin decodes to its representative value).
    empty : tuple of str
        Labels of levels that hold no rows (structural zeros): a release's model gives them no mass.
    """

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
    #: optional label of the level that empty cells (and, numeric, non-numeric cells) are coded to,
    #: when that is not the ``missing`` level (discovered schemas: a released missing level, or the
    #: ``<other>`` level, or the bin of the noisy median)
    na: str | None = None
    #: numeric only: "date" / "timestamp" when the numbers are days since 1970-01-01 (a time axis)
    unit: str | None = None
    #: binned numeric only, optional: how values spread inside each bin (synthetic rows)
    within: Within | None = None
    empty: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """The number of levels (codes are ``0..size-1``)."""
        return len(self.labels)

    @property
    def missing_code(self) -> int | None:
        """The code of the ``missing`` level, or None when the column has none."""
        return None if self.missing is None else self.labels.index(self.missing)

    @property
    def na_code(self) -> int | None:
        """Code of empty cells: the ``na`` level if declared, else the ``missing`` level (or None)."""
        return self.labels.index(self.na) if self.na is not None else self.missing_code

    def with_na(self, label: str | None) -> Column:
        """This column with empty cells coded to the level ``label`` (validated; changes the column in place).

        Parameters
        ----------
        label : str or None
            A level label, or None to code empty cells by the default rules.

        Returns
        -------
        Column
            This column.

        Raises
        ------
        SchemaError
            When ``label`` is not one of the column's levels.
        """
        self.na = None if label is None else str(label)
        self.validate()
        return self

    def with_empty(self, labels: Iterable[str]) -> Column:
        """This column with the levels ``labels`` marked as holding no rows (validated, in place).

        Parameters
        ----------
        labels : iterable of str
            Level labels (not every level).

        Returns
        -------
        Column
            This column.
        """
        self.empty = tuple(labels)
        self.validate()
        return self

    def with_within(self, within: Within | None) -> Column:
        """Attach a within-bin distribution (validated against the bins).

        Parameters
        ----------
        within : Within or None
            The distribution, or None to drop it.

        Returns
        -------
        Column
            This column.
        """
        self.within = within
        self.validate()
        return self

    @property
    def is_codes(self) -> bool:
        """Integer codes 0..size-1 already in the data (a domain-file column)."""
        if self.missing is not None or self.custom_labels or self.empty or {self.na, self.unit} != {None}:
            return False
        if self.labels != [str(i) for i in range(self.size)]:
            return False
        if self.kind == "categorical":
            return True
        return self.edges is None and not self.clip and np.array_equal(self.values, np.arange(self.size, dtype=float))

    @property
    def integral_values(self) -> bool:
        """Numeric, no missing level, and every representative value is a whole number: decode
        returns int64 (so codes 0..m-1 of a domain file come back as 0..m-1, not 0.0..)."""
        return (
            self.kind == "numeric"
            and self.unit is None
            and self.missing is None
            and bool(np.all(np.mod(self.values, 1) == 0))
            and bool(np.all(np.abs(self.values) < 2**53))
        )

    @property
    def is_binned(self) -> bool:
        """True for a numeric column with bin edges (not explicit levels)."""
        return self.kind == "numeric" and self.edges is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Column):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    # ----------------------------------------------------------------- constructors
    @classmethod
    def categorical(cls, name: str, levels: Iterable[Any], missing: Any = None) -> Column:
        """A categorical column with the given levels (compared as strings).

        Parameters
        ----------
        name : str
            The column name.
        levels : iterable
            The level labels, in code order (converted to strings).
        missing : optional
            The label of a missing/"other" level; appended to the levels when not among them.

        Returns
        -------
        Column

        Raises
        ------
        SchemaError
            For an empty name, no levels, or duplicate labels.
        """
        labels = [as_label(v) for v in levels]
        if missing is not None:
            missing = as_label(missing)
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
        unit: str | None = None,
    ) -> Column:
        """A numeric column with bins ``[e_i, e_{i+1})`` (the last closed); bounds are the outer edges.

        Parameters
        ----------
        name : str
            The column name.
        edges : iterable of float
            At least two finite, strictly increasing bin edges.
        values : iterable of float, optional
            The representative value of each bin, inside it; the bin midpoints by default.
        missing : optional
            The label of a missing level (the last code; its value is NaN).
        labels : iterable of str, optional
            Labels of the bins; ``"[a, b)"`` by default.
        unit : str, optional
            A time axis (:mod:`ddssp.data.dates`): ``"date"`` / ``"timestamp"`` (the numbers are days
            since 1970-01-01) or ``"time"`` (minutes since midnight); default labels are then ISO
            dates / timestamps / clock times.

        Returns
        -------
        Column

        Raises
        ------
        SchemaError
            For edges that are not finite and strictly increasing, or representative values outside
            their bins.
        """
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
                        f"column {name!r}: representative value {format_number(x)} is outside its bin "
                        f"[{format_number(e[i])}, {format_number(e[i + 1])}{']' if i == m - 1 else ')'}"
                    )
        if labels is None:
            labs = [f"[{format_number(a)}, {format_number(b)})" for a, b in zip(e, e[1:])]
            labs[-1] = labs[-1][:-1] + "]"
            if unit in TIME_UNITS and on_axis(e, unit):
                t = [format_day(x, unit) for x in e]
                tl = [f"[{a}, {b})" for a, b in zip(t, t[1:])]
                tl[-1] = tl[-1][:-1] + "]"
                if len(set(tl)) == len(tl):  # else edges closer than the text shows: numbers
                    labs = tl
            if len(set(labs)) < len(labs):  # edges too close for 6 digits
                labs = [f"[{a!r}, {b!r})" for a, b in zip(e, e[1:])]
                labs[-1] = labs[-1][:-1] + "]"
            custom = False
        else:
            labs = [str(x) for x in labels]
            custom = True
        return cls._numeric(name, labs, v, e, (e[0], e[-1]), missing, True, custom, unit)

    @classmethod
    def levels(
        cls,
        name: str,
        values: Iterable[float],
        missing: Any = None,
        labels: Iterable[str] | None = None,
        clip: bool = True,
        unit: str | None = None,
    ) -> Column:
        """A numeric column with explicit levels; a value is coded to the nearest level after clipping.

        Parameters
        ----------
        name : str
            The column name.
        values : iterable of float
            The levels, finite and strictly increasing.
        missing : optional
            The label of a missing level (the last code; its value is NaN).
        labels : iterable of str, optional
            Labels of the levels; the formatted values by default.
        clip : bool
            Clip values to ``[min, max]`` of the levels (True), or treat values outside as an error.
        unit : str, optional
            A time axis, as in :meth:`binned`; default labels are then ISO text.

        Returns
        -------
        Column

        Raises
        ------
        SchemaError
            For no values, or values that are not finite and strictly increasing.
        """
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
        labs = [str(x) for x in labels] if labels is not None else [format_number(x) for x in v]
        if not custom and unit in TIME_UNITS and on_axis(v, unit):
            t = [format_day(x, unit) for x in v]
            if len(set(t)) == len(t):
                labs = t
        if not custom and len(set(labs)) < len(labs):
            labs = [repr(x) for x in v]
        return cls._numeric(name, labs, v, None, (v[0], v[-1]), missing, clip, custom, unit)

    @classmethod
    def ordinal(cls, name: str, size: int) -> Column:
        """A numeric column of integer codes 0..size-1 already in the data, used as numbers (domain files).

        Parameters
        ----------
        name : str
            The column name.
        size : int
            The number of codes.

        Returns
        -------
        Column
            Explicit levels ``0..size-1``, never clipped.
        """
        size = _check_size(name, size)
        return cls.levels(name, range(size), clip=False)

    @classmethod
    def coded(cls, name: str, size: int) -> Column:
        """A categorical column of integer codes 0..size-1 already in the data, labelled '0'..'size-1'.

        Parameters
        ----------
        name : str
            The column name.
        size : int
            The number of codes.

        Returns
        -------
        Column
        """
        size = _check_size(name, size)
        return cls.categorical(name, [str(i) for i in range(size)])

    @classmethod
    def _numeric(cls, name, labs, v, e, bounds, missing, clip, custom, unit=None) -> Column:
        if len(labs) != len(v):
            raise SchemaError(f"column {name!r}: {len(v)} levels but {len(labs)} labels")
        vals = np.asarray(v, dtype=float)
        if missing is not None:
            missing = as_label(missing)
            if missing in labs:
                raise SchemaError(f"column {name!r}: missing label {missing!r} clashes with a numeric level label")
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
            unit=unit,
        )
        col.validate()
        return col

    def validate(self) -> None:
        """Check the column's fields are consistent.

        Raises
        ------
        SchemaError
            For an empty name, an unknown kind, no levels, duplicate labels, a ``missing`` or ``na``
            label that is not a level, or a numeric column without one value per level.
        """
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"column names must be non-empty strings, got {self.name!r}")
        if self.kind not in KINDS:
            raise SchemaError(f"column {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.size < 1:
            raise SchemaError(f"column {self.name!r}: needs at least one level")
        if len(set(self.labels)) < len(self.labels):
            dup = sorted({x for x in self.labels if self.labels.count(x) > 1})
            raise SchemaError(f"column {self.name!r}: duplicate labels {first_few(dup)}")
        if self.missing is not None and self.missing not in self.labels:
            raise SchemaError(f"column {self.name!r}: missing label {self.missing!r} is not a level")
        if self.na is not None and self.na not in self.labels:
            raise SchemaError(f'column {self.name!r}: "na" label {self.na!r} is not a level')
        e, known = self.empty, (set(self.labels) if self.empty else set())  # a set: cost ~ len(e), not x size
        if not (all(isinstance(x, str) and x in known for x in e) and len(set(e)) == len(e) < self.size):
            raise SchemaError(f'column {self.name!r}: "empty" must list distinct levels, not all: {first_few(e)}')
        if self.kind == "numeric":
            if self.values is None or len(self.values) != self.size:
                raise SchemaError(f"column {self.name!r}: numeric column needs one value per level")
        if self.unit is not None:
            if self.kind != "numeric" or self.unit not in TIME_UNITS:
                raise SchemaError(
                    f'column {self.name!r}: "unit" must be one of {TIME_UNITS} on a numeric column, got {self.unit!r}'
                )
            if self.bounds is None or not on_axis(self.bounds, self.unit):
                axis = (
                    "00:00..24:00 (minutes since midnight, 0..1440)"
                    if self.unit == "time"
                    else "0001-01-01..9999-12-31 (days since 1970-01-01)"
                )
                raise SchemaError(f"column {self.name!r}: a {self.unit} column's range must lie within {axis}")
        if self.within is not None:
            if not self.is_binned:
                raise SchemaError(f'column {self.name!r}: "within" applies to binned numeric columns only')
            self.within.check(self.name, list(self.edges))

    # ----------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        """The column as a schema-file entry (the inverse of :meth:`from_dict`).

        Returns
        -------
        dict
            JSON-ready; numeric values that are whole numbers are written as integers.
        """
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
            if self.unit is not None:
                d["unit"] = self.unit
            if self.within is not None:
                d["within"] = self.within.to_dict()
            d = {k: (int_if_whole(v) if k in ("edges", "values", "bounds") else v) for k, v in d.items()}
        if self.missing is not None:
            d["missing"] = self.missing
        if self.na is not None and self.na != self.missing:
            d["na"] = self.na
        if self.empty:
            d["empty"] = list(self.empty)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Column:
        """A column from a schema-file entry (validated).

        Parameters
        ----------
        d : dict
            One entry of a schema file's ``"columns"`` list.

        Returns
        -------
        Column

        Raises
        ------
        SchemaError
            For an invalid entry.
        """
        col = cls._from_dict(d)
        if d.get("within") is not None:
            col.with_within(Within.from_dict(col.name, d["within"]))
        na = d.get("na")
        if na is not None:
            if not isinstance(na, str):
                raise SchemaError(f'column {col.name!r}: "na" must be a level label (a string)')
            col.with_na(na)
        if not isinstance(d.get("empty", []), list):
            raise SchemaError(f'column {col.name!r}: "empty" must be a list of level labels')
        return col.with_empty(d.get("empty", []))

    @classmethod
    def _from_dict(cls, d: Any) -> Column:
        if not isinstance(d, dict):
            raise SchemaError(f"each column must be a JSON object, got {d!r}")
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise SchemaError(f'column without a valid "name": {d!r}')
        kind = d.get("kind")
        if kind not in KINDS:
            raise SchemaError(f'column {name!r}: "kind" must be one of {KINDS}, got {kind!r}')
        allowed = {
            "categorical": {"name", "kind", "levels", "size", "missing", "na", "empty", "description"},
            "numeric": {
                "name",
                "kind",
                "edges",
                "values",
                "bounds",
                "bins",
                "size",
                "clip",
                "labels",
                "missing",
                "na",
                "empty",
                "unit",
                "within",
                "description",
            },
        }[kind]
        extra = sorted(set(d) - allowed)
        if extra:
            raise SchemaError(f"column {name!r}: unknown keys {extra} for a {kind} column")
        missing = d.get("missing")
        if kind == "categorical":
            if ("levels" in d) == ("size" in d):
                raise SchemaError(f'column {name!r}: give exactly one of "levels" or "size"')
            if "size" in d:
                if missing is not None:
                    raise SchemaError(f'column {name!r}: "missing" needs explicit "levels"')
                return cls.coded(name, d["size"])
            levels = d["levels"]
            if not isinstance(levels, list):
                raise SchemaError(f'column {name!r}: "levels" must be a list')
            odd = [v for v in levels if isinstance(v, bool) or not isinstance(v, (str, int, float))]
            if odd:
                raise SchemaError(f"column {name!r}: levels must be strings or numbers, got {first_few(odd)}")
            return cls.categorical(name, levels, missing=missing)
        # numeric
        forms = [k for k in ("edges", "bins", "size") if k in d]
        unit = d.get("unit")
        if unit is not None:
            if unit not in TIME_UNITS:
                raise SchemaError(f'column {name!r}: "unit" must be one of {TIME_UNITS}, got {unit!r}')
            if "size" in d:
                raise SchemaError(f'column {name!r}: "unit" does not apply to ordinal codes ("size")')
            d = schema_entry_on_axis(name, d)
        if "size" in d:
            if len(d) - ("description" in d) != 3:
                raise SchemaError(f'column {name!r}: "size" (ordinal codes) takes no other keys')
            return cls.ordinal(name, d["size"])
        if len(forms) > 1:
            raise SchemaError(f'column {name!r}: give only one of "edges" or "bins"')
        bounds = d.get("bounds")
        if bounds is not None:
            if (
                not isinstance(bounds, list)
                or len(bounds) != 2
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in bounds)
                or not bounds[0] <= bounds[1]
            ):
                raise SchemaError(f'column {name!r}: "bounds" must be [low, high] with low <= high')
        labels = d.get("labels")
        if labels is not None and (not isinstance(labels, list) or not all(isinstance(x, str) for x in labels)):
            raise SchemaError(f'column {name!r}: "labels" must be a list of strings')
        if "bins" in d:
            bins = d["bins"]
            if bounds is None:
                raise SchemaError(f'column {name!r}: "bins" needs "bounds"')
            if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
                raise SchemaError(f'column {name!r}: "bins" must be a positive integer')
            if bins > MAX_LEVELS:
                raise SchemaError(f'column {name!r}: "bins" {bins} is more than {MAX_LEVELS}')
            if not bounds[0] < bounds[1]:
                raise SchemaError(f'column {name!r}: "bins" needs bounds [low, high] with low < high')
            if "clip" in d and d["clip"] is not True:
                raise SchemaError(f"column {name!r}: binned columns always clip to their edges")
            edges = np.linspace(bounds[0], bounds[1], bins + 1).tolist()
            return cls.binned(name, edges, d.get("values"), missing, labels, unit=unit)
        if "edges" in d:
            if not isinstance(d["edges"], list):
                raise SchemaError(f'column {name!r}: "edges" must be a list')
            col = cls.binned(name, d["edges"], d.get("values"), missing, labels, unit=unit)
            if bounds is not None and tuple(float(x) for x in bounds) != col.bounds:
                raise SchemaError(
                    f'column {name!r}: "bounds" {bounds} must equal the outer edges '
                    f"[{format_number(col.bounds[0])}, {format_number(col.bounds[1])}]"
                )
            if "clip" in d and d["clip"] is not True:
                raise SchemaError(f"column {name!r}: binned columns always clip to their edges")
            return col
        if "values" in d:
            if not isinstance(d["values"], list):
                raise SchemaError(f'column {name!r}: "values" must be a list')
            clip = d.get("clip", True)
            if not isinstance(clip, bool):
                raise SchemaError(f'column {name!r}: "clip" must be true or false')
            col = cls.levels(name, d["values"], missing, labels, clip=clip, unit=unit)
            if bounds is not None and tuple(float(x) for x in bounds) != col.bounds:
                raise SchemaError(
                    f'column {name!r}: "bounds" {bounds} must equal [min, max] of the values '
                    f"[{format_number(col.bounds[0])}, {format_number(col.bounds[1])}]"
                )
            return col
        raise SchemaError(f'column {name!r}: a numeric column needs "edges", "bins" + "bounds", "values" or "size"')


def _check_size(name: str, size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise SchemaError(f"column {name!r}: domain size must be a positive integer, got {size!r}")
    if size > MAX_LEVELS:
        raise SchemaError(
            f"column {name!r}: domain size {size} is more than {MAX_LEVELS} levels; group or bin the column"
        )
    return int(size)
