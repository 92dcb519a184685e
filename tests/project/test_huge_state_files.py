"""A checkout's project files can be links to large files elsewhere on the machine (git
stores links): ``splice.json``, ``splice.lock``, the workspace's ``pyproject.toml`` and the
install journal are read with a bound (``MAX_PROJECT_STATE_BYTES``), never whole. Before,
each was read into memory entire: a link to a file of some gigabytes made every command an
``INTERNAL_ERROR`` (MemoryError), or took the machine's memory.

The commands run with a 2 GiB address space, so the old read fails there rather than in the
test machine's memory; the large file is sparse (it takes no disk).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
from testing.cli import run_splice
from testing.registry_fixtures import new_project

ADDRESS_SPACE = 2 << 30
HUGE = 3 << 30

pytestmark = pytest.mark.skipif(os.name == "nt", reason="links and sparse files")


def _huge(tmp_path: Path) -> Path:
    """A sparse file larger than the command's address space, outside the project."""
    path = tmp_path / "elsewhere" / "disk.img"
    path.parent.mkdir()
    with path.open("wb") as handle:
        handle.truncate(HUGE)
    return path


def _error(project: Path, *command: str) -> dict:
    done = run_splice("--json", *command, cwd=project, address_space=ADDRESS_SPACE)
    assert "Traceback" not in done.stderr, done.stderr
    body = json.loads(done.stdout)
    if "projects" in body:  # sync reports per project
        [member] = body["projects"]
        return member["error"]
    return body["error"]


@pytest.mark.parametrize("name", ["splice.json", "splice.lock"])
@pytest.mark.parametrize("command", [["install"], ["sync", "--check"], ["list"]])
def test_a_project_file_linked_to_a_huge_file_is_invalid_project(
    tmp_path: Path, name: str, command: list[str]
) -> None:
    project = new_project(tmp_path / "p")
    (project / name).unlink(missing_ok=True)
    (project / name).symlink_to(_huge(tmp_path))
    error = _error(project, *command)
    assert error["code"] == "INVALID_PROJECT", error
    assert error["message"] == (
        f"{name} is invalid: cannot be read (larger than {MAX_PROJECT_STATE_BYTES} bytes)"
    )


def test_a_workspace_pyproject_linked_to_a_huge_file_is_invalid_config(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    new_project(root / "a")
    (root / "pyproject.toml").symlink_to(_huge(tmp_path))
    done = run_splice("--json", "sync", cwd=root / "a", address_space=ADDRESS_SPACE)
    assert done.code == 2, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_CONFIG", error
    assert f"larger than {MAX_PROJECT_STATE_BYTES} bytes" in error["message"]


def test_an_install_journal_linked_to_a_huge_file_is_not_writable(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    tmp = project / ".splice" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / "journal.json").symlink_to(_huge(tmp_path))
    error = _error(project, "install")
    assert error["code"] == "NOT_WRITABLE", error
    assert f"cannot be read (larger than {MAX_PROJECT_STATE_BYTES} bytes)" in error["message"]


def test_a_splice_json_of_many_packages_is_one_bounded_line_of_sync_check(tmp_path: Path) -> None:
    """The hook ``splice-verify`` (``splice sync --check``) and doit's ``splice:verify`` print
    one line per project naming what would change: every one of a checkout's packages, so a
    splice.json of 200,000 made a line of 6 MB. The line names the first 20 and how many
    more (``--json`` keeps every change)."""
    packages = {f"@acme/p{n:03}": "^1.0.0" for n in range(120)}
    project = new_project(tmp_path / "p", packages)
    done = run_splice("sync", "--check", cwd=project)
    assert done.code == 1, done.stderr
    [line] = [text for text in done.stdout.splitlines() if text.startswith(".: would ")]
    assert line.count("resolve @acme/") == 20
    assert line.endswith("resolve @acme/p019@^1.0.0, and 100 more")
