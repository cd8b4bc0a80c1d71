"""The release file: the :class:`Release` model, its file format, bounded reading, self-check and
optional Ed25519 signatures.

Modules: :mod:`~ddssp.releasefile.model` (:class:`Release`), :mod:`~ddssp.releasefile.format`
(format name, version, fields), :mod:`~ddssp.releasefile.reader` (defensive reading and its limits),
:mod:`~ddssp.releasefile.writer`, :mod:`~ddssp.releasefile.selfcheck`,
:mod:`~ddssp.releasefile.signing`. Making a release from data is :mod:`ddssp.pipeline`.
"""

from __future__ import annotations

from ddssp.releasefile.format import (
    FORMAT,
    FORMAT_VERSION,
    NOISY_FIELDS,
    PUBLIC_FIELDS,
    SCHEMA_DECLARED,
    SCHEMA_DISCOVERED,
    SCHEMA_NOT_PRIVATE,
    SIGNATURE_MEMBER,
)
from ddssp.releasefile.model import Release
from ddssp.releasefile.reader import MAX_JSON_BYTES, MAX_TOTAL_BYTES
from ddssp.releasefile.signing import load_signing_key

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_JSON_BYTES",
    "MAX_TOTAL_BYTES",
    "NOISY_FIELDS",
    "PUBLIC_FIELDS",
    "SCHEMA_DECLARED",
    "SCHEMA_DISCOVERED",
    "SCHEMA_NOT_PRIVATE",
    "SIGNATURE_MEMBER",
    "Release",
    "load_signing_key",
]
