"""The check of an exported file in its own runtime: seeded inputs through Keras and through the file.

    onnx          onnxruntime.InferenceSession (CPU)
    saved_model   tf.saved_model.load(...).signatures["serving_default"]
    litert        ai_edge_litert's Interpreter, signature runner "serving_default"

Inputs are seeded (or the first DATA_ROWS samples of the user's `--data`): floats
from a standard normal, integers in [0, the smallest embedding vocabulary) so token
ids stay valid, a batch of 3 (not 1: the batch axis must really be open), sizes a
spec leaves open set to 32. An output passes when
|exported - keras| <= tol + tol * |keras| everywhere (`numpy.allclose`); the report
gives the largest absolute difference per output, and says when Keras' output was the
same for every sample (deep nets with fresh weights can end in a constant softmax),
where equal outputs prove little.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from netdsl.deploy.formats import Format
from netdsl.training.data.signature import Signature

if TYPE_CHECKING:
    import keras

BATCH = 3
OPEN_SIZE = 32  # a size the spec leaves open (an image's height, say)
SEED = 0
DATA_ROWS = 32  # `--verify --data SRC`: the first batch of the user's data (fewer when it holds fewer)


@dataclass(frozen=True)
class OutputCheck:
    name: str
    largest: float  # the largest |exported - keras|
    ok: bool
    varies: bool = True  # False: Keras gave the same value for every sample, so the comparison says little


@dataclass(frozen=True)
class Verification:
    format: Format
    outputs: tuple[OutputCheck, ...]
    problem: str | None = None  # names or shapes the runtime gave back differently

    @property
    def ok(self) -> bool:
        return self.problem is None and all(check.ok for check in self.outputs)

    def lines(self) -> list[str]:
        tol = self.format.tolerance
        lines = [
            f"output '{c.name}': largest difference {c.largest:.2e} (tolerance {tol:g}) "
            f"{'ok' if c.ok else 'TOO LARGE'}"
            + ("" if c.varies else "; note: the same for every input, a weak check (fresh weights?)")
            for c in self.outputs
        ]
        return lines + ([self.problem] if self.problem else [])

    def failure(self) -> str:
        """The one line `--verify` ends with when the check failed."""
        if self.problem:
            return f"the {self.format.name} file does not match the Keras model: {self.problem}"
        bad = next(c for c in self.outputs if not c.ok)
        return (
            f"the {self.format.name} file differs from the Keras model on output '{bad.name}' by "
            f"{bad.largest:.2e} (tolerance {self.format.tolerance:g}, checked in {self.format.runtime})"
        )


def sample_inputs(model: keras.Model, batch: int = BATCH, seed: int = SEED) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    vocab = min(
        (int(layer.input_dim) for layer in _all_layers(model) if type(layer).__name__ == "Embedding"), default=2
    )
    inputs = {}
    for spec in Signature.of(model).inputs:
        shape = (batch, *(OPEN_SIZE if d is None else d for d in spec.shape))
        if spec.is_integer:
            inputs[spec.name] = rng.integers(0, vocab, size=shape).astype(spec.dtype)
        elif spec.dtype == "bool":
            inputs[spec.name] = rng.integers(0, 2, size=shape).astype(bool)
        elif spec.dtype == "string":  # sentences of words drawn from the model's own vocabulary, when it has one
            words = _vocabulary_words(model) or ["the", "a", "text"]
            texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 12)))) for _ in range(math.prod(shape))]
            inputs[spec.name] = np.array(texts, dtype=object).reshape(shape)
        else:
            inputs[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
    return inputs


def _vocabulary_words(model: keras.Model) -> list[str]:
    """A few words of the first adapted text_vectorization's vocabulary (its padding and [UNK] left out)."""
    for layer in _all_layers(model):
        if type(layer).__name__ == "TextVectorization":
            return [str(w) for w in layer.get_vocabulary()[2:50]]
    return []


def _all_layers(model: keras.Model) -> list:
    """Every layer, those of nested models included."""
    found = []
    for layer in model.layers:
        found.append(layer)
        if hasattr(layer, "layers"):
            found += _all_layers(layer)
    return found


def keras_outputs(model: keras.Model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from netdsl.deploy.serving import forward

    result = forward(model)(*inputs.values())
    return {name: np.asarray(value) for name, value in result.items()}


def run_exported(fmt: Format, path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The exported file's outputs on `inputs`, computed in the format's own runtime."""
    from netdsl.deploy.exported_runtime import load

    return load(path, fmt).run(inputs)


def data_inputs(
    model: keras.Model, data: Any, batch: int = DATA_ROWS, metadata: Mapping[str, str] | None = None
) -> dict[str, np.ndarray]:
    """The first `batch` samples of the user's data (read as `predict` reads it: by input name, a CSV
    by the columns the export records, `metadata`)."""
    from netdsl.deploy.formats import recorded_names
    from netdsl.training.data.source import open_source
    from netdsl.training.errors import DataError

    signature = Signature.of(model)
    names = recorded_names(metadata or {}, signature.output_names)
    source = open_source(data, signature, need_targets=False, names=names)
    if source.n == 0:
        raise DataError("no samples to verify with", file=getattr(source, "origin", None))
    inputs, _ = next(source.batches(np.arange(min(source.n, batch)), batch, with_targets=False))
    return inputs


def compare(fmt: Format, expected: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> Verification:
    if sorted(got) != sorted(expected):
        return Verification(fmt, (), f"outputs {sorted(got)} where the model has {sorted(expected)}")
    checks: list[OutputCheck] = []
    for name, want in expected.items():
        have = got[name]
        if have.shape != want.shape:
            return Verification(fmt, tuple(checks), f"output '{name}' has shape {have.shape}, not {want.shape}")
        want64, have64 = want.astype(np.float64), have.astype(np.float64)
        largest = float(np.max(np.abs(have64 - want64), initial=0.0))
        ok = bool(np.allclose(have64, want64, rtol=fmt.tolerance, atol=fmt.tolerance))
        varies = bool(want64.shape[0] > 1 and np.any(want64 != want64[:1]))
        checks.append(OutputCheck(name, largest, ok, varies))
    return Verification(fmt, tuple(checks))


def check_file(
    model: keras.Model, fmt: Format, path: Path, data: Any = None, metadata: Mapping[str, str] | None = None
) -> Verification:
    """Seeded inputs (or the first samples of `data`, read by the columns `metadata` records) through Keras
    and through the file."""
    inputs = sample_inputs(model) if data is None else data_inputs(model, data, metadata=metadata)
    try:
        got = run_exported(fmt, path, inputs)
    except Exception as exc:  # the runtime refuses the file or the inputs: that is the finding
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return Verification(fmt, (), f"it does not run in {fmt.runtime}: {lines[0] if lines else type(exc).__name__}")
    return compare(fmt, keras_outputs(model, inputs), got)
