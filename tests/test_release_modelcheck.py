"""The model is checked against the measurements on load, and the stamps against the rest of the file:
honest releases (many eps, sizes) pass; a swapped model and partial stamp flips are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ddssp.data import Schema
from ddssp.errors import ReleaseFileError
from ddssp.pipeline import AimOptions, ReadOptions, release
from ddssp.releasefile import Release
from ddssp.releasefile.selfcheck import model_fit_bound, model_fit_statistic
from tests import hostile
from tests.test_release import DOMAIN, make_codes

SCHEMA = Schema.from_domain(DOMAIN, categorical=["a", "b", "y"])


def _release(n: int, seed: int, eps: float = 1.0, flip: bool = False):
    codes = make_codes(n, seed)
    if flip:
        codes["y"] = 1 - codes["y"]
        codes["b"] = (codes["b"] + 1) % 4
    return release(
        codes,
        SCHEMA,
        eps=eps,
        delta=1e-6,
        seed=0,
        insecure_seed=seed,
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=8),
    )


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 10.0])
@pytest.mark.parametrize("n", [300, 20_000])
def test_honest_releases_pass_the_model_check(tmp_path, eps, n):
    rel = _release(n, int(eps * 100) + n, eps)
    stat, cells = model_fit_statistic(rel)
    assert stat <= model_fit_bound(cells)
    p = rel.save(tmp_path / "r.release")
    assert Release.load(p).model is not None


def test_swapped_model_refused(tmp_path):
    a = _release(20_000, 1).save(tmp_path / "a.release")
    b = _release(5_000, 2, flip=True).save(tmp_path / "b.release")
    ma, mb = hostile.members(a), hostile.members(b)
    doc_a, doc_b = json.loads(ma["release.json"]), json.loads(mb["release.json"])
    doc_a["model"] = doc_b["model"]
    for k in list(ma):
        if k.startswith("arrays/model/"):
            del ma[k]
    for k, v in mb.items():
        if k.startswith("arrays/model/"):
            ma[k] = v
    ma["release.json"] = json.dumps(doc_a).encode()
    man = json.loads(ma["manifest.json"])
    man["files"] = {k: v for k, v in man["files"].items() if not k.startswith("arrays/model/")}
    man["files"].update(
        {k: v for k, v in json.loads(mb["manifest.json"])["files"].items() if k.startswith("arrays/model/")}
    )
    ma["manifest.json"] = json.dumps(man).encode()
    hostile._rehash(ma, ["release.json"])
    forged = hostile.write_members(ma, tmp_path / "swapped.release")
    with pytest.raises(ReleaseFileError, match="model does not fit the measurements"):
        Release.load(forged)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d["noise"].__setitem__("secure", True), "marked secure"),
        (lambda d: d["noise"].pop("stamp"), "without its stamp"),
        (lambda d: d.__setitem__("schema_status", "trust me"), "unknown schema_status"),
    ],
)
def test_partial_stamp_flips_refused(tmp_path, edit, match):
    p = _release(300, 4).save(tmp_path / "r.release")
    forged = hostile.edit_doc(p, tmp_path / "f.release", edit)
    with pytest.raises(ReleaseFileError, match=match):
        Release.load(forged)


def test_declared_status_over_a_draft_schema_refused(tmp_path):
    p = _release(300, 5).save(tmp_path / "r.release")

    def edit(d):
        d["schema"]["draft"] = "data-derived draft"

    forged = hostile.edit_doc(p, tmp_path / "f.release", edit)
    with pytest.raises(ReleaseFileError, match="draft stamp"):
        Release.load(forged)
    assert np.isfinite(model_fit_bound(10))
