"""Attacks on a published release: seed reversal, unpaid data-dependent fields, forged / truncated /
re-scaled ledgers, zip bombs. Each must fail (or be refused with one line) unless the release was made
with the loudly named insecure option, which is stamped."""

from __future__ import annotations

import hashlib
import json
import math
import struct
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp.cli import main
from ddssp.data import Schema
from ddssp.dp import INSECURE_STAMP, InsecureSeededNoise, rho_from_eps_delta
from ddssp.errors import ReleaseFileError
from ddssp.pipeline import AimOptions, ReadOptions, release
from ddssp.releasefile import NOISY_FIELDS, PUBLIC_FIELDS, Release
from tests.test_release import DOMAIN, make_codes


def exact(codes: pd.DataFrame, clique) -> np.ndarray:
    shape = [DOMAIN[c] for c in clique]
    idx = np.ravel_multi_index([codes[c].to_numpy() for c in clique], shape)
    return np.bincount(idx, minlength=math.prod(shape)).reshape(shape)


@pytest.fixture(scope="module")
def codes() -> pd.DataFrame:
    return make_codes(2000, 0)


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema.from_domain(DOMAIN, categorical=["a", "b", "y"])


KW = dict(eps=1.0, delta=1e-6, target="y", read=ReadOptions(encoded=True), aim=AimOptions(rounds=8))


@pytest.fixture(scope="module")
def secure_rel(codes, schema) -> Release:
    return release(codes, schema, seed=0, **KW)


@pytest.fixture(scope="module")
def insecure_rel(codes, schema) -> Release:
    return release(codes, schema, seed=0, insecure_seed=0, **KW)


@pytest.fixture(scope="module")
def saved(secure_rel, tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("integrity") / "r.release"
    secure_rel.save(p)
    return p


# --------------------------------------------------------------------------- seed reversal
def _replay_numpy_attack(rel: Release, seed: int) -> list[np.ndarray]:
    """The attack on a seeded noise source: re-create default_rng(seed), replay one uniform per
    selection and rng.normal(0, sigma, shape) per measurement in the ledger's order, subtract."""
    rng = np.random.default_rng(seed)
    out, k = [], 0
    for e in rel.ledger.entries:
        if e.kind == "select":
            rng.random()
        else:
            m = rel.measurements[k]
            k += 1
            out.append(np.round(m.values - rng.normal(0.0, m.sigma, m.values.shape)))
    return out


def _replay_insecure_source(rel: Release, seed: int) -> list[np.ndarray]:
    """The same attack against the (documented) insecure seeded source: replay its draws exactly."""
    noise = InsecureSeededNoise(seed)
    out, k = [], 0
    for e in rel.ledger.entries:
        if e.kind == "select":
            noise.noisy_max(np.zeros(e.params["candidates"]), e.params["scale"])
        else:
            m = rel.measurements[k]
            k += 1
            out.append(m.values - noise.gaussian_int(np.zeros(m.values.shape, dtype=np.int64), m.sigma))
    return out


def _recovered(rel: Release, codes, guesses) -> list[bool]:
    return [bool(np.array_equal(g, exact(codes, m.clique))) for g, m in zip(guesses, rel.measurements)]


def test_seed_reversal_fails_on_a_default_release(secure_rel, codes):
    assert secure_rel.stamp is None and secure_rel.noise["secure"] is True
    # every marginal here has >= 2 cells; sigma > 7 here (the target's pairs, measured first, share
    # 0.35 of the budget), so P(a cell's noise is 0) <= 1/(7 sqrt(2 pi)) ~ 0.057
    assert min(m.sigma for m in secure_rel.measurements) > 7
    for attack in (_replay_numpy_attack, _replay_insecure_source):
        for seed in (0, 1, 2):  # the --seed used (0) and others
            hit = _recovered(secure_rel, codes, attack(secure_rel, seed))
            # a whole marginal comes back only by chance (P <= 0.057^2 each); allow at most one of ~20
            assert sum(hit) <= 1, (attack.__name__, seed, hit)


def test_seed_reversal_succeeds_only_with_the_insecure_option_which_is_stamped(insecure_rel, codes, tmp_path):
    hit = _recovered(insecure_rel, codes, _replay_insecure_source(insecure_rel, 0))
    assert all(hit) and len(hit) == len(insecure_rel.measurements)
    assert insecure_rel.stamp == INSECURE_STAMP
    p = tmp_path / "insecure.release"
    insecure_rel.save(p)
    again = Release.load(p)
    assert again.stamp == INSECURE_STAMP and again.noise == {**insecure_rel.noise}


def test_insecure_seed_reproduces_noise_and_seed_does_not(codes, schema, insecure_rel, secure_rel):
    again = release(codes, schema, seed=5, insecure_seed=0, **KW)
    assert all(np.array_equal(m1.values, m2.values) for m1, m2 in zip(again.measurements, insecure_rel.measurements))
    other = release(codes, schema, seed=0, **KW)  # same --seed as secure_rel, fresh secure noise
    assert not np.array_equal(other.measurements[0].values, secure_rel.measurements[0].values)


def test_stamp_printed_by_every_command(insecure_rel, tmp_path, capsys):
    p = tmp_path / "insecure.release"
    insecure_rel.save(p)
    for argv in (
        ["inspect", p],
        ["inspect", p, "--json"],
        ["fit", p, "--target", "y", "--model", "logistic"],
        ["synth", p, "--rows", "5", "-o", tmp_path / "s.csv", "--force", "--allow-insecure"],
    ):
        assert main([str(a) for a in argv]) == 0
        _, err = capsys.readouterr()
        assert f"ddssp: WARNING: {p}: {INSECURE_STAMP}" in err, argv


def test_no_stamp_on_a_secure_release(saved, capsys):
    assert main(["inspect", str(saved)]) == 0
    out, err = capsys.readouterr()
    assert "NOT PRIVATE" not in out + err and "OpenDP" in out


def test_cli_insecure_seed_stamps_and_reproduces(tmp_path, codes, capsys):
    data = tmp_path / "t.csv"
    codes.to_csv(data, index=False)
    dom = tmp_path / "d.json"
    dom.write_text(json.dumps(DOMAIN))
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.release"
        argv = [
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
            "--insecure-seed",
            "3",
            "-o",
            out,
            "--quiet",
        ]
        assert main([str(a) for a in argv]) == 0
        _, err = capsys.readouterr()
        assert INSECURE_STAMP in err
        outs.append(Release.load(out))
    assert all(np.array_equal(a.values, b.values) for a, b in zip(outs[0].measurements, outs[1].measurements))


# --------------------------------------------------------------------------- nothing unpaid in the file
def _flatten(d, prefix=""):
    """Dotted paths down to the noisy fields, and into a public field that holds a noisy one."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        holds_noisy = any(f.startswith(key + ".") for f in NOISY_FIELDS)
        if (
            isinstance(v, dict)
            and not any(key == f or key.startswith(f + ".") for f in NOISY_FIELDS)
            and (key not in PUBLIC_FIELDS or holds_noisy)
        ):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def test_release_json_holds_only_public_inputs_and_noisy_outputs(schema):
    small = make_codes(300, 1)
    big = make_codes(30_000, 2)
    big["y"] = 1 - big["y"]  # different content too
    docs = [release(t, schema, seed=0, **KW).to_document()[0] for t in (small, big)]
    f0, f1 = _flatten(docs[0]), _flatten(docs[1])
    assert set(f0) == set(f1)
    for key in f0:
        declared_noisy = any(key == f or key.startswith(f + ".") for f in NOISY_FIELDS)
        public = key in PUBLIC_FIELDS or any(key.startswith(p + ".") for p in PUBLIC_FIELDS)
        assert declared_noisy or public, f"release.json field {key!r} is neither public nor a documented noisy output"
        if not declared_noisy:
            assert f0[key] == f1[key], f"public field {key!r} differs between two tables: {f0[key]!r} vs {f1[key]!r}"
    # no timings / row counts / iteration counts anywhere in the file
    text = json.dumps(docs[0])
    for word in ("timings", "iterations", "answers", "rows"):
        assert word not in text
    assert len(docs[0]["created"]) == 10  # a date, no time of day


# --------------------------------------------------------------------------- forged files
def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _write(members: dict[str, bytes], dst: Path) -> Path:
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    return dst


def _forge(saved: Path, dst: Path, edit_doc) -> Path:
    """Edit release.json and rehash the manifest, as a forger would."""
    m = _members(saved)
    doc = json.loads(m["release.json"])
    edit_doc(doc)
    m["release.json"] = json.dumps(doc).encode()
    man = json.loads(m["manifest.json"])
    man["files"]["release.json"] = {
        "sha256": hashlib.sha256(m["release.json"]).hexdigest(),
        "size": len(m["release.json"]),
    }
    m["manifest.json"] = json.dumps(man).encode()
    return _write(m, dst)


def _refused_one_line(path: Path, capsys, match: str) -> str:
    with pytest.raises(ReleaseFileError, match=match) as ei:
        Release.load(path)
    assert "\n" not in str(ei.value)
    assert main(["inspect", str(path)]) == 1
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddssp: error:"), err
    return lines[0]


def test_forged_eps_and_rho_refused(saved, tmp_path, capsys):
    def edit(doc):
        doc["eps"] = 0.1
        rho = rho_from_eps_delta(0.1, doc["delta"])
        doc["ledger"]["rho_budget"] = rho
        doc["ledger"]["rho_spent"] = rho

    _refused_one_line(_forge(saved, tmp_path / "forged.release", edit), capsys, "self-check")


def test_forged_eps_rho_and_entries_rescaled_refused(saved, tmp_path, capsys):
    # a thorough forger also rescales every entry's rho: the entries no longer match their sigmas
    def edit(doc):
        old = doc["ledger"]["rho_budget"]
        doc["eps"] = 0.1
        rho = rho_from_eps_delta(0.1, doc["delta"])
        doc["ledger"]["rho_budget"] = doc["ledger"]["rho_spent"] = rho
        for e in doc["ledger"]["entries"]:
            e["rho"] *= rho / old

    _refused_one_line(_forge(saved, tmp_path / "forged2.release", edit), capsys, "self-check")


def test_truncated_ledger_refused(saved, tmp_path, capsys):
    def edit(doc):
        doc["ledger"]["entries"] = doc["ledger"]["entries"][:-3]
        doc["ledger"]["rho_spent"] = math.fsum(e["rho"] for e in doc["ledger"]["entries"])

    _refused_one_line(_forge(saved, tmp_path / "trunc.release", edit), capsys, "self-check")


@pytest.mark.parametrize("where", ["measurements", "both", "both+rho"])
def test_sigma_times_ten_refused(saved, tmp_path, capsys, where):
    def edit(doc):
        doc["measurements"][0]["sigma"] *= 10
        if where != "measurements":
            e = next(e for e in doc["ledger"]["entries"] if e["kind"] == "measure")
            e["sigma"] *= 10
            if where == "both+rho":  # entry consistent with itself, but the sum no longer reaches eps
                e["rho"] /= 100
                doc["ledger"]["rho_spent"] = math.fsum(x["rho"] for x in doc["ledger"]["entries"])

    _refused_one_line(_forge(saved, tmp_path / f"sigma-{where}.release", edit), capsys, "self-check")


def test_unknown_entry_kind_and_non_integer_counts_refused(saved, tmp_path, capsys):
    def edit(doc):
        doc["ledger"]["entries"][0]["kind"] = "free-lunch"

    _refused_one_line(_forge(saved, tmp_path / "kind.release", edit), capsys, "unknown mechanism kind")


def test_flipping_insecure_to_secure_is_not_detectable_without_a_signature(insecure_rel, tmp_path):
    # documented limit: the self-check verifies consistency, not authorship (see README)
    p = tmp_path / "i.release"
    insecure_rel.save(p)
    forged = _forge(
        p, tmp_path / "flip.release", lambda d: d.__setitem__("noise", {"source": "opendp", "secure": True})
    )
    assert Release.load(forged).stamp is None


# --------------------------------------------------------------------------- zip bombs
def _declare_size(path: Path, member: str, size: int) -> None:
    """Patch the central directory so that ``member`` declares ``size`` uncompressed bytes (< 4 GiB)."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    pos = 0
    while True:
        i = data.find(b"PK\x01\x02", pos)
        assert i >= 0, "member not found"
        n = struct.unpack_from("<H", data, i + 28)[0]
        if bytes(data[i + 46 : i + 46 + n]) == name:
            struct.pack_into("<I", data, i + 24, size)
            break
        pos = i + 4
    path.write_bytes(bytes(data))


class _NoDecompress:
    """Fail the test if a member is opened for reading (i.e. decompressed) at all."""

    def __init__(self, monkeypatch, names):
        orig = zipfile.ZipFile.open
        self.names = set(names)

        def guarded(zf, name, *a, **k):
            n = name.filename if isinstance(name, zipfile.ZipInfo) else name
            assert n not in self.names, f"{n} was decompressed"
            return orig(zf, name, *a, **k)

        monkeypatch.setattr(zipfile.ZipFile, "open", guarded)


GIB15 = 3 << 29  # 1.5 GiB


def _bomb_listed(saved: Path, dst: Path, member: str) -> Path:
    """A release with ``member`` (a new one, or replacing an array) declaring 1.5 GiB, listed in the manifest."""
    m = _members(saved)
    m[member] = b"\x00" * 4096
    man = json.loads(m["manifest.json"])
    man["files"][member] = {"sha256": hashlib.sha256(b"").hexdigest(), "size": GIB15}
    m["manifest.json"] = json.dumps(man).encode()
    _write(m, dst)
    _declare_size(dst, member, GIB15)
    return dst


@pytest.mark.parametrize("replace", [False, True])
def test_zip_bomb_refused_before_decompressing(saved, tmp_path, capsys, monkeypatch, replace):
    doc = json.loads(_members(saved)["release.json"])
    member = f"arrays/{doc['measurements'][0]['array']}.npy" if replace else "arrays/bomb.npy"
    bomb = _bomb_listed(saved, tmp_path / "bomb.release", member)
    _NoDecompress(monkeypatch, [member])
    with pytest.raises(ReleaseFileError, match="without decompressing|not referenced") as ei:
        Release.load(bomb)
    assert "\n" not in str(ei.value)


def test_total_size_cap(saved, tmp_path, monkeypatch):
    bomb = _bomb_listed(saved, tmp_path / "bomb.release", "arrays/bomb.npy")
    _NoDecompress(monkeypatch, ["arrays/bomb.npy", "release.json", "manifest.json"])
    with pytest.raises(ReleaseFileError, match="cap"):
        Release.load(bomb, max_bytes=1 << 30)


@pytest.mark.slow
def test_real_zip_bomb_refused(saved, tmp_path, monkeypatch):
    """A real 1.5 GiB zero member (compresses to ~7 MB), listed in the manifest with its size."""
    dst = tmp_path / "realbomb.release"
    m = _members(saved)
    man = json.loads(m["manifest.json"])
    man["files"]["arrays/bomb.npy"] = {"sha256": "0" * 64, "size": GIB15}
    m["manifest.json"] = json.dumps(man).encode()
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for n, data in m.items():
            zf.writestr(n, data)
        with zf.open("arrays/bomb.npy", "w", force_zip64=True) as f:
            z = bytes(1 << 24)
            for _ in range(GIB15 >> 24):
                f.write(z)
    _NoDecompress(monkeypatch, ["arrays/bomb.npy"])
    with pytest.raises(ReleaseFileError, match="not referenced"):
        Release.load(dst)


# --------------------------------------------------------------------------- Ed25519 signatures
def _keypair(tmp_path: Path, name: str) -> tuple[Path, Path]:
    ser = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    ed = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ed25519")
    k = ed.Ed25519PrivateKey.generate()
    priv, pub = tmp_path / f"{name}.pem", tmp_path / f"{name}.pub.pem"
    priv.write_bytes(k.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption()))
    pub.write_bytes(k.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo))
    return priv, pub


def test_signed_release_verifies_and_a_consistent_forgery_does_not(insecure_rel, tmp_path, capsys):
    priv, pub = _keypair(tmp_path, "pub")
    _, other_pub = _keypair(tmp_path, "other")
    p = tmp_path / "signed.release"
    insecure_rel.save(p, sign_key=priv)
    rel = Release.load(p)
    assert rel.verify(pub).startswith("ed25519:") and rel.signed_by == rel.verify(pub)
    with pytest.raises(ReleaseFileError, match="another key"):
        rel.verify(other_pub)
    # the forgery the self-check cannot see (stamp flipped off, manifest rehashed) breaks the signature
    forged = _forge(
        p, tmp_path / "flip.release", lambda d: d.__setitem__("noise", {"source": "opendp", "secure": True})
    )
    f = Release.load(forged)
    assert f.stamp is None
    with pytest.raises(ReleaseFileError, match="does not match"):
        f.verify(pub)
    # CLI: one line each way
    assert main(["verify", str(p), "--public-key", str(pub)]) == 0
    out, _ = capsys.readouterr()
    assert "signature OK" in out and "self-check OK" in out
    for argv in (["verify", str(forged), "--public-key", str(pub)], ["verify", str(p), "--public-key", str(other_pub)]):
        assert main(argv) == 1
        _, err = capsys.readouterr()
        lines = err.strip().splitlines()  # the error, after the NOT PRIVATE stamp when the file has one
        assert lines[-1].startswith("ddssp: error:") and all(INSECURE_STAMP in x for x in lines[:-1]), err
    unsigned = tmp_path / "unsigned.release"
    insecure_rel.save(unsigned)
    assert main(["verify", str(unsigned), "--public-key", str(pub)]) == 1
    assert "not signed" in capsys.readouterr()[1]


def test_cli_sign_key_bad_key_refused_before_reading_data(tmp_path, capsys):
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    data = tmp_path / "t.csv"
    make_codes(50, 0).to_csv(data, index=False)
    dom = tmp_path / "d.json"
    dom.write_text(json.dumps(DOMAIN))
    out = tmp_path / "r.release"
    code = main(
        ["release", str(data), "--domain", str(dom), "--eps", "1", "-o", str(out), "--sign-key", str(bad), "--quiet"]
    )
    _, err = capsys.readouterr()
    assert code == 1 and err.strip().splitlines()[-1].startswith("ddssp: error: the signing key")
    assert not out.exists()
