"""Warnings a user reads: each distinct one once, in one line, without a source line.

Python shows a warning as ``file:line: Category: message`` followed by the source line that raised
it, once per place; a release or a prediction raises the same note from deep inside ddssp for each
column, which reads as noise in a notebook. :func:`warnings_once` collects the warnings of one call
and shows each distinct one afterwards as ``Category: message``. The caller's filters still decide
what is shown, and a caller's own ``warnings.formatwarning`` (the CLI's) is kept.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

_UNSPECIFIED = "(declared, or discovered under DP)"
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _one_line(message, category, filename, lineno, line=None):  # noqa: ARG001
    return f"{category.__name__}: {message}\n"


@contextlib.contextmanager
def warnings_once(context: dict[str, Any] | None = None) -> Iterator[None]:
    """Collect the warnings raised inside the block and show each distinct one once, in one line.

    Parameters
    ----------
    context : dict, optional
        Filled in by the block: ``context["discovered"]`` (a set of column names) turns a clipping
        note's "(declared, or discovered under DP)" range into the one that applies.
    """
    context = {} if context is None else context
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        _show_once(caught, context.get("discovered"))


def tidy_warnings(func: Callable) -> Callable:
    """Decorator form of :func:`warnings_once` (nested calls show their warnings once, outermost)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with warnings_once():
            return func(*args, **kwargs)

    return wrapper


def _reword(text: str, discovered: set[str] | None) -> str:
    if _UNSPECIFIED not in text:
        return text
    m = re.match(r"column '([^']*)':", text)
    if discovered is None or m is None:
        return text.replace(" " + _UNSPECIFIED, "")
    how = "discovered under DP" if m.group(1) in discovered else "declared"
    return text.replace(_UNSPECIFIED, f"({how})")


def _show_once(caught: list[warnings.WarningMessage], discovered: set[str] | None) -> None:
    seen: set[tuple[type, str]] = set()
    own = warnings.formatwarning is getattr(warnings, "_formatwarning_orig", None)
    if own:
        warnings.formatwarning = _one_line
    try:
        for w, text in _merge_clipping([(w, _reword(str(w.message), discovered)) for w in caught]):
            key = (w.category, text)
            if key in seen:
                continue
            seen.add(key)
            ours = w.category.__module__.startswith("ddssp") or os.path.abspath(w.filename).startswith(_PACKAGE)
            module = "ddssp" if ours else os.path.splitext(os.path.basename(w.filename))[0] or "unknown"
            warnings.warn_explicit(
                text,
                w.category,
                "ddssp" if ours else w.filename,
                0 if ours else w.lineno,
                module=module,  # warn_explicit shows nothing when module is None
                registry={},
            )
    finally:
        if own:
            warnings.formatwarning = warnings._formatwarning_orig  # type: ignore[attr-defined]


#: more clipping notes than this are shown as one
MERGE_CLIPPING = 3
_CLIP = re.compile(
    r"column '(?P<name>[^']*)': (?P<k>\d+) of (?P<n>\d+) value\(s\) outside the schema's range (?P<range>\[.*\])"
    r" (?P<how>\([^)]*\) )?were clipped to it"
)


def _merge_clipping(items: list[tuple[warnings.WarningMessage, str]]) -> list[tuple[warnings.WarningMessage, str]]:
    """The clipping notes of many columns as one note listing every column (a wide table would
    otherwise print a line per column); other warnings unchanged, in order."""
    matched = [(w, t, _CLIP.match(t) if w.category.__name__ == "ClipWarning" else None) for w, t in items]
    clips = [(w, t, m) for w, t, m in matched if m]
    names = {m.group("name") for _, _, m in clips}
    if len(names) <= MERGE_CLIPPING:
        return items
    parts, seen = [], set()
    for _, _, m in clips:
        if m.group("name") not in seen:
            seen.add(m.group("name"))
            parts.append(f"'{m.group('name')}' {m.group('k')} of {m.group('n')} to {m.group('range')}")
    how = {m.group("how") for _, _, m in clips}
    how_text = f" {next(iter(how)).strip()}" if len(how) == 1 and None not in how else ""
    text = (
        f"values outside the schema's range{how_text} were clipped to it in {len(parts)} columns: "
        + "; ".join(parts)
        + " (local note for the data holder; nothing about this is released)"
    )
    first = clips[0][0]
    merged = [(w, t) for w, t, m in matched if not m]
    return [(first, text), *merged]
