"""``kill -9`` before every file-system change of ``add``, ``update``, ``remove``,
``install`` and ``sync``, in the project and in ``SPLICE_HOME`` (testing/kill_at.py).

Each command is run once to list its changes, then once per change, killed just before it.
After each kill: ``splice.json`` and ``splice.lock`` are each the old file or the new one to
the byte (or absent where the old one was), and the next ``splice install`` leaves the old
state or the new one, every package ``ok``, and no temp file or staging copy in the project
or in ``SPLICE_HOME`` (docs/lifecycle.md#crash-safety).

Each lane sets its project up where its steps run it: this machine's consent record in
``SPLICE_HOME`` is keyed by the project's real path, so a project set up elsewhere and copied
there has none, and every install after a kill wrote one anew (removing the temp file of a
record the kill had cut short), where the user's own project keeps the one it has.
"""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.kill_at import kill_env
from testing.lanes import LANES, each_lane, each_step
from testing.registry_server import RunningRegistry
from tests.faults.conftest import GREETER

Setup = Callable[[Path, dict[str, str]], None]


def _run(project: Path, env: dict[str, str], *args: str) -> None:
    done = run_splice(*args, cwd=project, env=env)
    assert done.code == 0, (args, done.stdout, done.stderr)


def _none(project: Path, env: dict[str, str]) -> None:
    return None


def _locked_at_1_0(project: Path, env: dict[str, str]) -> None:
    _run(project, env, "add", f"{GREETER}@1.0.0")
    _run(project, env, "add", f"{GREETER}@^1.0.0")  # the range widens, 1.0.0 stays locked


def _installed_1_0(project: Path, env: dict[str, str]) -> None:
    _run(project, env, "add", f"{GREETER}@1.0.0")


def _packages_deleted(project: Path, env: dict[str, str]) -> None:
    _run(project, env, "add", f"{GREETER}@1.1.0")
    shutil.rmtree(project / ".splice" / "packages")


def _fresh_clone(project: Path, env: dict[str, str]) -> None:
    """A checkout: splice.json and splice.lock only, and an empty cache."""
    _run(project, env, "add", f"{GREETER}@1.1.0")
    shutil.rmtree(project / ".splice")
    shutil.rmtree(env["SPLICE_HOME"])


# name: (set-up, command, the state before it, the state after it)
CASES: dict[str, tuple[Setup, tuple[str, ...], str | None, str | None]] = {
    "add": (_none, ("add", f"{GREETER}@1.0.0"), None, "1.0.0"),
    "update": (_locked_at_1_0, ("update",), "1.0.0", "1.1.0"),
    "remove": (_installed_1_0, ("remove", GREETER), "1.0.0", None),
    "install-restore": (_packages_deleted, ("install",), "1.1.0", "1.1.0"),
    "install-clone": (_fresh_clone, ("install", "--frozen"), "1.1.0", "1.1.0"),
    "sync": (_packages_deleted, ("sync",), "1.1.0", "1.1.0"),
}


def _state(project: Path) -> str | None:
    """The version that splice.lock, splice.json and .splice/packages agree on (None: none)."""
    lock_path = project / "splice.lock"
    lock = json.loads(lock_path.read_text())["packages"] if lock_path.exists() else {}
    ranges = json.loads((project / "splice.json").read_text())["packages"]
    installed = project / ".splice" / "packages" / "@acme" / "greeter"
    assert set(lock) == set(ranges) == ({GREETER} if installed.is_dir() else set())
    if not lock:
        return None
    listed = json.loads((installed / "manifest.json").read_text())["version"]
    assert listed == lock[GREETER]["version"]
    return listed


def _leftovers(*roots: Path) -> list[str]:
    return sorted(
        str(p)
        for root in roots
        for p in root.rglob("*")
        if p.name.endswith((".tmp", ".part", "-previous")) or p == root / ".splice" / "tmp"
    )


def _lane(tmp_path: Path, lane: int) -> tuple[Path, Path, Path]:
    """A lane's project, its ``SPLICE_HOME`` and the directory of its kill hook and step log
    (testing/lanes.py); the hook's directory is outside the other two."""
    root = tmp_path / f"lane{lane}"
    return root / "p", root / "home", root / "h"


def _lane_template(tmp_path: Path, lane: int) -> tuple[Path, Path]:
    """Where a lane keeps its project and ``SPLICE_HOME`` as set up, to copy back each step."""
    root = tmp_path / f"lane{lane}"
    return root / "template", root / "template-home"


def _set_up_lane(tmp_path: Path, lane: int, env: dict[str, str], setup: Setup) -> dict[str, str]:
    """Set the lane's project up in its own place and keep a copy (:func:`_lane_template`);
    the lane's environment."""
    project, project_home, _ = _lane(tmp_path, lane)
    lane_env = {**env, "SPLICE_HOME": str(project_home)}
    project.mkdir(parents=True)
    _run(project, lane_env, "init")
    setup(project, lane_env)
    template, template_home = _lane_template(tmp_path, lane)
    shutil.copytree(project, template, symlinks=True)
    if project_home.exists():
        shutil.copytree(project_home, template_home, symlinks=True)
    return lane_env


_STATE_FILES = ("splice.json", "splice.lock")


def _state_files(project: Path) -> tuple[bytes | None, ...]:
    """The bytes of ``splice.json`` and ``splice.lock`` (None: absent)."""
    return tuple(
        (project / name).read_bytes() if (project / name).exists() else None
        for name in _STATE_FILES
    )


def _fresh(template: Path, home: Path, project: Path, project_home: Path) -> None:
    """``project`` and ``project_home``: copies of ``template`` and ``home`` (if it exists)."""
    for copy, original in ((project, template), (project_home, home)):
        shutil.rmtree(copy, ignore_errors=True)
        if original.exists():
            shutil.copytree(original, copy)


def _lane_steps(logs: list[list[str]]) -> int:
    """The walk's step count: the lanes (same layout, other paths) logged as many changes."""
    count = len(logs[0])
    assert count > 3, logs[0]
    assert [len(log) for log in logs] == [count] * LANES, logs
    return count


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_kill_before_any_change_leaves_the_old_state_or_the_new(
    served_to_read: RunningRegistry, tmp_path: Path, case: str
) -> None:
    setup, command, old, new = CASES[case]
    env = {"SPLICE_REGISTRY": served_to_read.url}
    # Per lane: the bytes of splice.json and splice.lock before the command and after it.
    files: dict[int, tuple[tuple[bytes | None, ...], tuple[bytes | None, ...]]] = {}

    def log(lane: int) -> list[str]:
        project, project_home, hook = _lane(tmp_path, lane)
        lane_env = _set_up_lane(tmp_path, lane, env, setup)
        before = _state_files(project)
        steps = _log(hook, [project, project_home], lane_env, *command)
        files[lane] = before, _state_files(project)
        return steps

    count = _lane_steps(each_lane(log))

    def one_step(step: int, lane: int) -> str | None:
        project, project_home, hook = _lane(tmp_path, lane)
        run_env = {**env, "SPLICE_HOME": str(project_home)}
        _fresh(*_lane_template(tmp_path, lane), project, project_home)
        killer = kill_env(hook, [project, project_home], count=step)
        killed = run_splice(*command, cwd=project, env={**run_env, **killer})
        assert killed.code == -signal.SIGKILL, (step, killed.stdout, killed.stderr)
        before, after_command = files[lane]
        for name, now, was, will in zip(
            _STATE_FILES, _state_files(project), before, after_command, strict=True
        ):
            assert now in (was, will), (step, name, now)  # never half-written, nor a third

        after = run_splice("--json", "install", cwd=project, env=run_env)

        assert after.code == 0, (step, after.stdout, after.stderr)
        state = _state(project)
        assert state in {old, new}, step
        listed = run_splice("--json", "list", cwd=project, env=run_env)
        assert all(row["status"] == "ok" for row in listed.json()), (step, listed.stdout)
        assert _leftovers(project) == [], step
        if state != new:  # rolled back: the command runs again to its end
            _run(project, run_env, *command)
            assert _state(project) == new, step
        assert _leftovers(project, project_home) == [], step
        return state

    seen = set(each_step(count, one_step))
    assert seen == {old, new}  # kills before and after the commit point


def _log(
    hook: Path,
    roots: Path | list[Path],
    env: dict[str, str],
    *command: str,
    directories: bool = False,
) -> list[str]:
    """The changes ``command`` makes under ``roots`` (run in the first), one ``N event path`` a
    line; ``hook``: the directory of the kill hook and the log, outside ``roots``;
    ``directories`` as in testing/kill_at.py."""
    steps = hook / "steps.log"
    steps.unlink(missing_ok=True)
    logged = {**env, **kill_env(hook, roots, log=steps, directories=directories)}
    project = roots if isinstance(roots, Path) else roots[0]
    done = run_splice(*command, cwd=project, env=logged)
    assert done.code == 0, (command, done.stdout, done.stderr)
    return steps.read_text().splitlines() if steps.exists() else []


@pytest.mark.parametrize("side", ["before", "after"])
def test_a_recovery_killed_at_any_step_still_ends_in_one_state(
    served_to_read: RunningRegistry, tmp_path: Path, side: str
) -> None:
    """An update killed just before (or just after) its commit point, then the recovering
    ``install`` killed before each of its own changes: the install after that still finishes
    the swap after the commit point and undoes it before, whatever the recovery had done."""
    template, home = tmp_path / "template", tmp_path / "home"
    template.mkdir()
    env = {"SPLICE_HOME": str(home), "SPLICE_REGISTRY": served_to_read.url}
    _run(template, env, "init")
    _locked_at_1_0(template, env)
    project, killed_state = tmp_path / "p", tmp_path / "killed"
    shutil.copytree(template, project)
    lines = _log(tmp_path / "h", project, env, "update")
    # The commit point: the rename of splice.lock's temp file (the log names the source).
    commit = next(
        i for i, line in enumerate(lines, 1) if f" os.rename {project / '.splice.lock.'}" in line
    )
    shutil.rmtree(project)
    shutil.copytree(template, project)
    killer = kill_env(tmp_path / "h", project, count=commit + (side == "after"))
    assert run_splice("update", cwd=project, env={**env, **killer}).code == -signal.SIGKILL
    assert (project / ".splice" / "tmp" / "journal.json").exists()
    shutil.move(project, killed_state)

    def log(lane: int) -> list[str]:
        """The lane's own copies of the killed project and of the cache it was killed with."""
        lane_project, lane_home, hook = _lane(tmp_path, lane)
        shutil.copytree(killed_state, lane_project)
        shutil.copytree(home, lane_home)
        return _log(hook, lane_project, {**env, "SPLICE_HOME": str(lane_home)}, "install")

    count = _lane_steps(each_lane(log))
    expected = "1.0.0" if side == "before" else "1.1.0"

    def one_step(step: int, lane: int) -> None:
        project, lane_home, hook = _lane(tmp_path, lane)
        lane_env = {**env, "SPLICE_HOME": str(lane_home)}
        shutil.rmtree(project)
        shutil.copytree(killed_state, project)
        killer = kill_env(hook, project, count=step)
        killed = run_splice("install", cwd=project, env={**lane_env, **killer})
        assert killed.code == -signal.SIGKILL, (step, killed.stderr)

        after = run_splice("--json", "install", cwd=project, env=lane_env)

        assert after.code == 0, (step, after.stdout, after.stderr)
        assert _state(project) == expected, step
        listed = run_splice("--json", "list", cwd=project, env=lane_env)
        assert [row["status"] for row in listed.json()] == ["ok"], (step, listed.stdout)
        assert _leftovers(project) == [], step

    each_step(count, one_step)
