"""Defensive reading of a release file: every check on what is read, in one place.

The limits themselves are :mod:`ddssp.data.limits`, which the writing side applies too.
:func:`read_release` never unpickles or executes anything, and refuses with one
:class:`~ddssp.errors.ReleaseFileError` line, in this order:
1. a regular file only (symlinks resolved; devices and named pipes refused without reading, opened
   with ``O_NONBLOCK`` so a pipe cannot hang), of bounded size;
2. the end-of-central-directory record: no more members, and no larger directory, than a release
   has (:data:`~ddssp.data.limits.MAX_MEMBERS`), before :mod:`zipfile` reads the directory;
3. the central directory: no duplicate names, the sum of the members' declared sizes under a total
   cap (:data:`MAX_TOTAL_BYTES`), each size equal to the manifest's;
4. ``manifest.json`` (small: tight caps of its own), then ``release.json`` (capped by
   :data:`MAX_JSON_BYTES`, streamed, checksummed); from it the exact shape of every array is known
   (schema domain x clique), so an array member whose declared size does not fit its shape, or a
   member nobody references, is refused *before it is decompressed*;
5. arrays are streamed into a preallocated array of that shape while their checksum is computed
   (float64/int64 only, never pickle).
The self-check of the content (:mod:`ddssp.releasefile.selfcheck`) comes after, in
:meth:`ddssp.releasefile.Release.load`.

Every JSON member's structure is bounded before it is parsed (:func:`check_json_structure`: values
of any kind, nesting depth, the longest string, in linear time), and numbers are parsed with hooks
that refuse integers over :data:`MAX_INT_DIGITS` digits, NaN, infinities and floats that overflow.
Counts (ledger entries, measurements, model cliques, workload cliques, columns, listed levels, the
length of a ledger note) are capped before any per-entry work; the model's tables are capped at what
a default release can hold (:func:`check_model_size`), and the memory the whole load will allocate
is computed from the declared shapes and dtypes and checked against a budget
(:data:`DEFAULT_MAX_MEMORY`, the ``DDSSP_MAX_LOAD_MEMORY`` environment variable, or ``max_memory``)
before any array is decompressed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ddssp._version import __version__
from ddssp.data.limits import (
    DEFAULT_MAX_MEMORY,
    MANIFEST_LIMITS,
    MAX_CLIQUES,
    MAX_COLUMNS,
    MAX_DISCOVERY_ENTRIES,
    MAX_INT_DIGITS,
    MAX_JSON_BYTES,
    MAX_JSON_ITEMS,
    MAX_LEDGER_ENTRIES,
    MAX_LISTED_LEVELS,
    MAX_MEASUREMENTS,
    MAX_MEMORY_ENV,
    MAX_NOTE_CHARS,
    MAX_TOTAL_BYTES,
    MEASUREMENT_BYTES_PER_CELL,
    MODEL_BYTES_PER_CELL,
    RELEASE_LIMITS,
    SCHEMA_BYTES_PER_LEVEL,
    SIGNATURE_LIMITS,
    JSONLimits,
    max_memory_default,
    max_model_mb,
    parse_memory,
)
from ddssp.errors import DDSSPError, ReleaseFileError
from ddssp.releasefile.bounded import check_directory, check_json_structure, loads_bounded
from ddssp.releasefile.format import FORMAT, FORMAT_VERSION, SIGNATURE_MEMBER
from ddssp.releasefile.recycled import marginal_arrays

__all__ = [
    "check_directory",
    "check_json_structure",
    "DEFAULT_MAX_MEMORY",
    "MAX_CLIQUES",
    "MAX_COLUMNS",
    "MAX_DISCOVERY_ENTRIES",
    "MAX_INT_DIGITS",
    "MAX_JSON_BYTES",
    "MAX_JSON_ITEMS",
    "MAX_LEDGER_ENTRIES",
    "MAX_LISTED_LEVELS",
    "MAX_MEASUREMENTS",
    "MAX_MEMORY_ENV",
    "MAX_TOTAL_BYTES",
    "load_memory",
    "loads_bounded",
    "max_memory_default",
    "open_regular",
    "parse_memory",
    "read_release",
]

#: Room for a .npy header (version 1/2 headers are padded to 64 bytes; 64 KiB is far above any shape).
_NPY_HEADER_MAX = 1 << 16
_ARRAY_DTYPES = (np.dtype("<f8"), np.dtype("<i8"))
_CHUNK = 1 << 20
_MODEL_BYTES_PER_CELL = MODEL_BYTES_PER_CELL
_MEASUREMENT_BYTES_PER_CELL = MEASUREMENT_BYTES_PER_CELL
_SCHEMA_BYTES_PER_LEVEL = SCHEMA_BYTES_PER_LEVEL


def open_regular(path: Path, max_size: int):
    """Open a file for reading only if it (after resolving symlinks) is a regular file of bounded size.

    Devices, named pipes, sockets and directories are refused without reading: the file is stat-ed,
    then opened with ``O_NONBLOCK`` and checked again on the descriptor.

    Parameters
    ----------
    path : pathlib.Path
        The file.
    max_size : int
        The largest size accepted, in bytes.

    Returns
    -------
    file object
        Opened in binary mode, blocking.

    Raises
    ------
    ReleaseFileError
        For a missing, unreadable, non-regular or oversized file.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ReleaseFileError(f"release file {path} not found") from None
    except OSError as exc:
        raise ReleaseFileError(f"release file {path} cannot be read ({exc.strerror})") from None
    _check_stat(st, path, max_size)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ReleaseFileError(f"release file {path} cannot be read ({exc.strerror})") from None
    try:
        _check_stat(os.fstat(fd), path, max_size)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_stat(st: os.stat_result, path: Path, max_size: int) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ReleaseFileError(f"{path} is a directory, not a release file")
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a named pipe"
            if stat.S_ISFIFO(st.st_mode)
            else "a device"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "a socket"
            if stat.S_ISSOCK(st.st_mode)
            else "not a regular file"
        )
        raise ReleaseFileError(f"{path} is {kind}, not a release file; give the path of a .release file")
    if st.st_size > max_size:
        raise ReleaseFileError(
            f"{path} is {st.st_size / 2**20:,.0f} MiB, more than the "
            f"{max_size / 2**20:,.0f} MiB cap of a release file; refusing it"
        )


class _HashingReader:
    """A read-only stream that feeds every byte it hands out into a hash and counts them."""

    def __init__(self, raw, h):
        self.raw, self.h, self.count = raw, h, 0

    def read(self, n: int = -1) -> bytes:
        b = self.raw.read(n)
        self.h.update(b)
        self.count += len(b)
        return b

    def readinto(self, buf) -> int:
        n = self.raw.readinto(buf)
        if n:
            self.h.update(memoryview(buf)[:n])
            self.count += n
        return n


def _read_json_member(
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    path: Path,
    digest: str | None,
    raw_out: list | None = None,
    limits: JSONLimits = RELEASE_LIMITS,
) -> Any:
    cap = limits.max_bytes
    if info.file_size > cap:
        raise ReleaseFileError(
            f"{path}: {info.filename} declares {info.file_size:,} bytes, more than the {cap:,}-byte cap; refusing it"
        )
    h = hashlib.sha256()
    try:
        with zf.open(info) as raw:
            data = _HashingReader(raw, h).read(cap + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ReleaseFileError(f"{path}: member {info.filename} is corrupt ({exc})") from None
    if len(data) > cap:
        raise ReleaseFileError(f"{path}: {info.filename} is larger than the {cap:,}-byte cap")
    if digest is not None and h.hexdigest() != digest:
        raise ReleaseFileError(f"{path}: checksum mismatch in {info.filename}; the file is corrupt or was modified")
    if raw_out is not None:
        check_json_structure(data, limits, f"{path}: {info.filename}")
        raw_out.append(data)
        return None
    return loads_bounded(data, f"{path}: {info.filename}", limits)


def expected_arrays(doc: Any, path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Every array release.json refers to, with its shape from the schema.

    Parameters
    ----------
    doc : dict
        release.json, parsed.
    path : pathlib.Path
        The file, for messages.

    Returns
    -------
    dict
        ``{member name: (array name, shape)}``.

    Raises
    ------
    ReleaseFileError
        For a measurement or model clique that does not fit the schema, or an array referenced twice.
    """
    from ddssp.data import Schema

    try:
        domain = Schema.from_dict(doc["schema"]).domain
        out: dict[str, tuple[str, tuple[int, ...]]] = {}

        def add(name: Any, shape: tuple[int, ...]) -> None:
            if not isinstance(name, str) or not name:
                raise ValueError(f"bad array name {name!r}")
            member = f"arrays/{name}.npy"
            if member in out:
                raise ValueError(f"array {name!r} is referenced twice")
            out[member] = (name, shape)

        for name, shape in marginal_arrays(doc, domain):
            add(name, shape)
        meta = doc["model"]["meta"]
        mdomain = {str(a): int(n) for a, n in meta["domain"]}
        if mdomain != dict(domain):
            raise ValueError("the model's domain does not match the schema")
        cliques = meta["cliques"]
        arrays = doc["model"]["arrays"]
        if not isinstance(arrays, dict) or set(arrays) != {f"theta_{i}" for i in range(len(cliques))}:
            raise ValueError("model arrays do not match the model's cliques")
        for i, c in enumerate(cliques):
            if not isinstance(c, list) or not c or any(a not in mdomain for a in c):
                raise ValueError(f"model clique {c!r} does not fit the domain")
            add(arrays[f"theta_{i}"], tuple(mdomain[a] for a in c))
        return out
    except ReleaseFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, DDSSPError) as exc:
        raise ReleaseFileError(
            f"{path}: release content is invalid or incomplete ({type(exc).__name__}: {exc})"
        ) from None


def _read_array(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, shape: tuple[int, ...], digest: str, path: Path
) -> np.ndarray:
    """Stream one .npy member into a preallocated array of the expected ``shape``, hashing as it goes."""
    name = info.filename
    h = hashlib.sha256()
    try:
        with zf.open(info) as raw:
            fp = _HashingReader(raw, h)
            try:  # numpy parses the header as a Python literal: a mangled one can raise many types
                version = np.lib.format.read_magic(fp)
                if version == (1, 0):
                    got_shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
                elif version == (2, 0):
                    got_shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
                else:
                    raise ValueError(f"unsupported .npy version {version}")
            except (zipfile.BadZipFile, OSError, EOFError):
                raise
            except Exception as exc:  # noqa: BLE001 - numpy's literal parser raises many types
                raise ValueError(f"bad .npy header: {type(exc).__name__}") from None
            if dtype not in _ARRAY_DTYPES:
                raise ReleaseFileError(
                    f"{path}: array {name} has dtype {dtype}; only float64/int64 are allowed (never pickled objects)"
                )
            if tuple(got_shape) != tuple(shape) or fortran:
                raise ReleaseFileError(f"{path}: array {name} has shape {tuple(got_shape)}, expected {tuple(shape)}")
            nbytes = math.prod(shape) * dtype.itemsize
            if fp.count + nbytes != info.file_size:
                raise ReleaseFileError(
                    f"{path}: array {name} declares {info.file_size:,} bytes, but its shape "
                    f"{tuple(shape)} needs {fp.count + nbytes:,}"
                )
            out = np.empty(shape, dtype=dtype)
            view = memoryview(out.reshape(-1).view(np.uint8))
            pos = 0
            while pos < nbytes:
                n = fp.readinto(view[pos : pos + _CHUNK])
                if not n:
                    raise ValueError("unexpected end of data")
                pos += n
            if raw.read(1):
                raise ValueError("trailing data")
    except ReleaseFileError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ReleaseFileError(f"{path}: array {name} is corrupt or not a valid .npy array ({exc})") from None
    if h.hexdigest() != digest:
        raise ReleaseFileError(f"{path}: checksum mismatch in {name}; the file is corrupt or was modified")
    if dtype.kind == "f" and not np.all(np.isfinite(out)):
        raise ReleaseFileError(f"{path}: array {name} has NaN or infinite values")
    return out


def _within_items(c: dict) -> int:
    """The numbers a column's within-bin distribution lists (cuts and weights of every bin)."""
    w = c.get("within")
    bins = w.get("bins") if isinstance(w, dict) else None
    if not isinstance(bins, list):
        return 0
    return sum(
        len(b[k]) if isinstance(b[k], list) else 0
        for b in bins
        if isinstance(b, dict)
        for k in ("cuts", "weights")
        if k in b
    )


def _schema_levels(columns: list) -> int:
    """The number of levels the schema's columns declare (sizes, bins and listed values, within-bin
    cuts and weights), which parsing it turns into Python objects."""
    total = 0
    for c in columns:
        if not isinstance(c, dict):
            continue
        listed = sum(len(c[k]) for k in ("levels", "edges", "values", "labels") if isinstance(c.get(k), list))
        listed += _within_items(c)
        declared = sum(c[k] for k in ("size", "bins") if isinstance(c.get(k), int) and c[k] > 0)
        total += max(listed, declared)
    return total


def _length(x: Any) -> int:
    return len(x) if isinstance(x, (list, dict)) else 0


def check_counts(doc: dict[str, Any], path: Path, max_memory: int) -> None:
    """Refuse ``doc`` if it lists more entries, cliques, columns or levels than any real release, before
    any per-entry work (parsing the schema, checking ledger entries).

    Parameters
    ----------
    doc : dict
        release.json, parsed.
    path : pathlib.Path
        The file, for messages.
    max_memory : int
        The load budget, bytes (the parsed schema must fit it).

    Raises
    ------
    ReleaseFileError
        Naming the count over its cap.
    """
    n = _length
    ledger = doc.get("ledger") if isinstance(doc.get("ledger"), dict) else {}
    entries = ledger.get("entries") if isinstance(ledger.get("entries"), list) else []
    model = doc.get("model") if isinstance(doc.get("model"), dict) else {}
    meta = model.get("meta") if isinstance(model.get("meta"), dict) else {}
    schema = doc.get("schema") if isinstance(doc.get("schema"), dict) else {}
    columns = schema.get("columns") if isinstance(schema.get("columns"), list) else []
    disc = schema.get("discovery") if isinstance(schema.get("discovery"), dict) else {}
    n_disc = sum(1 for e in entries if isinstance(e, dict) and str(e.get("kind", "")).startswith("discover"))
    counts = [
        ("ledger entries", n(entries), MAX_LEDGER_ENTRIES),
        ("discovery ledger entries", max(n_disc, n(disc.get("entries"))), MAX_DISCOVERY_ENTRIES),
        ("measurements", n(doc.get("measurements")) + n(doc.get("recycled")), MAX_MEASUREMENTS),
        ("workload cliques", n(doc.get("workload")), MAX_CLIQUES),
        ("model cliques", n(meta.get("cliques")), MAX_CLIQUES),
        ("model tree edges", n(meta.get("edges")), MAX_CLIQUES),
        ("model domain entries", n(meta.get("domain")), MAX_COLUMNS),
        ("schema columns", n(columns), MAX_COLUMNS),
        (
            "listed levels (levels, edges, values, labels, within-bin cuts and weights of all columns)",
            sum(n(c.get(k)) for c in columns if isinstance(c, dict) for k in ("levels", "edges", "values", "labels"))
            + sum(_within_items(c) for c in columns if isinstance(c, dict)),
            MAX_LISTED_LEVELS,
        ),
    ]
    counts.append(
        ("declared levels (all columns' sizes and listed levels)", _schema_levels(columns), MAX_LISTED_LEVELS)
    )
    long_note = max(
        (len(e["note"]) for e in entries if isinstance(e, dict) and isinstance(e.get("note"), str)), default=0
    )
    counts.append(("characters in a ledger note", long_note, MAX_NOTE_CHARS))
    for what, got, cap in counts:
        if got > cap:
            raise ReleaseFileError(
                f"{path}: release.json lists {got:,} {what}, more than the cap of {cap:,}; refusing it"
            )
    need = _SCHEMA_BYTES_PER_LEVEL * _schema_levels(columns)
    if need > max_memory:
        raise ReleaseFileError(
            f"{path}: parsing its schema would allocate about {need / 2**20:,.0f} MiB, more than "
            f"the {max_memory / 2**20:,.0f} MiB budget; refusing it"
        )


def schema_memory(columns: Any) -> int:
    """Bytes the schema's columns take once parsed (:data:`SCHEMA_BYTES_PER_LEVEL` per declared level).

    Parameters
    ----------
    columns : list
        release.json's ``schema.columns``.

    Returns
    -------
    int
    """
    return _SCHEMA_BYTES_PER_LEVEL * _schema_levels(columns if isinstance(columns, list) else [])


def load_memory(expected: dict[str, tuple[str, tuple[int, ...]]], model_members: set[str]) -> int:
    """Bytes a load allocates for its arrays.

    Each array, and per cell the float copy and check temporaries of a measurement or the model's
    working tables.

    Parameters
    ----------
    expected : dict
        ``{member: (name, shape)}``.
    model_members : set of str
        The members that hold the model.

    Returns
    -------
    int
    """
    total = 0
    for member, (_, shape) in expected.items():
        cells = math.prod(shape)
        total += cells * (_MODEL_BYTES_PER_CELL if member in model_members else _MEASUREMENT_BYTES_PER_CELL)
    return total


def check_model_size(
    expected: dict[str, tuple[str, tuple[int, ...]]], model_members: set[str], max_memory: int, path: Path
) -> None:
    """Refuse a model whose tables are larger than a load with budget ``max_memory`` accepts.

    The limit is AIM's largest default model size under the default budget
    (:func:`~ddssp.data.limits.max_model_mb`): no release made with default settings is larger.

    Parameters
    ----------
    expected : dict
        ``{member: (name, shape)}``.
    model_members : set of str
        The members that hold the model.
    max_memory : int
        The load budget, bytes.
    path : pathlib.Path
        The file, for messages.

    Raises
    ------
    ReleaseFileError
        When over the limit.
    """
    mb = sum(math.prod(shape) for m, (_, shape) in expected.items() if m in model_members) * 8 / 2**20
    cap = max_model_mb(max_memory)
    if mb > cap:
        raise ReleaseFileError(
            f"{path}: its model holds {mb:,.1f} MB of tables, more than the {cap:g} MB a load accepts with the "
            f"{max_memory / 2**20:,.0f} MiB budget; refusing it without decompressing (raise the budget with "
            f"{MAX_MEMORY_ENV}=BYTES, e.g. 4G, only for a file you trust)"
        )


def _verify_first(manifest_raw: bytes, signature: Any, public_key: Any, path: Path) -> None:
    from ddssp.releasefile.signing import verify_signature

    try:
        verify_signature(signature, manifest_raw, public_key)
    except ReleaseFileError as exc:
        raise ReleaseFileError(f"{path}: {exc}; nothing else was read") from None


def read_release(
    path: Path, max_bytes: int = MAX_TOTAL_BYTES, max_memory: int | None = None, public_key: Any = None
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """release.json and its arrays (by array name), read defensively: see the module docstring.

    Parameters
    ----------
    path : pathlib.Path
        The release file.
    max_bytes : int
        Cap on the file and on the members' total uncompressed size.
    max_memory : int, optional
        Bound on what the load allocates (default :func:`max_memory_default`).
    public_key : optional
        A trusted Ed25519 public key (PEM path, bytes or key object): the signature of manifest.json is
        checked against it before anything else is parsed.

    Returns
    -------
    doc : dict
        release.json, with the manifest and the signature member (if any) under ``"__signature__"``.
    arrays : dict
        ``{name: numpy.ndarray}``.

    Raises
    ------
    ReleaseFileError
        For anything malformed, oversized, inconsistent with the manifest, or (with ``public_key``) a
        signature that does not verify.
    """
    max_memory = max_memory_default() if max_memory is None else int(max_memory)
    fh, zf = _open_archive(path, max_bytes)
    with fh, zf:
        by_name = _members(zf, path, max_bytes)
        manifest_raw, manifest, signature = _read_manifest(zf, by_name, path, public_key)
        files = _manifest_files(manifest, by_name, path)
        # release.json counts against the load budget too: its text, and the values parsing it builds
        limits = dataclasses.replace(
            RELEASE_LIMITS,
            max_bytes=min(RELEASE_LIMITS.max_bytes, max_memory // 4),
            max_items=min(RELEASE_LIMITS.max_items, max_memory // 400),
        )
        doc = _read_json_member(zf, by_name["release.json"], path, files["release.json"]["sha256"], limits=limits)
        if not isinstance(doc, dict):
            raise ReleaseFileError(f"{path}: release.json is not an object")
        expected = _array_members(doc, files, by_name, path, max_memory)
        arrays = {
            name: _read_array(zf, by_name[member], shape, files[member]["sha256"], path)
            for member, (name, shape) in expected.items()
        }
        doc["__signature__"] = {"manifest": manifest_raw, "signature": signature, "manifest_doc": manifest}
        return doc, arrays


def _open_archive(path: Path, max_bytes: int) -> tuple[Any, zipfile.ZipFile]:
    """The open file and its archive, after the end-of-central-directory record was checked."""
    fh = open_regular(path, max_bytes)
    try:
        check_directory(fh, path)
        return fh, zipfile.ZipFile(fh)
    except ReleaseFileError:
        fh.close()
        raise
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        fh.close()
        raise ReleaseFileError(f"{path} is not a ddssp release file (not a readable archive: {exc})") from None


def _members(zf: zipfile.ZipFile, path: Path, max_bytes: int) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by name: unique names, their declared sizes within ``max_bytes``."""
    infos = zf.infolist()
    by_name = {i.filename: i for i in infos}
    if len(by_name) != len(infos):
        raise ReleaseFileError(f"{path} holds two members with the same name; refusing a tampered file")
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        raise ReleaseFileError(
            f"{path}: members declare {total / 2**20:,.0f} MiB uncompressed, more than the "
            f"{max_bytes / 2**20:,.0f} MiB cap; refusing it without decompressing"
        )
    if "manifest.json" not in by_name:
        raise ReleaseFileError(f"{path} is not a ddssp release file (no manifest.json)")
    return by_name


def _read_manifest(
    zf: zipfile.ZipFile, by_name: dict[str, zipfile.ZipInfo], path: Path, public_key: Any
) -> tuple[bytes, dict[str, Any], Any]:
    """manifest.json's bytes and object, and the signature member: with ``public_key`` the signature
    is verified on the bytes before the manifest is parsed."""
    manifest_raw: list[bytes] = []
    _read_json_member(zf, by_name["manifest.json"], path, None, manifest_raw, MANIFEST_LIMITS)
    signature = None
    if SIGNATURE_MEMBER in by_name:
        if by_name[SIGNATURE_MEMBER].file_size > SIGNATURE_LIMITS.max_bytes:
            raise ReleaseFileError(f"{path}: {SIGNATURE_MEMBER} is implausibly large; refusing it")
        signature = _read_json_member(zf, by_name[SIGNATURE_MEMBER], path, None, limits=SIGNATURE_LIMITS)
        if not (
            isinstance(signature, dict)
            and signature.get("algorithm") == "ed25519"
            and isinstance(signature.get("signature"), str)
            and isinstance(signature.get("public_key"), str)
        ):
            raise ReleaseFileError(f"{path}: {SIGNATURE_MEMBER} is malformed")
    if public_key is not None:
        _verify_first(manifest_raw[0], signature, public_key, path)
    manifest = loads_bounded(manifest_raw[0], f"{path}: manifest.json", MANIFEST_LIMITS)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ReleaseFileError(
            f"{path} is not a ddssp release file (format {manifest.get('format')!r})"
            if isinstance(manifest, dict)
            else f"{path}: manifest is not an object"
        )
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise ReleaseFileError(
            f"{path} has release format version {version!r}; this ddssp (version {__version__}) reads "
            f"version {FORMAT_VERSION} only"
        )
    return manifest_raw[0], manifest, signature


def _manifest_files(
    manifest: dict[str, Any], by_name: dict[str, zipfile.ZipInfo], path: Path
) -> dict[str, dict[str, Any]]:
    """The manifest's member list, checked against the archive: no member unlisted, none missing,
    every declared size as the manifest says."""
    files = manifest.get("files")
    if (
        not isinstance(files, dict)
        or "release.json" not in files
        or not all(
            isinstance(f, dict) and isinstance(f.get("sha256"), str) and isinstance(f.get("size"), int)
            for f in files.values()
        )
    ):
        raise ReleaseFileError(f"{path}: manifest lists no release.json or is malformed")
    extra = sorted(set(by_name) - set(files) - {"manifest.json", SIGNATURE_MEMBER})
    if extra:
        raise ReleaseFileError(f"{path} contains unexpected members {extra[:3]}; refusing a tampered file")
    for name, f in files.items():
        if name not in by_name:
            raise ReleaseFileError(f"{path}: member {name} is missing (truncated file?)")
        if by_name[name].file_size != f["size"]:
            raise ReleaseFileError(
                f"{path}: member {name} declares {by_name[name].file_size:,} bytes, the "
                f"manifest {f['size']:,}; refusing a tampered file"
            )
    return files


def _array_members(
    doc: dict[str, Any],
    files: dict[str, dict[str, Any]],
    by_name: dict[str, zipfile.ZipInfo],
    path: Path,
    max_memory: int,
) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The array members release.json references (member -> (name, shape)), each size checked
    against its shape and the whole load against ``max_memory``, before any is decompressed."""
    check_counts(doc, path, max_memory)
    expected = expected_arrays(doc, path)
    unreferenced = sorted(set(files) - set(expected) - {"release.json"})
    if unreferenced:
        raise ReleaseFileError(
            f"{path}: member {unreferenced[0]} is not referenced by release.json; refusing a tampered file"
        )
    missing = sorted(set(expected) - set(files))
    if missing:
        raise ReleaseFileError(f"{path}: array member {missing[0]} is missing (truncated file?)")
    for member, (_, shape) in expected.items():
        size, need = by_name[member].file_size, 8 * math.prod(shape)
        if not need <= size <= need + _NPY_HEADER_MAX:
            raise ReleaseFileError(
                f"{path}: member {member} declares {size:,} bytes but its shape {shape} "
                f"needs {need:,} (+ header); refusing it without decompressing"
            )
    model_members = {f"arrays/{v}.npy" for v in doc["model"]["arrays"].values()}
    check_model_size(expected, model_members, max_memory, path)
    need = load_memory(expected, model_members) + schema_memory(doc["schema"]["columns"])
    if need > max_memory:
        raise ReleaseFileError(
            f"{path}: loading it would allocate about {need / 2**20:,.0f} MiB, more than the "
            f"{max_memory / 2**20:,.0f} MiB budget; refusing it without decompressing (raise the budget "
            f"with {MAX_MEMORY_ENV}=BYTES, e.g. 4G, only for a file you trust)"
        )
    return expected
