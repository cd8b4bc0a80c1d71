"""Public knowledge of single columns: a codebook of per-column hints, read from a data dictionary
(Frictionless Table Schema, a NIST-style JSON codebook, or ddssp's own codebook file; the readers are
in :mod:`ddssp.data.dictionary`) or given on the command line.

A hint (:class:`ColumnHint`) says part of what a column is: its kind, its levels, its bounds, whether
its numbers are whole, its missing marker. What a hint declares is public and costs nothing; what it
leaves open is discovered under DP (:func:`ddssp.data.discovery.discover`). A hint that declares the
whole column (levels; or whole-number bounds over at most ``max_levels`` values) becomes a declared
column (:meth:`ColumnHint.column`) and is not discovered at all; a hint of bounds alone leaves the bins
to discovery, inside those bounds, with no budget spent on finding the range
(:mod:`ddssp.data.discovery.bounded`).

Nothing here reads data.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ddssp.data.columns import MAX_LEVELS, Column
from ddssp.data.values import as_label, first_few, format_number
from ddssp.errors import SchemaError

__all__ = [
    "CODEBOOK_FORMAT",
    "Codebook",
    "ColumnHint",
    "parse_bounds",
    "parse_levels",
    "parse_missing",
]

#: the ``"format"`` of ddssp's own codebook file (written by ``ddssp schema --from-dictionary``)
CODEBOOK_FORMAT = "ddssp-codebook/1"

#: kinds a hint may declare (``"dates"``: a time axis, as ``--dates``)
HINT_KINDS = ("categorical", "numeric", "dates")

#: a hint's quantile-bin fields (:class:`ColumnHint`: ``bins`` and what refines it)
QUANTILE_KEYS = ("bins", "cuts", "step", "points")

#: whole-number bounds over at most this many values become ordered levels (as discovery's default)
DEFAULT_HINT_LEVELS = 32


@dataclass(frozen=True)
class ColumnHint:
    """What is publicly known of one column (every field optional).

    Parameters
    ----------
    name : str
        The column.
    kind : {"categorical", "numeric", "dates"}, optional
        The declared kind.
    levels : tuple of str, optional
        The declared labels, in order (categorical codes or labels): the schema's labels exactly,
        plus the missing level when one is declared.
    bounds : tuple of float, optional
        ``(low, high)``: numeric; values outside are clipped into them.
    whole : bool, optional
        The numbers are whole (None: not declared; discovery decides from noisy counts).
    missing : str, optional
        The label of a missing / not-applicable level (such as NIST's ``N``): cells holding it, empty
        cells and values not among the levels are coded to it.
    description : str, optional
        What the column is (kept in a codebook file; never used to decide anything).
    bins : int, optional
        With bounds: the column's bins are this many equal-frequency bins of the noisy counts, each
        grid cell kept whole in the bin of its middle row (quantile bins, as a percentile ranking
        with ties makes them), instead of discovery's own count and cut.
    cuts : tuple of float, optional
        With ``bins``: edges every release keeps (the ages a consistency rule names), besides the
        equal-frequency ones.
    step : float, optional
        With ``bins``, whole numbers: the numbers heap at multiples of ``step`` (incomes reported to
        the thousand), so the counting grid's cells end just above them and a heap stays whole
        with the values below it.
    points : tuple of float, optional
        With ``bins``, whole numbers: values that are bins of their own and take no share of the
        equal-frequency bins (a top-code such as 501, "above five times the poverty line").
    source : str
        Where the hint comes from (a flag such as ``--bounds``, or a file), for messages.
    strict : bool
        Refuse the hint when the data has no such column (a hint given by hand); a dictionary's
        columns that the data lacks are ignored.
    """

    name: str
    kind: str | None = None
    levels: tuple[str, ...] | None = None
    bounds: tuple[float, float] | None = None
    whole: bool | None = None
    missing: str | None = None
    description: str | None = None
    bins: int | None = None
    cuts: tuple[float, ...] | None = None
    step: float | None = None
    points: tuple[float, ...] | None = None
    source: str = "DiscoveryOptions.hints"
    strict: bool = True

    def __post_init__(self) -> None:
        where = f"{self.source} {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"{self.source}: a hint needs a column name, got {self.name!r}")
        if self.kind is not None and self.kind not in HINT_KINDS:
            raise SchemaError(f"{where}: kind must be one of {', '.join(HINT_KINDS)}, got {self.kind!r}")
        if self.levels is not None:
            levels = tuple(as_label(v) for v in self.levels)
            if not levels:
                raise SchemaError(f"{where}: needs at least one level")
            if len(set(levels)) < len(levels):
                dup = sorted({x for x in levels if levels.count(x) > 1})
                raise SchemaError(f"{where}: duplicate levels {first_few(dup)}")
            if len(levels) > MAX_LEVELS:
                raise SchemaError(f"{where}: {len(levels)} levels is more than {MAX_LEVELS}")
            object.__setattr__(self, "levels", levels)
        if self.bounds is not None:
            try:
                lo, hi = (float(v) for v in self.bounds)
            except (TypeError, ValueError):
                raise SchemaError(f"{where}: bounds must be two numbers, got {self.bounds!r}") from None
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise SchemaError(
                    f"{where}: bounds must be finite with low < high, got {format_number(lo)}:{format_number(hi)}"
                )
            if self.kind in ("categorical", "dates"):
                raise SchemaError(f"{where}: bounds declare a numeric column, but the kind given is {self.kind}")
            object.__setattr__(self, "bounds", (lo, hi))
        if self.whole is not None and not isinstance(self.whole, bool):
            raise SchemaError(f"{where}: whole must be true or false, got {self.whole!r}")
        if self.missing is not None:
            object.__setattr__(self, "missing", as_label(self.missing))
        if self.levels is not None and self.bounds is not None:
            raise SchemaError(f"{where}: give levels or bounds, not both")
        self._check_quantiles(where)

    def _check_quantiles(self, where: str) -> None:
        """``bins``, ``cuts``, ``step`` and ``points``: quantile bins inside declared bounds."""
        given = [k for k in QUANTILE_KEYS if getattr(self, k) is not None]
        if not given:
            return
        if self.bins is None:
            raise SchemaError(f'{where}: {", ".join(given)} needs "bins" (the number of equal-frequency bins)')
        if isinstance(self.bins, bool) or not isinstance(self.bins, int) or not 1 <= self.bins <= MAX_LEVELS:
            raise SchemaError(f'{where}: "bins" must be a whole number from 1 to {MAX_LEVELS}, got {self.bins!r}')
        if self.bounds is None:
            raise SchemaError(f'{where}: "bins" needs "bounds" (the bins are cut inside them)')
        lo, hi = self.bounds
        for key in ("cuts", "points"):
            vals = getattr(self, key)
            if vals is None:
                continue
            try:
                vals = tuple(sorted({float(v) for v in vals}))
            except (TypeError, ValueError):
                raise SchemaError(f'{where}: "{key}" must be a list of numbers, got {vals!r}') from None
            bad = [v for v in vals if not (math.isfinite(v) and lo <= v <= hi)]
            if bad:
                raise SchemaError(f'{where}: "{key}" outside the bounds: {first_few([_num(v) for v in bad])}')
            object.__setattr__(self, key, vals)
        if self.step is not None:
            if isinstance(self.step, bool) or not isinstance(self.step, (int, float)) or not self.step > 0:
                raise SchemaError(f'{where}: "step" must be a positive number, got {self.step!r}')
            object.__setattr__(self, "step", float(self.step))
        if (self.step is not None or self.points) and self.whole is not True:
            raise SchemaError(f'{where}: "step" and "points" need whole numbers ("whole": true)')
        if self.step is not None and not float(self.step).is_integer():
            raise SchemaError(f'{where}: "step" of whole numbers must be a whole number, got {_num(self.step)}')
        if self.points and not all(float(v).is_integer() for v in self.points):
            raise SchemaError(f'{where}: "points" of whole numbers must be whole numbers')

    @property
    def complete(self) -> bool:
        """Whether the hint declares the whole column (then it is not discovered)."""
        return self.levels is not None

    def column(self, max_levels: int = DEFAULT_HINT_LEVELS) -> Column | None:
        """The declared column when the hint says all of it, else None (discovery finds the rest).

        Levels make a categorical column (or, declared numeric, ordered numeric levels); whole-number
        bounds over at most ``max_levels`` values make ordered levels, one per whole number.

        Parameters
        ----------
        max_levels : int
            Whole-number bounds over at most this many values become levels.

        Returns
        -------
        Column or None

        Raises
        ------
        SchemaError
            For numeric levels that are not numbers.
        """
        where = f"{self.source} {self.name!r}"
        try:
            if self.levels is not None:
                if self.kind == "numeric":
                    try:
                        values = sorted(float(v) for v in self.levels)
                    except ValueError:
                        raise SchemaError(f"{where}: numeric levels must be numbers, got {self.levels!r}") from None
                    return Column.levels(self.name, values, missing=self.missing)
                return Column.categorical(self.name, self.levels, missing=self.missing)
            if self.bounds is not None and self.whole and self.bins is None:
                lo, hi = math.ceil(self.bounds[0]), math.floor(self.bounds[1])
                if hi >= lo and hi - lo + 1 <= max_levels:
                    return Column.levels(self.name, range(lo, hi + 1), missing=self.missing)
        except SchemaError as exc:
            msg = str(exc)
            raise SchemaError(msg if msg.startswith(where) else f"{where}: {msg}") from None
        return None

    def merged(self, other: ColumnHint) -> ColumnHint:
        """This hint with the fields ``other`` declares put over it (``other`` wins field by field;
        levels and bounds replace each other).

        Parameters
        ----------
        other : ColumnHint
            The hint given later (a flag over a file).

        Returns
        -------
        ColumnHint
        """
        out = self
        if other.levels is not None:
            out = replace(out, levels=other.levels, bounds=None)
        if other.bounds is not None:
            out = replace(out, bounds=other.bounds, levels=None, kind=None if out.kind == "categorical" else out.kind)
        for name in ("kind", "whole", "missing", "description", *QUANTILE_KEYS):
            if getattr(other, name) is not None:
                out = replace(out, **{name: getattr(other, name)})
        return replace(out, source=other.source, strict=other.strict or self.strict)

    def to_dict(self) -> dict:
        """The hint as an entry of a ddssp codebook file (the inverse of :meth:`from_dict`).

        Returns
        -------
        dict
        """
        d: dict[str, Any] = {"name": self.name}
        if self.kind is not None:
            d["kind"] = self.kind
        if self.levels is not None:
            d["levels"] = list(self.levels)
        if self.bounds is not None:
            d["bounds"] = [_num(self.bounds[0]), _num(self.bounds[1])]
        if self.whole is not None:
            d["whole"] = self.whole
        if self.missing is not None:
            d["missing"] = self.missing
        if self.description is not None:
            d["description"] = self.description
        if self.bins is not None:
            d["bins"] = self.bins
        for key in ("cuts", "points"):
            if getattr(self, key) is not None:
                d[key] = [_num(v) for v in getattr(self, key)]
        if self.step is not None:
            d["step"] = _num(self.step)
        return d

    @classmethod
    def from_dict(cls, d: Any, source: str) -> ColumnHint:
        """A hint from an entry of a ddssp codebook file.

        Parameters
        ----------
        d : dict
            ``{"name", "kind"?, "levels"?, "bounds"?, "whole"?, "missing"?, "description"?}``.
        source : str
            The file, for messages.

        Returns
        -------
        ColumnHint

        Raises
        ------
        SchemaError
            For an entry that is not such an object.
        """
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise SchemaError(f'{source}: each column must be an object with a "name", got {str(d)[:80]}')
        extra = sorted(set(d) - {"name", "kind", "levels", "bounds", "whole", "missing", "description", *QUANTILE_KEYS})
        if extra:
            raise SchemaError(f"{source} {d['name']!r}: unknown keys {extra}")
        levels, bounds = d.get("levels"), d.get("bounds")
        if levels is not None and not (isinstance(levels, list) and all(_is_code(v) for v in levels)):
            raise SchemaError(f'{source} {d["name"]!r}: "levels" must be a list of strings or numbers')
        if bounds is not None and not (
            isinstance(bounds, list) and len(bounds) == 2 and all(_is_num(v) for v in bounds)
        ):
            raise SchemaError(f'{source} {d["name"]!r}: "bounds" must be [low, high]')
        missing, desc = d.get("missing"), d.get("description")
        if missing is not None and not _is_code(missing):
            raise SchemaError(f'{source} {d["name"]!r}: "missing" must be a string')
        return cls(
            d["name"],
            kind=d.get("kind"),
            levels=None if levels is None else tuple(levels),
            bounds=None if bounds is None else tuple(bounds),
            whole=d.get("whole"),
            missing=missing,
            description=desc if isinstance(desc, str) else None,
            bins=d.get("bins"),
            cuts=_num_list(d, "cuts", source),
            step=d.get("step"),
            points=_num_list(d, "points", source),
            source=source,
            strict=False,
        )


@dataclass(frozen=True)
class Codebook:
    """Hints for some columns, by name (:class:`ColumnHint`).

    Parameters
    ----------
    hints : tuple of ColumnHint
        One per column (a later hint of the same column is merged over an earlier one).
    """

    hints: tuple[ColumnHint, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        by: dict[str, ColumnHint] = {}
        for h in self.hints:
            if not isinstance(h, ColumnHint):
                raise SchemaError(f"DiscoveryOptions.hints must hold ColumnHint objects, got {type(h).__name__}")
            by[h.name] = by[h.name].merged(h) if h.name in by else h
        object.__setattr__(self, "hints", tuple(by.values()))

    @classmethod
    def of(cls, value: Any) -> Codebook:
        """A codebook from a Codebook, an iterable of hints, or None (empty).

        Parameters
        ----------
        value : Codebook, iterable of ColumnHint or None

        Returns
        -------
        Codebook
        """
        if value is None:
            return cls()
        if isinstance(value, Codebook):
            return value
        if isinstance(value, ColumnHint):
            return cls((value,))
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise SchemaError(
                f"DiscoveryOptions.hints must be a Codebook or a list of ColumnHint, got {type(value).__name__}"
            )
        return cls(tuple(value))

    def __add__(self, other: Codebook) -> Codebook:
        return Codebook(self.hints + other.hints)

    def __bool__(self) -> bool:
        return bool(self.hints)

    def __len__(self) -> int:
        return len(self.hints)

    def __contains__(self, name: object) -> bool:
        return any(h.name == name for h in self.hints)

    def get(self, name: str) -> ColumnHint | None:
        """The hint of column ``name``, or None.

        Parameters
        ----------
        name : str

        Returns
        -------
        ColumnHint or None
        """
        return next((h for h in self.hints if h.name == name), None)

    def check_names(self, names: Iterable[str]) -> None:
        """Refuse a hint given by hand (``strict``) for a column the data does not have.

        Parameters
        ----------
        names : iterable of str
            The data's columns.

        Raises
        ------
        SchemaError
            Naming the hint's flag and the column.
        """
        names = [str(n) for n in names]
        unknown = [f"{h.source} {h.name!r}" for h in self.hints if h.strict and h.name not in names]
        if unknown:
            raise SchemaError(
                f"column(s) not in the data: {', '.join(unknown)}; the data has "
                f"{', '.join(map(repr, names[:30]))}{' ...' if len(names) > 30 else ''}"
            )

    def to_dict(self) -> dict:
        """The codebook as a ddssp codebook file (``"format": "ddssp-codebook/1"``).

        Returns
        -------
        dict
        """
        return {"format": CODEBOOK_FORMAT, "columns": [h.to_dict() for h in self.hints]}

    def to_json(self) -> str:
        """The codebook file's text: one line per column, so that a review reads it column by column.

        Returns
        -------
        str
        """
        rows = ",\n".join("    " + json.dumps(h.to_dict(), ensure_ascii=False) for h in self.hints)
        return f'{{\n  "format": "{CODEBOOK_FORMAT}",\n  "columns": [\n{rows}\n  ]\n}}\n'


def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_code(v: Any) -> bool:
    return isinstance(v, str) or _is_num(v)


def _number(v: Any) -> float | None:
    """A code as a number, or None when it is not one (such as ``"N"`` or ``"25-00503"``)."""
    if _is_num(v):
        return float(v)
    if isinstance(v, str):
        try:
            x = float(v.strip())
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    return None


# ------------------------------------------------------------------------------------ flags
def _split_hint(text: str, flag: str) -> tuple[str, str]:
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise SchemaError(f"{flag}: expected COLUMN=..., got {text!r}")
    return name, rest


def _hint_per_part(texts: Iterable[str], flag: str, make) -> list[ColumnHint]:
    """One hint per non-blank comma-separated ``COL=VALUE`` part of a flag's values, in order.

    ``make(name, value, part)`` builds it from the column's name, the text after ``=`` and the
    stripped part (for its error message).
    """
    out = []
    for text in texts:
        for part in (p for p in text.split(",") if p.strip()):
            name, value = _split_hint(part, flag)
            out.append(make(name, value, part.strip()))
    return out


def parse_bounds(texts: Iterable[str]) -> list[ColumnHint]:
    """Hints from ``--bounds`` values: ``COL=LO:HI``, several in one value separated by commas.

    Parameters
    ----------
    texts : iterable of str
        The flag's values (the flag may be repeated).

    Returns
    -------
    list of ColumnHint

    Raises
    ------
    SchemaError
        One line naming ``--bounds`` and the bad value.
    """

    def hint(name: str, rng: str, part: str) -> ColumnHint:
        lo, sep, hi = rng.partition(":")
        try:
            bounds = (float(lo), float(hi))
        except ValueError:
            bounds = None
        if not sep or bounds is None:
            raise SchemaError(f"--bounds: expected COLUMN=LOW:HIGH (numbers), got {part!r}")
        return ColumnHint(name, kind="numeric", bounds=bounds, source="--bounds")

    return _hint_per_part(texts, "--bounds", hint)


def parse_levels(texts: Iterable[str]) -> list[ColumnHint]:
    """Hints from ``--levels`` values: ``COL=A,B,C`` (the flag repeated for more columns); a label
    holding a comma is written in double quotes, as in a CSV row.

    Parameters
    ----------
    texts : iterable of str
        The flag's values.

    Returns
    -------
    list of ColumnHint

    Raises
    ------
    SchemaError
        One line naming ``--levels`` and the bad value.
    """
    out = []
    for text in texts:
        name, rest = _split_hint(text, "--levels")
        # CSV quoting lets a label hold a comma: COL="Adult, 1 Egg Stage",Juvenile
        levels = [v.strip() for v in next(csv.reader([rest], skipinitialspace=True), []) if v.strip()]
        if not levels:
            raise SchemaError(f"--levels: expected COLUMN=A,B,... (at least one level), got {text!r}")
        out.append(ColumnHint(name, levels=tuple(levels), source="--levels"))
    return out


def parse_missing(texts: Iterable[str]) -> list[ColumnHint]:
    """Hints from ``--missing`` values: ``COL=LABEL``, several separated by commas: the label of the
    column's missing / not-applicable level (cells holding it and empty cells are coded to it).

    Parameters
    ----------
    texts : iterable of str
        The flag's values.

    Returns
    -------
    list of ColumnHint

    Raises
    ------
    SchemaError
        One line naming ``--missing`` and the bad value.
    """

    def hint(name: str, label: str, part: str) -> ColumnHint:
        if not label.strip():
            raise SchemaError(f"--missing: expected COLUMN=LABEL, got {part!r}")
        return ColumnHint(name, missing=label.strip(), source="--missing")

    return _hint_per_part(texts, "--missing", hint)


def _num_list(d: dict, key: str, source: str) -> tuple[float, ...] | None:
    """A codebook entry's list of numbers (``cuts``, ``points``), or None when it has none."""
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not all(_is_num(x) for x in v):
        raise SchemaError(f'{source} {d["name"]!r}: "{key}" must be a list of numbers')
    return tuple(float(x) for x in v)
