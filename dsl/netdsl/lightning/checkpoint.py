"""What makes a `SpecModule` checkpoint self-contained and loadable in any process.

The spec's record: its text and every file it imports (by absolute path), their sha256, saved
with the hyperparameters, so that a checkpoint rebuilds its module after the spec moved, was
deleted or was edited (`program_of`).

State names: Keras names a layer's random-seed state `seed_generator`, `seed_generator_1`, ... in
the order a process creates them, and on the torch backend that name is a `state_dict` key; a
checkpoint keys it by the layer holding it instead (`stable_names`), in every process alike.

Nothing here imports Lightning: `netdsl export` reads a `.ckpt` on TensorFlow with it.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from netdsl.backend.torch_names import torch_key
from netdsl.errors import LightningError
from netdsl.limits import MAX_FILE_BYTES, MAX_IMPORTED_FILES
from netdsl.semantics.session import LoadedSpec
from netdsl.syntax.loader import Program, load_text, spec_sha256

__all__ = ["SpecRecord", "record_of", "program_of", "stable_names"]

SpecRecord = dict[str, Any]  # {"path": root's absolute path, "texts": {absolute path: text}, "sha256": ...}
CHANGED = "the spec changed since this checkpoint"


def record_of(program: Program) -> SpecRecord:
    """The spec's texts keyed by absolute path (the root's first), and their hash."""
    texts = {os.path.abspath(name): text for name, text in program.texts.items()}
    return {"path": os.path.abspath(program.root), "texts": texts, "sha256": spec_sha256(program)}


def program_of(spec: str | os.PathLike | Program, include: Sequence[str], record: SpecRecord | None) -> Program:
    """The spec a module is built from.

    Without a record: `spec` itself. With one (a checkpoint's): the record's own texts when `spec`
    is the path it records (the file on disk may be gone or edited since); a spec the caller
    names instead must hash as the record does, or `LightningError` ("the spec changed ...").
    """
    if record is None:
        return LoadedSpec.of(spec, include).program
    if not isinstance(spec, Program) and os.path.abspath(spec) == record.get("path"):
        return _from_record(record, include)
    given = LoadedSpec.of(spec, include).program
    if spec_sha256(given) != record.get("sha256"):
        raise LightningError(
            f"{given.root}: {CHANGED} (its sha256 differs from the one the checkpoint records); "
            "load without spec= to use the checkpoint's own copy"
        )
    return given


def changed_on_disk(record: SpecRecord, include: Sequence[str]) -> bool:
    """Whether the spec file a record names exists and now differs from the record's copy."""
    path = record.get("path")
    if not isinstance(path, str) or not Path(path).is_file():
        return False
    try:
        return spec_sha256(LoadedSpec.of(path, include).program) != record.get("sha256")
    except Exception:  # noqa: BLE001 (a spec that no longer loads has changed)
        return True


def _from_record(record: SpecRecord, include: Sequence[str]) -> Program:
    """The record's texts loaded as the files they were, without reading the disk."""
    path, texts = record.get("path"), record.get("texts")
    if not isinstance(path, str) or not isinstance(texts, dict) or not isinstance(texts.get(path), str):
        raise LightningError("the checkpoint's spec record is damaged (no text for its spec)")
    if len(texts) > MAX_IMPORTED_FILES + 1 or any(
        not isinstance(t, str) or len(t) > MAX_FILE_BYTES for t in texts.values()
    ):
        raise LightningError(
            f"the checkpoint's spec record holds more than the limits allow ({MAX_IMPORTED_FILES} "
            f"imported files of at most {MAX_FILE_BYTES} bytes)"
        )
    by_real = {Path(name).resolve(): text for name, text in texts.items() if isinstance(name, str)}

    def stored(real: Path) -> str | None:
        return by_real.get(real, "")  # a file the record lacks is empty text, never read from disk

    return load_text(texts[path], path, list(include), real=Path(path), overlay=stored)


def stable_names(model: Any) -> dict[str, str]:
    """{a variable's torch key: its name in a checkpoint} for the names that depend on the process:
    each seed generator's state, named by the layers holding it. (Torch keys are variable paths with
    the dots written as `:`, `backend.torch_names`; the same on every backend here.)"""
    names: dict[str, str] = {}

    def walk(layer: Any, prefix: str) -> None:
        for index, generator in enumerate(getattr(layer, "_seed_generators", [])):
            suffix = f"_{index}" if index else ""
            names[torch_key(generator.state.path)] = torch_key(f"{prefix}{layer.name}/seed_generator_state{suffix}")
        for child in layer._flatten_layers(include_self=False, recursive=False):
            walk(child, f"{prefix}{layer.name}/" if layer is not model else "")

    walk(model, "")
    return names


class Checkpointed:
    """What a `SpecModule` checkpoint holds for an export: its spec and model, and its weights by state name."""

    def __init__(self, program: Program, model: str, sha256: str, weights: dict[str, Any]) -> None:
        self.program, self.model, self.sha256, self.weights = program, model, sha256, weights

    def assign(self, model: Any) -> None:
        """Each variable of `model` (built from the same spec, on any backend) set from the checkpoint
        (a dropout's seed state aside: it only draws training's randomness)."""
        stable = stable_names(model)
        missing = []
        for variable in model.variables:
            key = torch_key(variable.path)
            if key in stable:
                continue
            value = self.weights.get(stable.get(key, key))
            if value is None or tuple(value.shape) != tuple(variable.shape):
                missing.append(variable.path)
                continue
            variable.assign(value)
        if missing:
            raise LightningError(
                f"the checkpoint's weights do not fit the model '{self.model}' (no or another "
                f"shape for {', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})"
            )


def read_checkpoint(path: str | os.PathLike) -> Checkpointed:
    """A Lightning `.ckpt` of a `SpecModule`, read with torch's weights-only loader (no code runs)."""
    import numpy as np
    import torch

    if not zipfile.is_zipfile(path):
        raise LightningError("not a Lightning checkpoint (not a torch zip archive)")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 (torch raises many types for a damaged file)
        if type(exc).__name__ == "UnpicklingError":  # the weights-only loader refused an object
            raise LightningError(
                "cannot read the checkpoint with torch's weights-only loader: it holds objects "
                "other than tensors and plain values"
            ) from None
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise LightningError(f"cannot read the checkpoint ({first[:200]})") from None
    hparams = checkpoint.get("hyper_parameters") if isinstance(checkpoint, dict) else None
    state = checkpoint.get("state_dict") if isinstance(checkpoint, dict) else None
    if not isinstance(hparams, dict) or not isinstance(hparams.get("recorded"), dict) or not isinstance(state, dict):
        raise LightningError("not a checkpoint of netdsl.lightning.SpecModule (it records no spec)")
    include = [str(folder) for folder in hparams.get("include") or []]
    program = _from_record(hparams["recorded"], include)
    defines = hparams.get("defines")
    if defines:
        from netdsl.semantics.defines import apply_defines

        program = apply_defines(program, dict(defines))
    prefix = "net._torch_params."
    weights = {
        key[len(prefix) :]: np.asarray(value.float().numpy() if value.is_floating_point() else value.numpy())
        for key, value in state.items()
        if key.startswith(prefix) and isinstance(value, torch.Tensor)
    }
    return Checkpointed(program, str(hparams.get("model")), str(hparams["recorded"].get("sha256")), weights)
