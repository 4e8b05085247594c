"""Parse tree to spec IR.

Each method is named after the grammar rule (or alias) it handles and builds
the IR class of the same name. Nodes are built with `model_construct`: the
transformer makes them well-typed by construction, and validating a
10,000-layer spec node by node would cost more than parsing it
(`tests/test_frontend.py` validates the result independently).
"""

from __future__ import annotations

import math

from lark import Token, Transformer, v_args
from lark.exceptions import VisitError

from netdsl.syntax import ir
from netdsl.errors import Diagnostic, SpecError, Span
from netdsl.syntax.parser import MAX_NUMBER_DIGITS, parse_tree

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


def _make(cls, **fields):
    return cls.model_construct(**fields)


@v_args(meta=True)
class ToIR(Transformer):
    def __init__(self, file: str):
        super().__init__()
        self.file = file

    # -- positions
    def _span(self, meta) -> Span:
        return Span.model_construct(
            file=self.file, line=meta.line, col=meta.column, end_line=meta.end_line, end_col=meta.end_column
        )

    def _tok_span(self, tok: Token) -> Span:
        return Span.model_construct(
            file=self.file, line=tok.line, col=tok.column, end_line=tok.end_line, end_col=tok.end_column
        )

    # -- declarations
    def start(self, meta, children):
        return list(children)

    def import_decl(self, meta, children):
        path = self.string(meta, [children[0]]).value
        alias = str(children[1]) if len(children) > 1 else None
        return _make(ir.Import, span=self._span(meta), path=path, alias=alias)

    def let_decl(self, meta, children):
        name, value = children
        return _make(ir.Let, span=self._span(meta), name=str(name), value=value)

    def let_func(self, meta, children):
        name, params, body = children
        return _make(ir.LetFunc, span=self._span(meta), name=str(name), params=params, body=body)

    def params(self, meta, children):
        return list(children)

    def param(self, meta, children):
        default = children[1] if len(children) > 1 else None
        return _make(ir.Param, span=self._span(meta), name=str(children[0]), default=default)

    def model_decl(self, meta, children):
        name, body = children
        return _make(ir.ModelDecl, span=self._span(meta), name=str(name), body=body)

    def block_decl(self, meta, children):
        name, params, body = children
        return _make(ir.BlockDecl, span=self._span(meta), name=str(name), params=params, body=body)

    def activation_decl(self, meta, children):
        name, params, body = children
        return _make(ir.ActivationDecl, span=self._span(meta), name=str(name), params=params, body=body)

    def layer_decl(self, meta, children):
        name, params, body = children
        return _make(ir.LayerDecl, span=self._span(meta), name=str(name), params=params, body=body)

    def body(self, meta, children):
        return [c for c in children if not isinstance(c, Token)]

    # -- statements
    def input_stmt(self, meta, children):
        return _make(ir.Input, span=self._span(meta), items=list(children))

    def input_item(self, meta, children):
        name, rest = children[0], list(children[1:])
        dtype = str(rest.pop()) if rest and isinstance(rest[-1], Token) else None
        shape = rest[0] if rest else None
        return _make(ir.InputItem, span=self._span(meta), name=str(name), shape=shape, dtype=dtype)

    def output_stmt(self, meta, children):
        return _make(ir.Output, span=self._span(meta), items=list(children))

    def output_bind(self, meta, children):
        name, value = children
        return _make(ir.OutputItem, span=self._span(meta), name=str(name), value=value)

    def output_expr(self, meta, children):
        (value,) = children
        if isinstance(value, ir.Name):
            return _make(ir.OutputItem, span=self._span(meta), name=value.id, value=None)
        return _make(ir.OutputItem, span=self._span(meta), name=None, value=value)

    def assign_stmt(self, meta, children):
        *targets, value = children
        return _make(ir.Assign, span=self._span(meta), targets=[str(t) for t in targets], value=value)

    def shared_stmt(self, meta, children):
        name, value = children
        return _make(ir.Shared, span=self._span(meta), name=str(name), value=value)

    def if_stmt(self, meta, children):
        cond, then = children[0], children[1]
        orelse = children[2] if len(children) > 2 else None
        if isinstance(orelse, ir.If):
            orelse = [orelse]
        return _make(ir.If, span=self._span(meta), cond=cond, then=then, orelse=orelse)

    def train_stmt(self, meta, children):
        items = [c for c in children if not isinstance(c, Token)]
        return _make(ir.Train, span=self._span(meta), items=items)

    def train_item(self, meta, children):
        name, value = children
        return _make(ir.Kwarg, span=self._span(meta), name=str(name), value=value)

    weight_option = train_item

    def weight_stmt(self, meta, children):
        name, shape, *options = children
        return _make(ir.Weight, span=self._span(meta), name=str(name), shape=shape, options=options)

    # -- expressions
    def if_exp(self, meta, children):
        then, cond, orelse = children
        return _make(ir.IfExp, span=self._span(meta), cond=cond, then=then, orelse=orelse)

    def or_op(self, meta, children):
        return _make(ir.BoolOp, span=self._span(meta), op="or", left=children[0], right=children[1])

    def and_op(self, meta, children):
        return _make(ir.BoolOp, span=self._span(meta), op="and", left=children[0], right=children[1])

    def not_op(self, meta, children):
        return _make(ir.UnaryOp, span=self._span(meta), op="not", operand=children[0])

    def binop(self, meta, children):
        left, op, right = children
        return _make(ir.BinOp, span=self._span(meta), op=str(op), left=left, right=right)

    compare = binop

    def unop(self, meta, children):
        op, operand = children
        return _make(ir.UnaryOp, span=self._span(meta), op=str(op), operand=operand)

    def flow(self, meta, children):
        items = [c for c in children if not isinstance(c, Token)]
        return _make(ir.Flow, span=self._span(meta), items=items)

    def call(self, meta, children):
        func, arguments = children
        args = [a for a in arguments if not isinstance(a, ir.Kwarg)]
        kwargs = [a for a in arguments if isinstance(a, ir.Kwarg)]
        return _make(ir.Call, span=self._span(meta), func=func, args=args, kwargs=kwargs)

    def args(self, meta, children):
        seen_keyword = None
        for arg in children:
            if isinstance(arg, ir.Kwarg):
                seen_keyword = arg
            elif seen_keyword is not None:
                raise SpecError(Diagnostic.at(
                    arg.span, "positional argument after a keyword argument",
                    f"move it before '{seen_keyword.name}=' or name it"))
        return list(children)

    def posarg(self, meta, children):
        return children[0]

    def kwarg(self, meta, children):
        name, value = children
        return _make(ir.Kwarg, span=self._span(meta), name=str(name), value=value)

    def attr(self, meta, children):
        value, name = children
        return _make(ir.Attr, span=self._span(meta), value=value, attr=str(name))

    def index(self, meta, children):
        value, index = children
        return _make(ir.Index, span=self._span(meta), value=value, index=index)

    def slice(self, meta, children):
        start, stop = children
        return _make(ir.Slice, span=self._span(meta), start=start, stop=stop)

    def tuple(self, meta, children):
        return _make(ir.Tuple, span=self._span(meta), items=list(children))

    def list(self, meta, children):
        return _make(ir.List, span=self._span(meta), items=[c for c in children])

    def dict(self, meta, children):
        items = [c for c in children if not isinstance(c, Token)]
        return _make(ir.Dict, span=self._span(meta), items=items)

    def dict_item(self, meta, children):
        key, value = children
        return _make(ir.DictItem, span=self._span(meta), key=key, value=value)

    # -- atoms
    def soft_keyword(self, meta, children):
        return children[0]

    hard_keyword = soft_keyword

    def name(self, meta, children):
        return _make(ir.Name, span=self._span(meta), id=str(children[0]))

    def int(self, meta, children):
        tok = children[0]
        if len(tok) > MAX_NUMBER_DIGITS:
            raise SpecError(Diagnostic.at(
                self._tok_span(tok), f"number too long ({len(tok):,} digits; at most {MAX_NUMBER_DIGITS})"))
        return _make(ir.Number, span=self._span(meta), value=int(tok))

    def float(self, meta, children):
        tok = children[0]
        if len(tok) > MAX_NUMBER_DIGITS + 8:
            raise SpecError(Diagnostic.at(self._tok_span(tok), f"number too long ({len(tok):,} characters)"))
        value = float(tok)
        if math.isinf(value):
            raise SpecError(Diagnostic.at(self._tok_span(tok), f"number out of range: {tok}"))
        return _make(ir.Number, span=self._span(meta), value=value)

    def string(self, meta, children):
        tok = children[0]
        return _make(ir.String, span=self._tok_span(tok), value=self._unescape(tok))

    def true(self, meta, children):
        return _make(ir.Bool, span=self._span(meta), value=True)

    def false(self, meta, children):
        return _make(ir.Bool, span=self._span(meta), value=False)

    def none(self, meta, children):
        return _make(ir.NoneLit, span=self._span(meta))

    def _unescape(self, tok: Token) -> str:
        body = tok[1:-1]
        if "\\" not in body:
            return body
        out, i = [], 0
        while i < len(body):
            ch = body[i]
            if ch == "\\":
                nxt = body[i + 1]
                if nxt not in _ESCAPES:
                    span = Span.at(self.file, tok.line, tok.column + 1 + i, 2)
                    raise SpecError(Diagnostic.at(span, f"unknown escape '\\{nxt}' in string",
                                                  'strings allow \\" \\\\ \\n and \\t'))
                out.append(_ESCAPES[nxt])
                i += 2
            else:
                out.append(ch)
                i += 1
        return "".join(out)


def to_ir(text: str, display: str) -> ir.File:
    """Parse one file's text into an `ir.File` (comments kept for the formatter)."""
    comments: list[Token] = []
    tree = parse_tree(text, display, comments)
    try:
        decls = ToIR(display).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, SpecError):
            raise exc.orig_exc from None
        if isinstance(exc.orig_exc, RecursionError):
            raise SpecError(Diagnostic.for_file(display, "expression nested too deeply")) from None
        raise
    except RecursionError:
        raise SpecError(Diagnostic.for_file(display, "expression nested too deeply")) from None
    kept = [
        _make(ir.Comment, span=Span.model_construct(
            file=display, line=c.line, col=c.column, end_line=c.end_line, end_col=c.end_column), text=str(c).rstrip())
        for c in comments
    ]
    return ir.File.model_construct(path=display, decls=decls, comments=kept)
