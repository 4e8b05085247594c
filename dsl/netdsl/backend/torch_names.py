"""Layer names with a dot on Keras' torch backend.

netdsl names a layer after where it sits in the spec: `head.dense`, `block_1.conv2d_2` (the same
names on every backend, so a `.keras` file loads anywhere). On the torch backend each Keras layer
is a `torch.nn.Module` that keeps its variables in a `torch.nn.ParameterDict` keyed by the
variable's path (`head.dense/kernel`), and torch refuses a key with a dot ("parameter name can't
contain '.'"), so such a model could not even be built there.

`install()` makes the torch side key each variable by its path with the dots written as `:`
(`head:dense/kernel`); Keras' own names, paths, saved files and weights are untouched. It is
called whenever Keras is imported with netdsl present (`keras_hook`) and does nothing on the
other backends.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["install", "torch_key"]

_SEP = ":"


def torch_key(path: str) -> str:
    """The key of a variable's path in a torch `ParameterDict` (no dots)."""
    return path.replace(".", _SEP)


def install() -> None:
    """Key the torch parameters of every Keras layer by `torch_key` (idempotent; torch backend only)."""
    keras = sys.modules.get("keras")
    if keras is None or keras.backend.backend() != "torch":
        return
    import torch
    from keras.src.backend.torch.layer import TorchLayer

    if getattr(TorchLayer, "_netdsl_keys", False):
        return

    def _track_variables(self: Any) -> None:
        self._torch_params = torch.nn.ParameterDict({torch_key(v.path): v.value for v in self.variables})

    def _post_track_variable(self: Any, variable: Any) -> None:
        if hasattr(self, "_torch_params") and torch_key(variable.path) not in self.torch_params:
            self.torch_params[torch_key(variable.path)] = variable.value

    def _post_untrack_variable(self: Any, variable: Any) -> None:
        if hasattr(self, "_torch_params") and torch_key(variable.path) in self.torch_params:
            self.torch_params.pop(torch_key(variable.path))

    TorchLayer._track_variables = _track_variables
    TorchLayer._post_track_variable = _post_track_variable
    TorchLayer._post_untrack_variable = _post_untrack_variable
    TorchLayer._netdsl_keys = True
