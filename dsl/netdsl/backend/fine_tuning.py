"""A train section's fine-tuning at build time: initial weights from files, frozen parts.

A weights file is read as arrays and nothing else: a `.keras` file is a zip
whose `config.json` is read as JSON (the layer names) and whose
`model.weights.h5` is read with h5py (datasets only); a `.weights.h5` file is
read the same way. No Keras object is deserialised from the file and no code
in it can run (a `.keras` holding a Lambda layer gives its weights, or
nothing). See `semantics/fine_tuning.py` for the settings and their checks.

The reader is as strict as Keras' own (`safe_get_h5_dataset`), stricter in its bounds
(security review 2026-12b, N2 and N3): it walks the file through hard links only (an
external or soft link is refused, naming its path in the file), refuses an array kept in
another file (external storage) or mapped from others (a virtual dataset: h5py reading
one from memory crashes) before reading a byte of it, refuses an array that declares far
more than the file stores for it, and reads an array only once its declared shape and
type have been compared with the model's weight. A `.keras` file's members are read
through `netdsl.archives`, bounded by size and by expansion before they are expanded.

Keras saves a model's weights under `layers/<key>/vars/<i>`, where `<key>` is
the layer's class name in snake case, numbered in layer order (`dense`,
`dense_1`, ...); a nested model's under `layers/<key>/layers/...`. The
layer names are in `config.json`, in the same order, so a `.keras` file is
matched by layer NAME; a `.weights.h5` file has no names and is matched by
that structure. Every weighted layer of a part must find arrays of its
shapes, or the build fails naming it (unless `init_strict = false`).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np

from netdsl.archives import Bound, open_zip, read_config_json, read_member
from netdsl.errors import RESOURCE_ERRORS, Fail, FileRefused, Span, UsageError
from netdsl.files import ZIP_ERRORS, Refused, open_regular
from netdsl.limits import (
    MAX_BLOCK_DEPTH,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_WEIGHTS_MEMBER_BYTES,
    MAX_WEIGHTS_OBJECTS,
    MAX_WEIGHTS_PLAIN_EXPANSION,
    MAX_WEIGHTS_RATIO,
)
from netdsl.semantics.fine_tuning import (
    INSIDE,
    WEIGHT_FILES,
    InitFrom,
    Pattern,
    part_layer_names,
    second_phase_frozen,
    zoo_weights,
)

__all__ = ["apply_fine_tuning", "load_weights_file", "set_trainable", "thaw_for_second_phase"]

_WEIGHTS_ENTRY = "model.weights.h5"


@dataclass(frozen=True)
class Stored:
    """An array of a weights file, checked and not read yet: its path in the file, what it
    declares, and the h5py dataset, read only once the model's weight is compared with it."""

    where: str
    shape: tuple[int, ...]
    dtype: np.dtype
    dataset: Any


@dataclass
class WeightsFile:
    """Arrays by layer path: `by_name` (a `.keras`: from config.json) and `by_key` (Keras' h5 keys)."""

    path: str
    by_key: dict[tuple, list[Stored]] = field(default_factory=dict)
    by_name: dict[tuple, tuple] = field(default_factory=dict)  # name path -> key path
    nested: set[tuple] = field(default_factory=set)  # key paths whose weights sit in sub-layers
    # Keras 2's layout (a `.h5` file: keras.applications' published weights): the arrays of each
    # weighted layer in the file's order, matched to the model's weighted layers in order, as
    # Keras' own `load_weights` matches such a file.
    ordered: list[tuple[str, list[Stored]]] | None = None

    def arrays(self, names: tuple, keys: tuple) -> list[Stored] | None:
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
        part = set(part_layer_names(graph, [init.part.text])) if init.part.text else None
        with _opened(_inside(folder, init), init) as weights:
            report.append(_load_part(model, init, weights, spec.init_strict, part))
    set_trainable(model, graph, False)
    return report


def check_weights_file(path: str | os.PathLike[str]) -> None:
    """Every group and array of FILE checked as `load_weights_file` checks them (hard links only, no
    external storage or virtual dataset, nothing declared beyond what is stored), none read: for a
    reader that matches sub-layers itself (Keras' `load_weights`, which `export --weights` calls).
    Raises `UsageError` for a path that is not a weights file and `FileRefused` for a refused one."""
    shown = os.fspath(path)
    init = InitFrom(Pattern("", None), shown, Span.at(shown, 1, 1))
    if not shown.endswith(WEIGHT_FILES):
        raise UsageError(f"a weights file is a .keras, .weights.h5 or Keras 2 .h5 path, received '{shown}'")
    if not Path(shown).is_file():
        raise UsageError(f"weights file '{shown}' does not exist")
    try:
        with _opened(Path(shown), init):
            pass
    except Unreadable as refused:
        raise FileRefused(shown, refused.reason) from None


def load_weights_file(model: Any, path: str | os.PathLike[str]) -> str:
    """The whole model's weights from FILE given outside the spec (`build --weights`,
    `train --init-from`): read and matched as a spec's `init = "FILE"` (strictly).

    Returns the line saying what matched; raises `UsageError` with the spec's
    messages for a layer that does not match, and `FileRefused` (`PATH: error: ...`, exit 1)
    for a file that cannot be read or is refused for what it holds."""
    shown = os.fspath(path)
    init = InitFrom(Pattern("", None), shown, Span.at(shown, 1, 1))
    target = Path(shown)
    if not shown.endswith(WEIGHT_FILES):
        raise UsageError(f"a weights file is a .keras, .weights.h5 or Keras 2 .h5 path, received '{shown}'")
    if not target.is_file():
        raise UsageError(f"weights file '{shown}' does not exist")
    try:
        with _opened(target, init) as weights:
            return _load_part(model, init, weights, strict=True, part=None)
    except Unreadable as refused:
        raise FileRefused(shown, refused.reason) from None
    except Fail as fail:
        assert fail.diagnostic is not None  # every Fail raised above has its message (none is a Fail.reported())
        raise UsageError(fail.diagnostic.message) from None  # (its hint is about init_strict: a spec setting)


def set_trainable(model: Any, graph: Any, trainable: bool) -> None:
    """Freeze (or unfreeze) the layers the train section's `freeze` names: those
    `semantics.fine_tuning.part_layer_names` finds in the graph (what `check`
    accepted and `summary` counted), by their Keras names among `model.layers`
    (`backbone/conv1`: `conv1` of the nested model `backbone`). In Keras' order,
    a nested model before its own layers: setting a model's `trainable` sets
    every layer inside it."""
    for name in part_layer_names(graph, [p.text for p in graph.train.freeze], nested=True):
        layer = _layer_at(model, name)  # "backbone/conv1": a layer of a nested model
        layer.trainable = trainable
        if trainable:
            _keep_batch_norms_frozen(layer)


def thaw_for_second_phase(model: Any, graph: Any) -> None:
    """The second phase: the parts `freeze` froze train again, batch norms excepted — only those
    `unfreeze` names when it is given (keras.io's EfficientNet example unfreezes the top of the
    backbone). Keras makes a layer's weights trainable when it and every model around it are, so:
    everything trainable, then each layer of the first phase's frozen ones that is not unfrozen
    frozen again, then the unfrozen parts' batch norms."""
    if not graph.train.unfreeze:
        set_trainable(model, graph, True)
        return
    frozen = [path for path in _weighted_leaves(model, "") if not _trains(model, path)]
    still = second_phase_frozen(graph, graph.train, frozen)
    _all_trainable(model)
    for path in still:
        _layer_at(model, path).trainable = False
    for path in part_layer_names(graph, [p.text for p in graph.train.unfreeze], nested=True):
        _keep_batch_norms_frozen(_layer_at(model, path))


def _all_trainable(model: Any) -> None:
    """Every layer of `model` and of the models nested in it trainable. (A Keras 3 functional model's
    `trainable = True` does not reach the layers of the model that holds it.)"""
    model.trainable = True
    for layer in model.layers:
        layer.trainable = True
        if hasattr(layer, "get_layer"):
            _all_trainable(layer)


def _weighted_leaves(model: Any, prefix: str) -> Iterator[str]:
    """The path of every layer holding weights of its own (a nested model's as `backbone/conv1`), in Keras' order."""
    for layer in model.layers:
        path = prefix + layer.name
        if hasattr(layer, "get_layer"):  # a nested model
            yield from _weighted_leaves(layer, path + INSIDE)
        elif layer.weights:
            yield path


def _layers_along(model: Any, path: str) -> list[Any]:
    """The layers from `model` down to the one at `path` ("backbone/conv1": `backbone`, then its `conv1`)."""
    found, layer = [], model
    for part in path.split(INSIDE):
        layer = layer.get_layer(part)
        found.append(layer)
    return found


def _trains(model: Any, path: str) -> bool:
    """Whether the layer at `path` trains: it and every model around it are trainable."""
    return all(layer.trainable for layer in _layers_along(model, path))


def _layer_at(model: Any, path: str) -> Any:
    return _layers_along(model, path)[-1]


def _keep_batch_norms_frozen(layer: Any) -> None:
    """A part unfrozen for the second phase keeps its batch norms frozen, so in inference mode
    (keras.io's transfer-learning guide): their statistics are the pretrained ones, and a small
    dataset's batches would overwrite them and undo what the first phase learnt. A Keras 3 batch
    norm that is not trainable always normalises with its moving statistics, whatever `training`
    an outer `fit` passes; a nested `base(x, training=False)` would not hold under `fit`."""
    import keras

    if isinstance(layer, keras.layers.BatchNormalization):
        layer.trainable = False
    for inner in getattr(layer, "layers", ()):
        _keep_batch_norms_frozen(inner)


# ---------------------------------------------------------------- reading


def _spec_folder(file: str) -> Path:
    """Where a spec's relative paths start: its file's folder, as for imports (the
    current folder for text given without a filename)."""
    return Path.cwd().resolve() if file == "<string>" else Path(file).resolve().parent


def _inside(folder: Path, init: InitFrom) -> Path:
    zoo = zoo_weights(init.path)
    if zoo is not None:
        return _zoo_file(init, *zoo)
    target = (folder / init.path).resolve()
    try:
        target.relative_to(folder)
    except ValueError:
        raise Fail(init.span, f"weights file '{init.path}' leaves the spec's folder") from None
    if not target.is_file():
        raise Fail(init.span, f"weights file '{init.path}' does not exist (relative to {folder.name or folder}/)")
    return target


def _zoo_file(init: InitFrom, name: str, top: bool) -> Path:
    """A zoo family's published weights: from Keras' cache, else fetched once (its hash checked)."""
    from netdsl.zoo.weights import ZooError, fetch

    try:
        fetched = fetch(name, include_top=top, progress=sys.stderr)
    except ZooError as exc:
        raise Fail(init.span, str(exc)) from None
    _ZOO_FILES[init.path] = fetched.sha256
    return fetched.path


_ZOO_FILES: dict[str, str] = {}  # zoo:NAME -> the sha256 of the file loaded for it (the init report says it)


class Unreadable(Fail):
    """A weights file refused for what it holds (or unreadable): `reason` is one line without the
    file's name. A spec's `init` shows it at the setting; `--weights` as `PATH: error: REASON`."""

    def __init__(self, init: InitFrom, reason: str):
        super().__init__(init.span, f"weights file '{init.path}': {reason}")
        self.reason = reason


@contextlib.contextmanager
def _opened(target: Path, init: InitFrom) -> Iterator[WeightsFile]:
    """The file's arrays, checked and not read (the file stays open while the model's are loaded)."""
    with contextlib.ExitStack() as stack:
        try:
            if init.path.endswith(".keras"):
                names, data = _keras_members(target)
                h5, size = stack.enter_context(_h5py_file(io.BytesIO(data))), len(data)
            else:
                names = None
                with open_regular(target, "weights file") as fd:
                    handle = stack.enter_context(os.fdopen(os.dup(fd), "rb"))
                size = os.fstat(handle.fileno()).st_size
                h5 = stack.enter_context(_h5py_file(handle))
            found = WeightsFile(init.path, by_name=names or {})
            _walk(h5, found, size)
        except Refused as exc:
            raise Unreadable(init, str(exc)) from None
        except RESOURCE_ERRORS:  # the last resort: the file's, never the spec's
            raise _out_of_memory(init) from None
        except (ValueError, KeyError, TypeError, *ZIP_ERRORS) as exc:  # h5py/HDF5 on a damaged file
            raise Unreadable(init, f"not a readable HDF5 file ({_first_line(exc)})") from None
        try:
            yield found  # the arrays matched and read
        except RESOURCE_ERRORS:
            raise _out_of_memory(init) from None


def _out_of_memory(init: InitFrom) -> Unreadable:
    return Unreadable(init, "reading it needs more memory than there is")


def _h5py_file(source: Any) -> Any:
    import h5py

    return h5py.File(source, "r")


def _keras_members(path: Path) -> tuple[dict[tuple, tuple], bytes]:
    """A `.keras` file's layer names (config.json, as JSON) and model.weights.h5's bytes, each
    bounded by size and by expansion before it is expanded (`netdsl.archives`)."""
    with open_zip(path, ".keras file") as (archive, file_size):
        text = read_config_json(archive, file_size)
        try:
            info = archive.getinfo(_WEIGHTS_ENTRY)
        except KeyError:
            raise Refused(f"not a .keras file (it has no {_WEIGHTS_ENTRY})") from None
        data = read_member(archive, info, file_size, _MEMBER_BOUND)
    try:
        config = json.loads(text)
    except RecursionError:
        raise Refused("its config.json is nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(f"its config.json is not valid JSON ({exc})") from None
    names: dict[tuple, tuple] = {}
    _layer_keys(config, (), (), names)
    return names, data


_MEMBER_BOUND = Bound(MAX_WEIGHTS_MEMBER_BYTES, MAX_WEIGHTS_RATIO, MAX_WEIGHTS_PLAIN_EXPANSION)


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


def _walk(h5: Any, found: WeightsFile, file_size: int) -> None:
    """Find Keras' `layers/<key>/vars/<i>` arrays through hard links only, each group once, each
    array checked (`_checked`) and not read."""
    import h5py

    def identity(item: Any) -> tuple:
        # (file, address): an object reached by two links is one. H5Gget_objinfo reads the header's
        # basics only; H5Oget_info (h5py's hash of an object, h5o.get_info) counts its messages and
        # looped for good on a damaged one (the fuzzing campaign, seed 1, inputs 31397 and 81073)
        info = h5py.h5g.get_objinfo(item.id)
        return tuple(info.fileno), tuple(info.objno)

    seen: set[tuple] = {identity(h5)}

    def child(group: Any, name: str, where: str) -> Any:
        link = group.get(name, getlink=True)
        if isinstance(link, h5py.ExternalLink):
            raise Refused(
                f"{where} is an HDF5 external link (to another file); netdsl follows no links in a "
                "weights file, as Keras does"
            )
        if not isinstance(link, h5py.HardLink):
            raise Refused(f"{where} is an HDF5 soft link; netdsl follows no links in a weights file, as Keras does")
        item = group[name]
        if identity(item) in seen:
            raise Refused(f"{where} is a second link to a group or array already read (a loop?)")
        seen.add(identity(item))
        if len(seen) > MAX_WEIGHTS_OBJECTS:
            raise Refused(
                f"it holds more than {MAX_WEIGHTS_OBJECTS:,} groups and arrays; a model holds at most "
                f"{MAX_LAYERS:,} layers"
            )
        return item

    def visit(group: Any, path: tuple) -> None:
        if len(path) > 2 * (MAX_BLOCK_DEPTH + 1):
            raise Refused(f"/{'/'.join(path)} nests layers more than {MAX_BLOCK_DEPTH} models deep")
        for name in sorted(n for n in group.keys() if isinstance(n, str)):  # (h5py gives bytes for a name
            # that is not UTF-8: no layer of Keras' is named so, and it is never opened)
            where = "/".join(path + (name,))
            item = child(group, name, where)
            if not isinstance(item, h5py.Group):
                continue
            if name == "vars":
                arrays = []
                for key in sorted((k for k in item.keys() if isinstance(k, str)), key=_index):
                    array = child(item, key, f"{where}/{key}")
                    if isinstance(array, h5py.Dataset):
                        arrays.append(_checked(array, f"{where}/{key}", file_size))
                found.by_key[path] = arrays
            elif name == "layers" or path[-1:] == ("layers",):
                visit(item, path + (name,))
            else:
                found.nested.add(path)  # weights of a sub-layer (a wrapper's, an attention's)
                check_all(item, where, len(path) + 1)

    def check_all(group: Any, where: str, depth: int) -> None:
        """A sub-layer's arrays are not matched here, but every one is checked as the others are: whoever
        reads them next (Keras' `load_weights` for `export --weights`) reads only what passed."""
        if depth > 2 * (MAX_BLOCK_DEPTH + 1):
            raise Refused(f"/{where} nests sub-layers more than {MAX_BLOCK_DEPTH} deep")
        for name in sorted(n for n in group.keys() if isinstance(n, str)):
            item = child(group, name, f"{where}/{name}")
            if isinstance(item, h5py.Group):
                check_all(item, f"{where}/{name}", depth + 1)
            elif isinstance(item, h5py.Dataset):
                _checked(item, f"{where}/{name}", file_size)

    def legacy(root: Any, prefix: str) -> None:
        """Keras 2's layout: `layer_names` on the root, each layer's `weight_names` on its group."""
        found.ordered = []
        for layer in _attr_names(root, "layer_names", prefix or "/"):
            where = f"{prefix}{layer}"
            group = child(root, layer, where)
            if not isinstance(group, h5py.Group):
                raise Refused(f"{where} is not a group of a layer's weights")
            arrays = []
            opened: dict[str, Any] = {}  # the layer's groups reached so far (weights share theirs)
            for weight in _attr_names(group, "weight_names", where):
                item, at = group, where
                for part in weight.split("/"):
                    at = f"{at}/{part}"
                    if at in opened:
                        item = opened[at]
                        continue
                    if not isinstance(item, h5py.Group) or part not in item:
                        raise Refused(f"{at} is named in {where}'s weight_names but is not in the file")
                    item = opened[at] = child(item, part, at)
                if not isinstance(item, h5py.Dataset):
                    raise Refused(f"{at} is not an array")
                arrays.append(_checked(item, at, file_size))
            if arrays:
                found.ordered.append((layer, arrays))

    # Keras 3's `.weights.h5` (and a `.keras` file's) is walked as it is; only another `.h5` may be Keras 2's,
    # and only its root's links are probed for a whole saved model (a damaged root fails at the same read).
    keras_3 = found.path.endswith(".weights.h5") or found.path.endswith(".keras")
    if not keras_3 and "layer_names" in h5.attrs:
        legacy(h5, "")
    elif (
        not keras_3
        and "model_weights" in h5
        and "layer_names" in (group := child(h5, "model_weights", "model_weights")).attrs
    ):
        legacy(group, "model_weights/")  # a whole model saved by Keras 2 (`model.save("m.h5")`)
    else:
        visit(h5, ())


def _attr_names(group: Any, key: str, where: str) -> list[str]:
    """A list of names Keras 2 keeps in an attribute (`layer_names`, `weight_names`), bounded before it is read."""
    attr = group.attrs.get_id(key) if key in group.attrs else None
    if attr is None:
        raise Refused(f"{where} has no {key} (not a Keras weights file)")
    shape = attr.shape
    if len(shape) != 1 or shape[0] > MAX_WEIGHTS_OBJECTS:
        raise Refused(f"{where}'s {key} is not a list of at most {MAX_WEIGHTS_OBJECTS:,} names")
    if shape[0] == 0:
        return []  # a layer without weights: Keras 2 writes an empty array of floats
    if attr.dtype.kind not in "SO":
        raise Refused(f"{where}'s {key} holds {_held(np.dtype(attr.dtype))}, not names")
    names = []
    for value in group.attrs[key]:
        try:
            name = value.decode("utf-8") if isinstance(value, bytes) else str(value)
        except UnicodeDecodeError:
            raise Refused(f"{where}'s {key} holds a name that is not UTF-8") from None
        if not name or name.startswith("/") or "\x00" in name or ".." in name.split("/"):
            raise Refused(f"{where}'s {key} holds the name {name!r}, not a layer's")
        names.append(name)
    return names


_NUMBERS = "fiub"  # float, signed and unsigned integer, bool: what a weight holds
_FILTERS = {1: "gzip", 2: "shuffle", 3: "fletcher32", 32000: "lzf"}  # HDF5's and h5py's own, no plugin loaded


def _checked(dataset: Any, where: str, file_size: int) -> Stored:
    """An array's declarations, refused before it is read when it reads outside the file (external
    storage, a virtual dataset), holds no numbers, or declares more than the file stores for it."""
    if dataset.external:
        raise Refused(
            f"{where} keeps its data in another file (HDF5 external storage); netdsl reads only the "
            "weights file's own bytes, as Keras does"
        )
    if dataset.is_virtual:
        raise Refused(
            f"{where} is an HDF5 virtual dataset (its data mapped from other files); netdsl reads only "
            "the weights file's own bytes, as Keras does"
        )
    try:
        dtype = np.dtype(dataset.dtype)
    except TypeError:  # an HDF5 type NumPy has no name for (a bitfield, a reference)
        raise Refused(f"{where} holds values of an HDF5 type that is not numbers") from None
    if dtype.kind not in _NUMBERS or dtype.itemsize > 8 or dtype.fields is not None:
        raise Refused(f"{where} holds {_held(dtype)}, not numbers")
    shape = dataset.shape
    if shape is None:
        raise Refused(f"{where} holds no array (an empty HDF5 dataspace)")
    plist = dataset.id.get_create_plist()
    for index in range(plist.get_nfilters()):
        code = plist.get_filter(index)[0]
        if code not in _FILTERS:
            raise Refused(
                f"{where} is compressed with HDF5 filter {code}, which netdsl does not read "
                f"(it reads {', '.join(_FILTERS.values())})"
            )
    declared = math.prod(shape) * dtype.itemsize
    stored = min(dataset.id.get_storage_size(), file_size)  # the file's word, never more than the file
    if declared > MAX_WEIGHTS_PLAIN_EXPANSION and declared > MAX_WEIGHTS_RATIO * stored:
        raise Refused(
            f"{where} declares {_shape_text(shape)} {dtype.name} ({declared:,} bytes) but the "
            f"file stores {stored:,} bytes of it"
        )
    if math.prod(shape) > MAX_PARAMS:
        raise Refused(f"{where} declares {math.prod(shape):,} values; a layer holds at most {MAX_PARAMS:,}")
    chunks = dataset.chunks
    if chunks is not None and math.prod(chunks) * dtype.itemsize > max(declared, MAX_WEIGHTS_PLAIN_EXPANSION):
        raise Refused(f"{where} is stored in chunks of {_shape_text(chunks)}, larger than the array")
    return Stored(where, tuple(shape), dtype, dataset)


def _read_stored(stored: Stored, init: InitFrom) -> np.ndarray:
    """The array, read once its shape and type have been compared with the model's weight."""
    try:
        return np.asarray(stored.dataset[()])
    except (ValueError, TypeError, KeyError, *ZIP_ERRORS) as exc:  # a damaged chunk, a checksum that fails
        raise Unreadable(init, f"cannot read {stored.where} ({_first_line(exc)})") from None


def _held(dtype: np.dtype) -> str:
    """What an array of `dtype` that is not numbers holds, in words."""
    import h5py

    if dtype.kind in "SU" or h5py.check_string_dtype(dtype) is not None:
        return "strings"
    if h5py.check_vlen_dtype(dtype) is not None:
        return "arrays of varying length"
    named = {"c": "complex numbers", "V": "records or opaque bytes", "O": "objects", "M": "dates", "m": "durations"}
    return named.get(dtype.kind, f"values of {dtype.itemsize} bytes")


def _shape_text(shape: tuple) -> str:
    return _shapes([tuple(shape)])


def _first_line(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)  # (a KeyError's str() quotes)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


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
    layers = [
        (n, k, layer) for n, k, layer in _model_keys(model) if layer.weights and not isinstance(layer, keras.Model)
    ]
    pattern = init.part.text
    if weights.ordered is not None:
        return _load_in_order(model, init, weights, part)
    if part is not None:
        named = [layer for layer in model.layers if layer.name in part]
        if len(named) == 1 and isinstance(named[0], keras.Model) and not _holds(weights, named[0].name):
            # A nested model's own file: its layers at the top level of the file.
            layers = [
                (n, k, layer)
                for n, k, layer in _model_keys(named[0])
                if layer.weights and not isinstance(layer, keras.Model)
            ]
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
        got = [a.shape for a in arrays]
        if want != got:
            raise Fail(
                init.span,
                f"layer '{shown}' has weights of shapes {_shapes(want)}; '{weights.path}' holds {_shapes(got)} for it",
            )
        kinds = [np.dtype(w.dtype).kind for w in layer.weights]
        if any(_kind(k) != _kind(a.dtype.kind) for k, a in zip(kinds, arrays)):
            raise Fail(
                init.span,
                f"layer '{shown}' has weights of types "
                f"{', '.join(np.dtype(w.dtype).name for w in layer.weights)}; "
                f"'{weights.path}' holds {', '.join(a.dtype.name for a in arrays)} for it",
            )
        layer.set_weights([_read_stored(a, init) for a in arrays])
        loaded += 1
    if missing and strict:
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        raise Fail(
            init.span,
            f"'{weights.path}' has no weights for layer '{missing[0]}'"
            + (f", {', '.join(repr(m) for m in missing[1:3])}" if len(missing) > 1 else "")
            + more,
            "its layers are matched by name (a .weights.h5 file: by structure); init_strict = false loads what matches",
        )
    if not loaded:
        raise Fail(
            init.span,
            f"no layer of {'the model' if not pattern else repr(pattern)} matched a weight of '{weights.path}'",
        )
    shown_part = f"'{pattern}'" if pattern else "the model"
    return f"init: {loaded} layer{'s' if loaded != 1 else ''} of {shown_part} from {weights.path}" + (
        f" ({len(missing)} without weights there)" if missing else ""
    )


def _load_in_order(model: Any, init: InitFrom, weights: WeightsFile, part: set[str] | None) -> str:
    """A Keras 2 file's layers matched to the part's weighted layers in order (Keras' own rule for such a
    file): the same number of them, each with arrays of the same shapes. The layers are the part's layers
    with weights, nested models opened; or, where the file does not hold that many, as Keras 2 saved them: a
    model nested in the part as one layer holding all its weights (ConvNeXt's stem, a `Sequential`)."""
    assert weights.ordered is not None
    scope = model
    if part is not None:
        named = [layer for layer in model.layers if layer.name in part]
        if len(named) == 1 and isinstance(named[0], keras.Model):
            scope = named[0]

    def kept(names: tuple) -> bool:
        return scope is not model or part is None or names[0] in part

    leaves = [
        (names, list(layer.weights))
        for names, _, layer in _model_keys(scope)
        if layer.weights and not isinstance(layer, keras.Model) and kept(names)
    ]
    whole = [(names, _keras_2_weights(layer)) for names, layer in _weighted_layers(scope) if kept(names)]
    layers, stored = leaves, list(weights.ordered)
    for candidate in (leaves, whole):
        matched = stored if len(candidate) == len(stored) else _by_layer_name(candidate, stored)
        if len(candidate) == len(matched):
            layers, stored = candidate, matched
            break
    if len(layers) != len(stored):
        raise Fail(
            init.span,
            f"'{weights.path}' holds the weights of {len(weights.ordered)} layers and "
            f"{'the model' if not init.part.text else repr(init.part.text)} has "
            f"{len(layers)} layers with weights; a Keras 2 .h5 file is matched in order",
        )
    for (names, variables), (stored_name, arrays) in zip(layers, stored):
        want = [tuple(w.shape) for w in variables]
        got = [a.shape for a in arrays]
        if want != got:
            raise Fail(
                init.span,
                f"layer '{'.'.join(names)}' has weights of shapes {_shapes(want)}; "
                f"'{weights.path}' holds {_shapes(got)} for its layer '{stored_name}' "
                "in the same place (a Keras 2 .h5 file is matched in order)",
            )
    for (_, variables), (_, arrays) in zip(layers, stored):
        for variable, array in zip(variables, arrays):
            variable.assign(_read_stored(array, init))
    shown_part = f"'{init.part.text}'" if init.part.text else "the model"
    digest = _ZOO_FILES.get(init.path)
    source = f"{weights.path} (sha256 {digest})" if digest else weights.path
    return f"init: {len(layers)} layer{'s' if len(layers) != 1 else ''} of {shown_part} from {source}"


def _weighted_layers(model: Any) -> list[tuple[tuple, Any]]:
    """(name path, layer) of `model`'s layers with weights, a nested model as one layer."""
    return [((layer.name,), layer) for layer in model.layers if layer.weights]


def _keras_2_weights(layer: Any) -> list[Any]:
    """A layer's weights in the order Keras 2 saved them: the trainable ones, then the others (a nested
    model's batch norms' moving statistics after all its kernels), by each weight's own `trainable` as the
    build made it: `apply_fine_tuning` loads before it freezes."""
    return [w for w in layer.weights if w.trainable] + [w for w in layer.weights if not w.trainable]


def _by_layer_name(layers: list[tuple[tuple, Any]], stored: list[tuple[str, list]]) -> list[tuple[str, list]]:
    """The file's layers of the same names as `layers`, in their order, when it holds every one of them
    (a backbone tapped by layer name leaves out the layers only its declared output needed, so it holds
    fewer layers than keras.applications' file); else `stored` as it is."""
    by_name = {name: arrays for name, arrays in stored}
    if len(by_name) != len(stored) or any(names[-1] not in by_name for names, _ in layers):
        return stored
    return [(names[-1], by_name[names[-1]]) for names, _ in layers]


def _kind(kind: str) -> str:
    """Floats take floats, integers integers (signed or not), booleans booleans: what a cast keeps."""
    return "i" if kind == "u" else kind


def _holds(weights: WeightsFile, name: str) -> bool:
    """Whether a `.keras` file has a layer `name` at its top level (a model containing the part)."""
    return (name,) in weights.by_name


def _shapes(shapes: list[tuple]) -> str:
    return ", ".join("(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + ")" for s in shapes) or "none"
