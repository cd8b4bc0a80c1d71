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

#: Every member's timestamp: fixed, so the archive carries no wall-clock time (a start time plus a
#: write time would reveal how long the run took, which grows with the number of rows).
MEMBER_DATE_TIME = (1980, 1, 1, 0, 0, 0)


def _member(name: str) -> zipfile.ZipInfo:
    """A ZIP entry with fixed metadata: timestamp, attributes (a 0644 regular file), creator system."""
    info = zipfile.ZipInfo(name, date_time=MEMBER_DATE_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    info.external_attr = 0o100644 << 16
    return info


def write_release(
    out: Path, doc: dict[str, Any], arrays: dict[str, np.ndarray], private: Any = None, dataset_name: str | None = None
) -> Path:
    """Write a release file atomically: release.json, the arrays, manifest.json and an optional signature.

    The arrays go to ``arrays/<name>.npy``; manifest.json holds the checksum and size of each member;
    the file is written through a temporary file and a rename. The manifest names the data set and the
    release's creation date, so a signature binds both. Members get fixed metadata
    (:data:`MEMBER_DATE_TIME`, 0644), so the archive holds nothing but the members' bytes.

    Parameters
    ----------
    out : pathlib.Path
        The output file.
    doc : dict
        release.json.
    arrays : dict
        ``{name: numpy.ndarray}`` (no pickled objects).
    private : cryptography Ed25519PrivateKey, optional
        Signs manifest.json.
    dataset_name : str, optional
        The data set's name, chosen by the publisher.

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    members: dict[str, bytes] = {"release.json": json_bytes(doc)}
    for name, a in arrays.items():
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        members[f"arrays/{name}.npy"] = buf.getvalue()
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dataset_name": dataset_name,
        "created": doc.get("created", ""),
        "files": {k: {"sha256": hashlib.sha256(v).hexdigest(), "size": len(v)} for k, v in members.items()},
    }
    with atomic_write(out, "wb") as fh:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            manifest_bytes = json_bytes(manifest)
            zf.writestr(_member("manifest.json"), manifest_bytes)
            if private is not None:
                zf.writestr(_member(SIGNATURE_MEMBER), json_bytes(signature_document(private, manifest_bytes)))
            for k, v in members.items():
                zf.writestr(_member(k), v)
    return out
