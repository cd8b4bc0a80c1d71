"""The notebook path: top-level names, a quiet-but-informative release, ``sample``, a useful repr."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import ddssp
from ddssp.data.encoding import ClipWarning
from ddssp.estimators import IntervalOptions
from ddssp.progress import PhaseProgress


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 3000
    age = rng.normal(40, 12, n).round()
    age[:40] = 500  # far outside what discovery will find: clipped, with a local note
    return pd.DataFrame(
        {
            "age": age,
            "group": rng.choice(["a", "b", "c"], n),
            "y": (rng.random(n) < 0.3).astype(int),
        }
    )


def test_top_level_names_are_lazy():
    code = (
        "import sys, ddssp\n"
        "names = ['release', 'Release', 'DDSSPLinearRegression', 'DDSSPLogisticRegression', 'evaluate']\n"
        "assert all(n in ddssp.__all__ for n in names)\n"
        "heavy = [m for m in ('jax', 'opendp', 'duckdb', 'matplotlib') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
    from ddssp.evaluation import evaluate

    assert ddssp.DDSSPLinearRegression is DDSSPLinearRegression
    assert ddssp.DDSSPLogisticRegression is DDSSPLogisticRegression
    assert ddssp.evaluate is evaluate


def test_release_warns_once_in_one_line(frame):
    shown = io.StringIO()

    def show(message, category, filename, lineno, file=None, line=None):
        shown.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        rel = ddssp.release(frame, eps=2.0, seed=0, progress=False, aim=ddssp.AimOptions(rounds=20))
    lines = [ln for ln in shown.getvalue().splitlines() if ln]
    clips = [ln for ln in lines if ln.startswith("ClipWarning: column 'age'")]
    assert len(clips) == 1, lines  # once, one line, no file:line prefix, no source line
    assert "(discovered under DP)" in clips[0] and "declared" not in clips[0]
    assert all(not ln.startswith(" ") for ln in lines)
    assert warnings.formatwarning is warnings._formatwarning_orig  # restored for other libraries
    assert rel.eps == 2.0


def test_declared_range_is_called_declared(frame):
    schema = ddssp.Schema.from_dict(
        {
            "format": "ddssp-schema/1",
            "columns": [
                {"name": "age", "kind": "numeric", "edges": [0, 20, 40, 60, 80, 100], "bounds": [0, 100]},
                {"name": "group", "kind": "categorical", "levels": ["a", "b", "c"]},
                {"name": "y", "kind": "numeric", "values": [0, 1], "bounds": [0, 1]},
            ],
        }
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ddssp.release(frame, schema, eps=1.0, seed=0, progress=False, aim=ddssp.AimOptions(rounds=20))
    clip = [str(w.message) for w in caught if issubclass(w.category, ClipWarning)]
    assert len(clip) == 1 and "(declared)" in clip[0]


def test_progress_auto_is_silent_off_a_terminal(frame, capfd):
    ddssp.release(frame[["group", "y"]], eps=1.0, seed=0, aim=ddssp.AimOptions(rounds=20))
    assert capfd.readouterr().err == ""  # stderr is not a terminal here: nothing drawn


def test_progress_forced_on():
    log = io.StringIO()
    p = PhaseProgress(log, live=True)
    p.start("reading")
    p.close()
    assert "reading" in log.getvalue()
    q = PhaseProgress(io.StringIO(), live=False, verbose=False)
    assert not q.live


def test_sample_is_synthesize_and_repr_is_short(frame):
    rel = ddssp.release(frame[["group", "y"]], eps=1.0, seed=0, progress=False, aim=ddssp.AimOptions(rounds=20))
    a, b = rel.sample(200, seed=3), rel.synthesize(200, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert list(a.columns) == ["group", "y"] and len(a) == 200
    r = repr(rel)
    assert r.startswith("<ddssp Release: eps=1") and len(r) < 200 and "values=" not in r


def test_fit_with_ci_in_one_call_and_unmeasured_pairs_flagged():
    rng = np.random.default_rng(5)
    n = 4000
    x = rng.integers(0, 3, n)
    frame = pd.DataFrame(
        {
            "x": np.array(["a", "b", "c"])[x],
            "noise1": rng.choice(["p", "q"], n),
            "noise2": rng.choice(["u", "v", "w"], n),
            "y": (rng.random(n) < 0.2 + 0.25 * x).astype(int),
        }
    )
    # the 0/1 target declared categorical: released as its two labels (discovered as a number, noise
    # can rarely give it an empty third level)
    rel = ddssp.release(
        frame,
        eps=1.0,
        seed=0,
        progress=False,
        discovery=ddssp.DiscoveryOptions(categorical=["y"]),
        aim=ddssp.AimOptions(rounds=16),
    )
    clf = ddssp.DDSSPLogisticRegression(ci=0.9, intervals=IntervalOptions(boot=5, seed=1)).fit(rel, target="y")
    tab = clf.coef_table()
    assert {"coef", "unit", "coef_scaled", "measured", "stderr", "ci_low", "ci_high"} <= set(tab.columns)
    measured = {frozenset(m.clique) for m in rel.measurements}
    for name, row in tab.iloc[1:].iterrows():
        col = name.split("=", 1)[0]
        assert row["measured"] == any({col, "y"} <= m for m in measured)
        if row["basis"] == "empty":  # a level the release marks empty: not estimable, no interval
            assert np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
        elif row["measured"]:
            assert row["ci_low"] <= row["coef"] <= row["ci_high"]
    # interval options belong to the constructor: fit(..., ci=, boot=) says how to give them
    with pytest.raises(
        ddssp.DDSSPError, match=r"DDSSPLogisticRegression\(ci=0.9, intervals=IntervalOptions\(boot=5\)\)"
    ):
        ddssp.DDSSPLogisticRegression().fit(rel, target="y", ci=0.9, boot=5)
    with pytest.raises(ddssp.DDSSPError, match="ci=0.95"):
        ddssp.DDSSPLogisticRegression(intervals=IntervalOptions(boot=5)).fit(rel, target="y")


def test_warnings_once_shows_every_kind_of_warning(capsys):
    """Warnings of any category pass through (a UserWarning raised inside ddssp, another library's
    warning), each distinct one once."""
    from ddssp._warnings import warnings_once

    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        with warnings_once():
            for _ in range(3):
                warnings.warn("plain user warning", UserWarning, stacklevel=1)
            warnings.warn("a deprecation", DeprecationWarning, stacklevel=1)
    assert sorted(str(w.message) for w in outer) == ["a deprecation", "plain user warning"]


def test_clipping_notes_of_many_columns_are_one_warning():
    """A wide table clipped in many columns gets one note naming each column with its count; a few
    columns keep a note each."""
    from ddssp._warnings import warnings_once
    from ddssp.data import ClipWarning

    for count, expected in ((6, 1), (3, 3)):
        with warnings.catch_warnings(record=True) as outer:
            warnings.simplefilter("always")
            with warnings_once():
                for j in range(count):
                    warnings.warn(ClipWarning(f"x{j}", j + 1, "0", "1", 100, "discovered under DP"), stacklevel=1)
                warnings.warn("another note", UserWarning, stacklevel=1)
        clip = [str(w.message) for w in outer if w.category is ClipWarning]
        assert len(clip) == expected, clip
        assert (
            sum(
                f"'x{j}' {j + 1} of 100" in " ".join(clip) or f"column 'x{j}': {j + 1} of" in " ".join(clip)
                for j in range(count)
            )
            == count
        )
        assert [str(w.message) for w in outer if w.category is UserWarning] == ["another note"]
        if expected == 1:
            assert "(discovered under DP) were clipped to it in 6 columns" in clip[0]
        notes = [w.message for w in outer if w.category is ClipWarning]
        assert sorted((p.column, p.clipped, p.total) for n in notes for p in n.parts) == [
            (f"x{j}", j + 1, 100) for j in range(count)
        ]


def test_clipping_notes_of_a_sql_backend_are_merged_too(tmp_path):
    """The notes DuckDB gives (of a table read from disk) merge like those of a DataFrame: they say
    how many of how many rows, and name their column and range in fields."""
    from ddssp.data import Column, Schema

    rng = np.random.default_rng(1)
    names = ["a", "b", "c", "d"]
    table = pd.DataFrame({n: rng.integers(0, 10, 60) for n in names})
    for j, n in enumerate(names):
        table.loc[:j, n] = 50  # j + 1 rows above the range
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    schema = Schema([Column.binned(n, [0, 5, 10]) for n in names])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ddssp.release(
            path,
            schema,
            eps=1.0,
            seed=0,
            progress=False,
            read=ddssp.ReadOptions(backend="duckdb"),
            aim=ddssp.AimOptions(rounds=8),
        )
    clip = [w.message for w in caught if issubclass(w.category, ClipWarning)]
    assert len(clip) == 1, [str(m) for m in clip]
    assert "(declared) were clipped to it in 4 columns" in str(clip[0])
    assert all(f"{n!r} {j + 1} of 60 to [0, 10]" in str(clip[0]) for j, n in enumerate(names))
    assert [(p.column, p.clipped, p.total, p.lo, p.hi) for p in clip[0].parts] == [
        (n, j + 1, 60, "0", "10") for j, n in enumerate(names)
    ]
