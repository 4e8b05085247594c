"""`netdsl lsp` features, driven over stdio by a real client (pytest-lsp): hover, completion,
signature help, definition, references, rename, outline, formatting and inlay hints."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from netdsl.syntax.formatter import format_text
from tests.support.lsp_harness import CONFIG, doc, initialize, open_doc, pos, replace_all

pytestmark = pytest.mark.asyncio(loop_scope="module")

BLOCKS = """\
let width = 16

block stage(filters, stride=1) {
  input x
  y = x -> conv2d(filters, 3, strides=stride, padding="same") -> relu
  output out = y
}
"""
MORE = "let depth = 2\n"
MAIN = """\
import "lib/blocks.net"
import "lib/more.net" as lib

activation mish(x) = x * tanh(softplus(x))

layer my_linear(units=32) {
  input x
  weight kernel: (x.shape[-1], units)
  output x @ kernel
}

let classes = 10

model net {
  input image: (28, 28, 1)
  h = image -> conv2d(8, 3) -> stage(width, stride=2)
  f = h -> flatten -> dense(64, activation=mish) * lib.depth
  output probs = f -> my_linear(classes) -> softmax
}
"""
LINES = MAIN.split("\n")


def at(line: int, word: str, nth: int = 0, lines: list[str] = LINES) -> types.Position:
    """The position of the `nth` `word` on 1-based `line` (ASCII lines: UTF-16 columns are indexes)."""
    text = lines[line - 1]
    index = -1
    for _ in range(nth + 1):
        index = text.index(word, index + 1)
    return pos(line - 1, index)


def edit_at(line: int, word: str, new: str, lines: list[str] = LINES, nth: int = 0) -> tuple:
    """The rename edit of the `nth` `word` on 1-based `line`, as `rename` below lists it."""
    start = at(line, word, nth, lines=lines)
    return (start.line, start.character, start.character + len(word), new)


BLOCK_LINES = BLOCKS.split("\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "lib").mkdir()
    (root / "lib" / "blocks.net").write_text(BLOCKS)
    (root / "lib" / "more.net").write_text(MORE)
    (root / "main.net").write_text(MAIN)
    return root


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient, project):
    await initialize(lsp_client, root=project)
    uri = (project / "main.net").as_uri()
    open_doc(lsp_client, uri, MAIN)
    published = await lsp_client.recorder.wait_for(uri, 1)
    assert list(published.diagnostics) == []
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def main_uri(project):
    return (project / "main.net").as_uri()


async def hover(client, uri, position) -> str:
    result = await client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=position))
    assert result is not None
    return result.contents.value


# ------------------------------------------------------------------ hover


async def test_hover_a_layer_shows_signature_table_and_description(client, main_uri):
    text = await hover(client, main_uri, at(17, "dense"))
    assert "dense(units, activation=none, use_bias=true" in text
    assert "| `units` | int | required |" in text
    assert "| `use_bias` | bool | `true` |" in text
    assert "Just your regular densely-connected NN layer." in text


async def test_hover_an_activation(client, main_uri):
    text = await hover(client, main_uri, at(18, "softmax"))
    assert text.startswith("```netdsl\nsoftmax(axis=-1)\n```\nactivation (Keras `softmax`)")


async def test_hover_a_tensor_shows_shape_and_parameters(client, main_uri):
    # conv2d(8, 3) on 1 channel: 3*3*1*8 + 8 = 80; the block's conv2d(16, 3) on 8: 3*3*8*16 + 16 = 1,168
    text = await hover(client, main_uri, at(16, "h"))
    assert "h: (None, 13, 13, 16)" in text and "made by 3 layers, 1,248 parameters" in text
    # used on the next line: the same tensor; flatten 13*13*16 = 2,704 -> dense 173,120 -> dense 4,160
    text = await hover(client, main_uri, at(17, "h"))
    assert "h: (None, 13, 13, 16)" in text
    text = await hover(client, main_uri, at(17, "f"))
    assert "f: (None, 64)" in text and "made by 3 layers, 177,280 parameters" in text
    assert "image: (None, 28, 28, 1)" in await hover(client, main_uri, at(15, "image"))
    text = await hover(client, main_uri, at(18, "probs"))  # a declared layer's weights: 64 x 10
    assert "probs: (None, 10)" in text and "made by 2 layers, 640 parameters" in text


async def test_hover_a_tensor_shows_what_its_layers_compute(client, main_uri):
    # conv2d(8, 3): 26*26*8 outputs x 9 taps, 2 FLOPs each + a bias add = 102,752; the block's strided
    # conv2d(16, 3) on 8 channels: 13*13*16 x 72 x 2 + bias + relu = 394,784 (docs/cost.md)
    assert "made by 3 layers, 1,248 parameters, 498 KFLOPs a sample" in await hover(client, main_uri, at(16, "h"))


async def test_hover_a_block_and_declared_names(client, main_uri):
    text = await hover(client, main_uri, at(16, "stage"))
    assert "block stage(filters, stride=1)" in text and "lib/blocks.net" in text
    assert "activation mish(x) = x * tanh(softplus(x))" in await hover(client, main_uri, at(17, "mish"))
    assert "layer my_linear(units=32)" in await hover(client, main_uri, at(18, "my_linear"))
    assert "let classes = 10" in await hover(client, main_uri, at(18, "classes"))
    assert "let depth = 2" in await hover(client, main_uri, at(17, "depth"))


async def test_hover_a_keyword_argument_names_the_parameter(client, main_uri):
    text = await hover(client, main_uri, at(17, "activation"))
    assert "parameter `activation`: activation, default none" in text


# ------------------------------------------------------------------ completion


async def complete(client, uri, position) -> list[str]:
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(uri), position=position)
    )
    return [item.label for item in result.items]


async def scratch(client, project, name: str, text: str) -> str:
    """A second document in the same project (it imports the same lib)."""
    uri = (project / name).as_uri()
    open_doc(client, uri, text)
    await client.recorder.wait_for(uri, 1)
    return uri


async def close(client, uri: str) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(uri)))
    await client.recorder.wait_for(uri, None)


async def test_completion_after_an_arrow_offers_layers_activations_and_spec_steps(client, main_uri):
    labels = await complete(client, main_uri, at(17, "flatten"))
    for name in ("dense", "conv2d", "batch_normalization", "relu", "gelu", "stage", "my_linear", "mish"):
        assert name in labels
    assert "image" not in labels  # a tensor is not a step


async def test_a_completion_item_resolves_to_its_signature_and_description(client, main_uri):
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(main_uri), position=at(17, "flatten"))
    )
    dense = next(item for item in result.items if item.label == "dense")
    resolved = await client.completion_item_resolve_async(dense)
    assert resolved.detail.startswith("dense(units, activation=none")
    assert resolved.documentation == "Just your regular densely-connected NN layer."


async def test_completion_inside_a_call_offers_its_keywords(client, main_uri):
    labels = await complete(client, main_uri, at(17, "activation"))  # dense(64, |activation=mish)
    assert {"use_bias=", "kernel_initializer=", "activation="} <= set(labels)
    labels = await complete(client, main_uri, at(16, "stride"))  # stage(width, |stride=2): the block's own
    assert "stride=" in labels and "filters=" in labels
    assert "units=" not in labels


async def test_completion_of_keyword_values_and_names_in_scope(client, project):
    text = MAIN.replace("  output probs", "  g = f -> dense(8, kernel_initializer=he)\n  \n  output probs")
    uri = await scratch(client, project, "values.net", text)
    line = text.split("\n").index("  g = f -> dense(8, kernel_initializer=he)")
    labels = await complete(client, uri, pos(line, len("  g = f -> dense(8, kernel_initializer=he")))
    assert labels == ["he_normal", "he_uniform"]  # initializers whose name holds what was typed, not layers
    labels = await complete(client, uri, pos(line, len("  g = f -> dense(8, kernel_initializer=")))
    assert {"glorot_uniform", "he_normal", "orthogonal", "zeros"} <= set(labels) and "dense" not in labels
    general = await complete(client, uri, pos(line + 1, 2))
    for name in ("image", "h", "f", "classes", "width", "stage", "lib.depth"):
        assert name in general
    await close(client, uri)


async def test_completion_offers_a_call_s_tensors_by_keyword_and_tensors_for_them(client, project):
    """Issue 30: `lstm(` offers `initial_state=` and `mask=`, and after `mask=` the body's tensors."""
    text = MAIN.replace(
        "  output probs", "  s, s_h = f -> gru(8, return_state=true)\n  g = f -> gru(8, mask=s)\n  output probs"
    )
    uri = await scratch(client, project, "tensors.net", text)
    line = text.split("\n").index("  g = f -> gru(8, mask=s)")
    labels = await complete(client, uri, pos(line, len("  g = f -> gru(8, ")))
    assert {"initial_state=", "mask=", "units="} <= set(labels)
    labels = await complete(client, uri, pos(line, len("  g = f -> gru(8, mask=")))
    assert {"s_h", "s", "f", "image"} <= set(labels)
    result = await client.text_document_signature_help_async(
        types.SignatureHelpParams(text_document=doc(uri), position=pos(line, len("  g = f -> gru(8, mask=")))
    )
    (signature,) = result.signatures
    assert signature.label.endswith(", initial_state=none, mask=none)")
    start, end = signature.parameters[result.active_parameter].label
    assert signature.label[start:end] == "mask"
    await close(client, uri)


async def test_signature_help_on_open_paren_and_comma(client, main_uri):
    result = await client.text_document_signature_help_async(
        types.SignatureHelpParams(text_document=doc(main_uri), position=at(17, "activation"))
    )
    (signature,) = result.signatures
    assert signature.label.startswith("dense(units, activation=none")
    assert result.active_parameter == 1
    start, end = signature.parameters[1].label
    assert signature.label[start:end] == "activation"
    result = await client.text_document_signature_help_async(
        types.SignatureHelpParams(text_document=doc(main_uri), position=at(16, "width"))
    )
    assert result.signatures[0].label == "stage(filters, stride=1)" and result.active_parameter == 0


# ------------------------------------------------------------------ navigation


async def definition(client, uri, position) -> list[types.Location]:
    return await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(uri), position=position)
    )


async def test_definition_of_tensors_blocks_constants_and_imported_names(client, main_uri, project):
    (loc,) = await definition(client, main_uri, at(17, "h"))
    assert loc.uri == main_uri and (loc.range.start.line, loc.range.start.character) == (15, 2)
    (loc,) = await definition(client, main_uri, at(16, "stage"))
    assert loc.uri == (project / "lib" / "blocks.net").as_uri()
    assert (loc.range.start.line, loc.range.start.character, loc.range.end.character) == (2, 6, 11)
    (loc,) = await definition(client, main_uri, at(17, "depth"))
    assert loc.uri == (project / "lib" / "more.net").as_uri() and loc.range.start.line == 0
    (loc,) = await definition(client, main_uri, at(17, "lib"))
    assert loc.uri == main_uri and (loc.range.start.line, loc.range.start.character) == (1, 25)
    (loc,) = await definition(client, main_uri, at(17, "mish"))
    assert (loc.range.start.line, loc.range.start.character) == (3, 11)
    (loc,) = await definition(client, main_uri, at(18, "my_linear"))
    assert (loc.range.start.line, loc.range.start.character) == (5, 6)
    (loc,) = await definition(client, main_uri, at(16, "stride"))  # a keyword naming the block's parameter
    assert loc.uri == (project / "lib" / "blocks.net").as_uri() and loc.range.start.line == 2


async def test_references_across_files(client, main_uri, project):
    found = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(main_uri),
            position=at(16, "width"),
            context=types.ReferenceContext(include_declaration=True),
        )
    )
    places = sorted((loc.uri.rsplit("/", 1)[-1], loc.range.start.line, loc.range.start.character) for loc in found)
    assert places == [("blocks.net", 0, 4), ("main.net", 15, at(16, "width").character)]
    found = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(main_uri),
            position=at(15, "image"),
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    assert [(loc.range.start.line, loc.range.start.character) for loc in found] == [(15, 6)]


async def rename(client, uri, position, new_name) -> dict[str, list[tuple]]:
    edit = await client.text_document_rename_async(
        types.RenameParams(text_document=doc(uri), position=position, new_name=new_name)
    )
    return {
        uri.rsplit("/", 1)[-1]: sorted(
            (e.range.start.line, e.range.start.character, e.range.end.character, e.new_text) for e in edits
        )
        for uri, edits in edit.changes.items()
    }


async def test_rename_a_tensor(client, main_uri):
    assert await rename(client, main_uri, at(17, "h"), "hidden") == {
        "main.net": [edit_at(16, "h", "hidden"), edit_at(17, "h", "hidden")]
    }


async def test_rename_an_imported_block_and_its_parameter(client, main_uri):
    assert await rename(client, main_uri, at(16, "stage"), "down") == {
        "blocks.net": [edit_at(3, "stage", "down", BLOCK_LINES)],
        "main.net": [edit_at(16, "stage", "down")],
    }
    assert await rename(client, main_uri, at(16, "stride"), "step") == {
        "blocks.net": [edit_at(3, "stride", "step", BLOCK_LINES), edit_at(5, "stride", "step", BLOCK_LINES, nth=1)],
        "main.net": [edit_at(16, "stride", "step")],
    }


async def test_rename_constants_declared_names_and_an_alias(client, main_uri):
    assert await rename(client, main_uri, at(18, "classes"), "n_classes") == {
        "main.net": [edit_at(12, "classes", "n_classes"), edit_at(18, "classes", "n_classes")]
    }
    assert await rename(client, main_uri, at(4, "mish"), "mish2") == {
        "main.net": [edit_at(4, "mish", "mish2"), edit_at(17, "mish", "mish2")]
    }
    assert await rename(client, main_uri, at(18, "my_linear"), "proj") == {
        "main.net": [edit_at(6, "my_linear", "proj"), edit_at(18, "my_linear", "proj")]
    }
    assert await rename(client, main_uri, at(17, "lib"), "extra") == {
        "main.net": [(1, LINES[1].rindex("lib"), LINES[1].rindex("lib") + 3, "extra"), edit_at(17, "lib", "extra")]
    }


async def test_rename_reaches_other_open_documents_that_import_the_file(client, main_uri, project):
    other = 'import "lib/blocks.net"\nmodel o {\n  input x: (8, 8, 3)\n  output y = x -> stage(4)\n}\n'
    uri = await scratch(client, project, "other.net", other)
    renamed = await rename(client, main_uri, at(16, "stage"), "down")
    assert renamed["other.net"] == [edit_at(4, "stage", "down", other.split("\n"))]
    assert set(renamed) == {"main.net", "blocks.net", "other.net"}
    await close(client, uri)


async def test_rename_refuses_what_is_not_a_name(client, main_uri):
    with pytest.raises(Exception, match="is not a name netdsl accepts"):
        await rename(client, main_uri, at(17, "h"), "model")
    prepared = await client.text_document_prepare_rename_async(
        types.PrepareRenameParams(text_document=doc(main_uri), position=at(17, "dense"))
    )
    assert prepared is None  # a built-in layer is not the spec's to rename


# ------------------------------------------------------------------ outline, format, inlay hints


async def test_document_symbols(client, main_uri):
    found = await client.text_document_document_symbol_async(types.DocumentSymbolParams(text_document=doc(main_uri)))
    assert [(s.name, s.detail) for s in found] == [
        ("mish", "activation"),
        ("my_linear", "layer"),
        ("classes", "constant"),
        ("net", "model"),
    ]
    net = found[-1]
    assert (net.range.start.line, net.range.end.line) == (13, 18)
    assert (net.selection_range.start.line, net.selection_range.start.character) == (13, 6)
    assert [(c.name, c.detail) for c in net.children] == [("image", "input"), ("probs", "output")]
    assert [(c.name, c.detail) for c in found[1].children] == [("x", "input"), ("kernel", "weight")]


async def test_formatting_is_netdsl_fmt(client, project):
    messy = "model   m{\n input x:(4,)\n   output y=x->dense(2)   # done\n}\n"
    uri = await scratch(client, project, "messy.net", messy)
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=doc(uri), options=types.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    (edit,) = edits
    assert edit.new_text == format_text(messy)
    assert (edit.range.start.line, edit.range.end.line) == (0, 4)
    replace_all(client, uri, edit.new_text, 2)
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=doc(uri), options=types.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    assert list(edits) == []
    await close(client, uri)


async def test_inlay_hints_show_each_statements_shape_and_parameters(client, main_uri):
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(text_document=doc(main_uri), range=types.Range(start=pos(0, 0), end=pos(19, 0)))
    )
    shown = [(h.position.line, h.position.character, h.label) for h in hints]
    assert shown == [
        # the model's total (docs/cost.md), at batch 32 (no train section), RMSprop's slot, float32
        (13, 11, "854 KFLOPs a sample · 4.1 MiB to train at batch 32"),
        (14, 26, "(None, 28, 28, 1)"),
        (15, 53, "(None, 13, 13, 16) · 1,248 params"),
        (16, 60, "(None, 64) · 177,280 params"),
        (17, 51, "(None, 10) · 640 params"),  # the declared layer's kernel: 64 x 10
    ]


SLICES = """\
model cuts {
  input x: (10, 512)
  first = x[:, :, :256]
  u, v = split(x, 2, axis=-1)
  output y = first * sigmoid(v[..., ::2, :])
}
"""


async def test_slices_and_splits_are_checked_hovered_and_hinted(client, project):
    """Issue 30: a document with subscripts and a destructured split is clean, its tensors hover with
    their shapes and its statements get their inlay hints."""
    uri = await scratch(client, project, "cuts.net", SLICES)
    lines = SLICES.split("\n")
    assert "first: (None, 10, 256)" in await hover(client, uri, at(3, "first", lines=lines))
    assert "v: (None, 10, 256)" in await hover(client, uri, at(4, "v", lines=lines))
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(text_document=doc(uri), range=types.Range(start=pos(0, 0), end=pos(6, 0)))
    )
    assert [h.label for h in hints][1:] == [
        "(None, 10, 512)",
        "(None, 10, 256) · 0 params",
        "(None, 10, 256), (None, 10, 256) · 0 params",  # the split's two tensors
        "(None, 5, 256) · 0 params",
    ]
    await close(client, uri)
