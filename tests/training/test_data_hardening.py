"""Data files someone else made (issue 22, security review 2026-12 findings 1, 11, 12): refused in one line,
before TensorFlow or NumPy touch them, and before a run folder is created."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from netdsl.cli import main

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "data_errors"


def _train(tmp_path: Path, capsys, data: str, spec: str = "classifier.net") -> tuple[int, str, list[Path]]:
    runs = tmp_path / "runs"
    code = main(["train", str(DATA / spec), "--data", data, "-o", str(runs), "--progress", "none"])
    err = capsys.readouterr().err
    return code, err, sorted(runs.glob("*")) if runs.exists() else []


@pytest.mark.parametrize(
    "data, message",
    [
        ("/dev/zero", "/dev/zero: error: is a device, not a data file\n"),
        ("{tmp}/zero.csv", "{tmp}/zero.csv: error: is a device, not a data file\n"),
        ("{tmp}/fifo.npz", "{tmp}/fifo.npz: error: is a named pipe (FIFO), not a data file\n"),
        ("{tmp}/fifo.tfrecord", "{tmp}/fifo.tfrecord: error: is a named pipe (FIFO), not a data file\n"),
    ],
)
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
    assert err == (
        f"{tmp_path}/bomb.npz: error: array 'image' expands from {info.compress_size:,} to "
        f"{info.file_size:,} bytes; netdsl reads at most 68,719,476,736 bytes per array, and above "
        f"67,108,864 bytes at most 200x its compressed size\n"
    )


def test_a_tfrecord_walk_counts_records_and_refuses_a_bad_header_crc(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from netdsl.training.data.tfrecords import count_records
    from netdsl.training.errors import DataError

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


# ------------------------------------------------------------------ run folders (finding 4, 11)

PLAIN = """\
model plain {
  input image: (6, 6)
  output logits = image -> flatten -> dense(4)
  train {
    optimizer = adam(learning_rate=1e-2)
    loss = sparse_categorical_crossentropy(from_logits=true)
    callbacks = [early_stopping(monitor="val_loss", patience=3, restore_best_weights=true)]
    validation_split = 0.25
    batch_size = 8
    epochs = 2
  }
}
"""
RNG = np.random.default_rng(5)
X, Y = RNG.random((32, 6, 6)).astype("float32"), RNG.integers(0, 4, 32)


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A run stopped after its first epoch (resumable), copied fresh for each test by `run_copy`."""
    import keras

    import netdsl

    class StopAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 0:
                raise RuntimeError("power cut")

    base = tmp_path_factory.mktemp("stopped")
    (base / "plain.net").write_text(PLAIN)
    with pytest.raises(RuntimeError):
        netdsl.train(
            str(base / "plain.net"), train=(X, Y), seed=1, out=base / "runs", callbacks=[StopAfterFirstEpoch()]
        )
    return base


@pytest.fixture
def run_copy(stopped_run, tmp_path):
    import shutil

    shutil.copytree(stopped_run, tmp_path / "copy")
    folder = tmp_path / "copy" / "runs" / "plain-1"
    assert json.loads((folder / "report.json").read_text())["status"] == "failed"
    return tmp_path / "copy", folder


def _resume(base: Path, resume: str = "auto"):
    import netdsl

    return netdsl.train(str(base / "plain.net"), train=(X, Y), out=base / "runs", resume=resume)


def test_resume_auto_passes_over_a_run_folder_of_another_account(run_copy, monkeypatch):
    from netdsl.training.errors import RunError

    base, folder = run_copy
    real = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real + 1)  # the folder now belongs to someone else
    run = _resume(base)  # not adopted: a new run
    assert run.dir == base / "runs" / "plain-2" and run.status == "finished"
    with pytest.raises(RunError) as caught:
        _resume(base, str(folder))
    assert str(caught.value) == (
        f"{folder}: error: this run folder belongs to another account (uid {real}); "
        f"netdsl resumes and reads only run folders you made"
    )


def test_resume_auto_passes_over_a_world_writable_run_folder(run_copy):
    base, folder = run_copy
    folder.chmod(0o777)
    assert _resume(base).dir == base / "runs" / "plain-2"


GROUP_WRITABLE = (
    "the members of its group may write into this run folder (it is group-writable), so the run "
    "could be changed under you; `chmod -R g-w` it to resume it; netdsl resumes and reads only run "
    "folders you made"
)


def test_a_group_writable_run_folder_is_passed_over_by_auto_and_refused_by_name(run_copy):
    """Security review 2026-12b N12: with umask 002 and a shared group, a group member rewrote
    config.json (planted data, 50 epochs) and `--resume auto` adopted it."""
    from netdsl.training.errors import RunError

    base, folder = run_copy
    folder.chmod(0o775)
    assert _resume(base).dir == base / "runs" / "plain-2"  # a new run, not the group's
    with pytest.raises(RunError) as caught:
        _resume(base, str(folder))
    assert str(caught.value) == f"{folder}: error: {GROUP_WRITABLE}"
    subprocess.run(["chmod", "-R", "g-w", str(folder)], check=True)  # what the message says to do
    assert _resume(base, str(folder)).dir == folder


def test_a_run_made_under_umask_002_is_its_owners_alone_and_resumable(tmp_path):
    import keras

    import netdsl

    class StopAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 0:
                raise RuntimeError("power cut")

    (tmp_path / "plain.net").write_text(PLAIN)
    before = os.umask(0o002)
    try:
        with pytest.raises(RuntimeError):
            netdsl.train(
                str(tmp_path / "plain.net"),
                train=(X, Y),
                seed=1,
                out=tmp_path / "runs",
                callbacks=[StopAfterFirstEpoch()],
            )
        folder = tmp_path / "runs" / "plain-1"
        modes = {
            path.name: stat.S_IMODE(path.stat().st_mode)
            for path in [folder, *(folder / name for name in ("config.json", "report.json", "checkpoint.npz"))]
        }
        assert modes == {"plain-1": 0o755, "config.json": 0o644, "report.json": 0o644, "checkpoint.npz": 0o644}
        run = _resume(tmp_path)
    finally:
        os.umask(before)
    assert (run.dir, run.status) == (folder, "finished")


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a file to another account needs root")
@pytest.mark.parametrize(
    "name, resume, message",
    [
        (
            "config.json",
            "DIR",
            "{folder}: error: cannot read config.json: belongs to another account (uid {uid}); netdsl reads "
            "only run files you made",
        ),
        (
            "report.json",
            "auto",
            "{folder}: error: cannot read report.json: belongs to another account (uid {uid}); netdsl reads "
            "only run files you made",
        ),
        (
            "checkpoint.npz",
            "DIR",
            "{folder}/checkpoint.npz: error: cannot read the checkpoint: belongs to another account "
            "(uid {uid}); netdsl reads only checkpoints you made",
        ),
    ],
)
def test_a_run_file_of_another_account_inside_the_users_folder_is_refused(run_copy, name, resume, message):
    from netdsl.training.errors import RunError

    base, folder = run_copy
    other = os.getuid() + 4242
    os.chown(folder / name, other, -1)
    with pytest.raises(RunError) as caught:
        _resume(base, str(folder) if resume == "DIR" else "auto")  # --resume DIR reads no report.json
    assert str(caught.value) == message.format(folder=folder, uid=other)


def test_a_group_writable_run_file_is_refused(run_copy):
    from netdsl.training.errors import RunError

    base, folder = run_copy
    (folder / "report.json").chmod(0o664)
    with pytest.raises(RunError) as caught:
        _resume(base)
    assert str(caught.value) == (
        f"{folder}: error: cannot read report.json: its group may write to it (mode 664); "
        f"`chmod go-w` it if you trust its content"
    )


@pytest.mark.parametrize(
    "plant, message",
    [
        (lambda p: os.mkfifo(p), "is a named pipe (FIFO), not a run file"),
        (
            lambda p: os.symlink("/dev/zero", p),
            "is a symbolic link, not a run file; netdsl does not read through links here",
        ),
    ],
    ids=["fifo", "dev-zero-link"],
)
def test_a_planted_report_json_is_refused_at_once(run_copy, plant, message):
    from netdsl.training.errors import RunError

    base, folder = run_copy
    (folder / "report.json").unlink()
    plant(folder / "report.json")
    with pytest.raises(RunError) as caught:
        _resume(base)
    assert str(caught.value) == f"{folder}: error: cannot read report.json: {message}"


def test_a_planted_tensorboard_link_is_not_written_through(run_copy, tmp_path):
    pytest.importorskip("tensorboard")
    import netdsl
    from netdsl.training.errors import RunError

    base, folder = run_copy
    victim = tmp_path / "victim"
    victim.mkdir()
    os.symlink(victim, folder / "tensorboard")
    with pytest.raises(RunError) as caught:
        netdsl.train(str(base / "plain.net"), train=(X, Y), out=base / "runs", resume="auto", tensorboard=True)
    assert str(caught.value) == f"{folder}: error: tensorboard is a symbolic link; netdsl does not write through links"
    assert list(victim.iterdir()) == []


def test_a_checkpoint_holding_an_object_array_is_one_line(run_copy):
    from netdsl.training.errors import RunError

    base, folder = run_copy
    with zipfile.ZipFile(folder / "checkpoint.npz") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    objects = io.BytesIO()
    np.save(objects, np.array([object()] * 3, dtype=object), allow_pickle=True)
    members["model/0000.npy"] = objects.getvalue()
    with zipfile.ZipFile(folder / "checkpoint.npz", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(RunError) as caught:
        _resume(base)
    assert str(caught.value) == (
        f"{folder}/checkpoint.npz: error: cannot read the checkpoint: Object arrays "
        f"cannot be loaded when allow_pickle=False"
    )


def test_a_damaged_setting_in_config_json_is_one_line(run_copy):
    from netdsl.training.errors import RunError

    base, folder = run_copy
    config = json.loads((folder / "config.json").read_text())
    config["settings"]["batch_size"] = "eight"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(RunError) as caught:
        _resume(base)
    assert str(caught.value) == (
        f"{folder}: error: config.json's settings.batch_size is 'eight', which netdsl "
        f"never writes; the run folder is damaged; start a new run (without --resume)"
    )


def test_a_checkpoint_sets_only_the_callback_fields_netdsl_saves():
    import keras

    from netdsl.training.errors import RunError
    from netdsl.training.run import checkpoint

    callback = keras.callbacks.EarlyStopping()
    with pytest.raises(RunError) as caught:
        checkpoint.apply_callback_state(
            [callback],
            {
                "callbacks": [
                    {
                        "type": "EarlyStopping",
                        "fields": {"monitor": "anything", "monitor_op": "not callable", "on_epoch_end": "shadowed"},
                    }
                ]
            },
        )
    assert str(caught.value) == "error: cannot read the checkpoint: callback field 'monitor' is not one netdsl saves"
    assert callback.monitor == "val_loss" and callable(callback.on_epoch_end)
    checkpoint.apply_callback_state([callback], {"callbacks": [{"type": "EarlyStopping", "fields": {"wait": 2}}]})
    assert callback.wait == 2


# ------------------------------------------------------------------ image folders (finding 12)

IMAGES = """\
model pics {
  input image: (4, 4)
  output probs = image -> flatten -> dense(2, activation=softmax)
  train {
    optimizer = sgd
    loss = sparse_categorical_crossentropy
    epochs = 1
  }
}
"""


def _png(width: int = 4, height: int = 4) -> bytes:
    import struct
    import zlib

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = b"IHDR" + header
    ihdr = struct.pack(">I", len(header)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    pixels = zlib.compress(b"".join(b"\0" + bytes(4) for _ in range(4)))
    idat = struct.pack(">I", len(pixels)) + b"IDAT" + pixels + struct.pack(">I", zlib.crc32(b"IDAT" + pixels))
    return b"\x89PNG\r\n\x1a\n" + ihdr + idat + struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))


def _image_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "imgs"
    for name in ("cat", "dog"):
        (folder / name).mkdir(parents=True)
        for k in "abcde":
            (folder / name / f"{k}.png").write_bytes(_png())
    (tmp_path / "pics.net").write_text(IMAGES)
    return folder


def _train_images(tmp_path: Path, capsys) -> tuple[int, str]:
    runs = tmp_path / "runs"
    code = main(
        ["train", str(tmp_path / "pics.net"), "--data", str(tmp_path / "imgs"), "-o", str(runs), "--progress", "none"]
    )
    assert not runs.exists() or code == 0
    return code, capsys.readouterr().err


def test_a_class_folder_or_an_image_linking_outside_the_image_folder_is_refused(tmp_path, capsys):
    folder = _image_folder(tmp_path)
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "p.png").write_bytes(_png())
    os.symlink(tmp_path / "secret" / "p.png", folder / "cat" / "f.png")
    assert _train_images(tmp_path, capsys) == (
        1,
        f"{folder}/cat/f.png: error: is a link to outside the image folder; netdsl reads only files inside it\n",
    )
    (folder / "cat" / "f.png").unlink()
    os.symlink(tmp_path / "secret", folder / "fish")
    assert _train_images(tmp_path, capsys) == (
        1,
        f"{folder}/fish: error: is a link to outside the image folder; netdsl reads only files inside it\n",
    )
    (folder / "fish").unlink()
    os.symlink(folder / "cat" / "a.png", folder / "dog" / "f.png")  # a link inside the folder is read
    assert _train_images(tmp_path, capsys)[0] == 0


def test_a_png_declaring_huge_dimensions_is_refused_before_it_is_decoded(tmp_path, capsys):
    folder = _image_folder(tmp_path)
    (folder / "dog" / "huge.png").write_bytes(_png(100_000, 100_000)[:33] + bytes(16))
    assert _train_images(tmp_path, capsys) == (
        1,
        f"{folder}/dog/huge.png: error: the image declares 100,000 x 100,000 pixels; netdsl decodes images of "
        f"at most 268,435,456 pixels\n",
    )


# ------------------------------------------------------------------ evaluate / predict load only .keras (finding 5)


@pytest.mark.parametrize(
    "name, content, message",
    [
        (
            "old.h5",
            b"\x89HDF\r\n\x1a\n",
            "not a .keras file ('.h5'); netdsl loads models saved as .keras; load it in "
            "Keras and save it with model.save('model.keras')",
        ),
        ("fake.keras", b"\x89HDF\r\n\x1a\n", "not a .keras file (not a zip archive)"),
    ],
)
def test_evaluate_and_predict_load_only_keras_zips(tmp_path, capsys, name, content, message):
    (tmp_path / name).write_bytes(content)
    np.savez(tmp_path / "d.npz", x=np.zeros((4, 4), "float32"), y=np.zeros(4, "int64"))
    for command in (["evaluate"], ["predict", "-o", str(tmp_path / "p.npz")]):
        code = main([*command, str(tmp_path / name), "--data", str(tmp_path / "d.npz")])
        assert (code, capsys.readouterr().err) == (1, f"{tmp_path / name}: error: {message}\n")
