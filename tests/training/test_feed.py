"""What Keras is fed on each backend (training/data/feed.py).

On JAX and torch netdsl feeds its own batches (`RowBatches`, `PipelineBatches`)
instead of a tf.data pipeline: the batches must be the very ones the pipeline
gives on TensorFlow, epoch by epoch (so a run's curve does not depend on how it
is fed), and a run on those backends must keep what runs on TensorFlow keep:
the hand-written `fit`'s weights bit for bit, and a resumed shuffled run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.training.data.feed import PipelineBatches, RowBatches, feed
from netdsl.training.data.signature import Signature
from netdsl.training.data.source import open_source
from netdsl.training.data.tf_data import EpochOrder

ROOT = Path(__file__).resolve().parents[2]

TWO_IN_TWO_OUT = """\
model pair {
  input a: (3,)
  input b: (2,)
  h = concat(a -> dense(4), b -> dense(4))
  output probs = h -> dense(3, activation=softmax)
  output box = h -> dense(2)
}
"""


def _source(with_targets: bool = True):
    model = netdsl.build(text=TWO_IN_TWO_OUT)
    rng = np.random.default_rng(3)
    arrays = {
        "a": rng.random((23, 3), dtype=np.float32),
        "b": rng.random((23, 2), dtype=np.float32),
        "probs": rng.integers(0, 3, 23),
        "box": rng.random((23, 2), dtype=np.float32),
    }
    return open_source(arrays, Signature.of(model), need_targets=with_targets)


def _flat(structure) -> list[np.ndarray]:
    if isinstance(structure, (tuple, list)):
        return [array for item in structure for array in _flat(item)]
    return [np.asarray(structure)]


def _epochs(batches, order: EpochOrder | None, epochs: int = 3) -> list[list[list[np.ndarray]]]:
    """Every batch of `epochs` epochs, as Keras reads a PyDataset or a tf.data pipeline."""
    seen = []
    for epoch in range(epochs):
        if order is not None:
            order.epoch = epoch
        if isinstance(batches, RowBatches | PipelineBatches):
            seen.append([_flat(batches[i]) for i in range(batches.num_batches)])
            batches.on_epoch_end()
        else:
            seen.append([_flat(batch) for batch in batches.as_numpy_iterator()])
    return seen


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y)
        and all(len(u) == len(v) and all(np.array_equal(p, q) for p, q in zip(u, v)) for u, v in zip(x, y))
        for x, y in zip(a, b)
    )


@pytest.mark.parametrize("shuffled", [False, True], ids=["in-order", "shuffled"])
def test_row_batches_are_the_pipelines_batches_epoch_by_epoch(shuffled: bool) -> None:
    source = _source()
    rows = np.array([0, 2, 3, 5, 7, 8, 11, 12, 13, 17, 19, 20, 22])  # a split's rows: sorted, with gaps
    order, its_order = (EpochOrder(9), EpochOrder(9)) if shuffled else (None, None)
    pipeline = _epochs(source.dataset(rows, 4, its_order), its_order)
    own = _epochs(RowBatches(source, rows, 4, order, True), order)
    assert _same(own, pipeline)
    assert [len(epoch) for epoch in own] == [4, 4, 4]  # 13 rows in batches of 4: the last one has 1
    if shuffled:
        assert not _same(own[:1], own[1:2])  # the epochs differ: the order is the epoch's


def test_prediction_batches_hold_the_inputs_alone() -> None:
    source = _source(with_targets=False)
    rows = np.arange(23)
    batch = RowBatches(source, rows, 8, None, False)[2]
    assert len(batch) == 1 and len(batch[0]) == 2  # (x,) with x = (a, b): never read as (x, y)
    assert [a.shape for a in batch[0]] == [(7, 3), (7, 2)]


def test_pipeline_batches_read_in_order_and_let_the_iterator_go_at_the_epochs_end() -> None:
    source = _source()
    rows = np.arange(23)
    order, its_order = EpochOrder(4), EpochOrder(4)
    own = PipelineBatches(source.dataset(rows, 5, order), 23, 5, True)
    assert _same(_epochs(own, order), _epochs(source.dataset(rows, 5, its_order), its_order))
    own[0]
    assert own._iterator is not None
    own.on_epoch_end()
    assert own._iterator is None  # nothing of TensorFlow's runs between epochs
    own[0]
    with pytest.raises(RuntimeError, match="batch 3 asked for after batch 0"):
        own[3]


def test_on_tensorflow_the_feed_is_the_pipeline() -> None:
    import tensorflow as tf

    assert isinstance(feed(_source(), np.arange(23), 4), tf.data.Dataset)


IMAGES = """\
model images {
  input x: (8, 8, 3)
  output probs = x -> rescaling(1.0 / 255) -> flatten -> dropout(0.2) -> dense(2, activation=softmax)
  train {
    optimizer = sgd(learning_rate=0.1)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    batch_size = 4
    epochs = 2
  }
}
"""

# Run in a fresh process per backend (Keras picks its backend once per process).
PROBE = r"""
import json, sys
import keras, numpy as np, netdsl
spec, runs = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(11)
x, y = rng.random((60, 6, 6)).astype("float32"), rng.integers(0, 4, 60)
same = lambda a, b: all(np.array_equal(u, v) for u, v in zip(a.get_weights(), b.get_weights()))
out = {}
# the hand-written fit, same settings: bit for bit, every epoch's logs too
run = netdsl.train(spec, train=(x, y), seed=21, out=runs)
keras.utils.set_random_seed(21)
model = netdsl.build(spec)
history = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
out["fit_weights"] = same(run.model, model)
out["fit_history"] = run.history == history.history
from netdsl.training.data.feed import feed
from netdsl.training.data.signature import Signature
from netdsl.training.data.source import open_source
out["feed"] = type(feed(open_source((x, y), Signature.of(model)), np.arange(60), 8)).__name__
# shuffled, dropout, stopped after epoch 2 and resumed: the uninterrupted run's weights
noisy = spec.replace("plain.net", "noisy.net")
whole = netdsl.train(noisy, train=(x, y), seed=8, out=runs, epochs=4)
class Crash(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            raise RuntimeError("power cut")
try:
    netdsl.train(noisy, train=(x, y), seed=8, out=runs, epochs=4, callbacks=[Crash()])
except RuntimeError:
    pass
resumed = netdsl.train(noisy, train=(x, y), out=runs, resume="auto")
out["resumed_weights"] = same(resumed.model, whole.model)
out["resumed_history"] = resumed.history == whole.history
again = netdsl.train(noisy, train=(x, y), seed=8, out=runs, epochs=4)
out["seeded"] = same(again.model, whole.model)
# an image folder (read through its tf.data pipeline, in order, let go each epoch), shuffled: the same
# seed gives the same weights, and the run's test split scores as evaluate scores it afterwards
import pathlib, tensorflow as tf
pics = pathlib.Path(runs) / "pics"
for label in ("cats", "dogs"):
    (pics / label).mkdir(parents=True)
    for i in range(9):
        image = rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)
        (pics / label / f"{i}.jpg").write_bytes(tf.io.encode_jpeg(image).numpy())
images = spec.replace("plain.net", "images.net")
first = netdsl.train(images, data=str(pics), split=(0.6, 0.2, 0.2), seed=4, out=runs)
second = netdsl.train(images, data=str(pics), split=(0.6, 0.2, 0.2), seed=4, out=runs)
out["images_seeded"] = same(first.model, second.model) and first.status == "finished"
scored = netdsl.evaluate(first.dir)
out["images_test"] = abs(scored["loss"] - first.report["test"]["loss"]) <= 1e-6
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_training_on_a_backend_fed_by_netdsl_keeps_fit_parity_and_resumes(tmp_path: Path, backend: str) -> None:
    pytest.importorskip(backend)
    from tests.training.test_engine import NOISY, PLAIN

    (tmp_path / "plain.net").write_text(
        PLAIN.replace("shuffle = false", "shuffle = false\n    steps_per_execution = 1")
    )
    (tmp_path / "noisy.net").write_text(NOISY.replace("steps_per_execution = 2", "steps_per_execution = 1"))
    (tmp_path / "images.net").write_text(IMAGES)
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT / "dsl"))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "plain.net"), str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "fit_weights": True,
        "fit_history": True,
        "feed": "RowBatches",
        "resumed_weights": True,
        "resumed_history": True,
        "seeded": True,
        "images_seeded": True,
        "images_test": True,
    }
