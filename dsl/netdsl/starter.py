"""A way in: `netdsl init` (a starter spec and a tiny dataset) and `netdsl examples` (the example specs).

The example specs are `specs/` in a source checkout and `netdsl/example_specs/` inside the
wheel (pyproject's hatch force-include puts them there), found here as the grammar is. The
starter trains in seconds: a small MLP on 2,000 generated 28x28 "digits" (`demo_data`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
from pathlib import Path

from netdsl.atomic import write_bytes
from netdsl.demo_data import write as write_digits
from netdsl.errors import NetdslError, did_you_mean

__all__ = ["STARTER_SPEC", "example_specs", "examples", "copy_example", "write_starter", "StarterError"]

STARTER_SAMPLES = 2000

STARTER_SPEC = """\
# A starter model: 28x28 grey images of 10 classes (digits.npz, made by `netdsl init`).
# The arrays of the data file are keyed by the input and output names: `image` and `label`.
# Your own data: see https://github.com/netdsl/netdsl/blob/main/docs/quickstart.md

model digits {
  input image: (28, 28)
  h = image -> flatten -> dense(64, activation=relu) -> dropout(0.1)
  output label = h -> dense(10)  # logits: the loss below applies the softmax

  train {
    optimizer = adam(learning_rate=1e-3)
    loss = sparse_categorical_crossentropy(from_logits=true)
    metrics = [sparse_categorical_accuracy]
    batch_size = 64
    epochs = 3
  }
}
"""


class StarterError(NetdslError):
    """A starter or an example that cannot be written (a file already there, an unknown name)."""


@functools.lru_cache(maxsize=1)
def example_specs() -> Path:
    """The folder of the example specs: inside the wheel, or `specs/` of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "example_specs", here.parent.parent / "specs"):
        if candidate.is_dir():
            return candidate
    raise StarterError("netdsl's example specs are missing from the installation")


def examples() -> dict[str, str]:
    """{name: the first sentence of its leading comment} of every example spec, by name."""
    return {path.stem: _about(path.read_text(encoding="utf-8")) for path in sorted(example_specs().glob("*.net"))}


def _about(text: str) -> str:
    words = []
    for line in text.splitlines():
        if not line.startswith("#") or not line.strip("# "):
            break
        words.append(line.strip("# "))
    about, depth = " ".join(words), 0
    for i, char in enumerate(about):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if (
            char == "."
            and depth == 0
            and about[i + 1 : i + 2] in (" ", "")
            and not about[: i + 1].endswith(("e.g.", "i.e.", "al."))
        ):
            return about[: i + 1]
    return about


def copy_example(name: str, folder: str | os.PathLike) -> list[Path]:
    """Copy the example spec `name` (and the files it imports) into `folder`; the paths written."""
    source = example_specs() / f"{name}.net"
    if not source.is_file():
        hint = did_you_mean(name, examples())
        raise StarterError(f"no example named '{name}'" + (f"; {hint}" if hint else "; see: netdsl examples"))
    folder = Path(folder)
    text = source.read_text(encoding="utf-8")
    wanted = [(source, folder / source.name)]
    for imported in re.findall(r'^import "([^"]+)"', text, re.M):
        wanted.append((example_specs() / imported, folder / imported))
    _refuse_existing([target for _, target in wanted])
    for _, target in wanted:  # every folder first: nothing is written when one is refused
        _inner_folder(folder, target.parent)
    for origin, target in wanted:
        write_bytes(target, origin.read_bytes())  # a link planted at the name is replaced, never written through
    return [target for _, target in wanted]


def write_starter(folder: str | os.PathLike) -> list[Path]:
    """`digits.net` and `digits.npz` in `folder` (made if needed); never over an existing file."""
    folder = Path(folder)
    spec, data = folder / "digits.net", folder / "digits.npz"
    _refuse_existing([spec, data])
    folder.mkdir(parents=True, exist_ok=True)
    write_bytes(spec, STARTER_SPEC.encode())
    write_digits(data, STARTER_SAMPLES, image_key="image", label_key="label")
    return [spec, data]


def _inner_folder(folder: Path, inner: Path) -> None:
    """Make `inner` (`folder` or a folder under it, `lib/` of an import) without going through a
    link planted inside `folder`; the folder the user named may itself be a link."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder
    for name in inner.relative_to(folder).parts:
        path = path / name
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            raise StarterError(f"{path} is a symbolic link; netdsl does not write through links")
        if not stat.S_ISDIR(mode):
            raise StarterError(f"{path} is not a folder")


def _refuse_existing(paths: list[Path]) -> None:
    there = [str(p) for p in paths if p.exists() or p.is_symlink()]
    if there:
        raise StarterError(f"{there[0]} already exists; netdsl does not overwrite it (choose another folder)")
