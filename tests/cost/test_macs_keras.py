"""Issue 31's acceptance: the MACs of every weighted layer equal a count read off the built Keras model's
own layer configurations (kernel sizes, units, groups, heads) and shapes: the cost model, which never
sees Keras, and Keras agree layer by layer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import netdsl
from netdsl import pipeline
from netdsl.cost import model_cost

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _keras_macs(layer) -> int | None:
    """One sample's multiply-adds of a built Keras layer, from its configuration; None for a layer
    without any (or a kind this check does not read)."""
    kind, config = type(layer).__name__, layer.get_config()
    if kind not in ("Dense", "Conv1D", "Conv2D", "Conv3D", "DepthwiseConv1D", "DepthwiseConv2D", "MultiHeadAttention"):
        return None
    if kind == "MultiHeadAttention":  # called on (query, value[, key])
        given = [tensor.shape for tensor in layer.input]
        query, value = given[0], given[1]
        key = given[2] if len(given) > 2 else value
        heads, key_dim = config["num_heads"], config["key_dim"]
        value_dim = config["value_dim"] or key_dim
        n_q, n_k = math.prod(query[1:-1]), math.prod(key[1:-1])
        projections = (
            (n_q * query[-1] + n_k * key[-1]) * heads * key_dim
            + n_k * value[-1] * heads * value_dim
            + n_q * heads * value_dim * layer.output.shape[-1]
        )
        return projections + heads * n_q * n_k * (key_dim + value_dim)
    inputs = layer.input.shape
    outputs = layer.output.shape
    if kind == "Dense":
        return math.prod(inputs[1:]) * config["units"]
    if kind in ("Conv1D", "Conv2D", "Conv3D"):
        fan_in = inputs[-1] if config["data_format"] == "channels_last" else inputs[1]
        return math.prod(outputs[1:]) * math.prod(config["kernel_size"]) * fan_in // config["groups"]
    if kind in ("DepthwiseConv1D", "DepthwiseConv2D"):
        return math.prod(outputs[1:]) * math.prod(config["kernel_size"])
    return None


def _flat(model):
    for layer in model.layers:
        yield from (_flat(layer) if hasattr(layer, "layers") and layer.layers else [layer])


@pytest.mark.parametrize(
    "spec, name",
    [
        ("lightning_mlp.net", "lightning_mlp"),
        ("multi_output.net", "detector"),
        ("mobilenet_v2.net", "mobilenet_v2"),
        ("resnet50.net", "resnet50"),
        ("transformer.net", "transformer"),
    ],
)
def test_every_weighted_layers_macs_are_its_keras_configurations(spec, name):
    graphs = pipeline.checked_graphs(pipeline.load(SPECS / spec), [name])
    pipeline.unsure_models(graphs)
    ours = {step.name: step.macs for step in model_cost(graphs[name]).steps}
    built = netdsl.build(SPECS / spec, model=name)
    theirs = {layer.name: macs for layer in _flat(built) if (macs := _keras_macs(layer)) is not None}
    assert len(theirs) >= 2
    assert {layer: ours.get(layer) for layer in theirs} == theirs
