"""A workspace is someone else's checkout: finding its members must not run its code, reach
outside it, or break on the names it chose (project/workspace.py).

Every test runs the real ``splice`` in a real git repository or directory tree.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.registry_fixtures import new_project

_GIT_USER = ["-c", "user.email=a@example.com", "-c", "user.name=a"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *_GIT_USER, *args], cwd=cwd, check=True, capture_output=True)


def _monitor(marker: Path) -> str:
    """A ``core.fsmonitor`` value: the command git would run, leaving ``marker`` behind."""
    return f"touch '{marker}'; false #"


def test_a_bare_repository_inside_a_clone_runs_nothing(tmp_path: Path) -> None:
    """A directory of a clone holding ``HEAD``, ``objects/``, ``refs/`` and ``config`` is a
    repository to git started inside it; its ``core.fsmonitor`` would run on ``ls-files``."""
    marker = tmp_path / "ran"
    upstream = tmp_path / "upstream"
    tools = new_project(upstream / "tools")
    (tools / "HEAD").write_text("ref: refs/heads/main\n")
    for directory in ("objects", "refs"):
        (tools / directory).mkdir()
        (tools / directory / ".keep").write_text("")
    (tools / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
        f'\tfsmonitor = "{_monitor(marker)}"\n'
    )
    _git(upstream, "init", "-q")
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-qm", "tools")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(upstream), str(clone))
    for command in (["sync"], ["sync", "--check"], ["workspace", "list"]):
        done = run_splice(*command, cwd=clone / "tools")
        assert done.code == 0, (command, done.stdout, done.stderr)
        assert not marker.exists(), command


def test_the_configuration_of_an_unpacked_repository_runs_nothing(tmp_path: Path) -> None:
    """An archive can carry its ``.git`` (and so its ``config``) along with the tree."""
    marker = tmp_path / "ran"
    root = tmp_path / "unpacked"
    new_project(root / "a")
    _git(tmp_path, "init", "-q", str(root))
    _git(root, "config", "core.fsmonitor", _monitor(marker))
    done = run_splice("--json", "sync", cwd=root)
    assert done.code == 0, (done.stdout, done.stderr)
    assert [p["path"] for p in json.loads(done.stdout)["projects"]] == ["a"]
    assert not marker.exists()


@pytest.mark.parametrize("command", [["sync"], ["sync", "--check"], ["workspace", "list"]])
def test_an_unpacked_repository_cannot_name_another_work_tree(
    tmp_path: Path, command: list[str]
) -> None:
    """The ``config`` of an unpacked ``.git`` can set ``core.worktree``: git then names
    another directory of the machine as the work tree, and a sync run in the archive synced
    that repository's projects (writing ``.splice/`` there) instead of its own."""
    elsewhere = tmp_path / "elsewhere"
    new_project(elsewhere / "theirs")
    _git(tmp_path, "init", "-q", str(elsewhere))
    _git(elsewhere, "add", "-A")
    _git(elsewhere, "commit", "-qm", "another repository of this machine")
    before = sorted(p.relative_to(elsewhere).as_posix() for p in elsewhere.rglob("*"))
    root = tmp_path / "unpacked"
    new_project(root / "a")
    _git(tmp_path, "init", "-q", str(root))
    _git(root, "config", "core.worktree", str(elsewhere))
    done = run_splice("--json", *command, cwd=root)
    assert done.code == 0, (done.stdout, done.stderr)
    body = json.loads(done.stdout)
    assert body["root"] == str(root)
    found = body["members"] if "members" in body else [p["path"] for p in body["projects"]]
    assert found == ["a"]
    assert sorted(p.relative_to(elsewhere).as_posix() for p in elsewhere.rglob("*")) == before


def test_a_member_git_lists_behind_a_link_is_not_synced(tmp_path: Path) -> None:
    """git lists its index: a work tree with a link where the index has ``a/`` would make
    another project of this machine a member, and the sync would change it."""
    elsewhere = new_project(tmp_path / "elsewhere")
    before = sorted(p.name for p in elsewhere.iterdir())
    root = tmp_path / "unpacked"
    new_project(root / "a")
    new_project(root / "b")
    _git(tmp_path, "init", "-q", str(root))
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "two projects")
    for child in (root / "a").iterdir():
        child.unlink()
    (root / "a").rmdir()
    os.symlink(os.path.relpath(elsewhere, root), root / "a")
    done = run_splice("--json", "sync", cwd=root)
    assert done.code == 0, (done.stdout, done.stderr)
    assert [p["path"] for p in json.loads(done.stdout)["projects"]] == ["b"]
    assert sorted(p.name for p in elsewhere.iterdir()) == before


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names")
@pytest.mark.parametrize("listed_by", ["walk", "git"])
def test_member_names_never_give_two_projects_one_task(tmp_path: Path, listed_by: str) -> None:
    """A label shows a byte that is not UTF-8 as ``\\xff``, which a directory can also be
    called; doit refuses ``=`` in a task name and reads ``*`` in a dependency as a pattern;
    git lists such a byte as it is."""
    names = [os.fsdecode(b"\xff"), "\\xff", "a=b", "[a]*", "a"]
    for name in names:
        new_project(tmp_path / name)
    if listed_by == "git":
        _git(tmp_path, "init", "-q")
    for command in (["sync"], ["sync", "--check"]):
        done = run_splice("--json", *command, cwd=tmp_path)
        assert done.code == 0, (command, done.stdout, done.stderr)
        answer = json.loads(done.stdout)
        paths = [p["path"] for p in answer["projects"]]
        assert len(set(paths)) == len(names), paths
        tasks = answer["tasks"]["executed"] + answer["tasks"]["upToDate"]
        assert len(set(tasks)) == len(tasks) == 3 * len(names), tasks
        assert not any("=" in task or "*" in task for task in tasks), tasks


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names")
def test_names_patterns_cannot_tell_apart_are_all_members(tmp_path: Path) -> None:
    """Patterns see a byte that is not UTF-8 as U+FFFD: three directories that differ only
    there are one text to them, and each of the three is synced (twice: the second run
    answers from the member memo)."""
    names = [os.fsdecode(b"\xff"), os.fsdecode(b"\xfe"), "\ufffd"]
    for name in names:
        new_project(tmp_path / name)
    (tmp_path / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["*"]\n')
    for _ in range(2):
        done = run_splice("--json", "sync", cwd=tmp_path)
        assert done.code == 0, (done.stdout, done.stderr)
        assert [p["path"] for p in json.loads(done.stdout)["projects"]] == [
            "\\xfe",
            "\\xff",
            "\ufffd",
        ]


def test_a_member_memo_shipped_with_the_checkout_is_not_believed(tmp_path: Path) -> None:
    """``.splice/workspace.json`` is a cache of what ``pyproject.toml`` says; one that came
    with the checkout, holding that file's very text, must not decide the members (here: the
    project the file excludes, and not the one it names)."""
    new_project(tmp_path / "apps" / "a")
    new_project(tmp_path / "vendor" / "evil")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.splice.workspace]\nmembers = ["apps/*"]\nexclude = ["vendor"]\n')
    forged = {
        "version": 4,
        "pyproject": pyproject.read_text(),
        "file": [0, 0, 0],
        "config": [["**"], []],
        "candidates": ["apps/a", "vendor/evil"],
        "members": ["vendor/evil"],
    }
    (tmp_path / ".splice").mkdir()
    (tmp_path / ".splice" / "workspace.json").write_text(json.dumps(forged))
    for command in (["sync", "--check"], ["sync"], ["sync"]):
        done = run_splice("--json", *command, cwd=tmp_path)
        assert done.code == 0, (command, done.stdout, done.stderr)
        assert [p["path"] for p in json.loads(done.stdout)["projects"]] == ["apps/a"], command


@pytest.mark.parametrize("command", [["sync"], ["sync", "--check"], ["workspace", "list"]])
def test_a_deeply_nested_pyproject_is_invalid_config(tmp_path: Path, command: list[str]) -> None:
    """tomllib recurses once per level of nested arrays: 100,000 of them are a bad file."""
    new_project(tmp_path / "a")
    depth = 100_000
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.splice.workspace]\nmembers = ["a"]\nx = {"[" * depth}{"]" * depth}\n'
    )
    done = run_splice("--json", *command, cwd=tmp_path)
    assert done.code == 2, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_CONFIG", error
    assert error["message"].endswith("pyproject.toml is invalid: nested too deeply")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("pyproject", [False, True], ids=["walk", "members"])
def test_a_tree_nested_past_the_recursion_limit_is_walked(tmp_path: Path, pyproject: bool) -> None:
    """The walk for members (outside git, and for ``[tool.splice.workspace]`` patterns) goes
    through a checkout's whole tree: ``os.walk`` recursed once per level, so a tree 1,500
    deep made every sync an ``INTERNAL_ERROR`` (RecursionError)."""
    from testing.deep_tree import nested, unnested

    new_project(tmp_path / "p")
    if pyproject:
        (tmp_path / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["*"]\n')
    nested(tmp_path, 1500)
    try:
        for command in (["sync", "--check"], ["sync"], ["workspace", "list"]):
            done = run_splice("--json", *command, cwd=tmp_path)
            assert done.code == 0, (command, done.stdout, done.stderr)
            found = json.loads(done.stdout)
            paths = found["members"] if "members" in found else found["projects"]
            assert [p if isinstance(p, str) else p["path"] for p in paths] == ["p"], found
    finally:
        unnested(tmp_path)


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names")
def test_a_member_name_cannot_forge_a_line(tmp_path: Path) -> None:
    """A checkout names its member directories: one holding line breaks is shown as one
    line by ``workspace list`` and ``sync`` (twice: the second answers from the no-op fast
    path), and kept exact under ``--json``."""
    name = "zz\n9 project(s): 0 failed\nsecurity: all verified"
    new_project(tmp_path / "a")
    new_project(tmp_path / name)
    (tmp_path / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["*"]\n')
    for command in (["workspace", "list"], ["sync"], ["sync"], ["sync", "--check"]):
        done = run_splice(*command, cwd=tmp_path)
        assert done.code == 0, (command, done.stdout, done.stderr)
        lines = done.stdout.splitlines()
        assert not any(line.startswith(("9 project", "security:")) for line in lines), lines
        assert any(line.startswith("zz\\x0a9 project(s)") for line in lines), lines
    done = run_splice("--json", "workspace", "list", cwd=tmp_path)
    assert json.loads(done.stdout)["members"] == ["a", name]
