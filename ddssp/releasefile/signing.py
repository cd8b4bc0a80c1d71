"""Optional Ed25519 signatures of a release file (needs the ``cryptography`` package).

The signature covers manifest.json, which holds the SHA-256 and size of every other member, so it
covers the whole release. It is written to :data:`~ddssp.releasefile.format.SIGNATURE_MEMBER`.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from ddssp.errors import DDSSPError, ReleaseFileError


def _crypto():
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise DDSSPError("signing needs the 'cryptography' package: pip install 'ddssp[sign]'") from None
    return serialization, ed25519


def _read_key_bytes(key: str | Path | bytes, what: str) -> bytes:
    if isinstance(key, bytes):
        return key
    p = Path(key)
    if not p.is_file():
        raise DDSSPError(f"{what} {p} not found")
    if p.stat().st_size > 64 << 10:
        raise DDSSPError(f"{what} {p} is not a PEM key (too large)")
    return p.read_bytes()


def load_signing_key(key: Any):
    """An Ed25519 private key, checked before any work.

    Parameters
    ----------
    key : str, path-like, bytes or key object
        A PEM file, PEM bytes, or an Ed25519 private key.

    Returns
    -------
    cryptography Ed25519PrivateKey

    Raises
    ------
    DDSSPError
        When it is not an unencrypted Ed25519 PEM private key, or ``cryptography`` is missing.
    """
    return load_private_key(key)


def load_private_key(key: Any):
    """An Ed25519 private key from a PEM file, PEM bytes, or a key object.

    Parameters
    ----------
    key : str, path-like, bytes or key object
        The key.

    Returns
    -------
    cryptography Ed25519PrivateKey

    Raises
    ------
    DDSSPError
        When it is not an unencrypted Ed25519 PEM private key, or ``cryptography`` is missing.
    """
    serialization, ed25519 = _crypto()
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key
    data = _read_key_bytes(key, "signing key")
    try:
        k = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise DDSSPError(
            f"the signing key is not an unencrypted PEM private key ({exc}); make one with "
            "`openssl genpkey -algorithm ed25519 -out key.pem`"
        ) from None
    if not isinstance(k, ed25519.Ed25519PrivateKey):
        raise DDSSPError(
            "the signing key is not an Ed25519 key; make one with `openssl genpkey -algorithm ed25519 -out key.pem`"
        )
    return k


def load_public_key(key: str | Path | bytes):
    """An Ed25519 public key from a PEM file or PEM bytes.

    Parameters
    ----------
    key : str, pathlib.Path or bytes
        The key.

    Returns
    -------
    cryptography Ed25519PublicKey

    Raises
    ------
    DDSSPError
        When it is not an Ed25519 PEM public key, or ``cryptography`` is missing.
    """
    serialization, ed25519 = _crypto()
    data = _read_key_bytes(key, "public key")
    try:
        k = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise DDSSPError(
            f"the public key is not a PEM public key ({exc}); export it with "
            "`openssl pkey -in key.pem -pubout -out key.pub.pem`"
        ) from None
    if not isinstance(k, ed25519.Ed25519PublicKey):
        raise DDSSPError("the public key is not an Ed25519 key")
    return k


def raw_public(pub) -> bytes:
    """The 32 raw bytes of an Ed25519 public key.

    Parameters
    ----------
    pub : cryptography Ed25519PublicKey
        The key.

    Returns
    -------
    bytes
    """
    serialization, _ = _crypto()
    return pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def fingerprint(pub) -> str:
    """The key's fingerprint: ``"ed25519:"`` and the first 16 hex digits of the SHA-256 of its raw bytes.

    Parameters
    ----------
    pub : cryptography Ed25519PublicKey
        The key.

    Returns
    -------
    str
    """
    return "ed25519:" + hashlib.sha256(raw_public(pub)).hexdigest()[:16]


def signature_document(private: Any, manifest_bytes: bytes) -> dict[str, str]:
    """The content of the signature member: the public key, its fingerprint and the signature.

    Parameters
    ----------
    private : cryptography Ed25519PrivateKey
        The signing key.
    manifest_bytes : bytes
        manifest.json as written.

    Returns
    -------
    dict
        ``algorithm``, ``public_key`` (base64), ``fingerprint``, ``signature`` (base64).
    """
    pub = private.public_key()
    return {
        "algorithm": "ed25519",
        "public_key": base64.b64encode(raw_public(pub)).decode(),
        "fingerprint": fingerprint(pub),
        "signature": base64.b64encode(private.sign(manifest_bytes)).decode(),
    }


def embedded_fingerprint(signature: dict[str, Any] | None) -> str | None:
    """Fingerprint of the key embedded in a signature member (NOT verified).

    Parameters
    ----------
    signature : dict or None
        The signature member.

    Returns
    -------
    str or None
        The fingerprint, "malformed", or None without a signature.
    """
    if not signature:
        return None
    try:
        return "ed25519:" + hashlib.sha256(base64.b64decode(signature["public_key"])).hexdigest()[:16]
    except (ValueError, KeyError):
        return "malformed"


def embedded_signature_valid(signature: dict[str, Any] | None, manifest_bytes: bytes | None) -> bool | None:
    """Whether a signature checks, on the manifest bytes, against the public key embedded in it.

    True only says the file is unchanged since someone signed it; who signed it needs
    :func:`verify_signature` with a trusted key.

    Parameters
    ----------
    signature : dict or None
        The signature member.
    manifest_bytes : bytes or None
        manifest.json as read.

    Returns
    -------
    bool or None
        None when there is no signature or ``cryptography`` is not installed.
    """
    if not signature or manifest_bytes is None:
        return None
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        return None
    try:
        pub = ed25519.Ed25519PublicKey.from_public_bytes(base64.b64decode(signature["public_key"], validate=True))
        pub.verify(base64.b64decode(signature["signature"], validate=True), manifest_bytes)
    except (InvalidSignature, ValueError, KeyError, TypeError):
        return False
    return True


def verify_signature(
    signature: dict[str, Any] | None, manifest_bytes: bytes | None, public_key: str | Path | bytes
) -> str:
    """Check ``signature`` (a signature member as read) of ``manifest_bytes`` against ``public_key``.

    Parameters
    ----------
    signature
        The signature member of the release, or None if it has none.
    manifest_bytes
        manifest.json exactly as read from the file.
    public_key
        A PEM file or PEM bytes of an Ed25519 public key.

    Returns
    -------
    str
        The key's fingerprint (``ed25519:`` and 16 hex digits).

    Raises
    ------
    ReleaseFileError
        If the release is not signed, or not by that key, or the signature does not match.
    DDSSPError
        If the public key cannot be read or ``cryptography`` is missing.
    """
    if not signature or manifest_bytes is None:
        raise ReleaseFileError("the release is not signed (it was written without --sign-key)")
    pub = load_public_key(public_key)
    fp = fingerprint(pub)
    from cryptography.exceptions import InvalidSignature

    try:
        embedded = base64.b64decode(signature["public_key"], validate=True)
        sig = base64.b64decode(signature["signature"], validate=True)
    except ValueError:
        raise ReleaseFileError("the release's signature is malformed") from None
    if embedded != raw_public(pub):
        other = "ed25519:" + hashlib.sha256(embedded).hexdigest()[:16]
        raise ReleaseFileError(f"the release was signed by another key ({other}), not by {fp}")
    try:
        pub.verify(sig, manifest_bytes)
    except InvalidSignature:
        raise ReleaseFileError(f"the signature does not match key {fp}: the release was modified or forged") from None
    return fp
