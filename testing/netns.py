"""Run a test scenario inside a private network namespace (loopback only).

Rebinding tests need a *public* first DNS answer that the guard accepts and then fails to
reach. Tests may send traffic only to this machine, so the scenario runs in a fresh network
namespace (``unshare --net``, root or unprivileged user namespaces) whose only interface is
``lo``: a connection to a public address fails at once with ENETUNREACH and no packet leaves.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from typing import Any

from testing.isolation import os_layer_missing

REPO_ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


def _unshare_argv() -> list[str] | None:
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        return None
    for argv in ([unshare, "--net"], [unshare, "--net", "--map-root-user"]):
        probe = subprocess.run([*argv, ip, "link", "set", "lo", "up"], capture_output=True)
        if probe.returncode == 0:
            return argv
    return None


def run_in_private_netns(scenario: str, *args: str, timeout: float = 120) -> Any:
    """Run ``testing.netns_scenarios.<scenario>(*args)`` in a loopback-only namespace; its JSON."""
    argv = _unshare_argv()
    if argv is None:
        os_layer_missing(
            "no private network namespace here (unshare --net refused, or no iproute2)"
        )
    ip = shutil.which("ip")
    script = f"{ip} link set lo up && exec {sys.executable} -m testing.netns_scenarios " + " ".join(
        [scenario, *args]
    )
    done = subprocess.run(
        [*argv, "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
    )
    if done.returncode != 0:
        raise AssertionError(f"scenario {scenario} failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])
