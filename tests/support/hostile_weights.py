"""Weights files made to attack netdsl's HDF5 weights reader (security review 2026-12b, N2 and N3),
written with h5py and zipfile as the review's probes wrote them, for the model `MODEL` (one Dense
layer: Keras saves its kernel and bias as `layers/dense/vars/0` and `/1`).

Used by tests/backend/test_weights_files.py and as seeds of the fuzzing target `weights`
(tests/fuzz/targets.py). Each maker writes into `folder` and returns the file's path.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np

MODEL = "model m {\n  input x: (4,)\n  output y = x -> dense(4)\n}\n"
KERNEL = "layers/dense/vars/0"
# 64 bytes: exactly a (4, 4) float32 kernel, as the review's probe
SECRET = b"TOP-SECRET-ssh-key-material-0123456789abcdef-ABCDEFGHIJKLMNOPQRS"[:64]


def kernel() -> np.ndarray:
    return np.arange(16, dtype="float32").reshape(4, 4) / 16


def bias() -> np.ndarray:
    return np.full((4,), 0.5, dtype="float32")


def dataset(group: h5py.Group, name: str, **options) -> h5py.Dataset:
    """`group.create_dataset` without creation times: the same file, byte for byte, every time."""
    return group.create_dataset(name, track_times=False, **options)


def virtual(group: h5py.Group, name: str, source: str, shape: tuple, dtype: str = "float32") -> None:
    """A virtual dataset `name` mapping `source`'s kernel (h5py's own steps, without creation times)."""
    layout = h5py.VirtualLayout(shape, dtype)
    layout[:] = h5py.VirtualSource(source, KERNEL, shape=shape)
    dcpl = layout._get_dcpl(group.file.filename)
    dcpl.set_obj_track_times(False)
    space = h5py.h5s.create_simple(shape)
    h5py.h5d.create(group.id, name.encode(), h5py.h5t.py_create(np.dtype(dtype), logical=1), space, dcpl=dcpl)


def layout(h5: h5py.File, write_kernel: Callable[[h5py.Group], None]) -> None:
    """MODEL's weights laid out as Keras lays them out, the kernel written by `write_kernel`."""
    h5.create_group("vars")
    h5.create_group("layers/input_layer/vars")
    group = h5.create_group("layers/dense/vars")
    write_kernel(group)
    dataset(group, "1", data=bias())


def _weights_file(path: Path, write_kernel: Callable[[h5py.Group], None]) -> Path:
    with h5py.File(path, "w") as h5:
        layout(h5, write_kernel)
    return path


def good(folder: Path, name: str = "good.weights.h5") -> Path:
    return _weights_file(folder / name, lambda g: dataset(g, "0", data=kernel()))


def external_storage(folder: Path, secret: Path | str) -> Path:
    """N2: the kernel's bytes kept in `secret`, a file outside the weights file."""
    return _weights_file(
        folder / "external.weights.h5",
        lambda g: dataset(g, "0", shape=(4, 4), dtype="float32", external=[(str(secret), 0, 64)]),
    )


def virtual_dataset(folder: Path) -> Path:
    """N3.1: the kernel mapped from another HDF5 file (read from memory, HDF5 crashes)."""
    other = good(folder, "other.weights.h5")
    return _weights_file(folder / "virtual.weights.h5", lambda g: virtual(g, "0", other.name, (4, 4)))


def external_link(folder: Path) -> Path:
    """The kernel as a link to a dataset of another file."""
    other = good(folder, "linked.weights.h5")
    return _weights_file(
        folder / "extlink.weights.h5", lambda g: g.__setitem__("0", h5py.ExternalLink(other.name, KERNEL))
    )


def external_link_group(folder: Path) -> Path:
    """The whole layer's group as a link to another file's."""
    other = good(folder, "linked_group.weights.h5")
    path = folder / "extgroup.weights.h5"
    with h5py.File(path, "w") as h5:
        h5.create_group("vars")
        h5["layers/dense"] = h5py.ExternalLink(other.name, "layers/dense")
    return path


def soft_link(folder: Path) -> Path:
    """The kernel as a soft link to a dataset elsewhere in the same file."""
    path = folder / "softlink.weights.h5"
    with h5py.File(path, "w") as h5:
        dataset(h5, "stash/kernel", data=kernel())
        group = h5.create_group("layers/dense/vars")
        group["0"] = h5py.SoftLink("/stash/kernel")
        dataset(group, "1", data=bias())
    return path


def shape_bomb(folder: Path) -> Path:
    """N3.2: a 4.7 KB file whose kernel declares (65536, 32768) float32, 8 GiB never written."""
    return _weights_file(folder / "bomb.weights.h5", lambda g: dataset(g, "0", shape=(65536, 32768), dtype="float32"))


def fill_bomb(folder: Path) -> Path:
    """A kernel of the model's own shape, chunked and compressed, never written: only its fill value."""
    return _weights_file(
        folder / "fill.weights.h5",
        lambda g: dataset(
            g, "0", shape=(8192, 8192), dtype="float32", chunks=(1024, 1024), compression="gzip", fillvalue=1.0
        ),
    )


def dtype_mismatch(folder: Path) -> Path:
    """A kernel of the right shape holding int64."""
    return _weights_file(folder / "ints.weights.h5", lambda g: dataset(g, "0", data=np.ones((4, 4), "int64")))


def strings(folder: Path) -> Path:
    """A kernel of the right shape holding strings."""
    return _weights_file(
        folder / "strings.weights.h5",
        lambda g: dataset(g, "0", data=np.array([["abcd"] * 4] * 4, dtype=h5py.string_dtype())),
    )


def hard_link_loop(folder: Path) -> Path:
    """A layer group that links back to the file's root: a walk that follows it never ends."""
    path = folder / "loop.weights.h5"
    with h5py.File(path, "w") as h5:
        group = h5.create_group("layers/dense/vars")
        dataset(group, "0", data=kernel())
        dataset(group, "1", data=bias())
        h5["layers/dense/layers"] = h5
    return path


# A config.json of MODEL as Keras writes it, cut to what the weights reader reads (class names, names).
CONFIG = {
    "module": "keras",
    "class_name": "Functional",
    "config": {
        "name": "m",
        "layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "config": {"name": "x"}},
            {"module": "keras.layers", "class_name": "Dense", "name": "y", "config": {"name": "y", "units": 4}},
        ],
    },
}


def member(name: str) -> zipfile.ZipInfo:
    """A deflated zip member of a fixed date: the same archive, byte for byte, every time."""
    info = zipfile.ZipInfo(name, date_time=(2026, 12, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def keras_file(path: Path, config: bytes, weights: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member("metadata.json"), '{"keras_version": "3.15.1"}')
        archive.writestr(member("config.json"), config)
        archive.writestr(member("model.weights.h5"), weights)
    return path


def good_keras(folder: Path) -> Path:
    return keras_file(folder / "good.keras", json.dumps(CONFIG).encode(), good(folder).read_bytes())


def config_bomb(folder: Path) -> Path:
    """N3.3: a 65 KB `.keras` file whose config.json is 64 MiB of `[{},{},...]`."""
    return keras_file(
        folder / "bomb_config.keras", b"[" + b"{}," * (64 * 1024**2 // 3 - 1) + b"{}]", good(folder).read_bytes()
    )


def weights_bomb(folder: Path, config: bytes, gib: float = 1) -> Path:
    """N3.3: a 1 MB `.keras` file whose model.weights.h5 is 1 GiB of zeros (`config`: a real model's)."""
    path = folder / "bomb_weights.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member("metadata.json"), '{"keras_version": "3.15.1"}')
        archive.writestr(member("config.json"), config)
        with archive.open(member("model.weights.h5"), "w", force_zip64=True) as weights:
            zeros = bytes(1 << 24)
            for _ in range(int(64 * gib)):
                weights.write(zeros)
    return path


def h5_bytes(write: Callable[[h5py.File], None]) -> bytes:
    """An HDF5 file made in memory by `write` (the fuzzing target's generator)."""
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h5:
        write(h5)
    return buffer.getvalue()


def seeds(folder: Path) -> list[Path]:
    """Every file above (but the 1 GiB bomb: a 256 MiB one), made in `folder`: the fuzzing target's seeds.
    External storage names `secret.txt`, a file of the folder the reader runs in."""
    made = [
        good(folder),
        good_keras(folder),
        virtual_dataset(folder),
        external_link(folder),
        external_link_group(folder),
        soft_link(folder),
        shape_bomb(folder),
        fill_bomb(folder),
        dtype_mismatch(folder),
        strings(folder),
        hard_link_loop(folder),
        external_storage(folder, "secret.txt"),
        config_bomb(folder),
        weights_bomb(folder, json.dumps(CONFIG).encode(), gib=0.25),
    ]
    return sorted(made)
