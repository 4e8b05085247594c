"""What export could not express, collected so that one run reports all of it."""

from __future__ import annotations

from netdsl.errors import Diagnostic, SpecError


class Problems:
    """Diagnostics about one exported file (or live model), raised together."""

    def __init__(self, file: str):
        self.file = file
        self.diagnostics: list[Diagnostic] = []
        self._seen: set[tuple[str, str | None]] = set()  # (a list search was quadratic: 3,000 layers, 20 s)

    def add(self, message: str, hint: str | None = None) -> None:
        if (message, hint) not in self._seen:
            self._seen.add((message, hint))
            self.diagnostics.append(Diagnostic.for_file(self.file, message, hint))

    def layer(self, layer, message: str, hint: str | None = None) -> None:
        """A problem with one layer, named with its class: "layer 'fc' (Lambda) ..."."""
        self.add(f"layer '{layer.name}' ({layer.class_name}) {message}", hint)

    def __bool__(self) -> bool:
        return bool(self.diagnostics)

    def raise_if_any(self) -> None:
        if self.diagnostics:
            raise SpecError(self.diagnostics)


def origin(module: str | None, registered_name: str | None) -> str:
    """Where a class comes from, as its config says: `module mypkg.layers` or `registered as 'mine>Twice'`."""
    if module:
        return f"module {module}"
    if registered_name:
        return f"registered as '{registered_name}'"
    return "no module given"
