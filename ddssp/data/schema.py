"""The schema: an ordered list of columns, and its JSON file.

A :class:`Schema` is an ordered list of :class:`~ddssp.data.columns.Column` (the column model and
its kinds are documented there). ``encode`` / ``decode`` map a DataFrame to integer codes and back
(:mod:`ddssp.data.encoding`).

The schema file (JSON, ``"format": "ddssp-schema/1"``) is documented in the README; a private-pgm /
hd-datasets domain file ``{"attr": size, ...}`` is accepted too (:mod:`ddssp.data.schemafile`).

Nothing here is private: levels, bounds and edges must be public knowledge. :meth:`Schema.infer`
(columns from :mod:`ddssp.data.draft`) reads them from the data and is for drafting only (the ``ddssp schema``
command says so loudly).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.columns import Column
from ddssp.data.domainfile import domain_columns
from ddssp.data.draft import DRAFT_STAMP, draft_columns
from ddssp.data.encoding import decode, encode
from ddssp.data.values import first_few
from ddssp.errors import SchemaError
from ddssp.types import Domain

FORMAT = "ddssp-schema/1"
__all__ = ["DRAFT_STAMP", "FORMAT", "Schema", "draft_schema"]


class Schema:
    """An ordered list of columns (see the module docstring): their kinds, levels, bins and bounds.

    Parameters
    ----------
    columns : iterable of Column
        The columns, in order.
    source : str
        "schema" (a ddssp schema), "domain" (from a domain file: codes already in the data) or
        "inferred" (drafted from data).
    draft : str, optional
        The draft stamp of a schema drafted from the data without privacy and not reviewed.
    discovery : dict, optional
        For a schema discovered under DP: its privacy record.
    """

    def __init__(
        self, columns: Iterable[Column], source: str = "schema", draft: str | None = None, discovery: dict | None = None
    ):
        self.columns: list[Column] = list(columns)
        #: the draft stamp (a schema drafted from the data without privacy and not reviewed), or None
        self.draft = draft
        #: for a schema discovered under DP (``ddssp schema --eps``): its privacy record
        #: {"eps", "delta", "rho_budget", "delta_budget", "entries": [ledger entries]}, or None
        self.discovery = discovery
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
        """The column names, in order."""
        return [c.name for c in self.columns]

    @property
    def domain(self) -> dict[str, int]:
        """``{column: number of levels}``, in order."""
        return {c.name: c.size for c in self.columns}

    @property
    def categorical(self) -> list[str]:
        """The names of the categorical columns, in order."""
        return [c.name for c in self.columns if c.kind == "categorical"]

    @property
    def numeric(self) -> list[str]:
        """The names of the numeric columns, in order."""
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
        """The column called ``name``.

        Parameters
        ----------
        name : str
            A column name.

        Returns
        -------
        Column

        Raises
        ------
        SchemaError
            When the schema has no such column.
        """
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(f"column {name!r} is not in the schema (columns: {first_few(self.names, 20)})") from None

    def replace_column(self, col: Column) -> None:
        """Put ``col`` in place of the column of the same name (changes the schema in place).

        Parameters
        ----------
        col : Column
            The new column.

        Raises
        ------
        SchemaError
            When the schema has no column of that name.
        """
        self.column(col.name)  # refuses a name the schema lacks
        i = self.names.index(col.name)
        self.columns[i] = col
        self._by_name[col.name] = col

    def subset(self, names: Iterable[str]) -> Schema:
        """A schema of some of the columns, in the order given (same source, draft stamp and discovery record).

        Parameters
        ----------
        names : iterable of str
            Column names.

        Returns
        -------
        Schema

        Raises
        ------
        SchemaError
            For a name not in the schema.
        """
        return Schema([self.column(n) for n in names], source=self.source, draft=self.draft, discovery=self.discovery)

    # ----------------------------------------------------------------- encode / decode
    def encode(self, df: pd.DataFrame) -> pd.DataFrame:
        """Integer codes of a table of raw values; see :func:`ddssp.data.encoding.encode`.

        Parameters
        ----------
        df : pandas.DataFrame
            Raw values, one column per schema column.

        Returns
        -------
        pandas.DataFrame
            Integer codes (int64), columns in schema order, same index as ``df``.
        """
        return encode(self, df)

    def decode(
        self,
        codes: pd.DataFrame | np.ndarray,
        *,
        rng: np.random.Generator | None = None,
        strata: Mapping[str, Sequence[str]] | None = None,
    ) -> pd.DataFrame:
        """Labels and representative values from integer codes; see :func:`ddssp.data.encoding.decode`.

        Parameters
        ----------
        codes : pandas.DataFrame or numpy.ndarray
            Integer codes.
        rng : numpy.random.Generator, optional
            With a generator, a binned numeric column with a within-bin distribution gets values
            drawn inside each bin by it (synthetic rows); without, every bin decodes to its
            representative value.
        strata : mapping, optional
            ``{column: columns}``: that column's within-bin values are drawn balanced over the
            rows' codes of those columns (see :func:`ddssp.data.encoding.decode`).

        Returns
        -------
        pandas.DataFrame
        """
        return decode(self, codes, rng=rng, strata=strata)

    # ----------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        """The schema as a JSON-ready dict (``"format": "ddssp-schema/1"``).

        Returns
        -------
        dict
        """
        d: dict[str, Any] = {"format": FORMAT}
        if self.draft is not None:
            d["draft"] = self.draft
        if self.discovery is not None:
            d["discovery"] = self.discovery
        d["columns"] = [c.to_dict() for c in self.columns]
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Schema:
        """A schema from a full ddssp schema dict (``"format": "ddssp-schema/1"``).

        Parameters
        ----------
        d : dict
            The parsed schema file.

        Returns
        -------
        Schema

        Raises
        ------
        SchemaError
            For an unknown format, unknown top-level keys, no columns, or an invalid column.
        """
        if not isinstance(d, dict):
            raise SchemaError("a schema must be a JSON object")
        fmt = d.get("format")
        if fmt != FORMAT:
            raise SchemaError(f"unknown schema format {fmt!r}; expected {FORMAT!r}")
        extra = sorted(set(d) - {"format", "columns", "description", "draft", "discovery"})
        if extra:
            raise SchemaError(f"unknown top-level schema keys {extra}")
        cols = d.get("columns")
        if not isinstance(cols, list) or not cols:
            raise SchemaError('a schema needs a non-empty "columns" list')
        draft = d.get("draft")
        if draft is not None and not isinstance(draft, str):
            raise SchemaError('"draft" must be a string (the draft stamp)')
        disc = d.get("discovery")
        if disc is not None and not (isinstance(disc, dict) and isinstance(disc.get("entries"), list)):
            raise SchemaError('"discovery" must be an object with a list of ledger "entries"')
        return cls([Column.from_dict(c) for c in cols], draft=draft, discovery=disc)

    def to_json(self) -> str:
        """The schema as JSON text, one line per column (easy to review and diff).

        Returns
        -------
        str
        """
        cols = ",\n".join("    " + json.dumps(c.to_dict(), allow_nan=False, ensure_ascii=False) for c in self.columns)
        head = f'  "format": {json.dumps(FORMAT)},\n'
        if self.draft is not None:
            head += f'  "draft": {json.dumps(self.draft)},\n'
        if self.discovery is not None:
            head += f'  "discovery": {json.dumps(self.discovery, allow_nan=False)},\n'
        return f'{{\n{head}  "columns": [\n{cols}\n  ]\n}}\n'

    def save(self, path: str | os.PathLike, force: bool = False) -> Path:
        """Write the schema as JSON, atomically.

        Parameters
        ----------
        path : str or path-like
            The output file.
        force : bool
            Replace an existing file.

        Returns
        -------
        pathlib.Path
            The path written.

        Raises
        ------
        OutputExistsError
            For an existing file (unless ``force``) or a path that cannot be written.
        """
        from ddssp.data.fileio import atomic_write, check_output_path

        out = check_output_path(path, force=force)
        text = self.to_json()
        with atomic_write(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        return out

    # ----------------------------------------------------------------- other sources
    @classmethod
    def from_domain(cls, domain: Domain, categorical: list[str] | None = None, _stacklevel: int = 2) -> Schema:
        """A schema for a private-pgm / hd-datasets domain file: integer codes ``0..m-1`` are already in the data.

        Columns listed in ``categorical`` get labels ``"0".."m-1"``; the others are numeric with
        value = code (ordinal) and bounds ``(0, m-1)``, never clipped (a code ``>= m`` is an error).

        Parameters
        ----------
        domain : dict
            ``{column: size}``.
        categorical : list of str, optional
            The categorical columns. With None every column is categorical (the conservative one-hot
            default: nothing is assumed about the order of codes) and a
            :class:`~ddssp.data.domainfile.DomainKindsWarning` says so.

        Returns
        -------
        Schema
        """
        return cls(domain_columns(domain, categorical, stacklevel=_stacklevel + 1), source="domain")

    @classmethod
    def infer(
        cls,
        df: pd.DataFrame,
        bins: int = 10,
        categorical: list[str] | None = None,
        max_categorical_levels: int = 100,
    ) -> Schema:
        """Draft a schema from data. NOT PRIVATE; see :func:`draft_schema`.

        Parameters
        ----------
        df : pandas.DataFrame
            The raw table.
        bins : int
            See :func:`draft_schema`.
        categorical : list of str, optional
            See :func:`draft_schema`.
        max_categorical_levels : int
            See :func:`draft_schema`.

        Returns
        -------
        Schema
        """
        return draft_schema(df, bins=bins, categorical=categorical, max_categorical_levels=max_categorical_levels)


def draft_schema(
    df: pd.DataFrame,
    bins: int = 10,
    categorical: list[str] | None = None,
    max_categorical_levels: int = 100,
) -> Schema:
    """Draft a schema from data. NOT PRIVATE.

    Levels, bounds and edges come from the data and must be reviewed or replaced with public
    knowledge before any release.

    Parameters
    ----------
    df : pandas.DataFrame
        The raw table.
    bins : int
        Numeric columns with at most ``bins`` distinct values get explicit levels; others get
        ``bins`` equal-width bins between the observed min and max.
    categorical : list of str, optional
        Columns to make categorical; columns with non-numeric values are categorical anyway (levels
        sorted, numbers in numeric order).
    max_categorical_levels : int
        A categorical column with more distinct values is refused.

    Returns
    -------
    Schema
        Carries the draft stamp. Columns with empty cells get a missing level ``"<missing>"``.
    """
    cols = draft_columns(df, bins=bins, categorical=categorical, max_categorical_levels=max_categorical_levels)
    return Schema(cols, source="inferred", draft=DRAFT_STAMP)
