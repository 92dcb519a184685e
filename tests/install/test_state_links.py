"""A project's ``.splice/`` comes from wherever the project came from, links included.

Each test builds a real project with ``@splice/example`` installed by the real CLI, puts a
symbolic link at one place of ``.splice/`` pointing at a victim directory or file outside the
project (as a checkout of someone else's repository can), and runs every command that reads
or changes project state. Each must refuse with ``NOT_WRITABLE`` naming the link, and the
victim must be byte for byte as it was (project/state_dir.py).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from testing.cli import run_splice

COMMANDS = [
    ("list",),
    ("install",),
    ("verify", "@splice/example"),
    ("sync",),
    ("run", "example.hello", "name=x"),
    ("remove", "@splice/example"),
]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with @splice/example installed and every state file written once."""
    project = tmp_path_factory.mktemp("installed") / "p"
    project.mkdir()
    env = {"SPLICE_HOME": str(project.parent / "home")}
    for args in (("init",), ("add", "@splice/example"), ("sync",)):
        done = run_splice(*args, cwd=project, env=env)
        assert done.code == 0, done.stderr
    return project


def _victim(root: Path) -> Path:
    victim = root / "victim"
    (victim / "Documents").mkdir(parents=True)
    (victim / "Documents" / "thesis.txt").write_text("precious\n")
    (victim / "id_ed25519").write_text("key\n")
    return victim


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(path.relative_to(root)): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
    }


def _state_entries(project: Path) -> list[str]:
    """Every entry of ``.splice`` and of ``.splice/packages`` in a real installed project."""
    layout = ProjectLayout(project)
    entries = [p.name for p in layout.state_dir.iterdir()]
    scopes = [f"packages/{p.name}" for p in layout.packages_dir.iterdir()]
    return sorted(entries + scopes)


def test_the_walk_covers_every_state_file_a_sync_writes(installed: Path) -> None:
    entries = _state_entries(installed)
    for expected in ("graph.sqlite3", "packages", "packages/@splice", "state.lock"):
        assert expected in entries, entries


_DIRECTORIES = ("", "tmp", "packages", "packages/@splice")


@pytest.mark.parametrize(
    "place",
    ["", "tmp", "packages", "packages/@splice", "graph.sqlite3", "state.lock", "statcache.json"],
)
def test_a_link_in_the_state_directory_is_refused_by_every_command(
    installed: Path, tmp_path: Path, place: str
) -> None:
    project = tmp_path / "p"
    shutil.copytree(installed, project, symlinks=True)
    victim = _victim(tmp_path)
    before = _tree(victim)
    state = ProjectLayout(project).state_dir
    link = state / place if place else state
    if link.is_dir():
        shutil.rmtree(link)
    elif link.exists():
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    # a directory's link to the victim's home, a file's to its key; relative, as a checkout
    # creates them
    target = victim if place in _DIRECTORIES else victim / "id_ed25519"
    os.symlink(os.path.relpath(target, link.parent), link)
    for command in COMMANDS:
        done = run_splice("--json", *command, cwd=project)
        assert done.code == 1, (command, done.stdout, done.stderr)
        answer = json.loads(done.stdout)
        if command[0] == "verify":  # a report: its check of the installed copy fails
            (error,) = [check for check in answer["checks"] if check["id"] == "installed"]
        else:
            error = answer["error"]
        assert error["code"] == "NOT_WRITABLE", (command, error)
        assert str(link) in error["message"], (command, error)
        assert "Traceback" not in done.stderr
        assert _tree(victim) == before, command
    assert link.is_symlink()


@pytest.mark.parametrize(
    "command", [("install",), ("sync",), ("keys", "trust", "acme", "ed25519:0123456789abcdef")]
)
def test_no_lock_file_is_created_through_a_linked_state_directory(
    installed: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    """The no-op fast path and ``keys trust`` take the project lock too: through a linked
    ``.splice`` whose target holds a ``statcache.json`` (what makes the fast path look), the
    lock file would be created in the victim's directory before any check."""
    project = tmp_path / "p"
    shutil.copytree(installed, project, symlinks=True)
    victim = _victim(tmp_path)
    (victim / "statcache.json").write_text("{}")
    before = _tree(victim)
    state = ProjectLayout(project).state_dir
    shutil.rmtree(state)
    os.symlink(os.path.relpath(victim, project), state)
    done = run_splice("--json", *command, cwd=project)
    assert done.code == 1, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "NOT_WRITABLE", error
    assert str(state) in error["message"], error
    assert _tree(victim) == before


def _workspace(root: Path) -> Path:
    """A workspace whose root is no project: members from pyproject.toml."""
    (root / "a").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["a"]\n')
    done = run_splice("init", cwd=root / "a")
    assert done.code == 0, done.stderr
    return root


@pytest.mark.parametrize("place", ["", "sync.sqlite3", "workspace.json"])
def test_a_link_in_the_workspace_roots_state_directory_is_refused(
    tmp_path: Path, place: str
) -> None:
    """The root of a workspace keeps the sync's graph database and its member memo in its own
    ``.splice/``, project or not: a link there would write them into the victim's directory
    (or, for the database, create or fill the file the link names)."""
    root = _workspace(tmp_path / "ws")
    victim = _victim(tmp_path)
    before = _tree(victim)
    link = root / ".splice" / place if place else root / ".splice"
    link.parent.mkdir(parents=True, exist_ok=True)
    target = victim if not place else victim / "new.db"
    os.symlink(os.path.relpath(target, link.parent), link)
    done = run_splice("--json", "sync", cwd=root)
    assert done.code == 1, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "NOT_WRITABLE", error
    assert str(link) in error["message"], error
    assert _tree(victim) == before
    check = run_splice("--json", "sync", "--check", cwd=root)  # writes nothing: no refusal
    assert check.code == 0, (check.stdout, check.stderr)
    assert _tree(victim) == before
