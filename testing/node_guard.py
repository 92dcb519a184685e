"""Run the host's network-guard functions (runtime/host/*.mjs) from Python tests, batched:
one Node process answers every target, address and lookup of a call (net_guard_driver.mjs)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from splice_build.runtime.node import find_node
from splice_build.security.netpolicy import policy_json

DRIVER = Path(__file__).with_name("net_guard_driver.mjs")


def run_driver(
    *,
    targets: list[dict[str, Any]] | None = None,
    addresses: list[str] | None = None,
    lookups: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``{"targets": [...], "addresses": [...], "lookups": [...]}`` answered by Node."""
    request = {
        "policy": policy_json(),
        "targets": targets or [],
        "addresses": addresses or [],
        "lookups": lookups or [],
    }
    done = subprocess.run(
        [str(find_node({}).path), str(DRIVER)],
        input=json.dumps(request).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"net_guard_driver failed: {done.stderr.decode(errors='replace')}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result
