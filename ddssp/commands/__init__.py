"""Sub-commands of the ``ddssp`` CLI (one module each; see ddssp.cli)."""
