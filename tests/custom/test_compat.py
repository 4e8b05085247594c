"""Models saved by earlier releases keep loading: `.keras` files name `netdsl.custom` classes."""

import subprocess
import sys
from pathlib import Path

COMPAT = Path(__file__).resolve().parents[1] / "fixtures" / "compat"

_LOAD = """
import sys, numpy as np, netdsl, keras
model = keras.saving.load_model(sys.argv[1], safe_mode=True)
io = np.load(sys.argv[2])
got = np.asarray(model.predict(io["x"], verbose=0))
print(model.count_params(), float(np.max(np.abs(got - io["y"]))))
"""


def test_model_saved_by_0_1_0_loads_safely_in_a_fresh_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(COMPAT / "v0_1_0.keras"), str(COMPAT / "v0_1_0_io.npz")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    params, diff = done.stdout.split()
    assert int(params) == 860
    assert float(diff) <= 1e-6


def test_a_frozen_scale_saved_by_0_1_0_keeps_its_saved_constant() -> None:
    """0.1.0 kept a frozen `scale`'s constant as a weight (set to 2.5 there); it now holds none."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _LOAD,
            str(COMPAT / "v0_1_0_frozen_scale.keras"),
            str(COMPAT / "v0_1_0_frozen_scale_io.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    params, diff = done.stdout.split()
    assert int(params) == 15  # the dense layer's 4 * 3 + 3
    assert float(diff) <= 1e-6
