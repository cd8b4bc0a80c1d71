"""Hostile input, third review: list bombs, huge central directories, a clique over the model limit,
long notes, wide declared shapes, formula and terminal injection through labels, nested Parquet
columns, wide tables, and a writer that refuses what the reader would refuse. Files are generated
here at a small scale by :mod:`tests.hostile` (``python -m tests.hostile DIR`` writes full size)."""

from __future__ import annotations

import csv
import json
import os
import stat
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.data.limits import MANIFEST_LIMITS, MAX_MEMBERS, MAX_NOTE_CHARS, RELEASE_LIMITS
from ddssp.errors import DDSSPError, ReleaseFileError
from ddssp.releasefile import Release
from tests import hostile


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return hostile.two_column_base(tmp_path_factory.mktemp("review3") / "base.release")


def _one_line_refusal(path, capsys, match: str, argv=("inspect",)) -> str:
    return hostile.one_line_refusal(path, capsys, match, argv)


# --------------------------------------------------------------------------- JSON structure
def test_list_bomb_text_is_what_the_review_describes():
    text = hostile.list_bomb_text(200_000, depth=999)
    assert text.count(b",") < 200 and text.count(b"[") > 99_000  # almost no commas, 1 list per 2 bytes
    small = hostile.list_bomb_text(2_000, depth=3)
    assert json.loads(small)[0] == [[[]]] and small.count(b",") == len(json.loads(small)) - 1


@pytest.mark.parametrize(
    "member, total, depth, match",
    [
        ("manifest.json", MANIFEST_LIMITS.max_bytes - 4096, 999, "values, more than the cap"),
        ("manifest.json", 120_000, 50, "nested too deep"),
        ("manifest.json", 100 << 20, 999, "-byte cap"),
        ("release.json", 4 << 20, 999, "values, more than the cap"),
        ("release.json", 200_000, 100, "nested too deep"),
    ],
    ids=["manifest-values", "manifest-depth", "manifest-size", "release-values", "release-depth"],
)
def test_list_bomb_refused_before_parsing(base, tmp_path, capsys, monkeypatch, member, total, depth, match):
    p = hostile.list_bomb(base, tmp_path / "bomb.release", member, total, depth)
    parsed = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda data, *a, **k: parsed.append(len(data)) or real(data, *a, **k))
    with pytest.raises(ReleaseFileError, match=match):
        Release.load(p)
    assert all(n < 100_000 for n in parsed), parsed  # the bomb never reached the parser (a small manifest may)
    monkeypatch.setattr(json, "loads", real)
    _one_line_refusal(p, capsys, match)


def test_structure_scan_counts_values_of_every_kind():
    from ddssp.releasefile.reader import check_json_structure

    lim = RELEASE_LIMITS
    small = type(lim)(max_bytes=10_000, max_items=100, max_depth=4, max_string=50)
    check_json_structure(b'{"a": [1, 2, {"b": "[[[[[[ \\u00e9 ,,,,"}]}', small, "x")  # brackets in strings: none
    for text, match in [
        (b"[" + b",".join([b"[]"] * 101) + b"]", "values"),
        (b"[" * 5 + b"]" * 5, "nested too deep"),
        (b'["' + b"x" * 51 + b'"]', "string"),
        (b"]" * 200, "values"),
    ]:
        with pytest.raises(ReleaseFileError, match=match):
            check_json_structure(text, small, "x")


def test_escaped_quotes_still_bound_depth_after_parsing():
    from ddssp.releasefile.reader import loads_bounded

    lim = type(RELEASE_LIMITS)(max_bytes=10_000, max_items=100, max_depth=4, max_string=50)
    assert loads_bounded(b'[["a\\"[[[["]]', "x", lim) == [['a"[[[[']]
    with pytest.raises(ReleaseFileError, match="nested too deep"):
        loads_bounded(b'[[[[["\\""]]]]]', "x", lim)


# --------------------------------------------------------------------------- the archive
@pytest.mark.parametrize("n", [MAX_MEMBERS + 1, 70_000], ids=["over-the-cap", "zip64"])
def test_many_members_refused_from_the_end_record(base, tmp_path, capsys, monkeypatch, n):
    p = hostile.many_members(base, tmp_path / "m.release", n)
    total = n + len(hostile.members(base))

    def no_directory(*a, **k):
        raise AssertionError("zipfile read the central directory")

    monkeypatch.setattr(zipfile, "ZipFile", no_directory)
    with pytest.raises(ReleaseFileError, match="members"):
        Release.load(p)
    line = _one_line_refusal(p, capsys, "without reading the directory")
    assert f"{total:,} members" in line


def test_model_over_the_default_limit_refused_before_decompressing(base, tmp_path, capsys, monkeypatch):
    p = hostile.memory_bomb(base, tmp_path / "clique.release", (3300, 3300))
    with pytest.raises(ReleaseFileError, match="83.1 MB of tables, more than the 80 MB"):
        Release.load(p)
    _one_line_refusal(p, capsys, "more than the 80 MB")
    # a budget raised on purpose accepts it in proportion (the arrays are not read here)
    from ddssp.releasefile.reader import check_model_size

    expected = {"arrays/model/0.npy": ("model/0", (3300, 3300))}
    check_model_size(expected, {"arrays/model/0.npy"}, 2 << 30, p)


@pytest.mark.parametrize(
    "n, match",
    [
        (MAX_NOTE_CHARS + 1, "characters in a ledger note"),
        (9 << 20, "of 9,437,184 bytes, more than the cap of 8,388,608"),
    ],
    ids=["note-cap", "string-cap"],
)
def test_long_ledger_note_refused(base, tmp_path, capsys, n, match):
    p = hostile.long_note(base, tmp_path / "note.release", n)
    with pytest.raises(ReleaseFileError, match=match):
        Release.load(p)
    _one_line_refusal(p, capsys, match)


def test_wide_declared_shapes_refused_before_the_schema_is_built(base, tmp_path, capsys):
    p = hostile.wide_shapes(base, tmp_path / "wide.release", columns=2_000, size=1_000)
    with pytest.raises(ReleaseFileError, match="declared levels"):
        Release.load(p)
    _one_line_refusal(p, capsys, "declared levels")


# --------------------------------------------------------------------------- the writer side
def test_writer_refuses_what_the_reader_would_refuse(base, tmp_path, monkeypatch):
    rel = Release.load(base)
    monkeypatch.setenv("DDSSP_MAX_LOAD_MEMORY", "2K")
    with pytest.raises(DDSSPError, match="was not written.*--max-model-size.*DDSSP_MAX_LOAD_MEMORY"):
        rel.save(tmp_path / "x.release")
    assert not list(tmp_path.iterdir())  # nothing written, not even a temporary file
    monkeypatch.delenv("DDSSP_MAX_LOAD_MEMORY")
    import dataclasses

    rel.ledger.entries[0] = dataclasses.replace(rel.ledger.entries[0], note="n" * (MAX_NOTE_CHARS + 1))
    with pytest.raises(DDSSPError, match="was not written.*ledger note"):
        rel.save(tmp_path / "x.release")
    assert not list(tmp_path.iterdir())


def test_release_refused_before_aim_when_the_file_could_not_hold_it(monkeypatch):
    from ddssp.marginals import aim
    from ddssp.pipeline import ReadOptions, release

    called = []
    monkeypatch.setattr(aim, "run_aim", lambda *a, **k: called.append(1))
    from ddssp.data import Schema

    for d, match in [(2_100, "give --rounds 7,900 or less"), (10_000, "keep fewer columns")]:
        codes = pd.DataFrame(np.zeros((10, d), dtype=int), columns=[f"c{i}" for i in range(d)])
        schema = Schema.from_domain({c: 2 for c in codes.columns}, categorical=list(codes.columns))
        with pytest.raises(DDSSPError, match=match):
            release(codes, schema, eps=1.0, delta=1e-6, insecure_seed=0, read=ReadOptions(encoded=True))
    assert not called


# --------------------------------------------------------------------------- output safety
FORMULAS = ['=HYPERLINK("http://example.com","click")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1", "-2", "\tTAB", "plain"]


@pytest.fixture(scope="module")
def formula_release(tmp_path_factory) -> Path:
    from ddssp.data import Schema
    from ddssp.pipeline import AimOptions, ReadOptions, release

    rng = np.random.default_rng(1)
    n = 3000
    schema = Schema.from_dict(
        {
            "format": "ddssp-schema/1",
            "columns": [
                {"name": "x", "kind": "numeric", "values": [-2.5, 0, 1.5], "bounds": [-2.5, 1.5]},
                {"name": "=cmd()", "kind": "categorical", "levels": FORMULAS},
            ],
        }
    )
    codes = pd.DataFrame({"x": rng.integers(0, 3, n), "=cmd()": rng.integers(0, len(FORMULAS), n)})
    rel = release(
        codes,
        schema,
        eps=4.0,
        delta=1e-6,
        seed=0,
        insecure_seed=0,
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=4),
    )
    return rel.save(tmp_path_factory.mktemp("formula") / "f.release")


def test_synthetic_csv_opens_formula_labels_as_text(formula_release, tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert (
        main(["synth", str(formula_release), "--rows", "400", "--seed", "0", "-o", str(out), "--allow-insecure"]) == 0
    )
    capsys.readouterr()
    with open(tmp_path / "s.NOT-PRIVATE.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["x", "'=cmd()"]
    labels = {r[1] for r in rows[1:]}
    assert labels and all(not v.startswith(("=", "+", "-", "@", "\t", "\r")) for v in labels), labels
    assert labels <= {"'" + v if v != "plain" else v for v in FORMULAS}
    xs = {float(r[0]) for r in rows[1:]}
    assert xs <= {-2.5, 0.0, 1.5} and -2.5 in xs  # the numeric column keeps its negative numbers
    raw = tmp_path / "raw.csv"
    argv = ["synth", str(formula_release), "--rows", "400", "--seed", "0", "-o", str(raw), "--allow-insecure"]
    assert main([*argv, "--raw-cells"]) == 0
    capsys.readouterr()
    back = pd.read_csv(tmp_path / "raw.NOT-PRIVATE.csv", dtype=str, keep_default_na=False)
    assert set(back["=cmd()"]) <= set(FORMULAS) and any(v.startswith("=") for v in back["=cmd()"])


def test_write_table_parquet_and_categorical(tmp_path):
    from ddssp.data.fileio import write_table

    df = pd.DataFrame(
        {"a": pd.Categorical(["=1", "b", "=1"]), "n": [-1, 2, -3], "s": ["@x", None, "-y"], "f": [-0.5, 1.0, 2.0]}
    )
    write_table(df, tmp_path / "t.parquet")
    back = pd.read_parquet(tmp_path / "t.parquet")
    assert list(back["a"].astype(str)) == ["'=1", "b", "'=1"] and list(back["n"]) == [-1, 2, -3]
    assert back["s"].tolist()[0] == "'@x" and back["s"].isna().tolist()[1] and back["s"].tolist()[2] == "'-y"
    assert list(back["f"]) == [-0.5, 1.0, 2.0]
    write_table(df, tmp_path / "r.parquet", raw_cells=True)
    assert pd.read_parquet(tmp_path / "r.parquet")["s"].tolist()[0] == "@x"


def test_terminal_output_escapes_control_characters(tmp_path, capsys):
    label = "\x1b]0;owned\x07\x1b[2J\u202e"
    p = hostile.escape_label_base(tmp_path / "e.release", label)
    assert main(["inspect", str(p)]) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out and "\u202e" not in out
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202e" in out
    assert main(["fit", str(p), "--target", "a", "--model", "linear"]) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\\x1b" in out
    # an error message naming a file with control characters stays on one line, escaped
    _one_line_refusal(tmp_path / "no\x1b[2Jsuch\n.release", capsys, "no\\x1b[2Jsuch\\x0a.release")


# --------------------------------------------------------------------------- input tables
def test_nested_parquet_columns_refused_from_the_schema(tmp_path, capsys, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n = 300
    t = pa.table(
        {
            "a": pa.array([i % 3 for i in range(n)]),
            "b": pa.array([str(i % 4) for i in range(n)]),
            "l": pa.array([[i, i + 1] for i in range(n)]),
            "s": pa.array([{"x": i} for i in range(n)]),
            "m": pa.array([[("k", i)] for i in range(n)], type=pa.map_(pa.string(), pa.int64())),
        }
    )
    p = tmp_path / "nested.parquet"
    pq.write_table(t, p)
    from ddssp.dp.noise import InsecureSeededNoise, SecureNoise

    drawn = []  # every draw of either noise source
    draws = ("gaussian_int", "noisy_max", "gaussian_float", "laplace_float", "bernoulli", "run_opendp")

    def spy_on(real):
        def spy(self, *a, **k):
            drawn.append(1)
            return real(self, *a, **k)

        return spy

    for cls in (SecureNoise, InsecureSeededNoise):
        for draw in draws:
            monkeypatch.setattr(cls, draw, spy_on(getattr(cls, draw)))
    out = tmp_path / "o.release"
    line = _one_line_refusal(
        p, capsys, "--drop l,s,m", argv=("release", "--eps", "1", "--delta", "1e-6", "-o", str(out))
    )
    assert "l (list" in line and "s (struct" in line and "m (map" in line
    assert not drawn and not out.exists()
    argv = [
        "release",
        str(p),
        "--eps",
        "1",
        "--delta",
        "1e-6",
        "-o",
        str(out),
        "--drop",
        "l,s,m",
        "--insecure-seed",
        "0",
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(argv) == 0
    nested = [w for w in caught if "nested Parquet column" in str(w.message)]
    assert not nested, nested  # the user dropped them: nothing to warn of
    capsys.readouterr()
    assert set(Release.load(out).schema.names) == {"a", "b"} and drawn  # the spy sees a release's noise


def test_atomic_write_leaves_the_umask_alone(tmp_path, monkeypatch):
    from ddssp.data.fileio import atomic_write

    old = os.umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", lambda *_: pytest.fail("atomic_write changed the process umask"))
        with atomic_write(tmp_path / "f.txt") as fh:
            fh.write("x")
    finally:
        monkeypatch.undo()
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o640
    assert [q.name for q in tmp_path.iterdir()] == ["f.txt"]


def test_csv_line_longer_than_the_limit_refused_while_reading_it(tmp_path, monkeypatch):
    from ddssp.data import tables
    from ddssp.errors import DataError

    monkeypatch.setattr(tables, "CSV_LINE_LIMIT", 1000)
    p = tmp_path / "long.csv"
    p.write_text("a,b\n1,x\n2," + "z" * 5000 + "\n")
    reads = []
    real = tables._bounded_lines

    def spy(fh, path):
        for line in real(fh, path):
            reads.append(len(line))
            yield line

    monkeypatch.setattr(tables, "_bounded_lines", spy)
    with pytest.raises(DataError, match="line 3 is longer than 1,000 characters"):
        tables.read_table(p)
    assert reads == [4, 4]  # the long line was never handed over whole
    p.write_text("a,b\n1,x\n2," + "z" * 900 + "\n")
    assert len(tables.read_table(p)) == 2


@pytest.mark.slow
def test_a_150_column_table_releases_and_loads(tmp_path):
    from ddssp.data import Schema
    from ddssp.data.limits import MAX_CLIQUES
    from ddssp.pipeline import AimOptions, ReadOptions, release

    d, n = 150, 400
    rng = np.random.default_rng(0)
    codes = pd.DataFrame(rng.integers(0, 2, (n, d)), columns=[f"c{i}" for i in range(d)])
    schema = Schema.from_domain({c: 2 for c in codes.columns}, categorical=list(codes.columns[1:]))
    rel = release(
        codes,
        schema,
        eps=1.0,
        delta=1e-6,
        seed=0,
        insecure_seed=0,
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=d + 10),
    )
    assert d * (d - 1) // 2 > MAX_CLIQUES >= len(rel.workload)
    back = Release.load(rel.save(tmp_path / "w.release"))
    assert back.self_check() is None and len(back.schema.names) == d
    assert main(["fit", str(tmp_path / "w.release"), "--target", "c0", "--model", "linear", "--json"]) == 0
