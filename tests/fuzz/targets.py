"""Fuzzing beyond the spec text (issue 22): `.keras` files for the Keras -> .net reader, data
files (npz, CSV, TFRecord, PNG folders) for the training data readers, and weights files
(`.weights.h5`, `.keras`; issue 27) for the HDF5 weights reader of `init`/`--weights`/`--init-from`.

    python -m tests.fuzz --target keras --count 10000 --seed 1 --report /tmp/fuzz-keras
    python -m tests.fuzz --target data --count 10000 --seed 1 --report /tmp/fuzz-data
    python -m tests.fuzz --target weights --count 100000 --seed 1 --report /tmp/fuzz-weights
    python -m tests.fuzz --target sweep --count 10000 --seed 1 --report /tmp/fuzz-sweep

A sweep folder (`--target sweep`, issue 27) is two files, `sweep.json` and its `study.db`: the
JSON is edited as the `.keras` configs are, the study (a real Optuna SQLite study of five trials,
one of each state) by SQL (odd values in user attributes, parameters, distributions, states,
numbers and names) or by flipping its bytes; `netdsl sweep --show` reads it.

Each input is bytes made from its own `random.Random` (seed, index), as the spec inputs
are: generated (a chain of layers in a random order, arrays of random shapes and dtypes,
records, images) or mutated (JSON edits of the export fixtures' configs; bytes flipped,
cut, repeated or lengths and headers forged in a valid file). The worker (`worker.py`)
writes them to a file and hands it to the reader, under the same memory limit; a reader
must answer with netdsl's own error (SpecError, TrainingError, UsageError) or succeed.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sqlite3
import struct
import tempfile
import zipfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("spec", "keras", "data", "sweep", "weights")
DATA_KINDS = (".npz", ".csv", ".tfrecord", ".png")


# ------------------------------------------------------------------ .keras


def keras_corpus(root: Path = ROOT) -> list[tuple[str, dict]]:
    """(name, config) of every export fixture."""
    found = []
    for path in sorted((root / "tests" / "fixtures" / "decompile").glob("*.json")):
        try:
            found.append((path.name, json.loads(path.read_text(encoding="utf-8"))))
        except (ValueError, OSError):
            continue
    return found


def make_keras(rng: random.Random, corpus: list[tuple[str, dict]]) -> tuple[str, bytes]:
    """(where it came from, the bytes of a .keras file)."""
    if rng.random() < 0.3 or not corpus:
        source, config = "generated chain", _chain(rng)
    else:
        name, config = rng.choice(corpus)
        source, config = f"mutation of tests/fixtures/decompile/{name}", json.loads(json.dumps(config))
        for _ in range(rng.randint(1, 6)):
            config = _mutate_json(rng, config)
    text = json.dumps(config).encode()
    if rng.random() < 0.2:
        text = _mutate_bytes(rng, text)
    buffer = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if rng.random() < 0.7 else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("metadata.json", '{"keras_version": "3.15.1"}')
        archive.writestr("config.json", text)
    data = buffer.getvalue()
    if rng.random() < 0.05:
        data = _mutate_bytes(rng, data)
    return source, data


def _chain(rng: random.Random) -> dict:
    """The review's probe, varied: n layers of a functional model listed in a random order."""
    n = rng.choice([1, 2, 5, 50, 500, 3000])
    kinds = ["Dense", "Dropout", "Activation", "ReLU", "LayerNormalization", "Flatten", "Unknown"]

    def tensor(src: str) -> dict:
        return {
            "class_name": "__keras_tensor__",
            "config": {"shape": [None, 4], "dtype": "float32", "keras_history": [src, 0, 0]},
        }

    layers = [
        {
            "module": "keras.layers",
            "class_name": "InputLayer",
            "name": "x",
            "config": {"batch_shape": [None, 4], "dtype": "float32", "name": "x"},
            "inbound_nodes": [],
        }
    ]
    for k in range(n):
        kind = rng.choice(kinds)
        config = {"name": f"l{k}", "units": 4, "rate": 0.5, "activation": "relu"}
        layers.append(
            {
                "module": "keras.layers",
                "class_name": kind,
                "name": f"l{k}",
                "config": config,
                "inbound_nodes": [{"args": [tensor("x" if k == 0 else f"l{rng.randrange(k)}")], "kwargs": {}}],
            }
        )
    order = rng.choice(["forward", "reverse", "shuffled"])
    body = layers[1:]
    if order == "reverse":
        body.reverse()
    elif order == "shuffled":
        rng.shuffle(body)
    return {
        "module": "keras",
        "class_name": "Functional",
        "registered_name": "Functional",
        "config": {
            "name": "m",
            "layers": [layers[0], *body],
            "input_layers": [["x", 0, 0]],
            "output_layers": [[f"l{n - 1}", 0, 0]],
        },
    }


_ODD_VALUES = [
    None,
    True,
    -1,
    0,
    2**63,
    1e308,
    "",
    "x" * 1000,
    "\x1b[2J",
    [],
    {},
    [[[[[]]]]],
    {"class_name": "os"},
    {"module": "evil", "class_name": "GlorotUniform", "config": {}},
    ["a", 0, 0],
    [None, 4],
]


def _mutate_json(rng: random.Random, value):
    """One random edit somewhere in a JSON value: a key dropped, a value replaced, a list
    reversed, shuffled, repeated or nested."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        roll = rng.random()
        if roll < 0.15:
            value.pop(key)
        elif roll < 0.35:
            value[key] = _odd(rng)
        else:
            value[key] = _mutate_json(rng, value[key])
        return value
    if isinstance(value, list) and value and rng.random() < 0.7:
        roll = rng.random()
        if roll < 0.15:
            value.reverse()
        elif roll < 0.25:
            rng.shuffle(value)
        elif roll < 0.35:
            value.extend(value[: rng.randint(1, 3)] * rng.choice([1, 10, 100]))
        elif roll < 0.4:
            return [value]
        else:
            i = rng.randrange(len(value))
            value[i] = _mutate_json(rng, value[i])
        return value
    return _odd(rng) if rng.random() < 0.5 else value


def _odd(rng: random.Random):
    """One of the odd values, a fresh copy (a shared one could end up inside itself)."""
    return json.loads(json.dumps(rng.choice(_ODD_VALUES)))


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        roll = rng.random()
        if not data:
            break
        at = rng.randrange(len(data))
        if roll < 0.5:
            data[at] = rng.randrange(256)
        elif roll < 0.7:
            del data[at : at + rng.randint(1, 64)]
        elif roll < 0.85:
            data[at:at] = data[at : at + rng.randint(1, 32)] * rng.choice([1, 2, 100])
        else:
            data[at : at + 8] = struct.pack("<Q", rng.choice([0, 1, 2**31, 2**40, 2**63 - 1]))
    return bytes(data)


# ------------------------------------------------------------------ data files


# The model the data readers check against: input x: (4,), output y: (3,) (class indices).
def make_data(rng: random.Random) -> tuple[str, str, bytes]:
    """(where it came from, suffix, the file's bytes); a PNG is put in a class folder by the worker."""
    suffix = rng.choice(DATA_KINDS)
    maker = {".npz": _npz, ".csv": _csv, ".tfrecord": _tfrecord, ".png": _png}[suffix]
    data = maker(rng)
    source = f"generated {suffix}"
    if rng.random() < 0.6:
        data, source = _mutate_bytes(rng, data), f"mutated {suffix}"
    return source, suffix, data


def _npz(rng: random.Random) -> bytes:
    import numpy as np

    n = rng.choice([0, 1, 5, 40])
    shape = rng.choice([(n, 4), (n, 5), (n,), (n, 2, 2)])
    dtype = rng.choice(["float32", "float64", "int32", "uint8", "bool", "U3", "complex64"])
    x = np.zeros(shape, dtype=dtype)
    y = np.zeros((rng.choice([n, n + 1]),), dtype=rng.choice(["int64", "float32"]))
    buffer = io.BytesIO()
    names = rng.choice([("x", "y"), ("x", "z"), ("x",)])
    method = zipfile.ZIP_DEFLATED if rng.random() < 0.5 else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, array in zip(names, (x, y)):
            member = io.BytesIO()
            np.save(member, array)
            raw = member.getvalue()
            if rng.random() < 0.2:  # a header that lies about the shape
                raw = raw.replace(str(array.shape).encode(), str((2**40, 4)).encode(), 1)
            archive.writestr(f"{name}.npy", raw)
    return buffer.getvalue()


def _csv(rng: random.Random) -> bytes:
    header = rng.choice(["a,b,c,d,y", "a,b,c,d", "a,b,c,d,y,e", '"a,b",c,d,e,y', ""])
    rows = []
    for _ in range(rng.choice([0, 1, 10, 40])):
        cells = [rng.choice(["1", "0.5", "-3e2", "nan", "", "abc", '"1,2"', "1" * 300]) for _ in range(4)]
        rows.append(",".join(cells + [rng.choice(["0", "1", "2", "x"])]))
    return (header + "\n" + "\n".join(rows) + "\n").encode()


def _masked_crc(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    crc ^= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _example(x: list[float], y: int) -> bytes:
    """A tf.train.Example {x: float_list, y: int64_list}, serialised by hand (no TensorFlow here)."""

    def varint(value: int) -> bytes:
        out = bytearray()
        value &= (1 << 64) - 1
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                return bytes(out)

    def field(number: int, payload: bytes) -> bytes:
        return varint(number << 3 | 2) + varint(len(payload)) + payload

    floats = field(2, field(1, b"".join(struct.pack("<f", v) for v in x)))  # Feature.float_list
    ints = field(3, field(1, b"".join(varint(v) for v in [y])))  # Feature.int64_list
    entries = [field(1, field(1, b"x") + field(2, floats)), field(1, field(1, b"y") + field(2, ints))]
    return field(1, b"".join(entries))  # Example.features


def _tfrecord(rng: random.Random) -> bytes:
    out = bytearray()
    for _ in range(rng.choice([0, 1, 5, 20])):
        record = _example([rng.random() for _ in range(rng.choice([4, 4, 3]))], rng.randrange(3))
        length = struct.pack("<Q", len(record) if rng.random() > 0.05 else rng.choice([2**40, 2**63 - 1]))
        out += length + struct.pack("<I", _masked_crc(length)) + record + struct.pack("<I", _masked_crc(record))
    return bytes(out)


def _png(rng: random.Random) -> bytes:
    width, height = rng.choice([(4, 4), (1, 1), (64, 3), (100_000, 100_000), (0, 0)])
    header = struct.pack(">IIBBBBB", width, height, 8, rng.choice([0, 2, 6]), 0, 0, 0)
    rows = b"".join(b"\0" + bytes(min(width, 64) * 4) for _ in range(min(height, 64)))

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


# ------------------------------------------------------------------ sweep folders

SWEEP_RECORD = {
    "spec": {"path": "/nowhere/mlp.net", "sha256": "0" * 64, "model": "mlp"},
    "objective": {"direction": "minimize", "metric": "val_loss"},
    "objectives": [{"direction": "minimize", "name": "val_loss", "figure": None}],
    "space": {"width": "choice(4, 8)", "lr": "log_uniform(0.001, 0.1)", "act": 'choice("relu", "tanh")'},
    "sampler": "tpe",
    "pruner": "none",
    "trials": 5,
    "seed": 1,
    "study": "mlp-sweep",
    "storage": "study.db",
    "data": {},
    "defines": {},
    "epochs": 1,
    "batch_size": 32,
    "status": "finished",
    "created": "2026-12-07T00:00:00+00:00",
}
_STUDY_EDITS = (  # (table, column) a mutation sets to an odd value
    ("trial_user_attributes", "value_json"),
    ("trial_user_attributes", "key"),
    ("trial_params", "param_value"),
    ("trial_params", "distribution_json"),
    ("trial_params", "param_name"),
    ("trial_values", "value"),
    ("trials", "state"),
    ("trials", "number"),
    ("studies", "study_name"),
    ("study_directions", "direction"),
    ("trial_intermediate_values", "intermediate_value"),
)
_base_study: dict[int, bytes] = {}  # built once per process and count of objectives: five trials each


def base_study(objectives: int = 1) -> bytes:
    """A real study.db: trials complete, pruned, failed, running (its worker, run and reason recorded); of two
    objectives (val_loss and flops), no trial is pruned (Optuna prunes single-objective studies only)."""
    if objectives not in _base_study:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "study.db"
            study = optuna.create_study(
                study_name="mlp-sweep", storage=f"sqlite:///{path}", directions=["minimize"] * objectives
            )
            space = {
                "width": optuna.distributions.CategoricalDistribution([4, 8]),
                "lr": optuna.distributions.FloatDistribution(1e-3, 0.1, log=True),
                "act": optuna.distributions.CategoricalDistribution(["relu", "tanh"]),
            }
            states = optuna.trial.TrialState
            states_told = ("complete", "pruned", "failed", "running", "complete")
            for number, state in enumerate(
                states_told if objectives == 1 else ("complete", "complete", *states_told[2:])
            ):
                trial = study.ask(space)
                trial.set_user_attr("run", f"/sweeps/mlp-sweep-1/trials/{number}")
                trial.set_user_attr("epochs", 2)
                trial.set_user_attr("seconds", 1.5)
                trial.set_user_attr("worker", {"host": "node", "pid": 1})
                if objectives == 1:
                    trial.report(0.5, 0)
                else:
                    trial.set_user_attr("figures", {"flops": 100.0 * (5 - number)})
                if state == "complete":
                    study.tell(trial, [0.25 + number, 100.0 * (5 - number)][:objectives])
                elif state == "pruned":
                    trial.set_user_attr("objective", 0.75)
                    study.tell(trial, state=states.PRUNED)
                elif state == "failed":
                    trial.set_user_attr("reason", "no finite value of val_loss")
                    study.tell(trial, state=states.FAIL)
            study._storage.remove_session()  # the file is complete and closed before it is read
            _base_study[objectives] = path.read_bytes()
    return _base_study[objectives]


def make_sweep(rng: random.Random) -> tuple[str, bytes]:
    """(where it came from, the folder packed: 4-byte length, sweep.json, study.db)."""
    record = json.loads(json.dumps(SWEEP_RECORD))
    sources = []
    objectives = 2 if rng.random() < 0.3 else 1  # a sweep of two objectives: its front read and drawn
    if objectives == 2:
        record["objectives"].append({"direction": "minimize", "name": "flops", "figure": "flops"})
        sources.append("two objectives")
    if rng.random() < 0.5:
        for _ in range(rng.randint(1, 4)):
            record = _mutate_json(rng, record)
        sources.append("sweep.json edited")
    if isinstance(record, dict):
        record.pop("storage_url", None)  # the fuzzer never opens a storage outside the folder
        record["storage"] = "study.db"
    text = json.dumps(record).encode()
    if rng.random() < 0.1:
        text, sources = _mutate_bytes(rng, text), [*sources, "sweep.json bytes"]
    study = base_study(objectives)
    if rng.random() < 0.7:
        study, sources = _edit_study(rng, study), [*sources, "study edited by SQL"]
    if rng.random() < 0.1:
        study, sources = _mutate_bytes(rng, study), [*sources, "study bytes"]
    return ", ".join(sources) or "the base folder", struct.pack(">I", len(text)) + text + study


def _edit_study(rng: random.Random, study: bytes) -> bytes:
    connection = sqlite3.connect(":memory:")
    try:
        connection.deserialize(study)
        for _ in range(rng.randint(1, 4)):
            table, column = rng.choice(_STUDY_EDITS)
            odd = rng.choice(
                [
                    None,
                    -1,
                    2**63 - 1,
                    1e308,
                    float("nan"),
                    "",
                    "x" * rng.choice([1, 300, 70_000]),
                    "\x1b]0;PWNED\x07\x1b[31m",
                    "$\\notacommand$",
                    "{",
                    "[]",
                    "{}",
                    '"text"',
                    "1e999",
                    json.dumps({"name": "CategoricalDistribution", "attributes": {"choices": []}}),
                    json.dumps({"name": "FloatDistribution", "attributes": {"low": 1, "high": 0}}),
                    "[" * 5000 + "]" * 5000,
                    "RUNNING",
                    "COMPLETE",
                    "WAITING",
                    "MINIMIZE",
                    "NOT_SET",
                    7,
                ]
            )
            with contextlib.suppress(sqlite3.Error):
                connection.execute(
                    f"UPDATE {table} SET {column} = ? WHERE rowid = ?",  # noqa: S608 - fixed names
                    (odd, rng.randint(1, 6)),
                )
        connection.commit()
        return connection.serialize()
    finally:
        connection.close()


def unpack_sweep(data: bytes) -> tuple[bytes, bytes]:
    """(sweep.json, study.db) of a packed sweep folder."""
    (size,) = struct.unpack(">I", data[:4]) if len(data) >= 4 else (0,)
    return data[4 : 4 + size], data[4 + size :]


# ------------------------------------------------------------------ weights files (issue 27)

# The model the weights reader loads into: tests/support/hostile_weights.MODEL, one Dense(4) on (4,).


def weights_corpus() -> list[tuple[str, bytes]]:
    """(name, bytes) of the seeds: valid weights files of the model and the review's hostile ones."""
    import tempfile

    from tests.support.hostile_weights import seeds

    with tempfile.TemporaryDirectory() as folder:
        return [(path.name, path.read_bytes()) for path in seeds(Path(folder))]


def make_weights(rng: random.Random, corpus: list[tuple[str, bytes]]) -> tuple[str, str, bytes]:
    """(where it came from, suffix, bytes) of a weights file: an HDF5 file laid out as Keras' with
    random arrays, links and storage, inside a `.keras` zip or not, or a seed's bytes mutated."""
    from tests.support.hostile_weights import CONFIG, h5_bytes, keras_file, layout

    roll = rng.random()
    if roll < 0.55 or not corpus:
        data = h5_bytes(lambda h5: layout(h5, lambda group: _kernel(rng, group)))
        source, suffix = "generated .weights.h5", ".weights.h5"
        if rng.random() < 0.3:
            config = json.loads(json.dumps(CONFIG))
            for _ in range(rng.randint(0, 3)):
                config = _mutate_json(rng, config)
            with tempfile_path(".keras") as path:
                data = keras_file(path, json.dumps(config).encode(), data).read_bytes()
            source, suffix = "generated .keras", ".keras"
        if rng.random() < 0.25:
            data, source = _mutate_bytes(rng, data), source.replace("generated", "mutated")
        return source, suffix, data
    name, data = rng.choice(corpus)
    suffix = ".keras" if name.endswith(".keras") else ".weights.h5"
    return f"mutation of {name}", suffix, _mutate_bytes(rng, data)


_SHAPES = [(4, 4)] * 6 + [(4,), (), (0, 4), (4, 4, 1), (16,), (65536, 32768), (1 << 40,), (3, 5)]
_DTYPES = ["float32"] * 6 + [
    "float64",
    "float16",
    ">f4",
    "int32",
    "uint8",
    "bool",
    "complex64",
    "S4",
    "string",
    "compound",
    "vlen",
]
_KINDS = ["written"] * 6 + [
    "unwritten",
    "chunked",
    "compact",
    "filtered",
    "big chunks",
    "external",
    "virtual",
    "external link",
    "soft link",
    "loop",
    "named type",
    "group",
    "nested",
    "extra layers",
]


def _kernel(rng: random.Random, group) -> None:
    """The kernel `0` of `layers/dense/vars`, of a random shape, type, storage and link (a combination
    h5py cannot make: the kernel declared and never written)."""
    from tests.support.hostile_weights import dataset

    try:
        _make_kernel(rng, group)
    except (ValueError, TypeError, OSError, KeyError):
        if "0" not in group:
            dataset(group, "0", shape=(4, 4), dtype="float32")


def _make_kernel(rng: random.Random, group) -> None:
    import h5py
    import numpy as np

    from tests.support.hostile_weights import dataset, virtual

    shape, kind, name = rng.choice(_SHAPES), rng.choice(_KINDS), rng.choice(_DTYPES)
    dtype = {
        "string": h5py.string_dtype(),
        "compound": np.dtype([("a", "f4"), ("b", "i4")]),
        "vlen": h5py.vlen_dtype("f4"),
    }.get(name, name)
    small = int(np.prod(shape)) <= 4096
    data = np.zeros(shape, dtype=dtype) if small and name not in ("string", "vlen") else None
    if kind == "written" and data is not None:
        dataset(group, "0", data=data)
    elif kind in ("chunked", "filtered", "big chunks") and shape and 0 not in shape:
        side = 1 << (26 // len(shape))  # big chunks: 2**26 values each, far beyond the array
        chunks = tuple(min(d, 1 << 12) for d in shape) if kind != "big chunks" else tuple(side for _ in shape)
        options = (
            {
                "compression": rng.choice(["gzip", "lzf", None]),
                "shuffle": rng.random() < 0.3,
                "fletcher32": rng.random() < 0.3,
            }
            if kind == "filtered"
            else {}
        )
        if kind == "filtered" and rng.random() < 0.3 and name in ("float32", "int32"):
            options = {"scaleoffset": 2}
        made = dataset(
            group,
            "0",
            shape=shape,
            dtype=dtype,
            chunks=chunks,
            maxshape=tuple(None for _ in shape) if kind == "big chunks" else None,
            **options,
        )
        if data is not None and kind != "big chunks" and rng.random() < 0.7:
            made[()] = data
    elif kind == "compact" and data is not None and data.nbytes < 32_000:
        space = h5py.h5s.create_simple(shape) if shape else h5py.h5s.create(h5py.h5s.SCALAR)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        dcpl.set_obj_track_times(False)
        h5py.h5d.create(group.id, b"0", h5py.h5t.py_create(np.dtype(dtype), logical=1), space, dcpl=dcpl)
    elif kind == "external":
        dataset(group, "0", shape=shape, dtype=dtype, external=[("secret.txt", 0, h5py.h5f.UNLIMITED)])
    elif kind == "virtual" and shape:
        virtual(group, "0", "other.weights.h5", shape, "float32")
    elif kind == "external link":
        group["0"] = h5py.ExternalLink(
            rng.choice(["other.weights.h5", "/etc/passwd", "input.weights.h5"]), "layers/dense/vars/0"
        )
    elif kind == "soft link":
        group["0"] = h5py.SoftLink(rng.choice(["/layers/dense/vars/1", "/nowhere", "/layers"]))
    elif kind == "loop":
        group["0"] = group.file["layers"]
    elif kind == "named type":
        group["0"] = np.dtype("float32")
    elif kind == "group":
        group.create_group("0/0")
    elif kind == "nested":
        inner = group.file.create_group(f"layers/dense/layers/{rng.choice(['dense', 'functional'])}/vars")
        dataset(inner, "0", data=np.zeros((4, 4), "float32"))
        dataset(group, "0", data=np.zeros((4, 4), "float32"))
    elif kind == "extra layers":
        for k in range(rng.choice([1, 10, 200])):
            dataset(group.file.create_group(f"layers/dense_{k + 1}/vars"), "0", data=np.zeros((2,), "float32"))
        dataset(group, "0", data=np.zeros((4, 4), "float32"))
    else:
        dataset(group, "0", shape=shape, dtype=dtype)  # declared, never written
    if rng.random() < 0.1:
        group.attrs["note"] = "x" * rng.choice([1, 1000, 60_000])


@contextlib.contextmanager
def tempfile_path(suffix: str):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder) / f"file{suffix}"
