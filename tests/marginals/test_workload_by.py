"""``--by``: the pairs within each group of a public grouping column (three-way marginals with it)."""

from __future__ import annotations

import itertools
import json

import pytest

from ddssp.errors import WorkloadError
from ddssp.marginals.workload import grouped_pairs
from ddssp.pipeline import AimOptions, build_workload

DOMAIN = {"PUMA": 4, "AGEP": 5, "SEX": 2, "MSP": 3}


def test_grouped_pairs_are_every_pair_of_the_other_columns_with_the_group():
    wl = grouped_pairs(DOMAIN, "PUMA")
    others = ["AGEP", "SEX", "MSP"]
    assert [c for c, _ in wl] == [("PUMA", a, b) for a, b in itertools.combinations(others, 2)]
    assert all(w == 1.0 for _, w in wl)


def test_grouped_pairs_with_one_other_column_is_the_pair():
    assert grouped_pairs({"G": 3, "A": 2}, "G") == [(("G", "A"), 1.0)]


def test_grouped_pairs_cap_and_errors():
    wl = grouped_pairs(DOMAIN, "PUMA", max_cells=4 * 5 * 2)
    assert ("PUMA", "AGEP", "MSP") not in [c for c, _ in wl] and ("PUMA", "AGEP", "SEX") in [c for c, _ in wl]
    with pytest.raises(WorkloadError, match="not in the domain"):
        grouped_pairs(DOMAIN, "STATE")
    with pytest.raises(WorkloadError, match="at least one other column"):
        grouped_pairs({"G": 3}, "G")


def test_build_workload_by_all_pairs_target_and_listed_cliques(tmp_path):
    assert build_workload("all-pairs", DOMAIN, None, by="PUMA") == grouped_pairs(DOMAIN, "PUMA")
    t = build_workload("target", DOMAIN, "SEX", by="PUMA")
    assert [c for c, _ in t] == [("PUMA", "SEX"), ("PUMA", "SEX", "AGEP"), ("PUMA", "SEX", "MSP")]
    f = tmp_path / "w.json"
    f.write_text(json.dumps([["AGEP", "SEX", "MSP"]]))
    listed = build_workload(str(f), DOMAIN, None, by="PUMA")
    assert listed[0] == (("AGEP", "SEX", "MSP"), 1.0)  # the agency's clique, then the pairs within groups
    assert listed[1:] == grouped_pairs(DOMAIN, "PUMA")
    with pytest.raises(WorkloadError, match="grouping column 'X'"):
        build_workload("all-pairs", DOMAIN, None, by="X")


@pytest.mark.parametrize("bad", ["", 3, ["PUMA"]])
def test_aim_options_by_must_be_a_name(bad):
    with pytest.raises(WorkloadError, match="AimOptions.by"):
        AimOptions(by=bad)


def test_release_by_measures_within_groups_only():
    """A release with ``by`` is asked only for three-way marginals holding the group."""
    import numpy as np
    import pandas as pd

    from ddssp import release
    from ddssp.data import Schema
    from ddssp.pipeline import ReadOptions

    rng = np.random.default_rng(0)
    codes = pd.DataFrame({"G": rng.integers(0, 3, 300), "A": rng.integers(0, 2, 300), "B": rng.integers(0, 3, 300)})
    schema = Schema.from_domain({"G": 3, "A": 2, "B": 3}, categorical=["G", "A", "B"])
    rel = release(
        codes, schema, eps=2.0, read=ReadOptions(encoded=True), aim=AimOptions(by="G", rounds=4), insecure_seed=1
    )
    assert rel.workload == [(("G", "A", "B"), 1.0)]
    assert all(set(m.clique) <= {"G", "A", "B"} for m in rel.measurements)


def test_cli_by_flag_names_the_flag_in_its_error(tmp_path, capsys):
    from ddssp.cli import main

    data = tmp_path / "t.csv"
    data.write_text("a,b\n" + "\n".join(f"{i % 3},{i % 2}" for i in range(60)) + "\n")
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"a": 3, "b": 2}))
    argv = ["release", str(data), "--eps", "1", "--delta", "1e-9", "--domain", str(schema), "--categorical", "a,b"]
    assert main([*argv, "--by", "zz", "-o", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--by" in err[0] and "'zz'" in err[0]
