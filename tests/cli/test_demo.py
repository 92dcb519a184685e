"""`splice demo`: the README's main job, through the real binary on a fresh SPLICE_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.cli import run_splice


def test_demo_adds_runs_refuses_tampering_and_restores(tmp_path: Path) -> None:
    result = run_splice("demo", "--dir", str(tmp_path / "proj"), "--name", "Ada", "--json")
    assert result.code == 0, result.stderr
    summary = result.json()
    assert summary["ok"] is True
    assert summary["package"]["name"] == "@splice/example"
    runs = summary["runs"]
    assert runs["first"]["output"] == {"message": "Hello, Ada."}
    assert runs["tampered"]["ok"] is False
    assert runs["tampered"]["error"]["code"] == "INSTALLED_PACKAGE_MODIFIED"
    assert runs["restored"]["output"] == {"message": "Hello, Ada."}
    lock = (tmp_path / "proj" / "splice.lock").read_text()
    assert summary["package"]["integrity"] in lock
    installed = tmp_path / "proj" / ".splice" / "packages" / "@splice" / "example" / "SKILL.md"
    assert "Injected by the demo" not in installed.read_text()


def test_demo_text_output_says_what_it_did(tmp_path: Path) -> None:
    result = run_splice("demo", "--dir", str(tmp_path / "proj"))
    assert result.code == 0, result.stderr
    assert '"message": "Hello, Splice."' in result.stdout
    for step in (
        "1. Created a project",
        "2. Added @splice/example",
        "3. Ran example.hello",
        "INSTALLED_PACKAGE_MODIFIED",
        "5. `splice install` restored",
    ):
        assert step in result.stderr
    again = run_splice("demo", "--dir", str(tmp_path / "proj"))  # splice.json is kept
    assert again.code == 0, again.stderr
    assert "1. Used the project" in again.stderr and "Created" not in again.stderr


def test_demo_runs_on_the_embedded_registry_whatever_registry_is_configured(
    tmp_path: Path,
) -> None:
    """README: the demo adds from the embedded registry and needs no server. A registry set
    by SPLICE_REGISTRY (or the user config) that nothing answers on ended it with
    REGISTRY_UNREACHABLE; only ``--registry`` chooses another."""
    nobody = "http://127.0.0.1:9"
    result = run_splice(
        "demo", "--dir", str(tmp_path / "proj"), "--json", env={"SPLICE_REGISTRY": nobody}
    )
    assert result.code == 0, result.stdout
    assert result.json()["ok"] is True
    chosen = run_splice("--registry", nobody, "--json", "demo", "--dir", str(tmp_path / "other"))
    assert (chosen.code, chosen.json()["error"]["code"]) == (1, "REGISTRY_UNREACHABLE")


def test_the_temporary_project_is_said_to_be_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--dir`` step 1 names a project in a temporary directory that is gone when
    the demo ends: the last line says so and how to keep one (before, nothing did)."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    lines = capsys.readouterr().err.splitlines()
    project = Path(lines[0].split(": ", 1)[1].split(" (registry")[0]).parent
    assert lines[-1] == f"Removed {project}: `splice demo --dir DIR` keeps the project"
    assert not project.exists()


def test_a_demo_dir_that_is_a_file_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--dir`` naming a file, or a path under one, is refused as ``init`` refuses it; it was
    NOT_WRITABLE (exit 1) "… is in the way", hinted "remove or move" the file."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    for given, message in (
        (a_file, f"project directory {a_file} is not a directory"),
        (
            a_file / "p",
            f"project directory {a_file / 'p'} is inside {a_file}, which is not a directory",
        ),
    ):
        capsys.readouterr()
        assert main(["--json", "demo", "--dir", str(given)]) == 2, given
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error["message"]) == ("USAGE", message)
    assert a_file.read_text() == "mine"
