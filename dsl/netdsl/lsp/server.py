"""`netdsl lsp`: the language server's wiring, one handler per LSP method.

The features live in their own modules (diagnostics, hover, completion,
navigation, symbols); this module only turns LSP positions into the
checker's (1-based line, code-point column) and back. Requests that must be
exact (rename, references, outline, inlay hints) wait for the check of the
current text; hover and completion answer at once from the newest check that
parsed, since typing goes on meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from netdsl.errors import SpecError
from netdsl.lsp import completion, hover, navigation, symbols
from netdsl.lsp.diagnostics import Checks
from netdsl.lsp.documents import Documents
from netdsl.lsp.positions import Lines
from netdsl.syntax.formatter import format_text
from netdsl.version import __version__


class NetdslServer(LanguageServer):
    def __init__(self, include: Sequence[str] = ()):
        super().__init__("netdsl", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.documents = Documents(lambda: self.workspace)
        self.checks = Checks(self, self.documents, include)

    def lines(self, uri: str) -> Lines:
        return Lines(self.documents.text(uri), self.documents.encoding)

    def point(self, uri: str, position: types.Position) -> tuple[int, int]:
        return self.lines(uri).point(position)

    def places(self) -> navigation.Places:
        return navigation.Places(self.documents.overlay(), self.documents.encoding)

    async def others(self, uri: str) -> list:
        """The other open documents' current checks: a rename must reach every file that uses the name."""
        found = []
        for other in self.documents.open_uris():
            if other != uri:
                snapshot = await self.checks.current(other)
                if snapshot is not None and snapshot.index is not None:
                    found.append((snapshot, self.documents.real(other)))
        return found


def make_server(include: Sequence[str] = ()) -> NetdslServer:
    server = NetdslServer(include)

    @server.feature(types.INITIALIZED)
    def initialized(ls: NetdslServer, params: types.InitializedParams) -> None:
        _warm_up(ls)

    # -------------------------------------------------------------- document sync
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: NetdslServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.checks.opened(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: NetdslServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.checks.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: NetdslServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.checks.saved(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: NetdslServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.checks.closed(params.text_document.uri)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: NetdslServer, params: None) -> None:
        ls.checks.shutdown()

    # -------------------------------------------------------------- at once, from the newest parse
    # (a document not checked yet: its first check, waited for)
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: NetdslServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        snapshot = await ls.checks.latest_or_first(uri)
        lines = ls.lines(uri)
        line, col = lines.point(params.position)
        before = "\n".join(lines.lines[max(0, line - 40) : line - 1] + [""])
        found = hover.hover_text(snapshot, before, lines.line(line), ls.documents.display(uri), line, col)
        if found is None:
            return None
        text, start, end = found
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=types.Range(start=lines.position(line, start), end=lines.position(line, end)),
        )

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[">", "(", ",", "=", "."], resolve_provider=True),
    )
    async def on_completion(ls: NetdslServer, params: types.CompletionParams) -> types.CompletionList:
        uri = params.text_document.uri
        snapshot = await ls.checks.latest_or_first(uri)
        line, col, context = _context(ls, uri, params.position)
        return completion.completion_list(context, snapshot, ls.documents.display(uri), line, col)

    @server.feature(types.COMPLETION_ITEM_RESOLVE)
    def on_completion_resolve(ls: NetdslServer, item: types.CompletionItem) -> types.CompletionItem:
        return completion.resolve(item)

    @server.feature(types.TEXT_DOCUMENT_SIGNATURE_HELP, types.SignatureHelpOptions(trigger_characters=["(", ","]))
    async def on_signature_help(ls: NetdslServer, params: types.SignatureHelpParams) -> types.SignatureHelp | None:
        uri = params.text_document.uri
        snapshot = await ls.checks.latest_or_first(uri)
        _, _, context = _context(ls, uri, params.position)
        return completion.signature_help(context, snapshot, ls.documents.display(uri))

    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    def on_formatting(ls: NetdslServer, params: types.DocumentFormattingParams) -> list[types.TextEdit] | None:
        uri = params.text_document.uri
        text = ls.documents.text(uri)
        try:
            formatted = format_text(text, ls.documents.display(uri))
        except SpecError:
            return None  # the diagnostics already say why it does not parse
        if formatted == text:
            return []
        lines = ls.lines(uri)
        return [
            types.TextEdit(
                range=types.Range(start=types.Position(line=0, character=0), end=lines.end()), new_text=formatted
            )
        ]

    # -------------------------------------------------------------- exact: the current text's check
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def on_definition(ls: NetdslServer, params: types.DefinitionParams) -> list[types.Location]:
        uri = params.text_document.uri
        snapshot = await ls.checks.current(uri)
        if snapshot is None or snapshot.index is None:
            return []
        line, col = ls.point(uri, params.position)
        return navigation.definition(snapshot, ls.documents.real(uri), ls.places(), line, col)

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def on_references(ls: NetdslServer, params: types.ReferenceParams) -> list[types.Location]:
        uri = params.text_document.uri
        snapshot = await ls.checks.current(uri)
        if snapshot is None or snapshot.index is None:
            return []
        line, col = ls.point(uri, params.position)
        return navigation.references(
            snapshot,
            ls.documents.real(uri),
            ls.places(),
            line,
            col,
            params.context.include_declaration,
            await ls.others(uri),
        )

    @server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
    async def on_prepare_rename(ls: NetdslServer, params: types.PrepareRenameParams) -> types.Range | None:
        uri = params.text_document.uri
        snapshot = await ls.checks.current(uri)
        line, col = ls.point(uri, params.position)
        span = navigation.prepare_rename(snapshot, line, col)
        return ls.lines(uri).range(span) if span is not None else None

    @server.feature(types.TEXT_DOCUMENT_RENAME, types.RenameOptions(prepare_provider=True))
    async def on_rename(ls: NetdslServer, params: types.RenameParams) -> types.WorkspaceEdit | None:
        uri = params.text_document.uri
        snapshot = await ls.checks.current(uri)
        if snapshot is None or snapshot.index is None:
            return None
        if snapshot.version != ls.documents.version(uri):  # its places would be an older text's
            raise JsonRpcInvalidParams("the file is still being checked; try again")
        line, col = ls.point(uri, params.position)
        try:
            others = await ls.others(uri)
            return navigation.rename(snapshot, ls.documents.real(uri), ls.places(), line, col, params.new_name, others)
        except ValueError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def on_symbols(ls: NetdslServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        uri = params.text_document.uri
        snapshot = await ls.checks.current(uri)
        if snapshot is None or not snapshot.parsed:
            snapshot = ls.checks.latest(uri)
            if snapshot is None or not snapshot.parsed or snapshot.version != ls.documents.version(uri):
                return []  # positions of an older text would point at the wrong lines
        return symbols.document_symbols(snapshot, ls.lines(uri))

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    async def on_inlay_hint(ls: NetdslServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        uri = params.text_document.uri
        snapshot = await ls.checks.current(uri)
        if snapshot is None or not snapshot.parsed or snapshot.version != ls.documents.version(uri):
            return []
        return symbols.inlay_hints(snapshot, ls.lines(uri), params.range.start.line + 1, params.range.end.line + 1)

    return server


def _context(ls: NetdslServer, uri: str, position: types.Position):
    lines = ls.lines(uri)
    line, col = lines.point(position)
    before = "\n".join(lines.lines[max(0, line - 40) : line - 1] + [lines.line(line)[: col - 1]])
    return line, col, completion.context_at(before)


def _warm_up(ls: NetdslServer) -> None:
    """Build the JSON converters of the answers sent on every key before the first key.

    cattrs writes each type's converter on first use (0.1-0.2 s here for a
    completion list): the user's first completion should not pay for it."""
    position = types.Position(line=0, character=0)
    rng = types.Range(start=position, end=position)
    samples = [
        types.CompletionList(
            is_incomplete=False,
            items=[
                types.CompletionItem(
                    label="x", kind=types.CompletionItemKind.Class, detail="x", sort_text="x", insert_text="x"
                )
            ],
        ),
        types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="x"), range=rng),
        types.SignatureHelp(
            signatures=[
                types.SignatureInformation(
                    label="f(a)",
                    documentation="x",
                    parameters=[types.ParameterInformation(label=(2, 3))],
                    active_parameter=0,
                )
            ],
            active_signature=0,
            active_parameter=0,
        ),
        types.PublishDiagnosticsParams(
            uri="file:///x",
            version=1,
            diagnostics=[
                types.Diagnostic(range=rng, message="x", severity=types.DiagnosticSeverity.Error, source="netdsl")
            ],
        ),
    ]
    converter = getattr(ls.protocol, "_converter", None)
    if converter is not None:
        for sample in samples:
            converter.unstructure(sample)


def serve(include: Sequence[str] = ()) -> None:
    """Serve one client over stdin/stdout until it says exit."""
    make_server(include).start_io()
