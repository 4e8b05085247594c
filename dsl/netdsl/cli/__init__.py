"""The `netdsl` command line: one module per command, each with its `run`; the parsers are generated from
netdsl/options.py (`cli/app.py`).

Exit codes: 0 clean, 1 spec errors (diagnostics printed), 2 usage errors,
130 a training run stopped by Ctrl-C (data errors exit 1).
`check`, `fmt`, `layers`, `preview`, `render --no-shapes` and `decompile` (without --verify) never
import TensorFlow; `render` imports it only for a model whose shapes the pure-Python inference
cannot be sure of.
"""

from __future__ import annotations

import sys

EXIT_STOPPED = 130  # as netdsl.cli.common says; repeated so that this module imports nothing
FRAMEWORKS = ("tensorflow", "torch", "jax")  # whose modules take the interpreter's teardown 1-2 s


def main(argv: list[str] | None = None) -> int:
    """`netdsl ARGS...`: the commands' modules (and pydantic, lark, ... beneath them) load here,
    where a Ctrl-C while they load stops the command like a Ctrl-C anywhere else: exit code 130,
    no traceback."""
    try:
        from netdsl.cli.app import main as run
    except KeyboardInterrupt:
        return EXIT_STOPPED
    code = run(argv)
    if argv is None:  # the command line of this process (`netdsl ...`, `python -m netdsl.cli ...`)
        leave_quickly(code)
    return code


def leave_quickly(code: int) -> None:
    """End this process now when TensorFlow, torch or JAX is loaded: the interpreter's teardown of every
    module then takes 1-2 s (measured: 6.2 s against 4.9 s for `summary --backend tensorflow`) and does
    nothing a finished command needs. First what the interpreter does before that teardown: threads
    joined, exit functions run (atexit: Keras', MLflow's, ...), standard output and error flushed.
    Without such a framework it returns, and the process ends as usual."""
    if not any(name in sys.modules for name in FRAMEWORKS):
        return
    import atexit
    import os
    import threading

    getattr(threading, "_shutdown")()  # noqa: B009 - the interpreter's own step: non-daemon threads joined
    getattr(atexit, "_run_exitfuncs")()  # noqa: B009 - and then the exit functions, in their order
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code & 0xFF)
