"""Generators of hostile release files (built in a temporary directory; nothing big is committed).

Each generator takes a valid saved release (``base``) and a destination and writes one attack:
a memory bomb whose declared sizes fit the byte cap, many valid ledger entries, huge level lists,
deep JSON, huge numbers, devices, pipes and symlinks. ``tests/test_hostile_files.py`` runs them;
``python -m tests.hostile DIR`` writes the full-size set for measuring a whole process.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import zipfile
from pathlib import Path

import numpy as np


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _rehash(m: dict[str, bytes], names) -> None:
    man = json.loads(m["manifest.json"])
    for n in names:
        man["files"][n] = {"sha256": hashlib.sha256(m[n]).hexdigest(), "size": len(m[n])}
    m["manifest.json"] = json.dumps(man).encode()


def write_members(m: dict[str, bytes], dst: Path) -> Path:
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for n, data in m.items():
            zf.writestr(n, data)
    return dst


def with_release_json(base: Path, dst: Path, text: bytes) -> Path:
    """``base`` with release.json replaced by ``text`` (manifest rehashed, as a forger would)."""
    m = members(base)
    m["release.json"] = text
    _rehash(m, ["release.json"])
    return write_members(m, dst)


def edit_doc(base: Path, dst: Path, edit) -> Path:
    doc = json.loads(members(base)["release.json"])
    edit(doc)
    return with_release_json(base, dst, json.dumps(doc, separators=(",", ":")).encode())


def deep_json(depth: int = 200_000) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_release_json(base: Path, dst: Path, depth: int = 200_000) -> Path:
    doc = json.loads(members(base)["release.json"])
    text = json.dumps(doc).encode()
    text = text[:-1] + b', "x": ' + deep_json(depth) + b"}"
    return with_release_json(base, dst, text)


def deep_manifest(base: Path, dst: Path, depth: int = 200_000) -> Path:
    m = members(base)
    m["manifest.json"] = m["manifest.json"].rstrip()[:-1] + b', "x": ' + deep_json(depth) + b"}"
    return write_members(m, dst)


def huge_number(base: Path, dst: Path, field: str, literal: str) -> Path:
    """``field`` (eps, rho, sigma) set to the JSON number ``literal`` (e.g. 10**400 written out)."""
    text = json.dumps(json.loads(members(base)["release.json"]))
    doc = json.loads(text)
    marker = "123456.654321"
    if field == "eps":
        doc["eps"] = float(marker)
    elif field == "rho":
        doc["ledger"]["rho_budget"] = float(marker)
    elif field == "sigma":
        doc["measurements"][0]["sigma"] = float(marker)
    text = json.dumps(doc).replace(marker, literal, 1)
    return with_release_json(base, dst, text.encode())


def many_entries(base: Path, dst: Path, n: int = 50_000) -> Path:
    """``n`` valid Gaussian-measurement ledger entries with distinct sigmas (each passes its own check)."""

    def edit(doc):
        proto = next(e for e in doc["ledger"]["entries"] if e["kind"] == "measure")
        entries = []
        for i in range(n):
            e = dict(proto)
            e["sigma"] = 10.0 + i * 1e-3
            e["rho"] = 1.0 / (2 * e["sigma"] ** 2)
            entries.append(e)
        doc["ledger"]["entries"] = entries

    return edit_doc(base, dst, edit)


def many_discovery_entries(base: Path, dst: Path, n: int = 50_000) -> Path:
    """``n`` valid stable-key-release ('discover-keys') ledger entries with distinct sigmas: each one's
    check recomputes a threshold cost (about 1 ms), so only a count cap keeps the load short."""
    from ddssp.dp.discovery import threshold_cost

    def edit(doc):
        entries = []
        for i in range(n):
            sigma, t = 10.0 + i * 1e-3, 40
            rho, delta = threshold_cost(sigma, t)
            entries.append(
                {
                    "kind": "discover-keys",
                    "rho": rho,
                    "sigma": sigma,
                    "eps_em": None,
                    "clique": ["a"],
                    "round": None,
                    "note": "",
                    "delta": delta,
                    "params": {"threshold": t, "l0": 1, "l2": 1, "linf": 1, "noise": "discrete_gaussian"},
                }
            )
        doc["ledger"]["entries"] = entries + doc["ledger"]["entries"]

    return edit_doc(base, dst, edit)


def many_levels(base: Path, dst: Path, n: int = 5_500_000) -> Path:
    """A categorical column listing ``n`` levels explicitly (5.5M fit under the 64 MiB JSON cap)."""

    def edit(doc):
        col = doc["schema"]["columns"][0]
        col.pop("size", None)
        col["levels"] = [str(i) for i in range(n)]

    return edit_doc(base, dst, edit)


def _npy_zero_stream(zf: zipfile.ZipFile, name: str, shape: tuple[int, ...], dtype: str) -> tuple[str, int]:
    """Write an all-zero .npy of ``shape`` into ``zf`` chunk by chunk; returns (sha256, size)."""
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape})
    h = hashlib.sha256()
    total = int(np.prod(shape)) * 8
    chunk = bytes(1 << 22)
    with zf.open(name, "w", force_zip64=True) as fh:
        head = hdr.getvalue()
        fh.write(head)
        h.update(head)
        left = total
        while left:
            b = chunk[: min(left, len(chunk))]
            fh.write(b)
            h.update(b)
            left -= len(b)
    return h.hexdigest(), len(hdr.getvalue()) + total


def memory_bomb(base: Path, dst: Path, sizes: tuple[int, int] = (8192, 16000)) -> Path:
    """Two categorical columns of ``sizes`` levels (declared by size), one all-zero int64 measurement and
    one all-zero float64 model table over the pair: a consistent release whose declared bytes fit the cap
    but whose load allocates many times more. ``base`` must be a release over exactly two columns
    with one measured pair and no others (see :func:`two_column_base`)."""
    m = members(base)
    doc = json.loads(m["release.json"])
    cols = doc["schema"]["columns"]
    assert len(cols) == 2
    names = [c["name"] for c in cols]
    for i, (c, n) in enumerate(zip(cols, sizes)):
        cols[i] = {"name": c["name"], "kind": "categorical", "size": n}
    doc["model"]["meta"]["domain"] = [[a, n] for a, n in zip(names, sizes)]
    doc["model"]["meta"]["cliques"] = [names]
    doc["model"]["meta"]["edges"] = []
    doc["model"]["arrays"] = {"theta_0": "model/0"}
    shapes = {}
    for meas in doc["measurements"]:
        shapes[f"arrays/{meas['array']}.npy"] = (tuple(sizes[names.index(c)] for c in meas["clique"]), "<i8")
    shapes["arrays/model/0.npy"] = (tuple(sizes), "<f8")
    man = json.loads(m["manifest.json"])
    files = {}
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        rj = json.dumps(doc).encode()
        files["release.json"] = {"sha256": hashlib.sha256(rj).hexdigest(), "size": len(rj)}
        stream = {}
        for name, (shape, dtype) in shapes.items():
            sha, size = _npy_zero_stream(zf, name, shape, dtype)
            files[name] = {"sha256": sha, "size": size}
            stream[name] = True
        man["files"] = files
        zf.writestr("manifest.json", json.dumps(man).encode())
        zf.writestr("release.json", rj)
    return dst


def two_column_base(dst: Path, insecure_seed: int | None = 0) -> Path:
    """A small valid release over two columns (a numeric, b categorical)."""
    import pandas as pd

    from ddssp.data import Schema
    from ddssp.pipeline import AimOptions, ReadOptions, release

    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 500)
    codes = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, 500)) % 4})
    schema = Schema.from_domain({"a": 3, "b": 4}, categorical=["b"])  # a: numeric codes, a regression target
    rel = release(
        codes,
        schema,
        eps=1.0,
        delta=1e-6,
        seed=0,
        insecure_seed=insecure_seed,
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=4),
    )
    rel.save(dst)
    return dst


def list_bomb_text(total: int = 64 << 20, depth: int = 999) -> bytes:
    """A JSON list of chunks ``[[[...]]]`` nested ``depth`` deep, about ``total`` bytes: no commas
    inside a chunk, so a parser builds ``depth`` lists per ``2 * depth + 1`` bytes (about 100 bytes of
    memory per 2 bytes of text)."""
    chunk = b"[" * depth + b"]" * depth
    n = max(total // (len(chunk) + 1), 1)
    return b"[" + b",".join([chunk] * n) + b"]"


def list_bomb(base: Path, dst: Path, member: str = "manifest.json", total: int = 64 << 20, depth: int = 999) -> Path:
    """``member`` (manifest.json or release.json, rehashed in the manifest) replaced by a list bomb."""
    m = members(base)
    m[member] = list_bomb_text(total, depth)
    if member != "manifest.json":
        _rehash(m, [member])
    return write_members(m, dst)


def many_members(base: Path, dst: Path, n: int = 400_000) -> Path:
    """``base`` with ``n`` extra empty members (names ``e/<i>``): the central directory alone is large."""
    m = members(base)
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in m.items():
            zf.writestr(name, data)
        for i in range(n):
            zf.writestr(f"e/{i}", b"")
    return dst


def long_note(base: Path, dst: Path, n: int = 60 << 20) -> Path:
    """A ledger entry whose note is ``n`` characters long."""

    def edit(doc):
        doc["ledger"]["entries"][0]["note"] = "x" * n

    return edit_doc(base, dst, edit)


def wide_shapes(base: Path, dst: Path, columns: int = 5_000, size: int = 1_000) -> Path:
    """A schema declaring ``columns`` categorical columns of ``size`` levels each (by size), every
    one in the model's domain, with no arrays for them: declared shapes far larger than the file."""

    def edit(doc):
        cols = [{"name": f"w{i}", "kind": "categorical", "size": size} for i in range(columns)]
        doc["schema"]["columns"] += cols
        doc["model"]["meta"]["domain"] += [[c["name"], size] for c in cols]

    return edit_doc(base, dst, edit)


def escape_label_base(dst: Path, label: str = "\x1b]0;owned\x07\x1b[2J", insecure_seed: int | None = 0) -> Path:
    """A small valid release whose categorical column has ``label`` among its levels (and as a column name)."""
    import pandas as pd

    from ddssp.data import Column, Schema
    from ddssp.pipeline import AimOptions, ReadOptions, release

    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 500)
    codes = pd.DataFrame({"a": a, label: (a + rng.integers(0, 2, 500)) % 3})
    schema = Schema([Column.ordinal("a", 3), Column.categorical(label, ["x", label, "y"])])
    rel = release(
        codes,
        schema,
        eps=1.0,
        delta=1e-6,
        seed=0,
        insecure_seed=insecure_seed,
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=4),
    )
    rel.save(dst)
    return dst


def fifo(dst: Path) -> Path:
    os.mkfifo(dst)
    return dst


def symlink_to_dev_zero(dst: Path) -> Path:
    dst.symlink_to("/dev/zero")
    return dst


def one_line_refusal(path, capsys, match: str, argv=("verify",)) -> str:
    """Run ``ddssp ARGV PATH`` in process: exit 1, one ``ddssp: error:`` line holding ``match``, no
    internal error; the line is returned."""
    from ddssp.cli import main

    assert main([*argv, str(path)]) == 1
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddssp: error:"), err
    assert "internal error" not in err and match in lines[0], err
    return lines[0]


def write_all(out: Path, full: bool = True) -> dict[str, Path]:
    """Every hostile file of the set, in ``out`` (full size when ``full``)."""
    out.mkdir(parents=True, exist_ok=True)
    base = two_column_base(out / "base.release")
    files = {
        "dev-zero": Path("/dev/zero"),
        "symlink-dev-zero": symlink_to_dev_zero(out / "zero.release"),
        "fifo": fifo(out / "pipe.release"),
        "memory-bomb": memory_bomb(base, out / "bomb.release", (8192, 16000) if full else (512, 1000)),
        "50k-entries": many_entries(base, out / "entries.release", 50_000 if full else 2_000),
        "50k-discovery-entries": many_discovery_entries(base, out / "disc.release", 50_000 if full else 1_001),
        "5.5M-levels": many_levels(base, out / "levels.release", 5_500_000 if full else 1_100_000),
        "deep-release-json": deep_release_json(base, out / "deep.release"),
        "deep-manifest": deep_manifest(base, out / "deepman.release"),
        "sigma-1e400": huge_number(base, out / "sigma.release", "sigma", "1" + "0" * 400),
        "rho-1e400": huge_number(base, out / "rho.release", "rho", "1" + "0" * 400),
        "eps-1e400": huge_number(base, out / "eps.release", "eps", "1e400"),
        "5000-digit-int": huge_number(base, out / "digits.release", "eps", "7" * 5000),
        "list-bomb-manifest": list_bomb(base, out / "lbm.release", "manifest.json"),
        "list-bomb-release-json": list_bomb(base, out / "lbr.release", "release.json"),
        "400k-members": many_members(base, out / "members.release", 400_000 if full else 20_004),
        "3300x3300-clique": memory_bomb(base, out / "clique.release", (3300, 3300)),
        "60MB-note": long_note(base, out / "note.release", 60 << 20 if full else 2 << 20),
        "wide-declared-shapes": wide_shapes(base, out / "wide.release"),
        "escape-label": escape_label_base(out / "escape.release"),
    }
    return files


if __name__ == "__main__":  # pragma: no cover
    for k, v in write_all(Path(sys.argv[1])).items():
        print(k, v)
