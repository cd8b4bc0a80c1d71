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


#: Infix of a CSV file written from an insecure-seed release with ``--allow-insecure``.
NOT_PRIVATE_INFIX = ".NOT-PRIVATE"


def stamped_output(rel, out, allow_insecure: bool, force: bool = False, inputs=()):
    """Where a CSV made from ``rel`` goes: ``out`` for a private release; for a stamped (insecure-seed)
    release a :class:`~ddssp.errors.DDSSPError` unless ``allow_insecure``, and then ``out`` with a
    ``.NOT-PRIVATE`` infix before its suffix, so the stamp travels with the file."""
    from pathlib import Path

    from ddssp.data.fileio import check_output_path
    from ddssp.errors import DDSSPError

    if not getattr(rel, "stamp", None):
        return out
    if not allow_insecure:
        raise DDSSPError(f"the release is stamped '{rel.stamp}'; refusing to write {out} from it (pass "
                         f"--allow-insecure to write it anyway, as a {NOT_PRIVATE_INFIX} file)")
    out = Path(out)
    if NOT_PRIVATE_INFIX not in out.name:
        out = out.with_name(out.stem + NOT_PRIVATE_INFIX + out.suffix)
    return check_output_path(out, force=force, inputs=inputs)
