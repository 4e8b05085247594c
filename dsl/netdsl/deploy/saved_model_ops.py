"""Which TensorFlow ops a SavedModel folder may hold for `predict`/`evaluate` to run it unasked (issue 27, N4).

A SavedModel is a program: `tf.saved_model.load` runs whatever graph its `saved_model.pb`
holds, and TensorFlow has ops that read, write and delete files (`ReadFile`, `WriteFile`,
`DeleteFile`, `SaveV2`, `MergeV2Checkpoints` ...), print, call Python (`PyFunc`) or open
datasets from paths. So before TensorFlow loads a folder, netdsl reads `saved_model.pb`
itself (a regular file, bounded) as the SavedModel protobuf and lists the op of every node
of every meta-graph's graph and of every function in its library, following the functions
that nodes name in their attributes (a name that is no function of the library is taken
for an op: TensorFlow runs a primitive op called by name). Every op must be in
`ALLOWED_OPS`; anything else is refused by name unless the user says `--trust`.

`ALLOWED_OPS` is an allow-list, not a denylist: TensorFlow adds ops every release, and a
new one that touches files would pass a denylist. It was built empirically, by
`scripts/saved_model_ops.py`: every model of every spec in specs/, of
tests/fixtures/deploy/*.net (the export tests' models, and ops.net, a model of each layer
kind netdsl builds whose graph is not already covered: recurrent, attention, convolutions
and pooling of every rank, normalizations, embeddings, activations, resizing ...) exported with
`netdsl export --format saved_model`, and the union of their ops kept (`--check` fails
when an export holds an op outside it). Each op kept is a computation on tensors held in
memory, or the variable, call and control-flow plumbing a signature needs; none opens a
file, a process or a socket.

The checkpoint ops are the one exception, and only where TensorFlow 2's loader never runs
them. Every SavedModel holds a `_traced_save` function (SaveV2, MergeV2Checkpoints, which
deletes the checkpoint files it merges, ShardedFilename, StringJoin ...) and a
`_traced_restore` one (RestoreV2), called from the two graph nodes its `saver_def` names, for
TensorFlow 1's `Saver`. `tf.saved_model.load` of a folder with an object graph (every
TensorFlow 2 export, netdsl's included) never runs them: it restores the variables from the
folder's own `variables/` with a reader it builds itself, and runs only the functions the
object graph names (signatures, restored functions, resource initializers) and what they call.
So `SAVER_OPS` are allowed in a function only when the saver's nodes are the only way to
reach it: a signature, the object graph or any other node calling it (or a folder without an
object graph, which TensorFlow loads the TensorFlow 1 way, running its saver) makes them
refused like any other op.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netdsl.deploy.errors import ExportError
from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_SAVED_MODEL_GRAPH_BYTES

GRAPH = "saved_model.pb"
SHOWN_OPS = 8  # ops a refusal names (then "and N more")
SHOWN_OP_CHARS = 64  # of an op name a refusal shows (names come from the file)

# Built by scripts/saved_model_ops.py (see the module's docstring): the 98 ops the signatures of the 25
# models exported run, with TensorFlow 2.21 and Keras 3.15; grouped, each group sorted. The spectral and
# index group: the 20 more of ops.net's `spectral_and_index` model (fft2, stft, arange, one_hot, ...).
ALLOWED_OPS = frozenset(
    {
        # variables, calls, control flow and the signature's plumbing
        "AssignVariableOp",
        "Const",
        "Identity",
        "IdentityN",
        "NoOp",
        "Placeholder",
        "ReadVariableOp",
        "StatefulPartitionedCall",
        "StopGradient",
        "VarHandleOp",
        "VarIsInitializedOp",
        "While",
        # arithmetic and activations
        "Abs",
        "AddV2",
        "BatchMatMulV2",
        "BiasAdd",
        "Cast",
        "Ceil",
        "Cumsum",
        "Einsum",
        "Elu",
        "Erfc",
        "Exp",
        "Expm1",
        "Floor",
        "LeakyRelu",
        "Log1p",
        "LogSoftmax",
        "MatMul",
        "Maximum",
        "Minimum",
        "Mul",
        "Neg",
        "Pow",
        "RealDiv",
        "Relu",
        "Relu6",
        "Rsqrt",
        "Selu",
        "Sigmoid",
        "Sin",
        "Softmax",
        "Softplus",
        "Softsign",
        "Sqrt",
        "Square",
        "SquaredDifference",
        "Sub",
        "Tanh",
        # comparisons, selection, reductions
        "Any",
        "Bucketize",
        "DenseBincount",
        "Equal",
        "Greater",
        "GreaterEqual",
        "Less",
        "LessEqual",
        "LogicalAnd",
        "Max",
        "Mean",
        "NotEqual",
        "Prod",
        "SelectV2",
        "Sum",
        "TopKV2",
        # shapes and indexing
        "ConcatV2",
        "ExpandDims",
        "Fill",
        "GatherV2",
        "MatrixBandPart",
        "Pack",
        "Pad",
        "Range",
        "Reshape",
        "ReverseV2",
        "Shape",
        "Size",
        "Split",
        "SplitV",  # split(x, [i, j], axis=...): cut at indices
        "Squeeze",
        "StridedSlice",
        "Tile",
        "Transpose",
        "Unpack",  # unstack(x, axis=...)
        "ZerosLike",
        # the spectral and index functions of tensor expressions (fft2, stft's frames and Hann window, arange
        # per sample, one_hot, cumsum, argmax, where of comparisons): computations on tensors in memory
        "ArgMax",
        "ArgMin",
        "Bitcast",
        "BitwiseAnd",
        "BroadcastTo",
        "Complex",
        "Cos",
        "Cumprod",
        "FFT",
        "FFT2D",
        "FloorDiv",
        "FloorMod",
        "IRFFT",
        "Imag",
        "MirrorPad",
        "OneHot",
        "OnesLike",
        "RFFT",
        "Real",
        "Select",
        # convolutions, pooling, resizing
        "AvgPool",
        "AvgPool3D",
        "Conv2D",
        "Conv2DBackpropInput",
        "Conv3D",
        "Conv3DBackpropInputV2",
        "DepthwiseConv2dNative",
        "MaxPool",
        "MaxPool3D",
        "ResizeBilinear",
        # recurrent layers (Keras' loops keep their steps in tensor lists, in memory)
        "TensorListFromTensor",
        "TensorListGetItem",
        "TensorListReserve",
        "TensorListSetItem",
        "TensorListStack",
        # text (text_vectorization, string_lookup): string ops, ragged tokens padded, and the vocabulary as a hash
        # table in memory filled from constants (InitializeTableFromTextFile, which reads a file, is not here)
        "Add",
        "HashTableV2",
        "LookupTableExportV2",
        "LookupTableFindV2",
        "LookupTableImportV2",
        "MutableHashTableV2",
        "PartitionedCall",
        "RaggedTensorToTensor",
        "StaticRegexReplace",
        "StringLower",
        "StringSplitV2",
    }
)

# Only in the functions the saver_def's nodes alone reach (see the docstring): TensorFlow 1's Saver, which
# writes (SaveV2), deletes (MergeV2Checkpoints) and reads (RestoreV2) checkpoint files by name.
SAVER_OPS = frozenset(
    {
        "DisableCopyOnRead",
        "MergeV2Checkpoints",
        "RestoreV2",
        "SaveV2",
        "ShardedFilename",
        "StaticRegexFullMatch",
        "StringJoin",
    }
)


@dataclass(frozen=True)
class GraphOps:
    """The ops of a SavedModel: `ops` run (or may be run) by its signatures and object graph; `saver_ops`
    only in the functions that nothing but its saver_def's nodes reach."""

    ops: frozenset[str]
    saver_ops: frozenset[str]

    def refused(self) -> list[str]:
        """The ops outside the allow-list, sorted."""
        return sorted((self.ops - ALLOWED_OPS) | (self.saver_ops - ALLOWED_OPS - SAVER_OPS))


def check_saved_model(folder: Path) -> None:
    """ExportError (one line) unless every op of `folder`'s graph is allowed (see the module's docstring)."""
    refused = read_graph_ops(folder).refused()
    if refused:
        shown = ", ".join(_shown(op) for op in refused[:SHOWN_OPS])
        more = f" and {len(refused) - SHOWN_OPS} more" if len(refused) > SHOWN_OPS else ""
        raise ExportError(
            f"this SavedModel holds TensorFlow {'op' if len(refused) == 1 else 'ops'} outside "
            f"netdsl's allow-list of the compute ops Keras models export to: {shown}{more}",
            file=str(folder),
            hint="a SavedModel is a program; if it comes from someone you trust, "
            "run it with --trust (trust=True in the library)",
        )


def read_graph_ops(folder: Path) -> GraphOps:
    """The ops of `folder/saved_model.pb`, read as a regular file of at most MAX_SAVED_MODEL_GRAPH_BYTES,
    never through a link; ExportError when it is not one or not a SavedModel protobuf."""
    try:
        data = read_regular(folder / GRAPH, MAX_SAVED_MODEL_GRAPH_BYTES, "SavedModel graph", follow_links=False)
    except Refused as exc:
        raise ExportError(f"{GRAPH}: {exc}", file=str(folder)) from None
    return graph_ops(data, folder)


def graph_ops(data: bytes, folder: Path | str = GRAPH) -> GraphOps:
    """The ops of the SavedModel protobuf `data`; ExportError (naming `folder`) when it is not one."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up notices, before a one-line refusal
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    try:
        saved.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise ExportError(f"{GRAPH} is not a SavedModel ({exc or type(exc).__name__})", file=str(folder)) from None
    ops: set[str] = set()
    saver_ops: set[str] = set()
    for meta_graph in saved.meta_graphs:
        found = _meta_graph_ops(meta_graph)
        ops |= found.ops
        saver_ops |= found.saver_ops
    return GraphOps(frozenset(ops), frozenset(saver_ops - ops))


def _meta_graph_ops(meta_graph: Any) -> GraphOps:
    graph = meta_graph.graph_def
    functions: dict[str, list[Any]] = {}  # by name: a library may name two functions alike (the fuzzer's find)
    for function in graph.library.function:
        functions.setdefault(function.signature.name, []).append(function)
    calls = {name: set(_called(node for f in alike for node in f.node_def)) for name, alike in functions.items()}
    saver_nodes = _saver_nodes(meta_graph) if meta_graph.HasField("object_graph_def") else set()
    # Entry points: every node but the saver's, every function the object graph names, every gradient
    # (run when a function is differentiated), and every function the saver's nodes do not reach (one
    # no one calls is checked as if it ran).
    by_saver = _reach(_called(n for n in graph.node if n.name in saver_nodes), calls)
    entries = {
        *_called(n for n in graph.node if n.name not in saver_nodes),
        *_object_graph_functions(meta_graph.object_graph_def),
        *(gradient.gradient_func for gradient in graph.library.gradient),
        *(name for name in functions if name not in by_saver),
    }
    run = _reach(entries, calls)
    ops = {node.op for node in graph.node}  # the saver's nodes too: calls, which the allow-list holds
    ops |= {name for name in run if name not in functions}  # an op called by name
    ops |= _function_ops(run, functions)
    saver_ops = _function_ops(by_saver - run, functions) | {name for name in by_saver - run if name not in functions}
    return GraphOps(frozenset(ops), frozenset(saver_ops))


def _function_ops(names: set[str], functions: dict[str, list[Any]]) -> set[str]:
    """The ops of the nodes of the library functions called `names`."""
    return {node.op for name in names for function in functions.get(name, ()) for node in function.node_def}


def _saver_nodes(meta_graph: Any) -> set[str]:
    """The graph nodes TensorFlow 1's Saver runs: the save tensor's and the restore op's."""
    saver = meta_graph.saver_def
    return {name.split(":")[0].lstrip("^") for name in (saver.save_tensor_name, saver.restore_op_name) if name}


def _object_graph_functions(object_graph: Any) -> set[str]:
    names = set(object_graph.concrete_functions)
    for node in object_graph.nodes:
        kind = node.WhichOneof("kind")
        if kind == "function":
            names.update(node.function.concrete_functions)
        elif kind == "bare_concrete_function":
            names.add(node.bare_concrete_function.concrete_function_name)
    return names


def _called(nodes: Iterable[Any]) -> Iterator[str]:
    """The names of the functions `nodes` name in their attributes (`f`, `body`, `then_branch`, lists of them,
    and functions named inside those functions' own attributes)."""
    for node in nodes:
        pending = list(node.attr.values())
        while pending:
            value = pending.pop()
            kind = value.WhichOneof("value")
            if kind == "func":
                yield value.func.name
                pending.extend(value.func.attr.values())
            elif kind == "list":
                for func in value.list.func:
                    yield func.name
                    pending.extend(func.attr.values())


def _reach(starts: Iterable[str], calls: dict[str, set[str]]) -> set[str]:
    """`starts` and every function they call, directly or not."""
    seen: set[str] = set()
    pending = list(starts)
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending.extend(calls.get(name, ()))
    return seen


def _shown(op: str) -> str:
    return op if len(op) <= SHOWN_OP_CHARS else op[:SHOWN_OP_CHARS] + "..."
