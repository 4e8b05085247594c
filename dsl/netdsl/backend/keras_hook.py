"""Register netdsl's Keras objects the moment Keras is imported — without importing it.

A `.keras` file written by netdsl names its custom objects by their registered
names (`"netdsl>Linear"`, `"netdsl>DeclaredLayer"`, ...). Keras finds such a
name only in its registry of custom objects, which `netdsl.custom` fills when
it is imported; Keras never imports a non-Keras module on its own while
loading (and `safe_mode` would be the wrong place to start).

`import netdsl` must stay cheap (no TensorFlow: `check`, `fmt` and topology
rendering answer in a fraction of a second), so it cannot import
`netdsl.custom` eagerly. Instead `install()` (called by `netdsl/__init__.py`)
does the cheapest thing that still makes

    import netdsl
    import keras
    model = keras.saving.load_model("model.keras", safe_mode=True)

just work:

- if Keras is already imported, it imports `netdsl.custom` at once (cheap:
  Keras is loaded);
- otherwise it puts a finder on `sys.meta_path` that answers only for the
  top-level module `keras`. It takes the spec that the other finders give,
  wraps its loader, and after Keras' own `exec_module` has run imports
  `netdsl.custom` and removes itself. Nothing else is imported, looked up or
  changed; any other module goes to the normal finders untouched.

`import netdsl.custom` remains the explicit way and does the same thing.
"""

from __future__ import annotations

import sys
import threading
import warnings

__all__ = ["install", "installed"]

_lock = threading.Lock()


def _register() -> None:
    try:
        from netdsl import custom  # noqa: F401  (importing it registers the classes with Keras)
        from netdsl.backend import torch_names

        torch_names.install()  # on the torch backend only: layer names with a dot
    except Exception as exc:  # Keras itself must not fail to import because of us
        warnings.warn(
            f"netdsl: could not register its Keras objects ({exc}); import netdsl.custom before loading a model",
            RuntimeWarning,
            stacklevel=2,
        )


class _Loader:
    """Wraps Keras' own loader; registers netdsl once Keras has executed."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _remove_finder()
        _register()

    def __getattr__(self, name):  # get_source, is_package, get_resource_reader, ...
        return getattr(self._loader, name)


class _KerasFinder:
    """A meta-path finder that answers for `keras` only, by asking the others."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "keras":
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None

    def invalidate_caches(self):
        pass


def _remove_finder() -> None:
    with _lock:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _KerasFinder)]


def installed() -> bool:
    """True while the finder waits for Keras to be imported."""
    return any(isinstance(f, _KerasFinder) for f in sys.meta_path)


def install() -> None:
    """Make sure netdsl's objects are registered whenever Keras is in use."""
    keras = sys.modules.get("keras")
    if keras is not None:
        spec = getattr(keras, "__spec__", None)
        if not getattr(spec, "_initializing", False):
            _register()
            return
    with _lock:
        if not any(isinstance(f, _KerasFinder) for f in sys.meta_path):
            sys.meta_path.insert(0, _KerasFinder())
