"""What one step holds in memory besides its output: the rules per layer kind behind the memory estimates.

A compiler keeps, for a training step's backward pass, only what each
gradient reads, and makes short-lived buffers inside a step that its output
does not show. `footprint(op, kind, args, inputs, outputs)` says, for one
sample, in elements of an activation (docs/cost.md, "Memory", says them to users;
`tests/cost/test_against_xla.py` holds them to XLA's `memory_analysis()`):

- `workspace`: what the step's forward pass makes and drops inside itself,
  beside its inputs and output (attention: its projections, the score matrix
  and the softmax of it; netdsl's residual block: its inner convolutions);
- `reads_inputs` / `reads_output`: whether the step's backward pass reads its
  inputs (a weighted layer, for its weights' gradient; relu, GELU, a norm, a
  max pool, a product) or its output (sigmoid, tanh, softmax: their
  derivatives are written in their output, as JAX defines them); a sum, a
  concatenation, a reshape, an average pool read neither. An elementwise
  step's backward fuses with its neighbours': it makes no gradient buffers
  (`fused`), and what it reads of an elementwise producer (a ReLU reading a
  batch norm's output, or a sum's) XLA recomputes from that producer's
  inputs (`elementwise`);
- `kept_inside`: the step's own intermediates its backward keeps (a fused
  activation's input, the pre-activation sum; attention's projections,
  probabilities and weighted values);
- `backward_extra`: what its backward makes beside the gradients of its
  output and inputs (attention: the gradient of its scores);
- `kept_raw_bytes`, `backward_raw_bytes`: bytes of the same size under every
  precision, kept from the forward pass and made in the backward: int32
  indices (a max pool's gradient, which XLA expands to a windowed argmax over
  an index per axis of each input element, and a scatter) and dropout's uint32
  random bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netdsl.cost.layers import elements
from netdsl.registry.layers.anatomy import Args, Shape, size

__all__ = ["Footprint", "footprint", "OUTPUT_DERIVED", "expression_footprint"]

# activations whose derivative JAX writes in their output (sigmoid' = s (1 - s), tanh' = 1 - t², softmax's);
# every other activation's derivative reads its input (relu's `x > 0`, GELU's, swish's, a declared one's)
OUTPUT_DERIVED = frozenset({"sigmoid", "tanh", "softmax", "log_softmax", "exponential", "exp"})
_INDEX_BYTES = 4  # an int32 index
_RANDOM_BITS = 4  # dropout's random draw, a uint32 per element

_SUMS = frozenset({"add", "subtract", "average"})
_READ_NOTHING = frozenset(
    {
        "concatenate",
        "flatten",
        "reshape",
        "permute",
        "repeat_vector",
        "identity",
        "masking",
        "activity_regularization",
        "spatial_dropout1d",  # its mask is one value per sample and channel: small
        "spatial_dropout2d",
        "spatial_dropout3d",
        "gaussian_noise",  # an added noise: the gradient passes unchanged
        "zero_padding1d",
        "zero_padding2d",
        "zero_padding3d",
        "cropping1d",
        "cropping2d",
        "cropping3d",
        "up_sampling1d",
        "up_sampling2d",
        "up_sampling3d",
        "average_pooling1d",
        "average_pooling2d",
        "average_pooling3d",
        "global_average_pooling1d",
        "global_average_pooling2d",
        "global_average_pooling3d",
    }
)
_DROPOUTS = frozenset({"dropout", "alpha_dropout", "gaussian_dropout"})  # a random factor per element
_MAXIMUM_POOLINGS = frozenset({"max_pooling1d", "max_pooling2d", "max_pooling3d"})


@dataclass(frozen=True)
class Footprint:
    """One step's memory beside its output, for one sample, in activation elements (see the module's doc)."""

    workspace: int = 0
    reads_inputs: bool = False
    reads_output: bool = False
    kept_inside: int = 0
    backward_extra: int = 0
    kept_raw_bytes: int = 0  # int32 indices, uint32 random bits: 4 bytes each under every precision
    backward_raw_bytes: int = 0
    fused: bool = False  # elementwise or moving data: its gradient fuses into its neighbours', no buffers of its own
    elementwise: bool = False  # its output is one function of its inputs per element (given small statistics)


_NOTHING = Footprint(fused=True)
_NORMS = frozenset({"batch_normalization", "layer_normalization", "group_normalization", "rms_normalization"})
_READS_INPUTS = Footprint(reads_inputs=True)
_ELEMENTWISE = frozenset({"multiply", "maximum", "minimum", "scale", "layer_scale", "scaled_sigmoid", "prelu"})


def footprint(op: str, kind: str, args: Args | None, ins: list[Shape], outs: list[Shape]) -> Footprint:
    """The footprint of a step (`op`, `kind` as the graph has them; `args`: a layer's), every size known."""
    if op == "input":
        return _NOTHING
    if op == "activation":
        return _activation_footprint(kind)
    if op == "declared_activation":
        return Footprint(reads_inputs=True, fused=True, elementwise=True)
    if op in ("declared_layer", "tensor_op"):
        return _READS_INPUTS  # declared layers and tensor expressions: `expression_footprint` adds their insides
    if op != "layer" or args is None:
        return _READS_INPUTS
    if kind in _SUMS:
        return Footprint(fused=True, elementwise=True)
    if kind in _READ_NOTHING:
        return _NOTHING
    if kind in _DROPOUTS:
        return _dropout_footprint(args["rate"], outs[0])
    if kind in _MAXIMUM_POOLINGS:
        return _max_pool_footprint(ins[0], outs[0])
    if kind in ("multi_head_attention", "attention"):
        return _attention_footprint(kind, args, ins)
    if kind == "residual":
        return _residual_footprint(args, ins, outs)
    if kind in ("activation", "softmax", "relu", "leaky_relu", "elu"):
        name = args["activation"] if kind == "activation" else kind
        return _activation_footprint(name if isinstance(name, str) else "")
    if kind in _ELEMENTWISE:
        return Footprint(reads_inputs=True, fused=True, elementwise=True)
    if kind in _NORMS:  # the statistics' reductions make buffers; then scale and shift each element
        return Footprint(reads_inputs=True, elementwise=True)
    if kind == "rescaling":
        return Footprint(fused=True, elementwise=True)
    kept, reads_output = _fused_activation(args, outs[0])
    if kind in ("simple_rnn", "gru", "lstm"):
        kept += _recurrent_kept(kind, args, ins)
    return Footprint(reads_inputs=True, reads_output=reads_output, kept_inside=kept)


def _dropout_footprint(rate: Any, out: Shape) -> Footprint:
    """Dropout in a training step: its backward multiplies the gradient by the same random mask, which XLA
    keeps as the random bits it drew, one uint32 per element (none at a rate of 0)."""
    if not rate:
        return _NOTHING
    return Footprint(kept_raw_bytes=_RANDOM_BITS * elements(out), fused=True)


def _max_pool_footprint(shape: Shape, out: Shape) -> Footprint:
    """A max pool's gradient, as XLA expands it (select-and-scatter): one int32 iota per axis of the input
    (batch included), made early, as a constant is, and kept until the pool's backward; there a windowed
    argmax gives each output its input's index per axis, concatenated into one array, and the gradient is
    scattered to them."""
    axes = len(shape) + 1
    return Footprint(
        reads_inputs=True,
        kept_raw_bytes=_INDEX_BYTES * axes * elements(shape),
        backward_raw_bytes=_INDEX_BYTES * axes * 2 * elements(out),
    )


def _activation_footprint(name: str) -> Footprint:
    if name in ("linear", "identity", "linear_fn"):
        return _NOTHING
    if name in OUTPUT_DERIVED:  # softmax: a row's sum, so neither fused nor elementwise
        pointwise = name not in ("softmax", "log_softmax")
        return Footprint(reads_output=True, fused=pointwise, elementwise=pointwise)
    return Footprint(reads_inputs=True, fused=True, elementwise=True)


def _fused_activation(args: Args, out: Shape) -> tuple[int, bool]:
    """A weighted layer's `activation=`: its derivative reads the pre-activation sum (kept inside the step)
    or, for sigmoid, tanh and softmax, the layer's output."""
    name = args["activation"]  # None for a layer without one
    if name is None:
        return 0, False
    if not isinstance(name, str):  # a declared activation: its derivative reads its input
        return elements(out), False
    found = _activation_footprint(name)
    return (elements(out) if found.reads_inputs else 0), found.reads_output


def _attention_footprint(kind: str, args: Args, ins: list[Shape]) -> Footprint:
    """Scaled dot-product attention: the query, key and value projections, the scores (heads x queries x
    keys; their softmax fused in place), the weighted values. Its backward keeps the projections, the
    softmax (its derivative is written in it) and the weighted values, and with `dropout` the dropped
    probabilities and their random bits; it makes the scores' gradient (the softmax's in its buffer). netdsl's
    attention has no output projection: its weighted values are its output."""
    query = ins[0]
    if kind == "attention":  # netdsl's: query, key, value; d_model wide in all
        key = ins[1] if len(ins) > 1 else query
        heads, key_width = size(args["heads"]), size(args["d_model"])
        value_width = key_width
    else:  # Keras': query, value, key
        key = ins[2] if len(ins) > 2 else (ins[1] if len(ins) > 1 else query)
        heads, key_dim = size(args["num_heads"]), size(args["key_dim"])
        key_width = heads * key_dim
        value_width = heads * (size(args["value_dim"]) if args["value_dim"] is not None else key_dim)
    n_q, n_k = elements(query[:-1]), elements(key[:-1])
    projections = n_q * key_width + n_k * key_width + n_k * value_width
    scores = heads * n_q * n_k
    weighted = n_q * value_width if kind == "multi_head_attention" else 0  # netdsl's: they are its output
    dropped = scores if args["dropout"] else 0  # the probabilities after dropout: the values' gradient reads them
    return Footprint(
        workspace=projections + scores + weighted,  # the softmax is computed in the scores' buffer
        reads_inputs=True,
        kept_inside=projections + scores + dropped + weighted,
        kept_raw_bytes=_RANDOM_BITS * dropped,
        backward_extra=scores,
    )


def _residual_footprint(args: Args, ins: list[Shape], outs: list[Shape]) -> Footprint:
    """netdsl's residual block, conv-BN-ReLU-conv-BN (+ a 1x1 conv-BN shortcut) + add, ReLU: inside it,
    each convolution's output (the batch norm reads it) and the first ReLU's (the second convolution reads
    it); the batch norms and ReLUs fuse into their neighbours, as elementwise work does."""
    out = elements(outs[0])
    projected = size(ins[0][-1]) != size(args["filters"]) or args["stride"] != 1
    convolutions = 3 if projected else 2
    return Footprint(
        workspace=convolutions * out,
        reads_inputs=True,
        kept_inside=(convolutions + 1) * out,
        backward_extra=convolutions * out,  # the gradients of its inner convolutions' outputs
    )


_GATES = {"simple_rnn": 1, "gru": 3, "lstm": 4}


def _recurrent_kept(kind: str, args: Args, ins: list[Shape]) -> int:
    """A recurrent layer keeps every step's gate activations and state for backpropagation through time."""
    steps, units = size(ins[0][0]), size(args["units"])
    return steps * units * (_GATES[kind] + 1)


def expression_footprint(peak: int, intermediates: int) -> Footprint:
    """A declared layer's or a tensor expression's: its tree's intermediate results (`intermediates`
    elements, all kept for the backward pass: a product reads both operands, a function its operand)
    and the most of them alive at once evaluating it (`peak`)."""
    return Footprint(workspace=peak, reads_inputs=True, kept_inside=intermediates)
