"""Generate the demo's data: 28x28 "digits" for specs/lightning_mlp.net, as an .npz.

    python -m netdsl.demo_data digits.npz [--samples 5000]     # installed: in the wheel
    python scripts/demo_data.py build/demo/digits.npz           # a source checkout: the same

No download: each of the 10 classes is a fixed drawing of three strokes
(drawn from a seeded generator), and each sample is its class's drawing
shifted by up to four pixels, with noise. Keys `image` (float32 in [0, 1],
shape (N, 28, 28)) and `logits` (int64 labels), the spec's input and output
names, so `netdsl train specs/lightning_mlp.net --data digits.npz` finds
them. The same file every time, written through `atomic.replacing`: a
folder someone else can write to (`netdsl init DIR`) cannot redirect it
through a link planted at the temporary name or at the file's own.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import numpy as np

from netdsl.atomic import replacing

SIZE, CLASSES = 28, 10


def strokes(rng: np.random.Generator) -> np.ndarray:
    """One class's drawing: three thick line segments."""
    canvas = np.zeros((SIZE, SIZE), dtype=np.float32)
    for _ in range(3):
        (r0, c0), (r1, c1) = rng.integers(4, SIZE - 4, (2, 2))
        for t in np.linspace(0.0, 1.0, 40):
            r, c = int(round(r0 + t * (r1 - r0))), int(round(c0 + t * (c1 - c0)))
            canvas[max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2] = 1.0
    return canvas


def generate(samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    templates = np.stack([strokes(rng) for _ in range(CLASSES)])
    labels = rng.integers(0, CLASSES, samples)
    shifts = rng.integers(-4, 5, (samples, 2))
    images = np.stack([np.roll(templates[k], tuple(s), axis=(0, 1)) for k, s in zip(labels, shifts)])
    images += rng.normal(0.0, 0.8, images.shape).astype(np.float32)
    return np.clip(images, 0.0, 1.0).astype(np.float32), labels.astype(np.int64)


def write(target: str | os.PathLike, samples: int = 5000, image_key: str = "image", label_key: str = "logits") -> Path:
    """The digits as an .npz keyed by the spec's input and output names, written atomically."""
    images, labels = generate(samples)
    target = Path(target)
    # Any: numpy's stub reads `**` keys as possibly its own `allow_pickle: bool`
    arrays: dict[str, Any] = {image_key: images, label_key: labels}
    with replacing(target, suffix=".tmp.npz") as tmp:
        # reopened without following a link: the temporary file itself, not one swapped in for it
        with os.fdopen(os.open(tmp, _REOPEN), "wb") as fh:
            np.savez(fh, **arrays)
    return target


_REOPEN = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--samples", type=int, default=5000)
    args = parser.parse_args(argv)
    target = write(args.output, args.samples)
    print(f"wrote {target}: {args.samples} images 28x28, 10 classes")


if __name__ == "__main__":
    main()
