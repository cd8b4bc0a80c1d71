"""Making a release from data: plan the schema and workload, run AIM, return the
:class:`~ddssp.releasefile.Release`.

Modules: :mod:`~ddssp.pipeline.options` (:class:`ReadOptions`, :class:`DiscoveryOptions`,
:class:`AimOptions`, defaults), :mod:`~ddssp.pipeline.source` (the table: header, column selection,
backend, rows in memory when needed), :mod:`~ddssp.pipeline.plan` (:func:`plan_schema`,
:func:`build_workload`), :mod:`~ddssp.pipeline.events` (what a release reports while it runs) and
:mod:`~ddssp.pipeline.run` (:func:`release`, also ``ddssp.release``).
"""

from __future__ import annotations

from ddssp.pipeline.events import Notice, PhaseStarted, SchemaPlanned
from ddssp.pipeline.options import (
    DEFAULT_DELTA,
    DEFAULT_DISCOVERY_SHARE,
    DISCOVERY_DELTA_SHARE,
    AimOptions,
    DiscoveryOptions,
    ReadOptions,
)
from ddssp.pipeline.plan import (
    DroppedColumnsWarning,
    SchemaPlan,
    build_workload,
    declared_kinds,
    plan_schema,
)
from ddssp.pipeline.run import release
from ddssp.pipeline.source import read_frame

__all__ = [
    "AimOptions",
    "DEFAULT_DELTA",
    "DEFAULT_DISCOVERY_SHARE",
    "DISCOVERY_DELTA_SHARE",
    "DiscoveryOptions",
    "DroppedColumnsWarning",
    "Notice",
    "PhaseStarted",
    "ReadOptions",
    "SchemaPlan",
    "SchemaPlanned",
    "build_workload",
    "declared_kinds",
    "plan_schema",
    "read_frame",
    "release",
]
