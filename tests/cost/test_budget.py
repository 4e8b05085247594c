"""Will it fit (issue 31): `train --max-memory` and a train section's `max_memory` refuse a batch whose
estimated training peak is over the budget, naming the largest batch that fits; `check` warns."""

from __future__ import annotations

import numpy as np
import pytest

from netdsl import pipeline
from netdsl.cli import main
from netdsl.cost import model_cost
from netdsl.cost.budget import largest_batch
from netdsl.semantics.train_checks import memory_size

MLP = """\
model mlp {
  input image: (28, 28)
  h = image -> flatten -> dense(128, activation=relu)
  output logits = h -> dense(10)
  train {
    optimizer = adam
    loss = sparse_categorical_crossentropy
    batch_size = 4096
    max_memory = "16MiB"
  }
}
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mlp.net").write_text(MLP, encoding="utf-8")
    np.savez(tmp_path / "digits.npz", image=np.zeros((8, 28, 28), "float32"), logits=np.zeros(8, "int64"))
    return tmp_path


def _graph(text: str):
    graphs = pipeline.checked_graphs(pipeline.load(text=text), ["mlp"])
    pipeline.unsure_models(graphs)
    return graphs["mlp"]


def test_the_largest_batch_that_fits_is_the_last_one_under_the_budget():
    graph, limit = _graph(MLP), 16 * 2**20
    fits = largest_batch(graph, limit, "float32")
    assert fits == 3214
    assert model_cost(graph, batch=fits).train_memory_bytes <= limit
    assert model_cost(graph, batch=fits + 1).train_memory_bytes > limit


def test_check_warns_at_the_batch_size_when_the_specs_own_max_memory_is_exceeded(work, capsys):
    assert main(["check", "mlp.net"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[:3] == [
        "mlp.net:8:18: warning: batch_size 4096 needs 20.0 MiB to train (estimated), over max_memory 16.0 MiB; "
        "the largest batch that fits is 3214; docs/cost.md says what the estimate counts",
        "  batch_size = 4096",
        "               ^^^^",
    ]
    assert captured.out == "mlp.net: no errors (1 warning)\n"


def test_check_is_quiet_when_the_batch_fits(work, capsys):
    (work / "mlp.net").write_text(MLP.replace("4096", "3214"), encoding="utf-8")
    assert main(["check", "mlp.net"]) == 0
    assert capsys.readouterr().out == "mlp.net: no problems found\n"


def test_train_refuses_the_specs_batch_size_at_its_line_before_any_run_folder(work, capsys):
    assert main(["train", "mlp.net", "--data", "digits.npz", "-o", "runs"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        "mlp.net:8:18: error: batch_size 4096 needs 20.0 MiB to train (estimated), over max_memory 16.0 MiB; "
        "the largest batch that fits is 3214"
    )
    assert not (work / "runs").exists()


def test_train_max_memory_refuses_a_flags_batch_size_in_one_line(work, capsys):
    assert (
        main(["train", "mlp.net", "--data", "digits.npz", "-o", "runs", "--batch-size", "512", "--max-memory", "4MB"])
        == 2
    )
    assert capsys.readouterr().err == (
        "netdsl train: error: --batch-size 512 needs 3.9 MiB to train (estimated), over --max-memory 3.8 MiB; "
        "the largest batch that fits is 503\n"
    )
    # 1,628,320 B of weights, gradients and Adam's two slots, + 4,712 B a sample at the last dense layer's
    # backward (the image's 3,136 B, the hidden layer's sum and ReLU 1,024 kept, that dense's 40 + 512 B of
    # gradients out and in): (4,000,000 - 1,628,320) // 4,712 = 503
    assert not (work / "runs").exists()


def test_train_max_memory_below_the_weights_and_their_optimizer_state_fits_no_batch(work, capsys):
    assert main(["train", "mlp.net", "--data", "digits.npz", "--batch-size", "1", "--max-memory", "1MiB"]) == 2
    assert capsys.readouterr().err == (
        "netdsl train: error: --batch-size 1 needs 1.6 MiB to train (estimated), over --max-memory 1.0 MiB; "
        "not even a batch of 1 fits\n"
    )


def test_a_bad_max_memory_is_one_line(work, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "mlp.net", "--data", "digits.npz", "--max-memory", "12Gx"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "netdsl train: error: argument --max-memory: expected a size such as 12GiB or 800MB, received 12Gx"
    )


def test_a_bad_max_memory_setting_is_a_spec_error_at_it(work, capsys):
    (work / "mlp.net").write_text(MLP.replace('"16MiB"', '"lots"'), encoding="utf-8")
    assert main(["check", "mlp.net"]) == 1
    assert capsys.readouterr().err.splitlines()[:3] == [
        'mlp.net:9:18: error: max_memory is a size such as "12GiB" or "800MB", received "lots"; '
        "units: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB",
        '  max_memory = "lots"',
        "               ^^^^^^",
    ]


@pytest.mark.parametrize(
    "text, size",
    [
        ("12GiB", 12 * 2**30),
        ("800MB", 800 * 10**6),
        ("1.5 gib", 3 * 2**29),
        ("4096", 4096),
        ("2kB", 2000),
        ("12Gx", None),
        ("", None),
        ("0", None),
        ("-1GB", None),
        ("9" * 400 + "TiB", None),
    ],
)
def test_memory_sizes(text, size):
    assert memory_size(text) == size
