"""Safe file output: refuse to clobber, never overwrite an input, write atomically."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from ddssp.errors import OutputExistsError


def check_output_path(path: str | os.PathLike, force: bool = False, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Validate an output path before any work is done, so that a long run does not fail at its end.

    Parameters
    ----------
    path : str or path-like
        The output file.
    force : bool
        Allow replacing an existing file.
    inputs : iterable of str or path-like
        The run's input files; the output may never be one of them.

    Returns
    -------
    pathlib.Path
        The output path.

    Raises
    ------
    OutputExistsError
        For an existing file (unless ``force``), a path that is one of ``inputs``, a directory, a
        path whose parent directory does not exist, or a directory where a file cannot be created
        (checked by creating and removing an empty temporary file, which also catches a read-only
        file system).
    """
    out = Path(path)
    if out.is_dir():
        raise OutputExistsError(f"output path {out} is a directory; give a file name")
    for inp in inputs:
        inp = Path(inp)
        if inp.exists() and out.exists() and os.path.samefile(inp, out):
            raise OutputExistsError(f"output path {out} is also an input; refusing to overwrite it")
    if out.exists() and not force:
        raise OutputExistsError(f"output file {out} already exists; pass --force to replace it")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise OutputExistsError(f"output directory {parent} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".probe", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputExistsError(
            f"cannot write to output directory {parent} ({exc.strerror}); choose a writable location"
        ) from None
    return out


def _create_beside(out: Path) -> tuple[int, str]:
    """A new, empty file beside ``out`` with an unused random name, created with mode 0666 less the
    process umask (as :func:`open` would make it) without changing the umask."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    parent = out.parent if str(out.parent) else Path(".")
    for _ in range(100):
        tmp = str(parent / f".{out.name}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name beside {out}")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it into place only on success.

    On any exception the temporary file is removed and ``path`` is left untouched.

    Parameters
    ----------
    path : str or path-like
        The file to write.
    mode : str
        The :func:`open` mode.
    **kwargs
        Passed to :func:`os.fdopen` (e.g. ``encoding``).

    Yields
    ------
    file object
        The open temporary file.
    """
    out = Path(path)
    fd, tmp = _create_beside(out)
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def whole_number_columns(schema: Any) -> list[str]:
    """The numeric columns of ``schema`` whose decoded values are all whole numbers.

    A column qualifies when it is numeric without a time unit, every finite representative value
    is a whole number (levels of whole numbers, codes of a domain file, a grid of whole-number bins),
    and a binned column's within-bin draws, if it has them, are whole numbers too. Read from the
    public schema only, so the answer never depends on the rows drawn.

    Parameters
    ----------
    schema : Schema
        The release's schema.

    Returns
    -------
    list of str
        The column names, in schema order.
    """
    import numpy as np

    names = []
    for col in schema.columns:
        if col.kind != "numeric" or col.unit is not None:
            continue
        v = np.asarray(col.values, dtype=float)
        finite = np.isfinite(v)
        if col.edges is not None and col.within is not None:
            if not col.within.whole:
                continue
            # a bin with a within-bin draw decodes to whole numbers whatever its representative value
            drawn = np.array([b is not None for b in col.within.bins] + [False] * (v.size - len(col.within.bins)))
            finite &= ~drawn
            if np.any(np.abs(np.asarray(col.edges, dtype=float)) >= 2**53):
                continue
        v = v[finite]
        if np.any(np.mod(v, 1) != 0) or np.any(np.abs(v) >= 2**53):
            continue
        if v.size == 0 and (col.edges is None or col.within is None):
            continue
        names.append(col.name)
    return names


def _as_integers(df: Any, names: Iterable[str]) -> Any:
    """``df`` with each of the float columns ``names`` whose present values are all whole numbers
    as pandas nullable ``Int64`` (missing cells stay missing), so CSV cells read ``6``, not ``6.0``,
    and Parquet stores an integer type. A column holding any other value is left as it is."""
    import numpy as np
    import pandas as pd

    out = None
    for name in names:
        if name not in df.columns or not pd.api.types.is_float_dtype(df[name].dtype):
            continue
        x = df[name].to_numpy(dtype=float, na_value=np.nan)
        ok = np.isfinite(x)
        if np.any(~ok & ~np.isnan(x)) or np.any(np.mod(x[ok], 1) != 0) or np.any(np.abs(x[ok]) >= 2**53):
            continue
        if out is None:
            out = df.copy()
        out[name] = pd.arrays.IntegerArray(np.where(ok, x, 0).astype(np.int64), ~ok)
    return df if out is None else out


def write_table(
    df: Any,
    path: str | os.PathLike | IO,
    raw_cells: bool = False,
    *,
    na_rep: str = "",
    integers: Iterable[str] = (),
) -> None:
    """Write a table as CSV (or Parquet for a ``.parquet`` path), atomically, safe to open in a spreadsheet.

    Unless ``raw_cells``, text cells and column names a spreadsheet would run as a formula get a
    leading ``'`` (:func:`ddssp.data.safetext.neutralise_formulas`); numeric columns are never changed.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    path : str, path-like or text file object
        Where to write it (a file object gets CSV).
    raw_cells : bool
        Write the cells exactly as they are.
    na_rep : str
        What a missing cell reads in CSV (e.g. the marker the input used for missing values, ``N``
        or ``?``); empty by default. Parquet keeps missing cells as nulls.
    integers : iterable of str
        Columns written as integers (``6``, not ``6.0``; a Parquet integer type) when all their
        present values are whole numbers (:func:`whole_number_columns` names them from a schema).
    """
    from ddssp.data.safetext import formula_safe, neutralise_formulas

    if not isinstance(na_rep, str):
        raise TypeError(f"na_rep must be a string, got {type(na_rep).__name__}")
    df = _as_integers(df, integers)
    if not raw_cells:
        df = neutralise_formulas(df)
        na_rep = formula_safe(na_rep)
    if hasattr(path, "write"):
        df.to_csv(path, index=False, na_rep=na_rep)
    elif str(path).lower().endswith((".parquet", ".pq")):
        with atomic_write(path, "wb") as fh:
            df.to_parquet(fh, index=False)
    else:
        with atomic_write(path, "w", newline="") as fh:
            df.to_csv(fh, index=False, na_rep=na_rep)
