"""``Release.from_document`` is the inverse of ``Release.to_document``, and checks what it rebuilds."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

from ddssp.data import Schema
from ddssp.errors import ReleaseFileError
from ddssp.pipeline import AimOptions, ReadOptions, release
from ddssp.releasefile import Release
from tests.test_release import DOMAIN, make_codes


@pytest.fixture(scope="module")
def rel() -> Release:
    schema = Schema.from_domain(DOMAIN, categorical=["a", "b", "y"])
    return release(
        make_codes(2000),
        schema,
        eps=2.0,
        delta=1e-6,
        seed=5,
        target="y",
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=8),
    )


def _same_document(left, right) -> None:
    (doc_l, arrays_l), (doc_r, arrays_r) = left, right
    assert json.dumps(doc_l, sort_keys=True) == json.dumps(doc_r, sort_keys=True)
    assert arrays_l.keys() == arrays_r.keys()
    for name in arrays_l:
        assert arrays_l[name].dtype == arrays_r[name].dtype, name
        assert np.array_equal(arrays_l[name], arrays_r[name]), name


def test_from_document_inverts_to_document(rel):
    doc, arrays = rel.to_document()
    kept = copy.deepcopy(doc), {k: a.copy() for k, a in arrays.items()}
    again = Release.from_document(doc, arrays)
    _same_document(kept, (doc, arrays))  # the inputs are left as they were
    _same_document(again.to_document(), kept)
    assert again.schema.to_dict() == rel.schema.to_dict()
    assert again.ledger.entries == rel.ledger.entries
    assert again.workload == rel.workload
    assert (again.eps, again.delta, again.target, again.created, again.ddssp_version) == (
        rel.eps,
        rel.delta,
        rel.target,
        rel.created,
        rel.ddssp_version,
    )
    assert (again.info, again.noise, again.schema_status, again.stamp) == (
        rel.info,
        rel.noise,
        rel.schema_status,
        rel.stamp,
    )
    assert [(m.clique, m.sigma, m.round) for m in again.measurements] == [
        (tuple(m.clique), m.sigma, m.round) for m in rel.measurements
    ]
    for a, b in zip(again.measurements, rel.measurements):
        assert np.array_equal(a.values, b.values)
    for cols in itertools.chain(itertools.combinations(DOMAIN, 1), itertools.combinations(DOMAIN, 2)):
        assert np.allclose(again.marginal(cols), rel.marginal(cols), rtol=1e-12, atol=1e-9), cols
    assert again.summary() == rel.summary()


def test_from_document_has_no_file_attributes(rel):
    """The signature and the manifest belong to a file: a document carries none."""
    again = Release.from_document(*rel.to_document())
    assert again.signature is None and again.signature_valid is None and again.manifest_bytes is None
    assert again.dataset_name is None and again.signed_by is None


def test_load_is_from_document_of_the_file(rel, tmp_path):
    path = rel.save(tmp_path / "r.release", dataset_name="tiny")
    loaded = Release.load(path)
    _same_document(loaded.to_document(), rel.to_document())
    assert loaded.dataset_name == "tiny" and loaded.manifest_bytes and loaded.signature_valid is None


def test_from_document_refuses_a_missing_field_naming_its_source(rel):
    doc, arrays = rel.to_document()
    del doc["noise"]
    with pytest.raises(ReleaseFileError, match=r"^from a test: release content is invalid or incomplete \(KeyError"):
        Release.from_document(doc, arrays, source="from a test")


def test_from_document_self_checks_the_content(rel):
    doc, arrays = rel.to_document()
    doc["eps"] = rel.eps / 2  # a guarantee the ledger's spending does not fit
    with pytest.raises(ReleaseFileError, match=r"^release document: self-check failed: "):
        Release.from_document(doc, arrays)


def test_from_document_checks_the_shapes(rel):
    doc, arrays = rel.to_document()
    name = doc["measurements"][0]["array"]
    arrays[name] = arrays[name][:-1]
    with pytest.raises(ReleaseFileError, match=r"^release document: measurement .* cells, expected"):
        Release.from_document(doc, arrays)
