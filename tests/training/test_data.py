"""Data by name: every format reaches the model's inputs and outputs with the values it holds,
splits follow the seed, and shuffled epochs depend only on the seed and the epoch number."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from netdsl.training.data.plan import plan_data, split_rows
from netdsl.training.data.request import DataRequest
from netdsl.training.data.signature import Signature, TensorSpec
from netdsl.training.data.source import open_source
from netdsl.training.data.tf_data import EpochOrder
from netdsl.training.errors import DataError

RNG = np.random.default_rng(7)
IMAGE = Signature((TensorSpec("image", (4, 4, 1), "float32"),), (TensorSpec("probs", (3,), "float32"),))
TABLE = Signature((TensorSpec("x", (3,), "float32"),), (TensorSpec("probs", (2,), "float32"),))
TWO = Signature(
    (TensorSpec("a", (2,), "float32"), TensorSpec("b", (3,), "int32")),
    (TensorSpec("p", (4,), "float32"), TensorSpec("q", (1,), "float32")),
)


def batches(source, rows=None, batch_size=4, order=None, with_targets=True):
    rows = np.arange(source.n) if rows is None else rows
    return list(source.dataset(rows, batch_size, order, with_targets).as_numpy_iterator())


def stacked(found, index):
    return np.concatenate([b[index] if isinstance(b, tuple) else b for b in found])


def test_npz_arrays_reach_the_model_by_name_in_order(tmp_path):
    a, b = RNG.random((10, 2)), RNG.integers(0, 9, (10, 3))
    p, q = RNG.random((10, 4)), RNG.random(10)
    np.savez(tmp_path / "d.npz", b=b, q=q, a=a, p=p)
    found = batches(open_source(str(tmp_path / "d.npz"), TWO))
    (x_a, x_b), (y_p, y_q) = found[0]
    assert np.array_equal(x_a, a[:4].astype("float32")) and x_b.dtype == np.int32
    assert np.array_equal(np.concatenate([f[0][1] for f in found]), b)
    assert np.array_equal(np.concatenate([f[1][1] for f in found]), q.astype("float32"))
    assert [len(f[0][0]) for f in found] == [4, 4, 2]  # the last batch is short, as in model.fit


def test_a_one_input_one_output_model_also_takes_x_and_y(tmp_path):
    x, y = RNG.random((5, 3)).astype("float32"), RNG.integers(0, 2, 5)
    np.savez(tmp_path / "xy.npz", x=x, y=y)
    found = batches(open_source(str(tmp_path / "xy.npz"), TABLE))
    assert np.array_equal(stacked(found, 0), x) and np.array_equal(stacked(found, 1), y)


def test_csv_targets_by_output_name_or_flag_and_non_numeric_columns_left_out(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('id,f1,f2,"f3",label\nr1,0.5,1e-3,-2,1\nr2,"7",8,9,0\n')
    found = batches(open_source(str(path), TABLE, {"probs": "label"}))
    assert np.array_equal(stacked(found, 0), np.float32([[0.5, 0.001, -2.0], [7.0, 8.0, 9.0]]))
    assert stacked(found, 1).tolist() == [1.0, 0.0]
    with pytest.raises(DataError, match="no column 'probs' for output 'probs'"):
        open_source(str(path), TABLE)
    # predict needs no target: the label column is then left out of the input
    assert batches(open_source(str(path), TABLE, {"probs": "label"}, need_targets=False), with_targets=False)[
        0
    ].shape == (2, 3)


def test_csv_error_points_at_the_cell_when_quotes_hide_commas(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('a,b,c,probs\n"1",2,3,0\n1,2,"x,y",1\n')
    with pytest.raises(DataError) as caught:
        open_source(str(path), TABLE)
    assert str(caught.value) == f"{path}:3:5: error: 'x,y' is not a number (column 'c')"


def _png_folder(tmp_path, classes):
    pixels = {}
    for label, name in enumerate(classes):
        (tmp_path / "imgs" / name).mkdir(parents=True)
        for i in range(2):
            image = RNG.integers(0, 256, (4, 4, 1), dtype=np.uint8)
            (tmp_path / "imgs" / name / f"{i}.png").write_bytes(tf.io.encode_png(image).numpy())
            pixels[(label, i)] = image
    return pixels


def test_image_folder_labels_are_class_indices_in_name_order(tmp_path):
    pixels = _png_folder(tmp_path, ["zebra", "ant", "moth"])  # name order: ant, moth, zebra
    source = open_source(str(tmp_path / "imgs"), IMAGE)
    images, labels = stacked(batches(source), 0), stacked(batches(source), 1)
    assert labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert np.array_equal(images[0], pixels[(1, 0)].astype("float32"))  # ant/0.png, values 0..255 unchanged
    assert images.shape == (6, 4, 4, 1)


def test_image_folder_resizes_to_the_input_and_drops_the_channel_for_2d_inputs(tmp_path):
    _png_folder(tmp_path, ["a", "b"])
    gray = Signature((TensorSpec("image", (2, 2), "float32"),), (TensorSpec("probs", (2,), "float32"),))
    assert stacked(batches(open_source(str(tmp_path / "imgs"), gray)), 0).shape == (4, 2, 2)


def _tfrecord(path, n):
    data = RNG.random((n, 4, 4, 1)).astype("float32"), RNG.integers(0, 3, n)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for image, label in zip(*data):
            features = {
                "image": tf.train.Feature(float_list=tf.train.FloatList(value=image.reshape(-1))),
                "probs": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    return data


def test_tfrecord_features_by_name_split_and_shuffled(tmp_path):
    images, labels = _tfrecord(tmp_path / "d.tfrecord", 9)
    source = open_source(str(tmp_path / "d.tfrecord"), IMAGE)
    assert source.n == 9
    found = batches(source)
    assert np.array_equal(stacked(found, 0), images) and np.array_equal(stacked(found, 1), labels)
    rows = np.array([1, 4, 8])
    assert np.array_equal(stacked(batches(source, rows), 1), labels[rows])
    order = EpochOrder(seed=3, epoch=0)
    first = stacked(batches(source, order=order), 1)
    again = stacked(batches(source, order=order), 1)
    order.epoch = 1
    other = stacked(batches(source, order=order), 1)
    assert np.array_equal(first, again) and sorted(first) == sorted(labels)
    assert not np.array_equal(stacked(batches(source, order=order), 0), stacked(found, 0))
    assert sorted(other) == sorted(labels)


def test_a_tfrecord_order_depends_on_the_epoch_seed_alone_whatever_the_global_seed(tmp_path):
    """`--seed 0` sets TensorFlow's global seed to 0, with which TensorFlow refused to trace
    the per-epoch shuffle (OperatorNotAllowedInGraphError); another global seed changed the order."""
    import keras
    import tensorflow as tf

    _tfrecord(tmp_path / "d.tfrecord", 9)
    source = open_source(str(tmp_path / "d.tfrecord"), IMAGE)
    orders = []
    for global_seed in (0, 5, 2**31 - 1):
        keras.utils.set_random_seed(global_seed)
        orders.append(stacked(batches(source, order=EpochOrder(seed=3, epoch=0)), 1))
        after_shuffle = float(tf.random.uniform(()))
        keras.utils.set_random_seed(global_seed)
        assert float(tf.random.uniform(())) == after_shuffle  # the process's own random stream is untouched
    assert all(np.array_equal(orders[0], order) for order in orders)


def _numpy(found):
    return [
        ({k: v.tolist() for k, v in x.items()}, None if y is None else {k: v.tolist() for k, v in y.items()})
        for x, y in found
    ]


def test_every_format_gives_numpy_batches_by_name(tmp_path):
    # `batches` (what an exported file's runtime is fed) is a member of every source: one place per format.
    rows = np.array([0, 2, 3, 5])
    a, b = RNG.random((6, 2)).astype("float32"), RNG.integers(0, 9, (6, 3)).astype("int32")
    p, q = RNG.random((6, 4)).astype("float32"), RNG.random(6).astype("float32")
    np.savez(tmp_path / "d.npz", a=a, b=b, p=p, q=q)
    arrays = open_source(str(tmp_path / "d.npz"), TWO)
    assert _numpy(arrays.batches(rows, 3)) == _numpy(
        [
            ({"a": a[[0, 2, 3]], "b": b[[0, 2, 3]]}, {"p": p[[0, 2, 3]], "q": q[[0, 2, 3]]}),
            ({"a": a[[5]], "b": b[[5]]}, {"p": p[[5]], "q": q[[5]]}),
        ]
    )
    images, labels = _tfrecord(tmp_path / "d.tfrecord", 6)
    records = open_source(str(tmp_path / "d.tfrecord"), IMAGE)
    assert _numpy(records.batches(rows, 3)) == _numpy(
        [({"image": images[[0, 2, 3]]}, {"probs": labels[[0, 2, 3]]}), ({"image": images[[5]]}, {"probs": labels[[5]]})]
    )
    assert _numpy(records.batches(rows[:2], 3, with_targets=False)) == _numpy([({"image": images[[0, 2]]}, None)])
    pixels = _png_folder(tmp_path, ["a", "b"])
    folder = open_source(str(tmp_path / "imgs"), IMAGE)
    assert _numpy(folder.batches(np.array([1, 2]), 2)) == _numpy(
        [({"image": np.stack([pixels[(0, 1)], pixels[(1, 0)]]).astype("float32")}, {"probs": np.array([0, 1])})]
    )


def test_split_is_a_partition_given_by_the_seed():
    train, val, test = split_rows(100, (0.8, 0.1, 0.1), seed=5)
    assert (len(train), len(val), len(test)) == (80, 10, 10)
    assert sorted(np.concatenate([train, val, test]).tolist()) == list(range(100))
    assert all(np.array_equal(a, b) for a, b in zip(split_rows(100, (0.8, 0.1, 0.1), 5), (train, val, test)))
    assert not np.array_equal(split_rows(100, (0.8, 0.1, 0.1), 6)[1], val)
    assert split_rows(10, (0.7, 0.3), 1)[2] is None


def test_an_epochs_order_depends_only_on_seed_and_epoch(tmp_path):
    x = np.arange(10, dtype="float32").reshape(10, 1).repeat(3, axis=1)
    source = open_source({"x": x, "y": np.zeros(10)}, TABLE)
    order = EpochOrder(seed=1)
    epoch0 = stacked(batches(source, order=order), 0)[:, 0].tolist()
    order.epoch = 1
    epoch1 = stacked(batches(source, order=order), 0)[:, 0].tolist()
    resumed = EpochOrder(seed=1, epoch=1)  # a resumed run starts at epoch 1 with a fresh order object
    assert stacked(batches(source, order=resumed), 0)[:, 0].tolist() == epoch1
    assert epoch0 != epoch1 and sorted(epoch0) == sorted(epoch1) == list(range(10))


def test_keras_validation_split_takes_the_tail_of_the_training_data(tmp_path):
    x, y = RNG.random((10, 3)), RNG.integers(0, 2, 10)
    plan = plan_data(DataRequest(train=(x, y)), TABLE, seed=0, validation_split=0.25)
    assert plan.train.rows.tolist() == list(range(7)) and plan.val.rows.tolist() == [7, 8, 9]  # floor(10 * 0.75)
