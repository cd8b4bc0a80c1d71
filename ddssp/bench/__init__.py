"""``ddssp bench``: the spec runner (:mod:`.runner`) and one module per experiment kind
(:mod:`.ddssp_paper`, :mod:`.pdp_op`, :mod:`.napp_erm`, :mod:`.multitask`), which share the prediction
metrics (:mod:`.metrics`) and a spec's filter and recode of a table (:mod:`.filter_recode`); :mod:`.aim`
is the AIM benchmark command (``python -m ddssp.bench.aim``)."""

from ddssp.bench.runner import (
    REQUIRED_COLUMNS,
    BenchContext,
    format_summary,
    get_runner,
    load_spec,
    plot_results,
    run_bench,
    summarize,
)

__all__ = [
    "REQUIRED_COLUMNS",
    "BenchContext",
    "format_summary",
    "get_runner",
    "load_spec",
    "plot_results",
    "run_bench",
    "summarize",
]
