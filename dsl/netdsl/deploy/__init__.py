"""`netdsl export`: a model to a deployment format, checked in that format's own runtime.

    source --source.resolve--> keras.Model (+ metadata)
        --serving--> tf.function: named inputs, open batch axis -> {output name: tensor}
        --<format>_format.write--> the file, written atomically
        --verify--> seeded inputs through Keras and through the file's runtime (<format>_format.load), compared

Formats, tolerances and the module of each are in `formats.FORMATS` (adding a format: its docstring);
docs/export.md tells the user's side.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netdsl.deploy.errors import ExportError, MissingPackage, UnknownFormat, VerifyFailed
from netdsl.deploy.export_source import Resolved, resolve
from netdsl.deploy.folders import check_folder_target
from netdsl.deploy.formats import FORMATS, Format, get_format, require_packages
from netdsl.deploy.verify import Verification, check_file
from netdsl.errors import NetdslError

__all__ = [
    "FORMATS",
    "ExportError",
    "Exported",
    "MissingPackage",
    "UnknownFormat",
    "VerifyFailed",
    "default_out",
    "export_model",
]


@dataclass(frozen=True)
class Exported:
    path: Path
    format: Format
    verification: Verification | None
    notes: tuple[str, ...] = ()  # what the export changed on the way (a float16 model exported in float32)


def default_out(resolved: Resolved, fmt: Format) -> Path:
    """`<model>.onnx` / `<model>_saved_model` / `<model>.tflite`, in the run folder or beside the .keras
    file it came from, else in the current folder."""
    name = f"{resolved.name}{fmt.suffix}"
    return resolved.where / name if resolved.where is not None else Path(name)


def export_model(
    source: Any,
    *,
    format: str,
    out: str | os.PathLike | None = None,  # noqa: A002 - the CLI flag
    model: str | None = None,
    weights: str | os.PathLike | None = None,
    checkpoint: str | None = None,
    check: bool = True,
    include: Sequence[str | os.PathLike[str]] = (),
    quiet: bool = False,
    data: Any = None,
    seed: int | None = None,
) -> Exported:
    """Export `source` (see `source.resolve`) to `format`; with `check`, run it in its runtime and compare,
    on seeded inputs or on the first samples of `data`. `seed`: a spec's fresh weights drawn from it.

    Raises ExportError (a source or output problem, a layer the format cannot hold),
    MissingPackage (the format's converter or runtime is not installed), VerifyFailed
    (the exported file computes something else; the file stays written, for inspection).
    `quiet` (the CLI): the converters' and runtimes' C++ chatter on stderr is muted.
    """
    from netdsl.backend.runtime import muted_stderr

    fmt = get_format(format)
    require_packages(fmt)
    target = Path(out) if out is not None else None
    if target is not None:
        _check_writable(target, fmt)
    resolved = resolve(
        source, model=model, weights=weights, checkpoint=checkpoint, include=include, quiet=quiet, seed=seed
    )
    _refuse_text(fmt, resolved)
    target = target if target is not None else default_out(resolved, fmt)
    with muted_stderr(quiet):
        _write(fmt, resolved, target)
        result = check_file(resolved.model, fmt, target, data, resolved.metadata) if check else None
    if result is not None and not result.ok:
        raise VerifyFailed(result.failure(), file=str(target))
    return Exported(target, fmt, result, tuple(resolved.notes))


def _refuse_text(fmt: Format, resolved: Resolved) -> None:
    """A model that takes text, in a format that cannot hold string ops: one line, before converting."""
    text = next((t for t in resolved.model.inputs if str(t.dtype) == "string"), None)
    if text is not None and fmt.no_text is not None:
        name = str(getattr(text, "name", "input")).split(":")[0]
        raise ExportError(
            f"the model takes text (input '{name}' as string), which {fmt.name} cannot hold: "
            f"{fmt.no_text}; export it with --format saved_model, which holds the string ops and "
            "the vocabulary"
        )


def _write(fmt: Format, resolved: Resolved, target: Path) -> None:
    try:
        fmt.implementation().write(resolved.model, target, resolved.metadata)
    except OSError as exc:
        raise ExportError(f"cannot write the {fmt.name} file: {exc.strerror or exc}", file=str(target)) from None
    except NetdslError:
        raise
    except Exception as exc:  # a converter's own failure, of whatever type it raises: one line, not its traceback
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = lines[0][:300] if lines else type(exc).__name__
        raise ExportError(f"the model cannot be exported to {fmt.name}: the converter failed ({reason})") from None


def _check_writable(target: Path, fmt: Format) -> None:
    """Refuse an output that cannot be written before spending minutes converting."""
    if target.is_symlink():
        raise ExportError("it is a symbolic link; netdsl does not write through links", file=str(target))
    if fmt.is_folder:
        check_folder_target(target)
    parent = target.parent if str(target.parent) else Path(".")
    existing = next((p for p in [parent, *parent.parents] if p.exists()), Path("."))
    if not existing.is_dir():
        raise ExportError(f"cannot write here: {existing} is not a folder", file=str(target))
    if not os.access(existing, os.W_OK):
        raise ExportError(f"cannot write here: {existing} is not writable", file=str(target))
