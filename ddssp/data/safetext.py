"""Text from a release or a table made safe for where it is shown: a terminal, or a spreadsheet.

Labels and column names come from the data (or from whoever wrote a release file), so they may hold
anything: terminal control sequences (``ESC ]0;title BEL``, ``ESC [2J``), bidirectional overrides that
reorder what is shown, or text a spreadsheet runs as a formula (``=HYPERLINK(...)``, ``@SUM(...)``).
:func:`terminal_text` escapes the first two for printing; :func:`neutralise_formulas` prefixes the
third with ``'`` (the OWASP rule for CSV injection) in the text columns of a table about to be written.
"""

from __future__ import annotations

import re
from typing import Any

#: C0 and C1 control characters, DEL, and the bidirectional embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: A cell a spreadsheet reads as a formula starts with one of these.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def terminal_text(value: Any) -> str:
    """``value`` as text with every control character escaped (``\\x1b``, ``\\u202e``), on one line.

    Parameters
    ----------
    value : any
        A label, a column name, a message.

    Returns
    -------
    str
    """
    return _CONTROL.sub(_escape, str(value))


def formula_safe(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, with a leading ``'``; anything else as it is.

    Parameters
    ----------
    value : any
        A cell.

    Returns
    -------
    any
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _is_text(s: Any) -> bool:
    import pandas as pd

    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.categories.dtype == object or pd.api.types.is_string_dtype(s.cat.categories.dtype)
    return s.dtype == object or pd.api.types.is_string_dtype(s.dtype)


def neutralise_formulas(df: Any) -> Any:
    """A copy of ``df`` whose text cells and column names are safe to open in a spreadsheet.

    A text cell that starts with ``= + - @``, a tab or a carriage return gets a leading ``'``, which
    spreadsheets show as text. Numeric, boolean and date columns are left as they are, so a negative
    number stays a number.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.

    Returns
    -------
    pandas.DataFrame
    """
    import pandas as pd

    out = df.copy()
    for name in out.columns:
        s = out[name]
        if not _is_text(s):
            continue
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = list(s.cat.categories)
            safe = [formula_safe(c) for c in cats]
            if safe != cats and len(set(safe)) == len(safe):
                out[name] = s.cat.rename_categories(safe)
            elif safe != cats:  # "=a" and "'=a" both present: plain text cells
                out[name] = s.astype(object).map(formula_safe, na_action="ignore")
        else:
            out[name] = s.map(formula_safe, na_action="ignore")
    out.columns = [formula_safe(str(c)) if isinstance(c, str) else c for c in out.columns]
    return out
