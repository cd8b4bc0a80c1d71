"""Within-bin distributions: discovery keeps, per bin, how the noisy fine-grid counts spread inside
it; synthetic rows draw values inside the bin by it; every other decode keeps representative values."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp

from ddssp.data import Column, Schema, load_schema
from ddssp.data.discovery import bins, discover
from ddssp.data.discovery import numeric as disc
from ddssp.data.within import Within
from ddssp.dp import Ledger, rho_from_eps_delta
from ddssp.dp.discovery import ChargedMechanisms
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.errors import SchemaError
from ddssp.pipeline import AimOptions, release
from ddssp.releasefile import Release
from tests.hostile import edit_doc

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")


def _discover(df, eps=4.0, noise_seed=0):
    rho = rho_from_eps_delta(eps, 1e-6)
    ledger = Ledger(rho, delta_budget=1e-6)
    cols, _, _ = discover(
        df, list(df.columns), ChargedMechanisms(ledger, InsecureSeededNoise(noise_seed)), rho=0.5 * rho, delta=1e-6
    )
    return Schema([cols[c] for c in df.columns]), ledger


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(7)
    n = 20_000
    return pd.DataFrame(
        {
            "income": rng.lognormal(10, 0.8, n),  # smooth, continuous, spans decades
            "age": rng.integers(18, 91, n),  # whole numbers over a range too wide for levels
            "gain": np.where(rng.random(n) < 0.7, 0.0, rng.lognormal(8, 1, n)),  # a point mass at zero
        }
    )


@pytest.fixture(scope="module")
def discovered(table):
    return _discover(table)


def _bin_of(col, v):
    return np.clip(np.searchsorted(col.edges, v, side="right") - 1, 0, len(col.edges) - 2)


def test_discovery_keeps_a_compact_within_bin_distribution(discovered):
    sch, _ = discovered
    for name in ("income", "age", "gain"):
        col = sch.column(name)
        assert col.is_binned and col.within is not None
        assert len(col.within.bins) == len(col.edges) - 1
        for b in col.within.bins:
            if b is not None:
                assert 1 <= len(b[1]) <= bins.WITHIN_CELLS and min(b[1]) >= 0 and sum(b[1]) > 0
    assert sch.column("age").within.whole and not sch.column("income").within.whole
    gain = sch.column("gain")
    assert gain.within.bins[0] is None and gain.values[0] == 0.0  # the zero point mass stays exactly 0
    # it is part of the schema file and reads back equal
    assert Schema.from_dict(json.loads(sch.to_json())) == sch


def test_sampled_values_stay_in_their_bin_and_the_discovered_range(discovered, table):
    sch, _ = discovered
    codes = sch.encode(table)
    out = sch.decode(codes, rng=np.random.default_rng(3))
    for name in ("income", "age", "gain"):
        col = sch.column(name)
        v = out[name].to_numpy(dtype=float)
        assert np.all((v >= col.edges[0]) & (v <= col.edges[-1]))
        assert np.array_equal(_bin_of(col, v), codes[name].to_numpy())  # each value in its own bin
        assert np.array_equal(sch.encode(out)[name], codes[name])
    assert out["age"].dtype == np.int64 and np.all(out["age"] % 1 == 0)  # whole numbers stay whole
    assert np.all(out["gain"][codes["gain"] == 0] == 0.0)
    # reproducible with the same generator seed, different with another
    assert sch.decode(codes, rng=np.random.default_rng(3)).equals(out)
    assert not sch.decode(codes, rng=np.random.default_rng(4)).equals(out)


def test_decode_without_a_generator_keeps_representative_values(discovered, table):
    sch, _ = discovered
    codes = sch.encode(table)
    out = sch.decode(codes)
    for name in ("income", "age", "gain"):
        col = sch.column(name)
        assert np.array_equal(out[name].to_numpy(dtype=float), col.values[codes[name].to_numpy()])


def test_sampling_follows_the_data_better_than_representative_values(discovered, table):
    sch, _ = discovered
    codes = sch.encode(table)
    col = sch.column("income")
    rep = sch.decode(codes)["income"].to_numpy(dtype=float)
    drawn = sch.decode(codes, rng=np.random.default_rng(0))["income"].to_numpy(dtype=float)
    real = table["income"].to_numpy()
    assert len(np.unique(rep)) <= len(col.edges) - 1
    assert len(np.unique(drawn)) > 100 * (len(col.edges) - 1)
    ks_rep, ks_drawn = ks_2samp(real, rep).statistic, ks_2samp(real, drawn).statistic
    assert ks_drawn < 0.5 * ks_rep
    q = np.linspace(0.1, 0.9, 9)
    err = lambda v: np.max(np.abs(np.log(np.quantile(v, q)) - np.log(np.quantile(real, q))))  # noqa: E731
    assert err(drawn) < err(rep)


def test_building_it_draws_no_noise(table, monkeypatch):
    """The within-bin distributions are post-processing: discovery spends and draws the same with
    them as with plain uniform bins."""
    _, ledger = _discover(table, noise_seed=5)
    monkeypatch.setattr(disc, "within_bin", lambda grid, y, a, b, sigma: ((), (1.0,)))
    _, plain = _discover(table, noise_seed=5)
    assert ledger.to_dict() == plain.to_dict()


@pytest.fixture(scope="module")
def rel(table):
    return release(table.iloc[:5000], None, eps=4.0, delta=1e-6, insecure_seed=1, aim=AimOptions(rounds=4))


def test_release_sample_draws_inside_bins_and_costs_nothing(rel):
    before = rel.ledger.to_dict()
    syn = rel.sample(3000, seed=1)
    assert rel.ledger.to_dict() == before
    assert rel.sample(3000, seed=1).equals(syn)
    codes = rel.synthesize_codes(3000, seed=1)
    for name in ("income", "age"):
        col = rel.schema.column(name)
        v = syn[name].to_numpy(dtype=float)
        assert np.array_equal(_bin_of(col, v), codes[name].to_numpy())  # the same codes, drawn inside
        assert len(np.unique(v)) > len(col.edges) - 1
    assert np.all(syn["age"] % 1 == 0)


def test_declared_bins_without_it_decode_to_representative_values():
    sch = Schema([Column.binned("x", [0, 10, 20], [2, 15])])
    out = sch.decode(pd.DataFrame({"x": [0, 1, 1, 0]}), rng=np.random.default_rng(0))
    assert out["x"].tolist() == [2, 15, 15, 2]


def test_a_declared_within_with_a_missing_level():
    col = Column.binned("x", [0.0, 1.0, 2.0], missing="<missing>")
    col.with_within(Within((((0.5,), (0.0, 1.0)), None)))
    sch = Schema([col])
    out = sch.decode(pd.DataFrame({"x": [0] * 200 + [1, 2]}), rng=np.random.default_rng(0))["x"].to_numpy()
    assert np.all((out[:200] >= 0.5) & (out[:200] < 1.0))  # only the weighted sub-cell
    assert out[200] == 1.5 and math.isnan(out[201])


def _schema_doc(within):
    col = {"name": "x", "kind": "numeric", "edges": [0, 10, 20], "within": within}
    return {"format": "ddssp-schema/1", "columns": [col]}


@pytest.mark.parametrize(
    ("within", "says"),
    [
        ({"bins": [None]}, "1 entries for 2 bins"),
        ({"bins": [None, {"cuts": [5], "weights": [1.0]}]}, "needs 2 weights"),
        ({"bins": [None, {"cuts": [25], "weights": [1, 1]}]}, "strictly inside"),
        ({"bins": [None, {"cuts": [15, 12], "weights": [1, 1, 1]}]}, "strictly inside"),
        ({"bins": [None, {"cuts": [float("nan")], "weights": [1, 1]}]}, "finite"),
        ({"bins": [None, {"cuts": [15], "weights": [1, float("inf")]}]}, "finite"),
        ({"bins": [None, {"cuts": [15], "weights": [-1, 2]}]}, ">= 0"),
        ({"bins": [None, {"cuts": [], "weights": [0]}]}, "not all zero"),
        ({"bins": [None, {"cuts": [15], "weights": [1e308, 1e308]}]}, "finite sum"),
        ({"bins": [None, {"cuts": ["a"], "weights": [1, 1]}]}, "lists of numbers"),
        ({"bins": [None, {"cuts": [], "weights": [True]}]}, "lists of numbers"),
        ({"bins": [None, {"cuts": 5, "weights": [1]}]}, "lists of numbers"),
        ({"bins": [None, {"weights": [1]}]}, '"cuts" and "weights"'),
        ({"bins": [None, [1]]}, '"cuts" and "weights"'),
        ({"bins": "x"}, "must be an object"),
        ([None, None], "must be an object"),
        ({"bins": [None, None], "whole": "yes"}, "true or false"),
        ({"bins": [None, {"cuts": [10.5, 10.8], "weights": [1, 1, 1]}], "whole": True}, "no whole number"),
        ({"bins": [None, {"cuts": list(range(11, 20)) * 40, "weights": [1] * 361}]}, "sub-cells"),
    ],
)
def test_hostile_within_in_a_schema_file_is_a_clear_error(within, says, tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(_schema_doc(within)))
    with pytest.raises(SchemaError, match="within") as exc:
        load_schema(p)
    assert says in str(exc.value)


def test_huge_bins_draw_finite_values_or_are_refused():
    col = Column.binned("x", [-1e308, 0.0, 1e308]).with_within(Within((((-1e300,), (1.0, 1.0)), ((), (1.0,)))))
    v = Schema([col]).decode(pd.DataFrame({"x": [0, 1] * 500}), rng=np.random.default_rng(0))["x"].to_numpy()
    assert np.all(np.isfinite(v)) and np.all(v[::2] < 0) and np.all(v[1::2] >= 0)
    with pytest.raises(SchemaError, match="2\\*\\*53"):
        Column.binned("x", [0.0, 1e300]).with_within(Within((((), (1.0,)),), whole=True))


def test_within_on_a_level_column_is_refused():
    d = {"name": "x", "kind": "numeric", "values": [1, 2], "within": {"bins": [None]}}
    with pytest.raises(SchemaError, match="binned numeric columns only"):
        Schema.from_dict({"format": "ddssp-schema/1", "columns": [d]})


def test_a_release_file_with_a_hostile_within_is_refused(rel, tmp_path):
    base = rel.save(tmp_path / "r.release")

    def edit(doc):
        col = doc["schema"]["columns"][0]
        col["within"]["bins"][0] = {"cuts": [col["edges"][0] - 1], "weights": [1, 1]}

    bad = edit_doc(base, tmp_path / "bad.release", edit)
    with pytest.raises(Exception, match="within") as exc:
        Release.load(bad)
    assert type(exc.value).__name__ == "ReleaseFileError"


def test_old_files_without_it_still_read(discovered):
    sch, _ = discovered
    d = json.loads(sch.to_json())
    for c in d["columns"]:
        c.pop("within", None)
    old = Schema.from_dict(d)
    assert all(c.within is None for c in old.columns)
    codes = pd.DataFrame({"income": [0, 1], "age": [0, 1], "gain": [0, 1]})
    assert old.decode(codes, rng=np.random.default_rng(0)).equals(old.decode(codes))


def test_a_release_listing_too_many_within_numbers_is_refused_before_parsing(rel, tmp_path):
    base = rel.save(tmp_path / "r.release")

    def edit(doc):
        col = doc["schema"]["columns"][0]
        col["within"]["bins"] = [{"cuts": [], "weights": [1] * 250_001}] * 4

    bad = edit_doc(base, tmp_path / "big.release", edit)
    with pytest.raises(Exception, match="listed levels") as exc:
        Release.load(bad)
    assert type(exc.value).__name__ == "ReleaseFileError"


def test_drawn_values_keep_three_significant_digits_of_their_bin_width():
    """A drawn value carries no detail finer than the bin allows: rounded to three significant
    digits of its bin's width, and still inside its bin."""
    from ddssp.data.drawing import round_in_bin

    rng = np.random.default_rng(0)
    for a, b in [(3.16228, 14.7143), (0.001, 0.0042), (1000.0, 98000.0), (-5.5, -5.25)]:
        x = a + (b - a) * rng.random(2000)
        y = round_in_bin(x, a, b)
        d = 2 - int(np.floor(np.log10(b - a)))
        assert np.all((y >= a) & (y < b))
        np.testing.assert_allclose(y * 10.0**d, np.round(y * 10.0**d), atol=1e-6)
        assert np.abs(y - x).max() <= 10.0**-d


def _uniform_tv(col_within, grid, a, b):
    """Total variation between a bin's within shares and uniform spreading over its width."""
    cuts, w = col_within
    width = np.diff(np.concatenate([[a], cuts, [b]]))
    return 0.5 * float(np.abs(np.asarray(w) / np.sum(w) - width / width.sum()).sum())


def test_within_shares_fall_back_to_uniform_when_the_counts_are_noise():
    """A bin of 250 rows spread evenly over 64 grid cells, each counted with noise sd 45 (about a
    1,000-row table at eps 1): the noisy counts are mostly noise, and the shares are uniform by
    width in about 9 draws of 10, close to it in the others (raw noisy counts clipped at zero were
    0.27 from uniform in total variation, on average, and never uniform)."""
    rng = np.random.default_rng(0)
    grid = np.arange(0.0, 65.0)
    tv = []
    for _ in range(50):
        y = np.round(rng.multinomial(250, np.full(64, 1 / 64)) + rng.normal(0, 45.0, 64))
        tv.append(_uniform_tv(bins.within_bin(grid, y, 0.0, 64.0, 45.0), grid, 0.0, 64.0))
    assert np.mean(np.array(tv) < 1e-4) >= 0.8 and np.mean(tv) < 0.05


def test_within_shares_keep_structure_that_stands_above_the_noise():
    """A spike and a slope far above the noise stay in the shares."""
    rng = np.random.default_rng(1)
    grid = np.arange(0.0, 17.0)
    spike = np.full(16, 50.0)
    spike[5] = 3000.0
    slope = np.linspace(400.0, 20.0, 16)
    for true in (spike, slope):
        y = true + rng.normal(0, 10.0, 16)
        cuts, w = bins.within_bin(grid, y, 0.0, 16.0, 10.0)
        assert 0.5 * np.abs(np.asarray(w) - true / true.sum()).sum() < 0.05
