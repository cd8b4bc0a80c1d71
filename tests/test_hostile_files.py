"""Hostile release files: each is refused in one line, quickly and within the load's memory budget,
or (signatures, zip metadata) says no more than it should. The files are built in a temporary
directory by :mod:`tests.hostile` at a small scale; ``python -m tests.hostile DIR`` writes full size."""

from __future__ import annotations

import json
import os
import threading
import zipfile
from pathlib import Path

import pytest

from ddssp.cli import main
from ddssp.errors import ReleaseFileError
from ddssp.releasefile import NOISY_FIELDS, Release
from ddssp.releasefile.reader import load_memory
from tests import hostile


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return hostile.two_column_base(tmp_path_factory.mktemp("hostile") / "base.release")


def _one_line_refusal(path, capsys, match: str, argv=("verify",)) -> str:
    return hostile.one_line_refusal(path, capsys, match, argv)


def test_base_loads(base):
    rel = Release.load(base)
    assert rel.stamp is not None and rel.self_check() is None


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda b, d: hostile.deep_release_json(b, d), "nested too deep"),
        (lambda b, d: hostile.deep_manifest(b, d), "values, more than the cap"),
        (lambda b, d: hostile.huge_number(b, d, "sigma", "1" + "0" * 400), "401 digits"),
        (lambda b, d: hostile.huge_number(b, d, "rho", "1" + "0" * 400), "401 digits"),
        (lambda b, d: hostile.huge_number(b, d, "eps", "1e400"), "overflows a float"),
        (lambda b, d: hostile.huge_number(b, d, "eps", "-1e400"), "overflows a float"),
        (lambda b, d: hostile.huge_number(b, d, "eps", "NaN"), "not a finite number"),
        (lambda b, d: hostile.huge_number(b, d, "sigma", "Infinity"), "not a finite number"),
        (lambda b, d: hostile.huge_number(b, d, "eps", "7" * 5000), "5,000 digits"),
        (lambda b, d: hostile.many_entries(b, d, 20_001), "ledger entries"),
        (lambda b, d: hostile.many_levels(b, d, 1_000_001), "listed levels"),
        (lambda b, d: hostile.many_discovery_entries(b, d, 1_001), "discovery ledger entries"),
    ],
    ids=[
        "deep-release",
        "deep-manifest",
        "sigma-1e400",
        "rho-1e400",
        "eps-1e400",
        "eps-minus-1e400",
        "nan",
        "inf",
        "5000-digits",
        "entries",
        "levels",
        "discovery-entries",
    ],
)
def test_hostile_json_refused_in_one_line(base, tmp_path, capsys, make, match):
    p = make(base, tmp_path / "h.release")
    with pytest.raises(ReleaseFileError, match=match):
        Release.load(p)
    _one_line_refusal(p, capsys, match)
    _one_line_refusal(p, capsys, match, argv=("inspect",))


def test_comma_count_bounds_the_parser(base, tmp_path, capsys):
    # more values than any release holds are refused before the parser builds them
    p = hostile.many_levels(base, tmp_path / "l.release", 1_600_000)
    _one_line_refusal(p, capsys, "values, more than the cap")


def test_valid_entries_below_the_caps_are_checked_not_refused_by_count(base, tmp_path):
    p = hostile.many_entries(base, tmp_path / "e.release", 200)
    with pytest.raises(ReleaseFileError, match="self-check failed"):
        Release.load(p)


@pytest.mark.parametrize("kind", ["dev-zero", "symlink", "fifo", "directory"])
def test_non_regular_files_refused_without_reading(tmp_path, capsys, kind):
    if kind == "dev-zero":
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        p = Path("/dev/zero")
    elif kind == "symlink":
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        p = hostile.symlink_to_dev_zero(tmp_path / "z.release")
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no named pipes")
        p = hostile.fifo(tmp_path / "p.release")
    else:
        p = tmp_path / "d.release"
        p.mkdir()
    result: list = []

    def load():
        try:
            Release.load(p)
        except ReleaseFileError as exc:
            result.append(str(exc))

    t = threading.Thread(target=load, daemon=True)  # a hang (blocked open of a pipe) must not hang the suite
    t.start()
    t.join(60)
    assert result and ("not a release file" in result[0]), result
    _one_line_refusal(p, capsys, "not a release file", argv=("inspect",))


def test_memory_bomb_refused_before_decompressing(base, tmp_path, capsys, monkeypatch):
    p = hostile.memory_bomb(base, tmp_path / "bomb.release", (512, 1000))
    # the declared bytes fit the byte cap; what the load would allocate does not fit a small budget
    with pytest.raises(ReleaseFileError, match="budget"):
        Release.load(p, max_memory=16 << 20)
    monkeypatch.setenv("DDSSP_MAX_LOAD_MEMORY", "16M")
    _one_line_refusal(p, capsys, "budget")
    monkeypatch.setenv("DDSSP_MAX_LOAD_MEMORY", "lots")
    _one_line_refusal(p, capsys, "not a memory size")
    monkeypatch.delenv("DDSSP_MAX_LOAD_MEMORY")
    rel = Release.load(p)  # within the default budget it loads (a consistent, if useless, release)
    assert rel.domain == {"a": 512, "b": 1000}


def test_load_memory_counts_every_array():
    exp = {"arrays/measurements/0.npy": ("m", (10, 20)), "arrays/model/0.npy": ("t", (10, 20))}
    one = load_memory({k: v for k, v in exp.items() if "measure" in k}, set())
    both = load_memory(exp, {"arrays/model/0.npy"})
    assert one >= 2 * 8 * 200 and both > one + 2 * 8 * 200


# --------------------------------------------------------------------------- signatures
def _keypair(tmp_path: Path, name: str):
    ser = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    ed = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ed25519")
    k = ed.Ed25519PrivateKey.generate()
    priv, pub = tmp_path / f"{name}.pem", tmp_path / f"{name}.pub.pem"
    priv.write_bytes(k.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption()))
    pub.write_bytes(k.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo))
    return priv, pub


def test_copied_signature_is_reported_invalid_not_as_a_fingerprint(base, tmp_path, capsys):
    priv, _ = _keypair(tmp_path, "k")
    signed = tmp_path / "signed.release"
    Release.load(base).save(signed, sign_key=priv)
    good = Release.load(signed)
    assert good.signature_valid is True and good.signed_by.startswith("ed25519:")
    # a forgery (stamp flipped off, manifest rehashed) with the publisher's signature member copied in
    forged = hostile.edit_doc(
        signed, tmp_path / "forged.release", lambda d: d.__setitem__("noise", {"source": "opendp", "secure": True})
    )
    m = hostile.members(forged)
    m["signature.json"] = hostile.members(signed)["signature.json"]
    hostile.write_members(m, forged)
    f = Release.load(forged)
    assert f.signature_valid is False and f.signed_by is None
    assert main(["inspect", str(forged)]) == 0
    out, _ = capsys.readouterr()
    assert "INVALID" in out and good.signed_by not in out
    assert main(["verify", str(forged)]) == 0
    out, _ = capsys.readouterr()
    assert "signature INVALID" in out and good.signed_by not in out
    assert main(["inspect", "--json", str(forged)]) == 0
    s = json.loads(capsys.readouterr()[0])
    assert s["signature_valid"] is False and s["signed_by_unverified"] is None


def test_public_key_checks_the_signature_before_parsing(base, tmp_path, capsys):
    priv, pub = _keypair(tmp_path, "k")
    signed = tmp_path / "signed.release"
    Release.load(base).save(signed, sign_key=priv)
    # release.json replaced by a 200k-deep document: with the key, the signature refuses it first
    deep = hostile.deep_release_json(signed, tmp_path / "deep.release")
    m = hostile.members(deep)
    m["signature.json"] = hostile.members(signed)["signature.json"]
    hostile.write_members(m, deep)
    line = _one_line_refusal(deep, capsys, "signature", argv=("verify", "--public-key", str(pub)))
    assert "nothing else was read" in line and "nested" not in line
    assert main(["verify", str(signed), "--public-key", str(pub)]) == 0
    assert "signature OK" in capsys.readouterr()[0]


# --------------------------------------------------------------------------- zip metadata
def test_two_releases_of_different_tables_differ_only_in_noisy_fields(tmp_path):
    import numpy as np
    import pandas as pd

    from ddssp.data import Schema
    from ddssp.pipeline import AimOptions, ReadOptions, release

    schema = Schema.from_domain({"a": 3, "b": 4}, categorical=["a", "b"])
    paths = []
    for i, n in enumerate((300, 3000)):
        rng = np.random.default_rng(i)
        a = rng.integers(0, 3, n)
        codes = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, n)) % 4})
        rel = release(
            codes,
            schema,
            eps=1.0,
            delta=1e-6,
            seed=0,
            insecure_seed=0,
            read=ReadOptions(encoded=True),
            aim=AimOptions(rounds=4),
        )
        paths.append(rel.save(tmp_path / f"r{i}.release"))
    infos = []
    for p in paths:
        with zipfile.ZipFile(p) as zf:
            infos.append(
                [
                    (
                        i.filename,
                        i.date_time,
                        i.external_attr,
                        i.create_system,
                        i.compress_type,
                        i.extra,
                        i.comment,
                        i.flag_bits,
                    )
                    for i in zf.infolist()
                ]
            )
            assert zf.comment == b""
    assert infos[0] == infos[1]  # names, order, timestamps, attributes: no wall clock, nothing data-dependent
    assert all(x[1] == (1980, 1, 1, 0, 0, 0) for x in infos[0])
    docs = [json.loads(hostile.members(p)["release.json"]) for p in paths]

    def flat(d, prefix=""):
        out = {}
        for k, v in d.items():
            key = f"{prefix}{k}"
            if isinstance(v, dict) and not any(key == f for f in NOISY_FIELDS):
                out.update(flat(v, key + "."))
            else:
                out[key] = v
        return out

    f0, f1 = flat(docs[0]), flat(docs[1])
    assert set(f0) == set(f1)
    differ = {k for k in f0 if f0[k] != f1[k]}
    assert differ and all(any(k == f or k.startswith(f + ".") for f in NOISY_FIELDS) for k in differ), differ


# --------------------------------------------------------------------------- output location
def test_unwritable_output_directory_refused_before_any_work(tmp_path, monkeypatch, capsys):
    from ddssp.data import check_output_path
    from ddssp.errors import OutputExistsError

    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.open

    def denied(path, *a, **k):  # a read-only directory, also for root (who bypasses mode bits)
        if str(path).startswith(str(ro)):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(OutputExistsError, match="cannot write to output directory"):
        check_output_path(ro / "out.release")
    monkeypatch.undo()
    assert check_output_path(tmp_path / "ok.release") == tmp_path / "ok.release"
    assert list(tmp_path.iterdir()) == [ro]  # the probe left nothing behind
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,2\n")
    monkeypatch.setattr(os, "open", denied)
    _one_line_refusal(
        str(data),
        capsys,
        "cannot write to output directory",
        argv=("release", "-o", str(ro / "r.release"), "--eps", "1", "--delta", "1e-6"),
    )


# --------------------------------------------------------------------------- the stamp travels
def test_stamp_travels_to_every_output(base, tmp_path, capsys):
    from ddssp.dp import INSECURE_STAMP

    # JSON outputs carry it
    assert main(["inspect", "--json", str(base)]) == 0
    assert json.loads(capsys.readouterr()[0])["stamp"] == INSECURE_STAMP
    assert main(["fit", str(base), "--target", "a", "--model", "linear", "--json"]) == 0
    assert json.loads(capsys.readouterr()[0])["stamp"] == INSECURE_STAMP
    # CSV outputs are refused without --allow-insecure, before anything is written
    for argv in (
        ["synth", str(base), "--rows", "5", "-o", str(tmp_path / "s.csv")],
        ["fit", str(base), "--target", "a", "--model", "linear", "-o", str(tmp_path / "c.csv")],
    ):
        assert main(argv) == 1
        err = capsys.readouterr()[1].strip().splitlines()
        assert err[-1].startswith("ddssp: error:") and "--allow-insecure" in err[-1], err
        assert not any(tmp_path.glob("*.csv"))
    # and with it, the file name says so
    assert main(["synth", str(base), "--rows", "5", "-o", str(tmp_path / "s.csv"), "--allow-insecure"]) == 0
    assert (
        main(
            ["fit", str(base), "--target", "a", "--model", "linear", "-o", str(tmp_path / "c.csv"), "--allow-insecure"]
        )
        == 0
    )
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["c.NOT-PRIVATE.csv", "s.NOT-PRIVATE.csv"]


def test_secure_release_outputs_carry_no_stamp(tmp_path, capsys):
    p = hostile.two_column_base(tmp_path / "secure.release", insecure_seed=None)
    assert main(["fit", str(p), "--target", "a", "--model", "linear", "--json", "-o", str(tmp_path / "c.csv")]) == 0
    assert json.loads(capsys.readouterr()[0])["stamp"] is None
    assert (tmp_path / "c.csv").exists()


def test_signature_binds_dataset_name_and_date(base, tmp_path, capsys):
    priv, pub = _keypair(tmp_path, "k")
    signed = Release.load(base).save(tmp_path / "s.release", sign_key=priv, dataset_name="adult 2026")
    rel = Release.load(signed)
    assert rel.dataset_name == "adult 2026" and len(rel.created) == 10
    assert main(["verify", str(signed), "--public-key", str(pub)]) == 0
    out = capsys.readouterr()[0]
    assert "'adult 2026'" in out and rel.created in out
    # renaming the data set in the manifest breaks the signature
    m = hostile.members(signed)
    man = json.loads(m["manifest.json"])
    man["dataset_name"] = "other"
    m["manifest.json"] = json.dumps(man).encode()
    forged = hostile.write_members(m, tmp_path / "renamed.release")
    assert Release.load(forged).signature_valid is False
    _one_line_refusal(forged, capsys, "signature", argv=("verify", "--public-key", str(pub)))
    # a manifest date that is not the release's is refused even unsigned
    man["created"] = "1999-01-01"
    m["manifest.json"] = json.dumps(man).encode()
    with pytest.raises(ReleaseFileError, match="creation date"):
        Release.load(hostile.write_members(m, tmp_path / "redated.release"))
    with pytest.raises(Exception, match="dataset-name"):
        Release.load(base).save(tmp_path / "x.release", dataset_name="two\nlines")


# --------------------------------------------------------------------------- hostile input tables
def test_csv_cell_longer_than_the_csv_module_default_is_read(tmp_path):
    from ddssp.data.tables import read_table

    p = tmp_path / "long.csv"
    p.write_text("a,b\n1,x\n2," + "z" * 140_000 + "\n")
    df = read_table(p)
    assert len(df) == 2 and len(df["b"].iloc[1]) == 140_000


def test_duplicate_parquet_columns_refused_in_one_line(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    p = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1, 2] * 50), pa.array([3, 4] * 50)], names=["a", "a"]), p)
    assert (
        main(
            [
                "release",
                str(p),
                "--eps",
                "1",
                "--delta",
                "1e-6",
                "--backend",
                "numpy",
                "-o",
                str(tmp_path / "o.release"),
            ]
        )
        == 1
    )
    err = capsys.readouterr()[1].strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ddssp: error:"), err
    assert not (tmp_path / "o.release").exists()


@pytest.mark.parametrize("kind", [0, None, ["measure"], {"k": 1}])
def test_a_ledger_entry_kind_that_is_not_text_is_refused_in_one_line(base, tmp_path, capsys, kind):
    def edit(doc):
        doc["ledger"]["entries"][0]["kind"] = kind

    path = hostile.edit_doc(base, tmp_path / "kind.release", edit)
    with pytest.raises(ReleaseFileError, match="kind must be a string"):
        Release.load(path)
    _one_line_refusal(path, capsys, "kind must be a string", argv=("inspect",))
