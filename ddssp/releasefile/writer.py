"""Writing a release file: members, manifest and optional signature into one ZIP, atomically."""

from __future__ import annotations

import hashlib
import io
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ddssp.data.fileio import atomic_write
from ddssp.data.limits import budget_hint, max_memory_default, max_model_mb
from ddssp.errors import DDSSPError, ReleaseFileError
from ddssp.releasefile.format import (
    FORMAT,
    FORMAT_VERSION,
    SIGNATURE_MEMBER,
    json_bytes,
)
from ddssp.releasefile.reader import check_counts, expected_arrays, load_memory, loads_bounded, schema_memory
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


def check_loadable(release_json: bytes, out: Path) -> None:
    """Refuse to write a release that :func:`~ddssp.releasefile.reader.read_release` would refuse.

    The reader's own checks run on release.json as it will be written: its structure, the counts,
    the model's size and the memory a load allocates under the load budget
    (:func:`~ddssp.data.limits.max_memory_default`).

    Parameters
    ----------
    release_json : bytes
        release.json.
    out : pathlib.Path
        The output file, for messages.

    Raises
    ------
    DDSSPError
        Naming what is over which limit and the option that fixes it; nothing is written.
    """
    budget = max_memory_default()
    try:
        doc = loads_bounded(release_json, "release.json")
        check_counts(doc, out, budget)
        expected = expected_arrays(doc, out)
        model_members = {f"arrays/{v}.npy" for v in doc["model"]["arrays"].values()}
        model_mb = sum(math.prod(s) for m, (_, s) in expected.items() if m in model_members) * 8 / 2**20
        need = load_memory(expected, model_members) + schema_memory(doc["schema"]["columns"])
    except ReleaseFileError as exc:
        raise DDSSPError(
            f"{out} was not written: a reader would refuse it ({str(exc).removeprefix(f'{out}: ')}); "
            "release fewer columns or levels (--drop, --max-levels) or give a smaller --workload or --rounds"
        ) from None
    if model_mb > max_model_mb(budget) or need > budget:
        raise DDSSPError(
            f"{out} was not written: its model ({model_mb:,.1f} MB of tables, {need / 2**20:,.0f} MiB to load) is "
            f"larger than a load accepts with the {budget / 2**20:,.0f} MiB budget ({max_model_mb(budget):g} MB of "
            f"tables); release again with a smaller --max-model-size, or set {budget_hint(model_mb, need)} here "
            "and wherever the release is loaded"
        )


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
    check_loadable(members["release.json"], out)
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
