"""release()'s options: ReadOptions / DiscoveryOptions / AimOptions are validated once, when made, with
errors naming the option; the library takes them as objects only; the CLI names its flags instead;
one noise source per release; column selection and the plan's events come from the pipeline."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import ddssp
import ddssp.pipeline.source as pipeline_source
from ddssp.data.counting import CsvOptions
from ddssp.dp.noise import make_noise
from ddssp.errors import DataError, DDSSPError, SchemaError, WorkloadError
from ddssp.marginals.aim import AIMProgress
from ddssp.pipeline import (
    AimOptions,
    DiscoveryOptions,
    DroppedColumnsWarning,
    Notice,
    PhaseStarted,
    ReadOptions,
    SchemaPlanned,
    build_workload,
    plan_schema,
    release,
)
from tests.commands.test_schema import assert_clean_failure, run_cli


def raw_table(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2])
    x = np.round(rng.normal(40, 10, n), 1)
    y = (rng.random(n) < np.where(a == "red", 0.6, 0.2)).astype(int)
    return pd.DataFrame({"a": a, "x": x, "y": y})


# ------------------------------------------------------------------ the objects, checked when made


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"share": 0}, r"DiscoveryOptions\.share must be in \(0, 1\]"),
        ({"share": 1.5}, r"DiscoveryOptions\.share"),
        ({"share": "0.1"}, r"DiscoveryOptions\.share"),
        ({"share": True}, r"DiscoveryOptions\.share"),
        ({"bins": 0}, r"DiscoveryOptions\.bins"),
        ({"bins": True}, r"DiscoveryOptions\.bins"),
        ({"bins": 2.5}, r"DiscoveryOptions\.bins"),
        ({"max_levels": -1}, r"DiscoveryOptions\.max_levels"),
        ({"categorical": [1]}, r"DiscoveryOptions\.categorical"),
        ({"enabled": "yes"}, r"DiscoveryOptions\.enabled"),
        ({"strict": 1}, r"DiscoveryOptions\.strict"),
    ],
)
def test_discovery_options_refuse_bad_values_naming_the_field(kwargs, match):
    with pytest.raises(DDSSPError, match=match):
        DiscoveryOptions(**kwargs)


def test_discovery_options_accept_good_values_and_are_frozen():
    d = DiscoveryOptions(share=1, categorical=["a"], bins=np.int64(5), max_levels=10)
    assert d.categorical == ("a",) and d.numeric == () and d.bins == 5
    assert DiscoveryOptions(dates="d").dates == ("d",)  # one name, not its letters
    assert d.discovers(None) and not d.discovers(object())  # default: discover only without a schema
    assert DiscoveryOptions(enabled=True).discovers(object()) and not DiscoveryOptions(enabled=False).discovers(None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.share = 0.5


def test_read_options_refuse_bad_values_naming_the_field():
    with pytest.raises(DataError, match=r"unknown counting backend 'pandas' \(ReadOptions\.backend\)"):
        ReadOptions(backend="pandas")
    with pytest.raises(DDSSPError, match=r"ReadOptions\.csv must be .*CsvOptions"):
        ReadOptions(csv=";")
    with pytest.raises(DDSSPError, match=r"ReadOptions\.memory_limit"):
        ReadOptions(memory_limit=2)
    with pytest.raises(DDSSPError, match=r"ReadOptions\.spark_master"):
        ReadOptions(spark_master=1)
    with pytest.raises(DDSSPError, match=r"ReadOptions\.columns"):
        ReadOptions(columns=[1, 2])
    with pytest.raises(DDSSPError, match=r"ReadOptions\.encoded"):
        ReadOptions(encoded="yes")
    r = ReadOptions(backend="duckdb", csv=CsvOptions(delimiter=";"), memory_limit="1GB", columns="a", drop=["b"])
    assert r.columns == ("a",) and r.drop == ("b",) and r.selects and not ReadOptions().selects
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.backend = "numpy"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rounds": 0}, r"AimOptions\.rounds"),
        ({"iters": -2}, r"AimOptions\.iters"),
        ({"max_cells": 1.5}, r"AimOptions\.max_cells"),
        ({"max_model_size": 0}, r"AimOptions\.max_model_size"),
        ({"engine": "jax"}, r"AimOptions\.engine"),
        ({"workload": 3}, r"AimOptions\.workload"),
        ({"target_share": 0}, r"AimOptions\.target_share"),
        ({"target_share": 1}, r"AimOptions\.target_share"),
        ({"target_share": "0.3"}, r"AimOptions\.target_share"),
    ],
)
def test_aim_options_refuse_bad_values_naming_the_field(kwargs, match):
    with pytest.raises(WorkloadError, match=match):
        AimOptions(**kwargs)


def test_aim_options_make_the_run_settings_once():
    a = AimOptions(rounds=9, iters=3, max_model_size=20, engine="numpy")
    s = a.settings
    assert (s.rounds, s.iters, s.max_model_size, s.engine) == (9, 3, 20, "numpy")
    assert a.settings is s  # made when the options were made, not per use
    assert AimOptions(rounds=9) == AimOptions(rounds=9)
    assert AimOptions(target_share=0.2).settings.target_share == 0.2
    assert AimOptions().settings.target_share is None  # the default share, raised on a small table


def test_release_takes_the_options_as_objects_only():
    df = raw_table(50)
    with pytest.raises(DDSSPError, match="read must be a ReadOptions"):
        release(df, eps=1.0, read={"backend": "numpy"})
    with pytest.raises(DDSSPError, match="discovery must be a DiscoveryOptions"):
        release(df, eps=1.0, discovery={"share": 0.1})
    with pytest.raises(DDSSPError, match="aim must be an AimOptions"):
        release(df, eps=1.0, aim={"rounds": 4})
    for flat in ({"rounds": 4}, {"discovery_share": 0.2}, {"backend": "numpy"}, {"encoded": True}):
        with pytest.raises(TypeError):
            release(df, eps=1.0, **flat)


def test_plan_schema_takes_the_discovery_options():
    df = raw_table()
    plan = plan_schema(
        df,
        None,
        eps=4.0,
        delta=1e-6,
        discovery=DiscoveryOptions(share=0.2, categorical=("y",), numeric=("x",), bins=4),
        noise=make_noise(3),
    )
    assert plan.schema.column("x").size == 4 and plan.schema.column("y").kind == "categorical"
    with pytest.raises(SchemaError, match=r"DiscoveryOptions\.numeric 'nope'"):
        plan_schema(df, None, eps=1.0, delta=1e-6, discovery=DiscoveryOptions(numeric=["nope"]))


def test_package_exposes_the_options():
    assert ddssp.ReadOptions is ReadOptions and ddssp.DiscoveryOptions is DiscoveryOptions
    assert ddssp.AimOptions is AimOptions


# ------------------------------------------------------------------ the CLI names its flags


def test_cli_maps_option_names_to_its_flags(tmp_path, capsys):
    from ddssp.commands import with_flags

    assert with_flags("DiscoveryOptions.share must be in (0, 1]") == "--discovery-share must be in (0, 1]"
    assert with_flags("ReadOptions.columns/drop leave no column") == "--columns/--drop leave no column"
    p = tmp_path / "t.csv"
    raw_table(300).to_csv(p, index=False)
    out = tmp_path / "t.release"
    cases = [
        (["--discovery-share", "0"], "--discovery-share must be in (0, 1], got 0.0"),
        (["--dates", "zz"], "--dates 'zz'"),
        (["--categorical", "a", "--numeric", "a"], "both in --categorical and in --numeric"),
        (["--columns", "a,zz"], "--columns/--drop name column(s) not in the table: 'zz'"),
        (["--rounds", "0"], "--rounds must be a positive integer"),
    ]
    for extra, match in cases:
        rc, _, err = run_cli(["release", p, "--eps", "1", *extra, "-o", out], capsys)
        assert_clean_failure(rc, err, match)
        assert "Options." not in err
    rc, _, err = run_cli(["schema", p, "--eps", "1", "--drop", "a,x,y", "-o", tmp_path / "s.json"], capsys)
    assert_clean_failure(rc, err, "--columns/--drop leave no column")
    assert not out.exists()


# ------------------------------------------------------------------ one noise source per release


@pytest.mark.filterwarnings("ignore::ddssp.data.ClipWarning")
def test_discovery_and_aim_draw_from_one_noise_source():
    from ddssp.dp import make_rng
    from ddssp.marginals.aim import run_aim

    df = raw_table(3000)
    aim = AimOptions(rounds=6)
    rel = release(df, eps=2.0, delta=1e-6, aim=aim, seed=0, insecure_seed=5, progress=False)
    # the same release by hand: one source, discovery first, then AIM on what is left
    noise = make_noise(5)
    plan = plan_schema(df, None, eps=2.0, delta=1e-6, noise=noise)
    domain = plan.schema.domain
    w = build_workload(aim.workload, domain, None)
    with pytest.warns(UserWarning):
        codes = plan.schema.encode(df)
    left = plan.ledger.remaining
    by_hand = run_aim(codes, domain, w, left, rng=make_rng(0), noise=noise, settings=aim.settings, prior=plan.recycled)
    from ddssp.releasefile.conditions import empty_from_measurements

    empty_from_measurements(plan.schema, by_hand.measurements, plan.discovered)  # the release's last step
    assert rel.schema.to_dict() == plan.schema.to_dict()
    assert len(rel.measurements) == len(by_hand.measurements)
    for m1, m2 in zip(rel.measurements, by_hand.measurements):
        assert m1.clique == m2.clique and np.array_equal(m1.values, m2.values)
    # a source restarted after discovery (a plan made with its own source): the same schema, other AIM draws
    restarted = release(
        df,
        plan=plan_schema(df, None, eps=2.0, delta=1e-6, noise=make_noise(5)),
        eps=2.0,
        delta=1e-6,
        aim=aim,
        seed=0,
        insecure_seed=5,
        progress=False,
    )
    assert restarted.schema.to_dict() == rel.schema.to_dict()
    same_cliques = [(a, b) for a, b in zip(rel.measurements, restarted.measurements) if a.clique == b.clique]
    assert same_cliques and not all(np.array_equal(a.values, b.values) for a, b in same_cliques)


# ------------------------------------------------------------------ the table from a path, and the events


@pytest.mark.filterwarnings("ignore::ddssp.data.ClipWarning")
def test_column_selection_from_a_path_happens_in_the_pipeline(tmp_path, monkeypatch):
    df = raw_table(3000)
    df["noise"] = np.arange(len(df)).astype(str)
    p = tmp_path / "t.csv"
    df.to_csv(p, index=False)
    read = ReadOptions(columns=["y", "a", "x", "noise"], drop=["noise"])
    events = []
    rel = release(p, eps=2.0, delta=1e-6, read=read, aim=AimOptions(rounds=6), insecure_seed=1, progress=events.append)
    assert rel.schema.names == ["y", "a", "x"]
    phases = [e.name for e in events if isinstance(e, PhaseStarted)]
    assert phases == ["reading", "discovery"]
    planned = [e.plan for e in events if isinstance(e, SchemaPlanned)]
    assert len(planned) == 1 and planned[0].discovered == ["y", "a", "x"]
    assert isinstance(events[-1], AIMProgress)  # AIM's rounds come after the plan
    assert events.index(next(e for e in events if isinstance(e, SchemaPlanned))) < events.index(
        next(e for e in events if isinstance(e, AIMProgress))
    )

    # names the header lacks are refused from the header alone: no row is read, no noise drawn
    def no_read(*a, **k):
        raise AssertionError("the rows were read")

    monkeypatch.setattr(pipeline_source, "read_rows", no_read)
    with pytest.raises(DataError, match=r"ReadOptions\.columns/drop name column\(s\) not in the table: 'zz'"):
        release(p, eps=1.0, read=ReadOptions(columns=["a", "zz"]), progress=False)
    with pytest.raises(SchemaError, match=r"DiscoveryOptions\.dates 'x2'"):
        release(p, eps=1.0, discovery=DiscoveryOptions(dates=["x2"]), progress=False)


def test_dropped_columns_are_told_as_a_notice_and_warned(tmp_path):
    rng = np.random.default_rng(2)
    n = 3000
    df = pd.DataFrame({"id": [f"u{i}" for i in range(n)], "k": rng.integers(0, 4, n)})
    events = []
    with pytest.warns(DroppedColumnsWarning, match="'id'"):
        rel = release(df, eps=1.0, aim=AimOptions(rounds=4), insecure_seed=3, progress=events.append)
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and isinstance(notices[0].warning, DroppedColumnsWarning)
    assert rel.schema.names == ["k"]
