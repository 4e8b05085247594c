"""The language server reads files as the CLI does (issue 22, security review 2026-12 finding 8):
a FIFO or a device in the workspace neither blocks a check nor the message loop."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from pygls.workspace import Workspace

from netdsl.lsp.checking import _refuse_like_read_source
from netdsl.lsp.documents import Documents

M = "model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n"


def _within(seconds: float, work) -> bool:
    """True when `work()` returned within `seconds` (a blocked read leaves a daemon thread behind)."""
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def test_a_buffer_with_u_fffd_over_a_fifo_or_a_device_is_checked_without_reading_it(tmp_path):
    os.mkfifo(tmp_path / "fifo.net")
    for real in (tmp_path / "fifo.net", Path("/dev/zero")):
        assert _within(5, lambda real=real: _refuse_like_read_source("\ufffd\n" + M, "fifo.net", real))


def test_only_open_documents_are_read(tmp_path):
    os.mkfifo(tmp_path / "fifo.net")
    (tmp_path / "ok.net").write_text(M)
    workspace = Workspace(tmp_path.as_uri())
    documents = Documents(lambda: workspace)
    texts = []
    assert _within(5, lambda: texts.append(documents.text((tmp_path / "fifo.net").as_uri())))
    assert texts == [""] and documents.text((tmp_path / "ok.net").as_uri()) == ""
    workspace.put_text_document(_item((tmp_path / "ok.net").as_uri(), M))
    assert documents.text((tmp_path / "ok.net").as_uri()) == M


def _item(uri: str, text: str):
    from lsprotocol.types import TextDocumentItem

    return TextDocumentItem(uri=uri, language_id="netdsl", version=1, text=text)
