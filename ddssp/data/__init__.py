"""Reading data: the schema (column model, encode/decode, schema files, drafting), tables, safe output.

This layer imports nothing of ddssp above it (only :mod:`ddssp.errors`).

- :mod:`ddssp.data.columns`: the column model (:class:`Column`: kinds, levels, bins, missing level)
- :mod:`ddssp.data.values`: single values as level labels and levels, and written short
- :mod:`ddssp.data.within`: how values spread inside the bins of a binned column
- :mod:`ddssp.data.domainfile`: the columns of a private-pgm / hd-datasets domain file
- :mod:`ddssp.data.schema`: :class:`Schema`, an ordered list of columns, and its JSON form
- :mod:`ddssp.data.encoding`: DataFrame <-> integer codes
- :mod:`ddssp.data.schemafile`: reading schema files and private-pgm domain files
- :mod:`ddssp.data.draft`: drafting a schema from data (NOT private)
- :mod:`ddssp.data.tables`: reading CSV / Parquet tables with one clear error per problem
- :mod:`ddssp.data.counting`: exact counts (marginals, labels, histograms) in one scan; numpy,
  DuckDB and Spark backends
- :mod:`ddssp.data.fileio`: atomic writes, output-path checks, tables written safe to open
- :mod:`ddssp.data.safetext`: labels made safe for a terminal or a spreadsheet
- :mod:`ddssp.data.limits`: the limits of a release file, shared by its writer and its reader
"""

from ddssp.data.columns import INFER_MISSING_LABEL, KINDS, MAX_LEVELS, Column
from ddssp.data.encoding import ClipWarning, decode, encode
from ddssp.data.fileio import atomic_write, check_output_path, write_table
from ddssp.data.schema import FORMAT, Schema, draft_schema
from ddssp.data.schemafile import DomainKindsWarning, load_schema, schema_from_domain
from ddssp.data.tables import read_table

__all__ = [
    "INFER_MISSING_LABEL",
    "KINDS",
    "MAX_LEVELS",
    "Column",
    "draft_schema",
    "ClipWarning",
    "decode",
    "encode",
    "atomic_write",
    "check_output_path",
    "write_table",
    "FORMAT",
    "Schema",
    "DomainKindsWarning",
    "load_schema",
    "schema_from_domain",
    "read_table",
]
