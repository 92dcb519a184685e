"""An installed package whose directories were made read-only (``chmod -R a-w``), replaced or
removed by a real ``splice`` bound by file modes (``unshare -U``: root keeps no capability).

The old copy is deleted after the commit point; a failure there reported NOT_WRITABLE for a
change that had been made, and left a backup that every later command's recovery failed on.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.faults import capability_free_available, splice_without_capabilities
from testing.registry_server import RunningRegistry
from tests.faults.conftest import GREETER

pytestmark = pytest.mark.skipif(
    not capability_free_available(), reason="needs unshare -U (a user namespace, no ID mapped)"
)


def _read_only_install(tmp_path: Path, server: RunningRegistry) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "p"
    project.mkdir()
    env = {"SPLICE_HOME": str(tmp_path / "home"), "SPLICE_REGISTRY": server.url}
    assert run_splice("init", cwd=project, env=env).code == 0
    assert run_splice("add", f"{GREETER}@1.0.0", cwd=project, env=env).code == 0
    tools = project / ".splice" / "packages" / "@acme" / "greeter" / "tools"
    subprocess.run(["chmod", "-R", "a-w", str(tools)], check=True)
    return project, env


def _locked(project: Path) -> dict[str, str]:
    lock = project / "splice.lock"
    packages = json.loads(lock.read_text())["packages"] if lock.exists() else {}
    return {name: entry["version"] for name, entry in packages.items()}


def test_an_update_over_a_read_only_package_succeeds_and_leaves_nothing(
    served: RunningRegistry, tmp_path: Path
) -> None:
    project, env = _read_only_install(tmp_path, served)

    done = splice_without_capabilities("--json", "add", f"{GREETER}@1.1.0", cwd=project, env=env)

    assert done.code == 0, done.stdout + done.stderr
    assert _locked(project) == {GREETER: "1.1.0"}
    assert not (project / ".splice" / "tmp").exists()
    listed = splice_without_capabilities("--json", "list", cwd=project, env=env)
    assert listed.code == 0, listed.stdout
    assert [row["status"] for row in json.loads(listed.stdout)] == ["ok"]


def test_removing_a_read_only_package_succeeds_and_leaves_nothing(
    served: RunningRegistry, tmp_path: Path
) -> None:
    project, env = _read_only_install(tmp_path, served)

    done = splice_without_capabilities("--json", "remove", GREETER, cwd=project, env=env)

    assert done.code == 0, done.stdout + done.stderr
    assert _locked(project) == {}
    assert not (project / ".splice" / "tmp").exists()
    assert not (project / ".splice" / "packages").exists()
