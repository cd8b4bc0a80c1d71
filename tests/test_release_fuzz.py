"""Fuzzing the release loader: mutated valid releases (bytes, JSON fields, shapes, numbers) and grown
ones (nested lists spliced into a member, many members, wide declared shapes) either load and pass the
self-check or are refused with one :class:`DDSSPError` line, never another exception, and never
allocate more than the load's memory budget (traced with tracemalloc)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddssp.errors import DDSSPError
from ddssp.releasefile import Release
from tests import hostile

BUDGET = 64 << 20
_SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]}


@pytest.fixture(scope="module")
def base_members(tmp_path_factory) -> dict[str, bytes]:
    p = hostile.two_column_base(tmp_path_factory.mktemp("fuzz") / "base.release")
    return hostile.members(p)


NUMBERS = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1e308, 1e-308, 2**63, 10**6, 8192, 16000, True, None, "x", [], {}]),
)


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:8]):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


@st.composite
def mutated(draw, members):
    m = dict(members)
    kind = draw(st.sampled_from(["json-field", "json-field", "bytes", "shape", "truncate"]))
    if kind == "json-field":
        doc = json.loads(m["release.json"])
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        _set(doc, path, draw(NUMBERS))
        m["release.json"] = json.dumps(doc).encode()
        hostile._rehash(m, ["release.json"])
    elif kind == "bytes":
        name = draw(st.sampled_from(sorted(m)))
        data = bytearray(m[name])
        for _ in range(draw(st.integers(1, 4))):
            if data:
                i = draw(st.integers(0, len(data) - 1))
                data[i] = draw(st.integers(0, 255))
        m[name] = bytes(data)
        if draw(st.booleans()) and name != "manifest.json":
            hostile._rehash(m, [name])
    elif kind == "shape":
        doc = json.loads(m["release.json"])
        col = draw(st.sampled_from(doc["schema"]["columns"]))
        col.pop("levels", None)
        col["size"] = draw(st.sampled_from([1, 2, 5, 1000, 100_000, 10**6]))
        m["release.json"] = json.dumps(doc).encode()
        hostile._rehash(m, ["release.json"])
    else:
        name = draw(st.sampled_from(sorted(m)))
        m[name] = m[name][: draw(st.integers(0, max(len(m[name]) - 1, 0)))]
    return m


@st.composite
def grown(draw, members):
    """A valid release grown in structure, not in bytes: nested empty lists spliced into a JSON member
    (deep, or many side by side), extra members, or more and wider declared columns."""
    m = dict(members)
    kind = draw(st.sampled_from(["nested", "members", "wide"]))
    if kind == "nested":
        name = draw(st.sampled_from(["release.json", "manifest.json"]))
        depth = draw(st.integers(1, 3000))
        copies = draw(st.integers(1, 4000))
        bomb = b",".join([b"[" * depth + b"]" * depth] * copies)
        text = m[name].rstrip()
        m[name] = text[:-1] + b', "x": [' + bomb + b"]}"
        if name != "manifest.json":
            hostile._rehash(m, [name])
    elif kind == "members":
        for i in range(draw(st.integers(1, 300))):
            m[f"arrays/extra/{i}.npy"] = b""
        if draw(st.booleans()):
            hostile._rehash(m, [k for k in m if k.startswith("arrays/extra/")])
    else:
        doc = json.loads(m["release.json"])
        n, size = draw(st.integers(1, 3000)), draw(st.sampled_from([2, 1000, 10**5, 10**7]))
        cols = [{"name": f"w{i}", "kind": "categorical", "size": size} for i in range(n)]
        doc["schema"]["columns"] += cols
        if draw(st.booleans()):
            doc["model"]["meta"]["domain"] += [[c["name"], size] for c in cols]
        if draw(st.booleans()):
            doc["model"]["meta"]["cliques"].append([c["name"] for c in cols[:3]])
        m["release.json"] = json.dumps(doc).encode()
        hostile._rehash(m, ["release.json"])
    return m


def _check(members: dict[str, bytes], dst: Path) -> None:
    hostile.write_members(members, dst)
    tracemalloc.start()
    try:
        try:
            rel = Release.load(dst, max_memory=BUDGET)
        except DDSSPError as exc:
            assert "\n" not in str(exc) and str(exc)
        else:
            assert rel.self_check() is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= BUDGET, f"peak {peak / 2**20:.0f} MiB over the {BUDGET >> 20} MiB budget"


@settings(max_examples=25, **_SETTINGS)
@given(data=st.data())
def test_fuzz_loader(base_members, tmp_path, data):
    _check(data.draw(mutated(base_members)), tmp_path / "f.release")


@settings(max_examples=25, **_SETTINGS)
@given(data=st.data())
def test_fuzz_loader_grown(base_members, tmp_path, data):
    _check(data.draw(grown(base_members)), tmp_path / "f.release")


@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(data=st.data())
def test_fuzz_loader_grown_long(base_members, tmp_path, data):
    _check(data.draw(grown(base_members)), tmp_path / "f.release")


@pytest.mark.slow
@settings(max_examples=1000, **_SETTINGS)
@given(data=st.data())
def test_fuzz_loader_long(base_members, tmp_path, data):
    _check(data.draw(mutated(base_members)), tmp_path / "f.release")
