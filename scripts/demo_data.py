"""Generate the demo's data (see netdsl/demo_data.py, which the wheel ships: python -m netdsl.demo_data).

python scripts/demo_data.py build/demo/digits.npz [--samples 5000]
"""

from netdsl.demo_data import generate, main, write

__all__ = ["generate", "main", "write"]

if __name__ == "__main__":
    main()
