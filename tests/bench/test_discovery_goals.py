"""The discovery-goals benchmark: a missing data folder, and one trial on a generated raw table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddssp.bench.discovery_goals import main, one_trial


def test_missing_data_folder(tmp_path, capsys):
    assert main(["--data", str(tmp_path)]) == 1
    assert "adult_raw.csv" in capsys.readouterr().out


def test_one_trial_on_a_generated_table():
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n).astype(str),
            "job": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "id": [f"x{i}" for i in range(n)],  # an identifier: discovery leaves it out
        }
    )
    out = one_trial(df, 2000, 1.0, rng, None, False)
    assert out["ok"] and out["error"] is None
    assert "id" in out["dropped"] and "age" not in out["dropped"]
