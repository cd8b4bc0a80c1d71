"""Hostile input, fourth review: a wide raw table is refused from its header before discovery reads
it or draws noise; the key-release cost the ledger's self-check recomputes per entry is cheap and
gives the values it gave before; nested Parquet columns the user drops are not warned of."""

from __future__ import annotations

import json
import math
import warnings
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.data.limits import (
    DISCOVERY_ENTRIES_PER_CATEGORICAL,
    DISCOVERY_ENTRIES_PER_COLUMN,
    MAX_DISCOVERY_ENTRIES,
    check_discovery_width,
)
from ddssp.errors import DDSSPError


def _spy_on_noise(monkeypatch) -> list:
    """Record every draw of either noise source."""
    from ddssp.dp.noise import InsecureSeededNoise, SecureNoise

    drawn: list = []

    def spy_on(real):
        def spy(self, *a, **k):
            drawn.append(1)
            return real(self, *a, **k)

        return spy

    for cls in (SecureNoise, InsecureSeededNoise):
        for draw in ("gaussian_int", "noisy_max", "gaussian_float", "laplace_float", "bernoulli", "run_opendp"):
            monkeypatch.setattr(cls, draw, spy_on(getattr(cls, draw)))
    return drawn


# --------------------------------------------------------------------------- wide raw tables
def _wide_csv(path, d: int, n: int = 40):
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.integers(0, 3, (n, d)).astype(str), columns=[f"c{i}" for i in range(d)]).to_csv(path, index=False)
    return path


def test_wide_raw_table_refused_from_its_header_before_discovery(tmp_path, capsys, monkeypatch):
    import ddssp.pipeline.source as source

    p = _wide_csv(tmp_path / "wide.csv", 500)
    drawn = _spy_on_noise(monkeypatch)
    read = []
    real_read = source.read_rows
    monkeypatch.setattr(source, "read_rows", lambda *a, **k: read.append(1) or real_read(*a, **k))
    out = tmp_path / "o.release"
    assert main(["release", str(p), "--eps", "1", "--delta", "1e-6", "-o", str(out), "--insecure-seed", "0"]) == 1
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddssp: error:"), err
    assert (
        "500 undeclared columns needs at least 1,001" in lines[0]
        and "--columns/--drop" in lines[0]
        and "schema" in lines[0]
    )
    assert not drawn and not read and not out.exists()  # no noise drawn, no row read


def test_discovery_width_check_counts_declared_kinds_and_the_cap():
    per = DISCOVERY_ENTRIES_PER_COLUMN
    fits = (MAX_DISCOVERY_ENTRIES - 1) // per
    check_discovery_width([f"c{i}" for i in range(fits)])
    with pytest.raises(DDSSPError, match=f"{fits + 1:,} undeclared columns"):
        check_discovery_width([f"c{i}" for i in range(fits + 1)])
    # columns declared categorical need fewer entries, so more of them fit
    names = [f"c{i}" for i in range(fits + 1)]
    check_discovery_width(names, categorical=names[: per * 2])
    with pytest.raises(DDSSPError):
        check_discovery_width(
            [f"c{i}" for i in range(MAX_DISCOVERY_ENTRIES)], categorical=[f"c{i}" for i in range(1000)]
        )


def test_wide_table_discovery_counts_are_what_the_early_check_assumes():
    """Every column discovery keeps makes at least the entries the early check counts, whatever its
    kind (numeric columns on counts or on private medians), plus one row count for the table."""
    from ddssp.dp.noise import make_noise
    from ddssp.pipeline.options import DiscoveryOptions
    from ddssp.pipeline.plan import plan_schema

    for n, eps in ((3000, 2.0), (400, 2.0)):
        rng = np.random.default_rng(1)
        df = pd.DataFrame(
            {
                "cat": rng.choice(list("abc"), n),
                "cat_declared": rng.choice(list("xy"), n),
                "num": rng.normal(50, 10, n).round(1).astype(str),
                "num_declared": rng.integers(0, 100, n).astype(str),
                "day": pd.Series(pd.date_range("2000-01-01", periods=n, freq="D").astype(str))
                .sample(frac=1.0, random_state=0)
                .to_numpy(),
            }
        )
        opts = DiscoveryOptions(categorical=["cat_declared"], numeric=["num_declared"], dates=["day"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = plan_schema(df, None, eps=eps, delta=1e-6, discovery=opts, noise=make_noise(3))
        per = defaultdict(int)
        for e in plan.ledger.entries:
            per[e.clique[0]] += 1
        assert sum(per.values()) == len(plan.ledger.entries)
        rows = [e for e in plan.ledger.entries if "row count" in e.note]
        assert len(rows) == 1
        per[rows[0].clique[0]] -= 1
        assert plan.discovered, (n, eps)
        for name in plan.discovered:
            least = DISCOVERY_ENTRIES_PER_CATEGORICAL if name == "cat_declared" else DISCOVERY_ENTRIES_PER_COLUMN
            assert per[name] >= least, (n, eps, name, per)


# --------------------------------------------------------------------------- key-release cost
def _old_threshold_cost(sigma: float, threshold: int) -> tuple[float, float]:
    """The key-release cost as it was computed before it was made cheap: a fresh OpenDP measurement
    per call, and the tail bound through scipy.stats.norm."""
    from scipy.stats import norm

    from ddssp.dp.measurements import opendp

    dp = opendp()
    dom = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=dp.i64))
    metric = dp.l02inf_distance(dp.absolute_distance(T=dp.i64))
    m = dp.m.make_gaussian_threshold(dom, metric, scale=float(sigma), threshold=int(threshold))
    rho, delta = m.map((1, 1, 1))
    z = float(threshold - 1) / float(sigma)
    tail = float(min(1.0, norm.sf(z) + norm.pdf(z) / float(sigma)))
    return float(rho), max(float(delta), tail)


def test_threshold_cost_gives_the_values_it_gave_before():
    from ddssp.dp.discovery_mechanisms import discrete_tail_bound, threshold_cost

    sigmas = [0.05, 0.3, 0.9999, 1.0, 2.5, 7.0, 10.0 + 1e-3, 33.3, 100.0, 1234.5, 1e5]
    thresholds = [2, 3, 5, 11, 40, 97, 400, 5000]
    for sigma in sigmas:
        for t in thresholds:
            want = _old_threshold_cost(sigma, t)
            assert threshold_cost(sigma, t) == want, (sigma, t)
            assert threshold_cost(sigma, t) == want, (sigma, t)  # memoised: the same again
    from scipy.stats import norm

    for sigma in sigmas:
        for m in (-3.0, 0.0, 0.5, 1.0, 4.0, 39.0, 1e3):
            z = m / sigma
            assert discrete_tail_bound(sigma, m) == float(min(1.0, norm.sf(z) + norm.pdf(z) / sigma)), (sigma, m)


def test_forged_discovery_entries_checked_as_before(tmp_path):
    """The self-check verifies each key-release entry's rho and delta against the (memoised) cost:
    a valid entry passes and one with its rho or delta off is named."""
    from ddssp.dp.discovery_mechanisms import _check_keys_entry, threshold_cost
    from ddssp.dp.entries import LedgerEntry

    sigma, t = 10.0 + 7e-3, 40
    rho, delta = threshold_cost(sigma, t)

    def entry(r, d):
        return LedgerEntry.from_dict(
            {
                "kind": "discover-keys",
                "rho": r,
                "sigma": sigma,
                "eps_em": None,
                "clique": ["a"],
                "round": None,
                "note": "",
                "delta": d,
                "params": {"threshold": t, "l0": 1, "l2": 1, "linf": 1},
            }
        )

    assert _check_keys_entry(entry(rho, delta)) is None
    assert "rho" in _check_keys_entry(entry(rho * (1 + 1e-6), delta))
    assert "delta" in _check_keys_entry(entry(rho, delta * 0.99))
    assert math.isfinite(rho) and 0 < delta < 1


# --------------------------------------------------------------------------- nested Parquet columns
def test_nested_parquet_columns_warned_of_only_when_the_selection_keeps_them(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from ddssp.data.tables import NestedColumnsWarning, read_table

    n = 20
    p = tmp_path / "nested.parquet"
    pq.write_table(
        pa.table(
            {
                "a": pa.array(range(n)),
                "l": pa.array([[i] for i in range(n)]),
                "s": pa.array([{"x": i} for i in range(n)]),
            }
        ),
        p,
    )
    with pytest.warns(NestedColumnsWarning, match=r"l, s not read"):
        assert list(read_table(p).columns) == ["a"]
    with pytest.warns(NestedColumnsWarning, match=r"column\(s\) s not read"):
        read_table(p, drop=["l"])
    for sel in ({"drop": ["l", "s"]}, {"columns": ["a"]}, {"columns": ["a", "l"], "drop": ["l"]}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert list(read_table(p, **sel).columns) == ["a"], sel


def test_schema_command_drops_nested_parquet_columns_quietly(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n = 3000
    p = tmp_path / "nested.parquet"
    pq.write_table(
        pa.table(
            {
                "a": pa.array([i % 3 for i in range(n)]),
                "l": pa.array([[i] for i in range(n)]),
                "s": pa.array([{"x": i} for i in range(n)]),
            }
        ),
        p,
    )
    out = tmp_path / "s.json"
    base = ["schema", str(p), "--eps", "1", "-o", str(out)]
    assert main([*base, "--drop", "l,s"]) == 0
    _, err = capsys.readouterr()
    assert "nested" not in err and json.loads(out.read_text())["columns"][0]["name"] == "a"
    out.unlink()
    assert main([*base, "--drop", "l"]) == 1  # a kept nested column: refused from the Parquet schema
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "nested Parquet column(s) s (struct" in lines[0] and "--drop s" in lines[0], err
    assert not out.exists()


def test_a_model_size_the_reader_refuses_is_refused_before_the_table_is_read(tmp_path, capsys, monkeypatch):
    from ddssp.cli import main

    monkeypatch.delenv("DDSSP_MAX_LOAD_MEMORY", raising=False)
    data = tmp_path / "t.csv"
    data.write_text("a,b\n1,x\n2,y\n")
    out = tmp_path / "o.release"
    argv = ["release", str(data), "--eps", "1", "--delta", "1e-6", "--max-model-size", "200", "-o", str(out)]
    monkeypatch.setattr("ddssp.pipeline.release", lambda *a, **k: pytest.fail("the table was read"))
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-model-size 200" in err[0] and "80 MB" in err[0], err
    assert not out.exists()
