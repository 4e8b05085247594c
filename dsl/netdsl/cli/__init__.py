"""The `netdsl` command line: one module per command, each with its `run`; the parsers are generated from
netdsl/options.py (`cli/app.py`).

Exit codes: 0 clean, 1 spec errors (diagnostics printed), 2 usage errors,
130 a training run stopped by Ctrl-C (data errors exit 1).
`check`, `fmt`, `layers`, `preview`, `render --no-shapes` and `decompile` (without --verify) never
import TensorFlow; `render` imports it only for a model whose shapes the pure-Python inference
cannot be sure of.
"""

from __future__ import annotations

EXIT_STOPPED = 130  # as netdsl.cli.common says; repeated so that this module imports nothing


def main(argv: list[str] | None = None) -> int:
    """`netdsl ARGS...`: the commands' modules (and pydantic, lark, ... beneath them) load here,
    where a Ctrl-C while they load stops the command like a Ctrl-C anywhere else: exit code 130,
    no traceback."""
    try:
        from netdsl.cli.app import main as run
    except KeyboardInterrupt:
        return EXIT_STOPPED
    return run(argv)
