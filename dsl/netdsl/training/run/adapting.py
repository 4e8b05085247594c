"""`adapt` (a train section's setting): preprocessing layers learn their state from the training split.

    adapted = adapt_layers(model, ["tokens"], plan.train, batch_size=32)   # ["adapt: tokens ..."]

As a Keras program calls `vectorizer.adapt(train_texts)` before `fit`: each
layer the spec names (`semantics/adapting.py`) adapts, in graph order, to the
values that reach it from the training part's rows only (never the
validation or test rows, which would leak into the model). A layer fed
straight by an input takes the data as it is; a deeper one takes what the
layers before it make of the data (those adapted first). The state (a
vocabulary, a mean and variance) is then part of the model: Keras saves it
in `model.keras` and `best.keras`, and `evaluate`, `predict` and `export`
read it from there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from netdsl.limits import MAX_VOCABULARY
from netdsl.training.data.plan import Part
from netdsl.training.errors import DataError

_VOCABULARY_LAYERS = ("TextVectorization", "StringLookup", "IntegerLookup")


def adapt_layers(model: Any, names: list[str], part: Part, batch_size: int) -> list[str]:
    """Adapt the layers `names` of `model` on `part`'s rows; one line per layer saying what it learned."""
    report = []
    for name in names:
        layer = model.get_layer(name)
        values = _values_reaching(model, layer, part, batch_size)
        layer.adapt(values, batch_size=batch_size) if _takes_batch_size(layer) else layer.adapt(values)
        report.append(f"adapt: {name} ({_kind(layer)}) on {part.n} training samples: {_learned(layer, part)}")
    return report


def _values_reaching(model: Any, layer: Any, part: Part, batch_size: int) -> np.ndarray:
    """The values `layer` receives for each of `part`'s rows, as one array (the data itself for an input's)."""
    feeding = layer.input
    inputs = {id(t): name for t, name in zip(model.inputs, [_input_name(t) for t in model.inputs])}
    batches = part.source.batches(part.rows, batch_size, with_targets=False)
    if id(feeding) in inputs:
        name = inputs[id(feeding)]
        return np.concatenate([x[name] for x, _ in batches])
    import keras

    before = keras.Model(model.inputs, feeding)  # the layers before it, adapted already
    return np.concatenate([keras.ops.convert_to_numpy(before(x, training=False)) for x, _ in batches])


def _learned(layer: Any, part: Part) -> str:
    """What `layer` learned, in words; DataError for a vocabulary past MAX_VOCABULARY or an empty one."""
    kind = type(layer).__name__
    if kind in _VOCABULARY_LAYERS:
        size = int(layer.vocabulary_size())
        if size > MAX_VOCABULARY:
            raise DataError(
                f"layer '{layer.name}' adapted a vocabulary of {size:,} tokens, more than {MAX_VOCABULARY:,}",
                file=part.source.origin,
                hint="give it max_tokens (the most frequent tokens are kept)",
            )
        special = 2 if kind == "TextVectorization" else int(getattr(layer, "num_oov_indices", 1)) + 1
        if size <= special:
            raise DataError(f"layer '{layer.name}' found no token in the training data", file=part.source.origin)
        return f"a vocabulary of {size:,} tokens"
    if kind == "Normalization":
        return f"mean and variance of {int(np.prod(np.shape(layer.mean)[1:] or (1,))):,} values"
    return "its state"


def _kind(layer: Any) -> str:
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(layer).__name__).lower()


def _takes_batch_size(layer: Any) -> bool:
    import inspect

    return "batch_size" in inspect.signature(layer.adapt).parameters


def _input_name(tensor: Any) -> str:
    name = getattr(tensor, "name", None) or "input"
    return str(name).split(":")[0]
