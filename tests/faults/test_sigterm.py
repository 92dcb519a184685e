"""SIGTERM in the middle of ``splice sync -j 2`` over many projects.

The signal is sent once the first projects have installed (others are mid-install or not
started). The command must stop with the coded INTERRUPTED document and exit 143 (128 +
SIGTERM) only after the installs running on the two workers have ended (no staging or
journal left: they committed or rolled back before the project locks were released); every
project then holds its committed packages intact and the rest not installed, and the next
sync converges:
every project ok, and a ``--check`` run finds nothing to do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from splice_build.project.layout import ProjectLayout
from testing.cli import run_splice, splice_executable
from testing.registry_server import registry_server
from testing.workspaces import make_workspace, publish_shared
from tests.faults.conftest import leftovers

PROJECTS, PACKAGES, PER_PROJECT = 12, 6, 3


def _installed_projects(root: Path) -> int:
    return sum(1 for p in (root / "packages").iterdir() if (p / "splice.lock").exists())


def test_sigterm_during_parallel_sync_stops_coded_and_the_next_sync_converges(
    tmp_path: Path,
) -> None:
    store = tmp_path / "registry-data"
    ids = publish_shared(store, tmp_path / "pkgs", PACKAGES, sized=True)
    root = tmp_path / "ws"
    projects = make_workspace(root, PROJECTS, ids, PER_PROJECT)
    with registry_server(store, admin=False) as server:
        child = subprocess.Popen(
            [splice_executable(), "--json", "--registry", server.url, "sync", "-j", "2"],
            cwd=root,
            env=dict(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while _installed_projects(root) < 2 and child.poll() is None:
            assert time.monotonic() < deadline, "sync made no progress"
            time.sleep(0.005)
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
        assert _installed_projects(root) < PROJECTS, "the signal came too late to test anything"
        assert child.returncode == 128 + signal.SIGTERM, (out, err)
        assert json.loads(out)["error"]["code"] == "INTERRUPTED", out
        assert "Traceback" not in err
        # The running installs ended (committed or rolled back) before the process let go of
        # its locks: nothing is left for the next command to recover.
        staging = [p.name for p in projects if ProjectLayout(p).tmp_dir.exists()]
        assert staging == [], staging

        for project in projects:  # locked packages intact, the rest not yet installed
            listed = run_splice("--json", "list", cwd=project)
            statuses = {row["status"] for row in listed.json()}
            assert statuses <= {"ok", "missing"}, listed.stdout
            assert listed.code == (0 if statuses == {"ok"} else 1), listed.stderr  # 1: missing
            assert not ProjectLayout(project).tmp_dir.exists()

        again = run_splice("--json", "--registry", server.url, "sync", "-j", "2", cwd=root)
        assert again.code == 0, again.stdout + again.stderr
        assert {p["status"] for p in again.json()["projects"]} == {"ok"}
        checked = run_splice("--json", "--registry", server.url, "sync", "--check", cwd=root)
        assert checked.code == 0, checked.stdout
    assert leftovers(root) == []
