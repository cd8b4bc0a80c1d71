"""The package version (a leaf module, so that any layer can name it)."""

__version__ = "0.1.0"
