"""`netdsl summary` from the pure-Python inference: the same bytes as building with Keras, no backend imported.

Every model of every spec in specs/, and the cases below that freeze parts in
every way a spec can (a nested model, block instances, a shared layer,
`trainable=false`, a declared layer's frozen weight, batch norms' statistics),
is summarised twice: from `pipeline.inferred_splits` and from the Keras build
(`build`, today's path, what `--backend` still takes). The table and
the JSON must be equal; the cases that must fall back to Keras say so.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netdsl import pipeline, registry
from netdsl.model_report import summary_json, summary_table
from netdsl.semantics.trainable import non_trainable_params
from tests.registry.test_registry import _ESTIMATES, _count
from tests.support.reference_examples import examples, write_example

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.net"))

FINETUNE = """\
block stage(width) {
  input x
  output y = x -> conv2d(width, 3, padding="same") -> batch_norm -> relu
}

model backbone {
  input image: (16, 16, 3)
  output features = image -> stage(8) -> stage(16) -> global_avg_pool2d
}

layer fixed_affine(units=4) {
  input x
  weight kernel: (x.shape[-1], units)
  weight offset: (units,) init=zeros trainable=false
  output x @ kernel + offset
}

model finetune {
  input image: (16, 16, 3)
  input extra: (6,)
  f = image -> backbone
  h = image -> stage(4) -> stage(4) -> global_avg_pool2d
  shared proj = dense(5)
  e = extra -> proj -> dense(5, trainable=false) -> fixed_affine(4)
  e2 = extra -> proj
  output probs = (f, h, e) -> concatenate -> dense(3, activation=softmax)
  output aux = e2 -> batch_norm
  train {
    freeze = ["backbone", "h.stage*", "*proj"]
  }
}
"""

# (name, spec text, the models asked, whether the inference is sure of them)
CASES = [
    ("finetune", FINETUNE, ["finetune"], True),
    ("backbone", FINETUNE, ["backbone"], True),
    # finetune freezes backbone, the very Keras object backbone's own summary counts: left to Keras
    ("both", FINETUNE, ["backbone", "finetune"], False),
    (
        "nested_twice",
        """\
model tower {
  input x: (6,)
  output y = x -> dense(4) -> batch_norm
}
model twins {
  input a: (6,)
  input b: (6,)
  output d = (a -> tower, b -> tower) -> add -> dense(2, trainable=false)
  train {
    freeze = ["tower"]
  }
}
""",
        ["twins"],
        True,
    ),
    # a step of the nested model that no output uses: Keras leaves its weights out of the nested row
    (
        "dead_nested",
        """\
model inner {
  input x: (4,)
  side = x -> dense(7)
  output y = x -> dense(2) -> batch_norm
}
model outer {
  input x: (4,)
  output z = x -> inner -> dense(1)
}
""",
        ["outer"],
        True,
    ),
    (
        "dead_step",
        """\
model dead {
  input x: (4,)
  input unused: (3,)
  side = x -> dense(7) -> batch_norm
  output y = x -> dense(2)
}
""",
        ["dead"],
        True,
    ),
    (
        "wrappers",
        """\
model wrapped {
  input x: (5, 6)
  s = x -> spectral_normalization(dense(3))
  t = x -> time_distributed(batch_norm)
  output y = (s, t) -> concatenate -> bidirectional(lstm(4)) -> dense(2)
}
""",
        ["wrapped"],
        None,
    ),
    (
        "scale",
        """\
model scaled {
  input x: (4,)
  output y = x -> dense(3) -> scale(3.0) -> scale(0.5, trainable=true) -> batch_norm(center=false)
}
""",
        ["scaled"],
        True,
    ),
    (
        "lora",
        """\
model lora {
  input x: (4,)
  output y = x -> dense(8, lora_rank=2) -> dense(1)
}
""",
        ["lora"],
        False,
    ),
    (
        "mixed",
        """\
block two(width) {
  input x
  output y = x -> dense(width) -> batch_norm -> dense(width)
}
model mixed {
  input x: (4,)
  output y = x -> two(8) -> dense(3)
  train {
    loss = mse
    mixed_precision = "mixed_float16"
    freeze = ["y.two*"]
  }
}
""",
        ["mixed"],
        False,
    ),
]


def _keras_summaries(program, names: list[str]) -> tuple[list[str], list[str]]:
    analysis, models = pipeline.build(pipeline.LoadedSpec(program).models(names))
    splits = {name: pipeline.built_split(model) for name, model in models.items()}
    return (
        [summary_table(analysis.graphs[n], splits[n]) for n in names],
        [json.dumps(summary_json(analysis.graphs[n], splits[n]), indent=2) for n in names],
    )


def _inferred_summaries(program, names: list[str]) -> tuple[list[str], list[str]] | None:
    found = pipeline.inferred_splits(program, names)
    if found is None:
        return None
    return ([summary_table(*found[n]) for n in names], [json.dumps(summary_json(*found[n]), indent=2) for n in names])


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_every_spec_is_summarised_as_keras_counts_it(spec):
    names = pipeline.pick_models(pipeline.load(spec), None)
    inferred = _inferred_summaries(pipeline.load(spec), names)
    assert inferred is not None, "the inference is sure of every spec in specs/"
    assert inferred == _keras_summaries(pipeline.load(spec), names)


@pytest.mark.parametrize("case, text, names, sure", CASES, ids=[c[0] for c in CASES])
def test_frozen_parts_are_counted_as_keras_counts_them(tmp_path, case, text, names, sure):
    path = tmp_path / f"{case}.net"
    path.write_text(text)
    inferred = _inferred_summaries(pipeline.load(path), names)
    if sure is not None:
        assert (inferred is not None) == sure
    if inferred is not None:
        assert inferred == _keras_summaries(pipeline.load(path), names)


def test_the_frozen_line_follows_keras_layer_order(tmp_path):
    path = tmp_path / "finetune.net"
    path.write_text(FINETUNE)
    table = _inferred_summaries(pipeline.load(path), ["finetune"])[0][0]
    assert table.splitlines()[-3:] == [
        "params: 1,964 (trainable 105, non-trainable 1,859)",
        "frozen: h.stage.y.conv2d, h.stage.y.batch_norm, h.stage_2.y.conv2d, h.stage_2.y.batch_norm, proj, e.dense, ~",
        "outputs: probs (3,), aux (5,)",
    ]


_NO_BACKEND = (
    "import sys\nfrom netdsl.cli import main\ncode = main(sys.argv[1:])\n"
    "print(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))\nsys.exit(code)\n"
)


@pytest.mark.parametrize(
    "spec, flags",
    [
        ("specs/lightning_mlp.net", []),
        ("finetune.net", ["--model", "finetune"]),
        ("finetune.net", ["--model", "finetune", "--json"]),
    ],
)
def test_summary_imports_no_backend(tmp_path, spec, flags):
    (tmp_path / "finetune.net").write_text(FINETUNE)
    target = ROOT / spec if spec.startswith("specs/") else tmp_path / spec
    done = subprocess.run(
        [sys.executable, "-c", _NO_BACKEND, "summary", str(target), *flags],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1] == "[]"
    with_keras = subprocess.run(
        [sys.executable, "-m", "netdsl.cli", "summary", str(target), *flags, "--backend", "tensorflow"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert with_keras.returncode == 0, with_keras.stderr[-2000:]
    assert done.stdout.splitlines()[:-1] == with_keras.stdout.splitlines()


def _pair(name: str, **kwargs):
    return registry.lookup("layer", name), kwargs


# Every layer the registry counts, as tests/registry's count checks build them, a frozen one, and wrappers.
_LAYERS = [
    *_ESTIMATES,
    ("dense", {"units": 4, "trainable": False}, [(3,)]),
    ("batch_normalization", {"trainable": False}, [(8, 6)]),
    ("residual", {"filters": 4, "stride": 2}, [(8, 8, 3)]),
    ("normalization", {}, [(8, 9, 3)]),  # its adapted mean, variance and count (an EfficientNet's first layer)
    ("normalization", {"mean": [1.0, 2.0, 3.0], "variance": [1.0, 1.0, 1.0]}, [(8, 9, 3)]),  # none
    ("time_distributed", {"layer": _pair("batch_normalization")}, [(5, 6)]),
    ("time_distributed", {"layer": _pair("dense", units=3, trainable=False)}, [(5, 6)]),
    ("bidirectional", {"layer": _pair("lstm", units=4)}, [(None, 6)]),
    ("spectral_normalization", {"layer": _pair("dense", units=3)}, [(6,)]),
    ("spectral_normalization", {"layer": _pair("conv2d", filters=4, kernel_size=3)}, [(8, 8, 2)]),
]


@pytest.mark.parametrize("name, kwargs, shapes", _LAYERS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(_LAYERS)])
def test_non_trainable_params_match_keras(name, kwargs, shapes):
    import keras

    from netdsl.backend.builder import keras_value
    from netdsl.custom import factory

    entry = registry.lookup("layer", name)
    counted = non_trainable_params(entry, kwargs, shapes)
    if kwargs.get("lora_rank"):
        assert counted is None  # Keras freezes the kernel under LoRA: left to Keras
        return
    built = {
        k: factory.keras_object(v[0])(**v[1])
        if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], registry.Entry)
        else keras_value(v)
        for k, v in kwargs.items()
    }
    layer = factory.keras_object(entry)(**built)
    _count(keras, layer, shapes)
    assert counted == sum(int(np.prod(w.shape)) for w in layer.non_trainable_weights)


_REFERENCE = [(case, code) for case, lang, code in examples() if lang != "text" and re.search(r"^model ", code, re.M)]


@pytest.mark.slow
@pytest.mark.parametrize("case, code", _REFERENCE, ids=[c for c, _ in _REFERENCE])
def test_language_reference_examples_are_summarised_as_keras_counts_them(tmp_path, case, code):
    program = pipeline.load(write_example(tmp_path, code))
    names = pipeline.pick_models(program, None)
    inferred = _inferred_summaries(program, names)
    if inferred is None:
        pytest.skip("the inference is unsure of it (or it has errors): summary builds it with Keras, as before")
    assert inferred == _keras_summaries(pipeline.load(write_example(tmp_path, code)), names)


def test_library_summary_imports_no_backend():
    code = (
        "import sys, netdsl\nfound = netdsl.summary('specs/resnet50.net')['resnet50']\n"
        "print(found['params'], found['trainable_params'], found['non_trainable_params'])\n"
        "print(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == ["25636712 25583592 53120", "[]"]  # Keras' ResNet50: 25,583,592 trainable


def test_a_chain_of_thousands_of_layers_is_summarised_without_keras(tmp_path):
    """3,000 dense layers in a row: the layer order Keras lists is walked with a stack, not recursion (a recursive
    walk ran out of Python's stack, so summary fell back to a Keras build: 72 s of CPU for 10,000 layers, then
    the same error in Keras)."""
    lines = ["model chain {", "  input h0: (8,)"]
    lines += [f"  h{i} = h{i - 1} -> dense(8)" for i in range(1, 3001)]
    spec = tmp_path / "chain.net"
    spec.write_text("\n".join([*lines, "  output y = h3000", "}", ""]))
    done = subprocess.run(
        [sys.executable, "-c", _NO_BACKEND, "summary", str(spec), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1] == "[]"  # no backend imported
    numbers = json.loads("\n".join(done.stdout.splitlines()[:-1]))["chain"]
    assert (numbers["params"], numbers["trainable_params"], numbers["layers"]) == (3000 * (8 * 8 + 8), 3000 * 72, 3000)
