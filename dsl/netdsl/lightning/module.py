"""`SpecModule`: a spec's model as a PyTorch Lightning `LightningModule`.

    model = SpecModule("specs/lightning_mlp.net")          # the spec's one model
    trainer = L.Trainer(max_epochs=3)
    trainer.fit(model, train_loader, val_loader)           # any DataLoader: (x, y) or dicts by name

On Keras' torch backend a Keras model is a `torch.nn.Module` whose weights are its `parameters()`,
so Lightning moves, wraps (DDP, ...), checkpoints and restores it like any module. The network is
built in `configure_model`, after Lightning has chosen the device. The steps compute the spec's
losses (one per output, weighted by `loss_weights`, plus the layers' regularization losses) and
metrics, as Keras' `fit` would, and log them as `train_loss`, `val_loss`, `test_loss` and
`<stage>_<metric>`; `configure_optimizers` maps the spec's optimizer, clipping and learning-rate
schedule onto `torch.optim` (`optim.py`).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import lightning as L
from lightning.pytorch.utilities import rank_zero_warn
from lightning.pytorch.utilities.warnings import PossibleUserWarning

from netdsl.backend.runtime import init_backend
from netdsl.errors import LightningError
from netdsl.lightning.batches import as_inputs, as_list, split_batch
from netdsl.lightning.checkpoint import CHANGED, SpecRecord, changed_on_disk, program_of, record_of, stable_names
from netdsl.lightning.optim import clip_gradients, plan_optimizer
from netdsl.semantics.session import LoadedSpec
from netdsl.syntax.loader import Program

if TYPE_CHECKING:
    import torch

__all__ = ["SpecModule"]

# A SpecModule has a validation_step for whoever passes validation data: training without any is no mistake.
warnings.filterwarnings(
    "ignore", message="You defined a `validation_step` but have no `val_dataloader`", category=PossibleUserWarning
)


class SpecModule(L.LightningModule):
    """The model `model` of `spec` (a `.net` path or a parsed `Program`), trained by Lightning.

    `defines`: file-level constants replaced before the check (`-D NAME=VALUE`); `include`: folders
    imports may come from (`-I`). `channels_first`: image batches come in PyTorch's layout
    (N, C, H, W) and are moved to Keras' (N, H, W, C) before the network (True: every input of
    three or more axes; or the names of the inputs to move). `overrides` are keyword arguments of
    the spec's optimizer (`learning_rate=3e-4`). All of them, and the spec's text, are saved with
    the hyperparameters, so `SpecModule.load_from_checkpoint(path)` rebuilds the same module in
    any process, wherever the spec is now (`recorded` is that text, given back by the checkpoint).
    Keras must run on the torch backend in this process (a `BackendError` otherwise).
    """

    def __init__(
        self,
        spec: str | os.PathLike | Program,
        model: str | None = None,
        *,
        defines: Mapping[str, Any] | None = None,
        include: Sequence[str | os.PathLike] = (),
        channels_first: bool | Sequence[str] = False,
        recorded: SpecRecord | None = None,
        **overrides: Any,
    ) -> None:
        super().__init__()
        init_backend("torch", mute_stderr=False)
        folders = [os.path.abspath(folder) for folder in include]
        if (
            recorded is not None
            and changed_on_disk(recorded, folders)
            and not isinstance(spec, Program)
            and os.path.abspath(spec) == recorded.get("path")
        ):
            rank_zero_warn(f"{spec}: {CHANGED}; loaded with the checkpoint's own copy of it")
        source = program_of(spec, folders, recorded)
        # picked and checked once: spec errors now, not once training starts; `configure_model` builds this
        self.checked = LoadedSpec.of(source, defines=dict(defines or {})).model(model)
        self.checked.graph  # noqa: B018 (SpecError with every error of the spec)
        self.program, self.model_name = self.checked.program, self.checked.name
        self.overrides = dict(overrides)
        self.channels_first: bool | list[str] = (
            channels_first
            if isinstance(channels_first, bool)
            else [channels_first]
            if isinstance(channels_first, str)
            else list(channels_first)
        )
        self.net: Any = None
        self.input_names: list[str] = []
        self.output_names: list[str] = []
        self._input_shapes: list[tuple[int | None, ...]] = []
        self._moved: list[bool] = []  # per input: moved from channels-first
        self._losses: list[Any] = []
        self._weights: list[float] = []
        self._keras_losses: Any = None  # (the compiled model's loss identifiers, resolved at the first batch)
        self._metrics: Any = None  # Keras' CompileMetrics: `accuracy` resolved by the shapes, as `fit` does
        self._batch_means: list[tuple[str, int, Any]] | None = None  # (name, output, metric): see _metric_values
        self._path: Any = None  # the network on torch directly (torch_path.py), None: through Keras
        self._layer_losses = True  # whether a step asks the layers for their own losses (see configure_model)
        self._clipping: dict[str, float] = {}
        hparams = {
            "spec": record_of(source)["path"],
            "model": self.model_name,
            "defines": dict(defines or {}),
            "include": folders,
            "channels_first": self.channels_first,
            "recorded": recorded if recorded is not None else record_of(source),
            **self.overrides,
        }
        self.save_hyperparameters(hparams)

    # ------------------------------------------------------------ the network

    def configure_model(self) -> None:
        """Build the spec's Keras model on the device Lightning chose (once)."""
        if self.net is not None:
            return
        from netdsl.backend.compiler import build

        with self._on_device():
            analysis, models = build(self.checked)
        graph = analysis.graphs[self.model_name]
        self.input_names = [graph.nodes[i].name for i in graph.inputs]
        self.output_names = graph.output_names
        self.net = models[self.model_name]
        self._input_shapes = [tuple(tensor.shape) for tensor in self.net.inputs]
        wanted = self.channels_first
        self._moved = [
            len(shape) >= 4 and (wanted is True or (isinstance(wanted, list) and name in wanted))
            for name, shape in zip(self.input_names, self._input_shapes)
        ]
        unknown = sorted(set(wanted) - set(self.input_names)) if isinstance(wanted, list) else []
        if unknown:
            raise LightningError(
                f"channels_first names {', '.join(map(repr, unknown))}, not an input of the model "
                f"'{self.model_name}' (its inputs: {', '.join(self.input_names)})"
            )
        from netdsl.lightning.torch_path import TorchPath

        self._path = TorchPath.of(self.net)
        # Keras' `losses` walks every layer at every step; on the torch path no layer adds a loss in its
        # call (activity regularizers are refused there), so only weights with a regularizer can have one.
        self._layer_losses = self._path is None or any(
            getattr(weight, "regularizer", None) is not None for weight in self.net.trainable_weights
        )
        self._register_state_dict_hook(_save_stable_names)
        self._register_load_state_dict_pre_hook(_load_stable_names, with_module=True)
        if getattr(self.net, "optimizer", None) is not None:
            self._compiled_objects()

    def _compiled_objects(self) -> None:
        """What Keras' `compile` was given (losses, their weights, metrics), resolved at the first batch
        by the shapes of its targets and outputs as Keras' `fit` resolves them (`accuracy`, `crossentropy`)."""
        from keras.src.trainers.compile_utils import CompileMetrics

        outputs = len(self.output_names)
        compiled_loss = self.net._compile_loss
        losses = compiled_loss._user_loss if compiled_loss is not None else None
        self._keras_losses = (losses if outputs > 1 else [losses]) if losses is not None else None
        weights = compiled_loss._user_loss_weights if compiled_loss is not None else None
        self._weights = [float(w) for w in (weights if outputs > 1 else [weights])] if weights else [1.0] * outputs
        compiled = self.net._compile_metrics
        if compiled is not None:
            self._metrics = CompileMetrics(
                compiled._user_metrics,
                compiled._user_weighted_metrics,
                output_names=self.output_names if outputs > 1 else None,
            )

    def forward(self, x: Any) -> Any:
        """The network's output(s) for `x`: a tensor, or a list/dict of them by input name."""
        return self._outputs(as_inputs(x, self.input_names), self.training)

    def _outputs(self, x: Any, training: bool) -> Any:
        """The network's output(s) for inputs `x` (one tensor or a dict by input name), as Keras gives them:
        on torch directly where the path runs the model and these batches (torch_path.py), else by Keras."""
        if self._path is not None:
            laid = self._laid_out(x, move=False)
            given = list(laid.values()) if isinstance(laid, dict) else [laid]
            first = [
                moved and tensor.ndim == len(shape)
                for tensor, shape, moved in zip(given, self._input_shapes, self._moved)
            ]
            if self._path.fits(given, first):
                import keras

                outputs = keras.tree.pack_sequence_as(self.net._outputs_struct, self._path(given, first, training))
                return outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs
        with self._on_device():
            return self.net(self._laid_out(x), training=training)

    def _laid_out(self, x: Any, move: bool = True) -> Any:
        """The inputs in Keras' channels-last layout: moved from channels-first where asked (unless not
        `move`: the torch path takes them as they are), else checked."""
        given = x if isinstance(x, dict) else {self.input_names[0]: x}
        laid = {}
        for (name, tensor), shape, moved in zip(given.items(), self._input_shapes, self._moved):
            if moved and tensor.ndim == len(shape):
                tensor = tensor.movedim(1, -1) if move else tensor
            elif (
                tensor.ndim == len(shape) >= 4
                and tuple(tensor.shape[1:]) != shape[1:]
                and tuple(tensor.shape[2:]) + tuple(tensor.shape[1:2]) == shape[1:]
            ):
                raise LightningError(_channels_first_message(name, shape, tuple(tensor.shape)))
            laid[name] = tensor
        return laid if isinstance(x, dict) else laid[self.input_names[0]]

    @contextlib.contextmanager
    def _on_device(self) -> Iterator[None]:
        """Keras makes its tensors and variables on the module's device (not on its own first GPU)."""
        import keras

        with keras.device(str(self.device)):
            yield

    # ------------------------------------------------------------ the steps

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self._step(batch, "val")

    def test_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self._step(batch, "test")

    def predict_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> Any:
        """The outputs for a batch of inputs (an `(x, y)` batch or a dict: its inputs only)."""
        if isinstance(batch, dict):
            batch = {name: batch[name] for name in self.input_names if name in batch}
        elif isinstance(batch, (list, tuple)) and len(batch) == 2 and len(self.input_names) == 1:
            batch = batch[0]
        return self(batch)

    def _step(self, batch: Any, stage: str) -> torch.Tensor:
        self.configure_model()  # (a step called outside a Trainer)
        if self._keras_losses is None:
            raise LightningError(
                f"the model '{self.model_name}' has no loss to train with: add a train section "
                f"with one (train {{ loss = ... }})"
            )
        x, targets = split_batch(batch, self.input_names, self.output_names)
        predictions = as_list(self._outputs(x, stage == "train"))
        with self._on_device():
            total, per_output = self._loss(targets, predictions)
        size, sync = int(targets[0].shape[0]), stage != "train"
        # Keras reports epoch means; in training Lightning logs steps only unless asked: both, the
        # epoch mean under the name Keras gives it (train_loss), the steps' beside it (train_loss_step).
        if stage == "train":
            self.log("train_loss_step", total, on_step=True, on_epoch=False, batch_size=size, prog_bar=True)
        self.log(
            f"{stage}_loss",
            total,
            on_step=False,
            on_epoch=True,
            batch_size=size,
            sync_dist=sync,
            prog_bar=stage != "train",
        )
        values = [(f"{name}_loss", value) for name, value in per_output.items()] if len(per_output) > 1 else []
        for name, value in values + list(self._metric_values(targets, predictions)):
            self.log(f"{stage}_{name}", value, on_step=False, on_epoch=True, batch_size=size, sync_dist=sync)
        return total

    def _loss(self, targets: list[Any], predictions: list[Any]) -> tuple[Any, dict[str, Any]]:
        """Keras' total: each output's loss times its weight, plus the layers' own (regularization) losses."""
        if not self._losses:
            from keras.src.trainers.compile_utils import get_loss

            self._losses = [
                get_loss(identifier, target, prediction)
                for identifier, target, prediction in zip(self._keras_losses, targets, predictions)
            ]
        per_output, total = {}, 0.0
        for name, loss, weight, target, prediction in zip(
            self.output_names, self._losses, self._weights, targets, predictions
        ):
            if loss is None:
                continue
            value = _loss_value(loss, target, prediction)
            per_output[name] = value
            total = total + weight * value
        for extra in self.net.losses if self._layer_losses else ():
            total = total + extra
        return total, per_output

    def _metric_values(self, targets: list[Any], predictions: list[Any]) -> Iterator[tuple[str, Any]]:
        """Each metric of this batch alone, named as Keras' `fit` names it (Lightning averages the epoch)."""
        if self._metrics is None:
            return
        detached = [prediction.detach() for prediction in predictions]
        if self._batch_means and not any(_masked(prediction) for prediction in detached):
            for name, output, metric in self._batch_means:  # (what Keras' metric objects give, without their state)
                yield name, _batch_mean(metric, targets[output], detached[output])
            return
        one = len(self.output_names) == 1
        self._metrics.reset_state()
        self._metrics.update_state(targets[0] if one else targets, detached[0] if one else detached)
        results = self._metrics.result()
        if self._batch_means is None:
            self._batch_means = _means_of(self._metrics, list(results))
        yield from results.items()

    # ------------------------------------------------------------ the optimizer

    def configure_optimizers(self) -> Any:
        """The spec's optimizer in torch terms, and its learning-rate schedule stepped every batch."""
        self.configure_model()
        if getattr(self.net, "optimizer", None) is None:
            raise LightningError(
                f"the model '{self.model_name}' has no train section: add one with an optimizer "
                f"and a loss, or override configure_optimizers"
            )
        plan = plan_optimizer(self.net.optimizer, self.overrides)
        self._clipping = plan.clipping
        optimizer, schedule = plan.make(self.parameters())
        if schedule is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def configure_gradient_clipping(
        self, optimizer: Any, gradient_clip_val: float | None = None, gradient_clip_algorithm: str | None = None
    ) -> None:
        """The Trainer's clipping (`gradient_clip_val`), then the spec's (clipnorm, global_clipnorm, clipvalue)."""
        self.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)
        if self._clipping:
            clip_gradients(list(self.parameters()), self._clipping)


def _masked(tensor: Any) -> bool:
    return getattr(tensor, "_keras_mask", None) is not None


def _loss_value(loss: Any, target: Any, prediction: Any) -> Any:
    """`loss(target, prediction)` as Keras' `Loss.__call__` computes it with no sample weights, without its
    per-call scaffolding (name scopes, structure walks) where nothing is masked and the reduction is a mean."""
    import torch

    if _masked(prediction) or loss.reduction not in ("sum_over_batch_size", "mean", "mean_with_sample_weight"):
        return loss(target, prediction)
    dtype = getattr(torch, loss.dtype)
    values = loss.call(target.to(dtype), prediction.to(dtype))
    if _masked(values):
        return loss(target, prediction)
    if values.ndim == 0:
        return values
    count = values.numel()
    return values.sum() / count if count else values.sum() * 0.0


def _means_of(metrics: Any, names: list[str]) -> list[tuple[str, int, Any]]:
    """(name, output index, metric) for each metric of Keras' CompileMetrics in the order (and so under
    the names) its `result()` gives them, when each is a mean of a function of the batch (accuracy,
    crossentropy, mae, ...); else [] (the metric objects compute every step)."""
    from keras.src.metrics.reduction_metrics import Mean, MeanMetricWrapper

    found = [
        (output, metric)
        for group in (metrics._flat_metrics, metrics._flat_weighted_metrics)
        for output, listed in enumerate(group)
        if listed
        for metric in listed.metrics
    ]
    if len(found) != len(names) or not all(
        isinstance(metric, MeanMetricWrapper)
        and type(metric).update_state is MeanMetricWrapper.update_state
        and type(metric).result is Mean.result
        for _, metric in found
    ):
        return []
    return [(name, output, metric) for name, (output, metric) in zip(names, found)]


def _batch_mean(metric: Any, target: Any, prediction: Any) -> Any:
    """A MeanMetricWrapper's result after `reset_state` and `update_state` on this batch alone."""
    import torch

    values = metric._fn(target, prediction, **metric._fn_kwargs).to(getattr(torch, metric.dtype))
    if values.ndim == 0:
        return values
    if values.ndim > 1:
        values = values.mean(dim=tuple(range(1, values.ndim)))
    count = values.shape[0]
    return values.sum() / count if count else values.sum() * 0.0


def _channels_first_message(name: str, expected: tuple[int | None, ...], given: tuple[int, ...]) -> str:
    shown = ", ".join("N" if size is None else str(size) for size in expected)
    return (
        f"input '{name}' takes batches of shape ({shown}), channels last (Keras' layout); this batch is "
        f"{given}, channels first (PyTorch's): pass SpecModule(..., channels_first=True)"
    )


_PARAMS = "net._torch_params."  # where Keras' torch backend keeps a model's variables, by path


def _save_stable_names(module: SpecModule, state: dict[str, Any], prefix: str, _: Any) -> None:
    """state_dict hook: the process-dependent variable names (seed generators) as stable ones."""
    for path, stable in stable_names(module.net).items():
        key = f"{prefix}{_PARAMS}{path}"
        if key in state and path != stable:
            state[f"{prefix}{_PARAMS}{stable}"] = state.pop(key)


def _load_stable_names(module: SpecModule, state: dict[str, Any], prefix: str, *_: Any) -> None:
    """load_state_dict pre-hook: a checkpoint's stable names back to this process' variable names."""
    for path, stable in stable_names(module.net).items():
        key = f"{prefix}{_PARAMS}{stable}"
        if key in state and path != stable:
            state[f"{prefix}{_PARAMS}{path}"] = state.pop(key)
