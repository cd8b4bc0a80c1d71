"""The in-memory reference backend: pandas reads, ``Schema.encode`` encodes, ``np.bincount`` counts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ddssp.data.counting.common import Clique, CsvOptions, Histogram, counts_from_codes, is_parquet
from ddssp.data.encoding import parse_numeric
from ddssp.data.schema import Schema
from ddssp.data.values import as_label, first_few
from ddssp.errors import DataError, SchemaError


# --------------------------------------------------------------------------- numpy backend
class NumpyCounter:
    """In memory: pandas read, ``Schema.encode``, ``np.bincount``. The reference backend.

    Parameters
    ----------
    source : pandas.DataFrame or pathlib.Path
        The table, or the CSV / Parquet file to read.
    opts : CsvOptions
        How to read a CSV file.
    """

    #: the table's columns :meth:`marginals` counts, or None: the table's columns must be the schema's
    columns: list[str] | None = None

    def __init__(self, source: pd.DataFrame | Path, opts: CsvOptions):
        self.source, self.opts = source, opts

    def close(self) -> None:
        """Nothing to release (the same interface as the other backends)."""
        pass

    def _frame(self) -> pd.DataFrame:
        if isinstance(self.source, pd.DataFrame):
            return self.source
        from ddssp.data.tables import read_table

        o = self.opts
        df = read_table(self.source, delimiter=o.delimiter, na_values=list(o.na_values), encoding=o.encoding)
        if o.na_values and is_parquet(self.source):  # markers in a Parquet file's text, as discovery reads them
            df = df.mask(df.isin(list(o.na_values)))
        return df

    def marginals(self, schema: Schema, cliques: list[Clique]) -> dict[Clique, np.ndarray]:
        """Exact counts of the encoded table on each clique.

        Parameters
        ----------
        schema : Schema
            Encodes the table.
        cliques : list of tuple of str
            The column sets to count.

        Returns
        -------
        dict
            ``{clique: int64 array}`` of shape ``[size of each column]``.

        Raises
        ------
        DataError
            For a table without rows.
        SchemaError
            When the table does not encode under the schema.
        """
        df = self._frame()
        if len(df) == 0:
            raise DataError("the table has no rows")
        if self.columns is not None:
            absent = [c for c in self.columns if c not in df.columns]
            if absent:
                raise SchemaError(
                    f"column(s) {first_few(absent)} not in the data (columns: {first_few(list(df.columns), 20)})"
                )
            df = df[self.columns]
        enc = schema.encode(df)
        codes = {n: enc[n].to_numpy(dtype=np.int64) for n in schema.names}
        return counts_from_codes(codes, schema.domain, cliques)

    def labels(self, columns: list[str]) -> dict[str, dict[str | None, int]]:
        """Exact counts of the distinct labels (as strings) of each column.

        Parameters
        ----------
        columns : list of str
            The columns to count.

        Returns
        -------
        dict
            ``{column: {label: count}}``; the key None counts the missing cells.
        """
        df = self._frame()
        out = {}
        for name in columns:
            s = _frame_column(df, name)
            isna = s.isna()
            d: dict[str | None, int] = {}
            for k, v in s[~isna].map(as_label).value_counts(sort=False).items():
                d[str(k)] = d.get(str(k), 0) + int(v)
            if isna.any():
                d[None] = int(isna.sum())
            out[name] = d
        return out

    def histograms(self, edges: Mapping[str, list[float]]) -> dict[str, Histogram]:
        """Exact counts of numeric columns on given edges.

        Parameters
        ----------
        edges : mapping of str to list of float
            ``{column: edges}``.

        Returns
        -------
        dict
            ``{column: Histogram}``.
        """
        df = self._frame()
        out = {}
        for name, e in edges.items():
            s = _frame_column(df, name)
            isna = s.isna().to_numpy()
            x = parse_numeric(s)
            bad = np.isnan(x) & ~isna
            xv = x[~np.isnan(x)]
            ea = np.asarray(e, dtype=float)
            below, above = int((xv < ea[0]).sum()), int((xv > ea[-1]).sum())
            inside = xv[(xv >= ea[0]) & (xv <= ea[-1])]
            c = np.clip(np.searchsorted(ea, inside, side="right") - 1, 0, len(ea) - 2)
            counts = np.bincount(c, minlength=len(ea) - 1).astype(np.int64)
            out[name] = Histogram(ea, counts, below, above, int(isna.sum()), int(bad.sum()))
        return out


def _frame_column(df: pd.DataFrame, name: str) -> pd.Series:
    cols = [str(c) for c in df.columns]
    if name not in cols:
        raise SchemaError(f"column {name!r} is not in the data (columns: {first_few(cols, 20)})")
    return df.iloc[:, cols.index(name)]
