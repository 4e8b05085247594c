"""Fuzzing what netdsl reads of an exported file before or beside its runtime (issue 27, item 7).

    python -m tests.fuzz --target saved_model --count 100000 --seed 1 --report "$(mktemp -d)"
    python -m tests.fuzz --target onnx ...      # or --target tflite

- `saved_model`: a SavedModel folder's `saved_model.pb`, read by the op scanner `predict` and
  `evaluate` run before TensorFlow (`saved_model_ops.read_graph_ops`), or its
  `assets.extra/netdsl.json` (`saved_model_format._recorded`). A scanned graph must also keep
  the allow-list's promise: every op of the file outside `ALLOWED_OPS` and `SAVER_OPS` is
  refused, wherever it is (the worker lists them itself, the simple way).
- `onnx`: a `.onnx` file opened as `predict` opens it (`runtime.open_exported`: onnxruntime's
  session, then the file's `metadata_props`).
- `tflite`: a `.tflite` file's metadata entry (`litert_format.read_metadata`).

Each input is made from the fixtures in tests/fixtures/exported/ (netdsl's own exports of
tests/fixtures/deploy/scored.net's classifier, `make_corpus` below): bytes flipped, cut,
repeated or lengths forged, or (SavedModel, ONNX) the parsed protobuf edited: nodes with ops
from the allow-list, from TensorFlow's file ops and made up, function calls in attributes
nested, cycles, a saver that names other nodes, no object graph, metadata entries many,
huge or odd. Every reader must answer with netdsl's own error or a result of the right
type (metadata: {str: str}), never another exception, within the harness's bounds.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from .targets import ROOT, _mutate_bytes, _odd

EXPORTED_TARGETS = ("saved_model", "onnx", "tflite")
CORPUS = ROOT / "tests" / "fixtures" / "exported"
FILES = {"saved_model": "saved_model.pb", "onnx": "classifier.onnx", "tflite": "classifier.tflite"}
SUFFIXES = {"saved_model": (".pb", ".json"), "onnx": (".onnx",), "tflite": (".tflite",)}
# Ops a planted node may hold: allowed ones, the saver's, TensorFlow's file and process ops, made-up ones.
PLANTED_OPS = [
    "MatMul",
    "Identity",
    "StatefulPartitionedCall",
    "PartitionedCall",
    "While",
    "If",
    "Case",
    "SaveV2",
    "RestoreV2",
    "MergeV2Checkpoints",
    "ReadFile",
    "WriteFile",
    "DeleteRecursively",
    "MatchingFiles",
    "PyFunc",
    "EagerPyFunc",
    "PrintV2",
    "TFRecordDataset",
    "",
    "x" * 300,
    "\x1b[31mred",
    "Op\nline",
]


def make_corpus(folder: Path = CORPUS) -> None:
    """Write the fixtures (run by hand after a change to the formats: `python -c 'from tests.fuzz.exported
    import make_corpus; make_corpus()'`)."""
    import tempfile

    import netdsl

    spec = ROOT / "tests" / "fixtures" / "deploy" / "scored.net"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        saved = netdsl.export(spec, model="classifier", format="saved_model", out=Path(tmp) / "sm", seed=5)
        (folder / FILES["saved_model"]).write_bytes((saved / "saved_model.pb").read_bytes())
        (folder / "netdsl.json").write_bytes((saved / "assets.extra" / "netdsl.json").read_bytes())
    for fmt in ("onnx", "litert"):
        name = FILES["onnx" if fmt == "onnx" else "tflite"]
        netdsl.export(spec, model="classifier", format=fmt, out=folder / name, seed=5)


def make_exported(target: str, rng: random.Random) -> tuple[str, str, bytes]:
    """(where it came from, suffix, bytes) of one input for `target`."""
    suffix = rng.choice(SUFFIXES[target])
    if suffix == ".json":
        return _metadata_json(rng)
    data = (CORPUS / FILES[target]).read_bytes()
    roll = rng.random()
    if target == "saved_model" and roll < 0.6:
        data, source = _edited_saved_model(rng, data), "edited saved_model.pb"
    elif target == "onnx" and roll < 0.5:
        data, source = _edited_onnx(rng, data), "edited classifier.onnx"
    else:
        source = f"mutated {FILES[target]}"
    if source.startswith("mutated") or rng.random() < 0.2:
        data = _mutate_bytes(rng, data)
    return source, suffix, data


def _metadata_json(rng: random.Random) -> tuple[str, str, bytes]:
    recorded = json.loads((CORPUS / "netdsl.json").read_text(encoding="utf-8"))
    for _ in range(rng.randint(1, 4)):
        key = rng.choice([*recorded, "netdsl_model", "x" * 100, ""])
        recorded[key] = _odd(rng)
    text = json.dumps(recorded)
    if rng.random() < 0.1:
        text = rng.choice(["[" * 100_000, '{"a":' * 50_000, '"' + "m" * 70_000 + '"', "\ufeff{}", "{"])
    data = text.encode("utf-8", "surrogatepass")
    return "generated netdsl.json", ".json", _mutate_bytes(rng, data) if rng.random() < 0.3 else data


def _edited_saved_model(rng: random.Random, data: bytes) -> bytes:
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString(data)
    for _ in range(rng.randint(1, 6)):
        meta_graph = rng.choice(saved.meta_graphs) if saved.meta_graphs else saved.meta_graphs.add()
        _edit_meta_graph(rng, meta_graph)
    if rng.random() < 0.05:
        saved.meta_graphs.add().CopyFrom(saved.meta_graphs[0])
    return saved.SerializeToString(deterministic=True)


def _edit_meta_graph(rng: random.Random, meta_graph) -> None:
    graph, library = meta_graph.graph_def, meta_graph.graph_def.library
    names = [f.signature.name for f in library.function] + PLANTED_OPS
    roll = rng.random()
    if roll < 0.3 and library.function:  # a node planted in a function, maybe calling something
        node = rng.choice(library.function).node_def.add(
            name=f"planted{rng.randrange(1000)}", op=rng.choice(PLANTED_OPS)
        )
        _plant_call(rng, node, names)
    elif roll < 0.45:  # a node planted in the graph itself
        node = graph.node.add(name=rng.choice(["planted", "StatefulPartitionedCall_3", ""]), op=rng.choice(PLANTED_OPS))
        _plant_call(rng, node, names)
    elif roll < 0.55:  # the saver naming other nodes, or none
        nodes = [n.name for n in graph.node] + ["", "missing:0", "^x", ":::"]
        meta_graph.saver_def.save_tensor_name = rng.choice(nodes)
        meta_graph.saver_def.restore_op_name = rng.choice(nodes)
    elif roll < 0.62:
        meta_graph.ClearField("object_graph_def")
    elif roll < 0.7:  # the object graph naming functions that do not exist, or ops
        meta_graph.object_graph_def.concrete_functions[rng.choice(names)].bound_inputs.append(0)
    elif roll < 0.78 and library.function:  # a function calling itself (a cycle), or a gradient pair
        function = rng.choice(library.function)
        node = function.node_def.add(name="again", op="StatefulPartitionedCall")
        node.attr["f"].func.name = function.signature.name
        library.gradient.add(function_name=function.signature.name, gradient_func=rng.choice(names))
    elif roll < 0.86 and library.function:  # a function removed: its callers name an op that is not one
        del library.function[rng.randrange(len(library.function))]
    elif roll < 0.93:  # a new function, called by no one, or by many
        function = library.function.add()
        function.signature.name = rng.choice([f"f{rng.randrange(100)}", *PLANTED_OPS[:4]])
        for k in range(rng.choice([1, 5, 200])):
            _plant_call(rng, function.node_def.add(name=f"n{k}", op=rng.choice(PLANTED_OPS)), names)
    else:  # nothing but the graph's nodes
        graph.ClearField("library")


def _plant_call(rng: random.Random, node, names: list[str]) -> None:
    """Give `node` a function attribute (a list of them, or one nested in another's attributes)."""
    roll = rng.random()
    if roll < 0.4:
        node.attr[rng.choice(["f", "body", "then_branch"])].func.name = rng.choice(names)
    elif roll < 0.6:
        for _ in range(rng.randint(1, 4)):
            node.attr["branches"].list.func.add(name=rng.choice(names))
    elif roll < 0.8:
        value = node.attr["f"]
        for _ in range(rng.choice([1, 3, 40, 120])):  # nested: past protobuf's own depth limit too
            value.func.name = rng.choice(names)
            value = value.func.attr["inner"]


def _edited_onnx(rng: random.Random, data: bytes) -> bytes:
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(data)
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.4:  # metadata: many entries, or huge, or odd values and keys
            many = rng.random() < 0.2
            for _ in range(rng.choice([100, 2000]) if many else rng.randint(1, 3)):
                entry = model.metadata_props.add()
                entry.key = rng.choice(["netdsl_model", "netdsl_spec_sha256", "", "\x1b[2J", "k" * 5000])
                entry.value = rng.choice(["classifier", "", "\x00\x1b]0;x\x07", *([] if many else ["v" * 70_000])])
        elif roll < 0.6 and model.graph.node:  # a node of another op, or of a domain no runtime has
            node = rng.choice(model.graph.node)
            node.op_type = rng.choice(["MatMul", "Unknown", "", "Loop", "If", "Scan"])
            if rng.random() < 0.3:
                node.domain = rng.choice(["com.microsoft", "ai.onnx.ml", "evil"])
        elif roll < 0.75 and model.graph.initializer:  # external data, a path leaving the folder
            tensor = rng.choice(model.graph.initializer)
            tensor.data_location = onnx.TensorProto.EXTERNAL
            entry = tensor.external_data.add()
            entry.key, entry.value = "location", rng.choice(["../../etc/passwd", "/etc/hostname", "missing.bin"])
        elif roll < 0.85:
            model.ir_version = rng.choice([0, 3, 99, 2**62])
            model.opset_import[0].version = rng.choice([1, 17, 99, 0])
        else:  # the output names no longer those of the graph's values
            for value in model.graph.output:
                value.name = rng.choice(["", "probs", "x" * 1000])
    return model.SerializeToString(deterministic=True)


# ------------------------------------------------------------------ in the worker


def place(target: str, data: bytes, suffix: str, folder: str) -> Path:
    """Write `data` where the reader finds it; the path the reader is given."""
    base = Path(folder)
    if target == "saved_model":
        sm = base / "in_saved_model"
        where = sm / ("saved_model.pb" if suffix == ".pb" else "assets.extra/netdsl.json")
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_bytes(data)
        return where
    where = base / ("input" + suffix)
    where.write_bytes(data)
    return where


def check(target: str, path: Path) -> None:
    """Hand `path` to the target's reader: netdsl's own errors propagate (the worker counts them), anything
    else, or a result of the wrong type, is an AssertionError or the reader's own exception."""
    if target == "saved_model" and path.name == "netdsl.json":
        from netdsl.deploy.saved_model_format import _recorded

        _assert_metadata(_recorded(path))
    elif target == "saved_model":
        from netdsl.deploy.saved_model_ops import ALLOWED_OPS, SAVER_OPS, read_graph_ops

        refused = set(read_graph_ops(path.parent).refused())
        every = _every_op(path.read_bytes())
        assert every - ALLOWED_OPS - SAVER_OPS <= refused, (
            f"not refused: {sorted(every - ALLOWED_OPS - SAVER_OPS - refused)}"
        )
        assert refused <= every - ALLOWED_OPS, f"refused but not in the file: {sorted(refused - every)}"
    elif target == "onnx":
        from netdsl.deploy.exported_runtime import open_exported

        _assert_metadata(open_exported(path).metadata)
    else:
        from netdsl.deploy.litert_format import read_metadata

        _assert_metadata(read_metadata(path.read_bytes()))


def _assert_metadata(metadata: object) -> None:
    assert isinstance(metadata, dict), type(metadata)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()), metadata


def _every_op(data: bytes) -> set[str]:
    """Every op a SavedModel names: its nodes' ops, and the functions its attributes call that are none of its
    library's (ops called by name), listed the simple way as the oracle of the scanner's promise."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString(data)
    found: set[str] = set()
    for meta_graph in saved.meta_graphs:
        library = {f.signature.name for f in meta_graph.graph_def.library.function}
        nodes = [*meta_graph.graph_def.node, *(n for f in meta_graph.graph_def.library.function for n in f.node_def)]
        found |= {node.op for node in nodes}
        called = {g.gradient_func for g in meta_graph.graph_def.library.gradient}
        objects = meta_graph.object_graph_def
        called |= set(objects.concrete_functions)
        called |= {name for node in objects.nodes for name in node.function.concrete_functions}
        called |= {
            node.bare_concrete_function.concrete_function_name
            for node in objects.nodes
            if node.WhichOneof("kind") == "bare_concrete_function"
        }
        pending = [value for node in nodes for value in node.attr.values()]
        while pending:
            value = pending.pop()
            funcs = [value.func] if value.HasField("func") else list(value.list.func)
            for func in funcs:
                called.add(func.name)
                pending.extend(func.attr.values())
        found |= called - library
    return found
