"""`netdsl fmt SPEC... [--check] [--diff]`: canonical formatting, in place."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from netdsl import api
from netdsl.atomic import write_bytes
from netdsl.errors import Diagnostic, Sources, SpecError


def run(args: argparse.Namespace) -> int:
    """`netdsl fmt FILE... [--check] [--diff]`: rewrite, report or diff each file.

    Every file is handled before any error is raised; the errors of all files are
    raised together as one SpecError (exit 1). `--check` returns 1 when a file would
    change; `--diff` prints unified diffs and writes nothing.
    """
    check, diff = getattr(args, "check", False), getattr(args, "diff", False)
    diagnostics: list[Diagnostic] = []
    sources = Sources()
    changed = 0
    for name in args.files:
        path = Path(name)
        try:
            text = api.spec_text(name)
            sources.add(name, text)
            formatted = api.format(text=text, filename=name)
        except SpecError as exc:
            diagnostics.extend(exc.diagnostics)
            continue
        if formatted == text and not _has_bom(path):
            continue
        changed += 1
        if diff:
            sys.stdout.write(_unified_diff(text, formatted, name))
        if check:
            print(f"would reformat {name}")
        elif not diff:
            try:
                write_bytes(path, formatted.encode("utf-8"), links="refuse")  # a link: the user meant its file
            except OSError as exc:
                diagnostics.append(Diagnostic.for_file(name, f"cannot write file: {exc.strerror or exc}"))
                continue
            print(f"reformatted {name}")
    sys.stdout.flush()
    if diagnostics:
        raise SpecError(diagnostics, sources)
    return 1 if check and changed else 0


def _has_bom(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(3) == b"\xef\xbb\xbf"
    except OSError:
        return False


def _lines(text: str) -> list[str]:
    """Lines split at `\\n` only (a spec's line ends), each keeping its end."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _unified_diff(old: str, new: str, name: str) -> str:
    out = []
    for line in difflib.unified_diff(_lines(old), _lines(new), fromfile=name, tofile=name):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
