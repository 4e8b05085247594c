"""The front end: parsing to IR, constant folding, names, blocks and graphs (no Keras)."""

from __future__ import annotations

import pydantic
import pytest

import netdsl
from netdsl.semantics.analysis import analyze
from netdsl.syntax import ir
from netdsl.syntax.loader import Program


def graph_of(text: str, model: str | None = None, tmp_path=None):
    program = netdsl.parse(text, filename="t.net")
    analysis = analyze(program)
    assert [d.text for d in analysis.diagnostics] == []
    return analysis.graphs[model or program.model_names[0]]


def errors_of(text: str) -> list[str]:
    return [f"{d.line}:{d.col}: {d.text}" for d in netdsl.check(text=text, filename="t.net")]


# ------------------------------------------------------------------ parsing


def test_parse_returns_a_program_with_model_names():
    program = netdsl.parse(
        "model a {\n input x: (2,)\n output y = x -> relu\n}\nmodel b {\n input x: (2,)\n output x\n}\n",
        filename="two.net",
    )
    assert isinstance(program, Program)
    assert program.model_names == ["a", "b"]


def test_ir_is_frozen_validates_and_carries_spans():
    program = netdsl.parse("let width = 64  # comment\n", filename="w.net")
    (decl,) = program.root_file.decls
    assert isinstance(decl, ir.Let) and decl.value.value == 64
    assert (decl.span.line, decl.span.col, decl.value.span.col) == (1, 1, 13)
    with pytest.raises(pydantic.ValidationError):
        decl.name = "other"
    dumped = program.root_file.model_dump()
    assert ir.File.model_validate(dumped) == program.root_file
    with pytest.raises(pydantic.ValidationError):
        ir.Let.model_validate({**decl.model_dump(), "surprise": 1})


def test_every_node_has_a_span_within_the_file():
    text = (
        open("specs/resnet50.net").read()
        if __import__("os").path.exists("specs/resnet50.net")
        else ("model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n")
    )
    program = netdsl.parse(text, filename="s.net")

    def walk(node):
        if isinstance(node, ir.Node):
            assert 1 <= node.span.line <= node.span.end_line <= text.count("\n") + 1
            for value in node.__dict__.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(program.root_file.decls)


def test_line_continuation_rules():
    text = (
        "model m {\n"
        "  input x: (8,)\n"
        "  y = x -> dense(4,\n"
        "                 activation=relu)\n"
        "        -> dense(2)   # continues: the next line starts with ->\n"
        "  d = x -> dense(3, kernel_regularizer=l2(\n"
        "    1e-4))\n"
        "  output y; output d\n"
        "}\n"
    )
    graph = graph_of(text)
    assert [n.name for n in graph.nodes] == ["x", "y.dense", "y", "d"]
    assert graph.output_names == ["y", "d"]


def test_keywords_still_name_keyword_arguments_and_parameters():
    graph = graph_of(
        "block conv(filters, activation=relu) {\n  input x\n"
        "  output y = x -> conv2d(filters, 3, activation=activation)\n}\n"
        "model m {\n  input x: (8, 8, 3)\n  output y = x -> conv(4, activation=gelu)\n}\n"
    )
    assert graph.nodes[1].args["activation"].name == "gelu"


def test_dict_braces_and_block_braces():
    text = (
        "model m {\n  input x: (4,)\n  output probs = x -> dense(3, activation=softmax)\n"
        "  train {\n    optimizer = adam(learning_rate=1e-3)\n"
        "    loss = {\n      probs: sparse_categorical_crossentropy,\n    }\n  }\n}\n"
    )
    graph = graph_of(text)
    assert graph.train.loss["probs"].name == "sparse_categorical_crossentropy"


# ------------------------------------------------------------------ constants


@pytest.mark.parametrize(
    "expr, value",
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("7 // 2", 3),
        ("7 % 4", 3),
        ("2 ** 10", 1024),
        ("-1", -1),
        ("1e-3", 0.001),
        ("max(3, 8, 5)", 8),
        ("min((4, 2))", 2),
        ("abs(-3)", 3),
        ("int(2.9)", 2),
        ("float(2)", 2.0),
        ("round(2.6)", 3),
        ("floor(2.5)", 2),
        ("ceil(2.1)", 3),
        ("len([1, 2, 3])", 3),
        ("(1, 2)[-1]", 2),
        ("(1, 2, 3)[1:]", (2, 3)),
        ("[1] * 3", [1, 1, 1]),
        ('"a" + "b"', "ab"),
        ("1 if 2 > 1 else 0", 1),
        ("true and not false", True),
        ("none or 5", 5),
        ('{a: 1}["a"]', 1),
        ("make_divisible(37)", 40),
        ("make_divisible(37, 16)", 32),
        ("3 == 3.0", True),
    ],
)
def test_constant_folding(expr, value):
    text = f"let make_divisible(v, d=8) = max(d, (v + d // 2) // d * d)\nlet result = {expr}\n"
    from netdsl.semantics.analysis import _check_declarations  # noqa: F401  (module loads)
    from netdsl.semantics.consts import Consts
    from netdsl.semantics.scope import build_scopes

    program = netdsl.parse(text, filename="c.net")
    scopes = build_scopes(program.files, program.imports, [])
    assert Consts().file_let(scopes["c.net"], "result", None) == value


def test_constants_resolve_in_any_order_and_cycles_are_errors():
    assert errors_of("let a = b + 1\nlet b = 2\n") == []
    assert errors_of("let a = b + 1\nlet b = a\n") == [
        "1:9: constant 'b' is defined in terms of itself: b -> a -> b",
        "2:9: constant 'a' is defined in terms of itself: a -> b -> a",
    ]


def test_recursive_function_is_an_error():
    (message,) = errors_of("let f(n) = f(n - 1)\nlet x = f(3)\n")
    assert message.endswith("function 'f' calls itself: f -> f")


# ------------------------------------------------------------------ blocks and graphs


RESNET_STAGE = """\
block bottleneck(filters, stride=1, project=false) {
  input x
  y = x -> conv2d(filters, 1, strides=stride) -> batch_norm -> relu
        -> conv2d(filters, 3, padding="same") -> batch_norm -> relu
        -> conv2d(4 * filters, 1) -> batch_norm
  if project {
    s = x -> conv2d(4 * filters, 1, strides=stride) -> batch_norm
  } else {
    s = x
  }
  output out = (y + s) -> relu
}

model resnet_stage {
  input x: (56, 56, 64)
  output y = x -> bottleneck(64, project=true) -> bottleneck(64) * 2
}
"""


def test_blocks_expand_into_clusters_with_deterministic_names():
    graph = graph_of(RESNET_STAGE)
    assert list(graph.clusters) == [("y.bottleneck",), ("y.bottleneck_2",), ("y.bottleneck_3",)]
    names = [n.name for n in graph.nodes]
    assert len(names) == len(set(names))
    assert names[:4] == ["x", "y.bottleneck.y.conv2d", "y.bottleneck.y.batch_norm", "y.bottleneck.y.relu"]
    assert names[-2:] == ["y.bottleneck_3.out.add", "y.bottleneck_3.out"]
    projections = [n for n in graph.nodes if n.name.startswith("y.bottleneck.s")]
    assert len(projections) == 2  # only the first block projects
    assert graph.nodes[-1].output_shapes == [(56, 56, 256)]
    assert [n.name for n in graph_of(RESNET_STAGE).nodes] == names  # same spec, same names


def test_shape_dependent_block_decides_its_branch_from_the_input():
    text = (
        "block adapt(filters) {\n  input x\n  if x.shape[-1] != filters {\n"
        "    s = x -> conv2d(filters, 1)\n  } else {\n    s = x\n  }\n  output y = (x -> conv2d(filters, 3, "
        'padding="same") + s) -> relu\n}\n'
        "model m {\n  input a: (8, 8, 16)\n  b = a -> adapt(16)\n  output c = b -> adapt(32)\n}\n"
    )
    graph = graph_of(text)
    projections = [n.name for n in graph.nodes if n.name.endswith(".s")]
    assert projections == ["c.adapt.s"]


def test_block_checked_alone_with_unknown_shapes_is_not_rejected():
    text = (
        "block adapt(filters) {\n  input x\n  if x.shape[-1] != filters {\n    s = x -> conv2d(filters, 1)\n"
        "  } else {\n    s = x\n  }\n  output y = s\n}\n"
    )
    assert errors_of(text) == []


def test_shared_instances_reuse_one_key_and_repeats_are_marked():
    text = (
        "block encoder(units) {\n  input x\n  output y = x -> dense(units, activation=relu) * 2\n}\n"
        "model siamese {\n  input a: (8,)\n  input b: (8,)\n  shared enc = encoder(4)\n"
        "  shared head = dense(2)\n  ea = a -> enc -> head\n  eb = b -> enc -> head\n"
        "  output d = (ea, eb) -> subtract\n}\n"
    )
    graph = graph_of(text)
    shared = [n for n in graph.nodes if n.shared]
    assert {n.shared for n in shared} == {"shared:enc", "shared:head"}
    assert len(shared) == 4
    sub = shared[0].decl
    assert [n.repeat[1:] for n in sub.nodes if n.repeat] == [(0, 2), (1, 2)]


def test_rebinding_shadows_from_that_line_on():
    graph = graph_of("model m {\n  input x: (4,)\n  x = x -> dense(4)\n  x = x -> dense(4)\n  output x\n}\n")
    assert [n.name for n in graph.nodes] == ["x", "x_2", "x_3"]
    assert graph.outputs[0][1].node == 2


def test_nested_model_as_a_step_and_multi_output_destructuring():
    text = (
        "model enc {\n  input x: (8,)\n  output h = x -> dense(4)\n}\n"
        "model full {\n  input x: (8,)\n  h = x -> enc\n"
        "  seq, state = (h -> reshape((4, 1))) -> gru(3, return_state=true)\n  output seq, state\n}\n"
    )
    graph = graph_of(text, "full")
    assert [n.op for n in graph.nodes] == ["input", "model", "layer", "layer"]
    assert graph.nodes[-1].n_outputs == 2
    assert graph.nodes[-1].output_shapes == [(3,), (3,)]


def test_import_with_alias(tmp_path):
    (tmp_path / "lib.net").write_text("let width = 8\nblock unit(n) {\n  input x\n  output y = x -> dense(n)\n}\n")
    spec = tmp_path / "main.net"
    spec.write_text('import "lib.net" as lib\nmodel m {\n  input x: (4,)\n  output y = x -> lib.unit(lib.width)\n}\n')
    program = netdsl.parse_file(spec)
    graph = analyze(program).graphs["m"]
    assert graph.nodes[-1].args == {"units": 8}
    assert netdsl.check(spec) == []


def test_check_reports_undefined_names_after_an_unknown_if():
    text = "block b(flag) {\n  input x\n  if flag {\n    y = x -> dense(2)\n  }\n  output z = y\n}\n"
    assert errors_of(text) == []  # y may be defined: never reject a valid spec
    text_known = "model m {\n  input x: (4,)\n  if false {\n    y = x -> dense(2)\n  }\n  output z = y\n}\n"
    assert errors_of(text_known) == ["6:14: undefined tensor 'y'"]


def test_a_duplicate_block_output_is_one_error_not_two():
    text = (
        "block twice() {\n  input x\n  output y = x -> dense(2)\n  output y = x -> dense(3)\n}\n"
        "model m {\n  input x: (4,)\n  z = x -> twice\n  output z\n}\n"
    )
    assert errors_of(text) == ["4:10: 'y' is already an output"]


def test_a_bidirectional_rnn_s_states_are_counted_and_shaped():
    text = (
        "model m {\n  input x: (5, 3)\n  seq, f, b = x -> bidirectional(gru(4, return_state=true))\n"
        "  output seq, f, b\n}\n"
    )
    assert errors_of(text) == []
    graph = analyze(netdsl.parse(text, filename="t.net")).graphs["m"]
    assert not graph.uncertain and graph.nodes[-1].output_shapes == [(8,), (4,), (4,)]
    wrong = text.replace("seq, f, b =", "seq, f =").replace("output seq, f, b", "output seq, f")
    assert errors_of(wrong) == [
        "3:3: 2 names on the left, but the flow gives 3 tensors; 'bidirectional' with return_state=true gives its "
        "output, then its states: seq, forward_h, backward_h = ..."
    ]


def test_a_name_hiding_a_step_is_reported_at_the_first_use_after_its_binding():
    """Uses of the step before the binding read the step (no error); the message names the first use after it."""
    text = (
        "model m {\n  input x: (4,)\n  a = x -> dense(4)\n  b = a -> dense(4)\n  dense = b -> relu\n"
        "  c = dense -> dense(4)\n  d = c -> dense(4)\n  output d\n}\n"
    )
    assert errors_of(text) == [
        "5:3: the tensor 'dense' hides the layer 'dense', used as a step at line 6; rename the tensor (say "
        "'dense_out'): after it, '-> dense' reads the tensor",
    ]
