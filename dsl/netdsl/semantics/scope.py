"""Names: what each file declares and what its imports bring (a body's own names: `values.Env`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netdsl.errors import Diagnostic
from netdsl.syntax import ir
from netdsl.syntax.loader import ImportLink, is_zoo_file

# What a file-level name is declared as: every declaration but `import` and `sweep`, which name nothing.
Declaration = (
    ir.Let | ir.LetFunc | ir.ModelDecl | ir.BlockDecl | ir.ActivationDecl | ir.LayerDecl | ir.LossDecl | ir.MetricDecl
)


@dataclass
class FileScope:
    """The names one file can see: its own declarations first, then its imports."""

    file: ir.File
    own: dict[str, Declaration] = field(default_factory=dict)
    imported: dict[str, tuple[Declaration, FileScope]] = field(default_factory=dict)
    aliases: dict[str, FileScope] = field(default_factory=dict)
    # Folded file-level constants: `values.Value`s, which values.py defines in terms of this module.
    let_values: dict[str, Any] = field(default_factory=dict)
    failed_lets: set[str] = field(default_factory=set)  # file-level constants whose folding failed (reported)

    @property
    def path(self) -> str:
        return self.file.path

    def find(self, name: str) -> tuple[Declaration, FileScope] | None:
        """The declaration a name means here, with the scope it was declared in."""
        if name in self.own:
            return self.own[name], self
        return self.imported.get(name)

    def names(self) -> list[str]:
        return list(self.own) + list(self.imported)


def build_scopes(
    files: dict[str, ir.File], imports: dict[str, list[ImportLink]], diagnostics: list[Diagnostic]
) -> dict[str, FileScope]:
    """One FileScope per file, with duplicate declarations reported."""
    scopes = {path: FileScope(file) for path, file in files.items()}
    for scope in scopes.values():
        for decl in scope.file.decls:
            if isinstance(decl, (ir.Import, ir.SweepDecl)):  # a sweep names its model; it declares nothing
                continue
            earlier = scope.own.get(decl.name)
            if earlier is not None:
                diagnostics.append(
                    Diagnostic.at(decl.span, f"'{decl.name}' is already defined at line {earlier.span.line}")
                )
                continue
            scope.own[decl.name] = decl
    for path, scope in scopes.items():
        for link in imports.get(path, []):
            target = scopes.get(link.target)
            if target is None:
                continue
            if link.alias is not None:
                if link.alias in scope.aliases or link.alias in scope.own:
                    diagnostics.append(Diagnostic.at(link.decl.span, f"'{link.alias}' is already defined"))
                scope.aliases[link.alias] = target
                continue
            for name, decl in target.own.items():
                if (isinstance(decl, ir.ModelDecl) and not is_zoo_file(target.path)) or name in scope.own:
                    continue  # models are never imported (but a zoo backbone is one); own declarations win
                known = scope.imported.get(name)
                if known is not None and known[0] is not decl:
                    diagnostics.append(
                        Diagnostic.at(
                            link.decl.span,
                            f"'{name}' is imported twice: from {known[1].path} and from {target.path}",
                            f"import one of them with 'as': import \"{link.decl.path}\" as name",
                        )
                    )
                    continue
                scope.imported[name] = (decl, target)
    return scopes


def cycle_text(what: str, name: str, path: list[str], relation: str = "uses itself") -> str:
    """The message of a definition that reaches itself, `block 'b' uses itself: b -> c -> b`;
    `path` is the chain of names from the first use of `name` on."""
    return f"{what} '{name}' {relation}: {' -> '.join([*path, name])}"
