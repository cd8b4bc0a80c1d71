"""The counting layer: numpy, DuckDB and Spark give identical exact counts, equal to Schema.encode +
np.bincount, on tables with every column kind; bad input raises one clear error; a CSV larger than
DuckDB's memory limit is counted."""

from __future__ import annotations

import itertools
import os
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data.columns import Column
from ddssp.data.counting import (
    CsvOptions,
    count_histograms,
    count_labels,
    count_marginals,
    counts_from_codes,
)
from ddssp.data.encoding import ClipWarning
from ddssp.data.schema import Schema
from ddssp.data.tables import read_table
from ddssp.errors import DataError, SchemaError

TRICKY = [
    "a",
    "b",
    "c",
    "rare1",
    "",
    "?",
    "NA",
    "1",
    "1.0",
    "01",
    " 7",
    "7",
    "x y",
    "it's",
    'q"uote',
    "é",
    "1e0",
    "  ",
    "-0",
    "c,d",
]


def make_table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Raw text cells covering every column kind: labels with an other level, numbers written several
    ways, values outside the bounds, exactly on edges, non-numeric text, empty cells and '?'."""
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 30, n)
    num = np.array([f"{v:.{k}f}" for v, k in zip(x, rng.integers(0, 4, n))], dtype=object)
    for p, tok in (
        (0.05, ""),
        (0.03, "abc"),
        (0.02, "1e2"),
        (0.02, "inf"),
        (0.02, "?"),
        (0.02, "20"),
        (0.01, " 40.5"),
        (0.01, "1_000"),
        (0.01, "nan"),
        (0.01, "-inf"),
    ):
        num = np.where(rng.random(n) < p, tok, num)
    return pd.DataFrame(
        {
            "cat": rng.choice(TRICKY, n),
            "cat2": rng.choice(["u", "v", "w"], n),
            "num": num,
            "lev": rng.choice(["1", "2", "3", "4", "5", "2.0", "6", "0", "2.5", "", " 3", "x", "-1"], n),
            "code": rng.integers(0, 4, n).astype(str),
            "ord": rng.integers(0, 6, n).astype(str),
        }
    )


def make_schema() -> Schema:
    return Schema(
        [
            Column.categorical(
                "cat", ["a", "b", "c", "1", "7", "x y", "it's", 'q"uote', "é", "0", "c,d"], missing="<other>"
            ),
            Column.categorical("cat2", ["u", "v", "w"]),
            Column.binned("num", [0, 20, 40.5, 60, 80, 100], missing="<missing>"),
            Column.levels("lev", [1, 2, 3, 4, 5], missing="<other>"),
            Column.coded("code", 4),
            Column.ordinal("ord", 6),
        ]
    )


CLIQUES = [c for k in (1, 2, 3) for c in itertools.combinations(make_schema().names, k)]


def reference(df: pd.DataFrame, schema: Schema, cliques) -> dict:
    """Schema.encode + np.bincount: the definition every backend must match."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        enc = schema.encode(df)
    return counts_from_codes({n: enc[n].to_numpy() for n in schema.names}, schema.domain, cliques)


def assert_same(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for c in a:
        assert a[c].dtype == np.int64 and b[c].dtype == np.int64, c
        assert a[c].shape == b[c].shape, c
        assert np.array_equal(a[c], b[c]), c


@pytest.fixture(scope="module")
def csv_table(tmp_path_factory):
    p = tmp_path_factory.mktemp("counting") / "t.csv"
    make_table(3000, seed=0).to_csv(p, index=False)
    return p


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory):
    """A Parquet file with integer, float (NaN, inf, huge), boolean and string (None, '') columns."""
    rng = np.random.default_rng(1)
    n = 3000
    df = pd.DataFrame(
        {
            "i": rng.integers(-2, 5, n),
            "f": rng.choice([1.0, 2.0, 2.5, 0.1, np.nan, 7.0, 1e20, np.inf, -3.0], n),
            "x": rng.normal(10, 10, n),
            "xi": rng.integers(0, 30, n),
            "b": rng.random(n) < 0.3,
            "s": pd.array(rng.choice(["a", "b", None, "", "1.0"], n), dtype=object),
            "lv": rng.choice([1.0, 2.0, 3.0, np.nan, 2.5], n),
        }
    )
    schema = Schema(
        [
            Column.categorical("i", ["-2", "-1", "0", "1", "2", "3"], missing="other"),
            Column.categorical("f", ["1", "2", "2.5", "0.1", "7", "100000000000000000000", "inf", "x"], missing="NA"),
            Column.binned("x", [0, 5, 10, 15, 20]),
            Column.binned("xi", [3, 10, 20]),
            Column.categorical("b", ["False", "True"]),
            Column.categorical("s", ["a", "", "1"], missing="m"),
            Column.levels("lv", [1, 2, 3], missing="o"),
        ]
    )
    p = tmp_path_factory.mktemp("counting") / "t.parquet"
    df.to_parquet(p)
    return p, df, schema


# --------------------------------------------------------------------------- equality
@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_csv_counts_equal_schema_encode(csv_table, backend):
    schema = make_schema()
    opts = CsvOptions(na_values=("?",))
    ref = reference(read_table(csv_table, na_values=["?"]), schema, CLIQUES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        got = count_marginals(csv_table, schema, CLIQUES, backend=backend, csv_options=opts)
    assert_same(ref, got)
    # every column kind is exercised: the other / missing levels and both end bins are used
    assert got[("cat",)][-1] > 0 and got[("num",)][-1] > 0 and got[("lev",)][-1] > 0
    assert got[("num",)][0] > 0 and got[("num",)][4] > 0


def test_csv_without_na_marker_differs_only_by_the_marker(csv_table):
    schema = make_schema()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        got = count_marginals(csv_table, schema, CLIQUES, backend="duckdb")
    assert_same(reference(read_table(csv_table), schema, CLIQUES), got)


@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_parquet_and_dataframe_typed_columns(typed_table, backend):
    path, df, schema = typed_table
    cliques = [c for k in (1, 2) for c in itertools.combinations(schema.names, k)]
    ref = reference(pd.read_parquet(path), schema, cliques)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        assert_same(ref, count_marginals(path, schema, cliques, backend=backend))
        assert_same(ref, count_marginals(df, schema, cliques, backend=backend))


def test_clique_axes_follow_the_clique_order(csv_table):
    schema = make_schema()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        got = count_marginals(
            csv_table,
            schema,
            [("num", "cat"), ("cat", "num")],
            backend="duckdb",
            csv_options=CsvOptions(na_values=("?",)),
        )
    assert np.array_equal(got[("num", "cat")], got[("cat", "num")].T)


def test_csv_options_delimiter_and_encoding(tmp_path):
    df = pd.DataFrame({"a": ["é", "b", "é", "c;d"], "b": ["1", "2", "NULL", "3"]})
    p = tmp_path / "t.csv"
    df.to_csv(p, sep=";", index=False, encoding="latin-1")
    schema = Schema([Column.categorical("a", ["é", "b", "c;d"]), Column.levels("b", [1, 2, 3], missing="m")])
    opts = CsvOptions(delimiter=";", na_values=("NULL",), encoding="latin-1")
    cl = [("a",), ("b",), ("a", "b")]
    ref = count_marginals(p, schema, cl, backend="numpy", csv_options=opts)
    assert ref[("b",)].tolist() == [1, 1, 1, 1]
    assert_same(ref, count_marginals(p, schema, cl, backend="duckdb", csv_options=opts))


def clip_notes(path, schema: Schema, backend: str) -> list[tuple]:
    """(column, clipped, total, lo, hi, message) of each ClipWarning a backend gives, by column."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cl = [(n,) for n in schema.names]
        count_marginals(path, schema, cl, backend=backend, csv_options=CsvOptions(na_values=("?",)))
    notes = [w.message for w in rec if w.category is ClipWarning]
    return sorted((m.column, m.clipped, m.total, m.lo, m.hi, str(m)) for m in notes)


def test_clip_warning_fields_agree(tmp_path):
    p = tmp_path / "t.csv"
    pd.DataFrame({"x": ["-5", "1", "2", "99", "100", "3"]}).to_csv(p, index=False)
    schema = Schema([Column.binned("x", [0, 2, 4])])
    for backend in ("numpy", "duckdb"):
        with pytest.warns(ClipWarning, match=r"\b3 of 6 value"):
            got = count_marginals(p, schema, [("x",)], backend=backend)
        assert got[("x",)].tolist() == [2, 4]
        assert [n[:5] for n in clip_notes(p, schema, backend)] == [("x", 3, 6, "0", "4")]
    # a date column, its range shown as ISO text
    from tests.data.test_dates import _count_table, _date_schema

    p = tmp_path / "dates.csv"
    _count_table(1000).to_csv(p, index=False)
    ref = clip_notes(p, _date_schema(), "numpy")
    assert [n[:3] for n in ref] == [("d", 107, 1000)] and ref[0][3:5] == ("2003-02-17", "2010-10-18")
    assert clip_notes(p, _date_schema(), "duckdb") == ref  # fields and message, word for word


# --------------------------------------------------------------------------- discovery counts
@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_label_counts(csv_table, typed_table, backend):
    opts = CsvOptions(na_values=("?",))
    got = count_labels(csv_table, ["cat", "code"], backend=backend, csv_options=opts)
    df = read_table(csv_table, na_values=["?"])
    want = df["cat"].value_counts().to_dict()
    assert {k: v for k, v in got["cat"].items() if k is not None} == want
    assert got["cat"][None] == int(df["cat"].isna().sum())
    assert sum(got["code"].values()) == len(df)
    path, tdf, _ = typed_table
    got = count_labels(path, ["i", "b", "s"], backend=backend)
    assert got["i"] == {str(k): int(v) for k, v in tdf["i"].value_counts().items()}
    assert got["b"] == {str(k): int(v) for k, v in tdf["b"].value_counts().items()}
    assert got["s"][None] == int(tdf["s"].isna().sum()) and got["s"][""] == int((tdf["s"] == "").sum())


def test_histograms_agree(csv_table, typed_table):
    opts = CsvOptions(na_values=("?",))
    edges = {"num": [0, 10, 50, 100], "lev": [1, 2.5, 5]}
    a = count_histograms(csv_table, edges, backend="numpy", csv_options=opts)
    b = count_histograms(csv_table, edges, backend="duckdb", csv_options=opts)
    n = len(read_table(csv_table))
    for name in edges:
        ha, hb = a[name], b[name]
        assert np.array_equal(ha.counts, hb.counts)
        assert (ha.below, ha.above, ha.missing, ha.non_numeric) == (hb.below, hb.above, hb.missing, hb.non_numeric)
        assert int(ha.counts.sum()) + ha.below + ha.above + ha.missing + ha.non_numeric == n
    path, _, _ = typed_table
    a = count_histograms(path, {"x": [-10, 0, 10, 30]}, backend="numpy")["x"]
    b = count_histograms(path, {"x": [-10, 0, 10, 30]}, backend="duckdb")["x"]
    assert np.array_equal(a.counts, b.counts) and (a.below, a.above) == (b.below, b.above)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_errors_match_schema_encode(tmp_path, backend):
    p = tmp_path / "t.csv"
    pd.DataFrame({"a": ["x", "y", "zz"], "n": ["1", "", "3"]}).to_csv(p, index=False)
    with pytest.raises(SchemaError, match="not among the schema's levels"):
        count_marginals(
            p,
            Schema([Column.categorical("a", ["x", "y"]), Column.levels("n", [1, 3], missing="m")]),
            [("a",)],
            backend=backend,
        )
    with pytest.raises(SchemaError, match="missing"):
        count_marginals(
            p,
            Schema([Column.categorical("a", ["x", "y", "zz"]), Column.levels("n", [1, 3])]),
            [("a",)],
            backend=backend,
        )
    with pytest.raises(SchemaError, match="not in the schema"):
        count_marginals(p, Schema([Column.categorical("a", ["x", "y", "zz"])]), [("a",)], backend=backend)
    with pytest.raises(SchemaError, match="not in the schema"):
        count_marginals(
            p,
            Schema([Column.categorical("a", ["x", "y", "zz"]), Column.levels("n", [1, 3], missing="m")]),
            [("b",)],
            backend=backend,
        )
    q = tmp_path / "codes.csv"
    pd.DataFrame({"c": ["0", "1", "5"]}).to_csv(q, index=False)
    with pytest.raises(SchemaError, match="domain"):
        count_marginals(q, Schema.from_domain({"c": 3}, categorical=[]), [("c",)], backend=backend)
    h = tmp_path / "header.csv"
    h.write_text("c\n")
    with pytest.raises((DataError, SchemaError), match="no rows"):
        count_marginals(h, Schema([Column.coded("c", 3)]), [("c",)], backend=backend)


def test_bad_backend_options(csv_table, tmp_path):
    schema = make_schema()
    with pytest.raises(DataError, match="unknown counting backend"):
        count_marginals(csv_table, schema, [("cat",)], backend="pandas")
    with pytest.raises(DataError, match="memory"):
        count_marginals(csv_table, schema, [("cat",)], backend="duckdb", memory_limit="lots")
    with pytest.raises(DataError, match="duckdb backend only"):
        count_marginals(csv_table, schema, [("cat",)], backend="numpy", memory_limit="1GB")
    with pytest.raises(DataError, match="not found"):
        count_marginals(tmp_path / "nope.csv", schema, [("cat",)])
    with pytest.raises(DataError, match="delimiter"):
        CsvOptions(delimiter=",,")
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n1,2,3\n")
    with pytest.raises(DataError):
        count_marginals(ragged, Schema([Column.coded("a", 3), Column.coded("b", 3)]), [("a",)], backend="duckdb")


def test_csv_larger_than_duckdb_memory_limit(tmp_path):
    """A 2.5M-row CSV (~55 MB) counted under a 32 MB DuckDB memory limit; the counts are known in
    closed form from the generating formula."""
    import duckdb

    n = 2_500_000
    p = tmp_path / "big.csv"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT 'label-number-' || (range % 7) AS a, (range % 101) / 4.0 AS x, "
        f"CASE WHEN range % 13 = 0 THEN '' ELSE CAST(range % 3 AS VARCHAR) END AS b FROM range({n})) "
        f"TO '{p}' (FORMAT csv, HEADER)"
    )
    con.close()
    assert p.stat().st_size > 48 * 2**20  # larger than the limit below
    schema = Schema(
        [
            Column.categorical("a", [f"label-number-{i}" for i in range(7)]),
            Column.binned("x", [0, 5, 10, 20]),
            Column.categorical("b", ["0", "1", "2"], missing="none"),
        ]
    )
    with pytest.warns(ClipWarning):
        got = count_marginals(p, schema, [("a", "x"), ("x", "b")], backend="duckdb", memory_limit="32MB")
    r = np.arange(n)
    xv = np.clip((r % 101) / 4.0, 0, 20)
    xc = np.clip(np.searchsorted([0, 5, 10, 20], xv, side="right") - 1, 0, 2)
    bc = np.where(r % 13 == 0, 3, r % 3)
    want = counts_from_codes({"a": r % 7, "x": xc, "b": bc}, schema.domain, [("a", "x"), ("x", "b")])
    assert_same(want, got)


# --------------------------------------------------------------------------- Spark
@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java (not found on PATH)")
    from ddssp.data.counting import spark_session

    # the JVM with its quick compiler only: these tests run a few dozen small queries, and the
    # optimising compiler's work on them took about half of their time without changing a count
    env = pytest.MonkeyPatch()
    if "PYSPARK_SUBMIT_ARGS" not in os.environ:
        env.setenv("PYSPARK_SUBMIT_ARGS", "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell")
    try:
        session = spark_session("local[2]")
    finally:
        env.undo()
    yield session
    session.stop()


def make_na_schema() -> Schema:
    """The table's schema as discovery makes them: ``na`` levels that need not be the missing/other
    level, unclipped explicit levels."""
    return Schema(
        [
            Column.categorical("cat", ["a", "b", "c", "1", "7", "none"], missing="<other>").with_na("none"),
            Column.categorical("cat2", ["u", "v", "w"]),
            Column.binned("num", [0, 20, 40.5, 60, 80, 100]).with_na("[40.5, 60)"),
            Column.levels("lev", [1, 2, 3], missing="<other>", clip=False).with_na("2"),
            Column.coded("code", 4),
            Column.ordinal("ord", 6),
        ]
    )


def test_spark_counts_equal_duckdb_and_numpy(spark, csv_table, typed_table):
    schema = make_schema()
    opts = CsvOptions(na_values=("?",))
    pairs = [c for k in (1, 2) for c in itertools.combinations(schema.names, k)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        got = count_marginals(csv_table, schema, pairs, backend="spark", csv_options=opts)
        assert_same(reference(read_table(csv_table, na_values=["?"]), schema, pairs), got)
        na_schema = make_na_schema()
        assert_same(
            reference(read_table(csv_table, na_values=["?"]), na_schema, pairs),
            count_marginals(csv_table, na_schema, pairs, backend="spark", csv_options=opts),
        )
        # date columns (ISO text parsed by the encoder's rules, junk to the missing / na level)
        from tests.data.test_dates import _count_table, _date_schema

        dpath = csv_table.parent / "dates.csv"
        _count_table(1000).to_csv(dpath, index=False)
        dschema = _date_schema()
        dpairs = list(itertools.combinations(dschema.names, 2))
        assert_same(
            reference(read_table(dpath, na_values=["?"]), dschema, dpairs),
            count_marginals(dpath, dschema, dpairs, backend="spark", csv_options=opts),
        )
        # a Spark DataFrame given directly (e.g. a Hive table), typed columns
        path, _, tschema = typed_table
        cl = list(itertools.combinations(tschema.names, 2))
        assert_same(
            count_marginals(path, tschema, cl, backend="numpy"),
            count_marginals(spark.read.parquet(str(path)), tschema, cl),
        )
        # a selection of the file's columns: the others are not read
        sub = Schema([schema.column(n) for n in schema.names[:2]])
        subpairs = [tuple(sub.names)]
        assert_same(
            reference(read_table(csv_table, na_values=["?"])[sub.names], sub, subpairs),
            count_marginals(csv_table, sub, subpairs, backend="spark", csv_options=opts, columns=sub.names),
        )


def test_spark_clip_warning_fields_equal_numpy(spark, tmp_path):
    from tests.data.test_dates import _count_table, _date_schema

    p = tmp_path / "dates.csv"
    _count_table(1000).to_csv(p, index=False)
    ref = clip_notes(p, _date_schema(), "numpy")
    assert ref and clip_notes(p, _date_schema(), "spark") == ref


def test_spark_groups_timestamps_by_their_bin_and_counts_as_numpy(spark, tmp_path, monkeypatch):
    from ddssp.data.counting.spark_backend import SparkCounter
    from tests.data.test_dates import HI, LO, _grouped_rows, _many_timestamps

    p = tmp_path / "ts.csv"
    _many_timestamps(6000).to_csv(p, index=False)
    schema = Schema(
        [
            Column.binned("ts", np.linspace(LO, HI + 1, 9).round(3).tolist(), unit="timestamp", missing="<missing>"),
            Column.binned("tm", [0, 360.5, 720, 1080, 1440], unit="time").with_na("[00:00, 06:00)"),
            Column.categorical("g", ["a", "b"]),
        ]
    )
    pairs = [c for k in (1, 2) for c in itertools.combinations(schema.names, k)]
    na = ("?", "1900-01-01")
    sizes = _grouped_rows(monkeypatch, SparkCounter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        got = count_marginals(p, schema, pairs, backend="spark", csv_options=CsvOptions(na_values=na))
        assert_same(reference(read_table(p, na_values=list(na)), schema, pairs), got)
    assert sizes and sizes[0] < 1000, sizes  # by bin, not by the 6,000 raw values


def test_spark_counts_typed_dates_as_their_iso_text(spark, tmp_path):
    """Parquet DATE, TIMESTAMP_NTZ and TIMESTAMP (an instant) in Spark: the codes of their ISO text
    (the numpy backend's), whatever the session's time zone, here one whose summer-time gap holds
    some of the wall clocks."""
    from tests.data.test_typed_dates import text_form, typed_schema, typed_table

    df = typed_table(3000, seed=2).drop(columns="ns")  # Spark reads no Parquet nanoseconds
    df.loc[:9, "t"] = pd.Timestamp("2021-03-14 02:30:00.25")  # no such wall clock in New York
    p, csv = tmp_path / "typed.parquet", tmp_path / "text.csv"
    df.to_parquet(p)
    text_form(df).to_csv(csv, index=False)
    schema = typed_schema(df)
    pairs = [c for k in (1, 2) for c in itertools.combinations(schema.names, k)]
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClipWarning)
            assert_same(reference(read_table(csv), schema, pairs), count_marginals(p, schema, pairs, backend="spark"))
        cols = ["d", "t", "zc"]
        assert count_labels(p, cols, backend="spark") == count_labels(p, cols, backend="numpy")
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_duckdb_never_reads_the_file_into_pandas(csv_table, monkeypatch):
    import ddssp.data.tables as tables

    def refuse(*a, **k):
        raise AssertionError("read_table called: a full pandas copy of the file")

    monkeypatch.setattr(tables, "read_table", refuse)
    monkeypatch.setattr(pd, "read_csv", refuse)
    monkeypatch.setattr(pd, "read_parquet", refuse)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        got = count_marginals(
            csv_table, make_schema(), [("cat", "num")], backend="duckdb", csv_options=CsvOptions(na_values=("?",))
        )
    assert got[("cat", "num")].sum() == 3000


@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_na_level_and_unclipped_levels_as_discovery_makes_them(csv_table, backend):
    """Discovered schemas code empty (and non-numeric) cells to an ``na`` level that need not be the
    missing/other level, and send values outside unclipped explicit levels to the missing level."""
    schema = make_na_schema()
    opts = CsvOptions(na_values=("?",))
    ref = reference(read_table(csv_table, na_values=["?"]), schema, CLIQUES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        assert_same(ref, count_marginals(csv_table, schema, CLIQUES, backend=backend, csv_options=opts))
