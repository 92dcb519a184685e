"""Run a test scenario inside a private network namespace (loopback only).

Rebinding tests need a *public* first DNS answer that the guard accepts and then fails to
reach. Tests may send traffic only to this machine, so the scenario runs in a fresh network
namespace (``unshare --net``, root or unprivileged user namespaces) whose only interface is
``lo``: a connection to a public address fails at once with ENETUNREACH and no packet leaves.

With ``hosts`` (name → address), the namespace also gets a private mount namespace in which
``/etc/hosts`` is replaced by exactly those entries (so the operating system resolver, hosts
file first, answers them), and every non-loopback address among them is added to ``lo``:
a server in the scenario can listen on a *public* address and be reached by name, through the
production resolver and the production address policy, while no packet leaves the namespace.
"""

from __future__ import annotations

import ipaddress
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testing.isolation import os_layer_missing

REPO_ROOT = Path(__file__).resolve().parent.parent


def _unshare_argv(*, mount: bool) -> list[str] | None:
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        return None
    flags = ["--net", "--mount"] if mount else ["--net"]
    probe = f"{ip} link set lo up" + (" && mount --bind /etc/hosts /etc/hosts" if mount else "")
    for argv in ([unshare, *flags], [unshare, *flags, "--map-root-user"]):
        done = subprocess.run([*argv, "sh", "-c", probe], capture_output=True)
        if done.returncode == 0:
            return argv
    return None


def _hosts_setup(ip: str, hosts: Mapping[str, str], hosts_file: Path) -> str:
    """Shell steps: the addresses on ``lo``, then ``/etc/hosts`` bind-mounted from the table."""
    lines = ["127.0.0.1 localhost", "::1 localhost"]
    lines += [f"{address} {name}" for name, address in hosts.items()]
    hosts_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    steps = []
    for address in sorted(set(hosts.values())):
        parsed = ipaddress.ip_address(address)
        if not parsed.is_loopback:
            steps.append(f"{ip} addr add {address}/{parsed.max_prefixlen} dev lo")
    steps.append(f"mount --bind {shlex.quote(str(hosts_file))} /etc/hosts")
    return " && ".join(steps)


def run_in_private_netns(
    scenario: str,
    *args: str,
    timeout: float = 120,
    module: str = "testing.netns_scenarios",
    hosts: Mapping[str, str] | None = None,
) -> Any:
    """Run ``<module>.<scenario>(*args)`` in a loopback-only namespace; its JSON (last line).

    ``hosts`` also gives the scenario its own ``/etc/hosts`` and puts those addresses on
    ``lo`` (module docstring). Skips where no such namespace can be made.
    """
    argv = _unshare_argv(mount=hosts is not None)
    if argv is None:
        os_layer_missing(
            "no private network namespace here (unshare --net refused, or no iproute2)"
        )
    ip = shutil.which("ip")
    assert ip is not None, "BUG: _unshare_argv found ip"
    with tempfile.TemporaryDirectory(prefix="splice-netns-") as tmp:
        steps = [f"{ip} link set lo up"]
        if hosts is not None:
            steps.append(_hosts_setup(ip, hosts, Path(tmp) / "hosts"))
        command = shlex.join([sys.executable, "-m", module, scenario, *args])
        done = subprocess.run(
            [*argv, "sh", "-c", " && ".join(steps) + f" && exec {command}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO_ROOT,
        )
    if done.returncode != 0:
        raise AssertionError(f"scenario {scenario} failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])
