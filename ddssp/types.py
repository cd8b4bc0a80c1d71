"""Type names shared by every layer (a leaf module: it imports nothing of ddssp).

``Clique``: an ordered tuple of column names, e.g. ``("age", "income")``: one marginal's attributes.
``Domain``: column name -> number of codes of that column (codes are 0 .. size - 1).
"""

from __future__ import annotations

from collections.abc import Mapping

#: An ordered tuple of column names (the attributes of one marginal or measurement).
Clique = tuple[str, ...]

#: Column name -> domain size (number of codes, 0 .. size - 1).
Domain = Mapping[str, int]

__all__ = ["Clique", "Domain"]
