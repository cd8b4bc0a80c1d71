"""The tables of the real-tables bench (:mod:`.realtables`): raw tables that pip packages ship inside
their wheels, or a CSV file, as the text cells a user's CSV would have, and their fixed-seed samples
and train / test splits.

:func:`load_table` reads a ``kind:name`` source (``sklearn:``, ``statsmodels:``, ``palmerpenguins:``,
``vega:``, ``file:``); nothing is downloaded at run time. :func:`sample_split` samples and splits a
table with seeds derived from names (:func:`named_rng`), so every cell of the suite draws the same rows
wherever it runs.
"""

from __future__ import annotations

import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.errors import WorkloadError


def load_table(source: str, ctx: Any) -> pd.DataFrame | None:
    """The raw table a source names, as text cells.

    Parameters
    ----------
    source : str
        ``kind:name`` (see the module docstring).
    ctx : BenchContext
        Resolves ``file:`` sources.

    Returns
    -------
    pandas.DataFrame or None
        None when a ``file:`` source is absent.

    Raises
    ------
    WorkloadError
        For an unknown source.
    """
    kind, _, name = source.partition(":")
    if kind == "file":
        try:
            path = ctx.data_path(name)
        except WorkloadError:
            return None
        return pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=False)
    if kind == "sklearn":
        from sklearn import datasets

        loader = getattr(datasets, f"load_{name}", None)
        if loader is None:
            raise WorkloadError(f"scikit-learn has no bundled data set {name!r}")
        kw = {"scaled": False} if name == "diabetes" else {}
        df = loader(as_frame=True, **kw).frame
    elif kind == "statsmodels":
        import statsmodels.api as sm

        mod = getattr(sm.datasets, name, None)
        if mod is None:
            raise WorkloadError(f"statsmodels has no bundled data set {name!r}")
        df = mod.load_pandas().data
    elif kind == "palmerpenguins":
        import palmerpenguins

        df = {"penguins": palmerpenguins.load_penguins, "penguins_raw": palmerpenguins.load_penguins_raw}[name]()
    elif kind == "vega":
        from vega_datasets import local_data

        if name not in local_data.list_datasets():
            raise WorkloadError(f"vega_datasets has no local data set {name!r}")
        df = local_data(name)
    else:
        raise WorkloadError(f"unknown table source {source!r} (sklearn:, statsmodels:, palmerpenguins:, vega:, file:)")
    # the table as the CSV its users would have: a CSV round trip gives the text cells
    df = df.reset_index(drop=True)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "t.csv"
        df.to_csv(p, index=False)
        return pd.read_csv(p, dtype=str, keep_default_na=False)


def named_rng(*key: Any) -> np.random.Generator:
    """A generator seeded from names, the same in every run (CRC-32 of each part of the key).

    Parameters
    ----------
    *key : object
        The parts of the key (names, sizes, budgets), each read as text.

    Returns
    -------
    numpy.random.Generator
    """
    return np.random.default_rng([zlib.crc32(str(k).encode()) for k in key])


def sample_split(df: pd.DataFrame, size: Any, max_rows: int, test_fraction: float, name: str):
    """A sample of a table and its 80/20 split, with fixed seeds.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    size : str or int
        "full" (all rows, capped at ``max_rows``) or a row count.
    max_rows : int
        The cap of "full".
    test_fraction : float
        The hold-out share.
    name : str
        The table's name (part of the seeds).

    Returns
    -------
    tuple of pandas.DataFrame
        (sample, train, test).
    """
    n = min(len(df), max_rows) if size == "full" else int(size)
    if n < len(df):
        df = df.iloc[np.sort(named_rng("sample", name, size).choice(len(df), n, replace=False))]
    df = df.reset_index(drop=True)
    perm = named_rng("split", name, size).permutation(len(df))
    n_test = round(test_fraction * len(df))
    return (
        df,
        df.iloc[np.sort(perm[n_test:])].reset_index(drop=True),
        df.iloc[np.sort(perm[:n_test])].reset_index(drop=True),
    )
