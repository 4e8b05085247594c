"""How long does `netdsl export` take, and how fast do the exported files run?

For keras.applications.ResNet50(weights=None), in one process, prints:
  1. the time of `netdsl.export(model, format=F, verify=False)` per format (onnx,
     saved_model, litert), and of Keras' own `model.export(path, format="onnx")` next
     to it (the route that writes invalid graphs for mish and GELU models; ResNet-50
     has neither, so it converts);
  2. inference latency at batch 1 and 32, median of interleaved rounds, of the ONNX file in
     onnxruntime and the .tflite in the LiteRT interpreter, against `model.predict` and a
     direct call `model(x, training=False)` on the same inputs.
The machine is shared: the medians of interleaved rounds are the figures to read, ratios
more than seconds. The export times are one run each (minutes on a CI core).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROUNDS = 7


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    import keras
    import numpy as np
    import onnxruntime
    import tf2onnx  # noqa: F401 - imported before the clock starts, for both ONNX routes alike
    from ai_edge_litert.interpreter import Interpreter

    import netdsl

    model = keras.applications.ResNet50(weights=None)
    with tempfile.TemporaryDirectory(prefix="netdsl-bench-export-") as tmp:
        folder = Path(tmp)
        print("ResNet50 (weights=None): export time, seconds (one run each; verify=False)")
        paths = {}
        for fmt, name in (("onnx", "r.onnx"), ("saved_model", "r_saved_model"), ("litert", "r.tflite")):
            seconds = timed(
                lambda: paths.setdefault(fmt, netdsl.export(model, format=fmt, out=folder / name, verify=False))
            )
            print(f"  netdsl export --format {fmt:<12} {seconds:7.1f} s")
        model(np.zeros((1, 224, 224, 3), "float32"))  # Keras' exporter wants a model that was called
        keras_s = timed(lambda: model.export(folder / "k.onnx", format="onnx", verbose=False))
        print(f"  keras model.export(format='onnx')   {keras_s:7.1f} s")

        session = onnxruntime.InferenceSession(str(paths["onnx"]), providers=["CPUExecutionProvider"])
        runner = Interpreter(model_path=str(paths["litert"])).get_signature_runner("serving_default")
        input_name = model.inputs[0].name.split(":")[0]
        rng = np.random.default_rng(0)
        print(f"\ninference latency, ms per batch (median of {ROUNDS} interleaved rounds)")
        print(f"  {'batch':>5} {'model.predict':>14} {'model(x)':>10} {'onnxruntime':>12} {'LiteRT':>8}")
        for batch in (1, 32):
            x = rng.standard_normal((batch, 224, 224, 3)).astype("float32")
            runs = {
                "predict": lambda: model.predict(x, batch_size=batch, verbose=0),
                "call": lambda: model(x, training=False),
                "onnx": lambda: session.run(None, {input_name: x}),
                "litert": lambda: runner(**{input_name: x}),
            }
            for fn in runs.values():  # warm-up: graph tracing, allocation, LiteRT's resize to this batch
                fn()
            times: dict[str, list[float]] = {k: [] for k in runs}
            for _ in range(ROUNDS):
                for key, fn in runs.items():
                    times[key].append(timed(fn) * 1000)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(
                f"  {batch:>5} {med['predict']:>14.1f} {med['call']:>10.1f} {med['onnx']:>12.1f} {med['litert']:>8.1f}"
            )


if __name__ == "__main__":
    main()
