"""The command line explains itself (issue 23): help for every argument, a description and
examples for every command, one-line confirmations, did-you-mean, `--version`."""

from __future__ import annotations

import argparse
import glob
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netdsl.cli import about, main
from netdsl.cli.app import _parser

ROOT = Path(__file__).resolve().parents[2]
PARSER = _parser()
COMMANDS: dict[str, argparse.ArgumentParser] = next(
    a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)
).choices
# The commands whose examples run here in a second or so (no TensorFlow, no server).
RUN_HERE = ("check", "fmt", "layers", "render")


def examples(command: str) -> list[str]:
    epilog = COMMANDS[command].epilog or ""
    return [line.strip() for line in epilog.splitlines()[1:] if line.strip()]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------ --help


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_a_description_and_examples(command):
    parser = COMMANDS[command]
    assert parser.description and parser.description.endswith("."), command
    assert (parser.epilog or "").startswith("examples:\n")
    assert examples(command) and all(e.startswith(f"netdsl {command}") for e in examples(command))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_argument_and_option_has_help(command):
    bare = [a.option_strings or a.dest for a in COMMANDS[command]._actions if not a.help]
    assert not bare, f"netdsl {command}: no help for {bare}"


def test_defaults_are_shown(capsys):
    code, out, _ = run(capsys, "build", "--help")
    assert code == 0
    assert "the folder to write into (default: build)" in " ".join(out.split())
    code, out, _ = run(capsys, "train", "--help")
    assert "(default: runs)" in out and "(default: auto)" in " ".join(out.split())


@pytest.mark.parametrize("command", RUN_HERE)
def test_the_examples_run(command, tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    monkeypatch.chdir(tmp_path)
    for example in examples(command):
        words = shlex.split(example, comments=True)[1:]
        argv = [match for word in words for match in (sorted(glob.glob(word)) if "*" in word else [word])]
        code, _, err = run(capsys, *argv)
        assert (code, err) == (0, ""), example


# ------------------------------------------------------------------ what a command says when it worked


def test_check_confirms_a_clean_spec(capsys):
    spec = str(ROOT / "specs" / "lightning_mlp.net")
    assert run(capsys, "check", spec) == (0, f"{spec}: no problems found\n", "")
    assert run(capsys, "check", spec, spec) == (0, "2 specs: no problems found\n", "")


def test_check_json_is_json_only(capsys):
    spec = str(ROOT / "specs" / "lightning_mlp.net")
    assert run(capsys, "check", "--json", spec) == (0, "[]\n", "")
    assert run(capsys, "check", "--format", "json", spec) == (0, "[]\n", "")  # the earlier spelling


def test_render_says_what_it_wrote(tmp_path, capsys):
    spec = ROOT / "specs" / "lightning_mlp.net"
    out = tmp_path / "m.dot"
    assert run(capsys, "render", str(spec), "--no-shapes", "-o", str(out)) == (0, f"wrote {out}\n", "")


# ------------------------------------------------------------------ earlier spellings of renamed flags


@pytest.mark.parametrize(
    "argv, dest, value",
    [
        (["build", "s.net", "--max-params", "7"], "param_limit", 7),
        (["build", "s.net", "--param-limit", "7"], "param_limit", 7),
        (["build", "s.net", "--output", "d"], "out", "d"),
        (["render", "s.net", "--expand-repeats"], "collapse_repeats", False),
        (["render", "s.net", "--no-collapse"], "collapse_repeats", False),
        (["render", "s.net"], "collapse_repeats", True),
        (["render", "s.net", "--format", "png"], "image_format", "png"),
        (["train", "s.net", "--output", "r"], "out", "r"),
        (["predict", "r", "--data", "d", "--output", "p.npz"], "out", "p.npz"),
        (["check", "s.net", "-I", "lib", "--include", "more"], "include", ["lib", "more"]),
    ],
)
def test_old_flag_spellings_still_work(argv, dest, value):
    assert getattr(PARSER.parse_args(argv), dest) == value


def test_renamed_flags_are_not_shown(capsys):
    _, out, _ = run(capsys, "build", "--help")
    assert "--param-limit" in out and "--max-params" not in out and "--output" not in out


# ------------------------------------------------------------------ did you mean


@pytest.mark.parametrize(
    "argv, last_line",
    [
        (
            ["chek", "x.net"],
            "netdsl: error: argument COMMAND: invalid choice: 'chek' (choose from 'check', 'fmt', "
            "'build', 'summary', 'render', 'layers', 'preview', 'decompile', 'export', 'lsp', 'train', 'sweep', 'runs', "
            "'evaluate', "
            "'predict', 'completion', 'init', 'examples', 'zoo'); did you mean 'check'?",
        ),
        (["check", "--jsn", "x.net"], "netdsl check: error: unrecognized arguments: --jsn; did you mean '--json'?"),
        (
            ["build", "x.net", "--param-limt", "5"],
            "netdsl build: error: unrecognized arguments: --param-limt 5; did you mean '--param-limit'?",
        ),
        (
            ["render", "x.net", "--image-format", "SVG"],
            "netdsl render: error: argument --image-format: invalid choice: 'SVG' (choose from 'svg', 'png', 'pdf', "
            "'dot'); did you mean 'svg'?",
        ),
        (["check", "--zzz", "x.net"], "netdsl check: error: unrecognized arguments: --zzz"),
    ],
)
def test_did_you_mean(capsys, argv, last_line):
    code, out, err = run(capsys, *argv)
    assert (code, out, err.splitlines()[-1]) == (2, "", last_line)


def test_predict_still_needs_its_output(capsys):
    code, _, err = run(capsys, "predict", "runs/x-1", "--data", "d.npz")
    assert (code, err) == (2, "netdsl predict: error: the following arguments are required: -o/--out PREDS.npz\n")


# ------------------------------------------------------------------ --version


def test_version_report_names_everything():
    versions = {"keras": "3.9.0", "tensorflow-cpu": "2.19.0", "jax": "0.5.0"}
    text = about.report(versions.get, {}, lambda: "Graphviz 2.43.0 (dot)")
    assert text.splitlines() == [
        f"netdsl {about.__version__}",
        f"Python {sys.version.split()[0]}",
        "Keras 3.9.0",
        "backends: tensorflow 2.19.0 (default), jax 0.5.0, torch not installed",
        "Graphviz 2.43.0 (dot)",
    ]
    text = about.report({}.get, {"KERAS_BACKEND": "jax"}, lambda: "Graphviz not found")
    assert text.splitlines()[2:4] == [
        "Keras not installed",
        "backends: tensorflow not installed, jax not installed (default), torch not installed",
    ]


def test_dot_version_without_dot():
    assert about.dot_version(lambda name: None) == (
        "Graphviz not found: diagrams are written as .dot files (apt-get install graphviz, brew install graphviz)"
    )


def test_version_reads_no_backend():
    code = (
        "import sys\nfrom netdsl.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    lines = done.stdout.splitlines()
    assert (done.returncode, done.stderr, lines[-1]) == (0, "", "[]")
    assert lines[0].startswith("netdsl ") and lines[1] == f"Python {sys.version.split()[0]}"
    assert lines[2] == (f"Keras {about.installed('keras')}" if about.installed("keras") else "Keras not installed")
    dot = shutil.which("dot")
    assert lines[4] == about.dot_version() and (dot is None) == lines[4].startswith("Graphviz not found")


# ------------------------------------------------------------------ shell completion


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize(
    "line, completions",
    [
        ("netdsl ch", "check"),
        ("netdsl render x.net --no-", "--no-shapes --no-collapse"),
        ("netdsl render x.net --image-format p", "png pdf"),
        ("netdsl build x.net --backend j", "jax"),
        ("netdsl completion ", "bash zsh"),
        ("netdsl check --js", "--json"),
    ],
)
def test_bash_completion(capsys, line, completions):
    code, script, _ = run(capsys, "completion", "bash")
    words = line.split() + ([""] if line.endswith(" ") else [])
    program = (
        f"{script}\nCOMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
        f'COMP_CWORD={len(words) - 1}\n_netdsl\necho "${{COMPREPLY[*]}}"\n'
    )
    done = subprocess.run(["bash", "--norc", "--noprofile"], input=program, capture_output=True, text=True, timeout=60)
    assert (code, done.returncode, done.stderr, done.stdout) == (0, 0, "", completions + "\n")


def test_a_bad_render_depth_is_a_usage_error_in_the_shape_of_every_command(tmp_path, capsys):
    spec = tmp_path / "m.net"
    spec.write_text("model m {\n  input x: (3,)\n  output y = x -> dense(2)\n}\n")
    assert main(["render", str(spec), "--depth", "-1"]) == 2
    assert capsys.readouterr().err == "netdsl render: error: --depth must be 0 or more, received -1\n"
