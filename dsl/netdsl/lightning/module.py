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
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import lightning as L

from netdsl.backend.runtime import init_backend
from netdsl.errors import LightningError, SpecError
from netdsl.lightning.batches import as_inputs, as_list, split_batch
from netdsl.lightning.optim import clip_gradients, plan_optimizer
from netdsl.semantics.analysis import analyze
from netdsl.syntax.loader import Program, as_program, pick_model

if TYPE_CHECKING:
    import torch

__all__ = ["SpecModule"]


class SpecModule(L.LightningModule):
    """The model `model` of `spec` (a `.net` path or a parsed `Program`), trained by Lightning.

    `overrides` are keyword arguments of the spec's optimizer (`learning_rate=3e-4`), saved with
    the other hyperparameters so that `SpecModule.load_from_checkpoint(path)` rebuilds the same
    module. Keras must run on the torch backend in this process (a `BackendError` otherwise).
    """

    def __init__(self, spec: str | os.PathLike | Program, model: str | None = None, **overrides: Any) -> None:
        super().__init__()
        init_backend("torch", mute_stderr=False)
        self.program = as_program(spec)
        self.model_name = pick_model(self.program, model)
        checked = analyze(self.program, models=[self.model_name])  # spec errors now, not once training starts
        if checked.errors:
            raise SpecError(checked.errors, self.program.sources())
        self.overrides = dict(overrides)
        self.net: Any = None
        self.input_names: list[str] = []
        self.output_names: list[str] = []
        self._losses: list[Any] = []
        self._weights: list[float] = []
        self._metrics: list[tuple[int, str, Any]] = []  # (output index, logged name, Keras metric)
        self._clipping: dict[str, float] = {}
        if not isinstance(spec, Program):
            self.save_hyperparameters({"spec": os.path.abspath(spec), "model": self.model_name, **self.overrides})

    # ------------------------------------------------------------ the network

    def configure_model(self) -> None:
        """Build the spec's Keras model on the device Lightning chose (once)."""
        if self.net is not None:
            return
        from netdsl.backend.compiler import compile_program

        with self._on_device():
            analysis, models = compile_program(self.program, [self.model_name])
        graph = analysis.graphs[self.model_name]
        self.input_names = [graph.nodes[i].name for i in graph.inputs]
        self.output_names = graph.output_names
        self.net = models[self.model_name]
        if getattr(self.net, "optimizer", None) is not None:
            self._compiled_objects()

    def _compiled_objects(self) -> None:
        """The loss, weight and metrics of each output, from the compiled model (as Keras' fit uses them)."""
        import keras

        config = self.net.get_compile_config()
        outputs = len(self.output_names)
        losses = self.net.loss if outputs > 1 else [self.net.loss]
        self._losses = [keras.losses.get(loss) if isinstance(loss, (str, dict)) else loss for loss in losses]
        weights = config.get("loss_weights")
        self._weights = [float(w) for w in (weights if outputs > 1 else [weights])] if weights else [1.0] * outputs
        metrics = config.get("metrics") or []
        per_output = metrics if outputs > 1 else [metrics]
        for index, wanted in enumerate(per_output):
            for serialized in wanted or []:
                metric = keras.metrics.get(serialized)
                prefix = f"{self.output_names[index]}_" if outputs > 1 else ""
                self._metrics.append((index, prefix + metric.name, metric))

    def forward(self, x: Any) -> Any:
        """The network's output(s) for `x`: a tensor, or a list/dict of them by input name."""
        with self._on_device():
            return self.net(as_inputs(x, self.input_names), training=self.training)

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
        if not self._losses:
            raise LightningError(f"the model '{self.model_name}' has no loss to train with: add a train section "
                                 f"with one (train {{ loss = ... }})")
        x, targets = split_batch(batch, self.input_names, self.output_names)
        with self._on_device():
            predictions = as_list(self.net(x, training=stage == "train"))
            total, per_output = self._loss(targets, predictions)
        size, sync = int(targets[0].shape[0]), stage != "train"
        self.log(f"{stage}_loss", total, batch_size=size, sync_dist=sync, prog_bar=True)
        if len(per_output) > 1:
            for name, value in per_output.items():
                self.log(f"{stage}_{name}_loss", value, batch_size=size, sync_dist=sync)
        for name, value in self._metric_values(targets, predictions):
            self.log(f"{stage}_{name}", value, batch_size=size, sync_dist=sync)
        return total

    def _loss(self, targets: list[Any], predictions: list[Any]) -> tuple[Any, dict[str, Any]]:
        """Keras' total: each output's loss times its weight, plus the layers' own (regularization) losses."""
        per_output, total = {}, 0.0
        for name, loss, weight, target, prediction in zip(self.output_names, self._losses, self._weights,
                                                          targets, predictions):
            if loss is None:
                continue
            value = loss(target, prediction)
            per_output[name] = value
            total = total + weight * value
        for extra in self.net.losses:
            total = total + extra
        return total, per_output

    def _metric_values(self, targets: list[Any], predictions: list[Any]) -> Iterator[tuple[str, Any]]:
        for index, name, metric in self._metrics:
            metric.reset_state()
            metric.update_state(targets[index], predictions[index].detach())
            yield name, metric.result()

    # ------------------------------------------------------------ the optimizer

    def configure_optimizers(self) -> Any:
        """The spec's optimizer in torch terms, and its learning-rate schedule stepped every batch."""
        self.configure_model()
        if getattr(self.net, "optimizer", None) is None:
            raise LightningError(f"the model '{self.model_name}' has no train section: add one with an optimizer "
                                 f"and a loss, or override configure_optimizers")
        plan = plan_optimizer(self.net.optimizer, self.overrides)
        self._clipping = plan.clipping
        optimizer, schedule = plan.make(self.parameters())
        if schedule is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def configure_gradient_clipping(self, optimizer: Any, gradient_clip_val: float | None = None,
                                    gradient_clip_algorithm: str | None = None) -> None:
        """The Trainer's clipping (`gradient_clip_val`), then the spec's (clipnorm, global_clipnorm, clipvalue)."""
        self.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)
        if self._clipping:
            clip_gradients(list(self.parameters()), self._clipping)

