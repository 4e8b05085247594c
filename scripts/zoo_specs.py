"""Write the zoo's backbone specs (dsl/netdsl/zoo/specs/NAME.net) with netdsl's own decompiler:
development time only (it builds every keras.applications model).

Each family's `keras.applications.X(weights=None, include_top=False)` is decompiled, the spec
rebuilt and checked to be the same model (layer classes, weight shapes, outputs with the same
weights: `decompiler.verify`), and written with a header saying what it is. A family the
decompiler cannot prove is reported and not written.

    python scripts/zoo_specs.py [NAME ...]
"""

from __future__ import annotations

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
    text = re.sub(r"^model \w+ \{", f"model {family.name} {{", text, count=1, flags=re.M)
    # Checked at the family's own size: an input of any size (none, none) is fed 1x1 pictures by the check.
    size = family.input_size
    sized = keras.applications.__dict__[family.constructor](
        weights=None, include_top=False, input_shape=(size, size, 3)
    )
    sized.set_weights(model.get_weights())
    result, _ = verify_round_trip(sized, text.replace("(none, none, 3)", f"({size}, {size}, 3)", 1))
    if not result.ok:
        print(f"{name}: not the same model:", *result.lines(), sep="\n  ", flush=True)
        return False
    SPECS.mkdir(exist_ok=True)
    (SPECS / f"{name}.net").write_text(header(family, model) + text, encoding="utf-8")
    print(f"{name}: {len(text.splitlines())} lines", flush=True)
    return True


def written(name: str) -> bool:
    try:
        return write(name)
    except netdsl.NetdslError as exc:  # a layer the decompiler does not know (ConvNeXt's LayerScale)
        print(f"{name}: not decompiled: {str(exc).splitlines()[0]}", flush=True)
        return False


if __name__ == "__main__":
    names = sys.argv[1:] or [family.name for family in FAMILIES]
    failed = [name for name in names if not written(name)]
    sys.exit(1 if failed else 0)
