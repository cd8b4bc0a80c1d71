"""The options of a release run, grouped: how the table is read, how undeclared columns are discovered.

Both are small frozen dataclasses checked when made; :func:`ddssp.release` also takes their fields as
flat keywords and builds them.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddssp.errors import DDSSPError

if TYPE_CHECKING:
    from ddssp.data.counting import CsvOptions

DEFAULT_DELTA = 1e-9
#: share of the zCDP budget spent on private schema discovery when some column is not declared
#: (see README "Private schema discovery")
DEFAULT_DISCOVERY_SHARE = 0.1
#: share of delta set aside for the key release of categorical columns (approximate zCDP) when
#: some column is discovered; given back to the zCDP budget when no discovered column is categorical
DISCOVERY_DELTA_SHARE = 0.5


def _positive_int_or_none(value: object, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
        raise DDSSPError(f"{name} must be a positive integer or None, got {value!r}")


def _str_or_none(value: object, name: str) -> None:
    if value is not None and not isinstance(value, str):
        raise DDSSPError(f"{name} must be a string or None, got {value!r}")


@dataclass(frozen=True)
class ReadOptions:
    """How the counting layer reads a table given by path (or a Spark DataFrame).

    Parameters
    ----------
    backend : {"numpy", "duckdb", "spark"}, optional
        "numpy" reads in memory (the default for a pandas DataFrame), "duckdb" out of core (the
        default for a file), "spark" on a Spark cluster (the default for a Spark DataFrame).
    csv : ddssp.data.counting.CsvOptions, optional
        Delimiter, extra missing-value markers and text encoding of a CSV file.
    memory_limit : str, optional
        DuckDB's memory limit, such as "2GB".
    spark_master : str, optional
        The Spark master URL when a Spark session is started for a path.

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

    def __post_init__(self) -> None:
        from ddssp.data.counting import BACKENDS, CsvOptions
        from ddssp.errors import DataError

        if self.backend is not None and self.backend not in BACKENDS:
            raise DataError(f"unknown counting backend {self.backend!r}; use one of: {', '.join(BACKENDS)}")
        if self.csv is not None and not isinstance(self.csv, CsvOptions):
            raise DDSSPError(f"csv options must be a ddssp.data.counting.CsvOptions, got {type(self.csv).__name__}")
        _str_or_none(self.memory_limit, "memory_limit")
        _str_or_none(self.spark_master, "spark_master")


@dataclass(frozen=True)
class DiscoveryOptions:
    """How the columns the schema does not declare are discovered under DP (:func:`plan_schema`).

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

    Raises
    ------
    DDSSPError
        For a share outside (0, 1], or bins / max_levels that are not positive integers.
    """

    share: float = DEFAULT_DISCOVERY_SHARE
    categorical: Sequence[str] = ()
    numeric: Sequence[str] = ()
    dates: Sequence[str] = ()
    bins: int | None = None
    max_levels: int | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.share, (int, float)) and 0 < float(self.share) <= 1):
            raise DDSSPError(f"--discovery-share must be in (0, 1], got {self.share!r}")
        for name in ("categorical", "numeric", "dates"):
            v = getattr(self, name) or ()
            object.__setattr__(self, name, (v,) if isinstance(v, str) else tuple(v))  # one name, not letters
        _positive_int_or_none(self.bins, "bins")
        _positive_int_or_none(self.max_levels, "max_levels")


@dataclass(frozen=True)
class AimOptions:
    """How AIM selects and measures (:func:`ddssp.marginals.aim.run_aim`, which checks the values).

    Parameters
    ----------
    workload : str or sequence
        ``"all-pairs"``, ``"target-pairs"``, a workload file or a list of (clique, weight).
    max_cells : int, optional
        Leave out workload cliques with more cells than this.
    max_model_size : float or None
        Cap on the model's size in MB (None: AIM's default for the number of columns).
    rounds : int, optional
        Number of AIM rounds (default: chosen from the budget).
    iters : int, optional
        Plain mirror-descent steps per round (the legacy loop); None for the fast loop.
    engine : {"numpy", "mbi"}
        Estimation engine.
    """

    workload: object = "all-pairs"
    max_cells: int | None = None
    max_model_size: float | None = None
    rounds: int | None = None
    iters: int | None = None
    engine: str = "numpy"
