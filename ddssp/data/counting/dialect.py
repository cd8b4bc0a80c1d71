"""The SQL dialects of the DuckDB and Spark backends, and the columns of the relation they scan
(their SQL expression and type family)."""

from __future__ import annotations

from dataclasses import dataclass

from ddssp.data.counting.typed import TIME_FAMILIES, ticks_sql, time_family
from ddssp.data.tables import csv_cell

__all__ = ["Dialect", "SqlSource", "typed_source"]


class Dialect:
    """The few places where DuckDB and Spark SQL differ.

    Parameters
    ----------
    name : str
        ``"duckdb"`` or ``"spark"``.
    """

    def __init__(self, name: str):
        self.name = name
        self.text = "STRING" if name == "spark" else "VARCHAR"

    def ident(self, name: str) -> str:
        """A quoted identifier.

        Parameters
        ----------
        name : str
            The name.

        Returns
        -------
        str
        """
        if self.name == "spark":
            return "`" + name.replace("`", "``") + "`"
        return '"' + name.replace('"', '""') + '"'

    def string(self, s: str) -> str:
        """A quoted string literal.

        Parameters
        ----------
        s : str
            The text.

        Returns
        -------
        str
        """
        if self.name == "spark":
            return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + s.replace("'", "''") + "'"

    def double(self, x: float) -> str:
        """An exact double literal (text cast: correctly rounded in both engines).

        Parameters
        ----------
        x : float
            The number.

        Returns
        -------
        str
        """
        return f"CAST({self.string(repr(float(x)))} AS DOUBLE)"

    def matches(self, v: str, pattern: str) -> str:
        """True when the whole text v matches the regular expression (anchored by the pattern).

        Parameters
        ----------
        v : str
            The SQL expression of the text.
        pattern : str
            The regular expression.

        Returns
        -------
        str
            A SQL boolean expression.
        """
        if self.name == "spark":
            return f"({v} RLIKE {self.string(pattern)})"
        return f"regexp_matches({v}, {self.string(pattern)})"

    def intdiv(self, a: str, b: int) -> str:
        """Integer division (operands that are never negative here: truncation is floor).

        Parameters
        ----------
        a : str
            The SQL expression of the dividend.
        b : int
            The divisor.

        Returns
        -------
        str
        """
        return f"(({a}) div {b})" if self.name == "spark" else f"(({a}) // {b})"

    def numeric_guard(self, v: str) -> str:
        """False for text that TRY_CAST accepts but pandas does not: '1_000' (DuckDB), '1d' / '1f'
        (Spark, Java's suffixes).

        Parameters
        ----------
        v : str
            The SQL expression of the text.

        Returns
        -------
        str
            A SQL boolean expression.
        """
        if self.name == "spark":
            return f"(instr({v}, '_') = 0 AND NOT ({v} RLIKE '[0-9.][dDfF]\\\\s*$'))"
        return f"(instr({v}, '_') = 0)"


@dataclass
class SqlSource:
    """A column of the scanned relation: its SQL expression and type family.

    Attributes
    ----------
    sql : str
        The column's SQL expression.
    family : str or None
        ``"text"``, ``"int"``, ``"float"``, ``"bool"``, a typed time (``TIME_FAMILIES``); None when the
        backends cannot encode its type.
    csv : bool
        Text from a CSV (empty cells and na markers are missing, leading spaces skipped).
    per_second : int
        Ticks per second of a typed timestamp (see :mod:`ddssp.data.counting.typed`).
    """

    sql: str
    family: str | None  # "text", "int", "float", "bool", a typed time (TIME_FAMILIES); None = unsupported
    csv: bool  # text from a CSV (empty cells and na markers are missing, leading spaces skipped)
    per_second: int = 0  # ticks per second of a typed timestamp (see ddssp.data.counting.typed)

    @property
    def typed_time(self) -> bool:
        """A typed date or timestamp: read by its ticks since 1970, never as a number."""
        return self.family in TIME_FAMILIES

    def key(self, d: Dialect) -> str:
        """The raw value a column is grouped and mapped by: its ticks for a typed time.

        Parameters
        ----------
        d : Dialect
            The SQL dialect.

        Returns
        -------
        str
            A SQL expression.
        """
        return ticks_sql(d.name, self.sql, self.family, self.per_second) if self.typed_time else self.sql

    @property
    def key_family(self) -> str | None:
        """The type family of :meth:`key`."""
        return "int" if self.typed_time else self.family

    def missing_sql(self, d: Dialect, na_values: tuple[str, ...]) -> str:
        """The SQL condition under which the column's value is a missing cell.

        NULL always; NaN in a floating-point column (as pandas reads it); in CSV text, the empty cell
        or a marker after the skipped leading spaces; in a typed text column (Parquet), a marker as it
        is. The rule the counters, discovery and the in-memory reader share.

        Parameters
        ----------
        d : Dialect
            The SQL dialect.
        na_values : tuple of str
            The missing-value markers.

        Returns
        -------
        str
            A SQL boolean expression (never NULL).
        """
        v = self.sql
        if self.family == "text" and self.csv:
            marks = ", ".join(d.string(csv_cell(m)) for m in ("", *na_values))
            return f"({v} IS NULL OR TRIM(LEADING ' ' FROM {v}) IN ({marks}))"
        if self.family == "text" and na_values:
            return f"({v} IS NULL OR {v} IN ({', '.join(d.string(m) for m in na_values)}))"
        if self.family == "float":
            return f"({v} IS NULL OR isnan({v}))"
        return f"({v} IS NULL)"


def typed_source(d: Dialect, sql: str, type_name: str) -> SqlSource:
    """A column of a Parquet file or a frame, its type family read from the engine's type name.

    Parameters
    ----------
    d : Dialect
        The SQL dialect.
    sql : str
        The column's SQL expression.
    type_name : str
        The engine's name of its type.

    Returns
    -------
    SqlSource
    """
    timed = time_family(d.name, type_name)
    if timed is not None:
        return SqlSource(sql, timed[0], False, timed[1])
    return SqlSource(sql, _family(type_name), False)


def _family(type_name: str) -> str | None:
    t = type_name.upper()
    if t.startswith(("VARCHAR", "STRING", "TEXT", "CHAR")):
        return "text"
    if t.startswith("BOOL"):
        return "bool"
    if t.startswith(
        (
            "TINYINT",
            "SMALLINT",
            "INTEGER",
            "BIGINT",
            "HUGEINT",
            "UTINYINT",
            "USMALLINT",
            "UINTEGER",
            "UBIGINT",
            "INT",
            "LONG",
            "SHORT",
            "BYTE",
        )
    ):
        return "int"
    if t.startswith(("DOUBLE", "FLOAT", "REAL")):
        return "float"
    return None
