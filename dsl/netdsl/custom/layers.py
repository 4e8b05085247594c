"""The custom layers netdsl ships: linear, scale, scaled_sigmoid, layer_scale,
attention, residual.

Every layer is written with `keras.ops`, registered with Keras under the
package "netdsl" and round-trips through `get_config` / `from_config`, so a
model using them saves to `.keras` and loads with `safe_mode=True` once
`netdsl.custom` is imported.
"""

import math

import keras
from keras import ops

_register = keras.saving.register_keras_serializable(package="netdsl")


# --------------------------------------------------------------------------
# Argument checks shared by the layers (Keras wording: "Expected ...,
# received: ...").


def _check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Expected `{name}` to be a positive integer, received: {value!r}")


def _check_number(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"Expected `{name}` to be a number, received: {value!r}")


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"Expected `{name}` to be a boolean, received: {value!r}")


def _is_shape_list(input_shape):
    """True when `input_shape` is a list of shapes rather than one shape."""
    return isinstance(input_shape, (list, tuple)) and len(input_shape) > 0 and isinstance(input_shape[0], (list, tuple))


# --------------------------------------------------------------------------


@_register
class Linear(keras.layers.Layer):
    """A learned projection `x @ kernel` with no bias.

    Args:
        units: size of the last output axis.

    The kernel has shape `(input_dim, units)` and a glorot-uniform init.
    """

    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        _check_positive_int("units", units)
        self.units = units

    def build(self, input_shape):
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(
                "Expected the last axis of the input of `linear` to be "
                f"defined, received input shape: {tuple(input_shape)}"
            )
        self.kernel = self.add_weight(
            name="kernel",
            shape=(input_dim, self.units),
            initializer="glorot_uniform",
        )

    def call(self, inputs):
        return ops.matmul(inputs, self.kernel)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


@_register
class Scale(keras.layers.Layer):
    """Multiply the input by a scalar.

    By default (`trainable=False`) the scalar is the constant `multiplier`
    and the layer holds no weight, like the Keras tutorial's
    `CustomMultiplyLayer`. With `trainable=True` it is one learned weight
    initialised to `multiplier`.

    Args:
        multiplier: the constant, or the learned scalar's initial value.
        trainable: whether the scalar is learned.
    """

    def __init__(self, multiplier=2.0, trainable=False, **kwargs):
        _check_number("multiplier", multiplier)
        _check_bool("trainable", trainable)
        super().__init__(trainable=trainable, **kwargs)
        self.multiplier = float(multiplier)
        self.scale = None

    def build(self, input_shape):
        if self.trainable:
            self.scale = self.add_weight(
                name="scale",
                shape=(),
                initializer=keras.initializers.Constant(self.multiplier),
                trainable=True,
            )

    def call(self, inputs):
        factor = self.multiplier if self.scale is None else self.scale
        return inputs * ops.cast(factor, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def load_own_variables(self, store):
        if self.scale is None and len(store.keys()) == 1:
            # Saved by netdsl 0.1.0, whose frozen scale kept its constant as a
            # non-trainable weight: that value is the constant.
            self.multiplier = float(ops.convert_to_numpy(store["0"]))
            return
        super().load_own_variables(store)

    def get_config(self):
        # The base config already holds `trainable`.
        return {**super().get_config(), "multiplier": self.multiplier}


@_register
class ScaledSigmoid(keras.layers.Layer):
    """`sigmoid(x) * scale`, no weights.

    Args:
        scale: the constant factor.
    """

    def __init__(self, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        _check_number("scale", scale)
        self.scale = float(scale)

    def call(self, inputs):
        return ops.sigmoid(inputs) * self.scale

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


@_register
class LayerScale(keras.layers.Layer):
    """Multiply each channel by a learned scale, `x * gamma` (keras.applications' `LayerScale`).

    ConvNeXt scales each block's residual branch so (the idea is CaiT's).

    Args:
        init_values: every scale's initial value (ConvNeXt: 1e-6).
        projection_dim: the number of channels, the input's last axis.

    One weight, `gamma`, of shape `(projection_dim,)`: keras.applications'
    published ConvNeXt weights load into it.
    """

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        _check_number("init_values", init_values)
        _check_positive_int("projection_dim", projection_dim)
        self.init_values = float(init_values)
        self.projection_dim = projection_dim

    def build(self, input_shape):
        self.gamma = self.add_weight(
            name="gamma",
            shape=(self.projection_dim,),
            initializer=keras.initializers.Constant(self.init_values),
            trainable=True,
        )

    def call(self, inputs):
        return inputs * self.gamma

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "init_values": self.init_values, "projection_dim": self.projection_dim}


# --------------------------------------------------------------------------


@_register
class Attention(keras.layers.Layer):
    """Scaled dot-product attention with learned Q, K, V projections.

    There is no output projection: the heads are concatenated back to
    `d_model` features.

    Args:
        d_model: size of the Q/K/V projections and of the output.
        heads: number of heads; `d_model` must be divisible by it. Each head
            has `head_dim = d_model // heads` features and scores are scaled
            by `1 / sqrt(head_dim)`.
        causal: mask keys after each query position (top-left aligned, as in
            `keras.ops.dot_product_attention(is_causal=True)`).
        dropout: dropout rate on the attention probabilities (training only).
        return_weights: also return the attention probabilities, of shape
            `(batch, heads, q_len, k_len)` (before dropout).
        use_bias: add a bias to each projection.

    Call inputs:
        - `x`: self-attention, q = k = v = x;
        - `[q, kv]`: k = v = kv;
        - `[q, k, v]`;
        - `[q, k, v, mask]`: `mask` is a boolean or 0/1 tensor broadcastable
          to `(batch, q_len, k_len)`; true/1 means "may attend". It combines
          with `causal`.

    Weights: `wq`, `wk`, `wv` of shapes `(q_dim, d_model)`,
    `(k_dim, d_model)`, `(v_dim, d_model)`, then `bq`, `bk`, `bv` when
    `use_bias`; `get_weights()` returns them in that order.

    Output: `(batch, q_len, d_model)`, or `[output, weights]` with
    `return_weights=True`.
    """

    def __init__(
        self,
        d_model,
        heads=1,
        causal=False,
        dropout=0.0,
        return_weights=False,
        use_bias=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_positive_int("d_model", d_model)
        _check_positive_int("heads", heads)
        if d_model % heads != 0:
            raise ValueError(f"Expected d_model divisible by heads, received: d_model={d_model}, heads={heads}")
        _check_bool("causal", causal)
        _check_number("dropout", dropout)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"Expected `dropout` in [0, 1), received: {dropout!r}")
        _check_bool("return_weights", return_weights)
        _check_bool("use_bias", use_bias)
        self.d_model = d_model
        self.heads = heads
        self.head_dim = d_model // heads
        self.causal = causal
        self.dropout = float(dropout)
        self.return_weights = return_weights
        self.use_bias = use_bias
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy) if self.dropout > 0 else None

    # -- inputs ------------------------------------------------------------

    @staticmethod
    def _split_inputs(inputs):
        """Return `(q, k, v, mask)` from any accepted call form."""
        if not isinstance(inputs, (list, tuple)):
            return inputs, inputs, inputs, None
        if len(inputs) == 2:
            return inputs[0], inputs[1], inputs[1], None
        if len(inputs) == 3:
            return inputs[0], inputs[1], inputs[2], None
        if len(inputs) == 4:
            return tuple(inputs)
        raise ValueError(
            "Expected `attention` inputs to be x, [q, kv], [q, k, v] or "
            f"[q, k, v, mask], received: {len(inputs)} inputs"
        )

    def _split_shapes(self, input_shape):
        """`_split_inputs` for shapes: a single shape is itself a tuple."""
        if _is_shape_list(input_shape):
            return self._split_inputs(list(input_shape))
        return input_shape, input_shape, input_shape, None

    def build(self, input_shape):
        q_shape, k_shape, v_shape, _ = self._split_shapes(input_shape)
        for role, shape in (("q", q_shape), ("k", k_shape), ("v", v_shape)):
            if len(shape) != 3 or shape[-1] is None:
                raise ValueError(
                    f"Expected `attention` input {role} to have shape "
                    f"(batch, length, features), received: {tuple(shape)}"
                )
        self.wq = self._projection("wq", q_shape[-1])
        self.wk = self._projection("wk", k_shape[-1])
        self.wv = self._projection("wv", v_shape[-1])
        if self.use_bias:
            self.bq = self._bias("bq")
            self.bk = self._bias("bk")
            self.bv = self._bias("bv")
        else:
            self.bq = self.bk = self.bv = None

    def _projection(self, name, input_dim):
        return self.add_weight(
            name=name,
            shape=(input_dim, self.d_model),
            initializer="glorot_uniform",
        )

    def _bias(self, name):
        return self.add_weight(name=name, shape=(self.d_model,), initializer="zeros")

    # -- computation -------------------------------------------------------

    def _project(self, x, kernel, bias):
        y = ops.matmul(x, kernel)
        return y if bias is None else y + bias

    def _split_heads(self, x):
        """(batch, length, d_model) -> (batch, length, heads, head_dim)."""
        shape = ops.shape(x)
        return ops.reshape(x, (shape[0], shape[1], self.heads, self.head_dim))

    def _merge_heads(self, x):
        """(batch, length, heads, head_dim) -> (batch, length, d_model)."""
        shape = ops.shape(x)
        return ops.reshape(x, (shape[0], shape[1], self.d_model))

    def call(self, inputs, training=None):
        q, k, v, mask = self._split_inputs(inputs)
        query = self._split_heads(self._project(q, self.wq, self.bq))
        key = self._split_heads(self._project(k, self.wk, self.bk))
        value = self._split_heads(self._project(v, self.wv, self.bv))
        if mask is not None:
            # (batch, q_len, k_len) -> (batch, 1, q_len, k_len): same mask
            # for every head.
            mask = ops.expand_dims(ops.cast(mask, "bool"), axis=1)

        use_dropout = self.dropout_layer is not None and bool(training)
        if self.return_weights or use_dropout:
            output, weights = self._manual_attention(query, key, value, mask, training)
        else:
            output = ops.dot_product_attention(
                query,
                key,
                value,
                mask=mask,
                scale=1.0 / math.sqrt(self.head_dim),
                is_causal=self.causal,
            )
            weights = None
        output = self._merge_heads(output)
        if self.return_weights:
            return [output, weights]
        return output

    def _manual_attention(self, query, key, value, mask, training):
        """Softmax attention that exposes the probabilities."""
        # (batch, heads, q_len, head_dim) x (batch, heads, head_dim, k_len)
        q = ops.transpose(query, (0, 2, 1, 3))
        k = ops.transpose(key, (0, 2, 3, 1))
        v = ops.transpose(value, (0, 2, 1, 3))
        scores = ops.matmul(q, k) / math.sqrt(self.head_dim)
        allowed = self._combined_mask(scores, mask)
        if allowed is not None:
            scores = ops.where(allowed, scores, _large_negative(scores.dtype))
        weights = ops.softmax(scores, axis=-1)
        dropped = weights
        if self.dropout_layer is not None:
            dropped = self.dropout_layer(weights, training=training)
        output = ops.matmul(dropped, v)  # (batch, heads, q_len, head_dim)
        return ops.transpose(output, (0, 2, 1, 3)), weights

    def _combined_mask(self, scores, mask):
        if self.causal:
            shape = ops.shape(scores)
            causal = ops.tril(ops.ones((shape[2], shape[3]), dtype="bool"))
            mask = causal if mask is None else ops.logical_and(mask, causal)
        return mask

    def compute_output_shape(self, input_shape):
        q_shape, k_shape, _, _ = self._split_shapes(input_shape)
        output_shape = tuple(q_shape[:-1]) + (self.d_model,)
        if not self.return_weights:
            return output_shape
        weights_shape = (q_shape[0], self.heads, q_shape[1], k_shape[1])
        return [output_shape, weights_shape]

    def get_config(self):
        return {
            **super().get_config(),
            "d_model": self.d_model,
            "heads": self.heads,
            "causal": self.causal,
            "dropout": self.dropout,
            "return_weights": self.return_weights,
            "use_bias": self.use_bias,
        }


def _large_negative(dtype):
    """A large negative score that stays finite in `dtype` (as Keras does)."""
    if str(dtype) in ("float16", "bfloat16"):
        return -3e4
    return -1e9


# --------------------------------------------------------------------------

_CONV_BY_RANK = {3: keras.layers.Conv1D, 4: keras.layers.Conv2D, 5: keras.layers.Conv3D}


@_register
class Residual(keras.layers.Layer):
    """A ResNet basic block (channels last).

    main path: conv(kernel_size, strides=stride, "same") - BN - ReLU -
               conv(kernel_size, "same") - BN
    skip:      identity when the input already has `filters` channels and
               stride is 1; otherwise conv(1x1, strides=stride) - BN
    output:    ReLU(main + skip)

    Convolutions have no bias (the following batch norm has one). Works on
    1D (batch, length, channels), 2D (NHWC) and 3D inputs; the convolution
    rank follows the input rank.

    Args:
        filters: output channels.
        kernel_size: odd or even positive int, the main-path kernel size.
        stride: positive int, stride of the first conv and of the projection.
    """

    def __init__(self, filters, kernel_size=3, stride=1, **kwargs):
        super().__init__(**kwargs)
        _check_positive_int("filters", filters)
        _check_positive_int("kernel_size", kernel_size)
        _check_positive_int("stride", stride)
        self.filters = filters
        self.kernel_size = kernel_size
        self.stride = stride

    def build(self, input_shape):
        rank = len(input_shape)
        if rank not in _CONV_BY_RANK or input_shape[-1] is None:
            raise ValueError(
                "Expected `residual` input of shape (batch, ..., channels) "
                "with 1 to 3 spatial axes and known channels, received: "
                f"{tuple(input_shape)}"
            )
        conv = _CONV_BY_RANK[rank]
        # Sub-layers are created here because the skip depends on the input
        # channels; attribute assignment makes Keras track and save them.
        # They take this layer's dtype policy (not the global one, which may
        # differ when a mixed-precision model is loaded).
        policy = self.dtype_policy
        self.conv1 = conv(
            self.filters,
            self.kernel_size,
            strides=self.stride,
            padding="same",
            use_bias=False,
            name="conv1",
            dtype=policy,
        )
        self.bn1 = keras.layers.BatchNormalization(name="bn1", dtype=policy)
        self.conv2 = conv(
            self.filters,
            self.kernel_size,
            padding="same",
            use_bias=False,
            name="conv2",
            dtype=policy,
        )
        self.bn2 = keras.layers.BatchNormalization(name="bn2", dtype=policy)
        if self._needs_projection(input_shape):
            self.proj_conv = conv(
                self.filters,
                1,
                strides=self.stride,
                use_bias=False,
                name="proj_conv",
                dtype=policy,
            )
            self.proj_bn = keras.layers.BatchNormalization(name="proj_bn", dtype=policy)
        else:
            self.proj_conv = self.proj_bn = None
        self._build_sublayers(tuple(input_shape))

    def _needs_projection(self, input_shape):
        return input_shape[-1] != self.filters or self.stride != 1

    def _build_sublayers(self, input_shape):
        # Build eagerly so the weights exist (and can be loaded) right away.
        shape = input_shape
        for layer in (self.conv1, self.bn1, self.conv2, self.bn2):
            layer.build(shape)
            shape = layer.compute_output_shape(shape)
        if self.proj_conv is not None:
            self.proj_conv.build(input_shape)
            self.proj_bn.build(self.proj_conv.compute_output_shape(input_shape))

    def call(self, inputs, training=None):
        x = self.conv1(inputs)
        x = ops.relu(self.bn1(x, training=training))
        x = self.bn2(self.conv2(x), training=training)
        skip = inputs
        if self.proj_conv is not None:
            skip = self.proj_bn(self.proj_conv(inputs), training=training)
        return ops.relu(x + skip)

    def compute_output_shape(self, input_shape):
        spatial = [None if size is None else -(-size // self.stride) for size in input_shape[1:-1]]
        return (input_shape[0], *spatial, self.filters)

    def get_config(self):
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "stride": self.stride,
        }


LAYERS = {
    "linear": Linear,
    "scale": Scale,
    "scaled_sigmoid": ScaledSigmoid,
    "layer_scale": LayerScale,
    "attention": Attention,
    "residual": Residual,
}
