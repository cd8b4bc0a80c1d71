"""Reading schema files: a full ddssp schema, or a private-pgm / hd-datasets domain file."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

from ddssp.data.columns import Column, _few
from ddssp.data.schema import FORMAT, Schema
from ddssp.errors import SchemaError


class DomainKindsWarning(UserWarning):
    """A domain file was loaded without saying which columns are categorical."""


def schema_from_domain(domain: dict[str, int], categorical: list[str] | None = None) -> "Schema":
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
    return Schema(cols, source="domain")


def load_schema(path: str | os.PathLike, categorical: list[str] | None = None) -> Schema:
    """Read a schema file: a full ddssp schema (``"format": "ddssp-schema/1"``) or a private-pgm /
    hd-datasets domain file ``{"attr": size, ...}`` (see :func:`schema_from_domain` for
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
            return schema_from_domain(d, categorical=categorical)
    except SchemaError as exc:
        raise SchemaError(f"schema file {p}: {exc}") from None
    raise SchemaError(
        f"schema file {p} is neither a ddssp schema (with \"format\": \"{FORMAT}\") nor a domain file "
        "({\"column\": size, ...})"
    )
