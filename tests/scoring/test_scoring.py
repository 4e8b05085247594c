"""The NumPy loss and metrics `evaluate` scores an exported file with equal Keras' own `evaluate`.

Each case is a train section; its scorer (scoring/) and a Keras model that passes
the same predictions through, compiled as the compiler compiles that train section, see
the same 37 samples in batches of 16 (16, 16 and a last 5): same names, same order, values
within 1e-6 (relative).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest

import netdsl
from netdsl import registry, scoring
from netdsl.semantics.analysis import checked_graphs
from netdsl.syntax.loader import pick_model
from netdsl.training.run.report import loss_first

N, BATCH, CLASSES = 37, 16, 4
RTOL = 1e-6


def arrays(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(targets, predictions) of one kind of output."""
    logits = rng.standard_normal((N, CLASSES)).astype("float32") * 2
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    labels = rng.integers(0, CLASSES, N)
    if kind == "sparse":
        return labels, probs.astype("float32")
    if kind == "sparse_logits":
        return labels, logits
    if kind == "onehot":
        return np.eye(CLASSES, dtype="float32")[labels], probs.astype("float32")
    if kind == "onehot_logits":
        return np.eye(CLASSES, dtype="float32")[labels], logits
    if kind == "soft":  # a distribution as target
        other = rng.random((N, CLASSES)).astype("float32")
        return other / other.sum(-1, keepdims=True), probs.astype("float32")
    if kind == "binary":
        p = 1 / (1 + np.exp(-logits[:, :1]))
        p[0, 0] = 1.0  # a saturated probability: clipped where Keras clips it
        return rng.integers(0, 2, (N, 1)).astype("float32"), p.astype("float32")
    if kind == "binary_logits":
        return rng.integers(0, 2, (N, 1)).astype("float32"), logits[:, :1]
    if kind == "multilabel":
        return rng.integers(0, 2, (N, CLASSES)).astype("float32"), (1 / (1 + np.exp(-logits))).astype("float32")
    if kind == "embeddings":  # circle: L2-normalized embeddings and their classes
        unit = logits / np.linalg.norm(logits, axis=-1, keepdims=True)
        return rng.integers(0, 3, N), unit.astype("float32")
    if kind == "sequence":  # ctc: labels padded with the blank (0), logits per frame
        labels = rng.integers(1, CLASSES, (N, 3))
        labels[::3, 2] = 0
        labels[::5, 1:] = 0
        return labels, rng.standard_normal((N, 6, CLASSES)).astype("float32")
    if kind == "regression":
        return rng.random((N, 3)).astype("float32") * 3, (rng.random((N, 3)) * 3).astype("float32")
    raise AssertionError(kind)


# (loss, metrics, kind): every loss and metric NumPy computes, with arguments that change them
CASES = [
    ("binary_crossentropy", "[binary_accuracy(threshold=0.3), accuracy]", "binary"),
    (
        "binary_crossentropy(from_logits=true, label_smoothing=0.1)",
        "[binary_crossentropy(from_logits=true)]",
        "binary_logits",
    ),
    (
        "binary_focal_crossentropy(apply_class_balancing=true, gamma=3.0)",
        "[true_positives, false_positives, true_negatives, false_negatives]",
        "binary",
    ),
    ("binary_focal_crossentropy(from_logits=true, label_smoothing=0.2)", "[hinge, squared_hinge]", "binary_logits"),
    ("binary_crossentropy", "[precision, recall, true_positives(thresholds=0.3), precision(thresholds=0.7)]", "binary"),
    ("categorical_crossentropy", "[accuracy, categorical_accuracy, top_k_categorical_accuracy(k=2)]", "onehot"),
    (
        "categorical_crossentropy(from_logits=true, label_smoothing=0.2)",
        "[categorical_crossentropy(from_logits=true, label_smoothing=0.1)]",
        "onehot_logits",
    ),
    ("categorical_focal_crossentropy(alpha=0.5, gamma=1.5)", "[categorical_hinge, kl_divergence]", "onehot"),
    (
        "categorical_focal_crossentropy(from_logits=true, label_smoothing=0.1)",
        "[categorical_accuracy]",
        "onehot_logits",
    ),
    ("categorical_generalized_cross_entropy(q=0.7)", "[sparse_top_k_categorical_accuracy(k=2)]", "sparse"),
    ("categorical_hinge", "[precision(top_k=2), recall(class_id=1)]", "multilabel"),
    (
        "sparse_categorical_crossentropy",
        "[accuracy, sparse_categorical_accuracy, sparse_categorical_crossentropy]",
        "sparse",
    ),
    (
        "sparse_categorical_crossentropy(from_logits=true)",
        "[sparse_categorical_crossentropy(from_logits=true), sparse_top_k_categorical_accuracy(k=1)]",
        "sparse_logits",
    ),
    ("sparse_categorical_crossentropy(ignore_class=0)", "[sparse_categorical_crossentropy(ignore_class=0)]", "sparse"),
    ("kl_divergence", "[kl_divergence, cosine_similarity]", "soft"),
    ("dice", "[binary_accuracy]", "multilabel"),
    ("dice(axis=-1)", "[accuracy]", "multilabel"),
    ("tversky(alpha=0.3, beta=0.7)", "[binary_crossentropy(label_smoothing=0.1)]", "multilabel"),
    ("tversky(axis=-1)", "[recall(thresholds=0.4)]", "multilabel"),
    ("hinge", "[hinge]", "multilabel"),
    ("squared_hinge", "[squared_hinge]", "multilabel"),
    ("mean_squared_error", "[mse, mae, mape, msle, root_mean_squared_error]", "regression"),
    ("mean_absolute_error", "[mean_squared_error, mean_absolute_error, mean_absolute_percentage_error]", "regression"),
    ("mean_absolute_percentage_error", "[mean_squared_logarithmic_error, log_cosh_error]", "regression"),
    ("mean_squared_logarithmic_error", "[poisson, cosine_similarity(axis=-1)]", "regression"),
    ("huber(delta=0.5)", '[log_cosh_error(name="lc")]', "regression"),
    ("log_cosh", "[mae, mae]", "regression"),  # the same name twice: Keras calls the second mae_1
    ("poisson", "[poisson]", "regression"),
    ("cosine_similarity(axis=-1)", "[cosine_similarity]", "regression"),
    ('mean_squared_error(reduction="sum")', "[mse]", "regression"),
    ('mean_squared_error(reduction="mean_with_sample_weight")', "[mse]", "regression"),
    ('mean_squared_error(reduction="none")', "[mse]", "regression"),
    ('sparse_categorical_crossentropy(ignore_class=1, reduction="sum")', "[acc]", "sparse"),
    # metrics with a state of their own
    ("binary_crossentropy", '[auc, auc(curve="PR"), auc(num_thresholds=50, summation_method="minoring")]', "binary"),
    (
        "binary_crossentropy",
        '[auc(curve="PR", summation_method="majoring"), auc(thresholds=[0.2, 0.5, 0.9])]',
        "binary",
    ),
    ("binary_crossentropy(from_logits=true)", "[auc(from_logits=true)]", "binary_logits"),
    (
        "binary_crossentropy",
        "[precision_at_recall(0.5), recall_at_precision(0.6), "
        "sensitivity_at_specificity(0.5, num_thresholds=1), specificity_at_sensitivity(0.4, num_thresholds=20)]",
        "binary",
    ),
    (
        "binary_crossentropy",
        "[precision_at_recall(0.5, class_id=2), recall_at_precision(0.3, class_id=1)]",
        "multilabel",
    ),
    (
        "sparse_categorical_crossentropy",
        "[iou(num_classes=4, target_class_ids=[0, 2], sparse_y_pred=false), "
        "mean_iou(num_classes=4, sparse_y_pred=false, ignore_class=3)]",
        "sparse",
    ),
    (
        "categorical_crossentropy",
        "[one_hot_iou(num_classes=4, target_class_ids=[1]), one_hot_mean_iou(num_classes=4)]",
        "onehot",
    ),
    ("binary_crossentropy", "[binary_iou, binary_iou(target_class_ids=[1], threshold=0.3)]", "multilabel"),
    (
        "categorical_crossentropy",
        '[f1_score(average="macro"), fbeta_score(average="weighted", beta=2.0), '
        'f1_score(average="micro", threshold=0.3)]',
        "onehot",
    ),
    ("mean_squared_error", '[r2_score, r2_score(class_aggregation="variance_weighted_average")]', "regression"),
    # netdsl's AdjustedR2Score (compiled: Keras' own R2Score fails there); 200 regressors: the plain score
    ("mean_squared_error", '[r2_score(num_regressors=2), r2_score(num_regressors=200, name="plain")]', "regression"),
    # one value per class: a list
    ("categorical_crossentropy", "[f1_score, fbeta_score(beta=2.0, threshold=0.3)]", "onehot"),
    (
        "mean_squared_error",
        '[r2_score(class_aggregation=none), r2_score(class_aggregation=none, num_regressors=2, name="adjusted")]',
        "regression",
    ),  # one R2 per output column (Keras' class_aggregation=None)
    ("mean_squared_error", "[pearson_correlation, concordance_correlation]", "regression"),
    ("circle", "[]", "embeddings"),
    ("circle(gamma=10.0, margin=0.25, remove_diagonal=false)", "[]", "embeddings"),
    ("ctc", "[]", "sequence"),
]


def one_output_spec(loss: str, metrics: str, shape: tuple[int, ...]) -> str:
    return (
        f"model m {{\n  input x: {shape}\n  output y = x -> dense({shape[-1]})\n"
        f"  train {{\n    optimizer = adam\n    loss = {loss}\n    metrics = {metrics}\n  }}\n}}\n"
    )


def keras_evaluate(
    program, predictions: dict[str, np.ndarray], targets: dict[str, np.ndarray], eagerly: bool = False
) -> dict[str, float]:
    """Keras' `evaluate` of a model that passes `predictions` through, compiled as the spec says.

    `eagerly` spares tracing a graph (1.3 s a model, for 50 one-output models) where Keras' eager
    `evaluate` equals its traced one; for several outputs it does not (Keras 3.15.1's eager per-output
    losses: box_loss 0.2668 eager, 0.2529 traced, as NumPy scores it), so those are traced."""
    import keras

    keras.utils.clear_session()  # Keras names a metric given no name `precision_1` after another `precision`
    built = netdsl.build(program)
    names = list(built.output_names)
    inputs = [keras.Input(shape=predictions[n].shape[1:], name=f"{n}__in") for n in names]
    outputs = [keras.layers.Identity(name=n)(x) for n, x in zip(names, inputs)]
    model = keras.Model(inputs, outputs if len(outputs) > 1 else outputs[0])
    # The objects the compiler made: a compile config would lose huber's delta (Keras' Huber.get_config
    # leaves it out, so a reloaded .keras file scores huber(delta=0.5) with delta 1.0)
    given = built._compile_config.config
    model.compile(loss=given["loss"], metrics=given["metrics"], loss_weights=given["loss_weights"], run_eagerly=eagerly)
    logs = model.evaluate(
        [predictions[n] for n in names], [targets[n] for n in names], batch_size=BATCH, return_dict=True, verbose=0
    )
    return {key: np.asarray(logs[key], dtype=np.float64).tolist() for key in loss_first(list(logs))}  # a list per class


def numpy_evaluate(program, predictions: dict[str, np.ndarray], targets: dict[str, np.ndarray]) -> dict[str, float]:
    name = pick_model(program, None)
    graph = checked_graphs(program, [name])[name]
    assert scoring.not_in_numpy(graph.train, graph.output_names) is None
    scorer = scoring.Scorer.of(graph.train, graph.output_names)
    for start in range(0, N, BATCH):
        scorer.update(
            {n: a[start : start + BATCH] for n, a in targets.items()},
            {n: a[start : start + BATCH] for n, a in predictions.items()},
        )
    logs = scorer.result()
    return {key: logs[key] for key in loss_first(list(logs))}


def assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)  # the same names, in the same order
    for key, value in want.items():
        assert isinstance(got[key], list) == isinstance(value, list), key  # one value per class: a list
        np.testing.assert_allclose(got[key], value, rtol=RTOL, atol=1e-7, err_msg=key)


@pytest.mark.parametrize(("loss", "metrics", "kind"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_numpy_equals_keras_evaluate_on_one_output(loss, metrics, kind):
    targets, predictions = arrays(kind, np.random.default_rng(len(loss) + len(metrics)))
    program = netdsl.parse(one_output_spec(loss, metrics, predictions.shape[1:]))
    got = numpy_evaluate(program, {"y": predictions}, {"y": targets})
    assert_same(got, keras_evaluate(program, {"y": predictions}, {"y": targets}, eagerly=True))


TWO_OUTPUTS = """
model two {
  input x: (4,)
  output probs = x -> dense(4, activation=softmax)
  output box = x -> dense(3)
  output tags = x -> dense(4, activation=sigmoid)
  train {
    optimizer = adam
    loss = {probs: sparse_categorical_crossentropy, box: huber(delta=0.3), tags: binary_crossentropy}
    loss_weights = {probs: 1.0, box: 5.0, tags: 0.5}
    metrics = {probs: [accuracy, sparse_top_k_categorical_accuracy(k=2)], box: [mae, root_mean_squared_error],
               tags: [accuracy, precision, recall(thresholds=0.3)]}
  }
}
"""


def test_adjusted_r2_equals_keras_own_r2score_run_eagerly():
    """netdsl's AdjustedR2Score (what a spec's r2_score(num_regressors=N) compiles to) equals Keras' own
    R2Score, which runs only eagerly; so does the NumPy scorer."""
    import keras

    from netdsl.custom.metrics import AdjustedR2Score

    targets, predictions = arrays("regression", np.random.default_rng(9))
    program = netdsl.parse(one_output_spec("mse", "[r2_score(num_regressors=2)]", (3,)))
    got = numpy_evaluate(program, {"y": predictions}, {"y": targets})
    for regressors in (2, 200):  # 200: more than the samples, Keras falls back to the plain score (warning)
        keras_own, netdsl_own = (
            keras.metrics.R2Score(num_regressors=regressors),
            AdjustedR2Score(num_regressors=regressors),
        )
        for start in range(0, N, BATCH):
            for metric in (keras_own, netdsl_own):
                metric.update_state(targets[start : start + BATCH], predictions[start : start + BATCH])
        with pytest.warns(UserWarning) if regressors == 200 else contextlib.nullcontext():
            want = float(keras_own.result())
        np.testing.assert_allclose(float(netdsl_own.result()), want, rtol=RTOL)
        if regressors == 2:
            np.testing.assert_allclose(got["r2_score"], want, rtol=RTOL)


WEIGHTS = "    loss_weights = {probs: 1.0, box: 5.0, tags: 0.5}\n"
LOSSES = "{probs: sparse_categorical_crossentropy, box: huber(delta=0.3), tags: binary_crossentropy}"


@pytest.mark.parametrize("variant", ["weighted", "unweighted", "an output without a loss"])
def test_numpy_equals_keras_evaluate_on_several_outputs(variant):
    rng = np.random.default_rng(3)
    spec = TWO_OUTPUTS if variant == "weighted" else TWO_OUTPUTS.replace(WEIGHTS, "")
    if variant == "an output without a loss":
        spec = spec.replace(LOSSES, "{probs: sparse_categorical_crossentropy, tags: binary_crossentropy}")
    program = netdsl.parse(spec)
    targets, predictions = {}, {}
    for name, kind in (("probs", "sparse"), ("box", "regression"), ("tags", "multilabel")):
        targets[name], predictions[name] = arrays(kind, rng)
    got = numpy_evaluate(program, predictions, targets)
    want = keras_evaluate(program, predictions, targets)
    box = ["box_loss"] if variant != "an output without a loss" else []
    assert list(want)[:4] == ["loss", *box, "box_mae", "box_root_mean_squared_error", "probs_accuracy"][:4]
    assert_same(got, want)


def test_every_registry_loss_and_metric_is_in_numpy_or_says_why_not():
    """A loss or metric added to the registry needs its NumPy twin here, or a reason in NOT_IN_NUMPY
    (evaluate then scores an exported file with Keras)."""
    missing = [
        (kind, name)
        for kind in ("loss", "metric")
        for name in registry.names(kind)
        if not scoring.in_numpy(kind, name) and (kind, name) not in scoring.NOT_IN_NUMPY
    ]
    assert missing == []
    stale = [key for key in scoring.NOT_IN_NUMPY if scoring.in_numpy(*key) or key[1] not in registry.names(key[0])]
    assert stale == []


def test_every_numpy_loss_and_metric_is_compared_with_keras():
    written = " ".join(f"{loss} {metrics}" for loss, metrics, _ in CASES)
    for kind in ("loss", "metric"):
        for name in registry.names(kind):
            if scoring.in_numpy(kind, name):
                entry = registry.lookup(kind, name)
                spellings = {name, *entry.aliases}
                assert any(
                    s in written.replace("(", " ").replace(",", " ").replace("[", " ").replace("]", " ").split()
                    for s in spellings
                ), (kind, name)


@pytest.mark.parametrize(
    ("loss", "metrics", "reason"),
    [
        ("mse", "[auc(multi_label=true)]", "the metric 'auc(multi_label=true)' (multi_label and label_weights)"),
        (
            "mse",
            "[precision(thresholds=[0.3, 0.6])]",
            "the metric 'precision(thresholds=[0.3, 0.6])' (several thresholds)",
        ),
    ],
)
def test_a_train_section_numpy_does_not_score_says_which(loss, metrics, reason):
    program = netdsl.parse(one_output_spec(loss, metrics, (4,)))
    graph = checked_graphs(program, ["m"])["m"]
    assert scoring.not_in_numpy(graph.train, graph.output_names) == reason


DECLARED = """
loss contrastive(y_true, y_pred, margin=1) = mean(
  (1 - y_true) * square(y_pred) + y_true * square(maximum(margin - y_pred, 0)),
)
loss everything(t, p, scale=0.5) = sum(scale * abs(log1p(exp(p)) - sqrt(t + 1)) ** 2 / 3 + tanh(-p), axis=-1)
metric gap(y_true, y_pred) = mean(minimum(relu(y_true - y_pred), clip(sigmoid(y_pred), 0.1, 0.9)), axis=-1)

model two {
  input x: (4,)
  output same = x -> dense(1, activation=sigmoid)
  output box = x -> dense(3)
  train {
    optimizer = adam
    loss = {same: contrastive(margin=2), box: everything}
    metrics = {same: [gap, contrastive], box: [gap, everything(scale=2)]}
  }
}
"""


def test_declared_losses_and_metrics_in_numpy_equal_keras_evaluate():
    rng = np.random.default_rng(30)
    targets = {"same": (rng.random((N, 1)) > 0.5).astype("float32"), "box": rng.random((N, 3)).astype("float32")}
    predictions = {"same": rng.random((N, 1)).astype("float32"), "box": rng.normal(size=(N, 3)).astype("float32")}
    program = netdsl.parse(DECLARED)
    got = numpy_evaluate(program, predictions, targets)
    assert_same(got, keras_evaluate(program, predictions, targets))
    assert sorted(got) == ["box_everything", "box_gap", "box_loss", "loss", "same_contrastive", "same_gap", "same_loss"]


def test_a_declared_loss_calling_a_function_numpy_does_not_have_here_is_scored_by_keras():
    text = "loss soft(y_true, y_pred) = mean(softmax(y_pred) - y_true, axis=-1)\n" + one_output_spec("soft", "[]", (4,))
    graph = checked_graphs(netdsl.parse(text), ["m"])["m"]
    assert scoring.not_in_numpy(graph.train, graph.output_names) == (
        "the loss 'soft' (declared in the spec, it calls 'softmax', which NumPy does not here)"
    )
