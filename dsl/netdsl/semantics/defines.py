"""`-D NAME=VALUE` / `defines={...}`: file-level constants of the root spec replaced before the check.

    program = apply_defines(load_file("mlp.net"), {"width": 128, "lr": 3e-4})
    program = apply_defines(program, parse_defines(["width=128", "act=gelu"]))   # the CLI's text

A define replaces the value of a file-level `let` of the root file with a literal (an
integer, a number, a string, a boolean, none, a list or tuple of them, or a name where
the constant holds a name like `relu`). The literal keeps the span of the value it
replaces, so an error the new value causes (`dense(0)`) points at the constant's line.
A name the file does not declare as a constant gets a did-you-mean; a literal of another
type than the constant's an error naming both types (an integer is accepted where the
constant is a number). Nothing here evaluates more than the constant's own value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from netdsl.errors import Diagnostic, Fail, SpecError, did_you_mean
from netdsl.semantics.consts import Consts
from netdsl.semantics.scope import build_scopes
from netdsl.semantics.values import UNKNOWN, SpecName, Sym, type_name
from netdsl.syntax import ir
from netdsl.syntax.loader import Program
from netdsl.syntax.transform import to_ir

Defines = Mapping[str, Any]  # constant name -> a Python literal (int, float, str, bool, None, list, tuple)


def parse_defines(texts: Iterable[str], display: str = "-D") -> dict[str, Any]:
    """`["width=128", 'act="gelu"']` (the CLI's `-D` values) to {name: Python value}; SpecError on a bad one."""
    out: dict[str, Any] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise SpecError(
                Diagnostic.for_file(
                    display,
                    f"-D takes NAME=VALUE, received {text!r}",
                    "for example: -D width=128 -D lr=3e-4 -D 'act=\"gelu\"'",
                )
            )
        out[name] = _literal_text(name, value.strip(), display)
    return out


def _literal_text(name: str, text: str, display: str) -> Any:
    """The Python value of a literal written in spec syntax."""
    bad = SpecError(
        Diagnostic.for_file(
            display,
            f"-D {name}: {text!r} is not a literal",
            "values are integers, numbers, strings in quotes, true/false, none, names, or lists of them",
        )
    )
    if not text or "\n" in text or ";" in text:
        raise bad
    try:
        decls = to_ir(f"let {name} = {text}\n", display).decls
    except SpecError:
        raise bad from None
    if len(decls) != 1 or not isinstance(decls[0], ir.Let):
        raise bad
    try:
        return _value_of(decls[0].value)
    except ValueError:
        raise bad from None


def _value_of(node: Any) -> Any:
    if isinstance(node, (ir.Number, ir.String, ir.Bool)):
        return node.value
    if isinstance(node, ir.NoneLit):
        return None
    if isinstance(node, ir.Name):
        return SpecName(node.id)
    if isinstance(node, ir.UnaryOp) and node.op in ("-", "+") and isinstance(node.operand, ir.Number):
        return -node.operand.value if node.op == "-" else node.operand.value
    if isinstance(node, ir.List):
        return [_value_of(item) for item in node.items]
    if isinstance(node, ir.Tuple):
        return tuple(_value_of(item) for item in node.items)
    raise ValueError("not a literal")


def apply_defines(program: Program, defines: Defines | None) -> Program:
    """`program` with the root file's constants replaced by `defines`; SpecError naming every bad one."""
    if not defines:
        return program
    root = program.root_file
    lets = {d.name: d for d in root.decls if isinstance(d, ir.Let)}
    scopes = build_scopes(program.files, program.imports, [])
    consts = Consts()
    unknown: list[Diagnostic] = []  # of the command line: shown without a source line
    errors: list[Diagnostic] = []
    replaced: dict[int, ir.Let] = {}
    for name, value in defines.items():
        decl = lets.get(name)
        if decl is None:
            hint = did_you_mean(name, lets) or (
                f"constants: {', '.join(lets)}"
                if lets
                else "the spec declares no file-level constant ('let NAME = VALUE')"
            )
            unknown.append(Diagnostic.for_file(program.root, f"-D {name}: the spec has no constant '{name}'", hint))
            continue
        try:
            original = consts.file_let(scopes[program.root], name, decl.span)
        except Fail:
            original = UNKNOWN  # its own error is reported by the check; any literal may replace it
        try:
            replaced[id(decl)] = decl.model_copy(update={"value": literal_node(value, original, decl.value.span)})
        except TypeError as exc:
            errors.append(Diagnostic.at(decl.value.span, f"-D {name}: {exc}"))
    if unknown:
        raise SpecError(unknown)
    if errors:
        raise SpecError(errors, program.sources())
    decls = [replaced.get(id(d), d) for d in root.decls]
    files = {**program.files, program.root: root.model_copy(update={"decls": decls})}
    return program.model_copy(update={"files": files})


def literal_node(value: Any, original: Any, span: Any) -> Any:
    """The IR of `value` in place of a constant that held `original` (UNKNOWN: any type); TypeError
    naming both types when they differ."""
    if isinstance(value, SpecName):
        if isinstance(original, Sym):
            return ir.Name.model_construct(span=span, id=str(value))
        if isinstance(original, str) or original is UNKNOWN:
            return _node(str(value), span)  # `-D act=gelu` for `let act = "relu"`
        raise TypeError(f"the constant is {type_name(original)}, received the name {value}")
    if original is not UNKNOWN and not _same_type(original, value):
        raise TypeError(f"the constant is {type_name(original)}, received {_typed(value)}")
    if isinstance(original, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    return _node(value, span)


def _same_type(original: Any, value: Any) -> bool:
    if isinstance(original, float) and isinstance(value, int) and not isinstance(value, bool):
        return True  # an integer where a number is expected
    return type_name(original) == type_name(value)


def _typed(value: Any) -> str:
    """A -D value with what it is ("an integer 3"); none once (its type and value are one word)."""
    return "none" if value is None else f"{type_name(value)} {_shown(value)}"


def _shown(value: Any) -> str:
    return repr(value) if not isinstance(value, bool) else str(value).lower()


def _node(value: Any, span: Any) -> Any:
    if isinstance(value, bool):
        return ir.Bool.model_construct(span=span, value=value)
    if value is None:
        return ir.NoneLit.model_construct(span=span)
    if isinstance(value, (int, float)):
        return ir.Number.model_construct(span=span, value=value)
    if isinstance(value, str):
        return ir.String.model_construct(span=span, value=value)
    if isinstance(value, list):
        return ir.List.model_construct(span=span, items=[_node(v, span) for v in value])
    if isinstance(value, tuple):
        return ir.Tuple.model_construct(span=span, items=[_node(v, span) for v in value])
    raise TypeError(
        f"a define is a literal (int, float, str, bool, None, list or tuple), received {type(value).__name__}"
    )
