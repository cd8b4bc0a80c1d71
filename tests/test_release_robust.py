"""No value of the data stops a release once the header is read: values between levels go to the
nearest level, unreleased labels to ``<other>`` (never to a real label), columns discovery cannot
resolve are left out with one warning (``strict`` refuses), and header problems are reported before
any noise is drawn."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddssp.cli import main
from ddssp.data import Column, Schema
from ddssp.errors import SchemaError
from ddssp.pipeline import DiscoveryOptions, DroppedColumnsWarning, plan_schema
from ddssp.releasefile import Release


def _whole_table(n: int = 20_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.integers(1, 11, n).astype(object), "g": rng.choice(["a", "b", "c"], n)})


def _plan_and_encode(df: pd.DataFrame, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_schema(df, None, eps=1.0, delta=1e-9, **kw)
        codes = plan.schema.encode(df[[c for c in df.columns if c in plan.schema]])
    return plan, codes


def test_levels_column_codes_a_value_between_levels_to_the_nearest():
    col = Column.levels("x", [1, 2, 3, 10])
    s = Schema([col])
    codes = s.encode(pd.DataFrame({"x": ["2.5", "2.4", "2.6", "7", "1"]}))["x"].tolist()
    assert codes == [1, 1, 2, 3, 0]  # a tie goes to the lower level


def test_levels_not_clipped_still_refuse_values_between_codes():
    s = Schema([Column.ordinal("x", 3)])  # a domain file's codes: 1.5 is not a code
    with pytest.raises(SchemaError):
        s.encode(pd.DataFrame({"x": [0, 1.5]}))


def _fractional_plans(runs: int) -> None:
    df = _whole_table()
    df.loc[0, "x"] = 2.5
    nb = df.iloc[1:]
    for _ in range(runs):
        for t in (df, nb):
            plan, codes = _plan_and_encode(t)
            assert "x" in plan.schema
            assert (codes["x"] >= 0).all() and (codes["x"] < plan.schema.column("x").size).all()


def test_one_fractional_value_never_stops_a_release():
    """The table with one 2.5 in a whole-number column and its neighbour without that row: 25 plans
    (discovery + encoding) of each all succeed, and the 2.5 is coded to a real level."""
    _fractional_plans(25)


@pytest.mark.slow
def test_one_fractional_value_never_stops_a_release_in_100_draws():
    """As above, on 100 fresh draws of each."""
    _fractional_plans(100)


def test_one_fractional_value_full_release_cli(tmp_path):
    df = _whole_table(5_000)
    df.loc[0, "x"] = 2.5
    for name, t in (("with", df), ("without", df.iloc[1:])):
        p = tmp_path / f"{name}.csv"
        t.to_csv(p, index=False)
        for backend in ("duckdb", "numpy"):
            rc = main(
                [
                    "release",
                    str(p),
                    "--eps",
                    "1",
                    "--rounds",
                    "8",
                    "--quiet",
                    "--backend",
                    backend,
                    "-o",
                    str(tmp_path / f"{name}-{backend}.release"),
                ]
            )
            assert rc == 0


def test_small_labels_go_to_other_never_to_a_real_label():
    rng = np.random.default_rng(1)
    n = 20_000
    race = rng.choice(["White", "Black", "Tiny"], n, p=[0.899, 0.1, 0.001])  # Tiny: ~20 rows
    yes = np.where(np.arange(n) < 30, "no", "yes")  # a binary column, 30 'no'
    df = pd.DataFrame({"race": race, "yes": yes, "k": rng.integers(0, 5, n)})
    plan, codes = _plan_and_encode(df)
    col = plan.schema.column("race")
    assert "Tiny" not in col.labels and "<other>" in col.labels
    tiny = codes["race"][race == "Tiny"]
    assert (tiny == col.labels.index("<other>")).all()
    if "yes" in plan.schema:
        yc = plan.schema.column("yes")
        if "no" not in yc.labels:  # 'no' not released: it becomes <other>, never 'yes'
            assert "<other>" in yc.labels
            assert (codes["yes"][yes == "no"] == yc.labels.index("<other>")).all()


def test_unresolvable_columns_dropped_with_one_warning_or_refused_when_strict():
    rng = np.random.default_rng(2)
    n = 3_000
    df = pd.DataFrame(
        {"id": [f"u{i}" for i in range(n)], "empty": [None] * n, "k": rng.integers(0, 4, n), "const": ["c"] * n}
    )
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        plan = plan_schema(df, None, eps=1.0, delta=1e-9)
    dropped = [x for x in w if issubclass(x.category, DroppedColumnsWarning)]
    assert len(dropped) == 1
    msg = str(dropped[0].message)
    assert {"id", "empty"} <= set(plan.dropped) and "k" in plan.schema
    for name in plan.dropped:
        assert repr(name) in msg
    assert "DiscoveryOptions.share" in msg and "spends the budget again" in msg
    # 3,000 rows: the noisy row count raised discovery's share above the default 0.1, and the advice
    # names the share that was used, not only the one given
    assert "given 0.1, raised to 0.6" in msg
    assert plan.ledger.spent <= plan.ledger.rho_budget
    with pytest.raises(SchemaError, match=r"DiscoveryOptions\.strict"):
        plan_schema(df, None, eps=1.0, delta=1e-9, discovery=DiscoveryOptions(strict=True))
    with pytest.raises(SchemaError, match="no column could be discovered"):
        plan_schema(df[["id", "empty"]], None, eps=1.0, delta=1e-9)


def test_release_api_leaves_dropped_columns_out():
    from ddssp.pipeline import AimOptions, release

    rng = np.random.default_rng(3)
    n = 4_000
    df = pd.DataFrame({"id": [f"u{i}" for i in range(n)], "k": rng.integers(0, 4, n), "g": rng.choice(["a", "b"], n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(df, eps=1.0, aim=AimOptions(rounds=8))
    assert "id" not in rel.schema.names and {"k", "g"} <= set(rel.schema.names)
    assert rel.rho_spent <= rel.rho_budget * (1 + 1e-9)


def test_cli_columns_drop_strict_and_unnamed_header(tmp_path, capsys):
    rng = np.random.default_rng(4)
    n = 3_000
    df = pd.DataFrame(
        {
            "": np.arange(n),
            "id": [f"u{i}" for i in range(n)],
            "k": rng.integers(0, 4, n),
            "g": rng.choice(["a", "b"], n),
        }
    )
    p = tmp_path / "t.csv"
    df.to_csv(p, index=False)
    out = tmp_path / "t.release"
    # unknown names in --columns and --drop: one error naming both, before anything is written
    rc = main(["release", str(p), "--eps", "1", "--columns", "k,zz", "--drop", "qq", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc != 0 and "'zz', 'qq'" in err and not out.exists()
    rc = main(["release", str(p), "--eps", "1", "--drop", "id", "--rounds", "8", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 0 and "column_1" in err
    rel = Release.load(out)
    assert "id" not in rel.schema.names and "k" in rel.schema.names
    out2 = tmp_path / "t2.release"
    rc = main(["release", str(p), "--eps", "1", "--columns", "id,k", "--strict", "-o", str(out2)])
    err = capsys.readouterr().err
    assert rc != 0 and "--strict" in err and "'id'" in err and not out2.exists()
    rc = main(["release", str(p), "--eps", "1", "--columns", "id,k,g", "--rounds", "8", "-o", str(out2)])
    err = capsys.readouterr().err
    assert rc == 0 and "left out of the release" in err
    assert Release.load(out2).schema.names == ["k", "g"]


_cell = st.one_of(
    st.none(),
    st.integers(-1000, 1000),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from(["", "a", "b", "?", "x y", "1.5", "NaN", "inf", "-0", "1e300"]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(["int", "float", "cat", "mixed"]),
    n=st.integers(50, 3000),
    row=st.lists(_cell, min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_property_no_value_stops_discovery_or_encoding(base, n, row, seed):
    """For random raw tables and a neighbour with one changed row, schema discovery and encoding
    under the discovered schema never raise on values."""
    rng = np.random.default_rng(seed)
    cols = {
        "int": rng.integers(0, 20, n).astype(object),
        "float": np.round(rng.normal(100, 30, n), 2).astype(object),
        "cat": rng.choice(["p", "q", "r"], n).astype(object),
    }
    if base == "mixed":
        cols["int"][: n // 3] = "txt"
    df = pd.DataFrame(cols).astype(object)
    nb = df.copy()
    i = int(rng.integers(0, n))
    for j, c in enumerate(nb.columns):
        nb.loc[i, c] = row[j]
    for t in (df, nb):
        try:
            plan, codes = _plan_and_encode(t)
        except SchemaError as exc:  # only "nothing could be discovered" may refuse, never a value
            assert "no column could be discovered" in str(exc)
            continue
        for c in plan.schema.names:
            assert ((codes[c] >= 0) & (codes[c] < plan.schema.column(c).size)).all()


def test_inspect_shows_the_schema_and_exports_it(tmp_path, capsys):
    from ddssp.data import load_schema

    df = _whole_table(4_000)
    p = tmp_path / "t.csv"
    df.to_csv(p, index=False)
    rel = tmp_path / "t.release"
    assert main(["release", str(p), "--eps", "1", "--rounds", "8", "--quiet", "-o", str(rel)]) == 0
    capsys.readouterr()
    assert main(["inspect", str(rel)]) == 0
    out = capsys.readouterr().out
    assert "discovered" in out and "% of the budget" in out and "<other>" in out
    s = tmp_path / "s.json"
    assert main(["inspect", str(rel), "--schema", "-o", str(s)]) == 0
    assert load_schema(s) == Release.load(rel).schema
    assert main(["inspect", str(rel), "--json"]) == 0
    import json

    cols = json.loads(capsys.readouterr().out)["columns"]
    assert cols["g"]["source"] == "discovered" and "<other>" in cols["g"]["levels"]


def test_dropped_message_names_the_share_used():
    from ddssp.pipeline.plan import dropped_message

    assert "(now 0.3)" in dropped_message({"a": "why"}, 0.3)
    assert "(now 0.3)" in dropped_message({"a": "why"}, 0.3, 0.3)
    assert "(given 0.1, raised to 0.43 for a small table)" in dropped_message({"a": "why"}, 0.1, 0.43)


def test_dropped_message_says_a_shared_reason_once():
    from ddssp.pipeline.plan import dropped_message

    few = "no values found (too few rows)"
    msg = dropped_message(
        {
            "a": f"column 'a': {few}",
            "b": f"column 'b': {few}",
            "c": "column 'c' holds a single value; drop it",
            "d": f"column 'd': {few}",
        },
        0.1,
    )
    assert msg.count(few) == 1 and "'a', 'b', 'd': " + few in msg
    assert "'c' holds a single value; drop it" in msg and msg.startswith("4 column(s)")
    two = dropped_message({n: f"column {n!r} holds a single value" for n in "xy"}, 0.1)
    assert "'x', 'y': each holds a single value" in two


def test_a_release_with_one_column_left_by_discovery_measures_its_one_way_marginal():
    """Discovery may leave a single column (the others dropped: a DP outcome); the release must not
    then fail on the all-pairs workload, which needs two columns."""
    from ddssp.pipeline import release

    rng = np.random.default_rng(0)
    n = 3_000
    df = pd.DataFrame({"id": [f"u{i}" for i in range(n)], "x": rng.normal(50, 10, n).round(2)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(df, eps=1.0, insecure_seed=1)
    assert rel.schema.names == ["x"]
    assert abs(rel.ledger.spent - rel.ledger.rho_budget) <= 1e-9 * rel.ledger.rho_budget
    assert len(rel.sample(50, seed=1)) == 50
