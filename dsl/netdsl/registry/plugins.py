"""Python plugins: names added by the person running the compiler, never by a spec.

    @netdsl.register_layer("my_block")
    class MyBlock(keras.layers.Layer): ...

A plugin module is imported only when asked for (`--plugin MODULE` on the
command line, `load_plugins([...])`, or `load_entry_points()` for the
`netdsl.layers` entry-point group). A plugin cannot shadow a built-in name.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any

from netdsl import registry

GROUP = "netdsl.layers"


def register_layer(name: str, description: str | None = None) -> Callable:
    return _register("layer", name, description)


def register_activation(name: str, description: str | None = None) -> Callable:
    return _register("activation", name, description)


def _register(kind: str, name: str, description: str | None) -> Callable:
    def decorator(obj: Any) -> Any:
        import inspect

        params = _params_of(obj, kind)
        doc = description or (inspect.getdoc(obj) or "").split("\n")[0] or f"plugin {kind} {name}"
        registry.register_plugin(kind, name, params, doc, obj)
        return obj

    return decorator


def _params_of(obj: Any, kind: str) -> tuple:
    import inspect

    target = obj.__init__ if inspect.isclass(obj) else obj
    params = []
    skip_first = kind == "activation"
    for p in list(inspect.signature(target).parameters.values())[(1 if inspect.isclass(obj) else 0) :]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if skip_first:
            skip_first = False
            continue
        default = registry.REQUIRED if p.default is p.empty else p.default
        params.append(registry.Param(p.name, registry.type_of_default(default), default, p.kind != p.KEYWORD_ONLY))
    if kind == "layer":
        params += [
            registry.Param("name", "str", None, False),
            registry.Param("dtype", "dtype", None, False),
            registry.Param("trainable", "bool", True, False),
        ]
    return tuple(params)


def load_plugins(modules: list[str]) -> None:
    """Import plugin modules named by the person running netdsl (not by a spec)."""
    import importlib

    for module in modules:  # from --plugin or the caller's own code; no spec text reaches here
        importlib.import_module(module)


def load_entry_points() -> None:
    """Load every installed plugin of the `netdsl.layers` entry-point group."""
    if not _any_entry_points_file_names(GROUP):
        return  # the usual case, found without importlib.metadata's scan of every distribution
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP):
        ep.load()


def _any_entry_points_file_names(group: str) -> bool:
    """Whether an `entry_points.txt` on sys.path has a `[group]` section, or it cannot be told.

    `importlib.metadata.entry_points` reads the metadata of every installed
    distribution (30-100 ms with a hundred of them); every command loads the
    installed plugins, so the plain folders of sys.path are looked through first.
    """
    header = re.compile(rf"^\s*\[\s*{re.escape(group)}\s*\]", re.M)
    for folder in sys.path:
        folder = folder or "."
        if os.path.isfile(folder):
            return True  # a zip on sys.path: leave it to importlib.metadata
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8", errors="replace") as fh:
                    if header.search(fh.read()):
                        return True
            except OSError:
                continue
    return False
