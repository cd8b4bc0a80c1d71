"""release()'s grouped options: ReadOptions / DiscoveryOptions are validated when made, and give the
same release as the flat keywords they group."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import ddssp
from ddssp.data.counting import CsvOptions
from ddssp.errors import DataError, DDSSPError
from ddssp.pipeline import DiscoveryOptions, ReadOptions, release


def raw_table(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2])
    x = np.round(rng.normal(40, 10, n), 1)
    y = (rng.random(n) < np.where(a == "red", 0.6, 0.2)).astype(int)
    return pd.DataFrame({"a": a, "x": x, "y": y})


def test_flat_keywords_and_options_give_the_same_release():
    df = raw_table()
    common = dict(eps=4.0, delta=1e-6, seed=0, rounds=4, insecure_seed=5)
    flat = release(
        df,
        eps=common["eps"],
        delta=common["delta"],
        seed=0,
        rounds=4,
        insecure_seed=5,
        backend="numpy",
        discovery_share=0.2,
        categorical=["y"],
        numeric=["x"],
        bins=4,
    )
    grouped = release(
        df,
        **common,
        read=ReadOptions(backend="numpy"),
        discovery=DiscoveryOptions(share=0.2, categorical=("y",), numeric=("x",), bins=4),
    )
    assert flat.schema.to_dict() == grouped.schema.to_dict()
    assert flat.schema.column("x").size == 4
    assert [e.to_dict() for e in flat.ledger.entries] == [e.to_dict() for e in grouped.ledger.entries]
    assert len(flat.measurements) == len(grouped.measurements) > 0
    for m1, m2 in zip(flat.measurements, grouped.measurements):
        assert m1.clique == m2.clique and np.array_equal(m1.values, m2.values)


def test_options_and_their_keywords_together_are_refused():
    df = raw_table(50)
    with pytest.raises(DDSSPError, match="not both"):
        release(df, eps=1.0, read=ReadOptions(backend="numpy"), backend="numpy")
    with pytest.raises(DDSSPError, match="not both"):
        release(df, eps=1.0, discovery=DiscoveryOptions(), bins=3)
    with pytest.raises(DDSSPError, match="must be a ReadOptions"):
        release(df, eps=1.0, read={"backend": "numpy"})
    with pytest.raises(DDSSPError, match="must be a DiscoveryOptions"):
        release(df, eps=1.0, discovery={"share": 0.1})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"share": 0}, "discovery-share"),
        ({"share": 1.5}, "discovery-share"),
        ({"share": "0.1"}, "discovery-share"),
        ({"bins": 0}, "bins"),
        ({"bins": True}, "bins"),
        ({"bins": 2.5}, "bins"),
        ({"max_levels": -1}, "max_levels"),
    ],
)
def test_discovery_options_refuse_bad_values(kwargs, match):
    with pytest.raises(DDSSPError, match=match):
        DiscoveryOptions(**kwargs)


def test_discovery_options_accept_good_values_and_are_frozen():
    d = DiscoveryOptions(share=1, categorical=["a"], bins=np.int64(5), max_levels=10)
    assert d.categorical == ("a",) and d.numeric == () and d.bins == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.share = 0.5


def test_read_options_refuse_bad_values():
    with pytest.raises(DataError, match="unknown counting backend 'pandas'"):
        ReadOptions(backend="pandas")
    with pytest.raises(DDSSPError, match="CsvOptions"):
        ReadOptions(csv=";")
    with pytest.raises(DDSSPError, match="memory_limit"):
        ReadOptions(memory_limit=2)
    with pytest.raises(DDSSPError, match="spark_master"):
        ReadOptions(spark_master=1)
    r = ReadOptions(backend="duckdb", csv=CsvOptions(delimiter=";"), memory_limit="1GB")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.backend = "numpy"


def test_bad_flat_keyword_is_refused_like_the_option():
    with pytest.raises(DDSSPError, match="discovery-share"):
        release(raw_table(50), eps=1.0, discovery_share=0)
    with pytest.raises(DataError, match="unknown counting backend"):
        release(raw_table(50), eps=1.0, backend="pandas")


def test_package_exposes_the_options():
    assert ddssp.ReadOptions is ReadOptions and ddssp.DiscoveryOptions is DiscoveryOptions
