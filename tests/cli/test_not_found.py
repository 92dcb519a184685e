"""A package the registry does not have is one error, whichever command asked.

``splice info`` of a mistyped name said only "Package @splice/fils not found" with the detail
"registry code: NOT_FOUND" and no hint, while ``add``, ``verify``, ``outdated`` and
``update`` named the registry asked and pointed at ``splice search``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.registry_fixtures import new_project


def test_info_and_add_answer_an_unknown_package_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SPLICE_REGISTRY", raising=False)
    monkeypatch.chdir(new_project(tmp_path / "project"))
    errors = {}
    for command in ("info", "add"):
        capsys.readouterr()
        assert main(["--json", command, "@splice/fils"]) == 1, command
        errors[command] = json.loads(capsys.readouterr().out)["error"]
    assert (
        errors["info"]
        == errors["add"]
        == {
            "code": "PACKAGE_NOT_FOUND",
            "message": "Package @splice/fils was not found in the embedded registry",
            "hint": "Search with `splice search <words>`.",
        }
    )
