"""Write the zoo's backbone specs (dsl/netdsl/zoo/specs/NAME.net) with netdsl's own decompiler:
development time only (it builds every keras.applications model).

Each family's `keras.applications.X(weights=None, include_top=False)` is decompiled, the spec
rebuilt and checked to be the same model (layer classes, weight shapes, outputs with the same
weights: `decompiler.verify`), and written with a header saying what it is. A family the
decompiler cannot prove is reported and not written.

Each spec ends with the family's `preprocess_input` as a block of its own, `NAME_preprocess`.
Beside each spec, NAME.names.json maps the spec's layer names to keras.applications' own
(`Conv1`, `conv4_block6_out`): netdsl gives a zoo backbone's layers Keras' names, so that
`freeze`, `summary` and `model.get_layer` use the names users know. Written by pairing the
two models' layers in order, which must be of the same classes one for one.

    python scripts/zoo_specs.py [NAME ...]                # specs, preprocessing blocks and names
    python scripts/zoo_specs.py --names [NAME ...]        # the names only, of the specs there are
    python scripts/zoo_specs.py --preprocess [NAME ...]   # the preprocessing blocks only
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import keras

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))

import netdsl  # noqa: E402
from netdsl.decompiler.verify import verify_round_trip  # noqa: E402
from netdsl.zoo.catalog import BY_NAME, FAMILIES, PREPROCESS  # noqa: E402

SPECS = ROOT / "dsl" / "netdsl" / "zoo" / "specs"


def header(family, model) -> str:
    return (
        f"# {family.name}: keras.applications.{family.constructor}(include_top=False), decompiled by\n"
        f"# netdsl (scripts/zoo_specs.py) and checked to be the same model. {model.count_params():,} parameters.\n"
        f'# ImageNet weights: init = {{"{family.name}": "zoo:{family.name}"}}\n'
        f"# (fetched once: `netdsl zoo fetch {family.name}`).\n"
        f"# Trained at {family.input_size}x{family.input_size}; any size of at least 32 works.\n"
        f"# Pixels in: {PREPROCESS[family.preprocess]}.\n\n"
    )


def write(name: str) -> bool:
    family = BY_NAME[name]
    keras.backend.clear_session(free_memory=False)
    model = getattr(keras.applications, family.constructor)(weights=None, include_top=False)
    text = netdsl.decompile(model)
    # the backbone is the last model of the text; any before it are models it nests (ConvNeXt's stem)
    last = list(re.finditer(r"^model (\w+) \{", text, flags=re.M))[-1]
    text = text[: last.start(1)] + family.name + text[last.end(1) :]
    # Checked at the family's own size: an input of any size (none, none) is fed 1x1 pictures by the check.
    # The same model (its layers' configurations) on pictures of that size, not the application built for
    # it: keras.applications pads some strided convolutions by the size it is built for (`correct_pad`;
    # EfficientNetB1's block6a at 240x240), and the spec is the model of any size, as `include_top=False`
    # without an input shape gives it.
    size = family.input_size
    sized = keras.models.clone_model(model, input_tensors=keras.Input((size, size, 3)))
    sized.set_weights(model.get_weights())
    calibrated_batch_norms(sized, size)
    result, _ = verify_round_trip(sized, text.replace("(none, none, 3)", f"({size}, {size}, 3)", 1))
    if not result.ok:
        print(f"{name}: not the same model:", *result.lines(), sep="\n  ", flush=True)
        return False
    SPECS.mkdir(exist_ok=True)
    (SPECS / f"{name}.net").write_text(header(family, model) + text, encoding="utf-8")
    print(f"{name}: {len(text.splitlines())} lines", flush=True)
    return write_preprocess(name) and write_names(name, model)


def calibrated_batch_norms(model: keras.Model, size: int) -> None:
    """Batch norms' moving statistics those of a batch of pictures (one call in training mode, momentum 0):
    with their initial ones (mean 0, variance 1) the activations of the deeper families overflow float32
    on random pictures (EfficientNetB1's output was inf), and the outputs could not be compared."""
    import numpy as np

    norms = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.BatchNormalization)]
    momenta = [layer.momentum for layer in norms]
    for layer in norms:
        layer.momentum = 0.0
    model(np.random.default_rng(3).uniform(0, 255, (4, size, size, 3)).astype("float32"), training=True)
    for layer, momentum in zip(norms, momenta):
        layer.momentum = momentum


# Each family's `preprocess_input` as a block of the spec (`image -> resnet50_preprocess -> resnet50`): pictures
# of 0..255 in, as keras.applications' imagenet_utils computes them (tests/zoo/test_backbone.py holds them equal).
PREPROCESS_STEPS = {
    "caffe": "x[..., ::-1] -> normalization(mean=[103.939, 116.779, 123.68], variance=[1, 1, 1])",
    "tf": "x -> rescaling(1 / 127.5, offset=-1)",
    "torch": (
        "x -> rescaling(1 / 255)\n"
        "               -> normalization(mean=[0.485, 0.456, 0.406], variance=[0.052441, 0.050176, 0.050625])"
    ),
    "none": "x",
}
PREPROCESS_MARK = "\n# keras.applications' preprocess_input for this family, as steps: pictures of 0..255 in.\n"


def write_preprocess(name: str) -> bool:
    """Append (or write again) the family's `NAME_preprocess` block at the end of its spec."""
    family = BY_NAME[name]
    path = SPECS / f"{name}.net"
    text = path.read_text(encoding="utf-8").split(PREPROCESS_MARK)[0].rstrip("\n") + "\n"
    block = (
        f"{PREPROCESS_MARK}# {PREPROCESS[family.preprocess]}.\n"
        f"block {name}_preprocess() {{\n  input x\n  output y = {PREPROCESS_STEPS[family.preprocess]}\n}}\n"
    )
    path.write_text(netdsl.format(text=text + block, filename=str(path)), encoding="utf-8")  # in fmt's layout
    print(f"{name}: {name}_preprocess ({family.preprocess})", flush=True)
    return True


def write_names(name: str, theirs: keras.Model | None = None) -> bool:
    """NAME.names.json: {the spec's layer name: keras.applications' name}, for the layers whose names differ."""
    family = BY_NAME[name]
    if theirs is None:
        keras.backend.clear_session(free_memory=False)
        theirs = getattr(keras.applications, family.constructor)(weights=None, include_top=False)
    names = SPECS / f"{name}.names.json"
    names.unlink(missing_ok=True)  # the spec's own names are the ones to pair
    built = netdsl.build(SPECS / f"{name}.net", model=name)
    # Arithmetic on tensors (MobileNetV3's hard sigmoid, `x + 3`; ConvNeXt's `inputs + x`) is an operation of the
    # functional graph in keras.applications, not a layer of model.layers; netdsl makes it a layer (TensorOp, or
    # Add for the sum of two tensors): unpaired, where the application has no layer of that class.
    known = {type(layer).__name__ for layer in theirs.layers}
    ours = [layer for layer in built.layers if type(layer).__name__ not in OPERATOR_LAYERS - known]
    classes = [kind(layer) for layer in ours], [kind(layer) for layer in theirs.layers]
    if classes[0] != classes[1]:
        print(f"{name}: the layers are not of the same classes one for one: no names written", flush=True)
        return False
    renamed = {a.name: b.name for a, b in zip(ours, theirs.layers) if a.name != b.name}
    names.write_text(json.dumps(renamed, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{name}: {len(renamed)} of {len(built.layers)} layers renamed", flush=True)
    return True


OPERATOR_LAYERS = {"TensorOp", "Add", "Subtract", "Multiply"}  # what a spec's operators on tensors build


def kind(layer: keras.Layer) -> str:
    """A layer's class; a nested model is a model (ConvNeXt's stem: Keras' `Sequential`, netdsl's functional model)."""
    return "Model" if isinstance(layer, keras.Model) else type(layer).__name__


def written(name: str) -> bool:
    try:
        return write(name)
    except netdsl.NetdslError as exc:  # a layer the decompiler does not know
        print(f"{name}: not decompiled: {str(exc).splitlines()[0]}", flush=True)
        return False


if __name__ == "__main__":
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or [f.name for f in FAMILIES]
    if flags:  # --names, --preprocess: only those, for the specs there are
        names = [name for name in names if (SPECS / f"{name}.net").is_file()]
        steps = [step for flag, step in (("--preprocess", write_preprocess), ("--names", write_names)) if flag in flags]
        failed = [name for name in names if not all(step(name) for step in steps)]
    else:
        failed = [name for name in names if not written(name)]
    sys.exit(1 if failed else 0)
