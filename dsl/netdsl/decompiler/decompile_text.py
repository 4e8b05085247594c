"""From a model's config to spec text: name models and shared layers, build, fold, print."""

from __future__ import annotations

from netdsl.decompiler.emit import block_decl, let_decl, model_decl
from netdsl.decompiler.graph import KModel, read_model
from netdsl.decompiler.lets import factor_lets
from netdsl.decompiler.naming import Namer
from netdsl.decompiler.problems import Problems
from netdsl.decompiler.program import build_program
from netdsl.errors import Diagnostic, SpecError
from netdsl.syntax import ir
from netdsl.syntax.formatter import format_ir


def decompile_config(config: dict, file: str, flat: bool = False) -> str:
    """The spec text of a serialised model (see `decompile_model`)."""
    try:
        return _decompile(config, file, flat)
    except RecursionError:
        raise SpecError(Diagnostic.for_file(file, "the model's config is nested too deeply")) from None


def _decompile(config: dict, file: str, flat: bool) -> str:
    problems = Problems(file)
    model = read_model(config, problems)
    problems.raise_if_any()
    assert model is not None, "read_model gave no model and recorded no problem"
    models = _models_inner_first(model)
    file_names = Namer()
    model_names = {id(m): file_names.take(m.name) for m in models}
    programs = []
    for m in models:
        shared = _shared_names(m, file_names)
        programs.append((build_program(m, model_names, shared, problems, flat), set(shared.values())))
        programs[-1][0].name = model_names[id(m)]
    problems.raise_if_any()
    blocks = []
    if not flat:
        from netdsl.decompiler.blocks import recover_blocks

        blocks = recover_blocks([p for p, _ in programs], file_names)
    lets = factor_lets(blocks, [p for p, _ in programs], file_names)
    decls: list[ir.Let | ir.BlockDecl | ir.ModelDecl] = [let_decl(name, value) for name, value in lets]
    decls += [block_decl(b) for b in blocks]
    decls += [model_decl(p, file_names.taken | shared) for p, shared in programs]
    return format_ir(decls)


def _models_inner_first(model: KModel) -> list[KModel]:
    """The model and every model nested in it, each after the models it uses."""
    ordered: list[KModel] = []
    seen: set[int] = set()

    def visit(m: KModel) -> None:
        if id(m) in seen:
            return
        seen.add(id(m))
        for layer in m.layers:
            if layer.model is not None:
                visit(layer.model)
        ordered.append(m)

    visit(model)
    return ordered


def _shared_names(model: KModel, file_names: Namer) -> dict[str, str]:
    """Spec names of the layers the model calls more than once (nested models aside)."""
    local = Namer(file_names.taken)
    return {
        layer.name: local.take(layer.name)
        for layer in model.layers
        if len(layer.calls) > 1 and layer.model is None and layer.class_name != "InputLayer"
    }
