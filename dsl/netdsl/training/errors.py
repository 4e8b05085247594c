"""The errors a training command reports as one line: bad data, a run that cannot resume, a bad flag.

    train.csv:7:3: error: 'abc' is not a number (column 'pixel_2')
    train.npz: error: missing input 'image'; keys found: labels, pixels
    error: the validation split is empty: --split 0.9,0.1 of 5 samples gives it no sample

The CLI prints `str(error)` (after `netdsl CMD: ` when it names no file) and exits 1. A flag that cannot work (a
malformed --split, `--tensorboard` without the package) is netdsl's one `UsageError`
(`netdsl.errors`, exit 2), re-exported here for `netdsl.training`'s users.
"""

from __future__ import annotations

import re

from netdsl.errors import NetdslError, UsageError, printable

__all__ = ["TrainingError", "DataError", "RunError", "UsageError", "tensorflow_message"]


class TrainingError(NetdslError):
    """Something a user caused in a training command; `str()` is the one line to print."""

    exit_code = 1

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 col: int | None = None, hint: str | None = None):
        self.message, self.file, self.line, self.col, self.hint = message, file, line, col, hint
        super().__init__(self.text)

    @property
    def text(self) -> str:
        where = ""  # file names and messages may quote outside text (data values, column names): escaped
        if self.file is not None:
            where = printable(self.file)
            if self.line is not None:
                where += f":{self.line}" + (f":{self.col}" if self.col is not None else "")
            where += ": "
        return f"{where}error: {printable(self.message)}" + (f"; {printable(self.hint)}" if self.hint else "")

    def __str__(self) -> str:
        return self.text


def tensorflow_message(exc: BaseException) -> str:
    """The human part of a TensorFlow error's text, one line: no "Graph execution error:",
    no "Detected at node ...", no `{{function_node ...}}` or `[[node ...]]` or `[Op:...]`."""
    text = getattr(exc, "message", None) or str(exc)
    text = re.sub(r"\{\{function_node[^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\].*$", "", text, flags=re.S)
    skip = ("Graph execution error", "Detected at node", "<stack traces", "[[", "File ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith(skip)]
    return lines[0] if lines else type(exc).__name__


class DataError(TrainingError):
    """The data does not fit the model: a missing array, a wrong shape, a cell that is not a number."""


class RunError(TrainingError):
    """A run folder that cannot be created, found, locked or resumed."""


class DataWarning(UserWarning):
    """Data netdsl reads as asked but that looks wrong (an identifier column in the input): one line,
    `netdsl COMMAND: warning: FILE: ...` on the command line."""
