"""`ddssp synth` writes rows in the conventions of the data the release was read from: missing cells
as the marker the input used (``--na-values``), whole-number columns without ``.0``."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.data.columns import Column
from ddssp.data.fileio import whole_number_columns, write_table
from ddssp.data.schema import Schema
from ddssp.releasefile.model import Release


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("conventions")
    rng = np.random.default_rng(11)
    n = 6_000
    k = rng.integers(1, 7, n).astype(object)  # category codes 1..6, "N" = not applicable
    k[rng.random(n) < 0.2] = "N"
    g = rng.choice(["a", "b", "c"], n).astype(object)
    g[rng.random(n) < 0.2] = "N"
    p = d / "t.csv"
    pd.DataFrame({"k": k, "g": g, "h": rng.choice(["x", "y"], n)}).to_csv(p, index=False)
    rel = d / "t.release"
    rc = main(
        ["release", str(p), "--eps", "2", "--na-values", "N", "--rounds", "6", "--quiet", "--insecure-seed", "3"]
        + ["-o", str(rel), "--force"]
    )
    assert rc == 0
    return d, rel


def _synth(d, rel, name, *extra):
    out = d / name
    rc = main(
        ["synth", str(rel), "--rows", "2000", "--seed", "1", "-o", str(out), "--allow-insecure", "--force", *extra]
    )
    assert rc == 0
    stem, dot, ext = name.rpartition(".")
    return d / f"{stem}.NOT-PRIVATE.{ext}"


def _cells(path):
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_missing_cells_come_back_as_the_input_marker(made):
    d, rel = made
    s = _cells(_synth(d, rel, "s.csv"))
    for c in ("k", "g"):
        assert (s[c] == "N").any(), c  # a fifth of the input is "N": the rows draw some
        assert not (s[c] == "").any(), c


def test_whole_number_column_has_no_decimal_point(made):
    d, rel = made
    s = _cells(_synth(d, rel, "w.csv"))
    assert s["k"].map(lambda v: bool(re.fullmatch(r"[1-6]|N", v))).all(), sorted(set(s["k"]))


def test_codes_declared_categorical_come_back_as_written(made):
    # --categorical keeps the codes as labels: "6", never "6.0"
    d, _ = made
    rel = d / "c.release"
    rc = main(
        ["release", str(d / "t.csv"), "--eps", "2", "--na-values", "N", "--rounds", "4", "--quiet"]
        + ["--categorical", "k", "--insecure-seed", "4", "-o", str(rel), "--force"]
    )
    assert rc == 0
    assert Release.load(rel).schema.column("k").kind == "categorical"
    s = _cells(_synth(d, rel, "c.csv"))
    assert s["k"].map(lambda v: bool(re.fullmatch(r"[1-6]|N|<other>", v))).all(), sorted(set(s["k"]))
    assert s["k"].isin([str(i) for i in range(1, 7)]).mean() > 0.5


def test_explicit_empty_na_rep_gives_empty_cells(made):
    d, rel = made
    s = _cells(_synth(d, rel, "e.csv", "--na-rep", ""))
    assert (s["k"] == "").any() and not (s["k"] == "N").any()
    assert (s["g"] == "").any() and not (s["g"] == "N").any()
    assert not s["k"].str.contains(".", regex=False).any()


def test_parquet_keeps_nulls_and_an_integer_type(made):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    d, rel = made
    t = pq.read_table(_synth(d, rel, "p.parquet"))
    k = t.column("k")
    assert pa.types.is_integer(k.type) and k.null_count > 0
    assert set(k.drop_null().to_pylist()) <= set(range(1, 7))
    assert t.column("g").null_count > 0 and "N" not in t.column("g").drop_null().to_pylist()


def test_write_table_integers_only_when_whole(tmp_path):
    df = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [1.5, 2.0, np.nan]})
    write_table(df, tmp_path / "t.csv", na_rep="?", integers=["a", "b"])
    s = _cells(tmp_path / "t.csv")
    assert list(s["a"]) == ["1", "?", "3"]
    assert list(s["b"]) == ["1.5", "2.0", "?"]  # a fraction: the column stays as it is
    with pytest.raises(TypeError):
        write_table(df, tmp_path / "u.csv", na_rep=None)


def test_whole_number_columns_read_from_the_schema():
    schema = Schema(
        [
            Column.levels("k", [1, 2, 3], missing="<missing>"),
            Column.levels("x", [0.5, 1.5]),
            Column.binned("w", [0, 10, 20]),  # representative values 5, 15
            Column.binned("f", [0, 1, 2]),  # representative values 0.5, 1.5
            Column.categorical("g", ["1", "2"]),
        ]
    )
    assert whole_number_columns(schema) == ["k", "w"]


def test_whole_number_draws_inside_bins_are_written_as_integers():
    """A declared binned column whose every bin draws whole numbers (``within`` with ``whole``) is
    written as integers even though its representative values (bin midpoints 22.5) are not; a bin
    that decodes to its representative keeps the rule that the value be whole."""
    from ddssp.data.within import Within

    uniform = ((), (1.0,))
    age = Column.binned("age", [16, 20, 25, 30])  # midpoints 18, 22.5, 27.5
    age.within = Within((uniform, uniform, uniform), whole=True)
    half = Column.binned("half", [0, 10, 25])  # the second bin decodes to 17.5
    half.within = Within((uniform, None), whole=True)
    point = Column.binned("point", [0, 1, 10])  # the first bin decodes to 0.5
    point.within = Within((None, uniform), whole=True)
    frac = Column.binned("frac", [0, 10, 20])
    frac.within = Within((uniform, uniform), whole=False)
    schema = Schema([age, half, point, frac])
    assert whole_number_columns(schema) == ["age"]


def test_mostly_missing_column_is_named_so(tmp_path, capsys):
    rng = np.random.default_rng(2)
    n = 3_000
    rare = np.full(n, "N", dtype=object)
    rare[:40] = rng.integers(0, 1000, 40)  # 40 values spread thin, the rest not applicable
    p = tmp_path / "r.csv"
    pd.DataFrame({"rare": rare, "g": rng.choice(["a", "b"], n)}).to_csv(p, index=False)
    rc = main(
        [
            "release",
            str(p),
            "--eps",
            "1",
            "--na-values",
            "N",
            "--quiet",
            "-o",
            str(tmp_path / "r.release"),
            "--insecure-seed",
            "3",
        ]
    )
    assert rc == 0
    err = capsys.readouterr().err
    # 40 values in 3,000 rows: missing for 98.7% of them, said as a share of the noisy row count (whose
    # noise moves the share by several points at this size, hence a seeded draw and any share above 90%)
    assert re.search(r"'rare': missing \(or not applicable\) for (about 9\d%|over 99%) of the rows \(noisy\)", err)
    assert "the values left do not show above the noise" in err
    assert "no values found" not in err and "too few rows" not in err


def test_standard_output_uses_the_marker_too(made, capsys):
    d, rel = made
    capsys.readouterr()
    assert main(["synth", str(rel), "--rows", "500", "--seed", "2", "-o", "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "k,g,h"
    k = [line.split(",")[0] for line in lines[1:]]
    assert "N" in k and "" not in k and all(re.fullmatch(r"[1-6]|N", v) for v in k)


def test_a_codebook_marker_of_a_numeric_column_comes_back_without_na_values(made, tmp_path):
    # a codebook declares "N" the not-applicable marker of a whole-number count; the release is read
    # without --na-values, so the column's missing level carries the marker and synth writes it back
    d, _ = made
    book = tmp_path / "book.json"
    book.write_text(
        '{"format": "ddssp-codebook/1", "columns": [{"name": "k", "kind": "numeric", "bounds": [1, 6], '
        '"whole": true, "missing": "N"}, {"name": "g", "kind": "categorical", "levels": ["a", "b", "c"], '
        '"missing": "N"}, {"name": "h", "kind": "categorical", "levels": ["x", "y"]}]}'
    )
    rel = tmp_path / "b.release"
    rc = main(
        ["release", str(d / "t.csv"), "--eps", "2", "--codebook", str(book), "--rounds", "4", "--quiet"]
        + ["--insecure-seed", "5", "-o", str(rel), "--force"]
    )
    assert rc == 0
    assert Release.load(rel).reading["na_values"] == []
    s = _cells(_synth(tmp_path, rel, "b.csv"))
    for c in ("k", "g"):
        assert (s[c] == "N").mean() > 0.1, c  # a fifth of the input is "N"
        assert not (s[c] == "").any(), c
    assert s["k"].map(lambda v: bool(re.fullmatch(r"[1-6]|N", v))).all(), sorted(set(s["k"]))
    # an explicit --na-rep still wins
    s = _cells(_synth(tmp_path, rel, "e.csv", "--na-rep", "NA"))
    assert (s["k"] == "NA").any() and not (s["k"] == "N").any()


def test_without_rows_the_release_estimated_row_count_is_drawn(made, capsys):
    """No ``--rows``: as many rows as the model's noisy total (the count `inspect` shows), and a note
    saying where the number came from."""
    d, rel = made
    capsys.readouterr()
    assert main(["synth", str(rel), "--seed", "2", "-o", "-"]) == 0
    captured = capsys.readouterr()
    total = Release.load(rel).total
    assert len(captured.out.splitlines()) - 1 == round(total)
    assert abs(round(total) - 6_000) < 600  # the table held 6,000 rows; the total is noisy
    assert f"drawing {round(total)} rows, the release's estimated row count" in captured.err
