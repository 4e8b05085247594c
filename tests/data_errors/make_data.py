"""Write the binary data fixtures of tests/data_errors (run from the repo root; deterministic).

The CSV and text fixtures are written by hand; each NAME.expected holds the
command (`$ netdsl ...`, run in this folder), the exit code and the exact
text printed on stderr.
"""

import io
import os
import sys
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(0)


def images(n=6, shape=(4, 4)):
    return rng.random((n, *shape)).astype("float32")


def labels(n=6, classes=3):
    return rng.integers(0, classes, n)


def _npy(array):
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def npz(name, **arrays):
    np.savez(HERE / f"{name}.npz", **arrays)


npz("npz_missing_input", pixels=images(), labels=labels())
npz("npz_missing_target", image=images())
npz("npz_wrong_shape", image=images(shape=(4, 5)), probs=labels())
npz("npz_text", image=np.full((6, 4, 4), "a"), probs=labels())
npz("npz_lengths", image=images(), probs=labels(5))
npz("npz_tiny", image=images(3), probs=labels(3))
npz("npz_empty", image=images(0), probs=labels(0))
npz("tokens_float", ids=rng.random((6, 5)), score=rng.random(6))
np.savez(HERE / "npz_objects.npz", image=np.array([object()] * 6, dtype=object), probs=labels())
(HERE / "not_a_zip.npz").write_text("x,y\n1,2\n")
(HERE / "data.txt").write_text("1 2 3\n")
# issue 22: an array header declaring 16 TiB (NumPy allocated it: MemoryError); a header cell over csv's limit
header = io.BytesIO()
np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (2**40, 4, 4)})
with zipfile.ZipFile(HERE / "npz_hugeshape.npz", "w") as archive:
    archive.writestr("image.npy", header.getvalue() + bytes(16))
    archive.writestr("probs.npy", _npy(np.zeros(6, dtype=np.int64)))
(HERE / "csv_hugefield.csv").write_text("a" * 140_000 + ",b\n1,0\n")
(HERE / "tfrecord_garbage.tfrecord").write_text("this is not a TFRecord file\n")


def masked_crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    crc ^= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# The review's 76 bytes (issue 22): a header with a valid CRC declaring 2**40 bytes, then 64 zero bytes.
# TensorFlow's reader crashed the process on it (SIGSEGV).
length = (2**40).to_bytes(8, "little")
(HERE / "tfrecord_hugelen.tfrecord").write_bytes(length + masked_crc32c(length).to_bytes(4, "little") + bytes(64))

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402


def example(**features):
    def feature(value):
        value = np.asarray(value).reshape(-1)
        if value.dtype.kind == "f":
            return tf.train.Feature(float_list=tf.train.FloatList(value=value))
        if value.dtype.kind in "iu":
            return tf.train.Feature(int64_list=tf.train.Int64List(value=value))
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(v) for v in value]))
    return tf.train.Example(features=tf.train.Features(feature={k: feature(v) for k, v in features.items()}))


def tfrecord(name, records):
    with tf.io.TFRecordWriter(str(HERE / f"{name}.tfrecord")) as writer:
        for record in records:
            writer.write(record.SerializeToString())


tfrecord("tfrecord_missing", [example(pixels=images(1)[0], probs=[1]) for _ in range(4)])
tfrecord("tfrecord_count", [example(image=rng.random(15).astype("float32"), probs=[1]) for _ in range(4)])
tfrecord("tfrecord_bytes", [example(image=np.array([b"abc"]), probs=[1]) for _ in range(4)])

for folder in ("images_bad/cat", "images_bad/dog"):
    (HERE / folder).mkdir(parents=True, exist_ok=True)
png = tf.io.encode_png(tf.zeros((4, 4, 1), tf.uint8)).numpy()
(HERE / "images_bad/cat/a.png").write_bytes(png)
(HERE / "images_bad/dog/b.png").write_bytes(b"GIF89a not really a png")
for folder in ("images_corrupt/cat", "images_corrupt/dog"):  # PNG signatures, broken images: found mid-run
    (HERE / folder).mkdir(parents=True, exist_ok=True)
    for i in range(3):
        (HERE / folder / f"{i}.png").write_bytes(png[:8] + b"\0" * 24)
print("wrote the data fixtures in", HERE, file=sys.stderr)
