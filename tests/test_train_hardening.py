"""Data files someone else made (issue 22, security review 2026-12 findings 1, 11, 12): refused in one line,
before TensorFlow or NumPy touch them, and before a run folder is created."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from netdsl.cli import main

DATA = Path(__file__).resolve().parent / "data_errors"


def _train(tmp_path: Path, capsys, data: str, spec: str = "classifier.net") -> tuple[int, str, list[Path]]:
    runs = tmp_path / "runs"
    code = main(["train", str(DATA / spec), "--data", data, "-o", str(runs), "--progress", "none"])
    err = capsys.readouterr().err
    return code, err, sorted(runs.glob("*")) if runs.exists() else []


@pytest.mark.parametrize("data, message", [
    ("/dev/zero", "/dev/zero: error: is a device, not a data file\n"),
    ("{tmp}/zero.csv", "{tmp}/zero.csv: error: is a device, not a data file\n"),
    ("{tmp}/fifo.npz", "{tmp}/fifo.npz: error: is a named pipe (FIFO), not a data file\n"),
    ("{tmp}/fifo.tfrecord", "{tmp}/fifo.tfrecord: error: is a named pipe (FIFO), not a data file\n"),
])
def test_a_device_or_a_fifo_as_data_is_refused_and_leaves_no_run_folder(tmp_path, capsys, data, message):
    os.symlink("/dev/zero", tmp_path / "zero.csv")
    os.mkfifo(tmp_path / "fifo.npz")
    os.mkfifo(tmp_path / "fifo.tfrecord")
    code, err, folders = _train(tmp_path, capsys, data.format(tmp=tmp_path))
    assert (code, err, folders) == (1, message.format(tmp=tmp_path), [])


def test_a_deflated_npz_member_that_expands_past_the_bound_is_refused_before_it_is_read(tmp_path, capsys):
    zeros = io.BytesIO()
    np.save(zeros, np.zeros((70 * 1024 * 1024,), dtype=np.uint8))
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("image.npy", zeros.getvalue())
        archive.writestr("probs.npy", b"")
    size = (tmp_path / "bomb.npz").stat().st_size
    assert size < 100_000
    info = zipfile.ZipFile(tmp_path / "bomb.npz").getinfo("image.npy")
    code, err, folders = _train(tmp_path, capsys, str(tmp_path / "bomb.npz"))
    assert (code, folders) == (1, [])
    assert err == (f"{tmp_path}/bomb.npz: error: array 'image' expands from {info.compress_size:,} to "
                   f"{info.file_size:,} bytes; netdsl reads at most 68,719,476,736 bytes per array, and above "
                   f"67,108,864 bytes at most 200x its compressed size\n")


def test_a_tfrecord_walk_counts_records_and_refuses_a_bad_header_crc(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from netdsl.training.errors import DataError
    from netdsl.training.tfrecords import count_records

    path = tmp_path / "d.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for k in range(7):
            writer.write(b"x" * k)
    assert count_records(str(path)) == 7
    data = bytearray(path.read_bytes())
    data[12 + 0 + 4 + 8] ^= 1  # the second record's length (the first record holds 0 bytes)
    path.write_bytes(bytes(data))
    with pytest.raises(DataError) as caught:
        count_records(str(path))
    assert str(caught.value) == f"{path}: error: not a readable TFRecord file (corrupted record header at byte 16)"
