"""The train section: a model with `train { ... }` comes back compiled and ready to fit."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import netdsl
from tests.support.reference_examples import examples

RNG = np.random.default_rng(3)


def build(text: str, model: str | None = None) -> keras.Model:
    return netdsl.build(netdsl.parse(text, filename="spec.net"), model=model)


def classifier_code() -> str:
    (code,) = [code for _, _, code in examples() if "model classifier" in code]
    return code


@pytest.fixture(autouse=True)
def _policy_unchanged():
    before = keras.config.dtype_policy().name
    yield
    assert keras.config.dtype_policy().name == before


def test_reference_classifier_is_compiled_and_fits():
    model = build(classifier_code())
    assert model.compiled
    optimizer = model.optimizer
    assert isinstance(optimizer, keras.optimizers.Adam)
    assert optimizer.clipvalue == 1.0
    assert float(optimizer.learning_rate) == pytest.approx(1e-3)
    assert isinstance(model.loss, keras.losses.SparseCategoricalCrossentropy)

    fit = netdsl.fit_kwargs(model)
    (stop,) = fit.pop("callbacks")
    assert isinstance(stop, keras.callbacks.EarlyStopping) and (stop.monitor, stop.patience) == ("val_loss", 3)
    assert fit == {"batch_size": 64, "epochs": 10, "validation_split": 0.1}
    assert netdsl.fit_kwargs(model)["callbacks"][0] is not stop  # fresh callbacks on every call

    x = RNG.standard_normal((96, 784)).astype("float32")
    y = RNG.integers(0, 10, 96)
    history = model.fit(x, y, **{**netdsl.fit_kwargs(model), "epochs": 1, "verbose": 0})
    assert set(history.history) >= {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert np.isfinite(history.history["loss"][0])


def test_model_without_train_section_is_not_compiled():
    model = build("model m {\n  input x: (3,)\n  output y = x -> dense(1)\n}\n")
    assert not model.compiled
    assert netdsl.fit_kwargs(model) == {}


MULTI = """
model two_heads {
  input x: (6,)
  h = x -> dense(8, activation=relu)
  output probs = h -> dense(3, activation=softmax)
  output box = h -> dense(4)
  train {
    optimizer = sgd(learning_rate=0.05, global_clipnorm=2.0)
    loss = {box: mse, probs: sparse_categorical_crossentropy}
    loss_weights = {box: 5.0, probs: 1.0}
    metrics = {probs: [accuracy], box: [mae]}
    jit_compile = false
    steps_per_execution = 2
  }
}
"""


def test_losses_metrics_and_weights_follow_the_output_names():
    model = build(MULTI)
    assert model.output_names == ["probs", "box"]
    probs_loss, box_loss = model.loss
    assert isinstance(probs_loss, keras.losses.SparseCategoricalCrossentropy)
    assert isinstance(box_loss, keras.losses.MeanSquaredError)
    assert model._compile_config.config["loss_weights"] == [1.0, 5.0]
    assert model.optimizer.global_clipnorm == 2.0
    assert model.jit_compile is False and model.steps_per_execution == 2

    x = RNG.standard_normal((8, 6)).astype("float32")
    labels, boxes = RNG.integers(0, 3, 8), RNG.standard_normal((8, 4)).astype("float32")
    logs = model.evaluate(x, {"box": boxes, "probs": labels}, verbose=0, return_dict=True)
    assert {"probs_accuracy", "box_mae"} <= set(logs)  # metrics named as written in the spec
    probs, box = model.predict(x, verbose=0)
    expected = keras.losses.SparseCategoricalCrossentropy()(labels, probs) + 5.0 * keras.losses.MeanSquaredError()(
        boxes, box
    )
    assert logs["loss"] == pytest.approx(float(expected), rel=1e-4)
    model.fit(x, [labels, boxes], epochs=1, verbose=0)


def test_one_loss_for_every_output():
    model = build("""model m {
  input x: (4,)
  output a = x -> dense(2)
  output b = x -> dense(3)
  train {
    loss = mse
    metrics = [mae]
  }
}
""")
    a, b = model.loss
    assert isinstance(a, keras.losses.MeanSquaredError) and isinstance(b, keras.losses.MeanSquaredError)
    assert a is not b
    assert isinstance(model.optimizer, keras.optimizers.RMSprop)  # Keras' default


def test_learning_rate_schedule():
    model = build("""model m {
  input x: (4,)
  output y = x -> dense(1)
  train {
    optimizer = adam(learning_rate=cosine_decay(1e-3, decay_steps=1000), clipnorm=1.0)
    loss = mse
  }
}
""")
    schedule = model.optimizer._learning_rate
    assert isinstance(schedule, keras.optimizers.schedules.CosineDecay)
    assert (schedule.initial_learning_rate, schedule.decay_steps) == (1e-3, 1000)
    assert model.optimizer.clipnorm == 1.0


MIXED = """
model mixed {
  input x: (8,)
  h = x -> dense(16, activation=relu)
  output probs = h -> dense(4, activation=softmax)
  output raw = h
  train {
    optimizer = adam
    loss = {probs: sparse_categorical_crossentropy}
    mixed_precision = "mixed_float16"
  }
}
"""


def test_mixed_precision_applies_to_that_model_only_with_float32_outputs():
    model = build(MIXED)
    assert keras.config.dtype_policy().name == "float32"
    assert model.get_layer("h").dtype_policy.name == "mixed_float16"
    assert model.get_layer("probs").dtype_policy.name == "float32"  # an output layer computes in float32
    cast = model.get_layer("raw")  # `raw` is h's tensor: a float32 cast named after the output
    assert isinstance(cast, keras.layers.Activation) and cast.dtype_policy.name == "float32"
    assert [t.dtype for t in model.outputs] == ["float32", "float32"]
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    x = RNG.standard_normal((16, 8)).astype("float32")
    model.fit(x, [RNG.integers(0, 4, 16), np.zeros((16, 16), "float32")], epochs=1, verbose=0)

    plain = build("model p {\n  input x: (8,)\n  output y = x -> dense(2)\n}\n")
    assert plain.get_layer("y").dtype_policy.name == "float32"


def test_mixed_precision_as_true_means_mixed_float16():
    model = build(MIXED.replace('"mixed_float16"', "true"))
    assert model.get_layer("h").dtype_policy.name == "mixed_float16"


def test_optimizer_arguments_keras_refuses_together_are_a_diagnostic():
    with pytest.raises(netdsl.SpecError) as info:
        build("""model m {
  input x: (4,)
  output y = x -> dense(1)
  train {
    optimizer = adam(learning_rate=-1.0, beta_1=2.0, clipnorm=1.0, clipvalue=1.0)
    loss = mse
  }
}
""")
    (d,) = info.value.diagnostics  # clipnorm with clipvalue: refused by check itself (semantics/arg_rules.py)
    assert (d.line, d.col) == (5, 68)  # at clipvalue=
    assert d.message == "'adam' takes one of clipnorm, clipvalue, global_clipnorm; received clipnorm and clipvalue"
