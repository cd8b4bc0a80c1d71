"""The scale benchmark runs end to end on a tiny size and leaves no temporary table behind."""

from __future__ import annotations

from ddssp.bench.scale import main


def test_scale_bench_smoke(shared_data, tmp_path, capsys):
    assert (
        main(
            [
                "--rows",
                "3000",
                "--formats",
                "csv,parquet",
                "--backends",
                "duckdb",
                "--data",
                str(shared_data),
                "--tmp",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "count" in out and "counting curve" in out and "non-zero pair cells" in out
    assert list(tmp_path.iterdir()) == []  # generated tables are deleted
