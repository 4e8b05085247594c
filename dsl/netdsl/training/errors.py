"""The errors a training command reports as one line: bad data, a run that cannot resume, a bad flag.

    train.csv:7:3: error: 'abc' is not a number (column 'pixel_2')
    train.npz: error: missing input 'image'; keys found: labels, pixels
    error: the validation split is empty: --split 0.9,0.1 of 5 samples gives it no sample

The CLI prints `str(error)` (after `netdsl CMD: ` when it names no file) and exits 1. The family is
`netdsl.errors.ReportedError`, with `DataError` and `RunError` under it; they are re-exported here for
`netdsl.training`'s users, and `TrainingError` is the family's old name, kept for one release. A flag that
cannot work (a malformed --split, `--tensorboard` without the package) is netdsl's one `UsageError`
(`netdsl.errors`, exit 2).
"""

from __future__ import annotations

import re

from netdsl.errors import DataError, ReportedError, RunError, UsageError

__all__ = ["TrainingError", "DataError", "RunError", "UsageError", "tensorflow_message"]

TrainingError = ReportedError  # the one-line family's old name (netdsl.errors.ReportedError), for one release


def tensorflow_message(exc: BaseException) -> str:
    """The human part of a TensorFlow error's text, one line: no "Graph execution error:",
    no "Detected at node ...", no `{{function_node ...}}` or `[[node ...]]` or `[Op:...]`."""
    text = getattr(exc, "message", None) or str(exc)
    text = re.sub(r"\{\{function_node[^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\].*$", "", text, flags=re.S)
    skip = ("Graph execution error", "Detected at node", "<stack traces", "[[", "File ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith(skip)]
    return lines[0] if lines else type(exc).__name__


class DataWarning(UserWarning):
    """Data netdsl reads as asked but that looks wrong (an identifier column in the input): one line,
    `netdsl COMMAND: warning: FILE: ...` on the command line."""
