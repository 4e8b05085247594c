"""`netdsl preview SPEC [--model NAME] [--port P] [--depth N] [--cost [--batch B]]`: the live diagram page on
127.0.0.1."""

from __future__ import annotations

import argparse
import shutil
import signal
import threading

from netdsl import api
from netdsl.cli.common import EXIT_OK, load_plugins, print_failure
from netdsl.errors import UsageError
from netdsl.files import Refused, open_regular
from netdsl.preview import PreviewServer


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C. Exit status 0; 1 when the spec cannot be read, the port is
    taken or Graphviz is missing; 2 for a bad option. A spec with errors is served, its errors shown."""
    if not 0 <= args.port <= 65535 or (args.depth is not None and args.depth < 0):
        raise UsageError("--port must be 0 to 65535 and --depth 0 or more")
    if shutil.which("dot") is None:
        return print_failure("preview", f"Graphviz's 'dot' program was not found; {api.graphviz_hint()}")
    try:  # a regular file, opened without blocking: a FIFO named as the spec must not hang the start
        with open_regular(args.spec, "spec file"):
            pass
    except Refused as exc:
        return print_failure("preview", f"cannot read {args.spec}: {exc}")
    load_plugins(args.plugin, args.spec)
    try:
        defines = api.parse_defines(args.defines, args.spec)
        server = PreviewServer(
            args.spec,
            args.model,
            port=args.port,
            include=args.include,
            depth=args.depth,
            defines=defines,
            cost=args.cost,
            batch=args.batch,
        )
    except OSError as exc:
        return print_failure(
            "preview",
            f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}; "
            "pick another port with --port, or --port 0 for any free one",
        )
    stop = threading.Event()
    # Ctrl-C and SIGTERM stop the server. SIGINT is set explicitly: a shell that starts a command in the
    # background leaves it ignored, and Python then installs no handler of its own. Set before the URL
    # is printed: a program that reads it and stops the server at once must not find SIGINT ignored.
    previous = {signum: signal.signal(signum, lambda *_: stop.set()) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        url = server.start()
        print(f"netdsl preview: {url}  (Ctrl-C to stop)", flush=True)
        while not stop.wait(1.0):  # the server's threads do the work
            pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        server.close()
    return EXIT_OK
