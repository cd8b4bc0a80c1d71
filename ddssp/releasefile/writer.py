"""Writing a release file: members, manifest and optional signature into one ZIP, atomically."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ddssp.data.fileio import atomic_write
from ddssp.releasefile.format import (
    FORMAT,
    FORMAT_VERSION,
    SIGNATURE_MEMBER,
    json_bytes,
)
from ddssp.releasefile.signing import signature_document


def write_release(out: Path, doc: dict[str, Any], arrays: dict[str, np.ndarray], private: Any = None) -> Path:
    """Write release.json (``doc``), the ``arrays`` as ``arrays/<name>.npy`` and manifest.json (checksum
    and size of each member) to ``out`` through a temporary file and a rename; with ``private`` (an
    Ed25519 private key) also the signature of manifest.json. Returns ``out``."""
    members: dict[str, bytes] = {"release.json": json_bytes(doc)}
    for name, a in arrays.items():
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        members[f"arrays/{name}.npy"] = buf.getvalue()
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "files": {k: {"sha256": hashlib.sha256(v).hexdigest(), "size": len(v)} for k, v in members.items()},
    }
    with atomic_write(out, "wb") as fh:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            manifest_bytes = json_bytes(manifest)
            zf.writestr("manifest.json", manifest_bytes)
            if private is not None:
                zf.writestr(SIGNATURE_MEMBER, json_bytes(signature_document(private, manifest_bytes)))
            for k, v in members.items():
                zf.writestr(k, v)
    return out
