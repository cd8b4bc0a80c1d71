"""The release file and the release / inspect / synth commands."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.data import Schema
from ddssp.errors import DDSSPError, PrivacyParameterError, ReleaseFileError, SchemaError
from ddssp.marginals.aim_settings import DEFAULT_TARGET_SHARE
from ddssp.marginals.aim_target import MAX_TARGET_SHARE
from ddssp.pipeline import AimOptions, DiscoveryOptions, ReadOptions, release
from ddssp.releasefile import FORMAT_VERSION, Release

DOMAIN = {"a": 3, "b": 4, "x": 5, "y": 2}


def make_codes(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    x = np.clip(a + rng.integers(0, 3, n), 0, 4)
    y = (rng.random(n) < 0.2 + 0.15 * a).astype(int)
    return pd.DataFrame({"a": a, "b": b, "x": x, "y": y})


@pytest.fixture(scope="module")
def codes() -> pd.DataFrame:
    return make_codes()


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema.from_domain(DOMAIN, categorical=["a", "b", "y"])


@pytest.fixture(scope="module")
def rel(codes, schema) -> Release:
    return release(
        codes,
        schema,
        eps=2.0,
        delta=1e-6,
        seed=11,
        target="y",
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=8),
    )


@pytest.fixture(scope="module")
def saved(rel, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rel") / "tiny.release"
    rel.save(path)
    return path


def test_release_spends_budget_exactly(rel):
    assert rel.rho_spent <= rel.rho_budget * (1 + 1e-12)
    assert rel.rho_spent == pytest.approx(rel.rho_budget, rel=1e-9)
    assert rel.eps_spent <= rel.eps
    kinds = {e.kind for e in rel.ledger.entries}
    assert "measure" in kinds
    # every measurement is in the ledger with its sigma
    measured = [(e.clique, e.sigma) for e in rel.ledger.entries if e.kind == "measure"]
    assert sorted(measured) == sorted((tuple(m.clique), m.sigma) for m in rel.measurements)


def test_round_trip_in_fresh_process(rel, saved):
    again = Release.load(saved)
    assert again.eps == rel.eps and again.delta == rel.delta and again.target == "y"
    assert again.ledger.entries == rel.ledger.entries
    for cols in [("a",), ("a", "b"), ("x", "y"), ("b", "x", "y")]:
        assert np.allclose(again.marginal(cols), rel.marginal(cols))
    code = (
        "import sys, numpy as np; from ddssp.releasefile import Release;"
        f"r = Release.load({str(saved)!r});"
        "m = r.marginal(('a','y')); s = r.synthesize(50, seed=1);"
        "print(m.shape, len(s), sorted(s.columns) == sorted(r.schema.names), 'jax' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["(3,", "2)", "50", "True", "False"]  # answered without the data and without JAX


def test_marginals_are_consistent_and_noisy(rel, codes):
    total = rel.total
    ab = rel.marginal(("a", "b"))
    assert ab.shape == (3, 4)
    assert np.allclose(ab.sum(axis=1), rel.marginal("a"), rtol=1e-6, atol=1e-6)
    assert ab.sum() == pytest.approx(total, rel=1e-6)
    # no exact counts are released: measurements are noisy, the total is an estimate. A single
    # cell's discrete-Gaussian noise is 0 with probability ~1/(2.5 sigma), so a marginal of two
    # cells can come out exact by chance (about 1% of runs); over all the measured cells, a share
    # of exact ones near 1 would mean no noise was added.
    noisy, exact = [], []
    for m in rel.measurements:
        counts = codes.groupby(list(m.clique)).size()
        noisy.append(np.asarray(m.values, dtype=float).ravel()[: len(counts)])
        exact.append(counts.to_numpy(dtype=float))
    noisy, exact = np.concatenate(noisy), np.concatenate(exact)
    assert noisy.size > 20
    assert np.mean(np.isclose(noisy, exact)) < 0.5
    assert total != len(codes)


def test_synthesize(rel, schema):
    df = rel.synthesize(400, seed=3)
    assert len(df) == 400 and list(df.columns) == schema.names
    assert rel.synthesize(400, seed=3).equals(df)
    assert not rel.synthesize(400, seed=4).equals(df)
    for bad in [0, -5, 2.5, "10"]:
        with pytest.raises(DDSSPError):
            rel.synthesize(bad)


def test_marginal_unknown_column(rel):
    with pytest.raises(SchemaError):
        rel.marginal(("a", "nope"))


def test_same_seed_same_release_only_with_insecure_seed(codes, schema, rel):
    kw = dict(eps=2.0, delta=1e-6, seed=11, target="y", read=ReadOptions(encoded=True), aim=AimOptions(rounds=8))
    a, b = (release(codes, schema, insecure_seed=4, **kw) for _ in range(2))
    assert [m.clique for m in a.measurements] == [m.clique for m in b.measurements]
    assert all(np.array_equal(m1.values, m2.values) for m1, m2 in zip(a.measurements, b.measurements))
    # --seed alone never reaches the noise
    again = release(codes, schema, **kw)
    assert not np.array_equal(again.measurements[0].values, rel.measurements[0].values)


@pytest.mark.parametrize("eps,delta", [(0, 1e-6), (-1, 1e-6), (1, 0), (1, 1), (1, 1.5)])
def test_bad_privacy_parameters(codes, schema, eps, delta):
    with pytest.raises(PrivacyParameterError):
        release(codes, schema, eps=eps, delta=delta, seed=0, read=ReadOptions(encoded=True), aim=AimOptions(rounds=2))


def test_target_pairs_measured_first(rel, codes):
    """release(target="y"): round 0 holds y's one-way marginal and its pair with every other column,
    charged before any selection; the file says which share of AIM's budget they had."""
    wanted = [("y",)] + [(c, "y") for c in DOMAIN if c != "y"]
    assert [m.clique for m in rel.measurements if m.round == 0] == wanted
    assert [e.kind for e in rel.ledger.entries[: len(wanted)]] == ["measure"] * len(wanted)
    assert DEFAULT_TARGET_SHARE <= rel.info["settings"]["target_share"] <= MAX_TARGET_SHARE
    aim_rho = rel.ledger.rho_budget  # a declared schema: AIM has the whole budget
    first = sum(e.rho for e in rel.ledger.entries[: len(wanted)])
    assert first == pytest.approx(rel.info["settings"]["target_share"] * aim_rho, rel=1e-9)
    # a large budget: the pairs' noisy counts are the data's
    big = release(
        codes,
        rel.schema,
        eps=1e6,
        delta=1e-6,
        target="y",
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=8, target_share=0.5),
        insecure_seed=2,
    )
    for m in big.measurements[: len(wanted)]:
        truth = codes.groupby(list(m.clique)).size()
        shape = tuple(DOMAIN[c] for c in m.clique)
        full = np.zeros(shape)
        for key, n in truth.items():
            full[key] = n
        assert np.abs(m.values - full).max() <= 1


def test_no_target_measures_every_one_way_in_round_0(codes, schema):
    plain = release(
        codes, schema, eps=2.0, delta=1e-6, read=ReadOptions(encoded=True), aim=AimOptions(rounds=8), insecure_seed=1
    )
    assert [m.clique for m in plain.measurements if m.round == 0] == [(c,) for c in DOMAIN]
    assert "target_share" not in plain.info["settings"]


def test_unknown_target(codes, schema):
    with pytest.raises(SchemaError):
        release(codes, schema, eps=1, delta=1e-6, target="nope", read=ReadOptions(encoded=True))


# ------------------------------------------------------------------ corrupt files
def _rewrite(src: Path, dst: Path, edit) -> None:
    """Copy a release archive, letting ``edit(members)`` change members; manifest rehashed unless edit says."""
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    edit(members)
    with zipfile.ZipFile(dst, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)


def _manifest(members):
    return json.loads(members["manifest.json"])


def test_truncated_file_refused(saved, tmp_path):
    data = saved.read_bytes()
    for cut in [10, len(data) // 2, len(data) - 30]:
        bad = tmp_path / f"cut{cut}.release"
        bad.write_bytes(data[:cut])
        with pytest.raises(ReleaseFileError):
            Release.load(bad)


def test_not_a_release_refused(tmp_path):
    p = tmp_path / "x.release"
    p.write_text("age,sex\n1,2\n")
    with pytest.raises(ReleaseFileError, match="not a ddssp release"):
        Release.load(p)
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("hello.txt", "hi")
    with pytest.raises(ReleaseFileError, match="not a ddssp release"):
        Release.load(tmp_path / "other.zip")
    with pytest.raises(ReleaseFileError, match="not found"):
        Release.load(tmp_path / "missing.release")


def test_tampered_content_refused(saved, tmp_path):
    def edit(m):
        doc = json.loads(m["release.json"])
        doc["eps"] = 100.0
        m["release.json"] = json.dumps(doc).encode()

    bad = tmp_path / "tampered.release"
    _rewrite(saved, bad, edit)
    with pytest.raises(ReleaseFileError, match="checksum|manifest"):
        Release.load(bad)


def test_tampered_with_rehashed_manifest_still_checked(saved, tmp_path):
    # someone edits eps and recomputes checksums: the ledger no longer matches eps
    def edit(m):
        doc = json.loads(m["release.json"])
        doc["eps"] = 100.0
        m["release.json"] = json.dumps(doc).encode()
        man = _manifest(m)
        man["files"]["release.json"] = {
            "sha256": hashlib.sha256(m["release.json"]).hexdigest(),
            "size": len(m["release.json"]),
        }
        m["manifest.json"] = json.dumps(man).encode()

    bad = tmp_path / "rehashed.release"
    _rewrite(saved, bad, edit)
    with pytest.raises(ReleaseFileError, match="self-check.*eps=100"):
        Release.load(bad)


def test_wrong_version_refused(saved, tmp_path):
    def edit(m):
        man = _manifest(m)
        man["format_version"] = FORMAT_VERSION + 1
        m["manifest.json"] = json.dumps(man).encode()

    bad = tmp_path / "v2.release"
    _rewrite(saved, bad, edit)
    with pytest.raises(ReleaseFileError, match="version"):
        Release.load(bad)


def test_pickle_bearing_file_refused(saved, tmp_path):
    class Boom:
        def __reduce__(self):
            return (print, ("pickle executed",))

    def add_pickled_array(m):
        # replace the first measurement array by an object array (which .npy stores as a pickle)
        doc = json.loads(m["release.json"])
        name = f"arrays/{doc['measurements'][0]['array']}.npy"
        buf = io.BytesIO()
        np.save(buf, np.array([Boom()], dtype=object), allow_pickle=True)
        m[name] = buf.getvalue()
        man = _manifest(m)
        man["files"][name] = {"sha256": hashlib.sha256(m[name]).hexdigest(), "size": len(m[name])}
        m["manifest.json"] = json.dumps(man).encode()

    bad = tmp_path / "pickle.release"
    _rewrite(saved, bad, add_pickled_array)
    with pytest.raises(ReleaseFileError, match="pickle|needs"):
        Release.load(bad)

    def add_member(m):
        m["model.pkl"] = pickle.dumps({"x": 1})

    bad2 = tmp_path / "extra.release"
    _rewrite(saved, bad2, add_member)
    with pytest.raises(ReleaseFileError, match="unexpected"):
        Release.load(bad2)


# ------------------------------------------------------------------ CLI
def run_cli(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err):
    assert code != 0
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert lines and lines[-1].startswith("ddssp: error:"), err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def codes_csv(codes, tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("cli")
    data = d / "tiny.csv"
    codes.to_csv(data, index=False)
    dom = d / "tiny-domain.json"
    dom.write_text(json.dumps(DOMAIN))
    return data, dom


def test_cli_release_inspect_synth(codes_csv, tmp_path, capsys):
    data, dom = codes_csv
    out = tmp_path / "t.release"
    code, so, se = run_cli(
        [
            "release",
            data,
            "--domain",
            dom,
            "--categorical",
            "a,b,y",
            "--eps",
            "1",
            "--rounds",
            "6",
            "--seed",
            "1",
            "-o",
            out,
        ],
        capsys,
    )
    assert code == 0, se
    assert "delta = 1e-09" in se and "Wrote" in so
    # stderr is not a terminal here (captured): no progress bar, no carriage-return lines in a log
    assert "AIM:" not in se and "\r" not in se
    code, so, _ = run_cli(["inspect", out, "--json"], capsys)
    assert code == 0
    info = json.loads(so)
    assert {"eps", "delta", "rho_budget", "rho_spent", "cliques"} <= set(info)
    assert info["rho_spent"] <= info["rho_budget"] * (1 + 1e-12) and info["delta"] == 1e-9
    code, so, _ = run_cli(["inspect", out], capsys)
    assert code == 0 and "rho budget" in so
    syn = tmp_path / "s.csv"
    code, so, _ = run_cli(["synth", out, "--rows", "123", "-o", syn, "--seed", "2"], capsys)
    assert code == 0
    df = pd.read_csv(syn, dtype=str)
    assert len(df) == 123 and list(df.columns) == list(DOMAIN)
    for c, m in DOMAIN.items():
        assert set(df[c]) <= {str(i) for i in range(m)}
    # refuses to overwrite without --force, and leaves the file alone
    before = syn.read_bytes()
    code, _, se = run_cli(["synth", out, "--rows", "5", "-o", syn], capsys)
    assert_one_line_error(code, se)
    assert syn.read_bytes() == before
    # "-o -": the rows on standard output, the same rows as the file for the same seed, no file "-"
    code, so, _ = run_cli(["synth", out, "--rows", "123", "-o", "-", "--seed", "2"], capsys)
    assert code == 0 and so == syn.read_text()
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize(
    "extra",
    [
        ["--eps", "0"],
        ["--eps", "-1"],
        ["--eps", "1", "--delta", "1"],
        ["--eps", "1", "--delta", "0"],
        ["--eps", "1", "--target", "nope"],
        ["--eps", "1", "--workload", "target"],
    ],
)
def test_cli_release_bad_input(codes_csv, tmp_path, capsys, extra):
    data, dom = codes_csv
    out = tmp_path / "bad.release"
    code, _, se = run_cli(["release", data, "--domain", dom, "-o", out, "--rounds", "2", *extra], capsys)
    assert_one_line_error(code, se)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_cli_release_refuses_to_overwrite_input(codes_csv, tmp_path, capsys):
    data, dom = codes_csv
    before = data.read_bytes()
    code, _, se = run_cli(["release", data, "--domain", dom, "--eps", "1", "-o", data, "--force"], capsys)
    assert_one_line_error(code, se)
    assert data.read_bytes() == before


def test_cli_synth_and_inspect_bad_input(saved, tmp_path, capsys):
    for rows in ["0", "-3"]:
        code, _, se = run_cli(["synth", saved, "--rows", rows, "-o", tmp_path / "s.csv"], capsys)
        assert_one_line_error(code, se)
    junk = tmp_path / "junk.release"
    junk.write_bytes(b"\x00garbage" * 10)
    for cmd in (["inspect", junk], ["synth", junk, "--rows", "3", "-o", tmp_path / "s.csv"]):
        code, _, se = run_cli(cmd, capsys)
        assert_one_line_error(code, se)
    assert not (tmp_path / "s.csv").exists()


def test_package_level_api_is_the_function():
    import ddssp
    import ddssp.pipeline.run as _  # noqa: F401  importing the submodules must not shadow the function
    import ddssp.releasefile.model as _m  # noqa: F401

    assert callable(ddssp.release) and ddssp.release.__name__ == "release"
    assert ddssp.Release is Release
    # no module may be named like the function: ``ddssp.release`` is one thing
    assert not (Path(ddssp.__file__).parent / "release.py").exists()
    assert not (Path(ddssp.__file__).parent / "release").exists()


@pytest.fixture
def census_schema(repo_root) -> Path:
    return repo_root / "examples" / "census.schema.json"


def _census_like(tmp_path, repo_root, edit) -> Path:
    df = pd.read_csv(repo_root / "examples" / "census.csv", dtype=str, nrows=200)
    p = tmp_path / "data.csv"
    edit(df).to_csv(p, index=False)
    return p


@pytest.mark.parametrize(
    "case",
    ["missing-file", "not-csv", "empty", "missing-column", "unknown-label", "non-numeric", "bad-schema-json"],
)
def test_cli_release_bad_tables(case, tmp_path, repo_root, census_schema, capsys):
    schema = census_schema
    if case == "missing-file":
        data = tmp_path / "nope.csv"
    elif case == "not-csv":
        data = tmp_path / "data.csv"
        data.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    elif case == "empty":
        data = tmp_path / "data.csv"
        data.write_text("")
    elif case == "missing-column":
        data = _census_like(tmp_path, repo_root, lambda d: d.drop(columns=["sex"]))
    elif case == "unknown-label":
        data = _census_like(tmp_path, repo_root, lambda d: d.assign(sex=["Robot"] * len(d)))
    elif case == "non-numeric":
        data = _census_like(tmp_path, repo_root, lambda d: d.assign(age=["old"] * len(d)))
    else:
        data = _census_like(tmp_path, repo_root, lambda d: d)
        schema = tmp_path / "bad.schema.json"
        schema.write_text('{"format": "ddssp-schema/1", "columns": [')
    out = tmp_path / "out.release"
    code, _, se = run_cli(["release", data, "--schema", schema, "--eps", "1", "-o", out], capsys)
    assert_one_line_error(code, se)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.release")]  # no temp left


def test_cli_release_extra_column_is_discovered(tmp_path, repo_root, census_schema, capsys):
    """A column the schema does not declare is discovered under DP inside the budget (a
    partial schema is honoured), not an error; with ``discover=False`` the Python API still refuses it."""
    from ddssp.data import load_schema

    data = _census_like(tmp_path, repo_root, lambda d: d.assign(extra=["u", "v"] * (len(d) // 2)))
    out = tmp_path / "out.release"
    code, _, se = run_cli(["release", data, "--schema", census_schema, "--eps", "8", "-o", out, "--quiet"], capsys)
    assert code == 0, se
    rel = Release.load(out)
    assert {e.clique[0] for e in rel.ledger.discovery_entries} == {"extra"}
    with pytest.raises(SchemaError, match="not in the schema"):
        release(
            pd.read_csv(data, dtype=str), load_schema(census_schema), eps=1.0, discovery=DiscoveryOptions(enabled=False)
        )


def test_release_census_decodes_to_schema_labels(repo_root, census_schema, tmp_path):
    from ddssp.data import load_schema
    from ddssp.data.tables import read_table

    schema = load_schema(census_schema)
    df = read_table(repo_root / "examples" / "census.csv").iloc[:4000]
    rel = release(df, schema, eps=1.0, delta=1e-9, seed=0, aim=AimOptions(rounds=24))
    syn = rel.synthesize(500, seed=0)
    assert list(syn.columns) == schema.names and len(syn) == 500
    for col in schema.columns:
        if col.kind == "categorical":
            assert set(syn[col.name]) <= set(col.labels)
        elif col.within is not None:  # whole numbers drawn inside the declared bins (age, hours)
            v = syn[col.name].astype(float)
            assert v.between(*col.bounds).all() and (v % 1 == 0).all()
        else:
            assert set(syn[col.name].astype(float)) <= set(col.values.astype(float))
    assert schema.encode(syn).shape == (500, len(schema.names))  # synthetic rows re-encode exactly


ADULT_CATEGORICAL = "workclass,education,marital-status,occupation,relationship,race,sex,native-country,income>50K"


@pytest.mark.slow
def test_adult_end_to_end_cli(shared_data, tmp_path, capsys):
    out = tmp_path / "adult.release"
    code, so, se = run_cli(
        [
            "release",
            shared_data / "adult.csv",
            "--domain",
            shared_data / "adult-domain.json",
            "--categorical",
            ADULT_CATEGORICAL,
            "--eps",
            "1",
            "--seed",
            "0",
            "--quiet",
            "-o",
            out,
        ],
        capsys,
    )
    assert code == 0, se
    code, so, _ = run_cli(["inspect", out, "--json"], capsys)
    info = json.loads(so)
    assert info["rho_spent"] <= info["rho_budget"] * (1 + 1e-12)
    assert info["rho_spent"] == pytest.approx(info["rho_budget"], rel=1e-9)
    domain = json.loads((shared_data / "adult-domain.json").read_text())
    assert {c: v["size"] for c, v in info["columns"].items()} == domain
    syn = tmp_path / "syn.csv"
    code, _, _ = run_cli(["synth", out, "--rows", "2000", "-o", syn, "--seed", "1"], capsys)
    assert code == 0
    df = pd.read_csv(syn)
    assert len(df) == 2000 and list(df.columns) == list(Release.load(out).schema.names)
    for c, m in domain.items():
        assert df[c].between(0, m - 1).all()
