"""Readers of data dictionaries as codebooks of per-column hints (:mod:`ddssp.data.codebook`): a
Frictionless Table Schema, a NIST-style JSON codebook (as the CRC Diverse Communities
``data_dictionary.json``), or ddssp's own codebook file; :func:`load_codebook` tells them apart by
their keys. Nothing here reads data.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ddssp.data.codebook import CODEBOOK_FORMAT, Codebook, ColumnHint, _is_code, _is_num, _number
from ddssp.data.columns import INFER_MISSING_LABEL
from ddssp.data.values import format_number
from ddssp.errors import SchemaError

__all__ = ["codebook_kind", "from_frictionless", "from_nist", "load_codebook"]


#: Frictionless field types read as numbers; "integer" and "year" are whole
_FL_NUMERIC = {"integer": True, "year": True, "number": None}
#: Frictionless field types read as time axes
_FL_DATES = {"date", "datetime", "time"}


def from_frictionless(d: dict, source: str = "codebook") -> Codebook:
    """Hints from a Frictionless Table Schema (``{"fields": [...], "missingValues": [...]}``).

    Per field: ``constraints.enum`` (or, Table Schema v2, ``categories``: values or ``{"value",
    "label"}`` objects) gives its levels (categorical codes; a numeric type keeps them as labels too); an ``integer`` / ``number`` / ``year`` field with ``constraints.minimum`` and
    ``maximum`` gives bounds (whole for integer and year), with one of them or none only its kind;
    ``date`` / ``datetime`` / ``time`` declare a time axis, ``string`` and ``boolean`` a categorical
    column. A field not ``constraints.required`` may be missing: a declared column gets a missing
    level, labelled by the first non-empty marker of ``missingValues`` (the field's own, else the
    schema's), else ``"<missing>"`` (empty cells, written back empty). Other types (``any``,
    ``object``, ...) declare nothing.

    Parameters
    ----------
    d : dict
        The parsed JSON.
    source : str
        The file, for messages.

    Returns
    -------
    Codebook

    Raises
    ------
    SchemaError
        For a malformed schema.
    """
    fields = d.get("fields")
    if not isinstance(fields, list):
        raise SchemaError(f'{source}: a Frictionless Table Schema needs a "fields" list')
    top = _markers(d.get("missingValues", [""]), source)
    hints = []
    for f in fields:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"]:
            raise SchemaError(f'{source}: each field must be an object with a "name", got {str(f)[:80]}')
        name, ftype = f["name"], f.get("type", "string")
        where = f"{source} {name!r}"
        cons = f.get("constraints", {}) or {}
        if not isinstance(cons, dict):
            raise SchemaError(f'{where}: "constraints" must be an object')
        markers = _markers(f["missingValues"], source) if "missingValues" in f else top
        required = cons.get("required") is True
        missing = None if required else next((m for m in markers if m != ""), INFER_MISSING_LABEL)
        desc = f.get("description") if isinstance(f.get("description"), str) else None
        kw = {"description": desc, "source": source, "strict": False}
        enum = cons.get("enum")
        what = '"constraints.enum"'
        if enum is None and "categories" in f:  # Table Schema v2: values, or {"value", "label"} objects
            what = '"categories"'
            cats = f["categories"]
            enum = [c.get("value") if isinstance(c, dict) else c for c in cats] if isinstance(cats, list) else cats
        if enum is not None:
            if not isinstance(enum, list) or not enum or not all(_is_code(v) for v in enum):
                raise SchemaError(f"{where}: {what} must be a non-empty list of strings or numbers")
            levels = [format_number(float(v)) if _is_num(v) else v for v in enum]
            hints.append(ColumnHint(name, kind="categorical", levels=tuple(levels), missing=missing, **kw))
        elif ftype in _FL_NUMERIC:
            lo, hi = cons.get("minimum"), cons.get("maximum")
            whole = _FL_NUMERIC[ftype]
            if lo is not None and hi is not None:
                if not (_is_num(lo) and _is_num(hi)):
                    raise SchemaError(f'{where}: "constraints.minimum" and "maximum" must be numbers')
                hints.append(ColumnHint(name, kind="numeric", bounds=(lo, hi), whole=whole, missing=missing, **kw))
            else:
                hints.append(ColumnHint(name, kind="numeric", whole=whole, **kw))
        elif ftype in _FL_DATES:
            hints.append(ColumnHint(name, kind="dates", **kw))
        elif ftype in ("string", "boolean"):
            hints.append(ColumnHint(name, kind="categorical", **kw))
        elif desc is not None:
            hints.append(ColumnHint(name, **kw))
    return Codebook(tuple(hints))


def _markers(value: Any, source: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaError(f'{source}: "missingValues" must be a list of strings')
    return list(value)


def from_nist(d: dict, source: str = "codebook") -> Codebook:
    """Hints from a NIST-style JSON codebook (``{column: {"description", "values": {...}}}``, as the
    CRC Diverse Communities ``data_dictionary.json``).

    ``values`` maps codes to meanings and may hold ``"min"`` and ``"max"``. With a range, the column is
    numeric: codes that are numbers widen the bounds (NOC's ``0`` below 1..19, POVPIP's ``501`` above
    0..500), the codes that are not numbers (``N``) are its missing marker, and the numbers are
    whole when the range and codes are. Without a range, the codes are the levels of a categorical
    column; when some codes are numbers, a code that is not a number (``N``, not applicable) is its
    missing level. A column without ``values`` declares nothing.

    Parameters
    ----------
    d : dict
        The parsed JSON.
    source : str
        The file, for messages.

    Returns
    -------
    Codebook

    Raises
    ------
    SchemaError
        For a malformed entry.
    """
    hints = []
    for name, entry in d.items():
        where = f"{source} {name!r}"
        if not isinstance(entry, dict):
            raise SchemaError(f'{where}: each column must be an object with "values" and/or "description"')
        desc = entry.get("description") if isinstance(entry.get("description"), str) else None
        kw = {"description": desc, "source": source, "strict": False}
        values = entry.get("values")
        if values is None:
            hints.append(ColumnHint(name, **kw))
            continue
        if isinstance(values, list):
            values = {str(v): "" for v in values}
        if not isinstance(values, dict) or not values:
            raise SchemaError(f'{where}: "values" must be an object of codes (and "min" / "max")')
        codes = [k for k in values if k not in ("min", "max")]
        nums = {c: _number(c) for c in codes}
        text = [c for c in codes if nums[c] is None]
        if ("min" in values) != ("max" in values):
            raise SchemaError(f'{where}: give both "min" and "max", or neither')
        if "min" in values:
            lo, hi = values["min"], values["max"]
            if not (_is_num(lo) and _is_num(hi)) or not lo < hi:
                raise SchemaError(f'{where}: "min" and "max" must be numbers with min < max')
            inside = [x for x in nums.values() if x is not None]
            bounds = (min([lo, *inside]), max([hi, *inside]))
            whole = all(float(x).is_integer() for x in (lo, hi, *inside)) and not isinstance(lo, float)
            hints.append(
                ColumnHint(name, kind="numeric", bounds=bounds, whole=whole, missing=text[0] if text else None, **kw)
            )
            continue
        if text and len(text) < len(codes):  # numbered codes with a not-applicable code (N)
            levels = [c for c in codes if nums[c] is not None]
            hints.append(ColumnHint(name, kind="categorical", levels=tuple(levels), missing=text[0], **kw))
        else:
            hints.append(ColumnHint(name, kind="categorical", levels=tuple(codes), **kw))
    return Codebook(tuple(hints))


def codebook_kind(d: Any) -> str | None:
    """Which dictionary format a parsed JSON file is: ``"ddssp"`` (a ddssp codebook file),
    ``"frictionless"`` (a Table Schema), ``"nist"`` (a NIST-style codebook), or None.

    Parameters
    ----------
    d : Any
        The parsed JSON.

    Returns
    -------
    str or None
    """
    if not isinstance(d, dict) or not d:
        return None
    if d.get("format") == CODEBOOK_FORMAT:
        return "ddssp"
    if isinstance(d.get("fields"), list):
        return "frictionless"
    if all(isinstance(v, dict) and ("values" in v or "description" in v) for v in d.values()):
        return "nist"
    return None


def load_codebook(path: str | os.PathLike) -> Codebook:
    """Read a data dictionary as hints: a Frictionless Table Schema, a NIST-style codebook, or a ddssp
    codebook file (``"format": "ddssp-codebook/1"``); the format is told from the file's keys.

    Parameters
    ----------
    path : str or path-like
        The JSON file.

    Returns
    -------
    Codebook
        Its hints (``strict`` False: columns the data lacks are ignored).

    Raises
    ------
    SchemaError
        For a missing or unreadable file, invalid JSON, or a dictionary of none of those formats.
    """
    p = Path(path)
    if not p.is_file():
        raise SchemaError(f"codebook file {p} not found" if not p.exists() else f"codebook path {p} is not a file")
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SchemaError(f"codebook file {p} is not text (expected JSON)") from None
    except OSError as exc:
        raise SchemaError(f"cannot read codebook file {p}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"codebook file {p} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    kind = codebook_kind(d)
    source = f"codebook {p.name}"
    if kind == "ddssp":
        cols = d.get("columns")
        if not isinstance(cols, list):
            raise SchemaError(f'{source}: "columns" must be a list')
        return Codebook(tuple(ColumnHint.from_dict(c, source) for c in cols))
    if kind == "frictionless":
        return from_frictionless(d, source)
    if kind == "nist":
        return from_nist(d, source)
    raise SchemaError(
        f"codebook file {p} is none of the formats read: a Frictionless Table Schema "
        '({"fields": [...]}), a NIST-style codebook ({"column": {"values": {...}}}) or a ddssp '
        f'codebook ("format": "{CODEBOOK_FORMAT}")'
    )
