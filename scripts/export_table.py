"""Measure which models export to which format, and print docs/export.md's table rows.

    python scripts/export_table.py                      # every model of every spec in specs/
    python scripts/export_table.py --applications       # keras.applications families (weights=None)
    python scripts/export_table.py --applications --size 64 --formats saved_model litert
    python scripts/export_table.py specs/unet.net       # some specs only

Each model is exported with fresh weights to onnx, saved_model and litert and checked
in its runtime (`netdsl.export(..., verify=True)`), exactly as `netdsl export` does;
a cell holds the largest difference over the outputs, or the one-line refusal, and
the seconds the export and its check took.
Slow (minutes per ImageNet-sized model and format): run by hand after a change to
netdsl/deploy/ or to the converters' versions, and paste the rows into the docs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
FORMATS = ("onnx", "saved_model", "litert")
APPLICATIONS = ("ResNet50", "MobileNetV2", "EfficientNetB0", "DenseNet121")


def cell(model, fmt: str, folder: Path) -> str:
    import netdsl
    from netdsl.deploy import export_model

    start = time.perf_counter()
    try:
        exported = export_model(model, format=fmt, out=folder / f"m.{fmt}", quiet=True)
    except netdsl.NetdslError as exc:
        return f"refused: {exc}"
    seconds = time.perf_counter() - start
    checks = exported.verification.outputs
    weak = "" if all(c.varies for c in checks) else " (constant output)"
    return f"{max(c.largest for c in checks):.1e}{weak} ({seconds:.0f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", type=Path)
    parser.add_argument("--applications", action="store_true")
    parser.add_argument("--size", type=int, help="the applications' image size (default: their 224)")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    args = parser.parse_args()
    import keras

    import netdsl
    from netdsl.syntax.loader import pick_models

    if args.applications:
        shape = None if args.size is None else (args.size, args.size, 3)
        models = [
            (
                f"keras.applications.{name}",
                lambda n=name: getattr(keras.applications, n)(weights=None, input_shape=shape),
            )
            for name in APPLICATIONS
        ]
    else:
        specs = args.specs or sorted((ROOT / "specs").glob("*.net"))
        models = [
            (f"{spec.name}: {name}", lambda s=spec, n=name: netdsl.build(s, n))
            for spec in specs
            for name in pick_models(netdsl.parse_file(spec), None)
        ]
    with tempfile.TemporaryDirectory(prefix="netdsl-export-table-") as tmp:
        for label, make in models:
            model = make()
            cells = [cell(model, fmt, Path(tmp)) for fmt in args.formats]
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
