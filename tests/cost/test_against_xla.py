"""The cost model against the compiler (issue 31): netdsl's forward FLOPs and memory peaks, counted in pure
Python, beside XLA's own figures for the same model built with Keras (JAX on the CPU): its count
(`jax.jit(...).lower(x).compile().cost_analysis()["flops"]`) and `memory_analysis()`'s peak of the
inference call and of a training step. docs/cost.md states where the two conventions differ:

- a multiply-add is 2 FLOPs on both sides, a bias add, a ReLU, an add, a max of two 1 each;
- netdsl counts every tap of a convolution's kernel (its configuration's count, the figure papers
  quote); XLA skips the taps that land on "same" padding's zeros: netdsl says how many
  (`padding_macs`), and less those, the two agree to a few FLOPs;
- transcendental functions (exp, tanh) XLA counts apart (`transcendentals`), netdsl in its FLOPs;
- memory: XLA's peak is its arguments + outputs + temporaries - the outputs written over donated
  arguments (`tests/support/xla_cost.py`); netdsl's inference and training peaks are to be within 25% of
  it for every model of specs/, but for the exceptions `MEMORY_EXCEPTIONS` names with why.

Each spec is compiled once, at a batch of `BATCH` (XLA's FLOPs are per batch: divided by it, a sample's).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netdsl import pipeline
from netdsl.cost import ModelCost, model_cost

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
BATCH = 8
SOURCES = (
    "lightning_mlp.net",
    "multi_output.net",
    "siamese.net",
    "custom_layers.net",
    "declared.net",
    "transformer.net",
)
# minutes of compiling on a CPU: marked slow
LARGE = ("unet.net", "mobilenet_v2.net", "resnet50.net")
# the keras.io examples: their inference call only (compiling their training steps too took 55 CPU seconds
# more, a minute of make test's wall time on two cores; the training rules are held by the specs above).
# keras_io/lstm_seq2seq.net is left out: its sequences' lengths vary (None), so neither side has a size to count.
KERAS_IO = (
    "keras_io/fnet.net",
    "keras_io/gmlp.net",
    "keras_io/image_classification_from_scratch.net",
    "keras_io/mlp_mixer.net",
    "keras_io/siamese_contrastive.net",
    "keras_io/text_transformer.net",
)
MEMORY_TOLERANCE = 0.25
# (spec, model, "inference" | "training") -> netdsl's peak / XLA's, as measured, and why it is outside 25%
MEMORY_EXCEPTIONS = {
    ("keras_io/siamese_contrastive.net", "siamese", "inference"): (
        0.70,
        "XLA's scheduler runs the two towers' layers side by side, both towers' activations alive at once; "
        "netdsl walks the steps in the spec's order, one tower after the other",
    ),
    ("keras_io/gmlp.net", "gmlp", "inference"): (
        0.67,
        "XLA keeps re-laid-out copies of dense kernels and the resize's interpolation matrices beside the "
        "activations; netdsl counts each weight once and the resize as its output",
    ),
}


def _measured(folder: Path, sources: tuple[str, ...], forward: bool = False) -> dict[str, dict[str, dict[str, float]]]:
    """XLA's figures for every model of `sources` at a batch of BATCH, the inference call and a training step
    (`forward`: the call only): one process, each model jit-compiled on the CPU once for each."""
    flags = ["--forward"] if forward else []
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.xla_cost",
            *flags,
            str(BATCH),
            str(folder),
            *(str(SPECS / s) for s in sources),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, dict[str, dict[str, float]]] = json.loads(done.stdout.splitlines()[-1])
    return found


def _flops(measured: dict[str, dict[str, dict[str, float]]]) -> dict[str, float]:
    return {name: found["inference"]["flops"] / BATCH for name, found in measured.items()}


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, dict[str, dict[str, float]]]:
    return _measured(tmp_path_factory.mktemp("xla"), SOURCES)


@pytest.fixture(scope="module")
def xla(measured) -> dict[str, float]:
    return _flops(measured)


@pytest.fixture(scope="module")
def measured_large(tmp_path_factory) -> dict[str, dict[str, dict[str, float]]]:
    return _measured(tmp_path_factory.mktemp("xla_large"), LARGE)


@pytest.fixture(scope="module")
def measured_keras_io(tmp_path_factory) -> dict[str, dict[str, dict[str, float]]]:
    return _measured(tmp_path_factory.mktemp("xla_keras_io"), KERAS_IO, forward=True)


def _ours(spec: str, name: str, batch: int = 1) -> ModelCost:
    graphs = pipeline.checked_graphs(pipeline.load(SPECS / spec), [name])
    pipeline.unsure_models(graphs)
    return model_cost(graphs[name], batch=batch)


def _models(sources: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(spec, name) for spec in sources for name in pipeline.load(SPECS / spec).model_names]


def _memory_ratios(spec: str, name: str, measured: dict[str, dict[str, dict[str, float]]]) -> dict[str, float]:
    ours = _ours(spec, name, batch=BATCH)
    figures = {"inference": ours.inference_memory_bytes, "training": ours.train_memory_bytes}
    return {call: figures[call] / found["peak_bytes"] for call, found in measured[name].items()}


def _assert_within(spec: str, name: str, ratios: dict[str, float]) -> None:
    for call, ratio in ratios.items():
        exception = MEMORY_EXCEPTIONS.get((spec, name, call))
        if exception is not None:  # still as measured: a change in either side shows here
            assert abs(ratio - exception[0]) < 0.05, (name, call, ratio, exception)
        else:
            assert abs(ratio - 1) <= MEMORY_TOLERANCE, (name, call, round(ratio, 3))


def test_the_mlp_is_exactly_xlas_count(xla):
    ours = _ours("lightning_mlp.net", "lightning_mlp")
    assert ours.flops == xla["lightning_mlp"] == 203_530  # 2 x 101,632 MACs + 138 bias adds + 128 ReLUs


def test_a_cnn_is_xlas_count_but_for_the_taps_on_same_padding(xla):
    ours = _ours("multi_output.net", "detector")  # "same" 3x3 convolutions, max pools, two dense heads
    assert ours.padding_macs == 7_810_688
    assert abs(ours.flops - xla["detector"]) / xla["detector"] < 0.06  # 310.3 M against 294.6 M: +5.3%
    # less the padding taps, a softmax's and a sigmoid's few exponentials (XLA's transcendentals) apart
    assert abs(ours.flops - 2 * ours.padding_macs - xla["detector"]) <= 32


def test_a_shared_tower_is_counted_at_each_use(xla):
    ours = _ours("siamese.net", "siamese")  # one encoder (conv-BN-ReLU stages) applied to both images
    assert abs(ours.flops - xla["siamese"]) / xla["siamese"] < 0.10  # 15.66 M against 14.27 M: +9.7%
    assert abs(ours.flops - 2 * ours.padding_macs - xla["siamese"]) / xla["siamese"] < 1e-4  # 574 FLOPs apart


def test_netdsls_residual_layer_less_its_padding_taps_is_within_two_percent(xla):
    ours = _ours("custom_layers.net", "residual_net")  # 25.29 M, of which 1.85 M on padding; XLA 23.89 M
    assert abs(ours.flops - 2 * ours.padding_macs - xla["residual_net"]) / xla["residual_net"] < 0.02


@pytest.mark.parametrize(
    "spec, name",
    [
        ("custom_layers.net", "linear_mlp"),
        ("custom_layers.net", "multiply"),
        ("custom_layers.net", "activations"),
        ("custom_layers.net", "attention_example"),
        ("custom_layers.net", "residual_net"),
        ("declared.net", "declared_mlp"),
        ("declared.net", "declared_attention"),
        ("transformer.net", "transformer"),
    ],
)
def test_custom_and_declared_layers_attention_and_a_resnet_block_are_within_ten_percent(xla, spec, name):
    ours = _ours(spec, name)
    assert abs(ours.flops - xla[name]) / xla[name] < 0.10, (ours.flops, xla[name])


@pytest.mark.parametrize("spec, name", _models(SOURCES))
def test_memory_peaks_are_within_a_quarter_of_xlas(measured, spec, name):
    _assert_within(spec, name, _memory_ratios(spec, name, measured))


def test_a_cnns_training_peak_counts_what_its_backward_pass_keeps(measured):
    """The detector's conv-ReLU stages: each convolution keeps its pre-activation sum (ReLU's derivative reads
    it) beside its output (the next convolution's input), and each max pool an int32 index per axis of its
    input for its gradient, as XLA does; counting every output once, as netdsl did, was 47% of XLA's peak."""
    ours = _ours("multi_output.net", "detector", batch=BATCH)
    first_conv = next(s for s in ours.steps if s.kind == "conv2d")
    assert first_conv.kept_bytes == 2 * first_conv.output_bytes
    pool = next(s for s in ours.steps if s.kind == "max_pooling2d")
    assert pool.kept_bytes == pool.output_bytes + 4 * 4 * 64 * 64 * 32  # indices of its (64, 64, 32) input
    assert _memory_ratios("multi_output.net", "detector", measured)["training"] == pytest.approx(1, abs=0.1)


@pytest.mark.slow
def test_the_large_specs_are_within_ten_percent_and_less_padding_within_one(measured_large):
    measured = _flops(measured_large)
    for spec, name in (("unet.net", "unet"), ("mobilenet_v2.net", "mobilenet_v2"), ("resnet50.net", "resnet50")):
        ours = _ours(spec, name)
        assert abs(ours.flops - measured[name]) / measured[name] < 0.10, (name, ours.flops, measured[name])
        assert abs(ours.flops - 2 * ours.padding_macs - measured[name]) / measured[name] < 0.01, name


@pytest.mark.slow
@pytest.mark.parametrize("spec, name", _models(LARGE))
def test_the_large_specs_memory_peaks_are_within_a_quarter_of_xlas(measured_large, spec, name):
    _assert_within(spec, name, _memory_ratios(spec, name, measured_large))


@pytest.mark.slow
@pytest.mark.parametrize("spec, name", _models(KERAS_IO))
def test_the_keras_io_examples_inference_peaks_are_within_a_quarter_of_xlas(measured_keras_io, spec, name):
    ratios = _memory_ratios(spec, name, measured_keras_io)
    assert list(ratios) == ["inference"]
    _assert_within(spec, name, ratios)
