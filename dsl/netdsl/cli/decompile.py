"""`netdsl decompile MODEL.keras|RUN_DIR [--checkpoint best|last] [-o OUT.net] [--flat] [--verify] [--plugin MODULE]`.

Prints the spec of a saved Keras model (or writes it to OUT.net, atomically); a run folder
means the weights every command reading a run uses (`weights: ...` on stderr says which). The
file is read as data: no Keras object is made from it and TensorFlow is not
imported, unless `--verify` asks for the round-trip proof, which loads the model
with Keras (safe mode, and only once every layer has passed the registry) and
rebuilds the spec next to it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from netdsl import api
from netdsl.atomic import write_bytes
from netdsl.cli.common import EXIT_OK, load_plugins, print_failure, print_weights
from netdsl.errors import Diagnostic, SpecError, printable


def run(args: argparse.Namespace) -> int:
    load_plugins(args.plugin, args.trained)
    print_weights(api.weights_line(args.trained, args.checkpoint))
    args.trained = _model_file(args.trained, args.checkpoint)  # a run folder: the file of the weights it uses
    text = api.decompile(args.trained, flat=args.flat)
    if args.out:
        try:
            write_bytes(args.out, text.encode("utf-8"))
        except OSError as exc:
            raise SpecError(Diagnostic.for_file(args.out, f"cannot write file: {exc.strerror or exc}")) from None
        report = sys.stdout
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
        report = sys.stderr
    if args.verify:
        return _verify(args, text, report)
    return EXIT_OK


def _model_file(model: str, checkpoint: Any) -> str:
    """A run folder as the .keras file of the weights it uses (`RunFolder.weights`); a file as it is."""
    return str(api.run_weights(model, checkpoint))


def _verify(args: argparse.Namespace, text: str, report) -> int:
    result = api.verify_decompiled(args.trained, text, flat=args.flat, filename=args.out or "<decompile>")
    print(f"verify {args.trained}:", file=report)
    for line in result.lines():
        print(f"  {printable(line)}", file=report)  # layer names come from the model file
    if not result.ok:
        return print_failure("decompile", f"the decompiled spec of {args.trained} does not rebuild the same model")
    return EXIT_OK
