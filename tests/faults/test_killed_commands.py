"""``kill -9`` of a real ``splice`` command at a chosen step (testing/kill_at.py), then the
next command: it must complete the change or undo it, and keep what the user did in between.

The registry is a real server on 127.0.0.1; the commands are the installed ``splice`` script.
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

from testing.cli import run_splice
from testing.kill_at import kill_env
from testing.registry_server import RunningRegistry
from tests.faults.conftest import GREETER


def _project(tmp_path: Path, server: RunningRegistry) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "p"
    project.mkdir()
    env = {"SPLICE_HOME": str(tmp_path / "home"), "SPLICE_REGISTRY": server.url}
    assert run_splice("init", cwd=project, env=env).code == 0
    return project, env


def test_a_hand_edit_after_a_killed_add_survives_the_recovery(
    served_to_read: RunningRegistry, tmp_path: Path
) -> None:
    project, env = _project(tmp_path, served_to_read)
    # Killed after the commit point (splice.lock written), before splice.json is.
    killer = kill_env(tmp_path / "hook", project, match="open:" + str(project / ".splice.json."))
    killed = run_splice("add", f"{GREETER}@1.0.0", cwd=project, env={**env, **killer})
    assert killed.code == -signal.SIGKILL, killed.stderr
    assert GREETER in json.loads((project / "splice.lock").read_text())["packages"]
    edited = json.loads((project / "splice.json").read_text())
    assert edited["packages"] == {}
    edited["requireSignatures"] = ["other"]
    edited["editorSetting"] = {"kept": True}
    (project / "splice.json").write_text(json.dumps(edited, indent=2) + "\n")

    done = run_splice("--json", "install", cwd=project, env=env)

    assert done.code == 0, done.stdout + done.stderr
    assert json.loads((project / "splice.json").read_text()) == {
        **edited,
        "packages": {GREETER: "1.0.0"},
    }
    assert not (project / ".splice" / "tmp").exists()
    assert run_splice("--json", "verify", GREETER, cwd=project, env=env).code == 0


def test_a_hand_edit_after_a_killed_remove_survives_the_recovery(
    served_to_read: RunningRegistry, tmp_path: Path
) -> None:
    project, env = _project(tmp_path, served_to_read)
    assert run_splice("add", f"{GREETER}@1.0.0", cwd=project, env=env).code == 0
    killer = kill_env(tmp_path / "hook", project, match="open:" + str(project / ".splice.json."))
    killed = run_splice("remove", GREETER, cwd=project, env={**env, **killer})
    assert killed.code == -signal.SIGKILL, killed.stderr
    assert not (project / "splice.lock").exists()
    edited = json.loads((project / "splice.json").read_text())
    edited["requireSignatures"] = ["other"]
    (project / "splice.json").write_text(json.dumps(edited, indent=2) + "\n")

    done = run_splice("--json", "list", cwd=project, env=env)

    assert done.code == 0, done.stdout + done.stderr
    assert json.loads((project / "splice.json").read_text()) == {
        **edited,
        "packages": {},
    }
    assert not (project / ".splice" / "packages").exists()


def test_the_temp_lock_of_a_killed_add_is_removed_by_the_next_command(
    served_to_read: RunningRegistry, tmp_path: Path
) -> None:
    project, env = _project(tmp_path, served_to_read)
    # Killed with the new splice.lock complete in its temp file, before the rename.
    killer = kill_env(
        tmp_path / "hook", project, match="os.rename:" + str(project / ".splice.lock.")
    )
    killed = run_splice("add", f"{GREETER}@1.0.0", cwd=project, env={**env, **killer})
    assert killed.code == -signal.SIGKILL, killed.stderr
    assert [p.name.startswith(".splice.lock.") for p in project.glob("*.tmp")] == [True]

    done = run_splice("--json", "list", cwd=project, env=env)

    assert done.code == 0, done.stdout + done.stderr
    assert done.json() == []  # rolled back: the commit point was not reached
    assert sorted(p.name for p in project.iterdir()) == [".splice", "splice.json"]


def test_the_temp_cache_entry_of_a_killed_add_goes_with_the_next_cache_write(
    served_to_read: RunningRegistry, tmp_path: Path
) -> None:
    """``add`` killed before its artifact's temp file is renamed into the cache leaves a full
    copy there (``SPLICE_HOME`` is outside the project, which the recovery cleans). If that
    version is never added again, the next write of any other entry must still remove it."""
    project, env = _project(tmp_path, served_to_read)
    entries = tmp_path / "home" / "cache" / "artifacts" / "sha256"
    killer = kill_env(tmp_path / "hook", tmp_path / "home", match=f"os.rename:{entries}/.")
    killed = run_splice("add", f"{GREETER}@1.1.0", cwd=project, env={**env, **killer})
    assert killed.code == -signal.SIGKILL, killed.stderr
    assert len(list(entries.glob(".*.tmp"))) == 1

    done = run_splice("add", f"{GREETER}@1.0.0", cwd=project, env=env)

    assert done.code == 0, done.stderr
    assert list(entries.glob(".*.tmp")) == []
    assert len(list(entries.iterdir())) == 1  # the 1.0.0 artifact


def test_a_temp_copy_beside_a_complete_cache_entry_goes_with_its_next_read(
    served_to_read: RunningRegistry, tmp_path: Path
) -> None:
    """``sync -j 2`` may write one cache entry from two installs at once; killed after the
    first rename, the second's temp file stays beside a complete entry that nothing writes
    again (tests/faults/test_killed_walk.py reaches it). Restoring from the cache removes it."""
    import subprocess

    project, env = _project(tmp_path, served_to_read)
    assert run_splice("add", f"{GREETER}@1.1.0", cwd=project, env=env).code == 0
    entries = tmp_path / "home" / "cache" / "artifacts" / "sha256"
    (entry,) = entries.iterdir()
    finished = subprocess.Popen(["true"])
    finished.wait()
    left = entries / f".{entry.name}.{finished.pid}.0123abcd.tmp"
    left.write_bytes(entry.read_bytes())
    shutil.rmtree(project / ".splice" / "packages")

    done = run_splice("--json", "install", cwd=project, env=env)

    assert done.code == 0, done.stdout + done.stderr
    assert not left.exists()
