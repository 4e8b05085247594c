"""netdsl: a declarative model-builder for deep learning.

    import netdsl
    program = netdsl.parse_file("spec.net")      # no TensorFlow imported
    diagnostics = netdsl.check("spec.net")
    model = netdsl.build("spec.net")             # a keras.Model
    diagram = netdsl.render("spec.net")          # a graphviz.Digraph
"""

from .api import build, build_all, check, fit_kwargs, format, parse, parse_file, render
from .errors import Diagnostic, SpecError, Span
from .loader import Program
from .plugins import register_activation, register_layer
from . import keras_hook as _keras_hook

# Registers netdsl's Keras objects (custom layers, declared layers and
# activations) as soon as Keras is imported, so a saved model loads with
# `keras.saving.load_model(path, safe_mode=True)` after `import netdsl`,
# while `import netdsl` itself never imports Keras or TensorFlow.
_keras_hook.install()

__version__ = "0.1.0"

__all__ = [
    "parse", "parse_file", "check", "format", "build", "build_all", "fit_kwargs", "render",
    "Program", "SpecError", "Diagnostic", "Span", "register_layer", "register_activation",
]
