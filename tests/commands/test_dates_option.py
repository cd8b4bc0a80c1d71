"""`--dates A,B` on `release` and `schema` (and `dates=` in the Python API): the named columns are
discovered as a time axis, ISO dates / timestamps or clock times as their noisy counts show; unknown
names are refused from the header alone; a named column without dates follows the rules for columns
discovery cannot resolve."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import ddssp.pipeline.source as pipeline_source
from ddssp.data.dates import days_from_civil, format_days, parse_clock, parse_days
from ddssp.errors import SchemaError
from ddssp.pipeline import AimOptions, DiscoveryOptions, declared_kinds, release
from ddssp.releasefile import Release
from tests.commands.test_schema import assert_clean_failure, run_cli

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")

LO = int(days_from_civil(2004, 1, 1))
HI = int(days_from_civil(2008, 12, 31))


def _table(n: int = 6000) -> pd.DataFrame:
    """Dates and clock times with 30% text in them: too much for discovery to call them dates on its
    own (it then sees labels), so only ``--dates`` makes them a time axis (the text is missing)."""
    rng = np.random.default_rng(3)
    d = format_days(rng.integers(LO, HI + 1, n), "date")
    d[rng.random(n) < 0.3] = "pending"
    c = rng.choice(["08:00", "9:30", "12:15", "17:45"], n).astype(object)
    c[rng.random(n) < 0.3] = "closed"
    return pd.DataFrame(
        {
            "d": d,
            "c": c,
            "g": rng.choice(["a", "b", "c"], n),
            "x": [str(i % 40) for i in range(n)],  # whole numbers: no dates in it
        }
    )


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("dates") / "t.csv"
    _table().to_csv(p, index=False)
    return p


def test_declared_dates_are_released_as_dates_and_decode_inside_their_range(csv_path, tmp_path, capsys):
    out = tmp_path / "t.release"
    argv = ["release", csv_path, "--eps", "2", "--dates", "d,c", "--rounds", "6", "--insecure-seed", "1", "-o", out]
    rc, _, err = run_cli(argv, capsys)
    assert rc == 0, err
    rel = Release.load(out)
    d, c = rel.schema.column("d"), rel.schema.column("c")
    assert (d.unit, c.unit) == ("date", "time")  # the unit from the noisy counts
    syn = rel.sample(3000, seed=2)
    days, timed = parse_days(syn["d"].dropna())
    assert 1500 < len(days) < 2700  # the text came back as missing values
    assert not np.isnan(days).any() and not timed.any()
    # inside the data's range, give or take the coarse end cells a noisy range may keep
    assert days.min() >= LO - 200 and days.max() <= HI + 200
    assert len({s[:4] for s in syn["d"].dropna()}) >= 4
    mins, _ = parse_clock(syn["c"].dropna())
    assert not np.isnan(mins).any() and mins.min() >= 7 * 60 and mins.max() <= 19 * 60


def test_unknown_dates_column_is_one_line_before_the_table_is_read(csv_path, tmp_path, capsys, monkeypatch):
    def no_read(*a, **k):
        raise AssertionError("the table was read")

    monkeypatch.setattr(pipeline_source, "read_rows", no_read)
    out = tmp_path / "r.release"
    rc, _, err = run_cli(["release", csv_path, "--eps", "1", "--dates", "d,zz,yy", "-o", out], capsys)
    assert_clean_failure(rc, err, "--dates 'zz', --dates 'yy'")
    assert not out.exists()
    # a column left out by --drop is not in the data either; a column given two kinds is refused
    rc, _, err = run_cli(["release", csv_path, "--eps", "1", "--drop", "d", "--dates", "d", "-o", out], capsys)
    assert_clean_failure(rc, err, "--dates 'd'")
    rc, _, err = run_cli(["release", csv_path, "--eps", "1", "--dates", "d", "--categorical", "d", "-o", out], capsys)
    assert_clean_failure(rc, err, "both in --categorical and in --dates")
    monkeypatch.undo()  # `schema` reads the table first; it draws no noise before the check either
    rc, _, err = run_cli(["schema", csv_path, "--eps", "1", "--dates", "zz", "-o", tmp_path / "s.json"], capsys)
    assert_clean_failure(rc, err, "--dates 'zz'")
    assert not out.exists() and not (tmp_path / "s.json").exists()


def test_dates_column_without_dates_is_dropped_or_refused_under_strict(csv_path, tmp_path, capsys):
    out = tmp_path / "x.release"
    base = ["release", csv_path, "--eps", "2", "--dates", "d,x", "--rounds", "4", "--insecure-seed", "1"]
    rc, _, err = run_cli([*base, "--strict", "-o", out], capsys)
    assert_clean_failure(rc, err, "'x' is declared a date column (--dates)")
    assert not out.exists()
    rc, _, err = run_cli([*base, "-o", out], capsys)
    assert rc == 0, err
    warned = [ln for ln in err.splitlines() if "WARNING" in ln and "left out of the release" in ln]
    assert len(warned) == 1 and "'x'" in warned[0] and "no ISO dates" in warned[0]
    rel = Release.load(out)
    assert "x" not in rel.schema.names and rel.schema.column("d").unit == "date"


def test_schema_eps_records_the_declared_dates(csv_path, tmp_path, capsys):
    out = tmp_path / "s.json"
    rc, _, err = run_cli(["schema", csv_path, "--eps", "2", "--dates", "d", "-o", out], capsys)
    assert rc == 0, err
    cols = {c["name"]: c for c in json.loads(out.read_text())["columns"]}
    assert cols["d"].get("unit") == "date"


def test_python_api_takes_dates_in_discovery_options():
    df = _table(4000)[["d", "g", "x"]]
    with pytest.warns(UserWarning, match="no ISO dates"):
        rel = release(
            df,
            None,
            eps=2.0,
            delta=1e-6,
            aim=AimOptions(rounds=3),
            discovery=DiscoveryOptions(dates=("d", "x")),
            seed=0,
            insecure_seed=4,
        )
    assert rel.schema.column("d").unit == "date" and "x" not in rel.schema.names
    assert DiscoveryOptions(dates="d").dates == ("d",)  # one name, not its letters
    with pytest.raises(TypeError, match="dates"):  # the options live in DiscoveryOptions only
        release(df, None, eps=1.0, delta=1e-6, dates=["d"])


def test_declared_kinds_lists_every_unknown_name_at_once():
    assert declared_kinds(["a", "b", "c"], ["a"], None, ["b"]) == {"a": "categorical", "b": "dates"}
    with pytest.raises(SchemaError, match="DiscoveryOptions.numeric 'q', DiscoveryOptions.dates 'z'"):
        declared_kinds(["a", "b"], ["a"], ["q"], ["z"])
