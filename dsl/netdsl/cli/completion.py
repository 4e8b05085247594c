"""`netdsl completion bash|zsh`: a shell completion script, written from the parser itself.

    eval "$(netdsl completion bash)"     # in ~/.bashrc
    eval "$(netdsl completion zsh)"      # in ~/.zshrc

Commands, each command's options and the choices of an option (`--backend`,
`--image-format`, ...) complete; anything else completes as a file name. The
script is made from the same parser `--help` prints, so it cannot drift from
the commands; it needs no package (argcomplete would run Python at every Tab).
"""

from __future__ import annotations

import argparse

ZSH_PRELUDE = "autoload -U +X bashcompinit && bashcompinit\n"


def run(args: argparse.Namespace) -> int:
    print(script(args.parser, args.shell), end="")
    return 0


def _visible_options(parser: argparse.ArgumentParser) -> list[str]:
    return [
        option
        for action in parser._actions
        if action.help is not argparse.SUPPRESS
        for option in action.option_strings
        if option.startswith("--")
    ]


def _choices(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    return {
        option: [str(c) for c in action.choices]
        for action in parser._actions
        if action.choices and action.option_strings
        for option in action.option_strings
    }


def _choice_case(pattern: str, words: list[str]) -> str:
    return f'        {pattern}) COMPREPLY=($(compgen -W "{" ".join(words)}" -- "$cur")); return ;;'


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of `parser` (the top-level `netdsl` parser) for bash, or zsh via bashcompinit."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    option_cases, choice_cases = [], []
    for name, command in commands.items():
        option_cases.append(f'        {name}) opts="{" ".join(_visible_options(command))}" ;;')
        choice_cases += [_choice_case(f"{name}:{option}", values) for option, values in _choices(command).items()]
        positional = next((a for a in command._actions if not a.option_strings and a.choices), None)
        if positional is not None:  # a command whose argument is a choice (`completion bash`)
            choice_cases.append(_choice_case(f"{name}:{name}", list(positional.choices)))
    top = " ".join([*commands, *_visible_options(parser)])
    body = "\n".join(
        [
            "# netdsl's completion (`netdsl completion bash`): commands, options, choices; files otherwise.",
            "_netdsl() {",
            "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command=${COMP_WORDS[1]} opts",
            '    if [ "$COMP_CWORD" -eq 1 ]; then',
            f'        COMPREPLY=($(compgen -W "{top}" -- "$cur"))',
            "        return",
            "    fi",
            '    case "$command:$prev" in',
            *choice_cases,
            "    esac",
            '    case "$command" in',
            *option_cases,
            "    esac",
            "    if [[ $cur == -* ]]; then",
            '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
            "    else",
            '        COMPREPLY=($(compgen -f -- "$cur"))',
            "    fi",
            "}",
            "complete -o filenames -F _netdsl netdsl",
            "",
        ]
    )
    return (ZSH_PRELUDE if shell == "zsh" else "") + body
