"""Date columns: ISO dates and timestamps read as days since 1970-01-01 (clock times as minutes since
midnight), discovered from noisy counts of parse outcomes, binned on that axis, decoded as text; the
schema file records the unit; every counting backend agrees."""

from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Column, Schema
from ddssp.data.counting import CsvOptions, count_marginals, counts_from_codes
from ddssp.data.dates import (
    DAY_MAX,
    DAY_MIN,
    civil_from_days,
    days_from_civil,
    format_days,
    parse_clock,
    parse_days,
)
from ddssp.data.discovery import discover
from ddssp.data.encoding import ClipWarning
from ddssp.data.schemafile import load_schema
from ddssp.data.tables import read_table
from ddssp.data.within import Within
from ddssp.dp import Ledger, cks_delta, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.errors import SchemaError
from ddssp.pipeline import AimOptions, release

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")

LO = float(days_from_civil(2003, 1, 1))
HI = float(days_from_civil(2009, 12, 31))


def _dates(n: int, seed: int, timestamps: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = rng.integers(int(LO), int(HI) + 1, n).astype(float)
    if timestamps:
        return format_days(d + rng.integers(0, 86400, n) / 86400.0, "timestamp")
    return format_days(d, "date")


def _table(n: int = 20_000, seed: int = 0, **extra) -> pd.DataFrame:
    rng = np.random.default_rng(seed + 100)
    cols = {"g": rng.choice(["a", "b", "c"], n)}
    cols.update(extra)
    return pd.DataFrame(cols)


# --------------------------------------------------------------------------- the axis
def test_calendar_arithmetic_round_trips_and_rejects_impossible_dates():
    z = np.arange(int(DAY_MIN), int(DAY_MAX) + 1, 997)
    y, m, d = civil_from_days(z)
    assert np.array_equal(days_from_civil(y, m, d), z)
    assert days_from_civil(1970, 1, 1) == 0 and days_from_civil(2000, 3, 1) == 11017
    s = pd.Series(
        [
            "2003-01-01",
            " 2004-02-29 ",
            "2003-02-29",  # not a leap year
            "2003-13-01",
            "2003-1-1",
            "2003-01-01T25:00",
            "2003-01-01 12:30",
            "2003-01-01T12:30:15.5Z",
            "2003-01-01T12:30+02:00",  # offsets are not read
            "20030101",
            "0000-01-01",
            None,
            "",
        ],
        dtype=object,
    )
    days, timed = parse_days(s)
    ok = ~np.isnan(days)
    assert ok.tolist() == [True, True, False, False, False, False, True, True, False, False, False, False, False]
    assert timed.tolist()[6:8] == [True, True] and not timed[0]
    assert days[6] == pytest.approx(days_from_civil(2003, 1, 1) + 12.5 / 24)
    assert format_days(days[:2], "date").tolist() == ["2003-01-01", "2004-02-29"]
    assert format_days([days[7], np.nan], "timestamp").tolist() == ["2003-01-01T12:30:16", None]
    # numbers are not dates, pandas datetimes are
    assert np.isnan(parse_days(pd.Series([12053.0, 1.0]))[0]).all()
    ts = pd.Series(pd.to_datetime(["2003-01-01 06:00", None], format="ISO8601"))
    assert parse_days(ts)[0][0] == pytest.approx(days_from_civil(2003, 1, 1) + 0.25)
    mins, secs = parse_clock(
        pd.Series(["09:30", "9:05:30", "24:00", "12:60", "0930", "2003-01-01", None], dtype=object)
    )
    assert mins[:2].tolist() == [570.0, 545.5] and np.isnan(mins[2:]).all() and secs.tolist()[:2] == [False, True]
    assert format_days([570.0, 545.5, 1440.0, np.nan], "time").tolist() == ["09:30", "09:05", "24:00", None]


# --------------------------------------------------------------------------- discovery
def _discover(df, eps=1.0, seed=0, **kw):
    delta = 1e-6
    rho = rho_from_eps_delta(eps, delta / 2)
    ledger = Ledger(rho, delta_budget=delta / 2)
    noise = InsecureSeededNoise(seed) if seed is not None else None
    cols, report, _ = discover(
        df, list(df.columns), ChargedMechanisms(ledger, noise), rho=0.5 * rho, delta=delta / 2, collect=True, **kw
    )
    return cols, report, ledger


@pytest.mark.parametrize("seed", [0, None])
def test_date_timestamp_junk_and_free_text_columns_are_told_apart(seed):
    n = 20_000
    rng = np.random.default_rng(3)
    junk = _dates(n, 4).astype(object)
    bad = rng.random(n) < 0.03
    junk[bad] = rng.choice(["n/a", "unknown", "2003-02-30", "soon"], int(bad.sum()))
    free = np.array([f"note {i} on 2004-05-06" for i in rng.integers(0, 10**6, n)], dtype=object)
    df = _table(n, d=_dates(n, 1), t=_dates(n, 2, timestamps=True), j=junk, free=free)
    cols, report, ledger = _discover(df, seed=seed)
    assert cols["d"].unit == "date" and cols["d"].kind == "numeric"
    assert cols["t"].unit == "timestamp"
    assert cols["j"].unit == "date"
    # free text is not a date: dropped as an identifier (or, in the rare draw where the key release
    # lets one of its 20,000 one-row labels through, about 20,000 x its per-label delta, categorical)
    assert "free" in report.dropped or cols["free"].kind == "categorical"
    assert "free" not in cols or cols["free"].unit is None
    assert cols["g"].kind == "categorical" and cols["g"].unit is None
    for name in ("d", "t", "j"):
        c = cols[name]
        lo, hi = c.bounds
        width = max(np.diff(c.edges)) if c.edges is not None else 1.0
        assert LO - width <= lo and hi <= HI + 1 + width, (name, c.labels)
        assert c.size >= 4
    # junk goes to the missing level (as empty cells do): it is a non-date value of a date column
    j = cols["j"]
    codes = Schema([j]).encode(pd.DataFrame({"j": ["soon", None, "2005-06-07"]}))["j"].tolist()
    assert codes[0] == codes[1] == j.na_code and codes[2] != j.na_code
    # the date range pass is one more discovery charge on each date column, inside the budget
    notes = [e.note for e in ledger.entries if e.clique == ("d",)]
    assert any("date range" in x for x in notes)
    assert not any("date range" in x for x in (e.note for e in ledger.entries if e.clique == ("g",)))
    assert ledger.spent <= 0.5 * ledger.rho_budget * (1 + 1e-12)


def _clock(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = np.clip(rng.normal(9 * 60, 90, n), 0, 1439).astype(int)
    return np.array([f"{v // 60:02d}:{v % 60:02d}" for v in m], dtype=object)


@pytest.mark.parametrize("seed", [0, None])
def test_clock_time_column_is_binned_on_minutes_since_midnight(seed):
    n = 20_000
    clock = _clock(n, 6)
    df = _table(n, c=clock, d=_dates(n, 7))
    cols, report, ledger = _discover(df, seed=seed)
    c = cols["c"]
    assert c.unit == "time" and cols["d"].unit == "date"
    mins = parse_clock(pd.Series(clock))[0]
    lo, hi = c.bounds
    width = max(np.diff(c.edges))
    assert mins.min() - width <= lo and hi <= mins.max() + 1 + width
    assert 0 <= lo and hi <= 1440
    # no range pass: the axis is public
    assert not any("date range" in e.note for e in ledger.entries if e.clique == ("c",))
    dec = Schema([c]).decode(Schema([c]).encode(pd.DataFrame({"c": ["09:00", "junk", "23:59"]})))["c"].tolist()
    assert all(v is None or (len(v) == 5 and v[2] == ":") for v in dec)


def test_declared_date_kind_without_dates_is_dropped_with_its_reason():
    df = _table(3000, x=[str(i % 50) for i in range(3000)])
    cols, report, _ = _discover(df, eps=4.0, kinds={"x": "date"})
    assert "x" not in cols and "no ISO dates" in report.dropped["x"]


@pytest.mark.parametrize("timestamps", [False, True])
def test_release_synthesizes_dates_inside_their_range(timestamps):
    n = 20_000
    df = _table(n, d=_dates(n, 5, timestamps=timestamps))
    rel = release(df, None, eps=1.0, delta=1e-6, seed=0, insecure_seed=7, aim=AimOptions(rounds=3))
    col = rel.schema.column("d")
    assert col.unit == ("timestamp" if timestamps else "date")
    syn = rel.sample(2000, seed=1)["d"]
    assert syn.map(lambda v: isinstance(v, str)).all()
    days, timed = parse_days(syn)
    assert not np.isnan(days).any()
    assert timed.all() if timestamps else not timed.any()
    width = float(max(np.diff(col.edges))) if col.edges is not None else 1.0
    assert days.min() >= LO - width and days.max() <= HI + 1 + width
    # the synthetic dates spread over the years, not one bin
    assert len(set(s[:4] for s in syn)) >= 5
    led = rel.ledger
    assert math.isclose(led.spent, led.rho_budget, rel_tol=1e-9)
    assert math.isclose(led.delta_budget + cks_delta(led.rho_budget, 1.0), 1e-6, rel_tol=1e-6)


def test_synthetic_dates_are_drawn_inside_their_bins_and_encode_back():
    n = 20_000
    df = _table(n, d=_dates(n, 8), t=_dates(n, 9, timestamps=True), c=_clock(n, 10))
    cols, _, _ = _discover(df, eps=2.0, seed=3)
    rng = np.random.default_rng(0)
    for name in ("d", "t", "c"):
        col = cols[name]
        assert col.is_binned and col.within is not None, name
        sch = Schema([col])
        codes = sch.encode(df[[name]])
        syn = sch.decode(codes, rng=rng)[name]
        assert syn.map(lambda v: isinstance(v, str)).all()  # ISO text, not numbers on the axis
        assert sch.encode(syn.to_frame())[name].tolist() == codes[name].tolist()
        # drawn inside the bins: many more distinct values than the representative ones
        assert syn.nunique() > 5 * col.size, (name, syn.nunique(), col.size)
        assert syn.nunique() > 5 * sch.decode(codes)[name].nunique()


@pytest.mark.parametrize(
    "unit, edges",
    [
        ("date", [LO + 0.3, LO + 10.7, LO + 11.2, LO + 40.5]),  # one bin holds no whole day
        ("timestamp", [LO + 0.1, LO + 0.1 + 0.5 / 86400, LO + 0.1 + 2 / 86400, LO + 3.0]),  # half-second edges
        ("time", [0.0, 5.625, 11.25, 1439.5]),
    ],
)
def test_synthetic_values_stay_in_their_bin_when_the_text_is_coarser_than_the_edges(unit, edges):
    """Edges between two days (seconds, minutes): a value drawn inside its bin is written on the
    text's resolution, moved inside the bin when its text would read back outside it."""
    col = Column.binned("x", edges, unit=unit).with_within(Within(tuple(((), (1.0,)) for _ in edges[1:])))
    sch = Schema([col])
    codes = pd.DataFrame({"x": np.random.default_rng(1).integers(0, len(edges) - 1, 5000)})
    syn = sch.decode(codes, rng=np.random.default_rng(2))
    back = sch.encode(syn)["x"].to_numpy()
    narrow = [i for i, (a, b) in enumerate(zip(edges, edges[1:])) if unit == "date" and math.ceil(a) >= b]
    keep = ~np.isin(codes["x"].to_numpy(), narrow)  # a bin with no day inside keeps its own value
    assert keep.sum() > 3000 and (back[keep] == codes["x"].to_numpy()[keep]).all()


# --------------------------------------------------------------------------- schema file
def test_schema_file_round_trip_and_iso_bounds(tmp_path):
    d = Column.binned("d", [LO, LO + 365, LO + 1000, HI + 1], unit="date", missing="<missing>").with_na("<missing>")
    t = Column.levels("t", [LO, LO + 0.5], unit="timestamp")
    sch = Schema([d, t, Column.categorical("g", ["a", "b"])])
    assert d.labels[0] == "[2003-01-01, 2004-01-01)" and t.labels == ["2003-01-01T00:00:00", "2003-01-01T12:00:00"]
    path = sch.save(tmp_path / "s.json")
    back = load_schema(path)
    assert back == sch and back.column("d").unit == "date" and back.column("t").unit == "timestamp"
    assert json.loads(path.read_text())["columns"][0]["unit"] == "date"
    # a hand-written entry may give its range as ISO dates
    entry = {"name": "d", "kind": "numeric", "unit": "date", "bounds": ["2003-01-01", "2010-01-01"], "bins": 7}
    col = Column.from_dict(entry)
    assert col.bounds == (LO, HI + 1) and col.size == 7
    clock = Column.from_dict({"name": "c", "kind": "numeric", "unit": "time", "bounds": ["00:00", "24:00"], "bins": 4})
    assert clock.labels == ["[00:00, 06:00)", "[06:00, 12:00)", "[12:00, 18:00)", "[18:00, 24:00]"]
    assert Column.from_dict(clock.to_dict()) == clock
    edges = {"name": "d", "kind": "numeric", "unit": "date", "edges": ["2003-01-01", "2005-01-01", "2010-01-01"]}
    assert Column.from_dict(edges).labels == ["[2003-01-01, 2005-01-01)", "[2005-01-01, 2010-01-01]"]
    # encoding raw data with a declared date column parses it; decoding gives ISO text
    codes = Schema([col]).encode(pd.DataFrame({"d": ["2003-06-01", "2009-12-31", "1999-01-01"]}))
    assert codes["d"].tolist() == [0, 6, 0]
    assert Schema([col]).decode(codes)["d"].tolist()[0] == "2003-07-02"


@pytest.mark.parametrize(
    "entry, match",
    [
        ({"unit": "days"}, "unit"),
        ({"unit": ["date"]}, "unit"),
        ({"unit": "date", "edges": ["2003-01-01", "not a date"]}, "not an ISO date"),
        ({"unit": "date", "edges": ["2003-01-01", "2003-02-30"]}, "not an ISO date"),
        ({"unit": "date", "edges": [0, 1e12]}, "0001-01-01"),
        ({"unit": "date", "edges": [-1e9, 0]}, "0001-01-01"),
        ({"unit": "date", "size": 5, "edges": None}, "size"),
        ({"unit": "time", "edges": [0, 1441]}, "00:00..24:00"),
        ({"unit": "time", "edges": ["00:00", "25:00"]}, "not a clock time"),
    ],
)
def test_hostile_date_entries_are_refused(entry, match):
    d = {"name": "d", "kind": "numeric", "edges": [0, 10, 20]}
    d.update(entry)
    d = {k: v for k, v in d.items() if v is not None}
    with pytest.raises(SchemaError, match=match):
        Schema.from_dict({"format": "ddssp-schema/1", "columns": [d]})
    with pytest.raises(SchemaError, match="unknown keys"):
        Column.from_dict({"name": "g", "kind": "categorical", "levels": ["a"], "unit": "date"})


# --------------------------------------------------------------------------- counting backends
def _count_table(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    d = format_days(rng.integers(12000, 15000, n), "date").astype(object)
    odd = [
        "",
        "junk",
        "2003-02-30",
        " 2004-01-01",
        "2004-01-01T10:00",
        "2004-01-01 10:00:30.5Z",
        "1e4",
        "12000",
        "?",
        "1990-01-01",
        "2030-05-05",
        "2004-1-1",
    ]
    m = rng.random(n) < 0.25
    d[m] = rng.choice(odd, int(m.sum()))
    t = format_days(rng.integers(12000, 15000, n) + rng.random(n), "timestamp").astype(object)
    t[rng.random(n) < 0.1] = "x"
    c = rng.choice(["00:00", "9:30", "09:30:30", "23:59", "12:00", "24:00", "x", "", "12:5"], n)
    return pd.DataFrame({"d": d, "t": t, "c": c, "g": rng.choice(["a", "b"], n)})


def _date_schema() -> Schema:
    return Schema(
        [
            Column.binned("d", [12100, 12500, 13000, 14000, 14900], unit="date", missing="<missing>"),
            Column.binned("t", [12000, 13000, 15000], unit="timestamp").with_na(
                "[2005-08-05T00:00:00, 2011-01-26T00:00:00]"
            ),
            Column.binned("c", [0, 600, 1440], unit="time", missing="<missing>"),
            Column.categorical("g", ["a", "b"]),
        ]
    )


@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
def test_backends_count_date_columns_as_schema_encode(tmp_path, backend):
    p = tmp_path / "d.csv"
    _count_table().to_csv(p, index=False)
    schema = _date_schema()
    cl = [c for k in (1, 2) for c in itertools.combinations(schema.names, k)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        enc = schema.encode(read_table(p, na_values=["?"]))
        got = count_marginals(p, schema, cl, backend=backend, csv_options=CsvOptions(na_values=("?",)))
    ref = counts_from_codes({k: enc[k].to_numpy() for k in schema.names}, schema.domain, cl)
    for c in cl:
        assert np.array_equal(ref[c], got[c]), c
    # every path is used: both end bins (clipped values), the missing level, the na bin of 't'
    assert got[("d",)][0] > 0 and got[("d",)][3] > 0 and got[("d",)][4] > 0
    assert got[("t",)][1] > 0
    assert got[("c",)].tolist()[2] > 0 and min(got[("c",)]) > 0  # clock times, and their junk


def test_draft_schema_bins_a_date_column_on_the_time_axis():
    df = pd.DataFrame(
        {
            "d": ["2003-01-01", "2009-12-31", None, "2005-05-05"],
            "w": ["2003-01-01", "x", "y", "z"],
            "c": ["08:00", "17:30", "12:00", "9:15"],
        }
    )
    sch = Schema.infer(df, bins=4)
    assert sch.column("c").unit == "time" and sch.column("c").bounds == (480.0, 1051.0)
    d = sch.column("d")
    assert d.unit == "date" and d.bounds == (LO, HI + 1) and d.size == 5  # 4 bins + <missing>
    assert sch.column("w").kind == "categorical"  # not all dates: labels
    assert sch.decode(sch.encode(df))["d"].iloc[0].startswith("2003-")


def test_year_first_dates_with_slashes_parse_like_iso():
    """``YYYY/MM/DD`` (as in vega's seattle-weather) is the ISO date with slashes; other orders
    and mixed separators do not parse."""
    from ddssp.data.dates import parse_text

    days, timed = parse_text(["2012/01/31", "2012-01-31", "2012/01/31 12:00", "01/31/2012", "2012/01-31", "2012/02/30"])
    assert days[0] == days[1] == 15370.0 and days[2] == 15370.5 and timed.tolist()[:3] == [False, False, True]
    assert np.isnan(days[3:]).all()


def _many_timestamps(n: int = 20_000) -> pd.DataFrame:
    """Every timestamp and clock time distinct or nearly so, in the forms the parser reads (fractions
    of a second, ``Z``, year first with slashes), plus values SQL must leave to it: spaces, impossible
    dates, offsets, a missing-value marker that reads as a date."""
    rng = np.random.default_rng(21)
    ts = format_days(rng.uniform(LO - 400, HI + 400, n), "timestamp").astype(object)
    k = rng.random(n)
    ts[k < 0.1] = [f"{v}.{rng.integers(0, 10**6)}" for v in ts[k < 0.1]]
    sel = (k >= 0.1) & (k < 0.15)
    ts[sel] = [v.replace("-", "/").replace("T", " ") + "Z" for v in ts[sel]]
    odd = ["", "?", "1900-01-01", " 2004-01-01T10:00", "2004-02-30T00:00", "junk", "2004-01-01T10:00+01:00", "2004-1-1"]
    sel = k > 0.95
    ts[sel] = rng.choice(odd, int(sel.sum()))
    secs = rng.integers(0, 86400, n)
    tm = np.array([f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" for s in secs], dtype=object)
    sel = rng.random(n) < 0.05
    tm[sel] = rng.choice(["", "24:00", "7:5", "x", "08:00 "], int(sel.sum()))
    return pd.DataFrame({"ts": ts, "tm": tm, "g": rng.choice(["a", "b"], n)})


def _grouped_rows(monkeypatch, counter_class) -> list[int]:
    """Record the size of the SQL backends' grouped table (one row per distinct key)."""
    sizes: list[int] = []
    original = counter_class._materialize

    def materialize(self, name, sql):
        out = original(self, name, sql)
        sizes.append(int(self._rows(f"SELECT COUNT(*) FROM {out}")[0][0]))
        return out

    monkeypatch.setattr(counter_class, "_materialize", materialize)
    return sizes


def test_duckdb_groups_timestamps_by_their_bin_and_counts_as_schema_encode(tmp_path, monkeypatch):
    from ddssp.data.counting.duckdb_backend import DuckDBCounter

    p = tmp_path / "ts.csv"
    df = _many_timestamps()
    df.to_csv(p, index=False)
    schema = Schema(
        [
            Column.binned("ts", np.linspace(LO, HI + 1, 9).round(3).tolist(), unit="timestamp", missing="<missing>"),
            Column.binned("tm", [0, 360.5, 720, 1080, 1440], unit="time").with_na("[00:00, 06:00)"),
            Column.categorical("g", ["a", "b"]),
        ]
    )
    cl = [c for k in (1, 2, 3) for c in itertools.combinations(schema.names, k)]
    na = ("?", "1900-01-01")
    sizes = _grouped_rows(monkeypatch, DuckDBCounter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClipWarning)
        enc = schema.encode(read_table(p, na_values=list(na)))
        got = count_marginals(p, schema, cl, backend="duckdb", csv_options=CsvOptions(na_values=na))
    ref = counts_from_codes({k: enc[k].to_numpy() for k in schema.names}, schema.domain, cl)
    for c in cl:
        assert np.array_equal(ref[c], got[c]), c
    # both end bins clipped into, the missing level and the na bin used
    assert got[("ts",)][0] > 0 and got[("ts",)][7] > 0 and got[("ts",)][8] > 0
    assert df["ts"].nunique() > 15_000 and df["tm"].nunique() > 15_000
    # grouped by bin (and the few values left to Python), not by the 20,000 raw values
    assert sizes and sizes[0] < 1000, sizes
