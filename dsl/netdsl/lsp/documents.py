"""The open buffers: their text and version (kept by pygls' workspace), the
names they are shown by, and the overlay that imports read before the disk.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from netdsl.lsp.positions import UTF16


class Documents:
    def __init__(self, workspace_getter: Callable[[], Workspace]) -> None:
        self._workspace = workspace_getter  # pygls' workspace exists only once the server runs
        self._real: dict[str, Path] = {}

    @property
    def workspace(self) -> Workspace:
        return self._workspace()

    @property
    def encoding(self) -> str:
        encoding = self.workspace.position_encoding
        return str(getattr(encoding, "value", encoding) or UTF16)

    def is_open(self, uri: str) -> bool:
        return uri in self.workspace.text_documents

    def text(self, uri: str) -> str:
        """An open document's text; "" for any other URI. (pygls would read a file that is not open
        from disk, on the message loop: a FIFO there would stop the whole server.)"""
        document = self.workspace.text_documents.get(uri)
        return document.source if document is not None else ""

    def version(self, uri: str) -> int | None:
        document = self.workspace.text_documents.get(uri)
        return document.version if document is not None else None

    def open_uris(self) -> list[str]:
        return list(self.workspace.text_documents)

    def real(self, uri: str) -> Path:
        """The file a document is (resolved), whether or not it was ever saved."""
        if uri not in self._real:
            path = to_fs_path(uri) if uri.startswith("file:") else None
            self._real[uri] = Path(path).resolve() if path else Path.cwd() / "untitled.net"
        return self._real[uri]

    def forget(self, uri: str) -> None:
        self._real.pop(uri, None)

    def display(self, uri: str) -> str:
        """The name diagnostics use: relative to the workspace folder holding it, as
        `netdsl check` run there would print it; else the absolute path."""
        real = self.real(uri)
        for root in self._roots():
            try:
                return str(real.relative_to(root))
            except ValueError:
                continue
        return str(real)

    def overlay(self) -> dict[Path, str]:
        """Every open buffer by its resolved path: what imports read first."""
        return {
            self.real(uri): document.source
            for uri, document in self.workspace.text_documents.items()
            if uri.startswith("file:")
        }

    def _roots(self) -> list[Path]:
        roots = []
        for folder in self.workspace.folders.values():
            path = to_fs_path(folder.uri)
            if path:
                roots.append(Path(path).resolve())
        if self.workspace.root_path:
            roots.append(Path(self.workspace.root_path).resolve())
        return sorted(set(roots), key=lambda p: len(p.parts), reverse=True)  # the innermost folder first
