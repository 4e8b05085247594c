"""netdsl: a declarative model-builder for deep learning.

    import netdsl
    program = netdsl.parse_file("spec.net")      # no TensorFlow imported
    diagnostics = netdsl.check("spec.net")
    model = netdsl.build("spec.net")             # a keras.Model
    diagram = netdsl.render("spec.net")          # a graphviz.Digraph
    text = netdsl.decompile("model.keras")       # a saved Keras model as a spec
    path = netdsl.export("runs/mlp-3", format="onnx")   # runs/mlp-3/mlp.onnx, checked in onnxruntime
    run = netdsl.train("spec.net", data="digits.npz", epochs=3, seed=7)   # runs/<model>-N/
"""

from netdsl.api import (
                        build,
                        build_all,
                        check,
                        decompile,
                        evaluate,
                        export,
                        fit_kwargs,
                        format,
                        parse,
                        parse_file,
                        predict,
                        render,
                        train,
)
from netdsl.backend import keras_hook as _keras_hook
from netdsl.errors import Diagnostic, NetdslError, Span, SpecError
from netdsl.registry.plugins import register_activation, register_layer
from netdsl.syntax.loader import Program
from netdsl.version import __version__

# Registers netdsl's Keras objects (custom layers, declared layers and
# activations) as soon as Keras is imported, so a saved model loads with
# `keras.saving.load_model(path, safe_mode=True)` after `import netdsl`,
# while `import netdsl` itself never imports Keras or TensorFlow.
_keras_hook.install()

__all__ = [
    "parse", "parse_file", "check", "format", "build", "build_all", "fit_kwargs", "render", "decompile", "export",
    "train", "evaluate", "predict",
    "Program", "SpecError", "NetdslError", "Diagnostic", "Span", "register_layer", "register_activation",
    "__version__",
]
