"""A train section's fine-tuning at build time: initial weights from files, frozen parts.

A weights file is read as arrays and nothing else: a `.keras` file is a zip
whose `config.json` is read as JSON (the layer names) and whose
`model.weights.h5` is read with h5py (datasets only); a `.weights.h5` file is
read the same way. No Keras object is deserialised from the file and no code
in it can run (a `.keras` holding a Lambda layer gives its weights, or
nothing). See `semantics/fine_tuning.py` for the settings and their checks.

Keras saves a model's weights under `layers/<key>/vars/<i>`, where `<key>` is
the layer's class name in snake case, numbered in layer order (`dense`,
`dense_1`, ...); a nested model's under `layers/<key>/layers/...`. The
layer names are in `config.json`, in the same order, so a `.keras` file is
matched by layer NAME; a `.weights.h5` file has no names and is matched by
that structure. Every weighted layer of a part must find arrays of its
shapes, or the build fails naming it (unless `init_strict = false`).
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np

from netdsl.errors import Fail, Span, UsageError
from netdsl.files import ZIP_ERRORS
from netdsl.limits import MAX_CONFIG_BYTES
from netdsl.semantics.fine_tuning import WEIGHT_FILES, InitFrom, Pattern, part_layer_names

__all__ = ["apply_fine_tuning", "load_weights_file", "set_trainable"]

_WEIGHTS_ENTRY = "model.weights.h5"


@dataclass
class WeightsFile:
    """Arrays by layer path: `by_name` (a `.keras`: from config.json) and `by_key` (Keras' h5 keys)."""

    path: str
    by_key: dict[tuple, list[np.ndarray]] = field(default_factory=dict)
    by_name: dict[tuple, tuple] = field(default_factory=dict)  # name path -> key path
    nested: set[tuple] = field(default_factory=set)  # key paths whose weights sit in sub-layers

    def arrays(self, names: tuple, keys: tuple) -> list[np.ndarray] | None:
        key = self.by_name.get(names) if self.by_name else keys
        return self.by_key.get(key) if key is not None else None


def apply_fine_tuning(model: Any, graph: Any) -> list[str]:
    """Load the train section's `init` parts into `model` and freeze its `freeze` parts.

    Returns one line per part loaded (what matched); raises `Fail` at the
    setting's span for a file that cannot be read or a layer that does not match."""
    spec = graph.train
    report = []
    folder = _spec_folder(graph.span.file)
    for init in spec.init:
        weights = _read(folder, init)
        part = set(part_layer_names(graph, [init.part.text])) if init.part.text else None
        report.append(_load_part(model, init, weights, spec.init_strict, part))
    set_trainable(model, graph, False)
    return report


def load_weights_file(model: Any, path: str | os.PathLike[str]) -> str:
    """The whole model's weights from FILE given outside the spec (`build --weights`,
    `train --init-from`): read and matched as a spec's `init = "FILE"` (strictly).

    Returns the line saying what matched; raises `UsageError` with the spec's
    messages for a file that cannot be read or a layer that does not match."""
    shown = os.fspath(path)
    init = InitFrom(Pattern("", None), shown, Span.at(shown, 1, 1))
    try:
        target = Path(shown)
        if not shown.endswith(WEIGHT_FILES):
            raise Fail(init.span, f"a weights file is a .keras or .weights.h5 path, received '{shown}'")
        if not target.is_file():
            raise Fail(init.span, f"weights file '{shown}' does not exist")
        return _load_part(model, init, _read_file(target, init), strict=True, part=None)
    except Fail as fail:
        assert fail.diagnostic is not None  # every Fail raised above has its message (none is a Fail.reported())
        raise UsageError(fail.diagnostic.message) from None  # (its hint is about init_strict: a spec setting)


def set_trainable(model: Any, graph: Any, trainable: bool) -> None:
    """Freeze (or unfreeze) the layers the train section's `freeze` names: those
    `semantics.fine_tuning.part_layer_names` finds in the graph (what `check`
    accepted and `summary` counted), by their Keras names among `model.layers`."""
    names = set(part_layer_names(graph, [p.text for p in graph.train.freeze]))
    for layer in model.layers:
        if layer.name in names:
            layer.trainable = trainable


# ---------------------------------------------------------------- reading


def _spec_folder(file: str) -> Path:
    """Where a spec's relative paths start: its file's folder, as for imports (the
    current folder for text given without a filename)."""
    return Path.cwd().resolve() if file == "<string>" else Path(file).resolve().parent


def _read(folder: Path, init: InitFrom) -> WeightsFile:
    target = (folder / init.path).resolve()
    try:
        target.relative_to(folder)
    except ValueError:
        raise Fail(init.span, f"weights file '{init.path}' leaves the spec's folder") from None
    if not target.is_file():
        raise Fail(init.span, f"weights file '{init.path}' does not exist (relative to {folder.name or folder}/)")
    return _read_file(target, init)


def _read_file(target: Path, init: InitFrom) -> WeightsFile:
    try:
        if init.path.endswith(".keras"):
            return _read_keras(target, init.path)
        return _read_h5(target.read_bytes(), init.path, names=None)
    except Fail:
        raise
    except (ValueError, KeyError, json.JSONDecodeError, *ZIP_ERRORS) as exc:
        raise Fail(init.span, f"cannot read weights file '{init.path}': {exc}") from None


def _read_keras(path: Path, shown: str) -> WeightsFile:
    with zipfile.ZipFile(path) as archive:
        infos = {i.filename: i for i in archive.infolist()}
        for entry in ("config.json", _WEIGHTS_ENTRY):
            if entry not in infos:
                raise ValueError(f"it has no {entry} (not a Keras 3 .keras file)")
        if infos["config.json"].file_size > MAX_CONFIG_BYTES:
            raise ValueError(f"its config.json is over {MAX_CONFIG_BYTES // 2**20} MiB")
        config = json.loads(archive.read("config.json"))
        data = archive.read(_WEIGHTS_ENTRY)
    names: dict[tuple, tuple] = {}
    _layer_keys(config, (), (), names)
    return _read_h5(data, shown, names)


def _layer_keys(config: Any, name_path: tuple, key_path: tuple, out: dict) -> None:
    """Each layer's name path -> its key path in the h5 file, from a model's config (data only)."""
    inner = config.get("config") if isinstance(config, dict) else None
    layers = inner.get("layers") if isinstance(inner, dict) else None
    if not isinstance(layers, list):
        return
    used: dict[str, int] = {}
    for layer in layers:
        if not isinstance(layer, dict) or str(layer.get("module", "")).startswith("keras.src.ops"):
            continue  # operation nodes hold no weights and are not saved
        class_name = str(layer.get("class_name", ""))
        name = str(layer.get("name") or (layer.get("config") or {}).get("name") or "")
        key = _unique_key(_snake_case(class_name), used)
        out[name_path + (name,)] = key_path + ("layers", key)
        if class_name in ("Functional", "Sequential"):
            _layer_keys(layer, name_path + (name,), key_path + ("layers", key), out)


def _read_h5(data: bytes, shown: str, names: dict | None) -> WeightsFile:
    import h5py

    found = WeightsFile(shown, by_name=names or {})
    with h5py.File(io.BytesIO(data), "r") as h5:
        def visit(group: Any, path: tuple) -> None:
            for child in sorted(group.keys()):
                item = group[child]
                if not isinstance(item, h5py.Group):
                    continue
                if child == "vars":
                    arrays = [np.asarray(item[k][()]) for k in sorted(item.keys(), key=_index)
                              if isinstance(item[k], h5py.Dataset)]
                    found.by_key[path] = arrays
                elif child == "layers" or path[-1:] == ("layers",):
                    visit(item, path + (child,))
                else:
                    found.nested.add(path)  # weights of a sub-layer (a wrapper's, an attention's)
        visit(h5, ())
    return found


def _index(key: str) -> int:
    return int(key) if key.isdigit() else 1 << 30


def _unique_key(key: str, used: dict[str, int]) -> str:
    """Keras' numbering of saved layers: dense, dense_1, dense_2, ..."""
    count = used.get(key, 0)
    used[key] = count + 1
    return key if count == 0 else f"{key}_{count}"


def _snake_case(name: str) -> str:
    from keras.src.utils.naming import to_snake_case

    return to_snake_case(name)


# ---------------------------------------------------------------- matching


def _model_keys(model: Any, name_path: tuple = (), key_path: tuple = ()) -> list[tuple[tuple, tuple, Any]]:
    """(name path, key path, layer) of every layer of `model`, nested models opened."""
    found = []
    used: dict[str, int] = {}
    for layer in model.layers:
        key = key_path + ("layers", _unique_key(_snake_case(type(layer).__name__), used))
        names = name_path + (layer.name,)
        found.append((names, key, layer))
        if isinstance(layer, keras.Model):
            found.extend(_model_keys(layer, names, key))
    return found


def _load_part(model: Any, init: InitFrom, weights: WeightsFile, strict: bool, part: set[str] | None) -> str:
    """Load the layers of `part` (the Keras names of the model's layers the part's pattern
    names, by `part_layer_names`: what `check` accepted; None: the whole model) from `weights`."""
    layers = [(n, k, layer) for n, k, layer in _model_keys(model)
              if layer.weights and not isinstance(layer, keras.Model)]
    pattern = init.part.text
    if part is not None:
        named = [layer for layer in model.layers if layer.name in part]
        if len(named) == 1 and isinstance(named[0], keras.Model) and not _holds(weights, named[0].name):
            # A nested model's own file: its layers at the top level of the file.
            layers = [(n, k, layer) for n, k, layer in _model_keys(named[0]) if layer.weights
                      and not isinstance(layer, keras.Model)]
        else:
            layers = [(n, k, layer) for n, k, layer in layers if n[0] in part]
    loaded, missing = 0, []
    for names, keys, layer in layers:
        arrays = weights.arrays(names, keys)
        shown = ".".join(names)
        if arrays is None or (not arrays and keys in weights.nested):
            missing.append(shown)
            continue
        want = [tuple(w.shape) for w in layer.weights]
        got = [tuple(a.shape) for a in arrays]
        if want != got:
            raise Fail(init.span, f"layer '{shown}' has weights of shapes {_shapes(want)}; "
                                  f"'{weights.path}' holds {_shapes(got)} for it")
        layer.set_weights(arrays)
        loaded += 1
    if missing and strict:
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        raise Fail(init.span, f"'{weights.path}' has no weights for layer '{missing[0]}'"
                              + (f", {', '.join(repr(m) for m in missing[1:3])}" if len(missing) > 1 else "") + more,
                   "its layers are matched by name (a .weights.h5 file: by structure); "
                   "init_strict = false loads what matches")
    if not loaded:
        raise Fail(init.span, f"no layer of {'the model' if not pattern else repr(pattern)} "
                              f"matched a weight of '{weights.path}'")
    shown_part = f"'{pattern}'" if pattern else "the model"
    return f"init: {loaded} layer{'s' if loaded != 1 else ''} of {shown_part} from {weights.path}" + (
        f" ({len(missing)} without weights there)" if missing else "")


def _holds(weights: WeightsFile, name: str) -> bool:
    """Whether a `.keras` file has a layer `name` at its top level (a model containing the part)."""
    return (name,) in weights.by_name


def _shapes(shapes: list[tuple]) -> str:
    return ", ".join("(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + ")" for s in shapes) or "none"
