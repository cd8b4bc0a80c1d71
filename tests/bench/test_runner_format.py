"""The bench summary and plot: no standard error for one trial, a titled plot with plain ticks."""

from __future__ import annotations

import pandas as pd
import pytest

from ddssp.bench.runner import METHOD_LABELS, format_summary, plot_results, summarize


def _results(trials: int) -> pd.DataFrame:
    rows = []
    for t in range(trials):
        for m in ("ddssp", "public"):
            for eps in (0.5, 2.0):
                rows.append(
                    {
                        "method": m,
                        "epsilon": eps,
                        "trial": t,
                        "metric": "mse",
                        "value": 0.1 + 0.01 * t + (0.05 if m == "ddssp" else 0.0) / eps,
                        "seconds": 0.1,
                    }
                )
    return pd.DataFrame(rows)


def test_one_trial_has_no_standard_error():
    s = summarize(_results(1))
    assert s["se"].isna().all()
    lines = format_summary(s).splitlines()
    assert all(line.split()[5] == "-" for line in lines[1:])  # the se column
    assert " 0 " not in " ".join(lines[1:])


def test_two_trials_have_a_standard_error():
    s = summarize(_results(2))
    assert (s["se"] > 0).all()
    assert all(line.split()[5] != "-" for line in format_summary(s).splitlines()[1:])


def test_plot_has_title_method_names_and_plain_ticks(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    captured = {}
    monkeypatch.setattr(plt, "close", lambda fig: captured.setdefault("fig", fig))
    assert plot_results(summarize(_results(1)), tmp_path / "plot.png", title="example (spec)")
    fig = captured["fig"]
    assert fig._suptitle.get_text() == "example (spec)"
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.5", "2"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [METHOD_LABELS["ddssp"], METHOD_LABELS["public"]]
    assert (tmp_path / "plot.png").stat().st_size > 0


def _legend_of_saved_figure(monkeypatch):
    import matplotlib.pyplot as plt

    captured = {}
    monkeypatch.setattr(plt, "close", lambda fig: captured.setdefault("fig", fig))
    return captured


def test_coverage_plot_one_legend_with_readable_names(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from ddssp.bench.ci_coverage import VARIANT_STYLES, plot_coverage

    captured = _legend_of_saved_figure(monkeypatch)
    rows = [
        {"method": f"{model}/{v}", "epsilon": eps, "trial": t, "metric": metric, "value": 0.9, "seconds": 0.0}
        for model in ("linear", "logistic")
        for v in [*VARIANT_STYLES, "dp-only-vs-data-fit"]
        for eps in (0.1, 1.0)
        for t in range(2)
        for metric in ("cover90", "cover95")
    ]
    assert plot_coverage(pd.DataFrame(rows), tmp_path / "c.png", 2)
    fig = captured["fig"]
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    names = [t.get_text() for t in fig.legends[0].get_texts()]
    assert names == [label for label, *_ in VARIANT_STYLES.values()]
    assert not any(v in " ".join(names) for v in ("dp+sampling", "unmeasured-inf", "mech-"))
    colours = [style[1] for style in VARIANT_STYLES.values()]
    assert len(set(colours)) == len(colours)


def test_roc_plot_has_one_legend_for_the_figure(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from ddssp.bench.napp_erm import plot_roc

    captured = _legend_of_saved_figure(monkeypatch)
    rows = [
        {
            "method": m,
            "loss": loss,
            "n": n,
            "lambda": lam,
            "lambda_paper": lam / 2,
            "epsilon": eps,
            "trial": 0,
            "metric": metric,
            "value": 0.5,
            "seconds": 0.0,
        }
        for m in ("NAPP-ERM", "lasso")
        for loss in ("linear", "logistic")
        for n in (200, 500)
        for eps in (0.4, 1.0)
        for lam in (1.0, 10.0)
        for metric in ("tpr", "fpr")
    ]
    assert plot_roc(pd.DataFrame(rows), tmp_path / "roc.png")
    fig = captured["fig"]
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["NAPP-ERM", "non-private lasso"]
    assert fig._suptitle is not None


def test_many_metrics_wrap_into_rows_of_four(tmp_path, monkeypatch):
    """Nine metrics: three rows of at most four panels (not one strip nine panels wide), the spare
    panels hidden."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    base = _results(1)
    frames = []
    for i in range(9):
        f = base.copy()
        f["metric"] = f"m{i}"
        frames.append(f)
    captured = {}
    monkeypatch.setattr(plt, "close", lambda fig: captured.setdefault("fig", fig))
    assert plot_results(summarize(pd.concat(frames, ignore_index=True)), tmp_path / "plot.png")
    fig = captured["fig"]
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 9 and len(fig.axes) == 12
    width, height = fig.get_size_inches()
    assert width <= 20.5 and height > 12


def test_pyplot_is_none_without_matplotlib(monkeypatch):
    import sys

    from ddssp.bench.plotting import pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as when it is not installed
    assert pyplot() is None
