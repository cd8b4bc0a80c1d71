"""The k-marginal of ddssp.evaluation.agency against SDNist 2.4's own code on the NIST MA excerpt (slow).

SDNist pins old numpy and pandas, so it usually lives in its own virtual environment: set
``DDSSP_SDNIST_PYTHON`` to that environment's python (else the test uses this interpreter when it
has ``sdnist``, and skips otherwise). The data is ``nist/ma2019.csv`` and ``nist/data_dictionary.json``
of the shared data directory (``DDSSP_SHARED_DATA``); the test skips when they are absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp.evaluation.agency import kmarginal
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.slow

DRIVER = Path(__file__).with_name("sdnist_kmarginal.py")


def _sdnist_python() -> str:
    exe = os.environ.get("DDSSP_SDNIST_PYTHON")
    if exe:
        return exe
    if importlib.util.find_spec("sdnist") is not None:
        return sys.executable
    pytest.skip("sdnist is not installed: set DDSSP_SDNIST_PYTHON to a python with sdnist==2.4")


def density_edges(data_dict: dict) -> list[float]:
    """SDNist's bins of population density: log-spaced from 10 to the dictionary's maximum + 500,
    20 bins of which the lowest 8 are replaced by (0, 150]."""
    top = float(data_dict["DENSITY"]["values"]["max"]) + 500.0
    return [0.0, 150.0] + list(np.logspace(1.0, np.log10(top), 21)[8:])


def noisy_subsample(data: pd.DataFrame, frac: float, noise: float, seed: int) -> pd.DataFrame:
    """A random sub-sample of the rows with a share ``noise`` of each column's cells replaced by
    the value of a random data row in that column."""
    rng = np.random.default_rng(seed)
    out = data.sample(frac=frac, random_state=seed).reset_index(drop=True)
    for c in out.columns:
        hit = rng.random(len(out)) < noise
        out.loc[hit, c] = data[c].to_numpy()[rng.integers(0, len(data), int(hit.sum()))]
    return out


def _release_rows(raw_csv: Path, tmp_path: Path) -> pd.DataFrame:
    """Synthetic rows from a release of the excerpt at eps 1 (N read as missing), in SDNist's form:
    N for missing, rows of a PUMA outside the excerpt's (the release's ``<other>``) left out."""
    from ddssp.cli import main

    rel, syn = tmp_path / "ma.release", tmp_path / "ma_synth.csv"
    assert main(["release", str(raw_csv), "--eps", "1", "--na-values", "N", "--seed", "1", "-o", str(rel)]) == 0
    assert main(["synth", str(rel), "--rows", "7634", "--seed", "1", "-o", str(syn)]) == 0
    out = pd.read_csv(syn, dtype=str, keep_default_na=False).replace("", "N")
    return out[out["PUMA"].isin(pd.read_csv(raw_csv, dtype=str)["PUMA"].unique())]


@pytest.mark.parametrize("kind", ["noisy-subsample", "release-eps1"])
def test_kmarginal_matches_sdnist(tmp_path, kind):
    nist = SHARED_DATA / "nist"
    if not (nist / "ma2019.csv").exists():
        pytest.skip(f"NIST excerpts not found at {nist}")
    exe = _sdnist_python()
    raw = pd.read_csv(nist / "ma2019.csv", dtype=str, keep_default_na=False)
    if kind == "noisy-subsample":
        syn = noisy_subsample(raw, 0.2, 0.1, seed=3)
    else:
        syn = _release_rows(nist / "ma2019.csv", tmp_path)
    raw[list(syn.columns)].to_csv(tmp_path / "target.csv", index=False)  # the columns the release kept
    syn.to_csv(tmp_path / "synthetic.csv", index=False)
    done = subprocess.run(
        [
            exe,
            str(DRIVER),
            str(tmp_path / "target.csv"),
            str(tmp_path / "synthetic.csv"),
            str(nist / "data_dictionary.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])

    data_dict = json.loads((nist / "data_dictionary.json").read_text())
    cols = theirs["features"]  # SDNist's validation drops a feature with values outside the dictionary
    real = pd.read_csv(tmp_path / "target.csv", na_values=["N"], keep_default_na=False)[cols]
    synth = pd.read_csv(tmp_path / "synthetic.csv", na_values=["N"], keep_default_na=False)[cols]
    edges = {"DENSITY": density_edges(data_dict)}
    grouped = kmarginal(real, synth, group="PUMA", edges=edges)
    plain = kmarginal(real, synth, exclude=["PUMA"], edges=edges)
    print(
        f"{kind}: k-marginal grouped by PUMA: ddssp {grouped['score']:.3f}, SDNist {theirs['score_grouped']:.3f}; "
        f"plain: ddssp {plain['score']:.3f}, SDNist {theirs['score']:.3f}"
    )
    assert grouped["score"] == pytest.approx(theirs["score_grouped"], abs=1.0)
    assert plain["score"] == pytest.approx(theirs["score"], abs=1.0)
    ours = {g["group"]: g["score"] for g in grouped["groups"]}
    assert set(ours) == set(theirs["groups"])
    for puma, score in theirs["groups"].items():
        assert ours[puma] == pytest.approx(score, abs=1.0), puma
