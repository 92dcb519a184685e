"""A real ``splice add`` and ``splice remove`` rewrite ``splice.json`` and ``splice.lock``:
the permission bits the user gave them are kept (a private or group-writable project file
stays so), as an editor keeps them when it saves."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.registry_server import RunningRegistry
from tests.faults.conftest import GREETER

pytestmark = pytest.mark.skipif(not hasattr(os, "fchmod"), reason="POSIX permission bits")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_add_and_remove_keep_the_modes_of_the_project_files(
    served: RunningRegistry, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    env = {"SPLICE_HOME": str(tmp_path / "home"), "SPLICE_REGISTRY": served.url}
    assert run_splice("init", cwd=project, env=env).code == 0
    assert run_splice("add", f"{GREETER}@1.0.0", cwd=project, env=env).code == 0
    (project / "splice.json").chmod(0o600)
    (project / "splice.lock").chmod(0o664)

    updated = run_splice("--json", "add", f"{GREETER}@^1.0.0", cwd=project, env=env)

    assert updated.code == 0, updated.stdout + updated.stderr
    assert '"^1.0.0"' in (project / "splice.json").read_text()
    assert (_mode(project / "splice.json"), _mode(project / "splice.lock")) == (0o600, 0o664)
    removed = run_splice("--json", "remove", GREETER, cwd=project, env=env)
    assert removed.code == 0, removed.stdout + removed.stderr
    assert _mode(project / "splice.json") == 0o600


def test_a_home_first_made_by_the_artifact_cache_is_private(
    served: RunningRegistry, tmp_path: Path
) -> None:
    """``splice add`` with a registry on the network writes the cache before anything else
    under SPLICE_HOME: the home it creates is 0700 all the same (docs/compatibility.md)."""
    project = tmp_path / "p"
    project.mkdir()
    home = tmp_path / "fresh" / "home"
    env = {"SPLICE_HOME": str(home), "SPLICE_REGISTRY": served.url}
    assert run_splice("init", cwd=project, env=env).code == 0
    old = os.umask(0o022)
    try:
        done = run_splice("--json", "add", f"{GREETER}@1.0.0", cwd=project, env=env)
    finally:
        os.umask(old)

    assert done.code == 0, done.stdout + done.stderr
    assert any((home / "cache").rglob("*.json"))
    assert _mode(home) == 0o700
    assert {_mode(d) for d in home.rglob("*") if d.is_dir()} == {0o700}


def test_nothing_splice_makes_in_a_project_is_writable_by_others_whatever_the_umask(
    tmp_path: Path,
) -> None:
    """Under a daemon's umask 0 the installed package's files were 0666 and its directories
    0777: another local user could change a tool's code between its check and Node reading
    it. Every directory and file an ``init``, ``add`` and ``sync`` make is walked; a group
    keeps write access only where the umask sets it apart from others (a team's 002)."""
    import subprocess

    from testing.cli import splice_executable

    project = tmp_path / "made" / "p"  # init makes both directories
    env = {**os.environ, "SPLICE_HOME": str(tmp_path / "home")}

    def splice(*args: str) -> None:
        done = subprocess.run(
            [splice_executable(), *args],
            cwd=project if project.exists() else tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=lambda: os.umask(0),
        )
        assert done.returncode == 0, done.stdout + done.stderr

    splice("init", str(project))
    splice("add", "@splice/example")
    splice("sync")
    made = [tmp_path / "made", *(project).rglob("*")]
    assert any(p.match("*/.splice/packages/@splice/example/tools/*.js") for p in made)
    others_may_write = [
        str(p.relative_to(tmp_path))
        for p in made
        if not p.is_symlink() and p.lstat().st_mode & stat.S_IWOTH
    ]
    assert others_may_write == []
    # nor by the group: the directory it was made in gave none (a umask of 0 chose none, and
    # a primary group may be every user's, ``users``: there another user rewrote hello.js)
    tools = project / ".splice" / "packages" / "@splice" / "example" / "tools"
    assert (_mode(tools), _mode(tools / "hello.js")) == (0o755, 0o644)


def test_a_team_directory_keeps_its_group_write_and_nothing_else_gains_one(
    tmp_path: Path,
) -> None:
    """The group may write what Splice makes where the directory it is made in already lets
    that group write (a team's setgid checkout): the check before a run allows exactly that.
    A project directory of 2755 in such a directory gave its .splice 2775 under umask 002,
    which that check then refused for good (every sync installed the same modes again)."""
    from splice_build.project.atomic import make_dirs, write_tree

    team = tmp_path / "team"
    team.mkdir()
    team.chmod(0o2775)
    private = team / "private"
    private.mkdir()
    private.chmod(0o2755)
    old = os.umask(0o002)
    try:
        for parent, want in ((team, (0o775, 0o664)), (private, (0o755, 0o644))):
            make_dirs(parent / "state" / "tree")
            write_tree(parent / "state" / "tree", {"tools/a.js": b"x"})
            made = parent / "state" / "tree"
            got = (
                _mode(parent / "state") & 0o777,
                _mode(made / "tools") & 0o777,
                _mode(made / "tools" / "a.js"),
            )
            assert got == (want[0], want[0], want[1]), parent.name
    finally:
        os.umask(old)
