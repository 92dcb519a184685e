"""A reader of installed packages (``splice mcp`` before every call, ``splice run``, the SDK)
while another process swaps a package in: it must get the old copy or the new one, never a
false ``NOT_INSTALLED`` / ``INSTALLED_PACKAGE_MODIFIED``.

The writer is a real ``splice add`` stopped with SIGSTOP halfway through its swap (the old
copy moved aside, the new one not yet in place; testing/kill_at.py), holding the project
lock. The reader checks the package against the lock it read before the writer began.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from splice_build.errors import SpliceError
from splice_build.install.installed import InstalledPackage
from splice_build.project.lockfile import load_lockfile
from splice_build.sdk import Splice
from testing.cli import run_splice, splice_executable
from testing.kill_at import kill_env, stopped, waiting_on
from testing.registry_server import RunningRegistry
from tests.faults.conftest import GREETER

pytestmark = pytest.mark.skipif(
    not Path("/proc/locks").exists(), reason="reads the kernel's lock table"
)


def test_a_check_halfway_through_another_process_swap_waits_for_it(
    served: RunningRegistry, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    env = {"SPLICE_HOME": str(tmp_path / "home"), "SPLICE_REGISTRY": served.url}
    assert run_splice("init", cwd=project, env=env).code == 0
    assert run_splice("add", f"{GREETER}@1.0.0", cwd=project, env=env).code == 0
    read_before = load_lockfile(project)
    staged = project / ".splice" / "tmp" / "greeter-"
    stopper = kill_env(
        tmp_path / "hook", project, match=f"os.rename:{staged}", signal=signal.SIGSTOP
    )
    writer = subprocess.Popen(
        [splice_executable(), "add", f"{GREETER}@1.1.0"],
        cwd=project,
        env={**os.environ, **env, **stopper},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not stopped(writer.pid):
            assert writer.poll() is None, "the writer ended before its swap"
            time.sleep(0.001)
        assert not (project / ".splice" / "packages" / "@acme" / "greeter").exists()

        answer: list[InstalledPackage | SpliceError] = []

        def read() -> None:
            splice = Splice(project, env=env)
            try:
                answer.append(splice._check_in(read_before, GREETER))
            except SpliceError as exc:
                answer.append(exc)

        reader = threading.Thread(target=read)
        reader.start()
        lock_file = project / ".splice" / "state.lock"
        while reader.is_alive() and not waiting_on(lock_file):
            reader.join(0.01)
        os.kill(writer.pid, signal.SIGCONT)
        reader.join()
        assert writer.wait() == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()

    [result] = answer
    assert isinstance(result, InstalledPackage), result
    assert result.lock_entry.version == "1.1.0"
