"""The CLI's one local note about clipped values: each clipped column with how many of how many rows,
the same from every counting backend, whether or not the release merged its clipping warnings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Column, Schema
from tests.commands.test_schema import run_cli

NOTE = "ddssp: note (local, not released): values outside the discovered or declared range were clipped into it in "


@pytest.mark.parametrize("backend", ["numpy", "duckdb"])
@pytest.mark.parametrize("k", [2, 4])  # 4 columns: more than the release shows as separate warnings
def test_clip_note_names_each_column_with_its_count(tmp_path, capsys, backend, k):
    rng = np.random.default_rng(2)
    names = ["a", "b", "c", "d"]
    table = pd.DataFrame({n: rng.integers(0, 10, 60) for n in names})
    for j, n in enumerate(names[:k]):
        table.loc[:j, n] = -3  # j + 1 rows below the range
    data, schema = tmp_path / "t.csv", tmp_path / "s.json"
    table.to_csv(data, index=False)
    Schema([Column.binned(n, [0, 5, 10]) for n in names]).save(schema)
    argv = ["release", data, "--schema", schema, "--eps", "1", "--rounds", "8", "--backend", backend]
    rc, _, err = run_cli([*argv, "-o", tmp_path / "t.release"], capsys)
    assert rc == 0, err
    notes = [ln for ln in err.splitlines() if ln.startswith("ddssp: note (local")]
    want = ", ".join(f"{n!r} {j + 1} of 60" for j, n in enumerate(names[:k]))
    assert notes == [f"{NOTE}{want} (rows clipped)"]
    assert "ClipWarning" not in err  # the note says it all, once
