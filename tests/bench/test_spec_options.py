"""The spec settings the benchmark kinds share (:mod:`ddssp.bench.spec_options`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddssp.bench.runner import BenchContext
from ddssp.bench.spec_options import check_keys, read_eps, read_releases, read_sizes, read_trials
from ddssp.errors import WorkloadError


def _ctx(**over) -> BenchContext:
    return BenchContext(spec_path=Path("s.toml"), outdir=Path("."), quiet=True, **over)


def test_eps_comes_from_the_command_line_then_the_spec_then_the_default():
    assert read_eps({"eps": 0.5}, _ctx()) == [0.5]
    assert read_eps({"eps": [1, 2]}, _ctx()) == [1.0, 2.0]
    assert read_eps({"eps": [1, 2]}, _ctx(eps=[3.0])) == [3.0]
    assert read_eps({}, _ctx(), [0.1, 1.0]) == [0.1, 1.0]
    with pytest.raises(WorkloadError, match="needs 'eps'"):
        read_eps({}, _ctx())
    for bad in ([], [1.0, 0.0], [float("inf")], -1.0):
        with pytest.raises(WorkloadError, match="every eps must be positive and finite"):
            read_eps({"eps": bad}, _ctx())
    with pytest.raises(WorkloadError, match="eps must be a list of numbers"):
        read_eps({"eps": ["a"]}, _ctx())


def test_releases_and_sizes_are_checked():
    assert read_releases({}, _ctx(), 3) == 3
    assert read_releases({"releases": 5}, _ctx(), 3) == 5
    assert read_releases({"releases": 5}, _ctx(trials=2), 3) == 2
    with pytest.raises(WorkloadError, match="releases must be >= 1, got 0"):
        read_releases({"releases": 0}, _ctx(), 3)
    assert read_sizes({}, ["full", 100]) == ["full", 100]
    assert read_sizes({"sizes": [10, "full"]}, []) == [10, "full"]
    for bad in ([], [9], [True], "full", [10.0]):
        with pytest.raises(WorkloadError, match="sizes must be a list"):
            read_sizes({"sizes": bad}, [10])


def test_trials_come_from_the_command_line_then_the_spec_then_the_default():
    assert read_trials({}, _ctx(), 5) == 5
    assert read_trials({"trials": 2}, _ctx(), 5) == 2
    assert read_trials({"trials": 2}, _ctx(trials=3), 5) == 3
    for bad in (0, -1, 2.0, True, "3"):
        with pytest.raises(WorkloadError, match="trials must be a positive integer"):
            read_trials({"trials": bad}, _ctx(), 5)


def test_unknown_keys_and_non_tables_are_refused():
    check_keys({"a": 1}, {"a", "b"}, "a spec")
    with pytest.raises(WorkloadError, match=r"unknown key\(s\) \['c'\] in \[aim\]; known: \['a', 'b'\]"):
        check_keys({"a": 1, "c": 2}, {"a", "b"}, "[aim]")
    with pytest.raises(WorkloadError, match=r"each \[\[tables\]\] entry must be a table of keys"):
        check_keys(["a"], {"a"}, "[[tables]]")
