"""What a release reports while it runs, besides AIM's rounds (:class:`~ddssp.marginals.aim.AIMProgress`).

A callable ``progress`` given to :func:`ddssp.release` receives these in order: the start of each
phase before AIM, each notice raised while the table is read and its schema planned (a renamed header
cell, columns left out of the release: also raised as warnings), and the planned schema. The CLI prints
its lines from them; the default progress display shows the phases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PhaseStarted:
    """A phase of the release begins.

    Parameters
    ----------
    name : str
        ``"reading"`` (the header, and the rows when they are read in memory) or ``"discovery"``
        (some column is discovered under DP).
    """

    name: str


@dataclass(frozen=True)
class Notice:
    """A warning raised while the table is read or its schema planned, reported as it happens.

    It is raised as a warning too; a caller that shows it from this event can leave that one out.

    Parameters
    ----------
    warning : Warning
        The warning (e.g. :class:`~ddssp.data.tables.UnnamedColumnWarning`,
        :class:`~ddssp.pipeline.plan.DroppedColumnsWarning`).
    """

    warning: Warning


@dataclass(frozen=True)
class SchemaPlanned:
    """The release's schema is planned; AIM starts next.

    Parameters
    ----------
    plan : SchemaPlan
        The plan: the schema, discovered columns and their notes, dropped columns, the schema's status.
    """

    plan: Any
