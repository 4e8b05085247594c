"""List the TensorFlow ops of netdsl's SavedModel exports: how deploy/saved_model_ops.py's allow-list was built.

    python scripts/saved_model_ops.py                    # every model of specs/*.net and tests/fixtures/deploy/*.net
    python scripts/saved_model_ops.py specs/unet.net     # some specs only
    python scripts/saved_model_ops.py --check            # exit 1 when an export holds an op outside the allow-list

Each model is exported with fresh weights, as `netdsl export --format saved_model --no-verify`
writes it, and its `saved_model.pb` read by the scanner `predict`/`evaluate` use
(`saved_model_ops.read_graph_ops`). Printed: the union of the ops the signatures run and of
the ops only the saver's functions hold, each with the first model that holds it, and the
ops outside `ALLOWED_OPS`/`SAVER_OPS`. Slow (minutes: resnet50 and mobilenet_v2 are
ImageNet-sized): run by hand after a change to the layers netdsl builds or to TensorFlow's
version, and edit the allow-list by what it prints (only ops that compute on tensors in memory).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="exit 1 when an op is outside the allow-list")
    args = parser.parse_args()
    import netdsl
    from netdsl.deploy import export_model
    from netdsl.deploy.saved_model_ops import ALLOWED_OPS, SAVER_OPS, read_graph_ops
    from netdsl.syntax.loader import pick_models

    specs = args.specs or [
        *sorted((ROOT / "specs").glob("*.net")),
        *sorted((ROOT / "tests" / "fixtures" / "deploy").glob("*.net")),
    ]
    run: dict[str, str] = {}
    saver: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="netdsl-saved-model-ops-") as tmp:
        for spec in specs:
            for name in pick_models(netdsl.parse_file(spec), None):
                label = f"{spec.name}: {name}"
                folder = Path(tmp) / f"{spec.stem}-{name}"
                export_model(spec, model=name, format="saved_model", out=folder, check=False, quiet=True)
                found = read_graph_ops(folder)
                for op in sorted(found.ops):
                    run.setdefault(op, label)
                for op in sorted(found.saver_ops):
                    saver.setdefault(op, label)
                print(
                    f"{label}: {len(found.ops)} ops, {len(found.saver_ops)} in the saver only; "
                    f"outside the allow-list: {', '.join(found.refused()) or 'none'}",
                    flush=True,
                )
    print(f"\nops the signatures run ({len(run)}):")
    print("\n".join(f"  {op:32} {label}" for op, label in sorted(run.items())))
    only_saver = {op: label for op, label in saver.items() if op not in run}
    print(f"ops only the saver's functions hold ({len(only_saver)}):")
    print("\n".join(f"  {op:32} {label}" for op, label in sorted(only_saver.items())))
    outside = sorted(set(run) - ALLOWED_OPS) + sorted(set(only_saver) - ALLOWED_OPS - SAVER_OPS)
    unused = sorted(ALLOWED_OPS - set(run))
    print(
        f"outside the allow-list: {', '.join(outside) or 'none'}\nin the allow-list, in no export: "
        f"{', '.join(unused) or 'none'}"
    )
    return 1 if args.check and outside else 0


if __name__ == "__main__":
    sys.exit(main())
