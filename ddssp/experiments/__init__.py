"""Experiment runners for `ddssp bench` (one module per spec kind; see ddssp.bench)."""
