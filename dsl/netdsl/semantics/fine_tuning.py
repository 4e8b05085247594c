"""Fine-tuning in a train section: parts' initial weights from files, frozen parts, two phases.

    train {
      init = {"backbone": "backbone.keras"}   # or init = "model.keras": the whole model
      init_strict = true                     # every layer of the part matched (the default)
      freeze = ["backbone", "h.res*"]        # layers, block instances, nested models; * patterns
      unfreeze_after = 3                     # epochs; then everything trains ...
      unfreeze_learning_rate = 1e-5          # ... at this learning rate
    }

A part is named as the model's layers and block instances are (`backbone`, a
nested model used as a step; `h.res_block_2`, a block instance; `probs`, a
layer), `*` matching any run of characters (and only `*`: a `?` or `[` is
itself). Here, in pure Python: the values' forms, file paths that stay inside
the spec's folder (the rules of imports), and every pattern matching something
in the expanded graph (`check_parts`). The weights themselves are read and
applied by `backend/fine_tuning.py`.

Which layers a pattern names, in `freeze` and in `init` alike, is decided
once, here (`part_layer_names`), from the graph: `check` refuses a pattern
that names none, `summary` counts the frozen layers, and the build freezes, or
loads weights into, the Keras layers of exactly those names. A layer answers
to the name `summary` and `render` show (`e.enc.y.proj`), to its Keras
layer's (a shared instance's `e.enc.proj`, a nested model's `backbone`: the
`frozen:` line's names) and to the block instances it lies in (`e.enc`). A
shared layer or nested model is one set of weights: naming one of its uses
freezes (or loads) it everywhere. A `freeze` pattern also reaches into a
nested model after its name (`backbone.stage_4*`: those of its layers, named
`backbone/LAYER`); `init` loads a nested model whole.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from netdsl.errors import Diagnostic, Fail, did_you_mean
from netdsl.semantics.graph import Graph, keras_layer_name
from netdsl.semantics.values import describe_value, type_name

WEIGHT_FILES = (".keras", ".weights.h5", ".h5")  # .h5: Keras 2's layout, keras.applications' published files
ZOO_PREFIX = "zoo:"  # "zoo:resnet50": the family's published ImageNet weights (without its classifier)
ZOO_TOP = "/top"  # "zoo:resnet50/top": with it


@dataclass(frozen=True)
class Pattern:
    """A part of the model by name: a layer, a block instance or a nested model, `*` allowed."""

    text: str
    span: Any


@dataclass(frozen=True)
class InitFrom:
    """`init = {"PART": "FILE"}`: the part's initial weights from FILE (part "": the whole model)."""

    part: Pattern
    path: str  # relative to the spec's folder
    span: Any


def setting(spec: Any, item: Any, value: Any) -> None:
    """Check one fine-tuning setting of a train section into `spec` (a TrainSpec)."""
    span = item.value.span
    name = item.name
    if name == "init":
        if isinstance(value, str):
            spec.init = [InitFrom(Pattern("", span), weights_path(value, span), span)]
        elif isinstance(value, dict) and value:
            spans = _written_spans(item.value, len(value), keys=True)
            spec.init = [
                InitFrom(Pattern(_part(k, at), at), weights_path(v, at), at) for (k, v), at in zip(value.items(), spans)
            ]
        else:
            raise Fail(
                span,
                f'init is a weights file or {{"PART": "FILE", ...}}, received {type_name(value)}',
                'init = "backbone.keras", or init = {"backbone": "backbone.keras"}',
            )
    elif name == "init_strict":
        if not isinstance(value, bool):
            raise Fail(span, f"init_strict is true or false, received {describe_value(value)}")
        spec.init_strict = value
    elif name in ("freeze", "unfreeze"):
        items = value if isinstance(value, (list, tuple)) else [value]
        if not items:
            raise Fail(span, f"{name} names at least one part")
        patterns = [Pattern(_part(v, at), at) for v, at in zip(items, _written_spans(item.value, len(items)))]
        setattr(spec, name, patterns)
    elif name == "unfreeze_after":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise Fail(span, f"unfreeze_after is a number of epochs (1 or more), received {describe_value(value)}")
        spec.unfreeze_after = value
    elif name == "unfreeze_learning_rate":
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise Fail(span, f"unfreeze_learning_rate is a positive number, received {describe_value(value)}")
        spec.unfreeze_learning_rate = float(value)


def _written_spans(expr: Any, count: int, keys: bool = False) -> list[Any]:
    """The span of each item of a list (or key of a dict) literal; the whole value's otherwise."""
    items = getattr(expr, "items", None)
    if isinstance(items, list) and len(items) == count:
        written: list[Any] = [getattr(i, "key", None) or i for i in items] if keys else list(items)
        return [i.span for i in written]
    return [expr.span] * count


def _part(value: Any, span: Any) -> str:
    if not isinstance(value, str) or not value:
        raise Fail(
            span,
            f"a part is named by a string (a layer, block instance or nested model), received {describe_value(value)}",
        )
    return value


def weights_path(value: Any, span: Any) -> str:
    """A weights file's path, relative to the spec's folder and staying inside it, or a zoo family's
    published weights (`zoo:NAME`, `zoo:NAME/top`)."""
    if isinstance(value, str) and value.startswith(ZOO_PREFIX):
        return _zoo_weights(value, span)
    if not isinstance(value, str) or not value.endswith(WEIGHT_FILES):
        raise Fail(
            span, f"a weights file is a .keras, .weights.h5 or .h5 path or zoo:NAME, received {describe_value(value)}"
        )
    if "\x00" in value or os.path.isabs(value) or value.startswith(("/", "\\", "~")) or value[1:2] == ":":
        raise Fail(span, f"weights file '{value}' is an absolute path; it is relative to the spec's folder")
    if ".." in value.replace("\\", "/").split("/"):
        raise Fail(span, f"weights file '{value}' leaves the spec's folder")
    return value


def zoo_weights(path: str) -> tuple[str, bool] | None:
    """(family, with its classifier) of a `zoo:` weights value; None for a file's path."""
    if not path.startswith(ZOO_PREFIX):
        return None
    name = path[len(ZOO_PREFIX) :]
    top = name.endswith(ZOO_TOP)
    return (name[: -len(ZOO_TOP)] if top else name), top


def _zoo_weights(value: str, span: Any) -> str:
    from netdsl.zoo.catalog import BY_NAME

    found = zoo_weights(value)
    assert found is not None
    if found[0] not in BY_NAME:
        hint = did_you_mean(found[0], BY_NAME) or "`netdsl zoo list` lists the families"
        raise Fail(span, f"no zoo family is called '{found[0]}'", hint)
    return value


def check_parts(graph: Graph, spec: Any, body_failed: bool = False) -> list[Diagnostic]:
    """A diagnostic for each part pattern that names nothing in the model. With `body_failed` (a statement
    of the model was refused, and the layers it would have made are missing) a pattern naming nothing is
    left unsaid: `freeze = ["efficientnet_b0"]` after a refused `efficientnet_b0(pooling="mean")` call
    said three errors more, all of them that one."""
    found = []
    if spec.unfreeze_learning_rate is not None and spec.unfreeze_after is None:
        found.append(
            Diagnostic.at(
                spec.freeze[0].span if spec.freeze else graph.span,
                "unfreeze_learning_rate needs unfreeze_after (the epochs of the first phase)",
            )
        )
    if spec.unfreeze_after is not None and not spec.freeze:
        found.append(Diagnostic.at(graph.span, "unfreeze_after needs freeze: the parts frozen for the first phase"))
    whole = _layers_by_name(graph)
    for init in spec.init:
        if init.part.text and not _matching(whole, [init.part.text]) and not body_failed:
            hint = _inside_nested_model(graph, init.part.text, partial(_init_whole, init.path))
            found.append(_names_nothing(graph, init.part, list(whole), hint))
        found += _zoo_file_for_the_top(graph, init)
    if (spec.freeze or spec.unfreeze) and not body_failed:
        reaching = _layers_by_name(graph, nested=True)
        found += [
            _names_nothing(graph, p, list(reaching), None)
            for p in spec.freeze + spec.unfreeze
            if not _matching(reaching, [p.text])
        ]
    if spec.unfreeze and spec.unfreeze_after is None:
        found.append(
            Diagnostic.at(spec.unfreeze[0].span, "unfreeze needs unfreeze_after (the epochs of the first phase)")
        )
    elif spec.unfreeze:
        frozen = part_layer_names(graph, [p.text for p in spec.freeze], nested=True)
        for pattern in spec.unfreeze:
            thawed = [n for n in part_layer_names(graph, [pattern.text], nested=True) if not _within(n, frozen)]
            if thawed:
                found.append(
                    Diagnostic.at(
                        pattern.span,
                        f"'{pattern.text}' names {_quoted(thawed)}, which freeze does not freeze: the second "
                        f"phase unfreezes parts of what the first froze",
                    )
                )
    return found


def _within(name: str, parts: Sequence[str]) -> bool:
    """Whether the layer `name` is one of `parts` or inside one (`backbone/conv1` inside `backbone`)."""
    return any(name == part or name.startswith(part + INSIDE) for part in parts)


def _quoted(names: list[str]) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def second_phase_frozen(graph: Graph, spec: Any, frozen_leaves: Sequence[str]) -> list[str]:
    """The layers frozen in the second phase, of `frozen_leaves` (the first phase's, every frozen layer
    that holds weights itself, `backbone/conv1` inside a nested model): all but those `unfreeze` names
    (every one without `unfreeze`). Batch norms the second phase unfreezes stay frozen: the build's."""
    if not spec.unfreeze:
        return []
    thawed = part_layer_names(graph, [p.text for p in spec.unfreeze], nested=True)
    return [leaf for leaf in frozen_leaves if not _within(leaf, thawed)]


def _names_nothing(graph: Graph, pattern: Pattern, names: list[str], hint: str | None) -> Diagnostic:
    return Diagnostic.at(
        pattern.span,
        f"'{pattern.text}' names no layer, block instance or nested model of '{graph.name}'",
        hint or _nearest(pattern.text, names),
    )


def part_layer_names(graph: Graph, patterns: Sequence[str], *, nested: bool = False) -> list[str]:
    """The Keras names of the layers `patterns` name, in Keras' order: those with a name a pattern matches.

    The one rule of `check` (`check_parts`), `summary` (`semantics/trainable.py`)
    and the build (`backend/fine_tuning`: the layers `freeze` freezes and those
    an `init` part loads), so that they cannot disagree. `nested` (`freeze`'s):
    a pattern reaches into a nested model (`backbone.stage_4*`), naming its
    layers as `backbone/LAYER` (Keras never puts a `/` in a layer's name)."""
    if not patterns:  # nothing frozen (most specs): no table of every name to build
        return []
    named = _matching(_layers_by_name(graph, nested=nested), patterns)
    return [name for name in _ordered_layer_names(graph, nested) if name in named]


def _ordered_layer_names(graph: Graph, nested: bool) -> list[str]:
    order: dict[str, None] = {}
    for node in graph.nodes:
        if node.op == "input":
            continue
        layer = keras_layer_name(node)
        order[layer] = None
        if nested and node.op == "model" and isinstance(node.decl, Graph):
            order.update((f"{layer}{INSIDE}{inner}", None) for inner in _ordered_layer_names(node.decl, nested))
    return list(order)


INSIDE = "/"  # between a nested model's Keras name and one of its layers': "backbone/conv1"


def _zoo_file_for_the_top(graph: Graph, init: InitFrom) -> list[Diagnostic]:
    """`init = {"B": "zoo:NAME/top"}` for a backbone B called with its classifier (`include_top=true`),
    `zoo:NAME` for one called without: the published file of the other kind holds a layer more or less."""
    zoo = zoo_weights(init.path)
    if zoo is None or not init.part.text:
        return []
    family, top = zoo
    for node in graph.nodes:
        sub = node.decl
        if node.op != "model" or not isinstance(sub, Graph) or not sub.keras_application:
            continue
        if init.part.text not in (node.name, keras_layer_name(node)) or sub.classifier == top:
            continue
        if top:
            message = f"'{init.path}' holds the ImageNet classifier; '{init.part.text}' is called without it"
            hint = f"call it with include_top=true, or load {ZOO_PREFIX}{family}"
        else:
            message = f"'{init.path}' holds no classifier; '{init.part.text}' is called with include_top=true"
            hint = f"load {ZOO_PREFIX}{family}{ZOO_TOP}"
        return [Diagnostic.at(init.span, message, hint)]
    return []


def _layers_by_name(graph: Graph, *, nested: bool = False) -> dict[str, set[str]]:
    """Every name a pattern may use -> the Keras layers it names. A layer answers to its node's name
    (`summary`, `render`), its Keras layer's (a shared instance's, a nested model's) and to every
    block instance it lies in (a zoo backbone's layers: to their keras.applications names alone);
    with `nested`, a nested model's own layers answer to their names after the model's
    (`backbone.stage_4.conv2d` -> `backbone/stage_4.conv2d`)."""
    table: dict[str, set[str]] = {}
    for node in graph.nodes:
        if node.op == "input":
            continue
        layer = keras_layer_name(node)
        paths = [".".join(node.cluster[:depth]) for depth in range(1, len(node.cluster) + 1)]
        for name in (node.name, layer, *(paths if not graph.keras_application else ())):
            table.setdefault(name, set()).add(layer)
        if nested and node.op == "model" and isinstance(node.decl, Graph):
            inside = _layers_by_name(node.decl, nested=True)
            for outer in dict.fromkeys((node.name, layer)):
                for name, layers in inside.items():
                    table.setdefault(f"{outer}.{name}", set()).update(f"{layer}{INSIDE}{i}" for i in layers)
    return table


def _matching(layers_by_name: dict[str, set[str]], patterns: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for pattern in patterns:
        if "*" not in pattern:  # a plain name: looked up, not matched against every name
            found |= layers_by_name.get(pattern, set())
            continue
        matches = _wildcard(pattern)
        for name, layers in layers_by_name.items():
            if matches(name):
                found |= layers
    return found


def _wildcard(pattern: str) -> Callable[[str], re.Match[str] | None]:
    """A pattern whose only special character is `*` (any run of characters): unlike fnmatch's,
    a `?` or `[...]` is itself, as the docs say."""
    return re.compile(".*".join(re.escape(piece) for piece in pattern.split("*")), re.DOTALL).fullmatch


def _inside_nested_model(graph: Graph, text: str, whole: Callable[[str], str]) -> str | None:
    """The hint for a pattern reaching into a nested model (`e.proj`, `e` a shared block): it is
    frozen or loaded whole, as `whole(name)` says."""
    for node in graph.nodes:
        if node.op == "model":
            for name in (node.name, keras_layer_name(node)):
                if text.startswith(name + "."):
                    return f"'{name}' is a nested model, {whole(name)}"
    return None


def _init_whole(path: str, name: str) -> str:
    return f'loaded whole: init = {{"{name}": "{path}"}}'


def _nearest(text: str, names: list[str]) -> str | None:
    return did_you_mean(text, names) if "*" not in text else None
