"""The checker's work grows with the spec, not with its square: no per-statement
cost that depends on how many names, outputs or errors came before.

(Work is counted, not timed: bench/bench_check.py measures the time.)"""

from __future__ import annotations

import difflib

import netdsl
from netdsl.errors import did_you_mean, suggestions_limited
from netdsl.limits import MAX_DIAGNOSTICS
from netdsl.semantics.analysis import MAX_SUGGESTION_WORK, analyze


def test_suggestions_stop_when_their_budget_is_spent():
    read = []

    def names():
        for name in ("dense", "conv2d", "relu"):
            read.append(name)
            yield name

    with suggestions_limited(5):
        assert did_you_mean("dens", names()) == "did you mean 'dense'?"
        assert did_you_mean("rlu", names()) == "did you mean 'relu'?"  # 3 + 3 > 5: the last one
        assert did_you_mean("dens", names()) is None
    assert len(read) == 6  # the third list was never read
    assert did_you_mean("dens", ["dense"]) == "did you mean 'dense'?"  # no budget outside


def test_thousands_of_misspelt_tensors_cost_a_bounded_number_of_comparisons(monkeypatch):
    compared = []
    real = difflib.get_close_matches

    def counting(word, possibilities, *args, **kwargs):
        compared.append(len(possibilities))
        return real(word, possibilities, *args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counting)
    body = "\n".join(f"  h{i} = hh{i - 1} -> dense(4)" for i in range(1, 3000))  # hh0 for h0 ...
    spec = f"model m {{\n  input x: (4,)\n  h0 = x -> dense(4)\n{body}\n  output y = x\n}}\n"
    diagnostics = analyze(netdsl.parse(spec, filename="typos.net")).diagnostics
    # every misspelling is found; a check reports the first MAX_DIAGNOSTICS, then how many more
    shown = [f"undefined tensor 'hh{i}'" for i in range(MAX_DIAGNOSTICS)]
    more = f"{2999 - MAX_DIAGNOSTICS:,} more diagnostics from here on are not shown"
    assert [d.message for d in diagnostics] == [*shown, more]
    assert diagnostics[0].hint == "did you mean 'h0'?"  # the first ones still get their suggestion
    assert diagnostics[100].hint == "did you mean 'h100'?"
    assert diagnostics[MAX_DIAGNOSTICS - 1].hint is None  # the suggestion budget ran out before
    assert sum(compared) <= 2 * MAX_SUGGESTION_WORK


def test_many_outputs_are_each_checked_once():
    outputs = "\n".join(f"  output o{i} = x -> dense(2)" for i in range(2000))
    spec = f"model m {{\n  input x: (4,)\n{outputs}\n  output o7 = x\n}}\n"
    analysis = analyze(netdsl.parse(spec, filename="outs.net"))
    assert [d.message for d in analysis.diagnostics] == ["'o7' is already an output"]
    assert analysis.graphs["m"].output_names == [f"o{i}" for i in range(2000)]


def test_a_syntax_error_after_many_declarations_parses_them_once(monkeypatch):
    """The declarations the file's parse read before its error are not parsed again one by one
    to look for more errors (a 2 MiB file of `let` lines with an error in its last line: 4 s)."""
    from netdsl.syntax import syntax_errors

    parsed_alone = []  # the first line of each declaration parsed alone, to find out or to describe
    real = syntax_errors.first_syntax_error, syntax_errors._describe_first_error

    def counting(text, display, first_line=1):
        parsed_alone.append(first_line)
        return real[0](text, display, first_line)

    def describing(text, display, first_line=1):
        if first_line not in parsed_alone:  # first_syntax_error describes what it could not parse
            parsed_alone.append(first_line)
        return real[1](text, display, first_line)

    monkeypatch.setattr(syntax_errors, "first_syntax_error", counting)
    monkeypatch.setattr(syntax_errors, "_describe_first_error", describing)
    lets = "".join(f"let a{i} = [{i}]\n" for i in range(500))
    diagnostics = netdsl.check(text=lets + "let = 1\nlet b = (\n", filename="x.net")
    assert [(d.line, d.col, d.message) for d in diagnostics] == [
        (501, 5, "expected a name after 'let', found '='"),
        (502, 9, "missing ')'"),
    ]
    assert parsed_alone == [501, 502]
    parsed_alone.clear()
    diagnostics = netdsl.check(text="let = 1\n" + lets, filename="x.net")  # the error first: each is parsed
    assert [(d.line, d.col, d.message) for d in diagnostics] == [(1, 5, "expected a name after 'let', found '='")]
    assert len(parsed_alone) == 501


def test_a_stray_character_in_one_long_model_is_not_parsed_again(monkeypatch):
    """The fuzz campaign's 2 MiB model with a `$` in its last lines (seed 22, input 4414): the
    file's parse reached it with no error before, so it is the first error; 13 s -> 9 s CPU."""
    from netdsl.syntax import syntax_errors

    described = []
    monkeypatch.setattr(syntax_errors, "_describe_first_error", lambda *args: described.append(args))
    body = '  a = x -> Lambda("lambda t: t")\n' * 300
    text = f"model m {{\n  input x: (4,)\n{body}  c =$ x -> relu\n  output y = x\n}}\n"
    diagnostics = netdsl.check(text=text, filename="x.net")
    assert [(d.line, d.col, d.message) for d in diagnostics] == [(303, 6, "unexpected character '$'")]
    assert described == []


def test_one_let_line_declared_thousands_of_times():
    """Issue 22's fuzz campaign, made small: one `let` line repeated over 2 MiB (seed 22, inputs
    34778, 57371, 71668). Each repeat is reported once, its value still checked alone; a check
    shows the first MAX_DIAGNOSTICS, then how many more (bench/bench_check.py times the 2 MiB one)."""
    repeats = 3000
    text = "let a0 = 1\nlet a1 = [a0]\nlet a1 = b + 1\n" + "let a1 = [a0]\n" * repeats
    text += "model m {\n  input x: (4,)\n  output y = x -> dense(a0)\n}\n"
    diagnostics = netdsl.check(text=text, filename="x.net")
    seen = [(d.line, d.col, d.message) for d in diagnostics]
    assert seen[:2] == [(3, 1, "'a1' is already defined at line 2"), (3, 10, "unknown name 'b'")]
    assert seen[2:MAX_DIAGNOSTICS] == [
        (line, 1, "'a1' is already defined at line 2") for line in range(4, MAX_DIAGNOSTICS + 2)
    ]
    more = repeats + 2 - MAX_DIAGNOSTICS
    assert seen[MAX_DIAGNOSTICS:] == [(MAX_DIAGNOSTICS + 2, 1, f"{more:,} more diagnostics from here on are not shown")]
    assert all(d.severity == "error" for d in diagnostics)


def test_a_syntax_error_at_the_end_of_one_long_model_is_described_without_a_recognizing_parse(monkeypatch):
    """The fuzz campaign's 2 MiB model of one `input` line repeated 110,138 times and an error in
    its last lines (seed 22, input 20411: 9.3 s CPU): the file's parse failed in that model, so it
    is described at once, not first parsed again only to find out that it does not parse."""
    from netdsl.syntax import syntax_errors

    recognized = []
    real = syntax_errors.first_syntax_error

    def counting(text, display, first_line=1):
        recognized.append(first_line)
        return real(text, display, first_line)

    monkeypatch.setattr(syntax_errors, "first_syntax_error", counting)
    body = "  input x: (10, 8)\n" * 300
    text = f"let a = 1\nmodel m {{\n{body}  y = (-> x\n  output y = x\n}}\nlet b = (\n"
    diagnostics = netdsl.check(text=text, filename="x.net")
    assert [(d.line, d.col, d.message) for d in diagnostics] == [
        (303, 8, "unexpected '->'; expected a value or ')'"),
        (306, 9, "missing ')'"),
    ]
    assert recognized == [306]  # the declaration after the model's, which the file's parse never reached


def test_a_syntax_error_at_the_end_of_one_long_model_is_described_without_parsing_it_again(monkeypatch):
    """The 2 MiB model of one line repeated with an error in its last lines (seed 22, input 20411)
    was parsed twice: by the file's parse, then from its start again to describe the error. The
    description now resumes from the file's parse after the last statement it read, alone in the
    file or after other declarations (`_describe_first_error` parses text from its start)."""
    from netdsl.syntax import syntax_errors

    described = []
    real = syntax_errors._describe_first_error

    def describing(text, display, first_line=1):
        described.append(first_line)
        return real(text, display, first_line)

    monkeypatch.setattr(syntax_errors, "_describe_first_error", describing)
    body = "  input x: (10, 8)\n" * 300
    model = f"model m {{\n{body}  y = (-> x\n  output y = x\n}}\n"
    diagnostics = netdsl.check(text=model, filename="x.net")
    assert [(d.line, d.col, d.message) for d in diagnostics] == [(302, 8, "unexpected '->'; expected a value or ')'")]
    assert described == []
    diagnostics = netdsl.check(text=f"let a = 1\n{model}let b = (\n", filename="x.net")
    assert [(d.line, d.col, d.message) for d in diagnostics] == [
        (303, 8, "unexpected '->'; expected a value or ')'"),
        (306, 9, "missing ')'"),
    ]
    assert described == [306]  # the declaration after the model's, which the file's parse never reached


BROKEN_STATEMENTS = [
    "  y = (-> x\n",
    "  h = x -> dense(4, a=[1, (3\n",
    "  h = x -> dense(4) dense(3)\n",
    "  h = x ->\n",
    "  if a {\n    h = x -> dense(4) ->\n  }\n",
    "  h = {1: (2\n",
    "  h = x => y\n",
    "  output\n",
    "  z = f(x,, y)\n",
    "}\n}\n",
    "  let = 3\n",
    "  h = [1, 2\n  ]]\n",
]


def test_an_error_described_from_the_files_parse_reads_as_described_from_its_start(monkeypatch):
    """The description resumed from the file's parse (`_describe_resumed`) equals the one of a
    parse from the start of the text, for broken statements put after every line of the example
    specs (the fuzz campaign compared 9,000 mutated specs the same way)."""
    from pathlib import Path

    from netdsl.errors import SpecError
    from netdsl.syntax import syntax_errors
    from netdsl.syntax.transform import to_ir

    def diagnostics(text):
        try:
            to_ir(text, "x.net")
        except SpecError as exc:
            return [(d.line, d.col, d.message, d.hint) for d in exc.diagnostics]
        return []

    resumed = syntax_errors._describe_resumed
    taken = 0

    def counting(*args, **kwargs):
        nonlocal taken
        found = resumed(*args, **kwargs)
        taken += found is not None
        return found

    compared = 0
    for spec in sorted((Path(__file__).resolve().parents[2] / "specs").glob("*.net")):
        lines = spec.read_text(encoding="utf-8").splitlines(keepends=True)
        for cut in range(1, len(lines), 7):
            for broken in BROKEN_STATEMENTS:
                text = "".join(lines[:cut]) + broken + "".join(lines[cut:])
                monkeypatch.setattr(syntax_errors, "_describe_resumed", counting)
                from_the_files_parse = diagnostics(text)
                monkeypatch.setattr(syntax_errors, "_describe_resumed", lambda *args, **kwargs: None)
                assert from_the_files_parse == diagnostics(text), text
                compared += bool(from_the_files_parse)
    assert compared > 500 and taken > compared // 4  # most errors are in a statement after others
