"""bench/bench_backends.py's pure parts: which sides it times and the table it prints (no timing here)."""

from __future__ import annotations

import sys
from pathlib import Path

import netdsl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_backends import Side, epoch_time, sides, table  # noqa: E402


def test_every_backend_gets_a_side_with_its_default_settings():
    order = sides(["lightning_mlp"], ["tensorflow", "torch"])
    assert [side.label for side in order] == [
        "lightning_mlp netdsl tensorflow spe 1",
        "lightning_mlp hand tensorflow spe 1",
        "lightning_mlp netdsl tensorflow spe default",
        "lightning_mlp netdsl torch spe 1",
        "lightning_mlp hand torch spe 1",
        "lightning_mlp keras torch spe 1",
        "lightning_mlp netdsl torch spe default",
    ]


def test_the_first_epoch_is_left_out():
    assert epoch_time([9.0, 1.0, 3.0, 2.0]) == 2.0


def test_table_prints_seconds_and_ratios():
    medians = {
        Side("m", "netdsl", "tensorflow"): 1.0,
        Side("m", "hand", "tensorflow"): 0.8,
        Side("m", "netdsl", "tensorflow", None): 0.25,
        Side("m", "netdsl", "torch"): 3.0,
        Side("m", "hand", "torch"): 2.0,
        Side("m", "keras", "torch"): 2.5,
    }
    # the "keras fit" column: TensorFlow's and JAX's hand side is Keras fit; torch's is plain PyTorch
    assert table(medians, ["m"], ["tensorflow", "jax", "torch"]) == [
        "m (s/epoch, median)",
        "backend       netdsl     hand  netdsl/hand  keras fit  netdsl/keras  vs netdsl TF  default  default/1",
        "tensorflow     1.000    0.800         1.25      0.800          1.25          1.00    0.250       0.25",
        "jax                -        -            -          -             -             -        -          -",
        "torch          3.000    2.000         1.50      2.500          1.20          3.00        -          -",
        "",
    ]


def test_the_cnn_spec_has_the_torch_loops_parameter_count():
    # nn.Conv2d(1, 16, 3) + nn.Conv2d(16, 32, 3) + nn.Linear(800, 10) of the bench's PyTorch loop
    summary = netdsl.summary(Path(__file__).resolve().parents[1] / "bench" / "small_cnn.net")
    assert summary["small_cnn"]["params"] == (9 * 16 + 16) + (9 * 16 * 32 + 32) + (800 * 10 + 10)


def test_netdsl_side_reads_the_run_it_just_made(tmp_path: Path, monkeypatch) -> None:
    """Run folders are numbered per model: a small_cnn run after six lightning_mlp runs is small_cnn-1,
    and the bench once read lightning_mlp-6's report for it."""
    import argparse
    import json

    import bench_train

    older = tmp_path / "runs" / "lightning_mlp-6"
    older.mkdir(parents=True)
    (older / "report.json").write_text(json.dumps({"epoch_seconds": [9.0, 9.0], "write_seconds": [0.0, 0.0]}))

    def fake_train(command: list[str], **kwargs: object) -> None:
        run = Path(command[command.index("-o") + 1]) / "small_cnn-1"
        run.mkdir(parents=True)
        (run / "report.json").write_text(json.dumps({"epoch_seconds": [2.0, 0.5], "write_seconds": [0.1, 0.1]}))

    monkeypatch.setattr(bench_train.subprocess, "run", fake_train)
    args = argparse.Namespace(epochs=2, batch_size=32)
    times, writes = bench_train.run_netdsl(Path("small_cnn.net"), Path("d.npz"), tmp_path / "runs", args, "jax")
    assert (times, writes) == ([2.0, 0.5], [0.1, 0.1])
