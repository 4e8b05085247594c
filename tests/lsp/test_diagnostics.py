"""`netdsl lsp` diagnostics, driven over stdio by a real client (pytest-lsp).

The server must say what `netdsl check` says: the same messages and hints,
at the same places, with columns in the client's encoding.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp_harness import (
    CONFIG,
    ROOT,
    as_dicts,
    edit,
    expected_lsp,
    initialize,
    open_doc,
    replace_all,
    utf16_column,
)

ERRORS = sorted((ROOT / "tests" / "fixtures" / "errors").glob("*.net"))
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _check_json(paths: list[str]) -> dict[str, list[dict]]:
    """`netdsl check --format json` of each path, run from the repository root (one process)."""
    script = (
        "import json, sys, contextlib, io\n"
        "from netdsl.cli import main\n"
        "out = {}\n"
        "for p in sys.argv[1:]:\n"
        "    buf = io.StringIO()\n"
        "    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):\n"
        "        main(['check', '--format', 'json', p])\n"
        "    out[p] = json.loads(buf.getvalue())\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *paths], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout)


CHECKED = {}


def _checked(display: str) -> list[dict]:
    if not CHECKED:
        CHECKED.update(_check_json([str(p.relative_to(ROOT)) for p in ERRORS]))
    return CHECKED[display]


@pytest.mark.parametrize("spec", ERRORS, ids=lambda p: p.stem)
async def test_diagnostics_equal_netdsl_check(client: LanguageClient, spec):
    display = str(spec.relative_to(ROOT))
    data = spec.read_bytes()
    text = data.decode("utf-8", "replace")  # what an editor shows for bytes that are not UTF-8
    uri = spec.as_uri()
    open_doc(client, uri, text)
    published = await client.recorder.wait_for(uri, 1)
    check = _checked(display)
    assert check, "every error fixture has diagnostics"
    own = [d for d in published.diagnostics if not d.related_information]
    assert as_dicts(own) == expected_lsp(check, display, text)
    # a diagnostic in an imported file: on the import that leads there, its own place as related information
    others = [d for d in check if d["file"] != display]
    related = [d for d in published.diagnostics if d.related_information]
    assert len(related) == len(others)
    for d, lsp in zip(others, related):
        text_ = d["message"] + (f"; {d['hint']}" if d["hint"] else "")
        assert lsp.message == f"{d['file']}:{d['line']}:{d['col']}: {text_}"
        where = lsp.related_information[0]
        assert where.message == text_
        assert where.location.uri == (ROOT / d["file"]).as_uri()
        assert (where.location.range.start.line, where.location.range.start.character) == (d["line"] - 1, d["col"] - 1)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


EMOJI = 'model m {\n  input x: (4,)\n  # 🙂🙂 emoji\n  y = x -> dense(2, name="🙂🙂") -> dens(3)\n  output y\n}\n'


async def test_an_emoji_before_an_error_moves_the_utf16_column(client: LanguageClient, tmp_path):
    uri = (tmp_path / "emoji.net").as_uri()
    open_doc(client, uri, EMOJI)
    published = await client.recorder.wait_for(uri, 1)
    (diagnostic,) = published.diagnostics
    line = EMOJI.split("\n")[3]
    assert diagnostic.message == "unknown layer 'dens'; did you mean 'dense'?"
    start = line.index("dens(3)")
    assert (diagnostic.range.start.line, diagnostic.range.start.character) == (3, utf16_column(line, start))
    assert diagnostic.range.start.character == start + 2  # two emoji, each two UTF-16 units
    assert diagnostic.range.end.character == diagnostic.range.start.character + 4


async def test_change_publishes_its_version_and_close_clears(client: LanguageClient, tmp_path):
    uri = (tmp_path / "versions.net").as_uri()
    good = "model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n"
    open_doc(client, uri, good)
    assert list((await client.recorder.wait_for(uri, 1)).diagnostics) == []
    edit(client, uri, 2, (2, 18), (2, 23), "dens")  # dense -> dens
    published = await client.recorder.wait_for(uri, 2)
    assert [d.message for d in published.diagnostics] == ["unknown layer 'dens'; did you mean 'dense'?"]
    replace_all(client, uri, good, 3)
    assert list((await client.recorder.wait_for(uri, 3)).diagnostics) == []
    replace_all(client, uri, good.replace("dense", "dens"), 4)
    await client.recorder.wait_for(uri, 4)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    cleared = await client.recorder.wait_for(uri, None)
    assert list(cleared.diagnostics) == []


async def test_only_the_newest_of_a_burst_is_published(client: LanguageClient, tmp_path):
    uri = (tmp_path / "burst.net").as_uri()
    text = "model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n"
    open_doc(client, uri, text)
    await client.recorder.wait_for(uri, 1)
    for version in range(2, 12):
        replace_all(client, uri, text.replace("dense(2)", f"dense({version}) -> dens"), version)
    published = await client.recorder.wait_for(uri, 11)
    assert [d.message for d in published.diagnostics] == ["unknown layer 'dens'; did you mean 'dense'?"]
    versions = [p.version for _, p in client.recorder.publishes if p.uri == uri]
    assert versions == sorted(versions)  # never an older version after a newer one
    assert len(versions) < 11  # the burst was debounced


async def test_imports_read_open_buffers_first(client: LanguageClient, tmp_path):
    lib = tmp_path / "lib.net"
    lib.write_text("let width = 8\n")
    main = tmp_path / "main.net"
    main_text = 'import "lib.net"\nmodel m {\n  input x: (4,)\n  output y = x -> dense(depth)\n}\n'
    main.write_text(main_text)
    open_doc(client, main.as_uri(), main_text)
    published = await client.recorder.wait_for(main.as_uri(), 1)
    assert [d.message for d in published.diagnostics] == ["unknown name 'depth'"]
    # the lib is edited in the editor, not saved: main is re-checked against the buffer
    open_doc(client, lib.as_uri(), "let width = 8\nlet depth = 3\n")
    await client.recorder.wait_for(lib.as_uri(), 1)
    for _ in range(100):
        last = client.recorder.last(main.as_uri())
        if list(last.diagnostics) == []:
            break
        await asyncio.sleep(0.05)
    assert list(client.recorder.last(main.as_uri()).diagnostics) == []
    assert lib.read_text() == "let width = 8\n"


async def test_save_checks_again_with_the_files_on_disk(client: LanguageClient, tmp_path):
    lib = tmp_path / "lib.net"
    lib.write_text("let width = 8\n")
    main = tmp_path / "main.net"
    text = 'import "lib.net"\nmodel m {\n  input x: (4,)\n  output y = x -> dense(depth)\n}\n'
    main.write_text(text)
    open_doc(client, main.as_uri(), text)
    first = await client.recorder.wait_for(main.as_uri(), 1)
    assert [d.message for d in first.diagnostics] == ["unknown name 'depth'"]
    lib.write_text("let width = 8\nlet depth = 3\n")  # changed outside the editor

    def publishes() -> int:
        return sum(1 for _, p in client.recorder.publishes if p.uri == main.as_uri())

    count = publishes()
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=main.as_uri()))
    )
    for _ in range(200):
        if publishes() > count:
            break
        await asyncio.sleep(0.05)
    again = client.recorder.last(main.as_uri())
    assert again.version == 1 and list(again.diagnostics) == []
