"""`adapt` in a train section: preprocessing layers whose state is learned from the training data.

    train {
      adapt = true                  # every adaptable layer whose state the spec does not give
      adapt = ["tokens", "norm*"]   # or these, named as freeze names parts
    }

Keras' preprocessing layers (`text_vectorization`, `string_lookup`,
`integer_lookup`, `normalization`, `discretization`) learn their state — a
vocabulary, a mean and variance, bin boundaries — from data with
`layer.adapt(data)` before training, as a Keras program calls it. Here, in
pure Python: the setting's form, every pattern naming layers of the model,
each named layer adaptable and its state not already given by the spec
(`vocabulary=`, `mean=`/`variance=`, `bin_boundaries=`). The training engine
adapts the layers on the training split only (`training/run/adapting.py`),
in graph order, so a layer after an adapted one sees the adapted values.
"""

from __future__ import annotations

from typing import Any

from netdsl.errors import Diagnostic, Fail
from netdsl.semantics.fine_tuning import Pattern, _layers_by_name, _nearest, _written_spans, part_layer_names
from netdsl.semantics.graph import Graph, keras_layer_name
from netdsl.semantics.values import describe_value

# An adaptable layer -> the arguments that give its state instead (then there is nothing to adapt).
ADAPTABLE = {
    "text_vectorization": ("vocabulary",),
    "string_lookup": ("vocabulary",),
    "integer_lookup": ("vocabulary",),
    "normalization": ("mean", "variance"),
    "discretization": ("bin_boundaries",),
}


def setting(spec: Any, item: Any, value: Any) -> None:
    """Check `adapt = true | false | ["PART", ...]` into `spec.adapt` (True: every adaptable layer)."""
    span = item.value.span
    if isinstance(value, bool):
        spec.adapt = value
        return
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items or not all(isinstance(v, str) and v for v in items):
        raise Fail(
            span,
            f"adapt is true, false or a list of layer names, received {describe_value(value)}",
            'adapt = true, or adapt = ["tokens"]',
        )
    spec.adapt = [Pattern(v, at) for v, at in zip(items, _written_spans(item.value, len(items)))]


def check_adapt(graph: Graph, spec: Any) -> list[Diagnostic]:
    """A diagnostic for a pattern naming nothing, a named layer that cannot adapt or whose state the spec
    gives, and `adapt = true` in a model with nothing to adapt."""
    if spec.adapt is True:
        if not adapted_layer_names(graph, spec):
            return [
                Diagnostic.at(
                    graph.span,
                    f"adapt = true, but '{graph.name}' has no layer to adapt",
                    "adapt learns the state of " + ", ".join(ADAPTABLE) + " from the training data",
                )
            ]
        return []
    if not spec.adapt:
        return []
    found = []
    layers_by_name = _layers_by_name(graph)
    nodes = {keras_layer_name(node): node for node in graph.nodes if node.op != "input"}
    for pattern in spec.adapt:
        names = part_layer_names(graph, [pattern.text])
        if not names:
            found.append(
                Diagnostic.at(
                    pattern.span,
                    f"'{pattern.text}' names no layer of '{graph.name}'",
                    _nearest(pattern.text, list(layers_by_name)),
                )
            )
            continue
        for name in names:
            node = nodes[name]
            if node.kind not in ADAPTABLE:
                found.append(
                    Diagnostic.at(
                        pattern.span,
                        f"'{name}' is a {node.kind} layer, which has no state to adapt",
                        "adapt takes " + ", ".join(ADAPTABLE),
                    )
                )
                break
            given = _state_given(node)
            if given:
                found.append(
                    Diagnostic.at(
                        pattern.span,
                        f"'{name}' has its state from the spec ({given}=); there is nothing to adapt",
                        f"leave it out of adapt, or drop {given}= to learn it from the data",
                    )
                )
                break
    return found


def adapted_layer_names(graph: Graph, spec: Any) -> list[str]:
    """The Keras names of the layers the train section adapts, in graph order (the order they adapt in)."""
    if spec is None or not spec.adapt:
        return []
    if spec.adapt is True:
        return [
            keras_layer_name(node)
            for node in graph.nodes
            if node.op == "layer" and node.kind in ADAPTABLE and not _state_given(node)
        ]
    return part_layer_names(graph, [p.text for p in spec.adapt])


def _state_given(node: Any) -> str | None:
    """The argument by which the spec gives a layer's state, or None."""
    args = node.args or {}
    return next((name for name in ADAPTABLE.get(node.kind, ()) if args.get(name) is not None), None)
