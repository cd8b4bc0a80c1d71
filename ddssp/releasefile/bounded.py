"""Bounded parsing: a JSON member's structure, and a ZIP archive's directory, checked before the
parser or :mod:`zipfile` does work that grows with them.

:func:`check_json_structure` bounds a JSON text in linear time, without copying it: the values of any
kind, the nesting depth and the longest string (:class:`~ddssp.data.limits.JSONLimits`);
:func:`loads_bounded` parses it after that, with number hooks that refuse integers over
:data:`~ddssp.data.limits.MAX_INT_DIGITS` digits, NaN, infinities and floats that overflow.
:func:`check_directory` reads the member count and directory size of a ZIP archive from its
end-of-central-directory record. Used by :mod:`ddssp.releasefile.reader` (and, through it, by the
writer's pre-write check).
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from ddssp.data.limits import (
    MAX_CENTRAL_DIRECTORY_BYTES,
    MAX_INT_DIGITS,
    MAX_MEMBERS,
    RELEASE_LIMITS,
    JSONLimits,
)
from ddssp.errors import ReleaseFileError


class _JSONLimit(ValueError):
    pass


def _parse_int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_INT_DIGITS:
        raise _JSONLimit(f"an integer of {len(s.lstrip('-')):,} digits (more than {MAX_INT_DIGITS})")
    return int(s)


def _parse_float(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise _JSONLimit(f"the number {s[:20]}{'...' if len(s) > 20 else ''} overflows a float")
    return v


def _parse_constant(s: str):
    raise _JSONLimit(f"{s} is not a finite number")


#: Bytes scanned at a time when locating quotes and brackets (bounds the scan's temporaries).
_SCAN_CHUNK = 1 << 20


def _scan(data: bytes, depth_too: bool) -> tuple[int, int]:
    """The longest stretch between two quotes and (if ``depth_too``) the deepest nesting outside
    strings, scanned chunk by chunk: a bracket is inside a string when an odd number of quotes
    precede it. Temporaries are a few times the chunk, whatever the text."""
    longest, depth, deepest, last_quote, quotes_before = 0, 0, 0, -1, 0
    for off in range(0, len(data), _SCAN_CHUNK):
        a = np.frombuffer(data, dtype=np.uint8, count=min(_SCAN_CHUNK, len(data) - off), offset=off)
        q = np.flatnonzero(a == ord('"')).astype(np.int32)
        if q.size:
            longest = max(longest, int(q[0]) + off - last_quote - 1, int(np.diff(q).max(initial=1)) - 1)
            last_quote = int(q[-1]) + off
        if depth_too:
            opening = (a == ord("[")) | (a == ord("{"))
            pos = np.flatnonzero(opening | (a == ord("]")) | (a == ord("}"))).astype(np.int32)
            outside = (np.searchsorted(q, pos) + quotes_before) % 2 == 0
            steps = np.where(opening[pos[outside]], 1, -1).astype(np.int32)
            if steps.size:
                run = np.cumsum(steps) + depth
                deepest, depth = max(deepest, int(run.max())), int(run[-1])
        quotes_before += int(q.size)
    longest = max(longest, len(data) - last_quote - 1)
    return longest, deepest


def check_json_structure(data: bytes, limits: JSONLimits, what: str) -> None:
    """Refuse a JSON text whose structure exceeds ``limits``, in linear time and before it is parsed.

    Every value of a JSON text, of any kind (an empty list as much as a number), is the first one
    after an opening bracket or follows a comma or a colon, and every string has two quotes: those
    bytes, counted wherever they stand (inside strings too, which only over-counts), bound the values
    the parser would build. The longest stretch between two quotes bounds the longest string. The
    nesting depth is the running sum of the brackets outside strings (a bracket is inside a string
    when an odd number of quotes precede it); a text with escaped quotes (``\\"``) has its depth
    checked after parsing instead (:func:`_depth`), the values it may build being bounded all the same.

    Parameters
    ----------
    data : bytes
        The JSON text.
    limits : JSONLimits
        Its caps (bytes, values, depth, longest string).
    what : str
        What it is, for messages.

    Raises
    ------
    ReleaseFileError
        When over a cap.
    """
    if len(data) > limits.max_bytes:
        raise ReleaseFileError(f"{what} is refused: {len(data):,} bytes, more than the cap of {limits.max_bytes:,}")
    opens = data.count(b"[") + data.count(b"{")
    closes = data.count(b"]") + data.count(b"}")
    quotes = data.count(b'"')
    items = max(opens + data.count(b",") + data.count(b":"), closes, quotes // 2)
    if items > limits.max_items:
        raise ReleaseFileError(
            f"{what} is refused: it holds about {items:,} values, more than the cap of {limits.max_items:,}"
        )
    longest, depth = _scan(data, depth_too=b'\\"' not in data)  # escaped quotes: depth after parsing
    if depth > limits.max_depth:
        raise ReleaseFileError(
            f"{what} is refused: JSON nested too deep ({depth:,} levels, more than the cap of {limits.max_depth})"
        )
    if longest > limits.max_string:
        raise ReleaseFileError(
            f"{what} is refused: it holds a string (or a stretch without quotes) of {longest:,} bytes, "
            f"more than the cap of {limits.max_string:,}"
        )


def _depth(obj: Any) -> int:
    """The nesting depth of a parsed JSON value (a list or an object is one level), without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (list, dict)):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in (x.values() if isinstance(x, dict) else x))
    return deepest


def loads_bounded(data: bytes, what: str, limits: JSONLimits = RELEASE_LIMITS) -> Any:
    """JSON parsed after :func:`check_json_structure`, with the number limits of the module docstring.

    Parameters
    ----------
    data : bytes
        The JSON text.
    what : str
        What it is, for messages.
    limits : JSONLimits
        The member's structural caps (default: those of release.json).

    Returns
    -------
    any

    Raises
    ------
    ReleaseFileError
        For too many values, nesting too deep, a string too long, numbers over the limits, or
        invalid JSON.
    """
    check_json_structure(data, limits, what)
    try:
        doc = json.loads(data, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
        if b'\\"' in data and _depth(doc) > limits.max_depth:  # escaped quotes: depth not known before
            raise _JSONLimit(f"JSON nested too deep (more than the cap of {limits.max_depth} levels)")
        return doc
    except _JSONLimit as exc:
        raise ReleaseFileError(f"{what} is refused: {exc}") from None
    except RecursionError:
        raise ReleaseFileError(f"{what} is refused: JSON nested too deep") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReleaseFileError(f"{what} is not valid JSON ({str(exc)[:200]})") from None


#: End-of-central-directory record (22 bytes and a comment of up to 65,535), and the ZIP64 locator
#: (20 bytes) and record (56 bytes) that precede it in a large archive.
_EOCD, _EOCD64_LOCATOR, _EOCD64 = b"PK\x05\x06", b"PK\x06\x07", b"PK\x06\x06"


def check_directory(fh, path: Path) -> None:
    """Refuse an archive whose central directory lists more members, or more bytes, than a release has.

    Read from the end-of-central-directory record (found as :mod:`zipfile` finds it, and its ZIP64
    counterpart when present) before :class:`zipfile.ZipFile` reads the directory, whose cost grows
    with the members it lists whatever they hold.

    Parameters
    ----------
    fh : binary file object
        The open archive.
    path : pathlib.Path
        Its path, for messages.

    Raises
    ------
    ReleaseFileError
        For more than :data:`~ddssp.data.limits.MAX_MEMBERS` members or a directory over
        :data:`~ddssp.data.limits.MAX_CENTRAL_DIRECTORY_BYTES`.
    """
    size = fh.seek(0, os.SEEK_END)
    tail = min(size, 22 + 65535 + 20 + 56)
    fh.seek(size - tail)
    data = fh.read(tail)
    fh.seek(0)
    if data[-22:-18] == _EOCD and data[-2:] == b"\0\0":
        pos = len(data) - 22
    else:
        pos = data.rfind(_EOCD, max(len(data) - 22 - 65535, 0))
        if pos < 0 or len(data) - pos < 22:
            return  # not an archive: zipfile says so
    members, cd_bytes = struct.unpack_from("<HI", data, pos + 10)
    if pos >= 76 and data[pos - 20 : pos - 16] == _EOCD64_LOCATOR and data[pos - 76 : pos - 72] == _EOCD64:
        members, cd_bytes = struct.unpack_from("<QQ", data, pos - 76 + 32)
    if members > MAX_MEMBERS or cd_bytes > MAX_CENTRAL_DIRECTORY_BYTES:
        raise ReleaseFileError(
            f"{path}: the archive lists {members:,} members in a {cd_bytes:,}-byte directory, more than a "
            f"release holds ({MAX_MEMBERS:,} members); refusing it without reading the directory"
        )
