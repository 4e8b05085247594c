"""The library API: `parse`, `parse_file`, `check`, `format`, `build`, `build_all`, `render`.

Everything here is cheap to import; `build` and `render` import Keras (and
only they do) when called.
"""

from __future__ import annotations

import os
from typing import Any, Union

from .check import Analysis, analyze
from .errors import Diagnostic, SpecError
from .loader import Program, load_file, load_text

Source = Union[str, os.PathLike, Program]


def parse(text: str | bytes, filename: str = "<string>", include: list = ()) -> Program:
    """Parse spec text (and the files it imports) into a Program; SpecError on syntax errors."""
    return load_text(text, filename, include)


def parse_file(path: str | os.PathLike, include: list = ()) -> Program:
    """Parse a spec file (and the files it imports) into a Program."""
    return load_file(path, include)


def check(source: Source | str, filename: str | None = None, include: list = ()) -> list[Diagnostic]:
    """All diagnostics of a spec (empty when it is clean). `source`: a path, a Program, or text with filename=."""
    try:
        program = _program(source, filename, include)
    except SpecError as exc:
        return exc.diagnostics
    return analyze(program).diagnostics


def checked(source: Source, model: str | None = None, include: list = (), **options: Any) -> Analysis:
    """Load and check; raise SpecError when there is any error."""
    program = _program(source, None, include)
    analysis = analyze(program, models=[model] if model else None, **options)
    if analysis.errors:
        raise SpecError(analysis.errors, program.sources())
    return analysis


def format(text: str, filename: str = "<string>") -> str:  # noqa: A001 - the API's name
    """The canonical formatting of spec text (comments kept)."""
    from .formatter import format_text

    return format_text(text, filename)


def build(source: Source, model: str | None = None, **options: Any) -> Any:
    """Build one model of a spec as a `keras.Model` (compiled when it has a train section)."""
    from .compile import build_model

    return build_model(source, model, **options)


def build_all(source: Source, **options: Any) -> dict[str, Any]:
    """Build every model of a spec: {name: keras.Model}."""
    from .compile import build_models

    return build_models(source, **options)


def fit_kwargs(model: Any) -> dict[str, Any]:
    """`model.fit` keyword arguments from a built model's train section (batch_size, epochs,
    validation_split, shuffle, callbacks): `model.fit(x, y, **netdsl.fit_kwargs(model))`."""
    from .compile import fit_kwargs as _fit_kwargs

    return _fit_kwargs(model)


def render(source: Source, model: str | None = None, *, shapes: bool = True, depth: int | None = None) -> Any:
    """The architecture diagram of one model as a `graphviz.Digraph`."""
    from .renderer import render_model

    return render_model(source, model, shapes=shapes, depth=depth)


def _program(source: Any, filename: str | None, include: list) -> Program:
    if isinstance(source, Program):
        return source
    if filename is not None:
        return load_text(source, filename, include)
    return load_file(source, include)


def pick_model(program: Program, model: str | None) -> str:
    """The model a command means: the one named, or the file's only model."""
    from .errors import did_you_mean

    names = program.model_names
    if model is not None:
        if model not in names:
            hint = did_you_mean(model, names) or (f"models: {', '.join(names)}" if names else None)
            raise SpecError(Diagnostic.for_file(program.root, f"no model named '{model}'", hint))
        return model
    if len(names) == 1:
        return names[0]
    if not names:
        raise SpecError(Diagnostic.for_file(program.root, "the spec declares no model"))
    raise SpecError(Diagnostic.for_file(program.root, f"the spec declares {len(names)} models; pick one",
                                        f"models: {', '.join(names)}"))
