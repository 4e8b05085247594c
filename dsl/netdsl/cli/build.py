"""`netdsl build` and `netdsl summary`.

    netdsl build SPEC.net [-o DIR] [--model NAME] [--plugin MODULE] [--no-diagram] [--param-limit N]
                          [--weights FILE] [--backend tensorflow|jax|torch]
    netdsl summary SPEC.net [--model NAME] [--json] [--plugin MODULE] [--weights FILE]
                            [--backend tensorflow|jax|torch] [--cost [--batch B] [--precision P]]

`build` builds every model (or `--model`), then writes `DIR/<model>.keras`
atomically (a temporary file in the same folder, then `os.replace`: a failed
build writes nothing and leaves earlier outputs untouched) and
`DIR/<model>.svg` unless `--no-diagram`, and prints a summary table per
model. `summary` prints the tables only; with `--json`, per model:
`{"params", "trainable_params", "non_trainable_params", "layers", "outputs": {name: shape}}` where
`layers` is the number of layers the spec makes (inputs excluded; a shared
instance or a nested model counts once) and shapes leave out the batch axis (`null`: unknown size).
`--backend` picks the Keras backend (default: KERAS_BACKEND, else TensorFlow);
the same spec gives the same model, and a `.keras` file, on both.

`summary` imports no backend when the pure-Python inference is sure of every
model (`pipeline.inferred_splits`: render's decision, and the trainable split
of `semantics/trainable.py`); the output is byte for byte the Keras build's.
`--backend`, `--weights` and `--plugin` build with Keras (a plugin registers
Keras objects; installed plugins' layers make the check fail without them, and
the spec is then built with Keras, which loads them).
"""

from __future__ import annotations

import argparse
import json

from netdsl import api
from netdsl.cli.common import load_spec

__all__ = ["run_build", "run_summary"]


def run_build(args: argparse.Namespace) -> int:
    program = load_spec(args.spec, args)  # syntax errors before TensorFlow
    for line in api.build_files(
        program,
        args.model,
        args.out,
        backend=args.backend,
        weights=args.weights,
        param_limit=args.param_limit,
        diagram=not args.no_diagram,
        plugins=args.plugin,
    ):
        print(line)
    return 0


def run_summary(args: argparse.Namespace) -> int:
    report = api.summary_report(
        load_spec(args.spec, args),
        args.model,
        backend=args.backend,
        weights=args.weights,
        plugins=args.plugin,
        cost=args.cost,
        batch=args.batch,
        precision=args.precision,
    )
    if args.json:
        print(json.dumps({name: numbers for name, (numbers, _) in report.items()}, indent=2))
        return 0
    print("\n\n".join(table for _, table in report.values()))
    return 0
