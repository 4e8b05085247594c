"""Journey (a), as a user takes it on the command line: my own pictures -> a trained model -> predictions
on new pictures (a folder without class sub-folders, one file) -> a .tflite file -> the same classes.

Issue 28, item 8(a). The pictures are small PNGs with a colour and a shape per class, so that a few
epochs learn them; every step runs `netdsl` in its own process and checks what the user sees.
"""

from __future__ import annotations

import csv
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.journeys import netdsl

ROOT = Path(__file__).resolve().parents[2]
CLASSES = ("circle", "square", "stripes")
SIZE = 16
SPEC = """\
model shapes {
  input image: (16, 16, 3)
  h = image -> rescaling(1.0 / 255) -> conv2d(8, 3, activation=relu) -> global_average_pooling2d
  output probs = h -> dense(3, activation=softmax)
  train {
    optimizer = adam(learning_rate=0.05)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    epochs = 12
    batch_size = 8
  }
}
"""


def png(pixels: np.ndarray) -> bytes:
    """An 8-bit RGB PNG of `pixels` (H, W, 3), written with zlib alone."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    height, width, _ = pixels.shape
    rows = b"".join(b"\x00" + pixels[y].astype(np.uint8).tobytes() for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def picture(kind: str, rng: np.random.Generator) -> np.ndarray:
    """A red disc, a green square or blue stripes on a noisy grey ground, placed at random."""
    pixels = rng.integers(90, 140, (SIZE, SIZE, 3)).astype(np.int64)
    y, x = np.mgrid[:SIZE, :SIZE]
    cy, cx = rng.integers(5, SIZE - 5, 2)
    if kind == "circle":
        mask, colour = (y - cy) ** 2 + (x - cx) ** 2 <= 16, (230, 30, 30)
    elif kind == "square":
        mask, colour = (abs(y - cy) <= 3) & (abs(x - cx) <= 3), (30, 220, 40)
    else:
        mask, colour = (x + int(cx)) % 4 < 2, (30, 40, 230)
    pixels[mask] = colour
    return np.clip(pixels + rng.integers(-15, 16, pixels.shape), 0, 255)


@pytest.fixture(scope="module")
def journey(tmp_path_factory):
    """The pictures: pics/<class>/NN.png to train on, and new/ (loose files and one sub-folder, no classes)."""
    work = tmp_path_factory.mktemp("image_journey")
    rng = np.random.default_rng(7)
    for kind in CLASSES:
        (work / "pics" / kind).mkdir(parents=True)
        for i in range(24):
            (work / "pics" / kind / f"{i:02d}.png").write_bytes(png(picture(kind, rng)))
    (work / "new" / "later").mkdir(parents=True)
    truth = {}
    for i, kind in enumerate(CLASSES * 3):
        name = f"photo{i}.png" if i < 6 else f"later/photo{i}.png"
        (work / "new" / name).write_bytes(png(picture(kind, rng)))
        truth[name] = kind
    (work / "shapes.net").write_text(SPEC)
    return work, truth


def on_a_terminal(work: Path, *args: str) -> tuple[int, str]:
    """`netdsl ARGS` with its output on a pseudo-terminal, as a person at a terminal runs it: (exit code, text)."""
    import pty

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "dsl"), os.environ.get("PYTHONPATH", "")])}
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "netdsl.cli", *args], cwd=work, env=env, stdout=follower, stderr=subprocess.DEVNULL
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=600), b"".join(chunks).decode().replace("\r\n", "\n")


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow  # trains in `netdsl` processes
def test_pictures_to_predictions_to_a_tflite_file_and_the_same_classes(journey):
    work, truth = journey
    trained = netdsl(work, "train", "shapes.net", "--data", "pics", "--seed", "0", "--progress", "none")
    assert trained.returncode == 0, trained.stderr
    assert trained.stdout.splitlines()[-1] == "run folder: runs/shapes-1"
    config = json.loads((work / "runs/shapes-1/config.json").read_text())
    assert config["classes"] == {"probs": list(CLASSES)}  # the class sub-folders, in name order

    evaluated = netdsl(work, "evaluate", "runs/shapes-1")
    assert evaluated.returncode == 0, evaluated.stderr
    assert evaluated.stdout.splitlines()[-1] == "classes: circle, square, stripes"

    # a folder of new pictures without class sub-folders, one of them a level down
    predicted = netdsl(work, "predict", "runs/shapes-1", "--data", "new", "-o", "preds.csv")
    assert predicted.returncode == 0, predicted.stderr
    table = rows(work / "preds.csv")
    assert list(table[0]) == ["source", "class", *CLASSES]
    assert {row["source"]: row["class"] for row in table} == truth
    assert predicted.stdout == "wrote preds.csv (9 samples; probs (9, 3))\n"
    for row in table:
        assert abs(sum(float(row[name]) for name in CLASSES) - 1.0) < 1e-4

    # on a terminal, the first rows as a table
    code, shown = on_a_terminal(work, "predict", "runs/shapes-1", "--data", "new", "-o", "again.csv")
    assert code == 0
    lines = shown.splitlines()
    assert lines[0].split() == ["source", "class", *CLASSES]
    assert [line.split()[:2] for line in lines[1:10]] == [[row["source"], row["class"]] for row in table]
    assert lines[10:] == ["wrote again.csv (9 samples; probs (9, 3))"]

    # one picture
    single = netdsl(work, "predict", "runs/shapes-1", "--data", "new/later/photo7.png", "-o", "one.json")
    assert single.returncode == 0, single.stderr
    (only,) = json.loads((work / "one.json").read_text())["predictions"]
    assert (only["source"], only["class"]) == ("photo7.png", truth["later/photo7.png"])

    # shipped as LiteRT, which records the class names: the file names the same classes
    exported = netdsl(work, "export", "runs/shapes-1", "--format", "litert")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.splitlines()[0] == "wrote runs/shapes-1/shapes.tflite (litert)"
    from_file = netdsl(work, "predict", "runs/shapes-1/shapes.tflite", "--data", "new", "-o", "lite.npz")
    assert from_file.returncode == 0, from_file.stderr
    best = netdsl(work, "predict", "runs/shapes-1/best.keras", "--data", "new", "-o", "best.csv")
    assert best.returncode == 0, best.stderr  # the file holds the run's best epoch: its probabilities
    with np.load(work / "lite.npz") as lite:
        assert lite["classes"].tolist() == list(CLASSES)
        assert dict(zip(lite["source"].tolist(), lite["class"].tolist())) == truth
        np.testing.assert_allclose(
            lite["probs"], [[float(row[name]) for name in CLASSES] for row in rows(work / "best.csv")], atol=1e-4
        )


def test_pictures_a_command_cannot_use_are_one_line_before_tensorflow_loads(journey):
    """Training needs labels: a folder of loose pictures and one picture are refused, as the review's
    problem 15 asks, before TensorFlow is imported and before any run folder is made."""
    work, _ = journey
    script = (
        "import sys\nfrom netdsl.cli import main\n"
        "for data in ('new', 'new/photo0.png'):\n"
        "    assert main(['train', 'shapes.net', '--data', data, '--progress', 'none']) == 1\n"
        "print(sorted(m for m in ('keras', 'tensorflow') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "dsl"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (0, "[]\n")
    assert done.stderr.splitlines() == [
        "new: error: 6 images lie outside class sub-folders, with no label ('photo0.png'): an image folder to "
        "train or evaluate on holds one sub-folder per class with .png or .jpg files; predict takes any folder of "
        "images",
        "new/photo0.png: error: one image holds no label; train and evaluate on a folder with one sub-folder per "
        "class (predict takes a single image)",
    ]
    assert not (work / "runs" / "shapes-2").exists()
