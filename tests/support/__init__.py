"""Helpers shared by the tests (imported as `tests.support.NAME`, which works from any folder: pytest puts the
repository root on sys.path for the `tests` package), and the scripts that regenerate fixtures."""
