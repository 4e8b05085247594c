"""Random edit sequences over the example specs, sent as a client types them.

Whatever the edits leave (half a token, an emoji, an open bracket), the
server must stay up, log no traceback, and its last publish for the final
version must equal `netdsl.check` on the final text. Seeded: a failure
names its sequence. A fast subset runs always; all 1,000 are `slow`.
"""

from __future__ import annotations

import asyncio
import random

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

import netdsl
from tests.support.lsp_harness import CONFIG, ROOT, assert_same_as_check, edit, initialize, open_doc, utf16_column

SPECS = sorted((ROOT / "specs").glob("*.net"))
PIECES = [
    "->",
    "(",
    ")",
    ",",
    "=",
    "*",
    "+",
    " ",
    "\n",
    "x",
    "h",
    "dense(4)",
    "relu",
    "-> relu",
    " * 2",
    "#",
    '"',
    "{",
    "}",
    "[",
    "]",
    "🙂",
    "é",
    "let",
    "model",
    "input",
    "output",
    "block",
    "1e-3",
    "none",
    "conv2d(8, 3)",
    "  ",
    "\t",
    ";",
    ".",
    "shape",
    "-1",
    "(none,)",
    'import "lib/conv.net"',
    "if",
    "else",
]
FAST, FULL = 25, 1000
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient):
    # The workspace folder is elsewhere: documents show by absolute path, as netdsl.check names them.
    await initialize(lsp_client, root=ROOT / "docs")
    yield
    await lsp_client.shutdown_session()


def random_edit(rng: random.Random, text: str) -> tuple[tuple[int, int], tuple[int, int], str, str]:
    """(start, end) as (line, UTF-16 column), the inserted text, and the text after the edit."""
    start = rng.randrange(len(text) + 1)
    end = min(len(text), start + rng.choice([0, 0, 1, 2, 5, 12]))
    if rng.random() < 0.1:  # a whole line duplicated or removed
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", start) + 1 or len(text)
        start, end = line_start, line_start if rng.random() < 0.5 else line_end
        insert = text[line_start:line_end] if start == end else ""
    else:
        insert = rng.choice(PIECES) if rng.random() < 0.8 else ""
    return _position(text, start), _position(text, end), insert, text[:start] + insert + text[end:]


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index)
    line_start = text.rfind("\n", 0, index) + 1
    line_end = text.find("\n", index)
    line_text = text[line_start : line_end if line_end >= 0 else len(text)]
    return line, utf16_column(line_text, index - line_start)


IN_FLIGHT = 4  # documents edited at once: the server's debounce (30 ms a burst) then waits for four at a time


async def run_sequences(client: LanguageClient, first: int, count: int, capfd) -> None:
    numbers = range(first, first + count)
    for start in range(0, count, IN_FLIGHT):
        await asyncio.gather(*(_run_sequence(client, n) for n in numbers[start : start + IN_FLIGHT]))
    assert client._server.returncode is None, "the server exited"
    errors = [m.message for m in client.log_messages if m.type == types.MessageType.Error or "Traceback" in m.message]
    assert errors == [] and list(client.messages) == [], (errors, client.messages)
    assert "Traceback" not in capfd.readouterr().err


async def _run_sequence(client: LanguageClient, number: int) -> None:
    """One seeded sequence of edits to its own document; its last publish equals `netdsl.check`."""
    rng = random.Random(number)
    spec = rng.choice(SPECS)
    text = spec.read_text(encoding="utf-8")
    path = spec.parent / f"random_{number}.net"  # beside lib/: the spec's imports still resolve
    uri = path.as_uri()
    open_doc(client, uri, text)
    version = 1
    for _ in range(rng.randint(1, 8)):
        start, end, insert, text = random_edit(rng, text)
        version += 1
        edit(client, uri, version, start, end, insert)
    published = await client.recorder.wait_for(uri, version)
    check = [d.model_dump() for d in netdsl.check(text=text, filename=str(path))]
    try:
        assert_same_as_check(published.diagnostics, check, str(path), text)
    except AssertionError as exc:
        raise AssertionError(f"sequence {number} ({spec.name}): {exc}\n--- final text ---\n{text}") from None
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


async def test_random_edit_sequences_fast_subset(client: LanguageClient, capfd):
    await run_sequences(client, 0, FAST, capfd)


@pytest.mark.slow
async def test_random_edit_sequences_all(client: LanguageClient, capfd):
    await run_sequences(client, FAST, FULL - FAST, capfd)
