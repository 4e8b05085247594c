"""netdsl: a declarative model-builder for deep learning.

    import netdsl
    program = netdsl.parse_file("spec.net")      # no TensorFlow imported
    diagnostics = netdsl.check("spec.net")
    model = netdsl.build("spec.net")             # a keras.Model
    diagram = netdsl.render("spec.net")          # a graphviz.Digraph
"""

from .api import build, build_all, check, format, parse, parse_file, render
from .errors import Diagnostic, SpecError, Span
from .loader import Program
from .plugins import register_activation, register_layer

__version__ = "0.1.0"

__all__ = [
    "parse", "parse_file", "check", "format", "build", "build_all", "render",
    "Program", "SpecError", "Diagnostic", "Span", "register_layer", "register_activation",
]
