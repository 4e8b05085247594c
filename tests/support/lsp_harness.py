"""A real LSP client for the tests and the bench: `netdsl lsp` in a subprocess over stdio.

`Recorder` keeps every publishDiagnostics with its arrival time, so a test can
wait for the publish of one document version, and see every log message the
server sent (a traceback there is a failure).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "netdsl.cli", "lsp"]


class Recorder:
    def __init__(self) -> None:
        self.publishes: list[tuple[float, types.PublishDiagnosticsParams]] = []
        self.changed = asyncio.Event()

    def publish(self, client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        self.publishes.append((time.perf_counter(), params))
        self.changed.set()

    def last(self, uri: str) -> types.PublishDiagnosticsParams | None:
        return next((p for _, p in reversed(self.publishes) if p.uri == uri), None)

    async def wait_for(self, uri: str, version: int | None, timeout: float = 30.0) -> types.PublishDiagnosticsParams:
        """The first publish for `uri` at `version` (None: any, once cleared on close)."""
        deadline = time.monotonic() + timeout
        while True:
            for _, params in self.publishes:
                if params.uri == uri and params.version == version:
                    return params
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version} within {timeout} s")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def published_at(self, uri: str, version: int) -> float:
        return next(t for t, p in self.publishes if p.uri == uri and p.version == version)


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    client.recorder = Recorder()
    for method, handler in DEFAULT_CLIENT_FEATURES.items():
        if method != types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            client.feature(method)(handler)

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.recorder.publish(client, params)

    client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(publish)
    return client


CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client)


def capabilities(encodings: list[str] | None = None) -> types.ClientCapabilities:
    general = types.GeneralClientCapabilities(position_encodings=encodings) if encodings else None
    return types.ClientCapabilities(
        general=general,
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
            rename=types.RenameClientCapabilities(prepare_support=True),
            document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
        ),
        workspace=types.WorkspaceClientCapabilities(workspace_folders=True),
    )


async def initialize(client: LanguageClient, encodings: list[str] | None = None, root: Path = ROOT):
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(encodings),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        )
    )


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="netdsl", version=version, text=text)
        )
    )


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    """A full-text change (what a client sends when it does not send ranges)."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def edit(client: LanguageClient, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str):
    """An incremental change of the range start..end (0-based line, client character)."""
    rng = types.Range(
        start=types.Position(line=start[0], character=start[1]), end=types.Position(line=end[0], character=end[1])
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=text)],
        )
    )


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def utf16_column(line: str, index: int) -> int:
    return len(line[:index].encode("utf-16-le")) // 2


def expected_lsp(check_json: list[dict], display: str, text: str) -> list[dict]:
    """`netdsl check --format json` diagnostics of `display` as LSP ranges (UTF-16) and messages."""
    lines = text.split("\n")

    def column(line: int, col: int) -> int:
        line_text = lines[line - 1] if 1 <= line <= len(lines) else ""
        return utf16_column(line_text, col - 1)

    out = []
    for d in check_json:
        if d["file"] != display:
            continue
        text_ = d["message"] + (f"; {d['hint']}" if d["hint"] else "")
        out.append(
            {
                "range": (
                    (d["line"] - 1, column(d["line"], d["col"])),
                    (d["end_line"] - 1, column(d["end_line"], d["end_col"])),
                ),
                "message": text_,
                "severity": 1 if d["severity"] == "error" else 2,
            }
        )
    return out


def as_dicts(diagnostics) -> list[dict]:
    return [
        {
            "range": ((d.range.start.line, d.range.start.character), (d.range.end.line, d.range.end.character)),
            "message": d.message,
            "severity": int(d.severity),
        }
        for d in diagnostics
    ]


def assert_same_as_check(diagnostics, check: list[dict], display: str, text: str) -> None:
    """The published diagnostics are `netdsl check`'s: those of the file itself at its ranges
    (UTF-16), those of imported files on the import line with their place as related information."""
    own = as_dicts(d for d in diagnostics if not d.related_information)
    wanted = expected_lsp(check, display, text)
    assert own == wanted, f"published {own}\nnetdsl check {wanted}"
    related = [d.message for d in diagnostics if d.related_information]
    wanted = [
        f"{d['file']}:{d['line']}:{d['col']}: {d['message']}" + (f"; {d['hint']}" if d["hint"] else "")
        for d in check
        if d["file"] != display
    ]
    assert related == wanted, f"published {related}\nnetdsl check {wanted}"
