"""netdsl's version: written here once; pyproject.toml and the CLI read it from here."""

__version__ = "0.1.0"
