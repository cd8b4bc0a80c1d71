"""The reading options of a release (--na-values, delimiter, encoding) are public settings stored in
the file and reused by `ddssp evaluate` (which also accepts them)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.releasefile import Release

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("reading")
    rng = np.random.default_rng(5)
    n = 6_000
    g = rng.choice(["a", "b", "c"], n).astype(object)
    g[rng.random(n) < 0.25] = "?"  # a quarter of the cells: the missing marker
    k = rng.integers(0, 5, n).astype(object)
    k[rng.random(n) < 0.1] = "?"
    p = d / "t.tsv"
    pd.DataFrame({"g": g, "k": k, "h": rng.choice(["x", "y"], n)}).to_csv(p, index=False, sep=";")
    out = d / "t.release"
    rc = main(
        [
            "release",
            str(p),
            "--eps",
            "2",
            "--na-values",
            "?",
            "--delimiter",
            ";",
            "--rounds",
            "8",
            "--quiet",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    return d, p, out


def _eval(capsys, d, p, rel, *extra):
    out = d / f"r{len(extra)}{abs(hash(extra))}.html"
    rc = main(["evaluate", str(rel), str(p), "-o", str(out), "--json", "--force", *extra])
    assert rc == 0
    return json.loads(capsys.readouterr().out)


def test_reading_options_stored_as_public_settings(made):
    _, _, out = made
    rel = Release.load(out)
    assert rel.reading == {"na_values": ["?"], "delimiter": ";", "encoding": "utf-8"}
    assert "?" not in rel.schema.column("g").labels  # '?' was read as missing, not as a label


def test_evaluate_reuses_the_release_na_values(made, capsys):
    d, p, out = made
    default = _eval(capsys, d, p, out)
    explicit = _eval(capsys, d, p, out, "--na-values", "?", "--delimiter", ";")
    assert default["two_way_mean_tv"] == explicit["two_way_mean_tv"]
    assert default["one_way"]["g"]["data"] == explicit["one_way"]["g"]["data"]
    # reading '?' as a label instead (an explicit empty list) changes what evaluate compares
    as_label = _eval(capsys, d, p, out, "--na-values=", "--delimiter", ";")
    assert as_label["one_way"]["g"]["data"] != default["one_way"]["g"]["data"]


def test_malformed_reading_options_refused():
    from ddssp.releasefile.format import check_reading

    for bad in ({"na_values": "?"}, {"delimiter": ";;"}, {"encoding": ""}, {"other": 1}, ["?"]):
        with pytest.raises(ValueError):
            check_reading(bad)
    assert check_reading({"na_values": ["?"]}) == {"na_values": ["?"], "delimiter": ",", "encoding": "utf-8"}
