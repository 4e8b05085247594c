"""A pushed run's diagram: drawn from the spec the run recorded, into push's staging folder.

    warning = draw_into(run_folder, config, stage)    # stage/diagram.svg, or None and why not

A run folder holds no diagram (`netdsl train` writes none), so push draws one when it sends the run's
files: the spec config.json names, read as the run read it (its include folders, its `-D` defines:
`training.run_spec`), and only while that file is still there with the hash the run recorded; the
model drawn by netdsl's own diagram room as `netdsl render` draws it, with the shapes and parameter
counts the pure-Python inference is sure of (`?` where only Keras could tell: no backend is imported).
`diagram.svg`, or `diagram.dot` (the DOT source) where Graphviz's `dot` is not installed. A spec that is
gone, changed or no longer loads gives no diagram and one warning line, never a failed push.

The same spec, model and defines give the same DOT bytes in every process (diagram/render.py), so an
image is drawn once per DOT source in a process (`_IMAGES`): 100 copies of a run call `dot` once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from netdsl.errors import DotNotFound, RenderError, SpecError
from netdsl.tracking.found import spec_of, text
from netdsl.training.errors import RunError

DIAGRAM = "diagram"  # diagram.svg (diagram.dot without Graphviz) among a run's artifacts
_IMAGES: dict[str, tuple[str, bytes, str | None]] = {}  # DOT source: (suffix, bytes, why dot failed)
_KEPT = 64  # drawings kept (a sweep's trials differ in their defines: one each)


def spec_state(config: dict[str, Any]) -> str:
    """What a push's fingerprint keeps of the spec a diagram is drawn from (its size and time, '-' when
    gone): a spec that comes back, or changes, sends the run's files again; one left alone does not."""
    where = text(spec_of(config).get("path"))
    try:
        info = os.stat(where) if where else None
    except OSError:
        info = None
    return f"{info.st_size}:{info.st_mtime_ns}" if info is not None else "-"


def draw_into(folder: Path, config: dict[str, Any], stage: Path) -> str | None:
    """Write the run's diagram into `stage`; None, or the one warning line saying why there is none."""
    from netdsl import pipeline
    from netdsl.diagram.render import pipe_image
    from netdsl.semantics.estimates import fill_estimates
    from netdsl.training import run_spec

    where = text(spec_of(config).get("path"))
    if not where or not Path(where).is_file():
        return f"{folder}: pushed without a diagram: its spec {where or '(none named)'} is gone"
    try:
        spec, name = run_spec(folder, config)
        graph = spec.model(name).graph
        fill_estimates(graph)  # the parameter counts the pure-Python inference is sure of
        digraph = pipeline.draw(graph)
    except RunError:
        return f"{folder}: pushed without a diagram: its spec {where} changed since the run trained"
    except SpecError as exc:
        reason = exc.diagnostics[0].message if exc.diagnostics else "it has errors"
        return f"{folder}: pushed without a diagram: its spec {where} no longer loads ({reason})"
    except (RecursionError, MemoryError, ValueError) as exc:
        return f"{folder}: pushed without a diagram: {type(exc).__name__}: {str(exc)[:200]}"
    source = digraph.source
    if source not in _IMAGES:
        try:
            drawn: tuple[str, bytes, str | None] = ("svg", pipe_image(digraph, "svg"), None)
        except DotNotFound:  # no Graphviz here: the DOT source, which any Graphviz draws
            drawn = ("dot", source.encode("utf-8"), None)
        except RenderError as exc:  # dot failed on it: the source, and why
            drawn = ("dot", source.encode("utf-8"), str(exc))
        if len(_IMAGES) >= _KEPT:
            _IMAGES.pop(next(iter(_IMAGES)))
        _IMAGES[source] = drawn
    suffix, data, failed = _IMAGES[source]
    (stage / f"{DIAGRAM}.{suffix}").write_bytes(data)
    return f"{folder}: diagram.svg not drawn ({failed}); diagram.dot pushed instead" if failed else None
