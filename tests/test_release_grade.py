"""A release grades itself from its noisy outputs alone (:mod:`ddssp.releasefile.quality`)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ddssp.data import Column, Schema
from ddssp.errors import ReleaseFileError
from ddssp.pipeline import AimOptions, ReadOptions, release
from ddssp.releasefile import Release
from ddssp.releasefile.quality import (
    SECTION,
    WEAK_CLIPPED,
    WEAK_ERROR,
    WEAK_UNCHECKED,
    WeakReleaseWarning,
    problems,
)
from tests.hostile import _rehash, members, one_line_refusal, write_members


def _raw(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "grp": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "x": np.round(rng.gamma(3.0, 10.0, n), 1),
        }
    )


@pytest.fixture(scope="module")
def discovered() -> Release:
    """A release whose two columns were discovered under DP (it records discovery evidence)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release(_raw(600), eps=4.0, insecure_seed=3, seed=1, aim=AimOptions(rounds=4), progress=False)


def test_grade_reads_nothing_but_the_release(discovered):
    # the release rebuilt from its document alone (no data anywhere) grades the same: the grade is a
    # function of the noisy outputs, schema and ledger the file holds
    doc, arrays = discovered.to_document()
    assert SECTION in doc
    again = Release.from_document(json.loads(json.dumps(doc)), arrays)
    assert again.grade().to_dict() == discovered.grade().to_dict()
    # ... and a change of one noisy value changes it (the grade does read them)
    doc2 = json.loads(json.dumps(doc))
    doc2[SECTION]["clipped"]["x"] = [0.5, 0.0, 0.01, 0.01]
    changed = Release.from_document(doc2, arrays).grade()
    assert changed.columns["x"].clipped == (0.5, 0.0) and "x" in changed.weak


def test_grade_fields(discovered):
    g = discovered.grade()
    x, grp = g.columns["x"], g.columns["grp"]
    assert x.source == grp.source == "discovered"
    assert x.clip_source == "estimated" and len(x.clipped) == 2 and all(0 <= v <= 1 for v in x.clipped)
    assert grp.folded is not None and 0 <= grp.folded <= 1
    for c in (x, grp):
        assert c.measured == "one-way"
        # expected TV error of the one-way from noise: sqrt(2/pi)/2 * cells * sd / n
        assert c.error == pytest.approx(np.sqrt(2 / np.pi) / 2 * c.size * c.sd / g.rows)
    assert len(g.pairs) == 1


def _declared_release(values, n: int, eps: float, seed: int = 0):
    """A release of a declared schema: a binned x on [0, 10] and a categorical g; returns it and the
    warnings it raised."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": values(rng, n), "g": rng.choice(["u", "v", "w"], n)})
    schema = Schema([Column.binned("x", [0, 2, 5, 8, 10]), Column.categorical("g", ["u", "v", "w"])])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rel = release(df, schema, eps=eps, insecure_seed=seed, seed=seed, aim=AimOptions(rounds=4), progress=False)
    return rel, [w for w in caught if issubclass(w.category, WeakReleaseWarning)]


def test_all_rows_clipped_by_a_tiny_declared_range_is_flagged_and_warned():
    # every value is 50, the declared range [0, 10]: all rows clip into the top bin
    rel, weak = _declared_release(lambda rng, n: np.full(n, 50.0), 400, eps=4.0)
    g = rel.grade().columns["x"]
    assert g.clip_source == "declared" and g.end_bin > 0.9
    assert "x" in rel.grade().weak
    assert any("clipped into the end bins of 'x'" in str(w.message) for w in weak)
    assert any("DiscoveryOptions.hints bounds" in p for p in problems(rel.grade()))


def test_a_strong_column_at_large_n_is_not_flagged():
    rel, weak = _declared_release(lambda rng, n: rng.uniform(0, 10, n), 20_000, eps=1.0)
    gr = rel.grade()
    assert gr.weak == [] and weak == []
    for c in gr.columns.values():
        assert c.error < WEAK_ERROR / 5
    assert gr.columns["x"].end_bin < 0.5


def test_noise_swamping_a_one_way_is_flagged():
    # 40 rows at eps 0.05: the one-way marginals are mostly noise
    rel, weak = _declared_release(lambda rng, n: rng.uniform(0, 10, n), 40, eps=0.05)
    assert all(c.error > WEAK_ERROR for c in rel.grade().columns.values())
    assert any("noise swamps" in str(w.message) and "a larger eps" in str(w.message) for w in weak)


def test_release_without_the_section_loads(tmp_path):
    # a declared schema records no evidence: its document has no section, like files of older versions
    rel, _ = _declared_release(lambda rng, n: rng.uniform(0, 10, n), 300, eps=2.0)
    doc, arrays = rel.to_document()
    assert SECTION not in doc
    again = Release.from_document(doc, arrays)
    assert again.evidence == {} and again.grade().columns["x"].clip_source == "declared"
    path = rel.save(tmp_path / "old.release")
    assert Release.load(path).grade().to_dict() == rel.grade().to_dict()


@pytest.mark.parametrize(
    "section, match",
    [
        ([1, 2], "must be an object"),
        ({"clipped": {}, "other": 1}, "must be an object"),
        ({"clipped": {"x": [2.0, 0.0, 0.1, 0.1]}}, "two shares in [0, 1]"),
        ({"clipped": {"x": [0.1, 0.0, -1, 0.1]}}, "two shares in [0, 1]"),
        ({"clipped": {"x": [0.1, 0.0]}}, "four numbers"),
        ({"clipped": {"x": [True, 0.0, 0.1, 0.1]}}, "four numbers"),
        ({"clipped": {"nope": [0.1, 0.0, 0.1, 0.1]}}, "the schema does not hold"),
        ({"clipped": {"x": "0.1"}}, "four numbers"),
        ({"dropped": {"x": "why"}}, "left out"),
        ({"dropped": ["x"]}, "left out"),
    ],
)
def test_hostile_section_is_refused_with_one_line(discovered, section, match):
    doc, arrays = discovered.to_document()
    doc[SECTION] = section
    with pytest.raises(ReleaseFileError, match="release content is invalid") as exc:
        Release.from_document(doc, arrays, source="f.release")
    assert match in str(exc.value) and "\n" not in str(exc.value)


def test_hostile_section_in_a_file_is_refused_by_the_cli(discovered, tmp_path, capsys):
    path = discovered.save(tmp_path / "ok.release")
    m = members(path)
    doc = json.loads(m["release.json"])
    doc[SECTION]["dropped"] = {"grp": "a\nforged second line"}
    m["release.json"] = json.dumps(doc).encode()
    _rehash(m, ["release.json"])
    bad = write_members(m, tmp_path / "bad.release")
    one_line_refusal(bad, capsys, "grade_evidence", argv=("inspect",))


def test_clipped_threshold_needs_the_estimate_to_clear_its_noise(discovered):
    doc, arrays = discovered.to_document()
    doc[SECTION]["clipped"]["x"] = [0.2, 0.0, 0.1, 0.1]  # 20% +- 10%: could be 0, not flagged
    assert not any("clipped" in w for w in Release.from_document(doc, arrays).grade().columns["x"].weak)
    doc[SECTION]["clipped"]["x"] = [WEAK_CLIPPED + 0.03, 0.0, 0.01, 0.01]
    assert any("clipped" in w for w in Release.from_document(doc, arrays).grade().columns["x"].weak)


def test_repr_and_html_name_weak_columns(discovered):
    doc, arrays = discovered.to_document()
    doc[SECTION]["clipped"]["x"] = [0.5, 0.0, 0.01, 0.01]
    rel = Release.from_document(doc, arrays)
    assert "weak columns: x" in repr(rel)
    page = rel._repr_html_()
    assert "<table>" in page and "clipped" in page


def test_inspect_prints_the_grade(discovered, tmp_path, capsys):
    from ddssp.cli import main

    path = discovered.save(tmp_path / "r.release")
    assert main(["inspect", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert "grade (from the noisy outputs only" in out and " of 1 measured" in out
    assert main(["inspect", str(path), "--json"]) == 0
    out, _ = capsys.readouterr()
    grade = json.loads(out)["grade"]
    assert set(grade["columns"]) == {"grp", "x"} and grade["thresholds"]["clipped"] == WEAK_CLIPPED


def test_encoded_release_grades(tmp_path):
    # integer-coded data: no discovery, every range declared
    from tests.test_release import DOMAIN, make_codes

    rel = release(
        make_codes(2000),
        Schema.from_domain(DOMAIN, categorical=["a", "b", "y"]),
        eps=2.0,
        seed=5,
        read=ReadOptions(encoded=True),
        aim=AimOptions(rounds=8),
        progress=False,
    )
    gr = rel.grade()
    assert set(gr.columns) == set(DOMAIN) and gr.dropped == {}
    assert len(gr.pairs) == 6 and all(p.error is None or p.error >= 0 for p in gr.pairs)


def test_evaluate_lists_clipped_folded_and_dropped(discovered):
    from ddssp.evaluation import evaluate
    from ddssp.evaluation.grade import grade_lines

    df = _raw(600).assign(extra=lambda t: t["grp"])
    df.loc[:19, "x"] = 1e6  # 20 of 600 numbers far above any range the release holds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the local clipping note
        res = evaluate(discovered, df).to_dict()["grade"]
        codes = discovered.schema.encode(df[["grp", "x"]])
    x = res["columns"]["x"]
    lo, hi = discovered.schema.column("x").bounds
    assert x["clipped"] == [float(np.mean(df["x"] < lo)), float(np.mean(df["x"] > hi))]
    assert x["clipped"][1] >= 20 / 600 and x["clip_source"] == "estimated"
    # the exact folded share: rows coded to the catch-all level whose cell is not empty
    col = discovered.schema.column("grp")
    want = float(np.mean(codes["grp"].to_numpy() == col.missing_code))
    assert res["columns"]["grp"]["folded"] == pytest.approx(want)
    assert res["dropped"] == {"extra": "not in the release's schema"}
    assert any(line.startswith("dropped columns: extra") for line in grade_lines(res))


def test_cli_warns_of_a_fully_clipped_column(tmp_path, capsys):
    from ddssp.cli import main

    rng = np.random.default_rng(4)
    data, schema = tmp_path / "t.csv", tmp_path / "s.json"
    pd.DataFrame({"x": np.full(300, 50.0), "g": rng.choice(["u", "v"], 300)}).to_csv(data, index=False)
    Schema([Column.binned("x", [0, 2, 5, 10]), Column.categorical("g", ["u", "v"])]).save(schema)
    argv = ["release", data, "--schema", schema, "--eps", "4", "--rounds", "8", "--insecure-seed", "1"]
    assert main([str(a) for a in [*argv, "-o", tmp_path / "t.release"]]) == 0
    err = capsys.readouterr().err
    weak = [ln for ln in err.splitlines() if ln.startswith("ddssp: WARNING: weak release:")]
    assert any("end bins of 'x'" in ln and "--bounds COL=LO:HI" in ln for ln in weak), err
    local = [ln for ln in err.splitlines() if ln.startswith("ddssp: WARNING (local, not released)")]
    assert local and "'x' 100%" in local[0], err


def test_end_bins_emptied_over_real_rows_are_named(discovered):
    # the end-bin rule empties outer bins whose counts do not show rows; under large noise real rows
    # may lie there. The grade names such bins with AIM's noisy share of the rows in them (here three
    # top bins that do hold rows, marked empty by hand), and the release's problems say it
    from ddssp.releasefile.conditions import level_sums

    assert discovered.grade().columns["x"].emptied == []
    doc, arrays = discovered.to_document()
    rel = Release.from_document(json.loads(json.dumps(doc)), arrays)
    col = rel.schema.column("x")
    idx = [i for i in range(col.size) if col.labels[i] != col.missing][-3:]
    col.with_empty([*col.empty, *(col.labels[i] for i in idx)])
    g = rel.grade().columns["x"]
    assert g.emptied == [col.labels[i] for i in idx]
    x, w, _, _ = level_sums("x", col.size, rel.measurements)
    assert g.emptied_share[0] == pytest.approx(float(np.sum(x[idx]) / w) / float(rel.total))
    assert g.emptied_share[1] == pytest.approx(np.sqrt(3 / w) / float(rel.total))
    assert g.emptied_share[0] > WEAK_UNCHECKED
    assert any("no rows drawn in 3 end bin(s)" in w for w in g.weak)
    assert any("draw no synthetic rows in 'x'" in p for p in problems(rel.grade()))


def test_a_declared_missing_level_is_not_a_catch_all():
    # N (not applicable) declared with the levels holds 70% of the rows: it names a value records
    # have, no label was folded into it, and the column is not weak for it; discovery's <other> is
    from ddssp.data.codebook import ColumnHint
    from ddssp.pipeline import DiscoveryOptions

    rng = np.random.default_rng(5)
    n = 3000
    df = pd.DataFrame(
        {"vet": rng.choice(["1", "2", "N"], n, p=[0.1, 0.2, 0.7]), "grp": rng.choice(list("abcdefgh"), n)}
    )
    df.loc[:900, "grp"] = [f"rare{i}" for i in range(901)]  # 30% of labels no key release can show
    hint = ColumnHint("vet", kind="categorical", levels=("1", "2"), missing="N")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(
            df,
            eps=4.0,
            insecure_seed=1,
            seed=1,
            aim=AimOptions(rounds=4),
            progress=False,
            discovery=DiscoveryOptions(hints=[hint]),
        )
    g = rel.grade()
    assert rel.schema.column("vet").missing == "N" and g.columns["vet"].folded is None
    assert "vet" not in g.weak
    assert g.columns["grp"].folded is not None and g.columns["grp"].folded > 0.2 and "grp" in g.weak
