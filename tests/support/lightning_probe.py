"""Run in a subprocess on Keras' torch backend: netdsl.lightning.SpecModule inside PyTorch Lightning.

    python tests/support/lightning_probe.py checks OUT.json TMPDIR   the module's steps, optimizer, checkpoints
    python tests/support/lightning_probe.py journey OUT.json TMPDIR   issue 28's journey (c), first process
    python tests/support/lightning_probe.py reload OUT.json CKPT      the same checkpoint in a fresh process
    python tests/support/lightning_probe.py paths OUT.json TMPDIR    a CNN on torch directly, against Keras;
                                                                     models it refuses, through Keras
    python tests/support/lightning_probe.py fit OUT.npz DEVICES BATCH [KILL_AT]
        lightning_mlp trained with Trainer(accelerator="cpu", devices=DEVICES, strategy="ddp") on
        fixed data, BATCH samples per process and step; process 0 writes the final weights.
        With KILL_AT, process 1 kills itself (SIGKILL) at that step, after writing OUT.killed.

The tests (tests/lightning/test_module.py) assert on what this writes. Lightning's DDP launcher starts
the other processes by running this same command again.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

os.environ["KERAS_BACKEND"] = "torch"

import lightning as L  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset, TensorDataset  # noqa: E402

from netdsl.lightning import SpecModule  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "specs" / "lightning_mlp.net"
QUIET = dict(logger=False, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")

TWO_HEADS = """
model two_heads {
  input image: (6,)
  input extra: (3,)
  joined = (image, extra) -> concatenate -> dense(8, activation=relu, kernel_regularizer=l2(0.01))
  output label = joined -> dense(4)
  output size = joined -> dense(1)
  train {
    optimizer = sgd(learning_rate=exponential_decay(0.1, decay_steps=2, decay_rate=0.5), momentum=0.9,
                    global_clipnorm=0.5)
    loss = {label: sparse_categorical_crossentropy(from_logits=true), size: mse}
    loss_weights = {label: 1.0, size: 3.0}
    metrics = {label: [sparse_categorical_accuracy], size: [mae]}
  }
}
"""


def digits(n: int, seed: int = 0) -> TensorDataset:
    rng = np.random.default_rng(seed)
    return TensorDataset(torch.tensor(rng.random((n, 28, 28), dtype=np.float32)), torch.tensor(rng.integers(0, 10, n)))


class Named(Dataset):
    """Samples as dicts keyed by the spec's input and output names."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(5)
        self.rows = {
            "image": rng.normal(size=(n, 6)).astype("float32"),
            "extra": rng.normal(size=(n, 3)).astype("float32"),
            "label": rng.integers(0, 4, n),
            "size": rng.random((n, 1), dtype=np.float32),
        }

    def __len__(self) -> int:
        return len(self.rows["image"])

    def __getitem__(self, i: int) -> dict:
        return {k: torch.as_tensor(v[i]) for k, v in self.rows.items()}


class LitModel(L.LightningModule):
    """The Lightning tutorial's module, by hand (what lightning_mlp.net replaces)."""

    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(28 * 28, 128)
        self.l2 = torch.nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.relu(self.l1(x.view(x.size(0), -1))))


def _norm(module: L.LightningModule) -> float:
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))


def weights(module: L.LightningModule) -> dict[str, np.ndarray]:
    return {name: p.detach().cpu().numpy().copy() for name, p in module.named_parameters()}


# ------------------------------------------------------------------ checks (one process)


def checks(out: Path, tmp: Path) -> None:
    found: dict = {}
    L.seed_everything(0, verbose=False)
    spec = SpecModule(MLP)
    spec.configure_model()
    found["params"] = [sum(p.numel() for p in spec.parameters()), sum(p.numel() for p in LitModel().parameters())]
    found["names"] = [spec.input_names, spec.output_names]
    # the tutorial's forward and loss, with the spec's weights copied into the hand-written module
    by_hand = LitModel()
    kernel1, bias1, kernel2, bias2 = (
        spec.net.get_layer(n).weights[i].numpy()
        for n, i in [("hidden", 0), ("hidden", 1), ("logits", 0), ("logits", 1)]
    )
    with torch.no_grad():
        for layer, kernel, bias in [(by_hand.l1, kernel1, bias1), (by_hand.l2, kernel2, bias2)]:
            layer.weight.copy_(torch.tensor(kernel.T))
            layer.bias.copy_(torch.tensor(bias))
    x, y = digits(16)[:]
    spec.eval()
    by_hand.eval()
    found["forward_difference"] = float((spec(x) - by_hand(x)).abs().max())
    loss = spec.training_step((x, y), 0)
    found["loss_difference"] = float(abs(loss - torch.nn.functional.cross_entropy(by_hand(x), y)))
    found["adam"] = _optimizer_of(spec)

    found["as_keras"] = as_keras()
    found["two_heads"] = two_heads(tmp)
    found["resume"] = resume(tmp)
    found["errors"] = errors(tmp)
    out.write_text(json.dumps(found, indent=1))


CNN = """
model cnn {
  input image: (13, 13, 3)
  stem = image -> rescaling(1.0 / 255, offset=-0.5) -> conv2d(8, 3, padding="same", activation=relu)
  wide = stem -> conv2d(8, 4, padding="same") -> relu  # an even kernel: Keras pads one more at the end
  h = (stem + wide) -> max_pool2d(2, padding="same") -> conv2d(12, 3, strides=2, padding="same", activation=tanh)
        -> average_pooling2d(2) -> flatten -> dense(16, activation=relu, kernel_regularizer=l2(0.01))
        -> dropout(0.5)
  pooled = stem -> global_average_pooling2d
  output probs = h -> dense(5, activation=softmax)
  output size = pooled -> dense(2)
  train {
    optimizer = adam(learning_rate=1e-3)
    loss = {probs: sparse_categorical_crossentropy, size: mse}
    metrics = {probs: [accuracy, sparse_categorical_crossentropy], size: [mae]}
  }
}
"""


def paths(out: Path, tmp: Path) -> None:
    """A CNN of the layers SpecModule runs on torch directly (netdsl/lightning/torch_path.py), images given
    channels first and channels last: outputs, gradients and validation values against Keras' own."""
    (tmp / "cnn.net").write_text(CNN)
    found: dict = {}
    rng = np.random.default_rng(5)
    image = torch.tensor(rng.random((24, 13, 13, 3), dtype=np.float32) * 255)
    probs, size = torch.tensor(rng.integers(0, 5, 24)), torch.tensor(rng.random((24, 2), dtype=np.float32))
    for layout, first in [("channels_first", True), ("channels_last", False)]:
        L.seed_everything(5, verbose=False)
        module = SpecModule(tmp / "cnn.net", channels_first=first)
        module.configure_model()
        given = image.permute(0, 3, 1, 2).contiguous() if first else image
        weights = [torch.tensor(rng.random((24, units), dtype=np.float32)) for units in (5, 2)]
        sides = {}
        for side in ("spec", "keras"):
            module.eval()
            module.zero_grad()
            outputs = module(given) if side == "spec" else module.net({"image": image}, training=False)
            sum((output * weight).sum() for output, weight in zip(outputs, weights)).backward()
            sides[side] = (
                [output.detach().numpy() for output in outputs],
                [p.grad.numpy().copy() for p in module.parameters() if p.requires_grad],
            )
        found[layout] = {
            "on_torch": module._path is not None,
            "output_difference": max(float(np.abs(a - b).max()) for a, b in zip(sides["spec"][0], sides["keras"][0])),
            "gradient_difference": max(
                float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(sides["spec"][1], sides["keras"][1])
            ),
            "parameters": len(sides["spec"][1]),
        }
    # three batches: the first resolves the metrics through Keras' objects, the others by their batch means
    trainer = L.Trainer(**QUIET, enable_checkpointing=False)
    batches = DataLoader(
        TensorDataset(image.permute(0, 3, 1, 2), probs, size),
        batch_size=8,
        collate_fn=lambda rows: (
            torch.stack([r[0] for r in rows]),
            {"probs": torch.stack([r[1] for r in rows]), "size": torch.stack([r[2] for r in rows])},
        ),
    )
    module = SpecModule(tmp / "cnn.net", channels_first=True)
    logged = trainer.validate(module, batches, verbose=False)[0]
    by_keras = module.net.evaluate(
        image.numpy(), {"probs": probs.numpy(), "size": size.numpy()}, batch_size=8, verbose=0, return_dict=True
    )
    found["validated"] = {
        "lightning": {k: float(v) for k, v in logged.items()},
        "keras": {k: float(v) for k, v in by_keras.items()},
    }
    found["fallback"] = {name: _through_keras(tmp, name, layer, image, probs) for name, layer in FALLBACKS.items()}
    out.write_text(json.dumps(found, indent=1))


# Models the torch path does not run (a layer it does not know; one it knows, with a setting it refuses).
FALLBACK = """
model fallback {{
  input image: (13, 13, 3)
  output probs = image -> conv2d(8, 3, padding="same", activation=relu) -> {layer} -> flatten
                       -> dense(5, activation=softmax)
  train {{
    optimizer = adam(learning_rate=1e-3)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
  }}
}}
"""
FALLBACKS = {"batch_norm": "batch_norm", "average_same": 'average_pooling2d(2, padding="same")'}


def _through_keras(tmp: Path, name: str, layer: str, image: torch.Tensor, probs: torch.Tensor) -> dict:
    """A model the torch path refuses, given channels-first batches: one epoch of training, then its outputs
    against Keras' own and its validation values against `evaluate`'s."""
    spec = tmp / f"{name}.net"
    spec.write_text(FALLBACK.format(layer=layer))
    first = image.permute(0, 3, 1, 2).contiguous()
    batches = DataLoader(TensorDataset(first, probs), batch_size=8)
    L.seed_everything(5, verbose=False)
    module = SpecModule(spec, channels_first=True)
    trainer = L.Trainer(**QUIET, enable_checkpointing=False, max_epochs=1)
    trainer.fit(module, batches)
    trained = float(trainer.callback_metrics["train_loss"])
    module.eval()
    with torch.no_grad():
        given, keras_own = module(first), module.net(image, training=False)
    logged = trainer.validate(module, batches, verbose=False)[0]
    by_keras = module.net.evaluate(image.numpy(), probs.numpy(), batch_size=8, verbose=0, return_dict=True)
    return {
        "on_torch": module._path is not None,
        "train_loss": trained,
        "output_difference": float((given - keras_own).abs().max()),
        "validated": {
            "lightning": {k: float(v) for k, v in logged.items()},
            "keras": {k: float(v) for k, v in by_keras.items()},
        },
    }


def _optimizer_of(module: SpecModule) -> dict:
    optimizer = module.configure_optimizers()
    if isinstance(optimizer, dict):
        optimizer = optimizer["optimizer"]
    group = {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}
    return {"class": type(optimizer).__name__, **{k: v for k, v in group.items() if isinstance(v, (int, float, tuple))}}


def as_keras() -> dict:
    """specs/multi_output.net (metrics = {probs: [accuracy], box: [mae]}) validated by Lightning, and
    evaluated by Keras' own `evaluate` with the same weights on the same batch."""
    L.seed_everything(4, verbose=False)
    module = SpecModule(ROOT / "specs" / "multi_output.net")
    rng = np.random.default_rng(4)
    image = torch.tensor(rng.random((8, 64, 64, 3), dtype=np.float32) * 255)
    probs, box = torch.tensor(rng.integers(0, 10, 8)), torch.tensor(rng.random((8, 4), dtype=np.float32))
    trainer = L.Trainer(**QUIET, enable_checkpointing=False)
    logged = trainer.validate(
        module,
        DataLoader(
            TensorDataset(image, probs, box),
            batch_size=8,
            collate_fn=lambda rows: (
                torch.stack([r[0] for r in rows]),
                {"probs": torch.stack([r[1] for r in rows]), "box": torch.stack([r[2] for r in rows])},
            ),
        ),
        verbose=False,
    )[0]
    by_keras = module.net.evaluate(
        image.numpy(), {"probs": probs.numpy(), "box": box.numpy()}, batch_size=8, verbose=0, return_dict=True
    )
    return {"lightning": {k: float(v) for k, v in logged.items()}, "keras": {k: float(v) for k, v in by_keras.items()}}


def two_heads(tmp: Path) -> dict:
    """Two inputs, two outputs, dict batches: the weighted loss, the logged names, the schedule, clipping."""
    (tmp / "two_heads.net").write_text(TWO_HEADS)
    L.seed_everything(1, verbose=False)
    module = SpecModule(tmp / "two_heads.net", momentum=0.5)
    trainer = L.Trainer(max_epochs=1, **QUIET, enable_checkpointing=False)
    loader = DataLoader(Named(24), batch_size=8)
    module.configure_model()
    batch = next(iter(loader))
    predicted = module.net({"image": batch["image"], "extra": batch["extra"]}, training=False)
    ce = torch.nn.functional.cross_entropy(predicted[0], batch["label"])
    mse = torch.mean((predicted[1] - batch["size"]) ** 2)
    l2 = sum(0.01 * torch.sum(w.value**2) for w in module.net.get_layer("joined").weights[:1])
    module.eval()
    with torch.no_grad():
        by_hand = float(ce + 3.0 * mse + l2)
        total, _ = module._loss([batch["label"], batch["size"]], list(predicted))
    module.train()
    rates = []

    class Rates(L.Callback):
        def on_train_batch_start(self, trainer: L.Trainer, *_: object) -> None:
            rates.append(trainer.optimizers[0].param_groups[0]["lr"])

        def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
            # after the step, the gradients it used (clipped) are still there
            trainer.optimizers[0].register_step_post_hook(lambda *_: norms.append(_norm(pl_module)))

    norms: list[float] = []
    trainer.callbacks.append(Rates())
    trainer.fit(module, loader, loader)
    logged = sorted(trainer.callback_metrics)
    trainer.test(module, loader, verbose=False)
    import keras

    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    return {
        "loss": [float(total), by_hand],
        "logged": logged,
        "tested": sorted(trainer.callback_metrics),
        "optimizer": _optimizer_of(module),
        "rates": rates,
        "keras_rates": [float(schedule(s)) for s in range(3)],
        "largest_norm": max(norms),
    }


def resume(tmp: Path) -> dict:
    """Three epochs straight, and one epoch then two more from Lightning's checkpoint: the same curve."""
    data = DataLoader(digits(64, seed=2), batch_size=16)

    def fit(epochs: int, folder: Path, ckpt: Path | None = None) -> tuple[SpecModule, list]:
        L.seed_everything(3, verbose=False)
        module = SpecModule(MLP)
        losses: list = []

        class Curve(L.Callback):
            def on_train_epoch_end(self, trainer: L.Trainer, _: object) -> None:
                losses.append(float(trainer.callback_metrics["val_loss"]))

        checkpoints = L.pytorch.callbacks.ModelCheckpoint(dirpath=folder, save_top_k=-1, every_n_epochs=1)
        trainer = L.Trainer(max_epochs=epochs, callbacks=[checkpoints, Curve()], **QUIET)
        trainer.fit(module, data, data, ckpt_path=ckpt)
        return module, losses

    straight, curve = fit(3, tmp / "straight")
    first = sorted((tmp / "straight").glob("epoch=0-*.ckpt"))[0]
    resumed, rest = fit(3, tmp / "resumed", first)
    difference = max(float(np.abs(a - b).max()) for a, b in zip(weights(straight).values(), weights(resumed).values()))
    loaded = SpecModule.load_from_checkpoint(first)
    return {"curve": curve, "resumed_curve": rest, "difference": difference, "loaded_hparams": dict(loaded.hparams)}


def errors(tmp: Path) -> dict:
    from netdsl.errors import NetdslError

    said = {}
    (tmp / "lion.net").write_text(MLP.read_text().replace("adam(learning_rate=1e-3)", "lion(learning_rate=1e-4)"))
    cases = {
        "lion": lambda: SpecModule(tmp / "lion.net").configure_optimizers(),
        "override": lambda: SpecModule(MLP, momentum=0.9).configure_optimizers(),
        "batch": lambda: SpecModule(MLP).training_step({"pixels": torch.zeros(2, 28, 28)}, 0),
    }
    for name, case in cases.items():
        try:
            case()
        except NetdslError as exc:
            said[name] = str(exc)
    return said


# ------------------------------------------------------------------ the journey (tests/journeys)

JOURNEY = """
model digits {
  input image: (12, 12, 1)
  h = image -> conv2d(4, 3, activation=relu) -> max_pool2d(2) -> flatten -> dropout(0.25)
  output probs = h -> dense(3, activation=softmax)
  train {
    optimizer = adam(learning_rate=1e-2)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
  }
}
"""


def pictures(n: int, seed: int) -> TensorDataset:
    """Three classes of 12x12 images, told apart by which third of the picture is bright."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    images = rng.random((n, 12, 12, 1), dtype=np.float32) * 0.3
    for i, label in enumerate(labels):
        images[i, 4 * label : 4 * label + 4] += 0.7
    return TensorDataset(torch.tensor(images), torch.tensor(labels))


def journey(out: Path, tmp: Path) -> None:
    """Fit with CSVLogger and ModelCheckpoint, load the best twice in this process, test, and compare
    the logged accuracy with Keras' own evaluate on the same weights and batch."""
    import sys

    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger

    found: dict = {}
    spec = tmp / "specs" / "digits.net"
    spec.parent.mkdir()
    spec.write_text(JOURNEY)
    L.seed_everything(0, verbose=False)
    train, val = DataLoader(pictures(96, 1), batch_size=32, shuffle=True), DataLoader(pictures(48, 2), batch_size=48)
    module = SpecModule(spec)
    best = ModelCheckpoint(dirpath=tmp / "ckpts", monitor="val_loss", save_last=True)
    trainer = L.Trainer(
        max_epochs=3,
        accelerator="cpu",
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=CSVLogger(tmp / "logs", name="digits"),
        callbacks=[best],
    )
    trainer.fit(module, train, val)
    found["best"] = best.best_model_path
    loaded = [SpecModule.load_from_checkpoint(best.best_model_path) for _ in range(2)]  # after a fit: twice
    x, y = pictures(48, 2)[:]
    outputs = [m.eval()(x).detach().numpy() for m in loaded]
    found["loaded_difference"] = float(np.abs(outputs[0] - outputs[1]).max())
    np.save(tmp / "outputs.npy", outputs[0])
    np.save(tmp / "inputs.npy", x.numpy())
    tested = trainer.test(loaded[0], val, verbose=False)[0]
    found["tested"] = {k: round(float(v), 6) for k, v in tested.items()}
    keras_model = loaded[0].net
    keras_model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    by_keras = keras_model.evaluate(x.numpy(), y.numpy(), batch_size=48, verbose=0, return_dict=True)
    found["keras"] = {k: round(float(v), 6) for k, v in by_keras.items()}
    found["tensorflow_imported"] = "tensorflow" in sys.modules
    try:
        loaded[0](x.permute(0, 3, 1, 2))
    except Exception as exc:  # noqa: BLE001 (the test asserts on its type and message)
        found["nchw"] = f"{type(exc).__name__}: {exc}"
    first = SpecModule.load_from_checkpoint(best.best_model_path, channels_first=True).eval()
    found["channels_first_difference"] = float(np.abs(first(x.permute(0, 3, 1, 2)).detach().numpy() - outputs[0]).max())
    found["hparams"] = sorted(loaded[0].hparams)
    out.write_text(json.dumps(found, indent=1))


def reload(out: Path, checkpoint: Path) -> None:
    """The checkpoint in a fresh process, its spec moved away: twice, the same outputs; then the spec
    edited where it was (loads the checkpoint's copy, with a warning), and an edited spec passed."""
    import sys
    import warnings

    x, _ = pictures(48, 2)[:]
    loaded = [SpecModule.load_from_checkpoint(checkpoint, weights_only=True).eval() for _ in range(2)]
    outputs = [m(x).detach().numpy() for m in loaded]
    found: dict = {
        "difference": float(np.abs(outputs[0] - outputs[1]).max()),
        "root": loaded[0].program.root,
        "tensorflow_imported": "tensorflow" in sys.modules,
    }
    np.save(out.with_suffix(".npy"), outputs[0])
    edited = JOURNEY.replace("conv2d(4, 3", "conv2d(6, 3")
    (out.parent / "edited.net").write_text(edited)
    try:
        SpecModule.load_from_checkpoint(checkpoint, spec=str(out.parent / "edited.net"))
    except Exception as exc:  # noqa: BLE001 (the test asserts on its type and message)
        found["explicit_edited"] = f"{type(exc).__name__}: {exc}"
    where = Path(loaded[0].hparams["spec"])
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(edited)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        again = SpecModule.load_from_checkpoint(checkpoint).eval()
    found["warned"] = [str(w.message) for w in warned if "spec" in str(w.message)]
    found["edited_difference"] = float(np.abs(again(x).detach().numpy() - outputs[0]).max())
    out.write_text(json.dumps(found, indent=1))


# ------------------------------------------------------------------ fit (one or several processes)


def fit(out: Path, devices: int, batch: int, kill_at: int | None) -> None:
    L.seed_everything(0, verbose=False)
    module = SpecModule(MLP)
    callbacks = [Killer(out, kill_at)] if kill_at is not None else []
    trainer = L.Trainer(
        max_epochs=2, devices=devices, strategy="ddp", callbacks=callbacks, **QUIET, enable_checkpointing=False
    )
    trainer.fit(module, DataLoader(digits(128, seed=4), batch_size=batch))
    if trainer.global_rank == 0:
        np.savez(out, **weights(module))


class Killer(L.Callback):
    def __init__(self, out: Path, step: int) -> None:
        self.out, self.step = out, step

    def on_train_batch_end(self, trainer: L.Trainer, *_: object) -> None:
        if trainer.global_rank == 1 and trainer.global_step == self.step:
            Path(f"{self.out}.killed").write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    if sys.argv[1] == "checks":
        checks(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "journey":
        journey(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "paths":
        paths(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "reload":
        reload(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        fit(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else None)
