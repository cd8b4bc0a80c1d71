"""Safe file output: refuse to clobber, never overwrite an input, write atomically."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

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
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent or ".")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the mode open() would
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
