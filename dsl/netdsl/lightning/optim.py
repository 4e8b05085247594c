"""A spec's optimizer, gradient clipping and learning-rate schedule as their torch equivalents.

The compiled Keras model's optimizer is read by its config (what the spec wrote, Keras' defaults
filled in) and mapped argument by argument onto `torch.optim`; a schedule becomes a `LambdaLR`
that asks the Keras schedule itself for each step's rate, so every schedule Keras has maps exactly.
What has no torch equivalent is a `LightningError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from netdsl.errors import LightningError

__all__ = ["OptimizerPlan", "plan_optimizer", "clip_gradients"]

# Keras argument -> torch argument, per optimizer. `betas` is built from beta_1/beta_2.
_ARGS: dict[str, dict[str, str]] = {
    "SGD": {"momentum": "momentum", "nesterov": "nesterov"},
    "Adam": {"beta_1": "betas", "beta_2": "betas", "epsilon": "eps", "amsgrad": "amsgrad"},
    "AdamW": {"beta_1": "betas", "beta_2": "betas", "epsilon": "eps", "amsgrad": "amsgrad"},
    "Adamax": {"beta_1": "betas", "beta_2": "betas", "epsilon": "eps"},
    "Nadam": {"beta_1": "betas", "beta_2": "betas", "epsilon": "eps"},
    "RMSprop": {"rho": "alpha", "momentum": "momentum", "epsilon": "eps", "centered": "centered"},
    "Adagrad": {"initial_accumulator_value": "initial_accumulator_value", "epsilon": "eps"},
    "Adadelta": {"rho": "rho", "epsilon": "eps"},
}
_TORCH_CLASS = {
    "SGD": "SGD",
    "Adam": "Adam",
    "AdamW": "AdamW",
    "Adamax": "Adamax",
    "Nadam": "NAdam",
    "RMSprop": "RMSprop",
    "Adagrad": "Adagrad",
    "Adadelta": "Adadelta",
}
# Arguments every Keras optimizer has that torch.optim has no equivalent of: only their off values map.
_OFF = {"use_ema": False, "loss_scale_factor": None, "gradient_accumulation_steps": None}
_IGNORED = {"name", "learning_rate", "weight_decay", "ema_momentum", "ema_overwrite_frequency"}  # (ema: if use_ema)
_CLIPPING = ("clipnorm", "global_clipnorm", "clipvalue")


class OptimizerPlan:
    """The torch optimizer to make, its learning-rate schedule and the spec's clipping."""

    def __init__(self, keras_class: str, config: dict[str, Any]) -> None:
        self.keras_class = keras_class
        self.config = config
        self.clipping = {k: float(config[k]) for k in _CLIPPING if config.get(k) is not None}

    def make(self, params: Iterable[Any]) -> tuple[Any, Any]:
        """(the torch optimizer, a `LambdaLR` for a schedule or None)."""
        import torch

        config, schedule = self.config, _schedule(self.config["learning_rate"])
        kwargs: dict[str, Any] = {"lr": 1.0 if schedule is not None else float(config["learning_rate"])}
        for keras_name, torch_name in _ARGS[self.keras_class].items():
            if torch_name == "betas":
                kwargs["betas"] = (float(config["beta_1"]), float(config["beta_2"]))
            elif config.get(keras_name) is not None:
                kwargs[torch_name] = config[keras_name]
        name = _TORCH_CLASS[self.keras_class]
        decay = config.get("weight_decay")
        if decay:
            # Keras decays weights apart from the gradient step (decoupled), as torch's AdamW does.
            name = "AdamW" if name == "Adam" else name
            kwargs["weight_decay"] = float(decay)
        optimizer = getattr(torch.optim, name)(params, **kwargs)
        if schedule is None:
            return optimizer, None
        return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, _rate_at(schedule))


def plan_optimizer(optimizer: Any, overrides: dict[str, Any]) -> OptimizerPlan:
    """The torch plan of a compiled Keras optimizer, `overrides` (its keyword arguments) applied.

    Raises `LightningError` for an optimizer or an argument torch has no equivalent of.
    """
    keras_class = type(optimizer).__name__
    if keras_class == "LossScaleOptimizer":
        raise LightningError(
            'mixed_precision = "mixed_float16" scales the loss inside Keras\' optimizer: in '
            'Lightning, leave it out of the spec and use Trainer(precision="16-mixed")'
        )
    if keras_class not in _ARGS:
        raise LightningError(
            f"the optimizer {keras_class} has no torch.optim equivalent: use one of "
            f"{', '.join(sorted(c.lower() for c in _ARGS))} in the spec, or override "
            f"configure_optimizers"
        )
    config = dict(optimizer.get_config())
    unknown = sorted(set(overrides) - set(config) - {"name"})
    if unknown:
        raise LightningError(
            f"{keras_class} has no argument {', '.join(map(repr, unknown))}: its arguments are "
            f"{', '.join(sorted(k for k in config if k != 'name'))}"
        )
    config.update(overrides)
    for key, value in config.items():
        if key in _ARGS[keras_class] or key in _CLIPPING or key in _IGNORED:
            continue
        if key not in _OFF:
            raise LightningError(
                f"{keras_class}'s argument {key!r} has no torch.optim equivalent: override configure_optimizers"
            )
        if value not in (_OFF[key], None):
            raise LightningError(
                f"{keras_class}({key}={value!r}) has no torch.optim equivalent: leave it out of the spec for Lightning"
            )
    if sum(config.get(k) is not None for k in _CLIPPING) > 1:
        raise LightningError("the optimizer sets more than one of clipnorm, global_clipnorm and clipvalue")
    return OptimizerPlan(keras_class, config)


def clip_gradients(params: list[Any], clipping: dict[str, float]) -> None:
    """Clip as Keras would: `clipnorm` each gradient to its own norm, `global_clipnorm` all of
    them together, `clipvalue` each element."""
    import torch

    with_grad = [p for p in params if p.grad is not None]
    if "clipnorm" in clipping:
        for param in with_grad:
            torch.nn.utils.clip_grad_norm_([param], clipping["clipnorm"])
    if "global_clipnorm" in clipping:
        torch.nn.utils.clip_grad_norm_(with_grad, clipping["global_clipnorm"])
    if "clipvalue" in clipping:
        torch.nn.utils.clip_grad_value_(with_grad, clipping["clipvalue"])


def _schedule(learning_rate: Any) -> Any:
    """The Keras schedule a config's learning rate names (None for a number)."""
    if isinstance(learning_rate, (int, float)):
        return None
    import keras

    if isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule):
        return learning_rate
    return keras.optimizers.schedules.deserialize(learning_rate)


def _rate_at(schedule: Any) -> Callable[[int], float]:
    """The factor `LambdaLR` multiplies the base rate 1.0 by: the schedule's rate at `step`."""
    import keras

    def rate(step: int) -> float:
        return float(keras.ops.convert_to_numpy(schedule(step)))

    return rate
