"""`netdsl export SRC --format onnx|saved_model|litert [-o OUT] [--no-verify] [--data SRC] [--model NAME]
[--weights FILE.keras | --seed S] [--checkpoint best|last]`.

SRC is a spec (built with fresh weights, drawn from --seed, or those of --weights), a run folder
(its weights as evaluate picks them: best.keras when the run had validation data, else model.keras;
`--checkpoint` chooses, and the line `weights: ...` on stderr says which) or a .keras file. The file
is written atomically, then run in the format's own runtime on seeded inputs (or the first samples
of --data) next to the Keras model; the largest difference per output is printed, and a difference beyond the
format's tolerance exits 1.
"""

from __future__ import annotations

import argparse

from netdsl import api
from netdsl.api import options
from netdsl.cli.common import EXIT_OK, load_plugins, print_weights

FORMAT_NAMES = options.EXPORT_FORMATS  # repeated from deploy.formats: the parser loads no room


def run(args: argparse.Namespace) -> int:
    load_plugins(args.plugin, args.source)
    print_weights(api.weights_line(args.source, args.checkpoint))
    exported = api.export_report(
        args.source,
        format=args.format,
        out=args.out,
        model=args.model,
        weights=args.weights,
        checkpoint=args.checkpoint,
        verify=args.verify,
        include=args.include,
        data=args.data,
        seed=args.seed,
    )
    print(f"wrote {exported.path} ({exported.format.name})")
    for note in exported.notes:
        print(f"note: {note}")
    if exported.verification is not None:
        print(f"verified in {exported.format.runtime}:")
        for line in exported.verification.lines():
            print(f"  {line}")
    return EXIT_OK
