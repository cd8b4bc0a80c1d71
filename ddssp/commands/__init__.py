"""Sub-commands of the ``ddssp`` CLI (one module each; see ddssp.cli)."""


def comma_list(text: str) -> list[str]:
    """argparse type for "a,b,c": the non-empty, stripped names."""
    return [t.strip() for t in text.split(",") if t.strip()]


def positive_int(text: str) -> int:
    """argparse type for a positive integer (``--bins``, ``--max-levels``)."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def warn_stamp(rel, path) -> None:
    """Print the release's privacy stamp (e.g. "NOT PRIVATE: noise reproducible from a seed") to stderr.
    Every command that writes or reads a release calls this, on every use."""
    import sys

    stamp = getattr(rel, "stamp", None)
    if stamp:
        print(f"ddssp: WARNING: {path}: {stamp}", file=sys.stderr)
