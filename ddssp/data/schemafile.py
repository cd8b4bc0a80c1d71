"""Reading schema files: a full ddssp schema, or a private-pgm / hd-datasets domain file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ddssp.data.domainfile import DomainKindsWarning
from ddssp.data.schema import FORMAT, Schema
from ddssp.errors import SchemaError
from ddssp.types import Domain

__all__ = ["DomainKindsWarning", "load_schema", "schema_from_domain"]


def schema_from_domain(domain: Domain, categorical: list[str] | None = None) -> Schema:
    """A schema for a private-pgm / hd-datasets domain file; see :meth:`Schema.from_domain`.

    Parameters
    ----------
    domain : dict
        ``{column: size}``: the data holds integer codes 0..size-1.
    categorical : list of str, optional
        Columns to treat as categorical (one-hot); the rest become ordinal numeric codes. Without
        it every column is categorical, with a warning.

    Returns
    -------
    Schema
    """
    return Schema.from_domain(domain, categorical=categorical, _stacklevel=3)


def load_schema(path: str | os.PathLike, categorical: list[str] | None = None) -> Schema:
    """Read a schema file: a full ddssp schema (``"format": "ddssp-schema/1"``) or a private-pgm /
    hd-datasets domain file ``{"attr": size, ...}``.

    Parameters
    ----------
    path : str or path-like
        The JSON file.
    categorical : list of str, optional
        For a domain file only (see :func:`schema_from_domain`); must be None for a full schema,
        whose kinds are in the file.

    Returns
    -------
    Schema

    Raises
    ------
    SchemaError
        For a missing file, a directory, invalid JSON, or an invalid schema.
    """
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
    from ddssp.data.dictionary import codebook_kind

    kind = codebook_kind(d)
    if kind is not None:
        what = {
            "ddssp": "a ddssp codebook",
            "frictionless": "a Frictionless Table Schema",
            "nist": "a NIST-style codebook",
        }
        raise SchemaError(
            f"schema file {p} is {what[kind]} (public knowledge of some columns, not a schema): "
            "pass it with --codebook (library: DiscoveryOptions(hints=load_codebook(path)))"
        )
    try:
        if isinstance(d, dict) and "format" in d:
            if categorical is not None:
                raise SchemaError(
                    f"schema file {p} is a full ddssp schema: the column kinds are in the file; "
                    "do not pass categorical columns"
                )
            return Schema.from_dict(d)
        if isinstance(d, dict) and d and all(isinstance(v, int) and not isinstance(v, bool) for v in d.values()):
            return schema_from_domain(d, categorical=categorical)
    except SchemaError as exc:
        raise SchemaError(f"schema file {p}: {exc}") from None
    raise SchemaError(
        f'schema file {p} is neither a ddssp schema (with "format": "{FORMAT}") nor a domain file '
        '({"column": size, ...})'
    )
