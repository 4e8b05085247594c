"""What `netdsl export` reports as one line: a bad source, a format it does not know, a layer a format cannot hold.

    model.keras: error: not a .keras file (not a zip archive)
    netdsl export: error: unknown format 'onx'; did you mean 'onnx'? (formats: onnx, saved_model, litert)
    netdsl export: error: layer 'score.dense' cannot be exported to onnx: TensorFlow op Log1p has no ONNX conversion
    netdsl export: error: --format onnx needs onnxruntime, which is not installed; pip install 'netdsl[export]'

An export error is one of netdsl's one-line errors (`netdsl.errors.ExportError`, a `ReportedError`:
the same form and printing as a data error), exit 1; an unknown format or a missing optional package is
a usage error, exit 2, as `train --tensorboard` is.

`SpecChangedWarning` is not an error: `evaluate` of an exported file still scores it, and the CLI
prints it as one line (`netdsl evaluate: warning: ...`).
"""

from __future__ import annotations

from netdsl.errors import ExportError, UsageError, VerifyFailed

__all__ = ["ExportError", "VerifyFailed", "MissingPackage", "UnknownFormat", "SpecChangedWarning"]


class MissingPackage(UsageError):
    """The converter or runtime a format needs is not installed; exit 2."""


class UnknownFormat(UsageError):
    """A --format netdsl does not write; exit 2, as argparse does for a bad choice."""


class SpecChangedWarning(UserWarning):
    """`evaluate` of an exported file was given a spec other than the one it was exported from (the
    file records the spec's sha256): the file is still scored, with the given spec's loss and metrics."""
