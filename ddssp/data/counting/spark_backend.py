"""Spark: the shared SQL on a Spark DataFrame or on a path Spark reads."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.counting.common import PARQUET_SUFFIXES, CsvOptions, csv_header, first_line, is_spark_frame, is_uri
from ddssp.data.counting.dialect import Dialect, SqlSource, typed_source
from ddssp.data.counting.sql import SQLCounter
from ddssp.errors import DataError


# --------------------------------------------------------------------------- Spark
class SparkCounter(SQLCounter):
    """The shared SQL on a Spark DataFrame.

    Parameters
    ----------
    source : pyspark.sql.DataFrame or str or pathlib.Path
        A DataFrame given directly (e.g. ``spark.table("db.census")``), or a path Spark reads (CSV /
        Parquet; local, HDFS, S3).
    opts : CsvOptions
        How to read a CSV file.
    master : str, optional
        The Spark master of a new session (for a path); a DataFrame brings its own session.
    """

    def __init__(self, source: Any, opts: CsvOptions, master: str | None = None):
        self.dialect = Dialect("spark")
        self.opts = opts
        self.source = source
        self.where = "the Spark DataFrame" if is_spark_frame(source) else str(source)
        self.spark = source.sparkSession if is_spark_frame(source) else spark_session(master)
        self._rel = None
        self._prefix = f"ddssp_{os.getpid()}_{id(self)}_"
        self._cached: list = []
        self._views: list[str] = []

    def close(self) -> None:
        """Unpersist the cached frames and drop the temporary views this counter made."""
        for df in self._cached:
            df.unpersist()
        for v in self._views:
            self.spark.catalog.dropTempView(v)
        self._cached, self._views = [], []

    def _view(self, df, name: str) -> str:
        full = self._prefix + name
        df.createOrReplaceTempView(full)
        self._views.append(full)
        return self.dialect.ident(full)

    def _relation(self):
        if self._rel is not None:
            return self._rel
        d = self.dialect
        try:
            if is_spark_frame(self.source):
                df, names = self.source, None
            elif str(self.source).lower().endswith(PARQUET_SUFFIXES):
                df, names = self.spark.read.parquet(str(self.source)), None
            elif is_uri(self.source):  # a remote CSV: its header as Spark reads it
                o = self.opts
                df = (
                    self.spark.read.option("header", True)
                    .option("sep", o.delimiter)
                    .option("quote", '"')
                    .option("escape", '"')
                    .option("encoding", o.encoding)
                    .option("mode", "FAILFAST")
                    .option("inferSchema", False)
                    .csv(str(self.source))
                )
                names = [str(c).strip() for c in df.columns]
                df = df.toDF(*[f"f{i}" for i in range(len(names))])
            else:
                names = csv_header(self.source, self.opts)
                o = self.opts
                df = (
                    self.spark.read.option("header", True)
                    .option("sep", o.delimiter)
                    .option("quote", '"')
                    .option("escape", '"')
                    .option("encoding", o.encoding)
                    .option("mode", "FAILFAST")
                    .option("inferSchema", False)
                    .csv(str(self.source))
                )
                df = df.toDF(*[f"f{i}" for i in range(len(names))])
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"Spark cannot read {self.where}: {first_line(exc)}") from None
        rel = self._view(df, "input")
        if names is not None:
            srcs = {n: SqlSource(d.ident(f"f{i}"), "text", True) for i, n in enumerate(names)}
        else:
            srcs = {str(n).strip(): typed_source(d, d.ident(n), t) for n, t in df.dtypes}
        self._rel = (rel, srcs)
        return self._rel

    def _sql(self, sql: str):
        try:
            return self.spark.sql(sql)
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"Spark could not count {self.where}: {first_line(exc)}") from None

    def _rows(self, sql: str) -> list[tuple]:
        try:
            return [tuple(r) for r in self._sql(sql).collect()]
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. a malformed CSV row under FAILFAST
            raise DataError(f"Spark could not count {self.where}: {first_line(exc)}") from None

    def _fetch(self, sql: str) -> dict[str, np.ndarray]:
        df = self._sql(sql)
        names = df.columns
        rows = self._rows(sql)
        out = {}
        for j, name in enumerate(names):
            vals = [r[j] for r in rows]
            if all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in vals):
                mask = np.array([v is None for v in vals], dtype=bool)
                data = np.array([0 if v is None else v for v in vals], dtype=np.int64)
                out[name] = np.ma.MaskedArray(data, mask=mask)
            else:
                out[name] = np.array(vals, dtype=object)
        return out

    def _materialize(self, name: str, sql: str) -> str:
        df = self._sql(sql).cache()
        self._cached.append(df)
        return self._view(df, name)

    def _register(self, name: str, frame: pd.DataFrame, family: str | None) -> str:
        from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, StructField, StructType

        key_type = {"int": LongType(), "float": DoubleType(), "bool": BooleanType()}.get(family or "", StringType())
        schema = StructType(
            [StructField("key", key_type), StructField("code", LongType()), StructField("st", LongType())]
        )
        rows = [
            (
                None
                if pd.isna(k)
                else (
                    int(k)
                    if family == "int"
                    else float(k)
                    if family == "float"
                    else bool(k)
                    if family == "bool"
                    else str(k)
                ),
                int(c),
                int(s),
            )
            for k, c, s in zip(frame["key"], frame["code"], frame["st"])
        ]
        return self._view(self.spark.createDataFrame(rows, schema), name)


def spark_session(master: str | None = None):
    """The Spark session the spark backend counts with.

    Parameters
    ----------
    master : str, optional
        Master URL of a new session; without it, the active session (e.g. under ``spark-submit``)
        or a new one on ``local[*]``.

    Returns
    -------
    pyspark.sql.SparkSession

    Raises
    ------
    DataError
        pyspark is not installed, or Spark cannot start (no Java 17, a bad master URL).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise DataError('the spark backend needs pyspark: pip install "ddssp[spark]"') from None
    if master is None:
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
    builder = SparkSession.builder.appName("ddssp-counting").config("spark.ui.showConsoleProgress", "false")
    if master is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        master = "(from spark-submit)"  # launched by spark-submit: its --master and conf apply
    else:
        master = master or "local[*]"
        builder = builder.master(master).config("spark.ui.enabled", "false")
    if master.startswith("local"):  # one machine: few shuffle partitions (a cluster keeps its default)
        builder = builder.config("spark.sql.shuffle.partitions", "4")
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - no Java, a bad master URL
        raise DataError(
            f"cannot start Spark (master {master}): {first_line(exc)}; Spark needs Java 17 or later"
        ) from None
    session.sparkContext.setLogLevel("ERROR")
    return session
