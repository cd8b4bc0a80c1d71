"""Typed dates and timestamps (pandas datetime64 with or without a time zone, ``datetime.date``
objects; Parquet DATE and TIMESTAMP) read as their ISO text: the same floats on the time axis, the
same discovery, the same codes in every counting backend; never as their integer ticks."""

from __future__ import annotations

import datetime as dt
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddssp.data import Column, Schema
from ddssp.data.counting import count_histograms, count_labels, count_marginals
from ddssp.data.dates import DAY_MAX, DAY_MIN, parse_days, parse_text
from ddssp.data.discovery.slots import parse_numbers
from ddssp.data.encoding import ClipWarning, parse_numeric
from ddssp.data.tables import read_table
from ddssp.pipeline import release
from tests.data.test_counting import assert_same, reference

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")

US_MIN, US_MAX = int(DAY_MIN) * 86_400_000_000, (int(DAY_MAX) + 1) * 86_400_000_000 - 1
ZONE = "Asia/Kathmandu"  # +05:45: an offset that is no whole number of hours


def iso_utc(s: pd.Series) -> list:
    """The ISO text of typed values: a date as ``YYYY-MM-DD``, a timestamp with all its digits, an
    aware one as its UTC wall clock with ``Z``; None where missing."""
    out = []
    for v in s.astype(object):
        if v is None or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
        elif isinstance(v, pd.Timestamp):
            out.append(v.tz_convert("UTC").tz_localize(None).isoformat() + "Z" if v.tzinfo else v.isoformat())
        else:
            out.append(v.isoformat())
    return out


def same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit for bit, NaN where the other is NaN."""
    return bool(np.array_equal(a, b, equal_nan=True))


# --------------------------------------------------------------------------- parsing
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(US_MIN, US_MAX), min_size=1, max_size=40),
    st.sampled_from(["s", "ms", "us", "ns"]),
    st.booleans(),
)
def test_typed_timestamps_parse_to_the_floats_of_their_iso_text(us, unit, aware):
    ticks = np.array(us, dtype=np.int64)
    if unit == "ns":  # nanoseconds reach 1677..2262 only; add digits below the microsecond
        ticks = (ticks % (200 * 365 * 86_400_000_000)) * 1000 + ticks % 997
    else:
        ticks = ticks // {"s": 10**6, "ms": 10**3, "us": 1}[unit]
    s = pd.Series(ticks.view(f"datetime64[{unit}]"))
    s[len(s) // 2] = pd.NaT
    if aware:
        s = s.dt.tz_localize("UTC").dt.tz_convert(ZONE)
    days, timed = parse_days(s)
    want, _ = parse_text(iso_utc(s))
    assert same_floats(days, want)
    assert np.isnan(days[len(s) // 2]) and np.isfinite(np.delete(days, len(s) // 2)).all()
    per_day = 86400 * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    midnight = np.delete(ticks % per_day == 0, len(s) // 2)
    assert (np.delete(timed, len(s) // 2) == ~midnight).all()  # a time of day unless at midnight
    # a typed timestamp is never a number (its ticks since 1970 are no value of the column)
    assert np.isnan(parse_numbers(s)[0]).all() and np.isnan(parse_numeric(s)).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(int(DAY_MIN), int(DAY_MAX)), min_size=1, max_size=40))
def test_date_objects_and_arrow_dates_parse_as_their_text(days):
    dates = [dt.date(1970, 1, 1) + dt.timedelta(days=d) for d in days]
    want, _ = parse_text([d.isoformat() for d in dates])
    for s in (pd.Series(dates, dtype=object), pd.Series(dates, dtype="date32[pyarrow]")):
        got, timed = parse_days(s)
        assert same_floats(got, want) and not timed.any()
        assert np.isnan(parse_numbers(s)[0]).all() and np.isnan(parse_numeric(s)).all()


def test_draft_schema_bins_typed_timestamps_on_the_day_axis():
    t = pd.Series(pd.to_datetime(["2020-01-01 06:00", "2021-06-01", None], format="ISO8601")).astype("datetime64[us]")
    df = pd.DataFrame({"t": t, "z": t.dt.tz_localize(ZONE), "d": [dt.date(2020, 1, 1), None, dt.date(2020, 3, 1)]})
    sch = Schema.infer(df, bins=4)
    assert sch == Schema.infer(pd.DataFrame({c: iso_utc(df[c]) for c in df.columns}), bins=4)
    assert [sch.column(c).unit for c in df.columns] == ["timestamp", "timestamp", "date"]
    lo, hi = float(parse_text(["2020-01-01T06:00"])[0][0]), float(parse_text(["2021-06-01"])[0][0])
    assert sch.column("t").bounds[0] <= lo < hi <= sch.column("t").bounds[1] <= hi + 1  # days, not ticks


# --------------------------------------------------------------------------- counting backends
def typed_table(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    """Typed date and timestamp columns (before and after 1970, NaT and None, midnights, digits below
    the microsecond, an aware column), a few distinct values for the explicit-level and categorical
    columns."""
    rng = np.random.default_rng(seed)
    us = rng.integers(-(10**16), 3 * 10**15, n)  # 1653 .. 2065
    midnight = rng.random(n) < 0.05
    us[midnight] = us[midnight] // 86_400_000_000 * 86_400_000_000
    t = pd.Series(us.view("datetime64[us]"))
    t[rng.random(n) < 0.05] = pd.NaT
    ns = pd.Series((rng.integers(-(2**62), 2**62, n) + rng.integers(0, 1000, n)).view("datetime64[ns]"))
    ns[rng.random(n) < 0.02] = pd.NaT
    days = rng.integers(int(DAY_MIN), int(DAY_MAX) + 1, n)
    days[: n // 2] = rng.integers(-3000, 3000, n // 2)
    d = [dt.date(1970, 1, 1) + dt.timedelta(days=int(v)) for v in days]
    few = t.dropna().iloc[:6].tolist()
    lv = pd.Series(rng.choice(np.array(few + [t.dropna().iloc[7]], dtype="datetime64[us]"), n))
    return pd.DataFrame(
        {
            "d": pd.Series([None if m else v for v, m in zip(d, rng.random(n) < 0.03)], dtype=object),
            "t": t,
            "z": t.dt.tz_localize("UTC").dt.tz_convert(ZONE),
            "ns": ns,
            "lv": lv,
            "dc": pd.Series([d[i] for i in rng.integers(0, 8, n)], dtype=object),
            "zc": t.iloc[rng.integers(0, 5, n)].reset_index(drop=True).dt.tz_localize("UTC").dt.tz_convert(ZONE),
            "num": t,
            "g": rng.choice(["a", "b"], n),
        }
    )


def typed_schema(df: pd.DataFrame) -> Schema:
    """Binned date / timestamp columns whose edges are values of the data (a value one float off
    its text's would change bins), explicit levels, categorical dates, a numeric column (no unit)."""
    rng = np.random.default_rng(1)

    def edges(name):
        x = parse_days(df[name])[0]
        x = np.unique(x[np.isfinite(x)])
        return np.sort(rng.choice(x[len(x) // 10 : -len(x) // 10], 6, replace=False)).tolist()

    lv = np.unique(parse_days(df["lv"])[0])[:-1].tolist()  # the last distinct value is no level
    dc = sorted({v.isoformat() for v in df["dc"]})[:5]
    zc = sorted({str(v) for v in df["zc"].dt.tz_convert("UTC")})[:3]
    cols = [
        Column.binned("d", edges("d"), unit="date", missing="<missing>"),
        Column.binned("t", edges("t"), unit="timestamp", missing="<missing>"),
        Column.binned("z", edges("z"), unit="timestamp", missing="<missing>"),
        Column.binned("ns", edges("ns"), unit="timestamp", missing="<missing>") if "ns" in df else None,
        Column.levels("lv", lv, unit="timestamp", clip=False, missing="<other>"),
        Column.categorical("dc", dc, missing="<other>"),
        Column.categorical("zc", zc, missing="<other>"),
        Column.binned("num", [-1e20, 0, 1e20], missing="<missing>"),
        Column.categorical("g", ["a", "b"]),
    ]
    return Schema([c for c in cols if c is not None])


def text_form(df: pd.DataFrame) -> pd.DataFrame:
    """The table as ISO text (UTC for the aware column; the categorical one as its label)."""
    out = pd.DataFrame({c: pd.Series(iso_utc(df[c]), dtype=object) for c in df.columns if c != "g"})
    out["zc"] = [str(v) for v in df["zc"].dt.tz_convert("UTC")]
    out["g"] = df["g"]
    return out


@pytest.fixture(scope="module")
def typed_files(tmp_path_factory):
    """The typed table as Parquet and as ISO text in a CSV, its schema, and the text form's counts."""
    df = typed_table()
    tmp = tmp_path_factory.mktemp("typed")
    pq, csv = tmp / "typed.parquet", tmp / "text.csv"
    df.to_parquet(pq)
    text_form(df).to_csv(csv, index=False)
    schema = typed_schema(df)
    cliques = [c for k in (1, 2) for c in itertools.combinations(schema.names, k)]
    ref = reference(read_table(csv), schema, cliques)
    return df, pq, csv, schema, cliques, ref


def test_the_typed_table_uses_every_path(typed_files):
    df, pq, csv, schema, cliques, ref = typed_files
    assert [str(t) for t in pd.read_parquet(pq).dtypes[:5]] == [
        "object",
        "datetime64[us]",
        f"datetime64[us, {ZONE}]",
        "datetime64[ns]",
        "datetime64[us]",
    ]
    for name in ("d", "t", "z", "ns"):  # both end bins (clipped values) and the missing level
        assert ref[(name,)][0] > 0 and ref[(name,)][4] > 0 and ref[(name,)][-1] > 0, name
    assert ref[("lv",)][-1] > 0 and min(ref[("lv",)]) > 0  # every level, and the value off them
    assert ref[("dc",)][-1] > 0 and min(ref[("zc",)]) > 0
    assert ref[("num",)][:2].sum() == 0  # the typed values are no numbers: all missing


@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_typed_dates_count_as_their_iso_text(typed_files, backend):
    df, pq, csv, schema, cliques, ref = typed_files
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        assert_same(ref, count_marginals(csv, schema, cliques, backend=backend))
        assert_same(ref, count_marginals(pq, schema, cliques, backend=backend))
        assert_same(ref, count_marginals(df, schema, cliques, backend=backend))


def test_label_and_histogram_counts_of_typed_columns_agree(typed_files):
    df, pq, _, _, _, _ = typed_files
    cols = ["d", "t", "z", "zc"]
    want = count_labels(pq, cols, backend="numpy")
    assert count_labels(pq, cols, backend="duckdb") == want
    assert want["zc"] == {str(k): int(v) for k, v in df["zc"].dt.tz_convert("UTC").value_counts().items()}
    for backend in ("numpy", "duckdb"):
        h = count_histograms(pq, {"t": [0, 1e6, 1e12, 1e20]}, backend=backend)["t"]
        assert h.counts.sum() == h.below == h.above == 0  # never the ticks since 1970
        assert h.non_numeric == df["t"].notna().sum() and h.missing == df["t"].isna().sum()


def test_typed_date_outside_the_calendar_is_no_date(tmp_path):
    import duckdb

    p = tmp_path / "far.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM (VALUES (DATE '9999-12-31'), (DATE '10000-01-01'), (NULL)) v(d)) TO '{p}'")
    con.close()
    schema = Schema([Column.binned("d", [0, 10, 20], unit="date", missing="<missing>")])
    got = count_marginals(p, schema, [("d",)], backend="duckdb")
    assert got[("d",)].tolist() == [0, 1, 2]  # 9999-12-31 clipped into the last bin


# --------------------------------------------------------------------------- discovery and release
def brief_table() -> pd.DataFrame:
    r = np.random.default_rng
    df = pd.DataFrame(
        {
            "d": pd.date_range("2020-01-01", periods=3000, freq="D")[r(0).integers(0, 3000, 5000)],
            "t": pd.Timestamp("2021-01-01") + pd.to_timedelta(r(1).integers(0, 10**6, 5000), unit="min"),
            "x": r(2).normal(size=5000),
        }
    )
    df["d"] = df["d"].dt.date
    return df


def test_typed_table_is_discovered_as_its_text():
    from tests.data.test_dates import _discover

    df = brief_table()
    df["z"] = df["t"].dt.tz_localize(ZONE)
    # the text a row's own value gives: a date at midnight, else a timestamp (the per-row rule)
    text = df.copy()
    for c in ("t", "z"):
        text[c] = [v[:10] if v and v.endswith(("T00:00:00", "T00:00:00Z")) else v for v in iso_utc(df[c])]
    text["d"] = iso_utc(df["d"])
    typed_cols, typed_report, _ = _discover(df, eps=1.0, seed=4)
    text_cols, text_report, _ = _discover(text, eps=1.0, seed=4)
    assert set(typed_cols) == {"d", "t", "x", "z"} and typed_report.dropped == text_report.dropped
    for name, col in typed_cols.items():
        assert col == text_cols[name], name
    assert typed_cols["t"].unit == typed_cols["z"].unit == "timestamp" and typed_cols["d"].unit == "date"


def test_release_of_a_typed_parquet_keeps_the_timestamp_column(tmp_path):
    df = brief_table()
    p = tmp_path / "typed.parquet"
    df.to_parquet(p)
    rel = release(pd.read_parquet(p), None, eps=1.0, delta=1e-9, seed=0, insecure_seed=1)
    col = rel.schema.column("t")
    assert col.unit == "timestamp"
    lo, hi = parse_days(df["t"])[0].min(), parse_days(df["t"])[0].max()
    width = float(max(np.diff(col.edges)))
    assert lo - width <= col.bounds[0] < col.bounds[1] <= hi + width and col.size >= 2
    syn = rel.sample(500, seed=0)["t"]
    days = parse_days(syn)[0]
    assert np.isfinite(days).all() and (days >= col.bounds[0]).all() and (days <= col.bounds[1]).all()
