"""Sub-commands of the ``ddssp`` CLI (one module each; see ddssp.cli)."""


def comma_list(text: str) -> list[str]:
    """argparse type for "a,b,c": the non-empty, stripped names."""
    return [t.strip() for t in text.split(",") if t.strip()]
