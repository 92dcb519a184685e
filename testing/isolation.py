"""Helpers for the OS-layer tests (tests/runtime/test_isolation*.py).

Every test that depends on the OS layer or on a namespace tool goes through
``os_layer_missing``: it skips with the reason, or fails when
``SPLICE_TEST_REQUIRE_OS_LAYER=1`` (``testing/switches.py``; set by ``.ci/run``).
``needs_os_layer()`` marks a test (or a module) that needs the OS layer: ``tests/conftest.py``
calls ``require_os_layer`` before it runs. ``os_layer_available()`` is for tests that expect
either layer and must know which one ran.
``processes_in_namespace(link)`` finds host processes (zombies excluded) whose PID namespace
is ``link`` (``pid:[inode]``, as a tool reads ``/proc/self/ns/pid``); ``wait_for_namespace_gone``
polls it; ``busy_sandboxes`` finds a runaway tool by command line and CPU time. ``without_user_namespaces``
is the argv prefix that runs a command where creating a user namespace fails (a user
namespace whose ``max_user_namespaces`` is 0), or None when ``unshare`` cannot do it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import NoReturn

import pytest

from splice_build.runtime.isolation.support import detect
from testing.switches import REQUIRE_OS_LAYER, SWITCHES

MARK = "os_layer"


def os_layer_missing(reason: str) -> NoReturn:
    """Skip the running test for ``reason``, or fail it when the switch requires the layer."""
    if SWITCHES.require_os_layer:
        pytest.fail(f"{reason} ({REQUIRE_OS_LAYER}=1: the OS layer is required)")
    pytest.skip(reason=reason)


def os_layer_available() -> bool:
    """Whether the OS layer works here; its absence fails the test when it is required."""
    support = detect()
    if not support.namespaces and SWITCHES.require_os_layer:
        os_layer_missing(f"the OS layer is unavailable: {support.namespaces_reason}")
    return support.namespaces


def require_os_layer() -> None:
    """Skip (or fail) the running test unless the OS layer works here."""
    support = detect()
    if not support.namespaces:
        os_layer_missing(f"the OS layer is unavailable: {support.namespaces_reason}")


def require_seccomp() -> None:
    """Skip (or, when the OS layer is required, fail) the running test unless the seccomp
    filter can be installed here: a filter broken enough to let ``socket()`` through must
    fail its tests in CI, not skip them."""
    from splice_build.runtime.isolation import seccomp

    if seccomp.current_arch() is None:
        pytest.skip(reason="no seccomp table for this architecture")
    found = seccomp.detect()
    if not found.available:
        os_layer_missing(f"no seccomp filter here: {found.detail}")


def needs_os_layer() -> pytest.MarkDecorator:
    """Mark a test as needing the OS layer (``require_os_layer`` runs before it)."""
    return getattr(pytest.mark, MARK)


def processes_in_namespace(link: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") != link:
                continue
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(pid))
        except OSError:
            continue
    return found


def wait_for_namespace_gone(link: str, timeout: float = 5.0) -> list[int]:
    """The processes of that PID namespace still alive after ``timeout`` seconds: the kernel
    kills them when PID 1 dies, but reaping a few hundred takes a moment."""
    deadline = time.monotonic() + timeout
    while (alive := processes_in_namespace(link)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def busy_sandboxes(needle: str, cpu_seconds: float, timeout: float = 5.0) -> list[int]:
    """Live processes whose command line has ``needle`` and which used more than
    ``cpu_seconds`` of CPU, still there after ``timeout`` seconds. Tells a runaway tool from
    the idle warm process a pool starts for the same package (same command line; a tool's
    pid says nothing inside a PID namespace)."""
    from testing.pool import sandbox_pids

    ticks = os.sysconf("SC_CLK_TCK")

    def used(pid: int) -> float:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

    deadline = time.monotonic() + timeout
    while True:
        busy = [pid for pid in sandbox_pids(needle) if used(pid) > cpu_seconds]
        if not busy or time.monotonic() >= deadline:
            return busy
        time.sleep(0.05)


def without_user_namespaces() -> list[str] | None:
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    argv = [unshare, "--user", "--map-root-user", "sh", "-c"]
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    probe = subprocess.run(
        [*argv, script, "sh", unshare, "--user", "true"], capture_output=True, check=False
    )
    refused = probe.returncode != 0 and b"No space left" in probe.stderr
    return [*argv, script, "sh"] if refused else None
