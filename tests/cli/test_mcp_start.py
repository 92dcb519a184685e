"""`splice mcp` reads splice.json when it starts: a ``reuse`` setting it refuses stops the
server there (INVALID_PROJECT, exit 1, as a missing project does), where it served and
refused every tool call with INVALID_PROJECT."""

from __future__ import annotations

import json
from pathlib import Path

from testing.cli import run_splice
from testing.registry_fixtures import new_project


def test_an_invalid_reuse_setting_stops_mcp_at_its_start(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    document = json.loads((project / "splice.json").read_text(encoding="utf-8"))
    document["reuse"] = {"maxCalls": 0}
    (project / "splice.json").write_text(json.dumps(document), encoding="utf-8")
    done = run_splice("--json", "mcp", cwd=project, input="")
    assert done.code == 1, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["code"] == "INVALID_PROJECT"
    assert "reuse.maxCalls" in error["message"]
    assert "serving" not in done.stderr


def test_a_project_option_naming_no_directory_stops_mcp_at_its_start(tmp_path: Path) -> None:
    """``--project`` was walked up from like a working directory: a mistyped one (in a
    client's configuration) served the project around it, with its tools. It is USAGE."""
    project = new_project(tmp_path / "p")
    (project / "file").write_text("x", encoding="utf-8")
    cases = [
        (str(project / "typo"), f"--project {project / 'typo'} does not exist"),
        (str(project / "file"), f"--project {project / 'file'} is not a directory"),
        # empty (a client's ${workspaceFolder} with no folder open): it served the project
        # around the client's working directory
        ("", "--project is empty"),
    ]
    for given, message in cases:
        done = run_splice("--json", "mcp", "--project", given, cwd=project, input="")
        assert done.code == 2, done.stdout + done.stderr
        error = done.json()["error"]
        assert (error["code"], error["message"]) == ("USAGE", message)
        assert "serving" not in done.stderr
