"""Absent areas of a declared grouping column are folded away before AIM when asked
(``--absent-areas``, :mod:`ddssp.pipeline.areas`): one noisy count per area, charged to the ledger,
decides; areas that hold rows together stay."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Column, Schema
from ddssp.data.discovery.shared import noise_sd
from ddssp.dp import Ledger
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.pipeline.areas import AREA_SHARE, AreasLeftOutWarning, areas_shown

AREAS = ["25-1", "25-2", "48-1", "06-1", "06-2", "13-1", "17-1", "36-1"]


def test_absent_areas_fold_into_one_empty_level_and_the_counts_are_charged():
    col = Column.categorical("PUMA", AREAS)
    exact = np.array([900, 700, 400, 0, 0, 0, 0, 0])
    ledger = Ledger(1.0)
    found = areas_shown(exact, col, ChargedMechanisms(ledger, InsecureSeededNoise(1)), 0.01)
    assert found.absent == AREAS[3:]
    new = found.column
    assert new.labels == [*AREAS[:3], "<other>"] and new.missing == "<other>" and new.empty == ("<other>",)
    assert found.recode.tolist() == [0, 1, 2, 3, 3, 3, 3, 3]
    (entry,) = ledger.entries
    assert entry.kind == "discover-counts" and entry.clique == ("PUMA",)
    assert entry.rho == pytest.approx(0.01) and float(entry.sigma) == pytest.approx(noise_sd(0.01))


def test_small_areas_under_the_noise_that_hold_rows_together_stay():
    """Twenty areas of 60 rows each at a noise sd of 59: each under 5 sds, together 4.5 sds (over
    ``TOGETHER_SDS``): the column is unchanged (folding them would send real rows to the catch-all)."""
    labels = [f"a{i}" for i in range(20)]
    col = Column.categorical("area", labels)
    found = areas_shown(np.full(20, 60), col, ChargedMechanisms(Ledger(1.0), InsecureSeededNoise(2)), 1.44e-4)
    assert found.column is None and found.absent == []


def test_a_release_by_area_leaves_out_the_areas_the_table_does_not_hold(tmp_path):
    from ddssp import release
    from ddssp.pipeline.options import AimOptions
    from ddssp.releasefile.model import Release

    rng = np.random.default_rng(7)
    n = 3000
    rows = pd.DataFrame(
        {
            "PUMA": rng.choice(AREAS[:3], n, p=[0.5, 0.3, 0.2]),
            "sex": rng.choice(["a", "b"], n),
            "k": rng.choice(["x", "y", "z"], n),
        }
    )
    schema = Schema(
        [
            Column.categorical("PUMA", AREAS),
            Column.categorical("sex", ["a", "b"]),
            Column.categorical("k", ["x", "y", "z"]),
        ]
    )
    with pytest.warns(AreasLeftOutWarning, match="5 of the 8 declared areas"):
        rel = release(
            rows, schema, eps=1.0, insecure_seed=3, aim=AimOptions(by="PUMA", absent_areas=True), progress=False
        )
    assert schema.column("PUMA").labels == AREAS  # the caller's schema is not changed
    assert rel.schema.column("PUMA").labels == [*AREAS[:3], "<other>"]
    assert rel.ledger.spent <= rel.ledger.rho_budget * (1 + 1e-12)
    areas = [e for e in rel.ledger.entries if e.kind == "discover-counts" and e.clique == ("PUMA",)]
    assert len(areas) == 1 and areas[0].rho == pytest.approx(AREA_SHARE * rel.ledger.rho_budget)
    path = rel.save(tmp_path / "r.release")
    back = Release.load(path)  # the reader checks the recycled counts against their charge
    syn = back.synthesize(n, seed=1)
    assert set(syn.PUMA) == set(AREAS[:3])
    assert abs(syn.PUMA.value_counts(normalize=True)["25-1"] - 0.5) < 0.05


def test_a_rule_that_names_an_absent_area_keeps_the_column_as_declared():
    from ddssp import release
    from ddssp.pipeline.options import AimOptions

    rng = np.random.default_rng(9)
    n = 2000
    rows = pd.DataFrame({"PUMA": rng.choice(AREAS[:2], n), "sex": rng.choice(["a", "b"], n)})
    schema = Schema([Column.categorical("PUMA", AREAS), Column.categorical("sex", ["a", "b"])])
    rules = ['PUMA == "36-1" -> sex == a']
    rel = release(
        rows,
        schema,
        eps=1.0,
        insecure_seed=5,
        aim=AimOptions(by="PUMA", absent_areas=True),
        rules=rules,
        progress=False,
    )
    assert rel.schema.column("PUMA").labels == AREAS  # declared, emptied after AIM as before
    assert set(rel.schema.column("PUMA").empty) == set(AREAS[2:])
    assert set(rel.synthesize(500, seed=1).PUMA) <= set(AREAS[:2])


def test_the_counting_backend_folds_the_same_areas_as_the_frame(tmp_path):
    """The same seeded release from a CSV file (counted by DuckDB, which encodes with the folded
    schema) and from the frame: the same levels, ledger and synthetic areas."""
    from ddssp import release
    from ddssp.pipeline.options import AimOptions, ReadOptions

    rng = np.random.default_rng(11)
    n = 2000
    rows = pd.DataFrame({"PUMA": rng.choice(AREAS[:3], n, p=[0.5, 0.3, 0.2]), "sex": rng.choice(["a", "b"], n)})
    csv = tmp_path / "t.csv"
    rows.to_csv(csv, index=False)
    schema = Schema([Column.categorical("PUMA", AREAS), Column.categorical("sex", ["a", "b"])])
    kw = dict(eps=1.0, insecure_seed=6, aim=AimOptions(by="PUMA", absent_areas=True), progress=False)
    with pytest.warns(AreasLeftOutWarning):
        framed = release(rows, schema, **kw)
    with pytest.warns(AreasLeftOutWarning):
        counted = release(str(csv), schema, read=ReadOptions(backend="duckdb"), **kw)
    assert counted.schema.column("PUMA").labels == framed.schema.column("PUMA").labels == [*AREAS[:3], "<other>"]
    assert [e.to_dict() for e in counted.ledger.entries] == [e.to_dict() for e in framed.ledger.entries]
    assert set(counted.synthesize(500, seed=2).PUMA) == set(AREAS[:3])


def test_absent_areas_is_asked_for_and_needs_a_grouping_column(tmp_path):
    import subprocess
    import sys

    from ddssp.errors import WorkloadError
    from ddssp.pipeline.options import AimOptions

    with pytest.raises(WorkloadError, match="needs a grouping column"):
        AimOptions(absent_areas=True)
    rng = np.random.default_rng(12)
    pd.DataFrame({"PUMA": rng.choice(AREAS[:2], 2000), "sex": rng.choice(["a", "b"], 2000)}).to_csv(
        tmp_path / "t.csv", index=False
    )
    Schema([Column.categorical("PUMA", AREAS), Column.categorical("sex", ["a", "b"])]).save(tmp_path / "s.json")
    base = [sys.executable, "-m", "ddssp", "release", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    base += ["--eps", "1", "--by", "PUMA", "--insecure-seed", "1"]
    on = subprocess.run([*base, "--absent-areas", "-o", str(tmp_path / "on.release")], capture_output=True, text=True)
    off = subprocess.run([*base, "-o", str(tmp_path / "off.release")], capture_output=True, text=True)
    assert on.returncode == 0 and off.returncode == 0, on.stderr[-300:] + off.stderr[-300:]
    assert "6 of the 8 declared areas show no rows" in on.stderr
    assert "declared areas" not in off.stderr
