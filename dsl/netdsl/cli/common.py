"""What every command shares: exit codes, printing diagnostics, loading plugins."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from netdsl.errors import Diagnostic, Sources, SpecError, render_all

EXIT_OK, EXIT_SPEC, EXIT_USAGE = 0, 1, 2


def print_diagnostics(diagnostics: list[Diagnostic], sources: Sources | None, stream: Any = None) -> None:
    stream = stream or sys.stderr
    if diagnostics:
        print(render_all(diagnostics, sources), file=stream)
        errors = sum(1 for d in diagnostics if d.severity == "error")
        if errors > 1:
            print(f"{errors} errors", file=stream)


def print_training_error(exc: Any) -> int:
    """A training command's one-line error (`file:line:col: error: ...`); its exit code.

    A run that failed after its folder was made says where that folder is.
    """
    print(str(exc) if exc.file else f"netdsl: {exc}", file=sys.stderr)
    run_dir = getattr(exc, "run_dir", None)
    if run_dir is not None:
        print(f"run folder: {run_dir} (status: failed)", file=sys.stderr)
    return exc.exit_code


def add_include(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--include", action="append", default=[], metavar="DIR",
                        help="a further folder imports may read from")


def add_backend(parser: argparse.ArgumentParser) -> None:
    # The names are repeated here (not read from backend.runtime): the parser must not load the backend room.
    parser.add_argument("--backend", choices=("tensorflow", "jax", "torch"), default=None,
                        help="the Keras backend (default: KERAS_BACKEND, else tensorflow); jax needs netdsl[jax], "
                             "torch netdsl[torch]")


def add_plugin(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="a Python module that registers layers or activations (repeatable)")


def load_plugins(modules: list[str], spec: str) -> None:
    """Load the installed plugins (the `netdsl.layers` entry points) and the `--plugin` modules.

    A plugin that cannot be imported, or that registers a name it may not take,
    is a one-line error about `spec` (exit 1), whatever the command.
    """
    from netdsl.backend.runtime import muted_stderr  # imports nothing heavy
    from netdsl.registry.plugins import load_entry_points
    from netdsl.registry.plugins import load_plugins as load_modules

    for what, load in [("installed plugins", load_entry_points)] + [
            (f"plugin '{module}'", lambda module=module: load_modules([module])) for module in modules]:
        try:
            with muted_stderr():  # a plugin imports Keras: TensorFlow's start-up lines are not ours to print
                load()
        except Exception as exc:  # a missing module, a plugin's own error, or a name refused
            message = str(exc).splitlines()[0] if str(exc) else ""
            raise SpecError(Diagnostic.for_file(spec, f"cannot load {what}: {type(exc).__name__}: {message}")) from None
