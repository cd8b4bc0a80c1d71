"""The options of a release run, grouped: how the table is read (:class:`ReadOptions`), how its schema
is planned and undeclared columns discovered (:class:`DiscoveryOptions`), and how AIM measures
(:class:`AimOptions`).

Each is a small frozen dataclass checked once, when it is made; an error names the option as
``Class.field`` (e.g. "DiscoveryOptions.share must be in (0, 1]"), and the CLI maps those names to its
flags when it prints the error.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ddssp.errors import DDSSPError, WorkloadError

if TYPE_CHECKING:
    from ddssp.data.counting import CsvOptions
    from ddssp.marginals.aim_settings import AIMSettings

DEFAULT_DELTA = 1e-9
#: share of the zCDP budget spent on private schema discovery when some column is not declared
#: (see README "Private schema discovery")
DEFAULT_DISCOVERY_SHARE = 0.1
#: share of delta set aside for the key release of categorical columns (approximate zCDP) when
#: some column is discovered; given back to the zCDP budget when no discovered column is categorical
DISCOVERY_DELTA_SHARE = 0.5


def _positive_int_or_none(value: object, name: str, error: type[DDSSPError] = DDSSPError) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
        raise error(f"{name} must be a positive integer or None, got {value!r}")


def _str_or_none(value: object, name: str) -> None:
    if value is not None and not isinstance(value, str):
        raise DDSSPError(f"{name} must be a string or None, got {value!r}")


def _names(value: object, name: str) -> tuple[str, ...]:
    """A sequence of column names as a tuple (one bare string is one name, not its letters)."""
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise DDSSPError(f"{name} must be column names (strings), got {bad[0]!r}")
    return names


def _flag(value: object, name: str) -> None:
    if not isinstance(value, bool):
        raise DDSSPError(f"{name} must be True or False, got {value!r}")


@dataclass(frozen=True)
class ReadOptions:
    """How a release reads its table: which columns, how a file is parsed and which backend counts it.

    Parameters
    ----------
    backend : {"numpy", "duckdb", "spark"}, optional
        "numpy" reads in memory (the default for a pandas DataFrame), "duckdb" out of core (the
        default for a file), "spark" on a Spark cluster (the default for a Spark DataFrame).
        duckdb and spark discover undeclared columns of a file where it lives (aggregate queries).
    csv : ddssp.data.counting.CsvOptions, optional
        Delimiter, extra missing-value markers and text encoding of a CSV file.
    memory_limit : str, optional
        DuckDB's memory limit, such as "2GB".
    spark_master : str, optional
        The Spark master URL when a Spark session is started for a path.
    columns : sequence of str, optional
        Use only these columns of the table, in this order (default: all).
    drop : sequence of str
        Leave these columns of the table out.
    encoded : bool
        The table holds integer codes of the schema (a DataFrame; no discovery).

    Raises
    ------
    DataError
        For an unknown backend.
    DDSSPError
        For options of the wrong type.
    """

    backend: str | None = None
    csv: CsvOptions | None = None
    memory_limit: str | None = None
    spark_master: str | None = None
    columns: Sequence[str] | None = None
    drop: Sequence[str] = ()
    encoded: bool = False

    def __post_init__(self) -> None:
        from ddssp.data.counting import BACKENDS, CsvOptions
        from ddssp.errors import DataError

        if self.backend is not None and self.backend not in BACKENDS:
            raise DataError(
                f"unknown counting backend {self.backend!r} (ReadOptions.backend); use one of: {', '.join(BACKENDS)}"
            )
        if self.csv is not None and not isinstance(self.csv, CsvOptions):
            raise DDSSPError(f"ReadOptions.csv must be a ddssp.data.counting.CsvOptions, got {type(self.csv).__name__}")
        _str_or_none(self.memory_limit, "ReadOptions.memory_limit")
        _str_or_none(self.spark_master, "ReadOptions.spark_master")
        if self.columns is not None:
            object.__setattr__(self, "columns", _names(self.columns, "ReadOptions.columns"))
        object.__setattr__(self, "drop", _names(self.drop, "ReadOptions.drop"))
        _flag(self.encoded, "ReadOptions.encoded")

    @property
    def selects(self) -> bool:
        """True when ``columns`` or ``drop`` leave some columns out or reorder them."""
        return self.columns is not None or bool(self.drop)


@dataclass(frozen=True)
class DiscoveryOptions:
    """How the schema of a release is planned: which columns the schema does not declare are discovered
    under DP, and how (:func:`~ddssp.pipeline.plan.plan_schema`).

    Parameters
    ----------
    share : float
        Share of the zCDP budget spent on discovery, in (0, 1].
    categorical, numeric : sequence of str
        Columns whose kind is given rather than discovered.
    dates : sequence of str
        Columns declared a time axis: ISO dates and timestamps, or clock times (which of them is
        decided from noisy counts of parse outcomes, like the range and bins).
    bins : int, optional
        Number of bins of a discovered numeric column (default: chosen from the noisy row count).
    max_levels : int, optional
        Cap on the levels kept for a discovered categorical column.
    enabled : bool, optional
        Discover the columns the schema does not declare: True, False (such a column is an error),
        or None (the default: discover only when no schema is given).
    strict : bool
        Refuse (SchemaError) when some column cannot be discovered, instead of leaving it out of
        the release with one :class:`~ddssp.pipeline.plan.DroppedColumnsWarning`.
    accept_draft : bool
        Accept a data-derived draft schema; the release is then stamped not private.
    target : str, optional
        The column a regression will predict: its discovery gets priority (a larger share of
        discovery's budget, one key release of its own; see :func:`ddssp.data.discovery.discover`).
        :func:`~ddssp.pipeline.run.release` sets it from its ``target`` when not given.
    hints : Codebook or sequence of ColumnHint, optional
        Public knowledge of single columns (:mod:`ddssp.data.codebook`): from a data dictionary
        (:func:`~ddssp.data.dictionary.load_codebook`) or per column. A hint that declares a whole
        column (levels; whole-number bounds over at most ``max_levels`` values) makes it a declared
        column, free; declared bounds leave only the bins inside them to discovery; a declared kind
        or missing marker is used by discovery. A column the schema declares keeps the schema's
        column. Stored as a :class:`~ddssp.data.codebook.Codebook`.

    Raises
    ------
    DDSSPError
        For a share outside (0, 1], bins / max_levels that are not positive integers, or options of
        the wrong type.
    """

    share: float = DEFAULT_DISCOVERY_SHARE
    categorical: Sequence[str] = ()
    numeric: Sequence[str] = ()
    dates: Sequence[str] = ()
    bins: int | None = None
    max_levels: int | None = None
    enabled: bool | None = None
    strict: bool = False
    accept_draft: bool = False
    target: str | None = None
    hints: object = None

    def __post_init__(self) -> None:
        from ddssp.data.codebook import Codebook

        share = self.share
        if isinstance(share, bool) or not (isinstance(share, (int, float)) and 0 < float(share) <= 1):
            raise DDSSPError(f"DiscoveryOptions.share must be in (0, 1], got {share!r}")
        for name in ("categorical", "numeric", "dates"):
            object.__setattr__(self, name, _names(getattr(self, name), f"DiscoveryOptions.{name}"))
        _positive_int_or_none(self.bins, "DiscoveryOptions.bins")
        _positive_int_or_none(self.max_levels, "DiscoveryOptions.max_levels")
        if self.enabled is not None:
            _flag(self.enabled, "DiscoveryOptions.enabled")
        _flag(self.strict, "DiscoveryOptions.strict")
        _flag(self.accept_draft, "DiscoveryOptions.accept_draft")
        if self.target is not None and not isinstance(self.target, str):
            raise DDSSPError(f"DiscoveryOptions.target must be a column name, got {self.target!r}")
        object.__setattr__(self, "hints", Codebook.of(self.hints))

    def discovers(self, schema: object) -> bool:
        """Whether undeclared columns are discovered for ``schema`` (``enabled``, or no schema given).

        Parameters
        ----------
        schema : Schema or None
            The declared schema.

        Returns
        -------
        bool
        """
        return schema is None if self.enabled is None else self.enabled


@dataclass(frozen=True)
class AimOptions:
    """How AIM selects and measures: the workload and the run's settings (:func:`ddssp.marginals.aim.run_aim`).

    The one public object for AIM's options; :attr:`settings` is the
    :class:`~ddssp.marginals.aim_settings.AIMSettings` the run reads, made from it once.

    Parameters
    ----------
    workload : str, path or sequence
        ``"all-pairs"``, ``"target"`` (pairs with the target), a JSON workload file or a list of
        (clique, weight).
    max_cells : int, optional
        Leave out workload cliques with more cells than this.
    max_model_size : float, optional
        Cap on the model's size in MB (default 80 up to 25 columns, then 2000 / columns).
    rounds : int, optional
        Number of AIM rounds the per-round budget is sized for (default: chosen from the table's width).
    iters : int, optional
        Plain mirror-descent steps per round (the legacy loop); None for the fast loop.
    engine : {"numpy", "mbi"}
        Estimation engine.
    target_share : float
        With a target, the share of AIM's budget, in (0, 1), of its first phase: the target's
        one-way marginal and its pair with every other column, measured before the adaptive rounds.
        Default: :data:`~ddssp.marginals.aim_settings.DEFAULT_TARGET_SHARE`, raised on a small table
        (:func:`~ddssp.marginals.aim_target.first_phase_share`). Unused without a target.
    by : str, optional
        A public grouping column (a geography the tables are published by): the workload becomes the
        pairs within each group, every marginal (by, a, b) (:func:`~ddssp.pipeline.plan.build_workload`).
    absent_areas : bool
        With ``by`` declared (a codebook's list of areas): count its areas first, on 1% of AIM's
        budget, and leave out before AIM those the noisy counts show no rows in
        (:mod:`ddssp.pipeline.areas`). Off by default.

    Attributes
    ----------
    settings : AIMSettings
        The run's settings, made from these options when they are made.

    Raises
    ------
    WorkloadError
        For values of the wrong type or range (``rounds`` is checked against the number of columns
        when the run starts).
    """

    workload: object = "all-pairs"
    max_cells: int | None = None
    max_model_size: float | None = None
    rounds: int | None = None
    iters: int | None = None
    engine: str = "numpy"
    target_share: float | None = None
    by: str | None = None
    absent_areas: bool = False
    settings: AIMSettings = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from ddssp.marginals.aim_settings import AIMSettings

        w = self.workload
        if not isinstance(w, (str, Path)) and not (isinstance(w, Sequence) and not isinstance(w, bytes)):
            raise WorkloadError(
                f"AimOptions.workload must be 'all-pairs', 'target', a workload file or a list of (clique, weight), "
                f"got {type(w).__name__}"
            )
        if self.by is not None and (not isinstance(self.by, str) or not self.by):
            raise WorkloadError(f"AimOptions.by must be a column name or None, got {self.by!r}")
        if not isinstance(self.absent_areas, bool):
            raise WorkloadError(f"AimOptions.absent_areas must be True or False, got {self.absent_areas!r}")
        if self.absent_areas and self.by is None:
            raise WorkloadError("AimOptions.absent_areas needs a grouping column (by)")
        _positive_int_or_none(self.max_cells, "AimOptions.max_cells", WorkloadError)
        _positive_int_or_none(self.rounds, "AimOptions.rounds", WorkloadError)
        _positive_int_or_none(self.iters, "AimOptions.iters", WorkloadError)
        mms = self.max_model_size
        if mms is not None and (isinstance(mms, bool) or not (isinstance(mms, (int, float)) and mms > 0)):
            raise WorkloadError(f"AimOptions.max_model_size must be a positive number of MB or None, got {mms!r}")
        if self.engine not in ("numpy", "mbi"):
            raise WorkloadError(f"AimOptions.engine must be 'numpy' or 'mbi', got {self.engine!r}")
        share = self.target_share
        if share is not None and (isinstance(share, bool) or not (isinstance(share, (int, float)) and 0 < share < 1)):
            raise WorkloadError(f"AimOptions.target_share must be a number in (0, 1) or None, got {share!r}")
        extra = {} if share is None else {"target_share": float(share)}
        settings = AIMSettings(max_model_size=mms, rounds=self.rounds, iters=self.iters, engine=self.engine, **extra)
        object.__setattr__(self, "settings", settings)


def check_options(read: object, discovery: object, aim: object) -> None:
    """Refuse an option group of the wrong type (a dict, a flat value) in one line.

    Parameters
    ----------
    read, discovery, aim : object
        What was passed as ``read``, ``discovery`` and ``aim``.

    Raises
    ------
    DDSSPError
        Naming the parameter and the class it needs.
    """
    for name, value, cls in (("read", read, ReadOptions), ("discovery", discovery, DiscoveryOptions)):
        if not isinstance(value, cls):
            raise DDSSPError(f"{name} must be a {cls.__name__}, got {type(value).__name__}")
    if not isinstance(aim, AimOptions):
        raise DDSSPError(f"aim must be an AimOptions, got {type(aim).__name__}")
