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
import warnings
from collections.abc import Callable, Iterator
from typing import Any

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


def _clip_note(message: Warning | str) -> Any:
    """The data layer's clipping note (a ``ClipWarning``, read by its fields: this leaf module does
    not import it), or None."""
    return message if callable(getattr(message, "with_how", None)) and hasattr(message, "parts") else None


def _reword(message: Warning | str, discovered: set[str] | None) -> Warning | str:
    """A clipping note that does not say where its range came from, saying it (nothing when the
    caller did not say which columns were discovered); other warnings unchanged."""
    note = _clip_note(message)
    if note is None or note.how is not None:
        return message
    if discovered is None:
        return note.with_how("")
    return note.with_how("discovered under DP" if note.column in discovered else "declared")


def _show_once(caught: list[warnings.WarningMessage], discovered: set[str] | None) -> None:
    seen: set[tuple[type, str]] = set()
    own = warnings.formatwarning is getattr(warnings, "_formatwarning_orig", None)
    if own:
        warnings.formatwarning = _one_line
    try:
        for w, message in _merge_clipping([(w, _reword(w.message, discovered)) for w in caught]):
            key = (w.category, str(message))
            if key in seen:
                continue
            seen.add(key)
            ours = w.category.__module__.startswith("ddssp") or os.path.abspath(w.filename).startswith(_PACKAGE)
            module = "ddssp" if ours else os.path.splitext(os.path.basename(w.filename))[0] or "unknown"
            warnings.warn_explicit(
                message,  # the warning itself: a clipping note keeps its fields for the caller
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


def _merge_clipping(
    items: list[tuple[warnings.WarningMessage, Warning | str]],
) -> list[tuple[warnings.WarningMessage, Warning | str]]:
    """The clipping notes of many columns as one note listing every column (a wide table would
    otherwise print a line per column), first; other warnings unchanged, in order."""
    notes = [(w, _clip_note(m)) for w, m in items]
    parts = {}  # column -> its first note
    for _, note in notes:
        for p in note.parts if note is not None else ():
            parts.setdefault(p.column, p)
    if len(parts) <= MERGE_CLIPPING:
        return items
    first = next(w for w, note in notes if note is not None)
    merged = type(first.message).merged(list(parts.values()))
    return [(first, merged), *((w, m) for (w, m), (_, note) in zip(items, notes) if note is None)]
