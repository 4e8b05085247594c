"""What Keras' torch backend cannot do with a spec's train section, said before training starts.

Keras compiles such a model without complaint and fails later, inside `fit`, with a message about
its own arguments; netdsl says it at the spec, with the way around it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["train_problem"]


def train_problem(spec: Any) -> str | None:
    """Why the train section `spec` (a `TrainSpec`) cannot run on the torch backend; None when it can."""
    if (spec.steps_per_execution or 1) > 1:
        import keras

        return (
            f"steps_per_execution = {spec.steps_per_execution}: Keras {keras.__version__} on the torch backend "
            f"runs one step per execution; set steps_per_execution = 1, or train with --backend tensorflow "
            f"or jax"
        )
    return None
