"""MkDocs hook: Sphinx cross-reference roles in docstrings render as plain code.

The docstrings are numpydoc and name other objects the Sphinx way (``:func:`plan_schema```,
``:data:`~ddssp.dp.noise.INSECURE_STAMP```). mkdocstrings renders the backquoted part as code and
leaves the role in front of it as text; this hook drops the role and, for a name written with a
leading ``~``, keeps its last component, as Sphinx shows it.
"""

from __future__ import annotations

import re

#: a role left as text in front of the code it marks, in the rendered HTML
ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|attr|data|exc|obj|const|term):<code>(~?)([^<]*)</code>")


def strip_roles(html: str) -> str:
    """``html`` with every Sphinx role in front of inline code removed.

    Parameters
    ----------
    html : str
        A rendered page.

    Returns
    -------
    str
    """
    return ROLE.sub(lambda m: f"<code>{m.group(2).rpartition('.')[2] if m.group(1) else m.group(2)}</code>", html)


def on_page_content(html: str, **kwargs) -> str:  # noqa: ARG001
    """MkDocs hook: the page's HTML with the roles removed."""
    return strip_roles(html)
