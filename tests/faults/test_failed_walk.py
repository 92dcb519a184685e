"""A full disk at every file-system change of ``add``, ``update``, ``remove``, ``install``
and ``sync``, in the project and in ``SPLICE_HOME`` (and at every fsync of a directory),
injected into the real ``splice`` process (testing/kill_at.py).

A kill never runs the command's own rollback; a failing call does. Each command is logged
once, then run once per change with that change failing with ``ENOSPC``: it must end with
``DISK_FULL`` (never a crash), and the next ``splice install`` must leave the old state or
the new one, every package ``ok`` and nothing in ``.splice/tmp`` — in particular when the
failure comes after ``splice.lock`` was renamed into place (docs/lifecycle.md#crash-safety).
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from testing.cli import run_splice
from testing.kill_at import kill_env
from testing.lanes import each_lane, each_step
from testing.registry_server import RunningRegistry
from tests.faults.test_killed_walk import (
    CASES,
    _fresh,
    _lane,
    _lane_steps,
    _leftovers,
    _log,
    _run,
    _state,
)


def _error_codes(document: dict[str, Any]) -> set[str]:
    """The codes of a failed command's ``--json`` document (``sync`` reports per project)."""
    if "projects" in document:
        return {p["error"]["code"] for p in document["projects"] if "error" in p}
    return {document["error"]["code"]}


# One case per way a command changes a project: fetch and add, remove, restore from the
# cache. "update" and "install-clone" fetch and swap through the steps of "add", and "sync"
# installs through those of "install-restore"; the kill walk keeps every case.
@pytest.mark.parametrize("case", ["add", "install-restore", "remove"])
def test_a_failure_at_any_step_leaves_the_old_state_or_the_new(
    served_to_read: RunningRegistry, tmp_path: Path, case: str
) -> None:
    setup, command, old, new = CASES[case]
    template, home = tmp_path / "template", tmp_path / "template-home"
    template.mkdir()
    env = {"SPLICE_HOME": str(home), "SPLICE_REGISTRY": served_to_read.url}
    _run(template, env, "init")
    setup(template, env)

    def log(lane: int) -> list[str]:
        project, project_home, hook = _lane(tmp_path, lane)
        _fresh(template, home, project, project_home)
        roots = [project, project_home]
        lane_env = {**env, "SPLICE_HOME": str(project_home)}
        return _log(hook, roots, lane_env, *command, directories=True)

    count = _lane_steps(each_lane(log))

    def one_step(step: int, lane: int) -> None:
        project, project_home, hook = _lane(tmp_path, lane)
        lane_env = {**env, "SPLICE_HOME": str(project_home)}
        _fresh(template, home, project, project_home)
        roots = [project, project_home]
        fault = kill_env(hook, roots, count=step, fail=errno.ENOSPC, directories=True)
        failed = run_splice("--json", *command, cwd=project, env={**lane_env, **fault})
        # A best-effort write (the stat cache, the artifact cache, a directory that exists)
        # may fail unseen.
        assert failed.code in (0, 1), (step, failed.stdout, failed.stderr)
        if failed.code == 1:
            assert _error_codes(json.loads(failed.stdout)) == {"DISK_FULL"}, (step, failed.stdout)

        after = run_splice("--json", "install", cwd=project, env=lane_env)

        assert after.code == 0, (step, after.stdout, after.stderr)
        assert _state(project) in ({old, new} if failed.code else {new}), step
        listed = run_splice("--json", "list", cwd=project, env=lane_env)
        assert all(row["status"] == "ok" for row in listed.json()), (step, listed.stdout)
        assert _leftovers(project) == [], step

    each_step(count, one_step)
