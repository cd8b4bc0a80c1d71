"""The scoring benchmark on a small model."""

from __future__ import annotations

import numpy as np

from ddssp.bench.pairs import main, wide_model


def test_wide_model_stays_under_its_size_and_the_bench_prints(capsys):
    model = wide_model(12, 0.05, seed=1)
    assert len(model.domain) == 12 and model.size_mb <= 0.05
    assert any(len(c) > 2 for c in model.cliques) or len(model.cliques) >= 11
    assert main(["--columns", "8", "--size-mb", "0.02", "--single"]) == 0
    out = capsys.readouterr().out
    assert "one call:" in out and "one call per pair:" in out
    np.testing.assert_allclose(sum(model.marginal(("v000",))), model.total)
