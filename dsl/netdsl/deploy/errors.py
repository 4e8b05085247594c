"""What `netdsl export` reports as one line: a bad source, a format it does not know, a layer a format cannot hold.

    model.keras: error: not a .keras file (not a zip archive)
    error: unknown format 'onx'; did you mean 'onnx'? (formats: onnx, saved_model, litert)
    error: layer 'score.dense' (Dense) cannot be exported to onnx: TensorFlow op Log1p has no ONNX conversion
    error: --format onnx needs onnxruntime, which is not installed; pip install 'netdsl[export]'

They are training errors (the same one-line form, the same printing in the CLI):
exit 1, or 2 for an unknown format or a missing optional package, as `train --tensorboard` does.
"""

from __future__ import annotations

from netdsl.training.errors import TrainingError, UsageError


class ExportError(TrainingError):
    """Something in the source or the output that stops an export; exit 1."""


class MissingPackage(UsageError):
    """The converter or runtime a format needs is not installed; exit 2."""


class UnknownFormat(UsageError):
    """A --format netdsl does not write; exit 2, as argparse does for a bad choice."""


class VerifyFailed(ExportError):
    """The exported file computes something else than the Keras model (beyond the format's tolerance)."""
