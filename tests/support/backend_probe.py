"""Run in a subprocess on one Keras backend (the backend is chosen once per process).

    python tests/support/backend_probe.py make  DIR BACKEND SPEC...   build, (train a little,) save, predict
    python tests/support/backend_probe.py check DIR BACKEND SPEC...   rebuild with `make`'s weights, load its files

`make` writes, per model, `DIR/<model>.npz` (the weights, the inputs, the
outputs, the parameter count) and `DIR/<model>.keras`; models with a train
section are first trained for one epoch on random data, so the saved file
holds a trained model with optimizer state. `check` builds the same spec on
its own backend, copies the weights in and writes the outputs
(`DIR/<model>.rebuilt.npz`), and loads the `.keras` file with
`safe_mode=True` and writes its predictions (`DIR/<model>.loaded.npz`).
The tests compare them with numpy only (`probe` runs a mode, `compare` compares); `made_once`
gives the tests that check TensorFlow's models on another backend one `make` for the whole run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

ROOT = Path(__file__).resolve().parents[2]


def main(mode: str, folder: str, backend: str, specs: list[str]) -> None:
    os.environ["KERAS_BACKEND"] = backend
    import numpy as np

    import netdsl
    from netdsl.backend.runtime import current_backend

    out = Path(folder)
    if mode == "check":
        draw_initial_weights_with_numpy()  # `check` overwrites every weight it builds or loads
    for spec in specs:
        for name, model in netdsl.build_all(spec, backend=backend).items():
            assert current_backend() == backend
            if mode == "make":
                _make(np, model, out / name)
            else:
                _check(np, model, out / name)


def _inputs(np, model, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    arrays = []
    for tensor in model.inputs:
        shape = (2, *(d if d is not None else 8 for d in tensor.shape[1:]))
        dtype = str(tensor.dtype)
        if "int" in dtype:
            arrays.append(rng.integers(0, 8, shape).astype(dtype))
        else:
            arrays.append(rng.normal(size=shape).astype(dtype))
    return arrays


def _outputs(np, model, inputs: list) -> list:
    import keras

    result = model(inputs if len(inputs) > 1 else inputs[0], training=False)
    return [np.asarray(keras.ops.convert_to_numpy(t)) for t in keras.tree.flatten(result)]


def _train_a_little(np, model, inputs: list) -> None:
    if getattr(model, "optimizer", None) is None:
        return
    import keras

    keras.utils.set_random_seed(1)
    targets = [np.zeros((2, *t.shape[1:]), "float32") if None not in t.shape[1:] else None for t in model.outputs]
    if any(t is None for t in targets) or len(model.outputs) != 1:
        return  # a tiny fit needs fixed output shapes; loading is still checked
    loss = model.loss if isinstance(model.loss, str) else getattr(model.loss, "name", "")
    if "sparse" in str(loss):
        targets = [np.zeros((2, *model.outputs[0].shape[1:-1]), "int32")]
    # One step, run eagerly: tracing the step into a graph (TensorFlow) or compiling it (JAX) costs up to
    # 15 s for U-Net and is no part of what is checked (the saved weights and optimizer state; the file's
    # compile config is the one `compile` recorded).
    eagerly, model.run_eagerly = model.run_eagerly, True
    try:
        model.fit(inputs if len(inputs) > 1 else inputs[0], targets[0], epochs=1, batch_size=2, verbose=0)
    finally:
        model.run_eagerly = eagerly


def _make(np, model, base: Path) -> None:
    inputs = _inputs(np, model)
    _train_a_little(np, model, inputs)
    weights = model.get_weights()
    outputs = _outputs(np, model, inputs)
    model.save(base.with_suffix(".keras"))
    arrays = {f"w{i:04d}": w for i, w in enumerate(weights)}
    arrays.update({f"x{i}": x for i, x in enumerate(inputs)})
    arrays.update({f"y{i}": y for i, y in enumerate(outputs)})
    np.savez(base.with_suffix(".npz"), params=np.int64(model.count_params()), **arrays)


def _check(np, model, base: Path) -> None:
    import keras

    made = np.load(base.with_suffix(".npz"))
    weights = [made[k] for k in sorted(k for k in made.files if k.startswith("w"))]
    inputs = [made[f"x{i}"] for i in range(len(model.inputs))]
    model.set_weights(weights)
    outputs = _outputs(np, model, inputs)
    np.savez(
        f"{base}.rebuilt.npz", params=np.int64(model.count_params()), **{f"y{i}": y for i, y in enumerate(outputs)}
    )
    loaded = keras.saving.load_model(base.with_suffix(".keras"), safe_mode=True)
    outputs = _outputs(np, loaded, inputs)
    np.savez(f"{base}.loaded.npz", **{f"y{i}": y for i, y in enumerate(outputs)})


# ------------------------------------------------------------------ the tests' side


def probe(mode: str, folder: Path, backend: str, specs: list[str]) -> None:
    """Run this script in a process of its own on `backend` (asserting it succeeded): forked from one
    that imported Keras on that backend (tests/support/forked_cli.py), the start-up paid once."""
    from tests.support import forked_cli

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    result = forked_cli.run(
        [mode, str(folder), backend, *(str(ROOT / "specs" / f"{s}.net") for s in specs)],
        ROOT,
        env,
        timeout=900,
        script=Path(__file__),
        backend=backend,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def made_once(factory: pytest.TempPathFactory, backend: str, specs: list[str], into: Path) -> None:
    """`probe("make", into, backend, specs)`, made once per run and copied: the tests that check the
    same models on other backends share it (xdist's workers too: the first makes it under a lock,
    the others wait for it). A check writes its files beside the made ones, into its own copy."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # this run's folder, above each worker's own
    folder = base / f"made-{backend}-{'-'.join(specs)}"
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            probe("make", folder, backend, specs)
            (folder / "made").touch()
    shutil.copytree(folder, into, dirs_exist_ok=True, ignore=shutil.ignore_patterns("made"))


def compare(folder: Path) -> dict[str, int]:
    """{model: parameters}; counts asserted equal, rebuilt and loaded outputs equal to 1e-5."""
    import numpy as np

    found = {}
    for made_path in sorted(folder.glob("*.npz")):
        if made_path.name.endswith((".rebuilt.npz", ".loaded.npz")):
            continue
        base = str(made_path)[:-4]
        made, rebuilt, loaded = np.load(made_path), np.load(base + ".rebuilt.npz"), np.load(base + ".loaded.npz")
        assert int(made["params"]) == int(rebuilt["params"]), made_path.stem
        outputs = [k for k in made.files if k.startswith("y")]
        assert outputs and sorted(outputs) == sorted(k for k in rebuilt.files if k.startswith("y"))
        for key in outputs:
            np.testing.assert_allclose(rebuilt[key], made[key], rtol=1e-5, atol=1e-5, err_msg=made_path.stem)
            np.testing.assert_allclose(loaded[key], made[key], rtol=1e-5, atol=1e-5, err_msg=made_path.stem)
        found[made_path.stem] = int(made["params"])
    return found


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # run as a script: the repository's `tests` package for numpy_init
    from tests.support.numpy_init import draw_initial_weights_with_numpy

    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
