"""ONNX through tf2onnx, with the conversion rules it lacks, names and metadata kept.

tf2onnx (which Keras' own `model.export(format="onnx")` uses) has no rule for two
TensorFlow ops Keras models produce, and by default writes the graph anyway, which
ONNX Runtime then refuses as invalid:

- `Log1p`: netdsl's `smooth_relu` (softplus without overflow) and `log1p`, so a declared
  `mish(x) = x * tanh(smooth_relu(x))` (Keras' own mish and softplus convert already);
- `Erfc`: exact GELU (`gelu`, `approximate=False`, TensorFlow writes it with erfc).

`OP_RULES` adds them as exact rewrites into ONNX ops (`log1p(x) = log(1 + x)`,
`erfc(x) = 1 - erf(x)`), within float32 rounding of TensorFlow's kernels. Any
op still left without a rule is refused by name (`unconverted_ops`), never written.
Constants a layer holds as tensors, which tf2onnx leaves as graph inputs, are folded
back in as initializers (`captured_constants`). `load` runs a file in onnxruntime, which
needs neither Keras nor TensorFlow.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from netdsl.atomic import write_bytes
from netdsl.deploy.errors import ExportError
from netdsl.deploy.formats import ExportedModel, Format
from netdsl.deploy.serving import input_specs, serving_function
from netdsl.training.data.signature import Signature, TensorSpec

if TYPE_CHECKING:
    import keras

OPSET = 17  # LayerNormalization is an ONNX op from 17; onnxruntime >= 1.14 runs it
BATCH = "batch"  # the name of the open batch axis of every input and output
# ONNX's element types (as onnxruntime spells them) -> NumPy's names.
ONNX_TYPES = {
    "float": "float32",
    "double": "float64",
    "float16": "float16",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "bool": "bool",
}


def _constant_one(ctx: Any, node: Any, like: str) -> str:
    from tf2onnx import utils

    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(like))
    return ctx.make_const(utils.make_name(f"{node.name}_one"), np.array(1, dtype=dtype)).output[0]


def _log1p(ctx: Any, node: Any, name: str, args: Any) -> None:
    """log1p(x) -> Log(Add(x, 1))."""
    x = node.input[0]
    added = ctx.make_node("Add", [x, _constant_one(ctx, node, x)], op_name_scope=name)
    ctx.replace_inputs(node, [added.output[0]])
    node.type = "Log"


def _erfc(ctx: Any, node: Any, name: str, args: Any) -> None:
    """erfc(x) -> Sub(1, Erf(x))."""
    x = node.input[0]
    erf = ctx.make_node("Erf", [x], op_name_scope=name)
    ctx.replace_inputs(node, [_constant_one(ctx, node, x), erf.output[0]])
    node.type = "Sub"


OP_RULES: dict[str, tuple[Callable[..., None], list[Any]]] = {"Log1p": (_log1p, []), "Erfc": (_erfc, [])}


def onnx_bytes(model: keras.Model, metadata: dict[str, str]) -> bytes:
    """The model as a serialised ONNX ModelProto (ExportError naming a layer tf2onnx cannot convert)."""
    import tf2onnx

    _patch_tf2onnx()
    logging.getLogger("tf2onnx").setLevel(logging.ERROR)
    function, specs = serving_function(model), input_specs(model)
    captured = captured_constants(function.get_concrete_function(*specs))
    proto, _ = tf2onnx.convert.from_function(function, input_signature=specs, opset=OPSET, custom_op_handlers=OP_RULES)
    _fold_captured(proto, captured)
    unconverted = unconverted_ops(proto)
    if unconverted:
        node_name, op = unconverted[0]
        raise ExportError(_refusal(model, node_name, f"TensorFlow op {op} has no ONNX conversion", "onnx"))
    _name_batch_axes(proto)
    for key, value in sorted(metadata.items()):
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    proto.producer_name = "netdsl (tf2onnx)"
    return proto.SerializeToString()


def write(model: keras.Model, out: Path, metadata: dict[str, str]) -> None:
    write_bytes(out, onnx_bytes(model, metadata), links="refuse")


def load(path: Path, fmt: Format) -> ExportedModel:
    """The file in an onnxruntime CPU session, its `metadata_props` as the metadata."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    # onnxruntime prints four lines ("*** EP Error ***", "Falling back ...") to stdout before it loads a file
    # again whose error it cannot decode (bytes that are not UTF-8: the ONNX fuzz campaign); ours is one line.
    with contextlib.redirect_stdout(io.StringIO()):
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def spec(arg: Any) -> TensorSpec:
        shape = tuple(d if isinstance(d, int) else None for d in arg.shape[1:])
        return TensorSpec(arg.name, shape, ONNX_TYPES.get(arg.type[len("tensor(") : -1], arg.type))

    signature = Signature(tuple(map(spec, session.get_inputs())), tuple(map(spec, session.get_outputs())))
    names = signature.output_names

    def run(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, session.run(names, inputs)))

    metadata = dict(session.get_modelmeta().custom_metadata_map)
    return ExportedModel(path, fmt, signature, run, metadata)


def unconverted_ops(proto: Any) -> list[tuple[str, str]]:
    """(node name, op) of nodes in the ONNX domain that are no ONNX op: TensorFlow ops tf2onnx left as they were."""
    import onnx

    return [
        (node.name, node.op_type)
        for node in proto.graph.node
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type)
    ]


def captured_constants(concrete: Any) -> dict[str, np.ndarray]:
    """{placeholder name: value} of the constant tensors a traced function captured from outside.

    A layer that holds a tensor rather than a variable (Normalization given its mean and
    variance, as EfficientNet's is) is captured this way; tf2onnx freezes variables but
    leaves such a capture as an extra graph input no caller would feed."""
    import tensorflow as tf

    return {
        internal.name: external.numpy()
        for external, internal in concrete.graph.captures
        if external.dtype != tf.resource and hasattr(external, "numpy")
    }


def _fold_captured(proto: Any, captured: dict[str, np.ndarray]) -> None:
    """Captured constants left as graph inputs become initializers holding their values."""
    from onnx import numpy_helper

    for value in list(proto.graph.input):
        if value.name in captured:
            proto.graph.initializer.append(numpy_helper.from_array(captured[value.name], value.name))
            proto.graph.input.remove(value)


def _name_batch_axes(proto: Any) -> None:
    """tf2onnx names the open batch axis `unk__N`; every input and output calls it `batch`."""
    for value in [*proto.graph.input, *proto.graph.output]:
        dims = value.type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            dims[0].dim_param = BATCH


def _refusal(model: keras.Model, node_name: str, reason: str, fmt: str) -> str:
    """'layer NAME (CLASS) cannot be exported to FMT: REASON' for the Keras layer a graph node came from."""
    layer = layer_of(model, node_name)
    if layer is None:
        return f"the model cannot be exported to {fmt}: {reason} (in {node_name})"
    return f"layer '{layer.name}' ({type(layer).__name__}) cannot be exported to {fmt}: {reason}"


def layer_of(model: keras.Model, node_name: str) -> Any:
    """The layer of `model` whose name scope a TensorFlow node name holds ('m_1/h.mish_1/Log1p' -> 'h.mish').

    Keras on TensorFlow scopes a layer's ops as `<layer name>_1` when the model is traced, so
    the name without that suffix is tried first."""
    names = {layer.name: layer for layer in model.layers}
    for part in node_name.split("/"):
        for candidate in (re.sub(r"_\d+$", "", part), part):
            if candidate in names and candidate != model.name:
                return names[candidate]
    return None


def _patch_tf2onnx() -> None:
    """Keras' own fix-up of tf2onnx for numpy 2 (tf2onnx 1.17 still uses names numpy 2 removed)."""
    try:
        from keras.src.export.tf2onnx_lib import patch_tf2onnx
    except ImportError:  # a Keras without it: a tf2onnx that needs no patch, we hope; the check will tell
        return
    with warnings.catch_warnings():  # it asks numpy for np.object, which warns
        warnings.simplefilter("ignore", FutureWarning)
        patch_tf2onnx()
