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
        for w in caught:
            text = _reword(str(w.message), discovered)
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
