"""The .npz `netdsl predict` writes (training/run/inference.write_predictions) and the checkpoint's arrays."""

from __future__ import annotations

import numpy as np

from netdsl.training.run.checkpoint import npz_bytes
from netdsl.training.run.inference import write_predictions


def test_every_output_name_is_an_array_of_the_file(tmp_path):
    # `file` and `allow_pickle` are names a spec may give its outputs; np.savez(f, **predictions) took
    # them as its own parameters (a TypeError for `file`, `allow_pickle` silently left out of the file).
    predictions = {
        "file": np.arange(6, dtype=np.float32).reshape(3, 2),
        "allow_pickle": np.array([1, 0, 1]),
        "kind": np.eye(3),
    }
    target = write_predictions(predictions, tmp_path / "out.npz")
    with np.load(target, allow_pickle=False) as saved:
        assert saved.files == ["file", "allow_pickle", "kind"]
        for name, array in predictions.items():
            assert saved[name].dtype == array.dtype
            np.testing.assert_array_equal(saved[name], array)


def test_npz_bytes_is_what_np_savez_writes(tmp_path):
    arrays = {"model/0000": np.arange(12, dtype=np.float32).reshape(3, 4), "meta.json": np.frombuffer(b"{}", np.uint8)}
    np.savez(tmp_path / "savez.npz", **arrays)
    (tmp_path / "ours.npz").write_bytes(npz_bytes(arrays))
    with np.load(tmp_path / "savez.npz") as theirs, np.load(tmp_path / "ours.npz", allow_pickle=False) as ours:
        assert ours.files == theirs.files
        for name in theirs.files:
            assert ours[name].dtype == theirs[name].dtype
            np.testing.assert_array_equal(ours[name], theirs[name])
