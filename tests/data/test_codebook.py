"""Public knowledge per column (ddssp.data.codebook): the dictionary readers, the hints' columns, and
what declared columns and declared bounds cost in discovery."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Column, Schema
from ddssp.data.codebook import Codebook, ColumnHint, parse_bounds, parse_levels, parse_missing
from ddssp.data.dictionary import from_frictionless, from_nist, load_codebook
from ddssp.dp.noise import InsecureSeededNoise
from ddssp.errors import DDSSPError, SchemaError
from ddssp.pipeline import DiscoveryOptions, plan_schema
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.filterwarnings("ignore::ddssp.data.encoding.ClipWarning")

NIST = {
    "PUMA": {"description": "area", "values": {"25-00503": "A", "25-00703": "B", "48-02101": "C"}},
    "AGEP": {"description": "age", "values": {"min": 0, "max": 99}},
    "MSP": {"values": {"N": "N/A (under 15)", "1": "married", "2": "absent", "6": "never"}},
    "NOC": {"values": {"N": "N/A", "0": "no children", "min": 1, "max": 19}},
    "POVPIP": {"values": {"N": "N/A", "min": 0, "max": 500, "501": "above 5x"}},
    "DENSITY": {"values": {"min": 16.3, "max": 52864.7}},
    "INDP": {"description": "industry"},
}

FRICTIONLESS = {
    "fields": [
        {"name": "sex", "type": "string", "constraints": {"enum": ["Male", "Female"], "required": True}},
        {"name": "age", "type": "integer", "constraints": {"minimum": 0, "maximum": 120}},
        {"name": "kids", "type": "integer", "constraints": {"minimum": 0, "maximum": 9, "required": True}},
        {"name": "income", "type": "number", "constraints": {"minimum": 0, "maximum": 1e6}},
        {"name": "grade", "type": "integer", "constraints": {"enum": [1, 2, 3]}},
        {"name": "day", "type": "date"},
        {"name": "city", "type": "string"},
        {"name": "blob", "type": "object"},
    ],
    "missingValues": ["", "NA"],
}


def _plan(df, hints, schema=None, eps=2.0, **kw):
    noise = InsecureSeededNoise(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plan_schema(df, schema, eps=eps, delta=1e-6, discovery=DiscoveryOptions(hints=hints, **kw), noise=noise)


def _table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "sex": rng.choice(["Male", "Female"], n),
            "age": rng.integers(0, 90, n).astype(float),
            "income": np.round(rng.lognormal(10, 1, n), 2),
            "msp": rng.choice(["1", "2", "6", "N"], n),
        }
    )


# ------------------------------------------------------------------------------- readers
def test_nist_codes_and_ranges_map_to_hints():
    book = from_nist(NIST)
    puma, age, msp, noc, pov, dens, indp = (book.get(n) for n in NIST)
    assert puma.kind == "categorical" and puma.levels == ("25-00503", "25-00703", "48-02101") and puma.missing is None
    assert age.bounds == (0.0, 99.0) and age.whole is True and age.column() is None  # 100 values: bins
    assert msp.levels == ("1", "2", "6") and msp.missing == "N"
    assert msp.column().labels == ["1", "2", "6", "N"] and msp.column().missing == "N"
    # N, 0 and then 1..19: whole numbers 0..19 as levels, N the missing level
    assert noc.bounds == (0.0, 19.0) and noc.missing == "N"
    col = noc.column()
    assert col.kind == "numeric" and col.labels == [str(i) for i in range(20)] + ["N"]
    # N, 0..500 and the special code 501: bounds widened to 501, binned by discovery
    assert pov.bounds == (0.0, 501.0) and pov.missing == "N" and pov.whole and pov.column() is None
    assert dens.bounds == (16.3, 52864.7) and dens.whole is False
    assert indp.kind is None and indp.levels is None and indp.bounds is None and indp.description == "industry"


def test_frictionless_fields_map_to_hints():
    book = from_frictionless(FRICTIONLESS)
    assert book.get("sex").column().labels == ["Male", "Female"]  # required: no missing level
    age = book.get("age")
    assert age.bounds == (0.0, 120.0) and age.whole and age.missing == "NA"
    kids = book.get("kids").column()
    assert kids.labels == [str(i) for i in range(10)] and kids.missing is None
    inc = book.get("income")
    assert inc.bounds == (0.0, 1e6) and inc.whole is None and inc.column() is None
    assert book.get("grade").column().labels == ["1", "2", "3", "NA"]
    assert book.get("day").kind == "dates" and book.get("city").kind == "categorical"
    assert "blob" not in book


def test_frictionless_v2_categories_are_levels():
    fields = [
        {"name": "a", "type": "integer", "categories": [{"value": 1, "label": "yes"}, {"value": 2, "label": "no"}]},
        {"name": "b", "type": "string", "categories": ["x", "y"], "constraints": {"required": True}},
    ]
    book = from_frictionless({"fields": fields})
    assert book.get("a").levels == ("1", "2") and book.get("b").column().labels == ["x", "y"]
    with pytest.raises(SchemaError, match='"categories" must be'):
        from_frictionless({"fields": [{"name": "c", "categories": [{"label": "no value"}]}]})


def test_frictionless_without_markers_gives_empty_cells_a_missing_level():
    book = from_frictionless({"fields": [{"name": "g", "constraints": {"enum": ["a", "b"]}}]})
    col = book.get("g").column()
    assert col.labels == ["a", "b", "<missing>"]
    out = Schema([col]).decode(np.array([[2]]))
    assert out["g"].isna().all()  # written back as an empty cell


def test_codebook_file_round_trip(tmp_path):
    book = from_nist(NIST)
    p = tmp_path / "cb.json"
    p.write_text(book.to_json())
    again = load_codebook(p)
    assert [h.to_dict() for h in again.hints] == [h.to_dict() for h in book.hints]
    assert json.loads(p.read_text())["format"] == "ddssp-codebook/1"


def test_load_codebook_detects_each_format(tmp_path):
    for name, d in (("n.json", NIST), ("f.json", FRICTIONLESS)):
        (tmp_path / name).write_text(json.dumps(d))
    assert load_codebook(tmp_path / "n.json").get("NOC").missing == "N"
    assert load_codebook(tmp_path / "f.json").get("sex").levels == ("Male", "Female")


@pytest.mark.parametrize(
    "text, match",
    [
        ("{not json", "not valid JSON"),
        ('{"a": 3}', "none of the formats"),
        ('{"fields": [{"type": "string"}]}', 'with a "name"'),
        ('{"fields": [{"name": "a", "constraints": {"enum": []}}]}', "enum"),
        ('{"a": {"values": {"min": 5, "max": 1}}}', "min < max"),
        ('{"a": {"values": {"min": 5}}}', '"min" and "max"'),
        ('{"format": "ddssp-codebook/1", "columns": [{"name": "a", "bounds": [1]}]}', "bounds"),
        ('{"format": "ddssp-codebook/1", "columns": [{"name": "a", "colour": 1}]}', "unknown keys"),
        ('{"format": "ddssp-codebook/1", "columns": [{"name": "a", "levels": ["x", "x"]}]}', "duplicate"),
    ],
)
def test_bad_dictionaries_are_refused_in_one_line(tmp_path, text, match):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(SchemaError, match=match) as exc:
        load_codebook(p)
    assert "\n" not in str(exc.value)


def test_missing_codebook_file(tmp_path):
    with pytest.raises(SchemaError, match="not found"):
        load_codebook(tmp_path / "nope.json")


# ------------------------------------------------------------------------------- flags
def test_flag_syntax():
    (a, b) = parse_bounds(["age=0:120,income=-5:1e6"])
    assert (a.name, a.bounds, b.name, b.bounds) == ("age", (0.0, 120.0), "income", (-5.0, 1e6))
    (lv,) = parse_levels(["sex=Male, Female"])
    assert lv.levels == ("Male", "Female") and lv.source == "--levels"
    (m,) = parse_missing(["msp=N"])
    assert m.missing == "N"


@pytest.mark.parametrize(
    "parse, text, match",
    [
        (parse_bounds, "age", "--bounds: expected COLUMN="),
        (parse_bounds, "age=0-120", "--bounds: expected COLUMN=LOW:HIGH"),
        (parse_bounds, "age=a:b", "--bounds: expected COLUMN=LOW:HIGH"),
        (parse_bounds, "age=5:1", "--bounds 'age': bounds must be finite with low < high"),
        (parse_bounds, "age=0:inf", "--bounds 'age': bounds must be finite"),
        (parse_levels, "sex=", "--levels: expected COLUMN=A,B"),
        (parse_levels, "=a,b", "--levels: expected COLUMN="),
        (parse_levels, "sex=a,a", "--levels 'sex': duplicate levels"),
        (parse_missing, "msp=", "--missing: expected COLUMN=LABEL"),
    ],
)
def test_bad_flag_values_name_the_flag(parse, text, match):
    with pytest.raises(SchemaError, match=match):
        parse([text])


def test_flags_win_over_a_dictionary_column_by_column():
    book = from_nist(NIST) + Codebook(tuple(parse_bounds(["NOC=0:50"]) + parse_levels(["AGEP=young,old"])))
    assert book.get("NOC").bounds == (0.0, 50.0) and book.get("NOC").missing == "N"
    assert book.get("AGEP").levels == ("young", "old") and book.get("AGEP").bounds is None


def test_hints_option_type_is_checked():
    with pytest.raises(DDSSPError, match="DiscoveryOptions.hints"):
        DiscoveryOptions(hints="age=0:9")


# ------------------------------------------------------------------------------- costs
def test_columns_declared_by_hints_cost_nothing():
    df = _table()
    hints = parse_levels(["sex=Male,Female"]) + [ColumnHint("msp", levels=("1", "2", "6"), missing="N")]
    plan = _plan(df, hints)
    assert plan.schema.column("sex").labels == ["Male", "Female"]  # the declared labels, exactly
    assert plan.schema.column("msp").labels == ["1", "2", "6", "N"]
    charged = {e.clique[0] for e in plan.ledger.discovery_entries}
    assert "sex" not in charged and "msp" not in charged
    assert {"age", "income"} <= charged
    assert sorted(plan.discovered) == ["age", "income"]


def test_every_column_declared_by_hints_spends_nothing():
    df = _table()[["sex", "age"]]
    hints = parse_levels(["sex=Male,Female"]) + [ColumnHint("age", bounds=(0, 30), whole=True)]
    plan = _plan(df, hints)
    assert plan.ledger.discovery_entries == [] and plan.ledger.entries == []
    assert plan.discovered == []
    assert plan.schema.column("age").labels == [str(i) for i in range(31)]
    enc = plan.schema.encode(df)  # ages above 30 clip to the declared top
    assert enc["age"].max() == 30


def test_declared_bounds_are_honoured_without_a_range_search():
    df = _table(n=2000)
    plan = _plan(df, parse_bounds(["income=0:200000"]) + parse_levels(["sex=Male,Female", "msp=1,2,6,N"]))
    col = plan.schema.column("income")
    assert col.is_binned and col.bounds == (0.0, 200000.0)
    assert col.edges[0] == 0.0 and col.edges[-1] == 200000.0 and len(col.edges) > 2
    notes = [e.note for e in plan.ledger.discovery_entries if e.clique == ("income",) and "row count" not in e.note]
    assert len(notes) == 2 and not any("scan" in n or "coarse" in n for n in notes), notes
    big = pd.DataFrame({c: df[c].iloc[:2] for c in df.columns}).assign(income=[-50.0, 5e9])
    codes = plan.schema.encode(big)["income"].to_numpy()
    assert codes[0] == 0 and codes[1] == col.size - 1 - (col.missing is not None)  # clipped as declared


def test_declared_missing_marker_of_a_bounded_column():
    df = _table(n=1000)[["age"]]
    df["age"] = df["age"].astype(object)
    df.loc[::4, "age"] = "N"
    plan = _plan(df, [ColumnHint("age", bounds=(0, 120), missing="N")])
    col = plan.schema.column("age")
    assert col.missing == "N" and col.bounds == (0.0, 120.0)
    codes = plan.schema.encode(df)["age"].to_numpy()
    assert (codes[::4] == col.missing_code).all()


def test_a_declared_missing_marker_labels_a_discovered_missing_level():
    df = _table(n=1500)[["msp"]]
    plan = _plan(df, parse_missing(["msp=N"]))
    col = plan.schema.column("msp")
    assert "N" in col.labels and "<missing>" not in col.labels
    codes = plan.schema.encode(df)["msp"].to_numpy()
    assert (codes[(df["msp"] == "N").to_numpy()] == col.labels.index("N")).all()
    with pytest.raises(SchemaError, match="mixes numbers and text"):  # without the marker, N is text
        _plan(df, [])


def test_hint_kind_is_used_by_discovery():
    df = pd.DataFrame({"code": np.random.default_rng(1).choice([1, 2, 3], 800)})
    plan = _plan(df, [ColumnHint("code", kind="categorical")])
    assert plan.schema.column("code").kind == "categorical"


def test_bounds_on_a_column_declared_categorical_are_refused():
    with pytest.raises(SchemaError, match="--bounds 'age': bounds declare a numeric column"):
        _plan(_table(), parse_bounds(["age=0:9"]), categorical=["age"])


def test_unknown_column_in_a_hint_by_hand_is_refused():
    with pytest.raises(SchemaError, match="--bounds 'agee'"):
        _plan(_table(), parse_bounds(["agee=0:9"]))


def test_a_dictionary_may_name_columns_the_data_lacks():
    df = _table()[["sex"]].rename(columns={"sex": "SEX"})
    df["SEX"] = df["SEX"].map({"Male": "1", "Female": "2"})
    book = from_nist({**NIST, "SEX": {"values": {"1": "Male", "2": "Female"}}})
    plan = _plan(df, book)
    assert plan.schema.column("SEX").labels == ["1", "2"] and plan.ledger.entries == []


def test_a_schema_column_wins_over_a_dictionary_and_refuses_a_flag():
    df = _table()
    schema = Schema([Column.categorical("sex", ["Female", "Male", "Other"])])
    plan = _plan(df, [ColumnHint("sex", levels=("Male", "Female"), strict=False)], schema=schema)
    assert plan.schema.column("sex").labels == ["Female", "Male", "Other"]
    with pytest.raises(SchemaError, match="--levels 'sex': the column is declared in the schema"):
        _plan(df, parse_levels(["sex=Male,Female"]), schema=schema)


@pytest.mark.slow
def test_the_nist_dictionary_maps_sensibly():
    path = SHARED_DATA / "nist" / "data_dictionary.json"
    if not path.exists():
        pytest.skip(f"NIST dictionary not found at {path}")
    book = load_codebook(path)
    noc, pov, puma = book.get("NOC"), book.get("POVPIP"), book.get("PUMA")
    assert noc.column().labels == [str(i) for i in range(20)] + ["N"]
    assert pov.bounds == (0.0, 501.0) and pov.missing == "N" and pov.column() is None
    assert puma.column().labels == list(json.loads(path.read_text())["PUMA"]["values"])
    assert book.get("INDP").bounds is None and book.get("INDP").levels is None


@pytest.mark.parametrize(
    "lo, hi, whole",
    [(-9000, 1341000, True), (0, 99, True), (16.3, 52864.7, False), (0, 1e6, False), (-5, 5, False), (2, 20, True)],
)
def test_bounded_grid_spans_the_declared_bounds(lo, hi, whole):
    from ddssp.data.discovery.bounded import bounded_grid

    g = bounded_grid(lo, hi, 256, whole)
    assert g[0] == lo and g[-1] == hi and np.all(np.diff(g) > 0)
    if whole:
        assert np.all(g == np.round(g))
    if hi / (lo if lo > 0 else max(-lo, 1e-9)) > 50:  # decades: fine cells at the low end, not 1/256 of the range
        assert np.min(np.diff(g)) <= max((hi - lo) / 1000, 1.0 if whole else 0.0)


def test_fractional_declared_bounds_are_never_read_as_whole_numbers():
    # 60 rows of non-whole numbers inside bounds with a fractional low end: at this budget the noisy
    # count of non-whole numbers stays under twice its noise sd, which alone would read the column
    # as whole, and a whole-number grid from 143.5 has a cell [143.5, 144) that holds no whole number
    from ddssp.data.discovery.bounded import discover_bounded
    from ddssp.dp import Ledger
    from ddssp.dp.discovery import ChargedMechanisms

    x = np.random.default_rng(0).uniform(143.5, 2501.0, 60).round(1)
    for seed in range(5):
        mech = ChargedMechanisms(Ledger(1.0), InsecureSeededNoise(seed))
        col, note = discover_bounded(x, "area", 1e-4, mech, (143.5, 2501.0))
        col.validate()
        assert "whole" not in note and col.within is not None and not col.within.whole


# ------------------------------------------------------------- whole-number ranges as levels
@pytest.mark.parametrize("hi, levels", [(31, True), (32, False)])
def test_a_whole_number_range_of_few_values_is_one_level_per_number(hi, levels):
    # 32 whole numbers (0..31) are levels, one per number; 33 are left to discovery's bins
    col = ColumnHint("kids", bounds=(0, hi), whole=True, missing="N").column()
    if not levels:
        assert col is None
        return
    assert col.kind == "numeric" and col.edges is None and col.within is None
    assert col.labels == [str(i) for i in range(hi + 1)] + ["N"]
    assert list(col.values[:-1]) == list(range(hi + 1))
    out = Schema([col]).decode(np.arange(hi + 2).reshape(-1, 1))["kids"]
    assert list(out[:-1]) == list(range(hi + 1)) and pd.isna(out.iloc[-1])  # each code one whole number


def _measurement(clique, values, sigma, rnd=0):
    from ddssp.marginals.aim import Measurement

    return Measurement(tuple(clique), float(sigma), np.asarray(values, dtype=float), rnd)


def test_range_levels_that_the_noisy_counts_do_not_show_are_marked_empty():
    from ddssp.releasefile.conditions import RANGE_LEVEL_SHOW_SDS, range_levels_empty_from_measurements

    col = ColumnHint("kids", bounds=(0, 5), whole=True, missing="N").column()
    schema = Schema([col, Column.categorical("sex", ["a", "b"])])
    # one-way counts, sigma 10: levels 0..2 show, 3 sits at 1.5 sds, 4 and 5 read below zero, N (the
    # declared missing code) reads 0 and is not a level of the range
    one = _measurement(["kids"], [500, 200, 40, 15, -8, -3, 0], 10.0)
    # a pair with sigma 10 over 2 cells a level: the combined count of level 3 is
    # (15 / 100 + 16 / 200) / (1 / 100 + 1 / 200) = 15.33, sd 8.16: under 2 sds
    two = _measurement(["sex", "kids"], [[250, 100, 20, 8, 0, 0, 0], [250, 100, 20, 8, 0, 0, 0]], 10.0)
    marked = range_levels_empty_from_measurements(schema, [one, two], ["kids"])
    assert RANGE_LEVEL_SHOW_SDS == 2.0
    assert marked == {"kids": ["3", "4", "5"]} and schema.column("kids").empty == ("3", "4", "5")
    # a level the counts show (level 2: 40 alone is 4 sds) is kept; so is one when none shows
    lone = Schema([ColumnHint("kids", bounds=(0, 2), whole=True).column()])
    assert range_levels_empty_from_measurements(lone, [_measurement(["kids"], [3, 9, -2], 10.0)], ["kids"]) == {
        "kids": ["0", "2"]
    }
    assert lone.column("kids").empty == ("0", "2")
    # a column no measurement holds, or not named, is left alone
    other = Schema([ColumnHint("kids", bounds=(0, 2), whole=True).column()])
    assert range_levels_empty_from_measurements(other, [_measurement(["sex"], [5, 5], 1.0)], ["kids"]) == {}
    assert range_levels_empty_from_measurements(schema, [one], []) == {}
