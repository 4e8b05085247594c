"""`netdsl lsp [--include DIR] [--plugin MODULE]`: the language server, over stdin/stdout."""

from __future__ import annotations

import argparse
import sys

from netdsl.cli.common import EXIT_OK, EXIT_USAGE, load_plugins


def run(args: argparse.Namespace) -> int:
    try:
        from netdsl.lsp.server import serve
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in ("pygls", "lsprotocol", "cattrs", "attrs"):
            raise  # not the extra: a bug of netdsl's own, to be seen as one
        print(
            f"netdsl lsp: the language server needs pygls ({missing} is missing); "
            "install it with: pip install 'netdsl[lsp]'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    load_plugins(args.plugin, "netdsl lsp")
    serve(args.include)
    return EXIT_OK
