"""Defensive reading of a release file: every limit on what is read, in one place.

:func:`read_release` never unpickles or executes anything, and refuses with one
:class:`~ddssp.errors.ReleaseFileError` line, in this order:
1. the archive's central directory only: no duplicate names, the sum of the members' declared sizes
   under a total cap (:data:`MAX_TOTAL_BYTES`), each size equal to the manifest's;
2. ``release.json`` (capped by :data:`MAX_JSON_BYTES`, streamed, checksummed); from it the exact shape
   of every array is known (schema domain x clique), so an array member whose declared size does not
   fit its shape, or a member nobody references, is refused *before it is decompressed*;
3. arrays are streamed into a preallocated array of that shape while their checksum is computed
   (float64/int64 only, never pickle).
The self-check of the content (:mod:`ddssp.releasefile.selfcheck`) comes after, in
:meth:`ddssp.releasefile.Release.load`.
"""

from __future__ import annotations

import hashlib
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ddssp._version import __version__
from ddssp.errors import DDSSPError, ReleaseFileError
from ddssp.releasefile.format import FORMAT, FORMAT_VERSION, SIGNATURE_MEMBER

#: Cap on the sum of the members' declared (uncompressed) sizes, checked before anything is read.
MAX_TOTAL_BYTES = 2 << 30
#: Cap on manifest.json and release.json, each.
MAX_JSON_BYTES = 64 << 20
#: Room for a .npy header (version 1/2 headers are padded to 64 bytes; 64 KiB is far above any shape).
_NPY_HEADER_MAX = 1 << 16
_ARRAY_DTYPES = (np.dtype("<f8"), np.dtype("<i8"))
_CHUNK = 1 << 20


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


def _read_json_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, digest: str | None,
                      raw_out: list | None = None) -> Any:
    if info.file_size > MAX_JSON_BYTES:
        raise ReleaseFileError(f"{path}: {info.filename} declares {info.file_size:,} bytes, more than the "
                               f"{MAX_JSON_BYTES >> 20} MiB cap; refusing it")
    h = hashlib.sha256()
    try:
        with zf.open(info) as raw:
            data = _HashingReader(raw, h).read(MAX_JSON_BYTES + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ReleaseFileError(f"{path}: member {info.filename} is corrupt ({exc})") from None
    if len(data) > MAX_JSON_BYTES:
        raise ReleaseFileError(f"{path}: {info.filename} is larger than the {MAX_JSON_BYTES >> 20} MiB cap")
    if digest is not None and h.hexdigest() != digest:
        raise ReleaseFileError(f"{path}: checksum mismatch in {info.filename}; the file is corrupt or was modified")
    if raw_out is not None:
        raw_out.append(data)
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseFileError(f"{path}: {info.filename} is not valid JSON ({exc})") from None


def _expected_arrays(doc: Any, path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{member name: (array name, shape)} of every array release.json refers to, shapes from the schema."""
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

        for m in doc["measurements"]:
            clique = m["clique"]
            if not isinstance(clique, list) or not clique or any(c not in domain for c in clique):
                raise ValueError(f"measurement on unknown columns {clique!r}")
            add(m["array"], tuple(domain[c] for c in clique))
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
        raise ReleaseFileError(f"{path}: release content is invalid or incomplete ({type(exc).__name__}: {exc})") from None


def _read_array(zf: zipfile.ZipFile, info: zipfile.ZipInfo, shape: tuple[int, ...], digest: str, path: Path) -> np.ndarray:
    """Stream one .npy member into a preallocated array of the expected ``shape``, hashing as it goes."""
    name = info.filename
    h = hashlib.sha256()
    try:
        with zf.open(info) as raw:
            fp = _HashingReader(raw, h)
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                got_shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
            elif version == (2, 0):
                got_shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            if dtype not in _ARRAY_DTYPES:
                raise ReleaseFileError(f"{path}: array {name} has dtype {dtype}; only float64/int64 are allowed "
                                       "(never pickled objects)")
            if tuple(got_shape) != tuple(shape) or fortran:
                raise ReleaseFileError(f"{path}: array {name} has shape {tuple(got_shape)}, expected {tuple(shape)}")
            nbytes = math.prod(shape) * dtype.itemsize
            if fp.count + nbytes != info.file_size:
                raise ReleaseFileError(f"{path}: array {name} declares {info.file_size:,} bytes, but its shape "
                                       f"{tuple(shape)} needs {fp.count + nbytes:,}")
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


def read_release(path: Path, max_bytes: int = MAX_TOTAL_BYTES) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """release.json and its arrays (by array name), read defensively: see the module docstring."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ReleaseFileError(f"{path} is not a ddssp release file (not a readable archive: {exc})") from None
    with zf:
        infos = zf.infolist()
        by_name = {i.filename: i for i in infos}
        if len(by_name) != len(infos):
            raise ReleaseFileError(f"{path} holds two members with the same name; refusing a tampered file")
        total = sum(i.file_size for i in infos)
        if total > max_bytes:
            raise ReleaseFileError(f"{path}: members declare {total / 2**20:,.0f} MiB uncompressed, more than the "
                                   f"{max_bytes / 2**20:,.0f} MiB cap; refusing it without decompressing")
        if "manifest.json" not in by_name:
            raise ReleaseFileError(f"{path} is not a ddssp release file (no manifest.json)")
        manifest_raw: list[bytes] = []
        manifest = _read_json_member(zf, by_name["manifest.json"], path, None, manifest_raw)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ReleaseFileError(f"{path} is not a ddssp release file (format {manifest.get('format')!r})"
                                   if isinstance(manifest, dict) else f"{path}: manifest is not an object")
        version = manifest.get("format_version")
        if version != FORMAT_VERSION:
            raise ReleaseFileError(
                f"{path} has release format version {version!r}; this ddssp (version {__version__}) reads "
                f"version {FORMAT_VERSION} only"
            )
        files = manifest.get("files")
        if (not isinstance(files, dict) or "release.json" not in files
                or not all(isinstance(f, dict) and isinstance(f.get("sha256"), str) and isinstance(f.get("size"), int)
                           for f in files.values())):
            raise ReleaseFileError(f"{path}: manifest lists no release.json or is malformed")
        extra = sorted(set(by_name) - set(files) - {"manifest.json", SIGNATURE_MEMBER})
        if extra:
            raise ReleaseFileError(f"{path} contains unexpected members {extra[:3]}; refusing a tampered file")
        for name, f in files.items():
            if name not in by_name:
                raise ReleaseFileError(f"{path}: member {name} is missing (truncated file?)")
            if by_name[name].file_size != f["size"]:
                raise ReleaseFileError(f"{path}: member {name} declares {by_name[name].file_size:,} bytes, the "
                                       f"manifest {f['size']:,}; refusing a tampered file")
        doc = _read_json_member(zf, by_name["release.json"], path, files["release.json"]["sha256"])
        if not isinstance(doc, dict):
            raise ReleaseFileError(f"{path}: release.json is not an object")
        expected = _expected_arrays(doc, path)
        unreferenced = sorted(set(files) - set(expected) - {"release.json"})
        if unreferenced:
            raise ReleaseFileError(f"{path}: member {unreferenced[0]} is not referenced by release.json; "
                                   "refusing a tampered file")
        missing = sorted(set(expected) - set(files))
        if missing:
            raise ReleaseFileError(f"{path}: array member {missing[0]} is missing (truncated file?)")
        for member, (_, shape) in expected.items():  # every size against its shape, before any decompression
            size, need = by_name[member].file_size, 8 * math.prod(shape)
            if not need <= size <= need + _NPY_HEADER_MAX:
                raise ReleaseFileError(f"{path}: member {member} declares {size:,} bytes but its shape {shape} "
                                       f"needs {need:,} (+ header); refusing it without decompressing")
        arrays = {
            name: _read_array(zf, by_name[member], shape, files[member]["sha256"], path)
            for member, (name, shape) in expected.items()
        }
        signature = None
        if SIGNATURE_MEMBER in by_name:
            if by_name[SIGNATURE_MEMBER].file_size > 4096:
                raise ReleaseFileError(f"{path}: {SIGNATURE_MEMBER} is implausibly large; refusing it")
            signature = _read_json_member(zf, by_name[SIGNATURE_MEMBER], path, None)
            if not (isinstance(signature, dict) and signature.get("algorithm") == "ed25519"
                    and isinstance(signature.get("signature"), str) and isinstance(signature.get("public_key"), str)):
                raise ReleaseFileError(f"{path}: {SIGNATURE_MEMBER} is malformed")
        doc["__signature__"] = {"manifest": manifest_raw[0], "signature": signature}
        return doc, arrays
