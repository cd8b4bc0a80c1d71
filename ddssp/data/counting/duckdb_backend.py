"""Embedded DuckDB: CSV and Parquet scanned out of core, memory bounded by ``memory_limit``."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.counting.common import (
    NA_RAW,
    UNKNOWN_RAW,
    Accumulator,
    CsvOptions,
    csv_header,
    fill_codes,
    first_line,
    is_parquet,
)
from ddssp.data.counting.dialect import Dialect, SqlSource, typed_source
from ddssp.data.counting.sql import SQLCounter, map_values
from ddssp.data.encoding import CLIPPED, MISSING, NONNUM, OK
from ddssp.data.schema import Schema
from ddssp.data.values import first_few
from ddssp.errors import DataError, SchemaError
from ddssp.types import Clique


# --------------------------------------------------------------------------- DuckDB
class DuckDBCounter(SQLCounter):
    """Embedded DuckDB over a CSV / Parquet file (scanned out of core) or a pandas DataFrame.

    Parameters
    ----------
    source : pandas.DataFrame or pathlib.Path
        The table, or the file to scan.
    opts : CsvOptions
        How to read a CSV file.
    memory_limit : str, optional
        DuckDB's memory limit (e.g. ``"2GB"``); it spills to a temporary directory beyond it.
    threads : int, optional
        DuckDB's thread count; its default when None.

    Raises
    ------
    DataError
        When DuckDB cannot start (e.g. an unreadable memory limit).
    """

    def __init__(
        self, source: pd.DataFrame | Path, opts: CsvOptions, memory_limit: str | None = None, threads: int | None = None
    ):
        import duckdb

        self.dialect = Dialect("duckdb")
        self.opts = opts
        self.source = source
        self.where = "the data" if isinstance(source, pd.DataFrame) else str(source)
        self._tmpdir = tempfile.mkdtemp(prefix="ddssp-duckdb-")
        config = {"temp_directory": self._tmpdir}
        if memory_limit is not None:
            config["memory_limit"] = str(memory_limit)
        if threads is not None:
            config["threads"] = int(threads)
        try:
            self.con = duckdb.connect(":memory:", config=config)
        except Exception as exc:  # noqa: BLE001 - e.g. an unreadable memory limit
            self.close()
            raise DataError(f"cannot start DuckDB (memory limit {memory_limit!r}?): {first_line(exc)}") from None
        self.con.execute("SET preserve_insertion_order = false")
        # DuckDB's own progress bar writes to stdout even when it is not a terminal; ddssp's progress
        # bar (stderr, quiet off a terminal) reports the run instead
        self.con.execute("SET enable_progress_bar = false")
        self._rel: tuple[str, dict[str, SqlSource]] | None = None

    def close(self) -> None:
        """Close the connection and remove the temporary directory (safe to call twice)."""
        con = getattr(self, "con", None)
        if con is not None:
            con.close()
            self.con = None
        if getattr(self, "_tmpdir", None):
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def _relation(self) -> tuple[str, dict[str, SqlSource]]:
        if self._rel is not None:
            return self._rel
        d = self.dialect
        if isinstance(self.source, pd.DataFrame):
            names = [str(c) for c in self.source.columns]
            if len(set(names)) < len(names):
                dup = sorted({c for c in names if names.count(c) > 1})
                raise SchemaError(f"the data has duplicate column names: {first_few(dup)}")
            frame = self.source.copy(deep=False)
            frame.columns = names
            self.con.register("ddssp_input", frame)
            rel = "ddssp_input"
            types = self.con.execute("DESCRIBE SELECT * FROM ddssp_input").fetchall()
            srcs = {str(t[0]): typed_source(d, d.ident(str(t[0])), str(t[1])) for t in types}
        elif is_parquet(self.source):
            rel = f"read_parquet({d.string(str(self.source))})"
            try:
                types = self.con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
            except Exception as exc:  # noqa: BLE001
                raise DataError(f"{self.source} is not a readable Parquet file ({first_line(exc)})") from None
            if not types:
                raise DataError(f"{self.source} has no columns")
            srcs = {str(t[0]).strip(): typed_source(d, d.ident(str(t[0])), str(t[1])) for t in types}
        else:
            names = csv_header(self.source, self.opts)
            o = self.opts
            cols = "{" + ", ".join(f"'f{i}': 'VARCHAR'" for i in range(len(names))) + "}"
            enc = o.encoding.lower().replace("_", "-")
            enc = {"utf8": "utf-8", "latin1": "latin-1", "iso-8859-1": "latin-1", "utf16": "utf-16"}.get(enc, enc)
            rel = (
                f"read_csv({d.string(str(self.source))}, header = true, columns = {cols}, auto_detect = false, "
                f"delim = {d.string(o.delimiter)}, quote = '\"', escape = '\"', encoding = {d.string(enc)}, "
                "strict_mode = true, null_padding = false, buffer_size = 4194304)"
            )
            srcs = {n: SqlSource(d.ident(f"f{i}"), "text", True) for i, n in enumerate(names)}
        self._rel = (rel, srcs)
        return self._rel

    def _run(self, sql: str):
        try:
            return self.con.execute(sql)
        except Exception as exc:  # noqa: BLE001 - DuckDB raises many types
            msg = first_line(exc)
            if "out of memory" in msg.lower() or "memory limit" in msg.lower():
                raise DataError(f"DuckDB ran out of memory ({msg}); raise --memory-limit") from None
            raise DataError(f"cannot read {self.where}: {msg}") from None

    def _fetch(self, sql: str) -> dict[str, np.ndarray]:
        return self._run(sql).fetchnumpy()

    def _rows(self, sql: str) -> list[tuple]:
        return self._run(sql).fetchall()

    def _encode_and_count(
        self,
        comp: str,
        schema: Schema,
        cliques: list[Clique],
        srcs: dict[str, SqlSource],
        mapped: list[int],
        binned: Collection[int] = (),
    ):
        """Stream the grouped rows (distinct keys, usually far fewer than rows) in Arrow batches;
        encode each batch's distinct raw values in Python by Schema.encode's rules (cached) and
        count in numpy; rows of a ``binned`` column with a bin from SQL take it. Needs little memory
        beyond one batch (a GROUPING SETS query with a hundred sets, or a dozen joins, need more
        than a tight memory_limit allows)."""
        import pyarrow.compute as pc

        acc = Accumulator(schema, cliques)
        cache: dict[int, dict[Any, tuple[int, int]]] = {i: {} for i in mapped}
        try:
            rel = self.con.sql(f"SELECT * FROM {comp}")
            reader = (
                rel.to_arrow_reader(200_000) if hasattr(rel, "to_arrow_reader") else rel.fetch_arrow_reader(200_000)
            )
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"cannot read {self.where}: {first_line(exc)}") from None
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except Exception as exc:  # noqa: BLE001
                raise DataError(f"cannot read {self.where}: {first_line(exc)}") from None
            if batch.num_rows == 0:
                continue
            cols: dict[str, np.ndarray] = {"n": batch.column("n").to_numpy(zero_copy_only=False).astype(np.int64)}
            for i, col in enumerate(schema.columns):
                fill_bad, fill_na, fill_nonnum = fill_codes(col)
                if i in mapped:
                    arr = batch.column(f"v{i}")
                    de = pc.dictionary_encode(arr)
                    idx = pc.fill_null(de.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
                    values = de.dictionary.to_pylist()
                    new = [v for v in values if v not in cache[i]]
                    if new:
                        c_new, s_new = map_values(col, srcs[col.name], new)
                        cache[i].update({v: (int(c), int(st)) for v, c, st in zip(new, c_new, s_new)})
                    vc = np.array([cache[i][v][0] for v in values] + [fill_na], dtype=np.int64)
                    vs = np.array([cache[i][v][1] for v in values] + [MISSING], dtype=np.int64)
                    code, st = vc[idx], vs[idx]
                    if i in binned:  # parsed and binned in SQL where b is not NULL
                        b = pc.fill_null(batch.column(f"b{i}"), -1).to_numpy(zero_copy_only=False).astype(np.int64)
                        k = batch.column(f"k{i}").to_numpy(zero_copy_only=False).astype(bool)
                        sql = b >= 0
                        code = np.where(sql, b, code)
                        st = np.where(sql, np.where(k, CLIPPED, OK), st)
                    cols[f"c{i}"] = code
                    cols[f"s{i}"] = st
                else:
                    b = batch.column(f"b{i}").to_numpy(zero_copy_only=False).astype(np.int64)
                    k = batch.column(f"k{i}").to_numpy(zero_copy_only=False).astype(bool)
                    cols[f"s{i}"] = np.where(
                        b == NA_RAW, MISSING, np.where(b == UNKNOWN_RAW, NONNUM, np.where(k, CLIPPED, OK))
                    )
                    cols[f"c{i}"] = np.where(b == NA_RAW, fill_na, np.where(b < 0, fill_nonnum, b))
            acc.add(cols)
        return acc.result()

    def _materialize(self, name: str, sql: str) -> str:
        self._run(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")
        return name

    def _register(self, name: str, frame: pd.DataFrame, family: str | None) -> str:
        self.con.register(name, frame)
        return name
