"""git started in someone else's checkout runs nothing of theirs (security/checkout_git.py).

Each test runs the real listing code (the workspace's members, ``secret-scan`` of a
directory) with the git installed here, in a checkout an attacker wrote: its ``.git/config``,
its hooks, its ``.gitattributes``, files of its own choosing.
"""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from splice_build.project.workspace import find_workspace
from splice_build.security import checkout_git
from splice_build.security.secret_scan import scan_paths
from testing.registry_fixtures import new_project

_COMMIT = ("git", "-c", "user.email=a@example.com", "-c", "user.name=a", "commit")
_SHELL_SCRIPT = '#!/bin/sh\necho "$0 $*" >> "{marker}"\nexit 0\n'


def _attacker_program(directory: Path, name: str, marker: Path) -> Path:
    """An executable that leaves a line in ``marker`` whenever anything runs it."""
    program = directory / name
    program.write_text(_SHELL_SCRIPT.format(marker=marker))
    program.chmod(0o755)
    return program


def _documented_keys() -> list[str]:
    """Every configuration key this git documents, placeholders named: ``<driver>`` is
    ``x`` (the driver ``.gitattributes`` names), ``pager.<cmd>`` the subcommands used."""
    listed = subprocess.run(
        ["git", "help", "--config"], capture_output=True, text=True, check=True
    ).stdout
    keys: list[str] = []
    for line in listed.splitlines():
        if not re.fullmatch(r"[A-Za-z0-9.<>*-]+\.[A-Za-z0-9<>*-]+", line):
            continue  # git's closing hint, a name git cannot store (``gitweb.remote_heads``)
        if line.startswith("pager."):
            keys += ["pager.ls-files", "pager.rev-parse"]
        else:
            keys.append(re.sub(r"<[^>]*>|\*", "x", line))
    return keys


def _checkout(root: Path) -> Path:
    new_project(root / "a")
    (root / ".gitattributes").write_text("* filter=x diff=x merge=x text\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


def _committed(root: Path) -> Path:
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run([*_COMMIT, "-qm", "a"], cwd=root, check=True)
    return root


def _list_and_scan(root: Path) -> str:
    """Both ways Splice starts git in a checkout; the workspace's source ("git" or "walk")."""
    scan_paths([(root, ".")])
    return find_workspace(root).source


def test_no_documented_configuration_key_runs_a_command(tmp_path: Path) -> None:
    """Each key ``git help --config`` lists, set alone in the checkout's ``.git/config`` to
    an attacker's program (every hook of ``.git/hooks`` is one too): none of them runs."""
    keys = _documented_keys()
    assert "core.fsmonitor" in keys and "filter.x.clean" in keys and len(keys) > 500

    def ran(index: int) -> str | None:
        """What ran for ``keys[index]`` (its own checkout, program and marker), if anything."""
        marker = tmp_path / f"ran{index}"
        program = _attacker_program(tmp_path, f"evil{index}", marker)
        root = _checkout(tmp_path / f"r{index}")
        hooks = root / ".git" / "hooks"
        for sample in hooks.glob("*.sample"):
            _attacker_program(hooks, sample.name.removesuffix(".sample"), marker)
        config = root / ".git" / "config"
        subprocess.run(
            ["git", "config", "--file", str(config), keys[index], str(program)],
            check=True,
            capture_output=True,
        )
        _list_and_scan(root)
        return marker.read_text() if marker.exists() else None

    # Two keys at a time (each step starts git processes only, in its own directories): less
    # wall time where there are two cores.
    with ThreadPoolExecutor(2) as steps:
        for key, seen in zip(keys, steps.map(ran, range(len(keys))), strict=True):
            assert seen is None, (key, seen)
    # Nor later (a program git left running in the background), for any key.
    assert [path.read_text() for path in tmp_path.glob("ran*")] == []


def test_a_git_in_the_checkout_is_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty ``PATH`` entry (a trailing ``:``) is the current directory, and git is
    started inside the checkout: its own ``git`` file was run in git's place."""
    marker = tmp_path / "ran"
    root = _checkout(tmp_path / "unpacked")
    _attacker_program(root, "git", marker)
    monkeypatch.setenv("PATH", os.pathsep + os.environ["PATH"] + os.pathsep + ".")
    monkeypatch.chdir(root)
    assert _list_and_scan(root) == "git"
    assert not marker.exists()


@pytest.mark.parametrize("fifo", [".gitignore", ".git/index", ".git/HEAD"])
def test_a_fifo_in_the_checkout_does_not_hold_git_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fifo: str
) -> None:
    """git opens a checkout's ``.gitignore``, index and ``HEAD`` for reading; a FIFO there
    never opens, and ``splice sync`` or ``secret-scan`` waited for ever. git is stopped at
    its limit and the listing is done without it."""
    monkeypatch.setattr(checkout_git, "TIMEOUT_SECONDS", 1.0)
    root = _committed(_checkout(tmp_path / "unpacked"))
    (root / fifo).unlink(missing_ok=True)
    os.mkfifo(root / fifo)
    report = scan_paths([(root, ".")])
    assert report.files >= 1
    workspace = find_workspace(root)
    assert [m.relative_to(root).as_posix() for m in workspace.members] == ["a"]


def test_the_caller_environment_does_not_steer_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git exports ``GIT_DIR`` and ``GIT_INDEX_FILE`` to the hooks it runs (a temporary
    index for ``git commit <file>``): they named the index git listed for a scan of another
    directory, and an empty one made ``secret-scan`` read no file of the checkout."""
    root = _committed(_checkout(tmp_path / "unpacked"))
    tracked = scan_paths([(root, ".")]).files
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "no-index"))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "no-repository"))
    assert tracked > 0 and scan_paths([(root, ".")]).files == tracked
    assert find_workspace(root).source == "git"
