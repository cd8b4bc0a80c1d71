"""The release file: the :class:`Release` model, its file format, bounded reading, self-check and
optional Ed25519 signatures.

Modules: :mod:`~ddssp.releasefile.model` (:class:`Release`), :mod:`~ddssp.releasefile.format`
(format name, version, fields), :mod:`~ddssp.releasefile.reader` (defensive reading and its limits),
:mod:`~ddssp.releasefile.writer`, :mod:`~ddssp.releasefile.selfcheck`,
:mod:`~ddssp.releasefile.signing`. Making a release from data is :mod:`ddssp.pipeline`.
"""

from __future__ import annotations

from ddssp._lazy import lazy_getattr
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

# Lazy (PEP 562): the model's numeric stack is imported once a release is used, so that a malformed
# or hostile file is refused by the reader before it.
_LAZY = {
    "Release": "ddssp.releasefile.model",
    "MAX_JSON_BYTES": "ddssp.releasefile.reader",
    "MAX_TOTAL_BYTES": "ddssp.releasefile.reader",
    "load_signing_key": "ddssp.releasefile.signing",
}

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

__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
