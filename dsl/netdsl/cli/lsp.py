"""`netdsl lsp [--include DIR] [--plugin MODULE]`: the language server, over stdin/stdout."""

from __future__ import annotations

import argparse
import sys

from netdsl.api import options
from netdsl.cli.common import EXIT_OK, EXIT_USAGE, add_command, add_options, load_plugins


def add_parser(sub: argparse._SubParsersAction) -> None:
    lsp = add_command(sub, "lsp", summary="run the language server over stdio (for editors; needs netdsl[lsp])",
                      description="The language server editors start: diagnostics, hover, completion, go to "
                                  "definition, rename ..., over stdin/stdout (docs/lsp.md).",
                      examples=["netdsl lsp", "netdsl lsp --include shared/ --plugin my_layers"])
    add_options(lsp, options.LspOptions)
    lsp.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        from netdsl.lsp.server import serve
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in ("pygls", "lsprotocol", "cattrs", "attrs"):
            raise  # not the extra: a bug of netdsl's own, to be seen as one
        print(f"netdsl lsp: the language server needs pygls ({missing} is missing); "
              "install it with: pip install 'netdsl[lsp]'", file=sys.stderr)
        return EXIT_USAGE
    load_plugins(args.plugin, "netdsl lsp")
    serve(args.include)
    return EXIT_OK
