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

from ddssp._lazy import lazy_getattr

# Lazy (PEP 562): reading a release file needs the limits and file helpers of this layer, not pandas.
_LAZY = {
    "INFER_MISSING_LABEL": "ddssp.data.columns",
    "KINDS": "ddssp.data.columns",
    "MAX_LEVELS": "ddssp.data.columns",
    "Column": "ddssp.data.columns",
    "Codebook": "ddssp.data.codebook",
    "ColumnHint": "ddssp.data.codebook",
    "load_codebook": "ddssp.data.dictionary",
    "ClipWarning": "ddssp.data.encoding",
    "decode": "ddssp.data.encoding",
    "encode": "ddssp.data.encoding",
    "atomic_write": "ddssp.data.fileio",
    "check_output_path": "ddssp.data.fileio",
    "write_table": "ddssp.data.fileio",
    "FORMAT": "ddssp.data.schema",
    "Schema": "ddssp.data.schema",
    "draft_schema": "ddssp.data.schema",
    "DomainKindsWarning": "ddssp.data.schemafile",
    "load_schema": "ddssp.data.schemafile",
    "schema_from_domain": "ddssp.data.schemafile",
    "read_table": "ddssp.data.tables",
}

__all__ = list(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
