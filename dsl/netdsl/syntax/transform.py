"""Spec text to IR: the IR is built while the parser reduces, no parse tree in between.

`IRBuilder` has a method per grammar rule (or alias), named after it, that
builds the IR class of the same name from the rule's children (see
`lalr.shaped_reducers` for what it receives: tokens as tuples, IR nodes,
`Part`s for lists). Nodes are built without validation (`nodes.py`): the
builder makes them well-typed by construction, and validating a
10,000-layer spec node by node would cost more than parsing it
(tests/semantics/test_analysis.py validates the result independently).

Errors found while building (a number too long, an unknown escape, an
expression nested too deeply, ...) do not stop the parse: the first one is
kept and raised once the file has parsed, so that a syntax error anywhere
in the file is reported first, as it always was.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from netdsl.errors import Diagnostic, Span, SpecError
from netdsl.syntax import ir
from netdsl.syntax.depth import too_deep
from netdsl.syntax.lalr import PASS, Part, Position
from netdsl.syntax.lexer import COL, END_COL, END_LINE, LINE, TokenTuple
from netdsl.syntax.nodes import NodeT, maker, new_span, span_at
from netdsl.syntax.parser import MAX_EXPRESSION_DEPTH, MAX_NUMBER_DIGITS, parse

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}

_import = maker(ir.Import, "span", "path", "alias")
_let = maker(ir.Let, "span", "name", "value")
_let_func = maker(ir.LetFunc, "span", "name", "params", "body")
_param = maker(ir.Param, "span", "name", "default")
_model = maker(ir.ModelDecl, "span", "name", "body")
_block = maker(ir.BlockDecl, "span", "name", "params", "body")
_activation = maker(ir.ActivationDecl, "span", "name", "params", "body")
_layer = maker(ir.LayerDecl, "span", "name", "params", "body")
_loss = maker(ir.LossDecl, "span", "name", "params", "body")
_metric = maker(ir.MetricDecl, "span", "name", "params", "body")
_sweep = maker(ir.SweepDecl, "span", "name", "items")
_input = maker(ir.Input, "span", "items")
_input_item = maker(ir.InputItem, "span", "name", "shape", "dtype")
_output = maker(ir.Output, "span", "items")
_output_item = maker(ir.OutputItem, "span", "name", "value")
_assign = maker(ir.Assign, "span", "targets", "value")
_shared = maker(ir.Shared, "span", "name", "value")
_if = maker(ir.If, "span", "cond", "then", "orelse")
_train = maker(ir.Train, "span", "items")
_kwarg = maker(ir.Kwarg, "span", "name", "value")
_weight = maker(ir.Weight, "span", "name", "shape", "options")
_if_exp = maker(ir.IfExp, "span", "cond", "then", "orelse")
_bool_op = maker(ir.BoolOp, "span", "op", "left", "right")
_unary_op = maker(ir.UnaryOp, "span", "op", "operand")
_bin_op = maker(ir.BinOp, "span", "op", "left", "right")
_flow = maker(ir.Flow, "span", "items")
_call = maker(ir.Call, "span", "func", "args", "kwargs")
_attr = maker(ir.Attr, "span", "value", "attr")
_index = maker(ir.Index, "span", "value", "index")
_slice = maker(ir.Slice, "span", "start", "stop", "step")
_ellipsis = maker(ir.EllipsisLit, "span")
_tuple = maker(ir.Tuple, "span", "items")
_list = maker(ir.List, "span", "items")
_dict = maker(ir.Dict, "span", "items")
_dict_item = maker(ir.DictItem, "span", "key", "value")
_name = maker(ir.Name, "span", "id")
_number = maker(ir.Number, "span", "value")
_string = maker(ir.String, "span", "value")
_bool = maker(ir.Bool, "span", "value")
_none = maker(ir.NoneLit, "span")
_comment = maker(ir.Comment, "span", "text")


def _nodes(children: list[Any]) -> list[Any]:
    """The children that are not tokens (the brackets and braces lark keeps)."""
    return [c for c in children if type(c) is not tuple]


Children = list[Any]  # a rule's children: tokens (TokenTuple), IR nodes, Parts


class IRBuilder:
    """The IR of one file, built rule by rule as the parser reduces."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self._line_starts: list[int] | None = None  # offsets of the lines, when a long expression needs them
        self.containers: dict[int, Any] = {}  # see lalr.shaped_reducers
        self.error: Diagnostic | None = None  # the first error found while building
        self._span = functools.partial(span_at, file)  # (line, col, end_line, end_col) -> Span

    # -- positions and errors

    def _tok_span(self, tok: tuple[Any, ...]) -> Span:
        return new_span(self.file, tok[LINE], tok[COL], tok[END_LINE], tok[END_COL])

    def _fail(self, span: Span, message: str, hint: str | None = None) -> None:
        if self.error is None:
            self.error = Diagnostic.at(span, message, hint)

    def _shallow(self, node: NodeT, *exprs: Any) -> NodeT:
        """`node`, after checking that no expression in `exprs` nests too deeply."""
        for expr in exprs:
            if expr is not None and not self._short(expr.span):
                deep = too_deep(expr, MAX_EXPRESSION_DEPTH)
                if deep is not None:
                    self._fail(
                        deep.span,
                        "expression nested too deeply",
                        f"at most {MAX_EXPRESSION_DEPTH} levels; name a part of it with 'let'",
                    )
        return node

    def _short(self, span: Span) -> bool:
        """Fewer characters than nesting levels allowed (so it cannot nest too deeply)."""
        if span.line == span.end_line:
            return span.end_col - span.col < MAX_EXPRESSION_DEPTH
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        starts = self._line_starts
        return (starts[span.end_line - 1] + span.end_col) - (starts[span.line - 1] + span.col) < MAX_EXPRESSION_DEPTH

    # -- declarations
    def start(self, c: Children, pos: Position) -> Children:
        return c

    def import_decl(self, c: Children, pos: Position) -> ir.Import:
        alias = c[1][1] if len(c) > 1 else None
        return _import(self._span(pos), self._unescape(c[0]), alias)

    def let_decl(self, c: Children, pos: Position) -> ir.Let:
        return self._shallow(_let(self._span(pos), c[0][1], c[1]), c[1])

    def let_func(self, c: Children, pos: Position) -> ir.LetFunc:
        name, params, body = c
        return self._shallow(_let_func(self._span(pos), name[1], params.items, body), body)

    def params(self, c: Children, pos: Position) -> Part:
        return Part(c, pos)

    def param(self, c: Children, pos: Position) -> ir.Param:
        default = c[1] if len(c) > 1 else None
        return self._shallow(_param(self._span(pos), c[0][1], default), default)

    def model_decl(self, c: Children, pos: Position) -> ir.ModelDecl:
        name, body = c
        return _model(self._span(pos), name[1], body.items)

    def block_decl(self, c: Children, pos: Position) -> ir.BlockDecl:
        name, params, body = c
        return _block(self._span(pos), name[1], params.items, body.items)

    def activation_decl(self, c: Children, pos: Position) -> ir.ActivationDecl:
        name, params, body = c
        return self._shallow(_activation(self._span(pos), name[1], params.items, body), body)

    def loss_decl(self, c: Children, pos: Position) -> ir.LossDecl:
        name, params, body = c
        return self._shallow(_loss(self._span(pos), name[1], params.items, body), body)

    def metric_decl(self, c: Children, pos: Position) -> ir.MetricDecl:
        name, params, body = c
        return self._shallow(_metric(self._span(pos), name[1], params.items, body), body)

    def layer_decl(self, c: Children, pos: Position) -> ir.LayerDecl:
        name, params, body = c
        return _layer(self._span(pos), name[1], params.items, body.items)

    def sweep_decl(self, c: Children, pos: Position) -> ir.SweepDecl:
        return _sweep(self._span(pos), c[0][1], _nodes(c[1:]))

    def body(self, c: Children, pos: Position) -> Part:
        return Part(_nodes(c), pos)

    # -- statements
    def input_stmt(self, c: Children, pos: Position) -> ir.Input:
        return _input(self._span(pos), list(c))

    def input_item(self, c: Children, pos: Position) -> ir.InputItem:
        rest = c[1:]
        dtype = rest.pop()[1] if rest and type(rest[-1]) is tuple else None
        shape = rest[0] if rest else None
        return self._shallow(_input_item(self._span(pos), c[0][1], shape, dtype), shape)

    def output_stmt(self, c: Children, pos: Position) -> ir.Output:
        return _output(self._span(pos), list(c))

    def output_bind(self, c: Children, pos: Position) -> ir.OutputItem:
        name, value = c
        return self._shallow(_output_item(self._span(pos), name[1], value), value)

    def output_expr(self, c: Children, pos: Position) -> ir.OutputItem:
        (value,) = c
        if isinstance(value, ir.Name):
            return _output_item(self._span(pos), value.id, None)
        return self._shallow(_output_item(self._span(pos), None, value), value)

    def assign_stmt(self, c: Children, pos: Position) -> ir.Assign:
        return self._shallow(_assign(self._span(pos), [t[1] for t in c[:-1]], c[-1]), c[-1])

    def shared_stmt(self, c: Children, pos: Position) -> ir.Shared:
        name, value = c
        return self._shallow(_shared(self._span(pos), name[1], value), value)

    def if_stmt(self, c: Children, pos: Position) -> ir.If:
        cond, then = c[0], c[1].items
        orelse = c[2] if len(c) > 2 else None
        if isinstance(orelse, ir.If):
            orelse = [orelse]
        elif orelse is not None:
            orelse = orelse.items
        return self._shallow(_if(self._span(pos), cond, then, orelse), cond)

    def train_stmt(self, c: Children, pos: Position) -> ir.Train:
        return _train(self._span(pos), _nodes(c))

    def train_item(self, c: Children, pos: Position) -> ir.Kwarg:
        name, value = c
        return self._shallow(_kwarg(self._span(pos), name[1], value), value)

    weight_option = train_item

    def weight_stmt(self, c: Children, pos: Position) -> ir.Weight:
        return self._shallow(_weight(self._span(pos), c[0][1], c[1], c[2:]), c[1])

    # -- expressions
    def if_exp(self, c: Children, pos: Position) -> ir.IfExp:
        then, cond, orelse = c
        return _if_exp(self._span(pos), cond, then, orelse)

    def or_op(self, c: Children, pos: Position) -> ir.BoolOp:
        return _bool_op(self._span(pos), "or", c[0], c[1])

    def and_op(self, c: Children, pos: Position) -> ir.BoolOp:
        return _bool_op(self._span(pos), "and", c[0], c[1])

    def not_op(self, c: Children, pos: Position) -> ir.UnaryOp:
        return _unary_op(self._span(pos), "not", c[0])

    def binop(self, c: Children, pos: Position) -> ir.BinOp:
        left, op, right = c
        return _bin_op(self._span(pos), op[1], left, right)

    compare = binop

    def unop(self, c: Children, pos: Position) -> ir.UnaryOp:
        op, operand = c
        return _unary_op(self._span(pos), op[1], operand)

    def flow(self, c: Children, pos: Position) -> ir.Flow:
        items = _nodes(c)
        return _flow(self._span(pos), items)

    def call(self, c: Children, pos: Position) -> ir.Call:
        func, arguments = c
        args = [a for a in arguments.items if not isinstance(a, ir.Kwarg)]
        kwargs = [a for a in arguments.items if isinstance(a, ir.Kwarg)]
        return _call(self._span(pos), func, args, kwargs)

    def args(self, c: Children, pos: Position) -> Part:
        seen_keyword = None
        for arg in c:
            if isinstance(arg, ir.Kwarg):
                seen_keyword = arg
            elif seen_keyword is not None:
                self._fail(
                    arg.span,
                    "positional argument after a keyword argument",
                    f"move it before '{seen_keyword.name}=' or name it",
                )
                break
        return Part(c, pos)

    posarg = PASS  # the argument itself

    def kwarg(self, c: Children, pos: Position) -> ir.Kwarg:
        name, value = c
        return _kwarg(self._span(pos), name[1], value)

    def attr(self, c: Children, pos: Position) -> ir.Attr:
        value, name = c
        return _attr(self._span(pos), value, name[1])

    def index(self, c: Children, pos: Position) -> ir.Index:
        value, index = c
        return _index(self._span(pos), value, index)

    def slice(self, c: Children, pos: Position) -> ir.Slice:
        start, stop = c
        return _slice(self._span(pos), start, stop, None)

    def slice_step(self, c: Children, pos: Position) -> ir.Slice:
        start, stop, step = c
        return _slice(self._span(pos), start, stop, step)

    def ellipsis(self, c: Children, pos: Position) -> ir.EllipsisLit:
        return _ellipsis(self._span(pos))

    def subscript_tuple(self, c: Children, pos: Position) -> ir.Tuple:
        return _tuple(self._span(pos), _nodes(c))

    def tuple(self, c: Children, pos: Position) -> ir.Tuple:
        return _tuple(self._span(pos), list(c))

    def list(self, c: Children, pos: Position) -> ir.List:
        return _list(self._span(pos), list(c))

    def dict(self, c: Children, pos: Position) -> ir.Dict:
        items = _nodes(c)
        return _dict(self._span(pos), items)

    def dict_item(self, c: Children, pos: Position) -> ir.DictItem:
        key, value = c
        return _dict_item(self._span(pos), key, value)

    # -- atoms
    soft_keyword = hard_keyword = PASS  # the keyword's token

    def name(self, c: Children, pos: Position) -> ir.Name:
        return _name(self._span(pos), c[0][1])

    def int(self, c: Children, pos: Position) -> ir.Number:
        text = c[0][1]
        if len(text) > MAX_NUMBER_DIGITS:
            self._fail(self._tok_span(c[0]), f"number too long ({len(text):,} digits; at most {MAX_NUMBER_DIGITS})")
            return _number(self._span(pos), 0)
        return _number(self._span(pos), int(text))

    def float(self, c: Children, pos: Position) -> ir.Number:
        text = c[0][1]
        if len(text) > MAX_NUMBER_DIGITS + 8:
            self._fail(self._tok_span(c[0]), f"number too long ({len(text):,} characters)")
            return _number(self._span(pos), 0.0)
        value = float(text)
        if math.isinf(value):
            self._fail(self._tok_span(c[0]), f"number out of range: {text}")
        return _number(self._span(pos), value)

    def string(self, c: Children, pos: Position) -> ir.String:
        return _string(self._tok_span(c[0]), self._unescape(c[0]))

    def true(self, c: Children, pos: Position) -> ir.Bool:
        return _bool(self._span(pos), True)

    def false(self, c: Children, pos: Position) -> ir.Bool:
        return _bool(self._span(pos), False)

    def none(self, c: Children, pos: Position) -> ir.NoneLit:
        return _none(self._span(pos))

    def _unescape(self, tok: TokenTuple) -> str:
        body: str = tok[1][1:-1]
        if "\\" not in body:
            return body
        out, i = [], 0
        while i < len(body):
            ch = body[i]
            if ch == "\\":
                nxt = body[i + 1]
                if nxt not in _ESCAPES:
                    span = Span.at(self.file, tok[LINE], tok[COL] + 1 + i, 2)
                    self._fail(span, f"unknown escape '\\{nxt}' in string", 'strings allow \\" \\\\ \\n and \\t')
                    return body
                out.append(_ESCAPES[nxt])
                i += 2
            else:
                out.append(ch)
                i += 1
        return "".join(out)


def to_ir(text: str, display: str) -> ir.File:
    """Parse one file's text into an `ir.File` (comments kept for the formatter)."""
    comments: list[tuple[Any, ...]] = []
    builder = IRBuilder(display, text)
    decls = parse(text, display, builder, comments)
    if builder.error is not None:
        raise SpecError(builder.error)
    kept = [_comment(new_span(display, c[LINE], c[COL], c[END_LINE], c[END_COL]), c[1].rstrip()) for c in comments]
    return ir.File.model_construct(path=display, decls=decls, comments=kept)
