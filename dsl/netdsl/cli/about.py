"""`netdsl --version`: netdsl's version and what it runs on, without importing any of it.

    netdsl 0.1.0
    Python 3.11.7
    Keras 3.8.0
    backends: tensorflow 2.18.0 (default), jax 0.4.38, torch not installed
    Graphviz 2.43.0 (dot)

Versions are read from the installed packages' metadata (`importlib.metadata`):
importing Keras would load TensorFlow, seconds for a version number. The
default backend is the one `netdsl build` would pick: `KERAS_BACKEND`, else
TensorFlow. Graphviz's version is what `dot -V` says.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
from collections.abc import Callable, Mapping

from netdsl import api
from netdsl.version import __version__

DOT_TIMEOUT = 10  # seconds: a `dot` that hangs must not hang `--version`


def installed(distribution: str) -> str | None:
    """The installed version of a distribution, or None."""
    from importlib import metadata  # here: it loads the email package, which no other command needs

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def dot_version(which: Callable[[str], str | None] = shutil.which) -> str:
    """Graphviz as `dot -V` reports it, or why it cannot be used."""
    import subprocess

    dot = which("dot")
    if dot is None:
        return (
            "Graphviz not found: diagrams are written as .dot files (apt-get install graphviz, brew install graphviz)"
        )
    try:
        done = subprocess.run([dot, "-V"], capture_output=True, text=True, timeout=DOT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Graphviz found at {dot} but 'dot -V' failed ({type(exc).__name__})"
    found = re.search(r"version\s+(\S+)", done.stderr + done.stdout)
    return f"Graphviz {found.group(1)} (dot)" if found else f"Graphviz at {dot} (version unknown)"


def report(
    version_of: Callable[[str], str | None] = installed,
    environ: Mapping[str, str] = os.environ,
    dot: Callable[[], str] = dot_version,
) -> str:
    """The lines `netdsl --version` prints."""
    import platform

    default, packages = api.backend_packages(environ)
    backends = []
    for name, distributions in packages.items():  # (the first of its distributions found is shown)
        version = next((v for v in map(version_of, distributions) if v), None)
        text = f"{name} {version}" if version else f"{name} not installed"
        backends.append(text + (" (default)" if name == default else ""))
    keras = version_of("keras")
    return "\n".join(
        [
            f"netdsl {__version__}",
            f"Python {platform.python_version()}",
            f"Keras {keras}" if keras else "Keras not installed",
            "backends: " + ", ".join(backends),
            dot(),
        ]
    )


class VersionAction(argparse.Action):
    """`--version`: print the report and exit 0."""

    def __init__(
        self,
        option_strings: list[str],
        dest: str = argparse.SUPPRESS,
        default: str = argparse.SUPPRESS,
        help: str | None = None,
    ) -> None:  # noqa: A002 - argparse's name
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(report())
        parser.exit()
