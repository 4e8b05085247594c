"""Regenerate tests/fixtures/errors/*.expected from the current checker (run from the repo root).

Review every changed .expected by hand before committing: these files are
the exact diagnostics users see.
"""

import contextlib
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dsl"))

from netdsl.cli import main  # noqa: E402

for spec in sorted(Path("tests/fixtures/errors").glob("*.net")):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["check", str(spec)])
    spec.with_suffix(".expected").write_text(f"exit {code}\n{err.getvalue()}", encoding="utf-8")
    print(spec, code)
