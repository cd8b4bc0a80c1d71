"""The columns of a private-pgm / hd-datasets domain file: integer codes already in the data.

A domain file ``{"column": size}`` says only how many codes each column has. Its columns become
categorical codes or ordinal numeric codes (:func:`domain_columns`); without a list of the
categorical ones every column is categorical and :class:`DomainKindsWarning` says so. Reading the
file itself is :mod:`ddssp.data.schemafile`.
"""

from __future__ import annotations

import warnings

from ddssp.data.columns import Column
from ddssp.data.values import first_few
from ddssp.errors import SchemaError
from ddssp.types import Domain


class DomainKindsWarning(UserWarning):
    """A domain file was loaded without saying which columns are categorical."""


def domain_columns(domain: Domain, categorical: list[str] | None = None, stacklevel: int = 2) -> list[Column]:
    """The columns for a private-pgm / hd-datasets domain file: integer codes ``0..m-1`` are already in the data.

    Columns listed in ``categorical`` get labels ``"0".."m-1"``; the others are numeric with
    value = code (ordinal) and bounds ``(0, m-1)``, never clipped (a code ``>= m`` is an error).

    Parameters
    ----------
    domain : dict
        ``{column: size}``.
    categorical : list of str, optional
        The categorical columns. With None every column is categorical (the conservative one-hot
        default: nothing is assumed about the order of codes) and a :class:`DomainKindsWarning`
        says so.
    stacklevel : int
        The stack level of that warning.

    Returns
    -------
    list of Column

    Raises
    ------
    SchemaError
        For an empty domain, or categorical columns not in it.
    """
    if not isinstance(domain, dict) or not domain:
        raise SchemaError("a domain must be a non-empty mapping {column: size}")
    names = [str(n) for n in domain]
    if categorical is None:
        cat = set(names)
    else:
        cat = {str(c) for c in categorical}
        unknown = sorted(cat - set(names))
        if unknown:
            raise SchemaError(
                f"categorical column(s) not in the domain file: {first_few(unknown)}; the domain has {first_few(names, 20)}"
            )
    cols = []
    for name, size in zip(names, domain.values()):
        cols.append(Column.coded(name, size) if name in cat else Column.ordinal(name, size))
    if categorical is None:
        warnings.warn(
            f"the domain file does not say which of its {len(domain)} columns are categorical; "
            "treating all as categorical (one-hot). Pass the categorical columns (the rest become "
            "ordinal numeric codes) or write a full ddssp schema",
            DomainKindsWarning,
            stacklevel=stacklevel,
        )
    return cols
