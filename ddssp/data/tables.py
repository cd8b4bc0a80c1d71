"""Reading input tables (CSV or Parquet) with clear errors.

CSV cells are read as text (``dtype=str``); only empty cells are missing (``NA``, ``null`` and the
like stay strings, since they may be real labels). :meth:`ddssp.data.schema.Schema.encode` converts
numeric columns and compares categorical labels as strings, so ``1`` in a CSV and the label ``"1"``
match whether the table came from CSV (text) or Parquet / a DataFrame (numbers).
"""

from __future__ import annotations

import csv
import json
import os
import warnings
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ddssp.errors import DataError

PARQUET_SUFFIXES = (".parquet", ".pq")
NOT_CSV_SUFFIXES = (".json", ".xlsx", ".xls", ".ods", ".zip", ".gz", ".bz2", ".xz", ".pdf", ".npy", ".pkl")


def read_table(
    path: str | os.PathLike,
    *,
    delimiter: str = ",",
    na_values: Sequence[str] = (),
    encoding: str = "utf-8",
    columns: Collection[str] | None = None,
    drop: Collection[str] = (),
) -> pd.DataFrame:
    """Read a CSV (cells as strings) or Parquet file (by suffix).

    Parameters
    ----------
    path : str or path-like
        The table; ``.parquet`` / ``.pq`` are read as Parquet, anything else as CSV.
    delimiter : str
        CSV field delimiter (one character).
    na_values : sequence of str
        CSV markers read as missing, besides the empty cell (e.g. ``?``).
    encoding : str
        CSV text encoding (UTF-8 by default; a BOM is skipped).
    columns, drop : optional
        The caller's column selection (``ReadOptions.columns`` / ``drop``), applied by the caller:
        nested Parquet columns it leaves out are not read and not warned of.

    Returns
    -------
    pandas.DataFrame
        The table; an unnamed header cell gets a name (``column_1``) with a warning, and nested
        Parquet columns (list, struct, map) are not read, with a :class:`NestedColumnsWarning` naming
        those the selection keeps.

    Raises
    ------
    DataError
        For a missing file, a directory, a file that is not a CSV (binary or undecodable), an empty
        table (no rows or no columns), ragged rows, and duplicate column names.
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"input file {p} not found")
    if p.is_dir():
        raise DataError(f"input path {p} is a directory; give a CSV or Parquet file")
    if p.suffix.lower() in PARQUET_SUFFIXES:
        df = _read_parquet(p, columns, drop)
    else:
        df = _read_csv(p, delimiter, list(na_values), encoding)
    _check_frame(df, p)
    return df


class HeaderNames(list):
    """A table's column names, with the nested Parquet columns among them.

    Parameters
    ----------
    names : iterable of str
        The column names, in order.
    nested : dict, optional
        ``{name: type}`` of the nested (list, struct, map) columns.
    """

    nested: dict[str, str]

    def __init__(self, names, nested: dict[str, str] | None = None):
        super().__init__(names)
        self.nested = dict(nested or {})


def _is_nested(t: Any) -> bool:
    import pyarrow.types as pt

    if pt.is_dictionary(t):
        return _is_nested(t.value_type)
    return bool(
        pt.is_list(t)
        or pt.is_large_list(t)
        or pt.is_fixed_size_list(t)
        or pt.is_struct(t)
        or pt.is_map(t)
        or pt.is_union(t)
        or getattr(pt, "is_list_view", lambda _: False)(t)
        or getattr(pt, "is_large_list_view", lambda _: False)(t)
    )


def parquet_header(schema: Any) -> HeaderNames:
    """The column names of a Parquet file's schema, its nested columns (list, struct, map) marked.

    A release counts flat values; a nested column holds a list or a record per row, which has no level
    to count. :func:`select_columns` refuses a nested column that is kept, from the schema alone, before
    any row is read or any noise is drawn.

    Parameters
    ----------
    schema : pyarrow.Schema
        The file's schema (``pyarrow.parquet.read_schema``).

    Returns
    -------
    HeaderNames
    """
    return HeaderNames([str(f.name) for f in schema], {str(f.name): str(f.type) for f in schema if _is_nested(f.type)})


def check_flat(names: Sequence[str], kept: Sequence[str]) -> None:
    """Refuse kept columns that are nested Parquet columns (named, with ``--drop``).

    Parameters
    ----------
    names : sequence of str
        The header (a :class:`HeaderNames` knows its nested columns; a plain list has none).
    kept : sequence of str
        The columns kept.

    Raises
    ------
    DataError
        Naming the nested columns kept.
    """
    from ddssp.data.safetext import terminal_text

    nested = getattr(names, "nested", {})
    bad = [f"{c} ({nested[c]})" for c in kept if c in nested]
    if bad:
        shown = ", ".join(terminal_text(b) for b in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        drop = ",".join(terminal_text(c) for c in kept if c in nested)
        raise DataError(
            f"nested Parquet column(s) {shown}: a release needs flat columns (numbers, text, dates); "
            f"leave them out with --drop {drop}, or flatten them first"
        )


class NestedColumnsWarning(UserWarning):
    """Nested Parquet columns (list, struct, map) the caller's selection keeps were not read."""


def _read_parquet(p: Path, columns: Collection[str] | None = None, drop: Collection[str] = ()) -> pd.DataFrame:
    """The flat columns of a Parquet file; nested ones (list, struct, map) are not read, with a warning
    naming those the selection (``columns`` / ``drop``) keeps."""
    try:
        import pyarrow.parquet as pq

        header = parquet_header(pq.read_schema(p))
        flat = [c for c in header if c not in header.nested]
        kept = [c for c in header.nested if (columns is None or c in columns) and c not in drop]
        if kept:
            warnings.warn(
                f"{p}: nested Parquet column(s) {', '.join(kept)} not read: a release needs flat columns",
                NestedColumnsWarning,
                stacklevel=3,
            )
        return pd.read_parquet(p, columns=flat) if header.nested else pd.read_parquet(p)
    except ImportError as exc:  # pragma: no cover - pyarrow is a dependency
        raise DataError(f"cannot read Parquet file {p}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for corrupt files
        first = (str(exc).strip().splitlines() or [""])[0]
        raise DataError(f"{p} is not a readable Parquet file ({type(exc).__name__}: {first})") from None


#: Longest CSV cell accepted, in characters (DuckDB's own line limit applies on its path).
CSV_FIELD_LIMIT = 1 << 24
#: Longest physical CSV line accepted, in characters: a longer one is refused as soon as it has been
#: read this far, so a file of one huge line costs this much memory, not the whole line's.
CSV_LINE_LIMIT = 4 * CSV_FIELD_LIMIT


def _bounded_lines(fh, p: Path):
    """The lines of a text file, refusing one longer than :data:`CSV_LINE_LIMIT` characters."""
    n = 0
    while True:
        line = fh.readline(CSV_LINE_LIMIT + 1)
        if not line:
            return
        n += 1
        if len(line) > CSV_LINE_LIMIT:
            raise DataError(f"{p} is not a table ddssp reads: line {n} is longer than {CSV_LINE_LIMIT:,} characters")
        yield line


def csv_cell(text: str) -> str:
    """A text as the CSV readers give it in a cell: leading spaces skipped, the rest as written.

    Every reader skips the spaces after a delimiter (``skipinitialspace``; ``TRIM(LEADING ' ')`` in
    SQL) and keeps trailing ones. A missing-value marker is read by the same rule, so that ``" ?"``
    marks the cells ``"?"`` marks.

    Parameters
    ----------
    text : str
        A cell's text, or a marker.

    Returns
    -------
    str
    """
    return text.lstrip(" ")


def _read_csv(
    p: Path, delimiter: str = ",", na_values: list[str] | None = None, encoding: str = "utf-8"
) -> pd.DataFrame:
    enc = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        with open(p, "rb") as fh:
            head = fh.read(65536)
    except OSError as exc:
        raise DataError(f"cannot read {p}: {exc.strerror or exc}") from None
    if not head.strip():
        raise DataError(f"{p} is empty: no header and no rows")
    if b"\x00" in head:
        raise DataError(f"{p} is not a CSV file (it contains binary data; if it is compressed, decompress it first)")
    suffix = p.suffix.lower()
    if suffix in NOT_CSV_SUFFIXES or _is_json(p, head):
        kind = suffix.lstrip(".").upper() if suffix in NOT_CSV_SUFFIXES else "JSON"
        raise DataError(
            f"{p} is not a CSV file (it looks like {kind}); give a CSV with a header row, or a Parquet file"
        )
    # one pass with the csv module: decoding, header and row lengths; long text cells (the module's
    # default limit is 131,072 characters) are data like any other, so the limit is raised to 16 MiB
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    try:
        with open(p, newline="", encoding=enc) as fh:
            reader = csv.reader(_bounded_lines(fh, p), delimiter=delimiter, skipinitialspace=True)
            header = None
            for row in reader:
                if not row or all(not c.strip() for c in row) and len(row) <= 1:
                    continue  # blank line (pandas skips these too)
                if header is None:
                    header = row
                    continue
                if len(row) != len(header):
                    raise DataError(
                        f"{p} is not a well-formed CSV: line {reader.line_num} has {len(row)} field(s), "
                        f"the header has {len(header)}"
                    )
    except UnicodeDecodeError:
        raise DataError(f"{p} is not a CSV file (not {encoding} text)") from None
    except LookupError:
        raise DataError(f"unknown text encoding {encoding!r}") from None
    except csv.Error as exc:
        raise DataError(f"{p} is not a well-formed CSV: {exc}") from None
    if header is None:
        raise DataError(f"{p} is empty: no header and no rows")
    names = header_names(header, p)  # one clear error for repeated names, before pandas reads it
    try:
        df = pd.read_csv(
            p,
            dtype=str,
            keep_default_na=False,
            na_values=["", *(csv_cell(m) for m in na_values or [])],
            skipinitialspace=True,
            encoding=enc,
            sep=delimiter,
            index_col=False,
        )
    except pd.errors.EmptyDataError:
        raise DataError(f"{p} is empty: no header and no rows") from None
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{p} is not a well-formed CSV: {str(exc).strip().splitlines()[0]}") from None
    df.columns = names
    return df


def _is_json(p: Path, head: bytes) -> bool:
    """The file parses as JSON (only tried when it starts with '{' or '[' and is not huge)."""
    if not head.lstrip().startswith((b"{", b"[")) or p.stat().st_size > 50_000_000:
        return False
    try:
        json.loads(p.read_bytes())
    except ValueError:
        return False
    return True


def _check_frame(df: pd.DataFrame, p: Path) -> None:
    if df.shape[1] == 0:
        raise DataError(f"{p} has no columns")
    if df.shape[0] == 0:
        raise DataError(f"{p} has a header but no rows")


class UnnamedColumnWarning(UserWarning):
    """A header cell was empty (e.g. the row index R's write.csv writes) and got a name."""


def header_names(header, p) -> list[str]:
    """A CSV header's column names, stripped.

    Parameters
    ----------
    header : sequence of str
        The header cells.
    p : str or path-like
        The file, for messages.

    Returns
    -------
    list of str
        An empty cell at position i (from 1) is named ``column_i``.

    Raises
    ------
    DataError
        For repeated names: one clear error listing them all.

    Warns
    -----
    UnnamedColumnWarning
        Once, naming the cells without a name.
    """
    names = [h.strip() for h in header]
    empty = [i for i, n in enumerate(names) if not n]
    for i in empty:
        name = f"column_{i + 1}"
        while name in names:
            name += "_"
        names[i] = name
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(
            f"{p}: duplicate column name(s) in the header: {', '.join(map(repr, dup))}; "
            "rename them (each column needs its own name)"
        )
    if empty:
        import warnings

        warnings.warn(
            f"{p}: {len(empty)} header cell(s) without a name, named " + ", ".join(repr(names[i]) for i in empty),
            UnnamedColumnWarning,
            stacklevel=3,
        )
    return names


def select_columns(
    names: Sequence[str], columns: Sequence[str] | None = None, drop: Sequence[str] | None = None
) -> list[str]:
    """The column names kept by ``columns`` (in their order) and ``drop`` (:class:`~ddssp.pipeline.ReadOptions`).

    Parameters
    ----------
    names : sequence of str
        The table's column names (the header is public: nothing is spent yet).
    columns : sequence of str, optional
        The columns to keep, in this order; all by default.
    drop : sequence of str, optional
        Columns to leave out.

    Returns
    -------
    list of str

    Raises
    ------
    DataError
        One error naming every unknown column at once; also when nothing is left, a column is named
        twice, or a nested Parquet column is kept (:func:`check_flat`).
    """
    header, names = names, list(names)
    unknown = [c for c in [*(columns or ()), *(drop or ())] if c not in names]
    if unknown:
        raise DataError(
            f"ReadOptions.columns/drop name column(s) not in the table: {', '.join(map(repr, unknown))}; "
            f"the table has {', '.join(map(repr, names[:30]))}{' ...' if len(names) > 30 else ''}"
        )
    kept = list(columns) if columns else names
    kept = [c for c in kept if c not in set(drop or ())]
    check_flat(header, kept)
    if not kept:
        raise DataError("ReadOptions.columns/drop leave no column")
    if len(set(kept)) < len(kept):
        raise DataError("ReadOptions.columns names a column twice")
    return kept
