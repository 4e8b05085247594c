"""The default train, validation and test fractions of `--data`: one place for the flags, the
library, the run folder's record and the early data check (which must not import `settings`)."""

from __future__ import annotations

DEFAULT_SPLIT = (0.8, 0.1, 0.1)
