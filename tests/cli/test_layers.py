"""`netdsl layers`: whole first sentences, plural headings, the short names the guide uses."""

from __future__ import annotations

from netdsl.cli import main


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(["layers", *args])
    return code, capsys.readouterr().out


def test_a_layer_lists_its_short_names_and_its_whole_first_sentence(capsys):
    code, out = run(capsys)
    assert code == 0
    lines = out.splitlines()
    at = lines.index("  additive_attention(use_scale=true, dropout=0.0)")
    assert lines[at + 1] == "      Additive attention layer, a.k.a. Bahdanau-style attention."
    for name, short in (
        ("batch_normalization", "batch_norm"),
        ("layer_normalization", "layer_norm"),
        ("max_pooling2d", "max_pool2d"),
        ("global_average_pooling2d", "global_avg_pool2d"),
    ):
        line = next(line for line in lines if line.startswith(f"  {name}("))
        assert line.endswith(f"  also: {short}"), line
    assert "      1D convolution layer (e.g. temporal convolution)." in lines
    assert "      Averages a list of inputs element-wise." in lines


def test_every_kind_has_its_plural_heading(capsys):
    code, out = run(capsys, "--kind", "loss")
    assert code == 0 and out.startswith("losses:\n  binary_crossentropy(")
    assert "losss" not in out


def test_an_alias_says_what_it_names(capsys):
    code, out = run(capsys, "batch_norm")
    assert code == 0
    assert out.splitlines()[:3] == [
        "batch_norm: another name for batch_normalization",
        "batch_normalization (layer, keras): Layer that normalizes its inputs.",
        "  also written: BatchNormalization, batch_norm",
    ]


def test_an_unknown_name_is_a_usage_error_in_the_shape_of_every_command(capsys):
    code = main(["layers", "conv2x"])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert captured.err == "netdsl layers: error: unknown name 'conv2x'; did you mean 'conv2d'?\n"


def test_an_unknown_name_is_printed_escaped(capsys):
    code = main(["layers", "nothing\x1b[31m"])
    assert code == 2
    assert capsys.readouterr().err == "netdsl layers: error: unknown name 'nothing\\x1b[31m'\n"


def test_a_layer_lists_its_inputs_and_the_arguments_its_call_takes(capsys):
    """Issue 30: `use_causal_mask` is written beside the constructor's arguments, so it is listed too."""
    code, out = run(capsys, "multi_head_attention")
    lines = out.splitlines()
    assert code == 0
    assert lines[2] == "  inputs: 2 to 3 tensors, a tuple in the order of Keras' call: (a, b) -> multi_head_attention"
    assert lines[-8:] == [
        "  return_attention_scores: bool, default false, keyword, given to the call",
        "  use_causal_mask: bool, default false, keyword, given to the call",
        "  value: a tensor, input 2 of the tuple or keyword, given to the call",
        "  key: a tensor, input 3 of the tuple or keyword, given to the call",
        "  query_mask: a tensor, default none, keyword, given to the call",
        "  value_mask: a tensor, default none, keyword, given to the call",
        "  key_mask: a tensor, default none, keyword, given to the call",
        "  attention_mask: a tensor, default none, keyword, given to the call",
    ]
    _, dense = run(capsys, "dense")
    assert "inputs:" not in dense and "given to the call" not in dense
    _, lstm = run(capsys, "lstm")  # issue 30: tensors by keyword, `lstm(64, initial_state=[h, c])`
    assert lstm.splitlines()[-2:] == [
        "  initial_state: a list of tensors, default none, keyword, given to the call",
        "  mask: a tensor, default none, keyword, given to the call",
    ]
