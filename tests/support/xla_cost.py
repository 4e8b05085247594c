"""What XLA counts for netdsl's models: `python -m tests.support.xla_cost [--forward] BATCH DIR SOURCE...`
prints JSON (`--forward`: the inference call only, half the compiling).

A SOURCE is a spec (every model of it) or `app:NAME`, a `keras.applications`
model without weights, which is also saved as DIR/NAME.keras (for `netdsl
decompile`). Run in its own process (Keras picks its backend once): each model is built on JAX and jit-compiled for the CPU twice, as
an inference call and as a training step (the gradients of the sum of its
outputs, then one update of its Keras optimizer: the spec's, else RMSprop, with
the weights and optimizer state donated, as Keras' JAX trainer does); for each,
`cost_analysis()`'s flops and transcendentals and `memory_analysis()`'s bytes,
and their peak: arguments + outputs + temporaries - the outputs written over
donated arguments (XLA's temporaries are one block, its buffers packed in it by
their lifetimes). YNNPACK's library fusions are turned off (see XLA_FLAGS below).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

os.environ["KERAS_BACKEND"] = "jax"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA's CPU compiler hands convolutions, products and reductions to YNNPACK in fusions that allocate their own
# intermediate buffers, which memory_analysis() does not see (a CNN's whole trunk then reads as 12 KiB of
# temporaries); with none, every tensor is a buffer XLA assigns and counts. The FLOPs are the same either way.
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_experimental_ynn_fusion_type=".strip()

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

import netdsl  # noqa: E402
from tests.support.numpy_init import draw_initial_weights_with_numpy  # noqa: E402


def _figures(compiled: Any) -> dict[str, float]:
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    memory = compiled.memory_analysis()
    peak = (
        memory.argument_size_in_bytes
        + memory.output_size_in_bytes
        + memory.temp_size_in_bytes
        - memory.alias_size_in_bytes  # donated arguments the outputs are written over
    )
    return {
        "flops": float(cost.get("flops", 0.0)),
        "transcendentals": float(cost.get("transcendentals", 0.0)),
        "argument_bytes": memory.argument_size_in_bytes,
        "output_bytes": memory.output_size_in_bytes,
        "temp_bytes": memory.temp_size_in_bytes,
        "alias_bytes": memory.alias_size_in_bytes,
        "peak_bytes": peak,  # what the call needs at once: its arguments, outputs and temporaries
    }


def measure(model: keras.Model, batch: int, forward_only: bool = False) -> dict[str, dict[str, float]]:
    inputs = [np.zeros((batch, *tuple(i.shape[1:])), dtype=i.dtype) for i in model.inputs]
    call_inputs: Any = inputs if len(inputs) > 1 else inputs[0]
    trainable = [v.value for v in model.trainable_variables]
    frozen = [v.value for v in model.non_trainable_variables]

    def forward(trainable: Any, frozen: Any, x: Any) -> Any:
        return model.stateless_call(trainable, frozen, x, training=False)[0]

    inference = jax.jit(forward).lower(trainable, frozen, call_inputs).compile()
    if forward_only:
        return {"inference": _figures(inference)}
    optimizer = model.optimizer if getattr(model, "optimizer", None) is not None else keras.optimizers.RMSprop()
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        optimizer = optimizer.inner_optimizer
    optimizer.build(model.trainable_variables)
    slots = [v.value for v in optimizer.variables]

    def loss(trainable: Any, frozen: Any, x: Any) -> Any:
        out = model.stateless_call(trainable, frozen, x, training=True)[0]
        parts = out if isinstance(out, (list, tuple)) else [out]
        return sum(jax.numpy.sum(p.astype("float32")) for p in parts)

    def step(trainable: Any, slots: Any, frozen: Any, x: Any) -> Any:
        grads = jax.grad(loss)(trainable, frozen, x)
        return optimizer.stateless_apply(slots, grads, trainable)

    training = jax.jit(step, donate_argnums=(0, 1)).lower(trainable, slots, frozen, call_inputs).compile()
    return {"inference": _figures(inference), "training": _figures(training)}


def main(argv: list[str]) -> None:
    forward_only = argv[0] == "--forward"
    draw_initial_weights_with_numpy()  # the compiler's figures depend on the shapes only
    argv = argv[1:] if forward_only else argv
    batch, folder, found = int(argv[0]), argv[1], {}
    for source in argv[2:]:
        if source.startswith("app:"):
            model = getattr(keras.applications, source[4:])(weights=None)
            model.save(os.path.join(folder, f"{source[4:]}.keras"))
            found[source[4:]] = measure(model, batch, forward_only)
        else:
            for name, model in netdsl.build_all(source, backend="jax").items():
                found[name] = measure(model, batch, forward_only)
    print(json.dumps(found))


if __name__ == "__main__":
    main(sys.argv[1:])
