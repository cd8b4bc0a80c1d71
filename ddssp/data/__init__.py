"""Reading data: the schema (columns, encode/decode, schema files, drafting), tables, safe output.

This layer imports nothing of ddssp above it (only :mod:`ddssp.errors`).
"""

from ddssp.data.fileio import atomic_write, check_output_path
from ddssp.data.schema import (
    FORMAT,
    INFER_MISSING_LABEL,
    KINDS,
    MAX_LEVELS,
    ClipWarning,
    Column,
    DomainKindsWarning,
    Schema,
    load_schema,
)
from ddssp.data.tables import read_table

__all__ = [
    "INFER_MISSING_LABEL", "KINDS", "MAX_LEVELS", "Column", "ClipWarning", "atomic_write",
    "check_output_path", "FORMAT", "Schema", "DomainKindsWarning", "load_schema", "read_table",
]
