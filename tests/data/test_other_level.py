"""The ``<other>`` level of a discovered categorical column holds rows only where the noisy counts
show them: otherwise it is a level of the schema marked empty, which the release's model (and so
its marginals, fits and synthetic rows) gives no mass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from ddssp import release
from ddssp.data.columns import Column
from ddssp.data.discovery.labels import OTHER_SDS, OTHER_SHARE, other_shows
from ddssp.data.discovery.scan import ScanResult
from ddssp.errors import SchemaError
from ddssp.marginals.model import GraphicalModel, with_structural_zeros
from ddssp.pipeline.options import AimOptions
from ddssp.releasefile.model import Release

# ---------------------------------------------------------------------------- the schema field


def test_empty_levels_round_trip_and_are_validated():
    col = Column.categorical("s", ["a", "b", "<other>"], missing="<other>").with_empty(["<other>"])
    d = col.to_dict()
    assert d["empty"] == ["<other>"]
    back = Column.from_dict(d)
    assert back == col and back.empty == ("<other>",)
    assert "empty" not in Column.categorical("s", ["a", "b"]).to_dict()
    coded = Column.from_dict({"name": "c", "kind": "categorical", "size": 3, "empty": ["2"]})
    assert not coded.is_codes and coded.to_dict()["empty"] == ["2"]  # kept through a round trip
    for bad in (["zz"], ["a", "a"], ["a", "b", "<other>"], "<other>", [1], None):
        with pytest.raises(SchemaError, match='"empty"'):
            Column.from_dict({**d, "empty": bad})


# ---------------------------------------------------------------------------- the model


def _model(seed=0):
    rng = np.random.default_rng(seed)
    dom = {"a": 3, "b": 2, "c": 4}
    pots = {("a", "b"): rng.normal(size=(3, 2)), ("b", "c"): rng.normal(size=(2, 4))}
    return GraphicalModel(dom, pots, 250.0)


def test_a_structural_zero_is_exactly_zero_everywhere_and_the_rest_keeps_its_shape():
    m = _model()
    z = with_structural_zeros(m, {"a": [2], "c": [0]})
    one = z.marginal("a")
    assert one[2] == 0.0 and np.isclose(one.sum(), m.total)
    assert z.marginal("c")[0] == 0.0
    for c, b in zip(z.cliques, z.beliefs):  # every clique that holds the column, not only one
        if "a" in c:
            assert not np.take(b, [2], axis=c.index("a")).any()
    # conditioning: on the levels kept, the joint is the fitted one renormalised
    keep = m.marginal(["a", "c"])[:2, 1:]
    assert np.allclose(z.marginal(["a", "c"])[:2, 1:], keep / keep.sum() * m.total)
    rows = z.sample(3000, np.random.default_rng(1), method="rounded")
    assert not (rows["a"] == 2).any() and not (rows["c"] == 0).any()
    assert with_structural_zeros(m, {}) is m
    with pytest.raises(ValueError):
        with_structural_zeros(m, {"a": [0, 1, 2]})  # no mass left


def test_other_shows_only_when_the_noisy_counts_leave_room_for_it():
    sds = {"x": 10.0, "y": 10.0}
    sd = np.sqrt(2 * 10.0**2 + 2 * 10.0**2)  # the scan's present and missing cells, and two labels
    scan = ScanResult(kind="categorical", n_present=10_000.0, missing=0.0, sigma=10.0)
    assert not other_shows(scan, None, {"x": 6000.0, "y": 4000.0}, sds)  # nothing outside the labels
    assert other_shows(scan, None, {"x": 5000.0, "y": 4000.0}, sds)  # a tenth outside them
    # at this noise (2 sds under 5% of the rows) showing decides: a rest of 2 sds shows
    edge = OTHER_SDS * sd
    assert other_shows(scan, None, {"x": 6000.0, "y": 4000.0 - edge}, sds)
    assert not other_shows(scan, None, {"x": 6000.0, "y": 4000.0 - edge + 1.0}, sds)
    # on a small table the noise alone could hide a missed label worth keeping: <other> stays
    small = ScanResult(kind="categorical", n_present=1000.0, missing=0.0, sigma=20.0)
    assert OTHER_SDS * np.sqrt(4 * 20.0**2) > OTHER_SHARE * 1000
    assert other_shows(small, None, {"x": 600.0, "y": 400.0}, {"x": 20.0, "y": 20.0})
    # without a scan, the noisy row count is the total; with neither nothing says it is empty
    assert not other_shows(None, (10_000.0, 10.0), {"x": 6000.0, "y": 4000.0}, sds)
    assert other_shows(None, None, {"x": 6000.0, "y": 4000.0}, sds)


# ---------------------------------------------------------------------------- releases


def _table(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    rare = [f"r{i:02d}" for i in range(40)]  # 40 labels of ~0.75% each: none is released
    g = np.where(rng.random(n) < 0.3, rng.choice(rare, n), rng.choice(["big", "large"], n))
    return pd.DataFrame({"s": rng.choice(["Male", "Female"], n, p=[0.6, 0.4]), "g": g})


@pytest.fixture(scope="module")
def made():
    df = _table()
    return df, [
        release(df, eps=4.0, insecure_seed=seed, aim=AimOptions(rounds=4), progress=False) for seed in (1, 2, 3)
    ]


def test_a_binary_column_never_draws_other_and_many_rare_labels_do(made):
    df, rels = made
    for i, rel in enumerate(rels):
        s, g = rel.schema.column("s"), rel.schema.column("g")
        assert set(s.labels) >= {"Male", "Female", "<other>"} and s.empty == ("<other>",)
        assert "<other>" in g.labels and not g.empty  # the rare labels' 30% show
        syn = rel.synthesize(len(df), seed=i)
        assert not (syn["s"] == "<other>").any()
        assert set(syn["s"]) == {"Male", "Female"}
        assert 0.15 < (syn["g"] == "<other>").mean() < 0.45


def test_inspect_names_the_empty_level(made, tmp_path, capsys):
    from ddssp.cli import main

    path = made[1][0].save(tmp_path / "i.release")
    capsys.readouterr()
    assert main(["inspect", str(path)]) == 0
    assert "no rows (the model gives them no mass): <other>" in capsys.readouterr().out


def test_the_models_marginal_of_an_empty_level_is_zero_and_survives_the_file(made, tmp_path):
    _, rels = made
    rel = rels[0]
    k = rel.schema.column("s").labels.index("<other>")
    for r in (rel, Release.load(rel.save(tmp_path / "r.release"))):
        one = r.marginal("s")
        assert one[k] == 0.0 and np.isclose(one.sum(), r.total)
        assert not r.marginal(["s", "g"])[k].any()
        assert r.schema.column("s").empty == ("<other>",)
    # the file keeps the model as fitted (finite log-potentials: some mass on every level); the zero
    # is the conditioning on the schema's empty level
    assert rel.fitted_model.marginal("s")[k] > 0.0 and rel.fitted_model is not rel.model
    # a copy made from the conditioned model still writes the fitted one (finite log-potentials)
    copy = dataclasses.replace(rel, info={})
    assert copy.fitted_model is rel.fitted_model and copy.marginal("s")[k] == 0.0
    assert Release.load(copy.save(tmp_path / "c.release")).marginal("s")[k] == 0.0


def test_synth_notes_other_rows_and_no_other_draws_only_named_labels(made, tmp_path, capsys):
    from ddssp.cli import main
    from ddssp.releasefile.conditions import catch_all_levels, without_catch_all

    df, rels = made
    rel = rels[0]
    assert catch_all_levels(rel.schema) == {"g": "<other>"}  # 's' is empty, so not listed
    path = rel.save(tmp_path / "o.release")
    out = tmp_path / "o.csv"
    args = ["synth", str(path), "--rows", "2000", "--seed", "3", "--allow-insecure", "--force"]
    assert main([*args, "-o", str(out)]) == 0
    got = pd.read_csv(tmp_path / "o.NOT-PRIVATE.csv", dtype=str, keep_default_na=False)
    share = (got["g"] == "<other>").mean()
    assert 0.15 < share < 0.45
    err = capsys.readouterr().err
    assert "rows in <other>" in err and f"'g' {share:.1%}" in err and "--no-other" in err
    assert main([*args, "-o", str(out), "--no-other"]) == 0
    got = pd.read_csv(tmp_path / "o.NOT-PRIVATE.csv", dtype=str, keep_default_na=False)
    assert set(got["g"]) == {"big", "large"} and set(got["s"]) == {"Male", "Female"}
    assert "--no-other: rows in <other>" in capsys.readouterr().err
    # conditioning leaves the release itself as it was, and keeps the other columns' shares
    cond = without_catch_all(rel, ["g"])
    assert rel.schema.column("g").empty == () and cond.schema.column("g").empty == ("<other>",)
    m0 = rel.model.marginal(["s"]) / rel.model.total
    m1 = cond.model.marginal(["s"]) / cond.model.total
    assert np.abs(m0 - m1).max() < 0.05


def test_rows_drawn_under_rules_from_a_refitted_model_keep_the_empty_levels(made, monkeypatch):
    # the refit (taken when the model breaks the rules often; forced here) starts from the
    # measurements, which put noise on the empty <other>: the draw is conditioned on it again
    import ddssp.marginals.rules_model as rules_model

    df, rels = made
    rel = dataclasses.replace(rels[0], rules=["g == big -> s != Female"])
    assert rel.schema.column("s").empty == ("<other>",)
    calls = []
    refitted = rules_model.refitted
    monkeypatch.setattr(rules_model, "REFIT_ABOVE", -1.0)
    monkeypatch.setattr(rules_model, "refitted", lambda *a, **k: calls.append(1) or refitted(*a, **k))
    syn = rel.synthesize(len(df), seed=4)
    assert calls  # the refit path ran
    assert not (syn["s"] == "<other>").any() and set(syn["s"]) == {"Male", "Female"}
