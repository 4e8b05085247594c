"""Taps: a tensor inside a nested model, reached by its layer's name (`mobilenet_v2.block_13_expand_relu`).

A U-Net or FPN head needs a backbone's intermediate feature maps, which Keras users take as
`base.get_layer(name).output` and fold into a model of several outputs. Here a model body names
them as `MODEL.LAYER` wherever a tensor may stand. Before the body runs, `find_taps` collects
every such name; the model's one call is then made with those layers as extra outputs of the
nested model (its declared outputs first, then the taps in the order the body names them), so
the Keras model it builds is the Keras recipe: one nested model, the same layers and weights.
A tap names the Keras layer (`keras_layer_name`: a zoo backbone's are keras.applications'
names), takes that layer's first output, and needs exactly one call of its model in the body.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from netdsl.errors import Diagnostic, Span, did_you_mean
from netdsl.semantics.graph import Graph, TensorRef, keras_layer_name
from netdsl.semantics.scope import FileScope
from netdsl.syntax import ir


def find_taps(body: list[ir.Stmt], scope: FileScope) -> dict[str, list[ir.Attr]]:
    """{model name: the `MODEL.LAYER` expressions of `body` naming a layer of that model}, first use first,
    one per layer name. `x.shape` and `lib.block` (an import's namespace) are not taps."""
    found: dict[str, list[ir.Attr]] = {}
    for attr in _attrs(body):
        if not isinstance(attr.value, ir.Name) or attr.attr == "shape":
            continue
        declared = scope.find(attr.value.id)
        if declared is None or not isinstance(declared[0], ir.ModelDecl):
            continue
        taps = found.setdefault(attr.value.id, [])
        if all(tap.attr != attr.attr for tap in taps):
            taps.append(attr)
    return found


def _attrs(value: Any) -> Iterator[ir.Attr]:
    if isinstance(value, ir.Attr):
        yield value
    if isinstance(value, ir.Node):
        for name in type(value).model_fields:
            if name != "span":
                yield from _attrs(getattr(value, name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _attrs(item)


def tapped(sub: Graph, taps: list[ir.Attr], diagnostics: list[Diagnostic]) -> Graph:
    """`sub` with each tapped layer's first output appended to its outputs (an unknown name is an error at
    the tap, with the nearest names)."""
    by_name = {keras_layer_name(node): node for node in sub.nodes}
    outputs = list(sub.outputs)
    for tap in taps:
        node = by_name.get(tap.attr)
        if node is None:
            diagnostics.append(_unknown_layer(sub, tap, list(by_name)))
            continue
        outputs.append((tap.attr, TensorRef(node.id, 0)))
    return replace(sub, outputs=outputs, built=None, taps=len(outputs) - len(sub.outputs))


def drop_untaken_outputs(graph: Graph) -> None:
    """A tapped model whose declared outputs nothing in `graph` takes becomes a model of its taps alone, as
    Keras' `keras.Model(base.input, [base.get_layer(name).output ...])` is: the layers only those outputs
    needed (MobileNetV2's last convolution, for a U-Net that taps `block_16_project`) are not in it."""
    for node in graph.nodes:
        sub = node.decl
        if node.op != "model" or not isinstance(sub, Graph) or not sub.taps:
            continue
        declared = len(sub.outputs) - sub.taps
        if any(ref.index < declared for ref in _uses(graph, node.id)):
            continue
        node.decl = replace(sub, outputs=sub.outputs[declared:], built=None, taps=sub.taps)
        node.n_outputs = sub.taps
        node.output_shapes = node.output_shapes[declared:]
        node.params = None
        for other in graph.nodes:
            other.inputs = [_shifted(ref, node.id, declared) for ref in other.inputs]
        graph.outputs = [(name, _shifted(ref, node.id, declared)) for name, ref in graph.outputs]


def _uses(graph: Graph, index: int) -> Iterator[TensorRef]:
    for node in graph.nodes:
        yield from (ref for ref in node.inputs if ref.node == index)
    yield from (ref for _, ref in graph.outputs if ref.node == index)


def _shifted(ref: TensorRef, index: int, by: int) -> TensorRef:
    return TensorRef(ref.node, ref.index - by) if ref.node == index else ref


def _unknown_layer(sub: Graph, tap: ir.Attr, names: list[str]) -> Diagnostic:
    span = _attr_span(tap)
    hint = did_you_mean(tap.attr, names) or f"`netdsl summary` lists the layers of '{sub.name}'"
    return Diagnostic.at(span, f"model '{sub.name}' has no layer '{tap.attr}'", hint)


def _attr_span(tap: ir.Attr) -> Span:
    """The span of the layer name after the dot."""
    end = tap.span.end_col if tap.span.end_line == tap.span.line else tap.span.col + len(tap.attr) + 1
    col = max(tap.span.col, end - len(tap.attr))
    return Span.at(tap.span.file, tap.span.line, col, len(tap.attr))
