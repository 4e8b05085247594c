"""The loss and metrics of a spec's train section in NumPy, summed up over batches as Keras' `evaluate` does.

    if not_in_numpy(graph.train, graph.output_names) is None:   # else: Keras scores it
        scorer = Scorer.of(graph.train, graph.output_names)
        for y_true, y_pred in batches:                      # {output: array}, one batch each
            scorer.update(y_true, y_pred)
        scorer.result()   # {"loss": ..., "probs_loss": ..., "probs_sparse_categorical_accuracy": ...}

What an exported file is scored with, so that `netdsl evaluate model.onnx` imports no
Keras. Each function is Keras 3's own (`keras/src/losses/losses.py`,
`keras/src/backend/tensorflow/nn.py`, `keras/src/metrics/`), computed in float64 on
the runtime's float32 outputs, with Keras' float32 clipping bounds (so a saturated
probability is clipped where Keras clips it). The aggregation is Keras' too:

- `loss`: the batch's reduced loss (the sum of the outputs' losses times their
  `loss_weights`), tracked as a mean weighted by the batch's size;
- each `OUTPUT_loss` (several outputs): the mean of the batches' losses, unweighted
  (Keras weighs them by a batch size its TensorFlow graph does not know);
- a mean metric (accuracy, mae, ...): the sum of its per-sample values over every
  sample, over the number of samples (an ignore_class sample counts, as 0: Keras' metric
  does not read the loss function's mask);
- a counting metric (true_positives, precision, recall, AUC, the IoUs, F1, R2): its counts
  or sums over every sample, the value computed from them at the end.

Where each piece lives:

- `common.py`: Keras' float32 bounds and small helpers, shared; the `Metric` base;
- `losses.py`: each loss per sample, and `Loss`, an output's loss reduced per batch;
- `metrics.py`: the mean metrics, Keras' metric names, `make_metric`;
- `counting.py`: the counting metrics (counts, curves and thresholds, IoU, F-beta, R2);
- `declared.py`: the losses and metrics declared in a spec, their trees evaluated with NumPy;
- `scorer.py`: `Scorer`, a train section over batches; `not_in_numpy`.

Adding a loss: its per-sample function in `losses.py` and a line in `LOSS_FUNCTIONS`; a mean
metric: a line in `metrics.MEAN_METRICS`. `tests/scoring/test_scoring.py` compares each
with Keras.

The names are Keras': a metric is named by its `name=` argument, else the spelling the
spec wrote (`mae`), else its class's name; several outputs prefix it with the output's
name (`probs_accuracy`); the keys come sorted, as Keras hands them over.

Every loss and metric of the registry is here (a test keeps it so: one added to the
registry goes here or into `NOT_IN_NUMPY` with why). `not_in_numpy` names what is not:
a plugin's loss or metric, a declared one calling a function `declared.py` does not evaluate,
`auc(multi_label=true)` or `label_weights`, a counting metric
given several thresholds; evaluate then scores with Keras. A metric of one value per class
(f1_score or fbeta_score without `average`) gives a list, one value per class.
"""

from __future__ import annotations

from netdsl.scoring.keras_math import Metric, ScoringError
from netdsl.scoring.losses import LOSS_FUNCTIONS, Loss, reduce_loss
from netdsl.scoring.mean_metrics import MEAN_METRICS, in_numpy, make_metric, metric_name
from netdsl.scoring.scorer import NOT_IN_NUMPY, Scorer, not_in_numpy

__all__ = [
    "LOSS_FUNCTIONS",
    "MEAN_METRICS",
    "NOT_IN_NUMPY",
    "Loss",
    "Metric",
    "Scorer",
    "ScoringError",
    "in_numpy",
    "make_metric",
    "metric_name",
    "not_in_numpy",
    "reduce_loss",
]
