"""netdsl: a declarative model-builder for deep learning.

    import netdsl
    program = netdsl.parse_file("spec.net")      # no TensorFlow imported
    diagnostics = netdsl.check("spec.net")       # or netdsl.check(text=source, filename="spec.net")
    model = netdsl.build("spec.net")             # a keras.Model
    diagram = netdsl.render("spec.net")          # a graphviz.Digraph
    text = netdsl.decompile("model.keras")       # a saved Keras model as a spec
    path = netdsl.export("runs/mlp-3", format="onnx")   # runs/mlp-3/mlp.onnx, checked in onnxruntime
    run = netdsl.train("spec.net", data="digits.npz", epochs=3, seed=7)   # runs/<model>-N/

Every public function is defined in `netdsl.api` and documented in docs/api.md.

`import netdsl` itself loads none of them: each public name is imported the first time it is
used (PEP 562's module `__getattr__`). So `import netdsl` takes milliseconds, and the command
line (`netdsl.cli`, a submodule: Python runs this file first) has its own modules loaded inside
`main`, where a Ctrl-C while they load ends in exit code 130 instead of a traceback.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from netdsl.backend import keras_hook as _keras_hook
from netdsl.version import __version__

if TYPE_CHECKING:  # what type checkers and editors see; at run time `__getattr__` below
    from netdsl.api import (
        DataSource,
        Defines,
        ExportFormat,
        ModelSummary,
        Predictions,
        Run,
        Spec,
        SweepResult,
        Trained,
        TrialRecord,
        build,
        build_all,
        check,
        decompile,
        evaluate,
        export,
        fit_kwargs,
        format,
        open_run,
        parse,
        parse_file,
        predict,
        register_activation,
        register_layer,
        render,
        runs,
        show_sweep,
        summary,
        sweep,
        train,
    )
    from netdsl.deploy.errors import SpecChangedWarning
    from netdsl.errors import (
        BackendError,
        BuildError,
        DataError,
        Diagnostic,
        DotFailed,
        DotNotFound,
        ExportError,
        LayoutError,
        LightningError,
        NetdslError,
        RenderError,
        ReportedError,
        RunError,
        Span,
        SpecError,
        UsageError,
        VerifyFailed,
    )
    from netdsl.syntax.loader import Program
    from netdsl.training.errors import DataWarning, TrainingError

# Registers netdsl's Keras objects (custom layers, declared layers and
# activations) as soon as Keras is imported, so a saved model loads with
# `keras.saving.load_model(path, safe_mode=True)` after `import netdsl`,
# while `import netdsl` itself never imports Keras or TensorFlow.
_keras_hook.install()

__all__ = [
    # functions (netdsl.api)
    "parse",
    "parse_file",
    "check",
    "format",
    "build",
    "build_all",
    "summary",
    "fit_kwargs",
    "render",
    "decompile",
    "export",
    "train",
    "evaluate",
    "predict",
    "sweep",
    "show_sweep",
    "register_layer",
    "register_activation",
    "runs",
    "open_run",
    "open_trained",
    # types
    "Program",
    "Diagnostic",
    "Span",
    "Spec",
    "Trained",
    "DataSource",
    "ModelSummary",
    "Defines",
    "SweepResult",
    "TrialRecord",
    "ExportFormat",
    "Predictions",
    "Run",
    "TrainedModel",
    # errors (every one a NetdslError)
    "NetdslError",
    "SpecError",
    "UsageError",
    "BackendError",
    "BuildError",
    "LayoutError",
    "RenderError",
    "DotNotFound",
    "DotFailed",
    "ReportedError",
    "TrainingError",
    "DataError",
    "RunError",
    "ExportError",
    "VerifyFailed",
    "LightningError",
    # warnings
    "SpecChangedWarning",
    "DataWarning",
    "__version__",
]

# Where each public name lives (a fixed table of this package's own modules; nothing from outside).
_HOME = {
    "SpecChangedWarning": "netdsl.deploy.errors",
    **dict.fromkeys(["DataWarning", "TrainingError"], "netdsl.training.errors"),
    **dict.fromkeys(
        [
            "BackendError",
            "BuildError",
            "DataError",
            "Diagnostic",
            "DotFailed",
            "DotNotFound",
            "ExportError",
            "LayoutError",
            "LightningError",
            "NetdslError",
            "RenderError",
            "ReportedError",
            "RunError",
            "Span",
            "SpecError",
            "UsageError",
            "VerifyFailed",
        ],
        "netdsl.errors",
    ),
    "Program": "netdsl.syntax.loader",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'netdsl' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME.get(name, "netdsl.api")), name)
    globals()[name] = value  # once: later uses are plain lookups
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
