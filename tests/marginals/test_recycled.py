"""Discovery's grid counts as one-way measurements: exact sums of the levels' cells, honest sds, fitted by
AIM at no charge, recorded in the file and checked against the ledger on load."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Schema
from ddssp.data.discovery.numeric import grid_counts
from ddssp.errors import ReleaseFileError
from ddssp.marginals.estimation import MirrorDescentNumpy
from ddssp.marginals.recycled import RecycledMeasurement, from_grid, round_zero
from ddssp.pipeline import release
from ddssp.releasefile import Release


def _column(spec: dict):
    return Schema.from_dict({"format": "ddssp-schema/1", "columns": [spec]}).column(spec["name"])


def _exact_one_way(col, x: np.ndarray) -> np.ndarray:
    """The one-way marginal of ``x`` as the release encodes it (the reference the sums must equal)."""
    codes = Schema([col]).encode(pd.DataFrame({col.name: x}))[col.name].to_numpy()
    return np.bincount(codes, minlength=col.size)


def _numbers(rng, n: int) -> np.ndarray:
    return rng.integers(-3, 15, size=n).astype(float)  # beyond the columns' ranges on both sides


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "c", "kind": "numeric", "values": [0, 1, 2, 3, 4, 5], "bounds": [0, 5]},
        {"name": "c", "kind": "numeric", "values": [2, 3, 4, 5, 6, 7, 8], "bounds": [2, 8], "missing": "<missing>"},
        {"name": "c", "kind": "numeric", "edges": [1, 4, 6, 10], "values": [2, 5, 8], "bounds": [1, 10]},
    ],
)
@pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")
def test_exact_counts_sum_to_the_encoded_one_way(spec):
    """With noise-free counts the sums equal the encoded marginal in every measured level, numbers
    clipped into the end levels included (the grid's end cells hold them)."""
    col = _column(spec)
    x = _numbers(np.random.default_rng(3), 2000)
    edges = np.arange(-1.0, 13.0)  # one cell per whole number, narrower than the data on both sides
    m = from_grid(col, edges, grid_counts(x, edges), 7.0, 0, whole=True)
    assert m is not None
    measured = m.cells > 0
    assert measured[: col.size - (col.missing_code is not None)].all()
    assert np.array_equal(m.values[measured], _exact_one_way(col, x)[measured])
    assert np.allclose(m.sigmas[measured], 7.0 * np.sqrt(m.cells[measured]))
    assert np.isinf(m.sigmas[~measured]).all()


def test_missing_cells_level_is_left_unmeasured():
    """A grid counts numbers only: the level that takes missing cells is not measured."""
    col = _column({"name": "c", "kind": "numeric", "values": [1, 2, 3], "bounds": [1, 3], "na": "2"})
    edges = np.arange(0.0, 5.0)
    m = from_grid(col, edges, np.array([1, 5, 6, 7]), 3.0, 0, whole=True)
    assert list(m.cells) == [2, 0, 1] and m.values[1] == 0 and np.isinf(m.sigmas[1])


@pytest.mark.parametrize(
    ("spec", "edges", "whole"),
    [
        # a cell [3, 5) spans the bins [1, 4) and [4, 6)
        (
            {"name": "c", "kind": "numeric", "edges": [1, 4, 6, 10], "values": [2, 5, 8], "bounds": [1, 10]},
            [1, 3, 5, 10],
            True,
        ),
        # the grid starts inside the range: its first cell holds levels 0..2
        ({"name": "c", "kind": "numeric", "values": [0, 1, 2, 3], "bounds": [0, 3]}, [2, 3, 4], True),
        # levels 0, 2, 4: a 1 or a 3 goes to the nearest level, not to one level alone
        ({"name": "c", "kind": "numeric", "values": [0, 2, 4], "bounds": [0, 4]}, [0, 1, 2, 3, 4, 5], True),
        # numbers that are not whole: the cell [v, v + 1) is not level v's
        ({"name": "c", "kind": "numeric", "values": [0, 1, 2], "bounds": [0, 2]}, [0, 1, 2, 3], False),
    ],
)
def test_a_grid_that_does_not_map_gives_nothing(spec, edges, whole):
    col = _column(spec)
    y = np.ones(len(edges) - 1)
    assert from_grid(col, np.asarray(edges, dtype=float), y, 1.0, 0, whole=whole) is None


def test_per_cell_sigma_fits_known_cells_and_ignores_unknown():
    """A partial measurement pins its cells, leaves the others to the full measurement, and changes
    nothing where every sd is one number (scalar path unchanged)."""
    domain = {"a": 3}
    est = MirrorDescentNumpy(domain)
    est.add(("a",), np.array([100.0, 100.0, 100.0]), 50.0)
    est.add(("a",), np.array([200.0, 0.0, 7.0]), np.array([1.0, np.inf, 1.0]))
    est.fit(500, tol=1e-12)
    mu = est.model().marginal(("a",))
    assert abs(mu[0] - 200.0) < 1.0 and abs(mu[2] - 7.0) < 1.0
    assert abs(est.total - 300.0) < 1e-9  # the partial measurement does not enter the total
    ref = MirrorDescentNumpy(domain)
    ref.add(("a",), np.array([100.0, 100.0, 100.0]), 50.0)
    ref.add(("a",), np.array([200.0, 50.0, 7.0]), np.array([1.0, 1.0, 1.0]))
    one = MirrorDescentNumpy(domain)
    one.add(("a",), np.array([100.0, 100.0, 100.0]), 50.0)
    one.add(("a",), np.array([200.0, 50.0, 7.0]), 1.0)
    ref.fit(200, tol=1e-12)
    one.fit(200, tol=1e-12)
    assert np.allclose(ref.model().marginal(("a",)), one.model().marginal(("a",)))


def _table(n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame(
        {
            "code": rng.choice([1, 2, 3, 4], size=n, p=[0.4, 0.3, 0.2, 0.1]),
            "kids": rng.choice([0, 1, 2, 3], size=n, p=[0.5, 0.25, 0.15, 0.1]),
            "grp": rng.choice(["a", "b"], size=n),
        }
    )


@pytest.fixture(scope="module")
def rel() -> Release:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release(_table(), eps=4.0, delta=1e-9, seed=1, insecure_seed=5)


def test_release_fits_recycled_counts_and_records_them(rel, tmp_path):
    assert {m.clique for m in rel.recycled} >= {("code",), ("kids",)}
    exact = {c: _table()[c].value_counts().sort_index().to_numpy() for c in ("code", "kids")}
    for m in rel.recycled:
        if m.clique[0] not in exact:
            continue
        e = rel.ledger.entries[m.entry]
        assert e.kind == "discover-counts" and e.clique == m.clique and e.sigma == m.sigma
        col = rel.schema.column(m.clique[0])
        values = list(col.values[: len(exact[m.clique[0]])])
        assert values == sorted(_table()[m.clique[0]].unique())  # the codes are the data's
        z = (m.values[: len(values)] - exact[m.clique[0]]) / m.sigmas[: len(values)]
        assert np.all(np.abs(z[m.cells[: len(values)] > 0]) < 6)  # noisy counts, at their sds
    path = tmp_path / "r.release"
    rel.save(path)
    back = Release.load(path)
    assert len(back.recycled) == len(rel.recycled)
    for a, b in zip(back.recycled, rel.recycled):
        assert a.clique == b.clique and a.entry == b.entry and np.array_equal(a.cells, b.cells)
        assert np.array_equal(a.values, b.values)


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("sigma", lambda r: r.__setitem__("sigma", r["sigma"] / 2)),
        ("entry", lambda r: r.__setitem__("entry", r["entry"] - 1)),
        ("cells", lambda r: r.__setitem__("cells", [k + 100 for k in r["cells"]])),
    ],
)
def test_a_recycled_record_that_does_not_match_its_charge_is_refused(rel, field, change):
    doc, arrays = rel.to_document()
    doc = copy.deepcopy(doc)
    change(doc["recycled"][0])
    with pytest.raises(ReleaseFileError, match="recycled"):
        Release.from_document(doc, arrays)


def test_non_integer_sums_are_refused(rel):
    doc, arrays = rel.to_document()
    name = doc["recycled"][0]["array"]
    arrays = dict(arrays)
    arrays[name] = arrays[name].astype(float) + 0.5
    with pytest.raises(ReleaseFileError, match="recycled"):
        Release.from_document(doc, arrays)


def test_full_marks_whole_number_levels_measured_but_for_missing_cells():
    """``full``: every level of whole-number levels measured but the missing / na ones; never bins."""
    edges = np.arange(-1.0, 13.0)
    y = np.ones(len(edges) - 1)
    codes = _column({"name": "c", "kind": "numeric", "values": [2, 3, 4], "bounds": [2, 4], "missing": "<missing>"})
    assert from_grid(codes, edges, y, 1.0, 0, whole=True).full
    na = _column({"name": "c", "kind": "numeric", "values": [1, 2, 3], "bounds": [1, 3], "na": "2"})
    assert from_grid(na, edges, y, 1.0, 0, whole=True).full
    binned = _column({"name": "c", "kind": "numeric", "edges": [1, 4, 6, 10], "values": [2, 5, 8], "bounds": [1, 10]})
    m = from_grid(binned, edges, y, 1.0, 0, whole=True)
    assert m is not None and not m.full


def test_round_zero_leaves_out_covered_columns_and_keeps_a_total():
    full = RecycledMeasurement(("a",), np.zeros(3), np.array([1, 1, 0]), 1.0, 0, True)
    part = RecycledMeasurement(("b",), np.zeros(4), np.array([1, 0, 1, 0]), 1.0, 1, False)
    domain = {"a": 3, "b": 4, "c": 2}
    assert round_zero([("a",), ("b",), ("c",)], [full, part], domain, total_known=False) == [("b",), ("c",)]
    # every column covered: the smallest one-way stays, unless earlier measurements give the total
    full_c = RecycledMeasurement(("c",), np.zeros(2), np.array([1, 0]), 1.0, 2, True)
    assert round_zero([("a",), ("c",)], [full, full_c], domain, total_known=False) == [("c",)]
    assert round_zero([("a",), ("c",)], [full, full_c], domain, total_known=True) == []


def test_round_zero_pays_only_for_what_it_measures(rel):
    """Round 0 measures no column a full recycled measurement covers; the ledger charges exactly the
    measurements made, and the adaptive rounds spend what round 0 left (the whole budget is spent)."""
    covered = {m.clique for m in rel.recycled if m.full}
    assert covered  # the table's code columns are covered
    zero = [m.clique for m in rel.measurements if m.round == 0]
    assert zero and not covered & set(zero)
    charged = [e for e in rel.ledger.entries if e.kind == "measure"]
    assert [(tuple(e.clique), e.round) for e in charged] == [(m.clique, m.round) for m in rel.measurements]
    assert sum(e.rho for e in charged if e.round == 0) == pytest.approx(
        sum(1 / (2 * m.sigma**2) for m in rel.measurements if m.round == 0)
    )
    assert rel.ledger.spent == pytest.approx(rel.ledger.rho_budget, rel=1e-9)
