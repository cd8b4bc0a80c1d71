"""Making a release from data: plan the schema and workload, run AIM, return the
:class:`~ddssp.releasefile.Release`.

Modules: :mod:`~ddssp.pipeline.options` (:class:`ReadOptions`, :class:`DiscoveryOptions`,
:class:`AimOptions`, defaults),
:mod:`~ddssp.pipeline.plan` (:func:`plan_schema`, :func:`build_workload`) and
:mod:`~ddssp.pipeline.run` (:func:`release`, also ``ddssp.release``).
"""

from __future__ import annotations

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

__all__ = [
    "AimOptions",
    "DEFAULT_DELTA",
    "DEFAULT_DISCOVERY_SHARE",
    "DISCOVERY_DELTA_SHARE",
    "DiscoveryOptions",
    "DroppedColumnsWarning",
    "ReadOptions",
    "SchemaPlan",
    "build_workload",
    "declared_kinds",
    "plan_schema",
    "release",
]
