"""The VS Code extension in an untrusted workspace (issue 22, security review 2026-12 finding 13): a cloned
repository's `.vscode/settings.json` cannot choose the program the extension runs, nor its arguments."""

from __future__ import annotations

import json
from pathlib import Path

PACKAGE = json.loads((Path(__file__).resolve().parents[2] / "editors" / "vscode" / "package.json").read_text())
RUNS_A_PROGRAM = ["netdsl.server.path", "netdsl.server.args"]


def test_the_settings_that_name_a_program_are_restricted_in_untrusted_workspaces():
    trust = PACKAGE["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited"
    assert trust["restrictedConfigurations"] == RUNS_A_PROGRAM
    properties = PACKAGE["contributes"]["configuration"]["properties"]
    assert [properties[name]["scope"] for name in RUNS_A_PROGRAM] == ["machine-overridable"] * 2
