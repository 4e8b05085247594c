"""A Keras callback that tells a listener each finished epoch's logs; the listener may stop the run.

    hook = epoch_hook(lambda epoch, logs: "pruned" if logs["val_loss"] > 9 else None)
    train("mlp.net", data=..., callbacks=[hook])     # report.json: status "pruned" when it stopped it

A sweep reports every epoch's objective to its Optuna trial through it and stops a
trial the pruner gives up on. The engine reads `stopped_as` for the run's status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# (epoch from 1, logs: floats, a list for a metric of one value per class) -> a status that stops the run
Listener = Callable[[int, dict[str, Any]], "str | None"]


def epoch_hook(listener: Listener) -> Any:
    """A `keras.callbacks.Callback` calling `listener` after each epoch (imports Keras)."""
    import keras

    from netdsl.training.run.report import logged_value

    class EpochHook(keras.callbacks.Callback):
        stopped_as: str | None = None

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            status = listener(epoch + 1, {k: logged_value(v) for k, v in (logs or {}).items()})
            if status:
                self.stopped_as = status
                self.model.stop_training = True

    return EpochHook()
