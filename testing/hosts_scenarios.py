"""Scenarios for the operating system resolver, run by ``testing.netns.run_in_private_netns(
..., module="testing.hosts_scenarios", hosts=HOSTS_FILE)``: ``/etc/hosts`` in the namespace
names one private and one public address; the guards use the system resolver (no test
resolver) in the Python session and in the sandbox's fetch. One JSON line out.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

PRIVATE_NAME = "intranet.example.test"
PRIVATE_ADDRESS = "10.20.30.40"  # never on any interface: a refusal is the only outcome
PUBLIC_NAME = "public.example.test"
PUBLIC_ADDRESS = "11.0.0.77"  # public, on lo inside the namespace, a server listens there
HOSTS_FILE = {PRIVATE_NAME: PRIVATE_ADDRESS, PUBLIC_NAME: PUBLIC_ADDRESS}

_FETCH = (
    "export default async () => {{ const out = {{}};"
    " for (const url of {urls}) {{"
    "  try {{ const r = await fetch(url); out[url] = 'status ' + r.status; }}"
    "  catch (e) {{ out[url] = (e.code || '') + ' ' + e.message; }} }}"
    " return out; }};"
)


def hosts_file_entries() -> dict[str, Any]:
    """The same two names through GuardedSession and through a sandboxed tool's fetch."""
    from splice_build.runtime import SpliceRuntime
    from splice_build.security.guarded_http import GuardedSession
    from splice_build.security.net_errors import NetworkDenied
    from testing.hostile_packages import write_package
    from testing.netservers import serve

    out: dict[str, Any] = {"python": {}, "sandbox": {}}
    with serve(PUBLIC_ADDRESS) as server:
        urls = [
            f"http://{PRIVATE_NAME}:{server.port}/echo",
            f"http://{PUBLIC_NAME}:{server.port}/echo",
        ]
        with GuardedSession(["*"], timeout_s=5) as http:
            for url in urls:
                try:
                    out["python"][url] = f"status {http.get(url).status}"
                except NetworkDenied as exc:
                    out["python"][url] = f"denied {exc.message}"
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp) / "project"
            project.mkdir()
            package = write_package(
                Path(tmp) / "pkgs",
                _FETCH.format(urls=json.dumps(urls)),
                permissions={"network": ["*"]},
            )
            runtime = SpliceRuntime(project_root=project, env={})
            result = runtime.execute(runtime.load(package), "t", {}).to_json()
            out["sandbox"] = result.get("output") or result
        out["urls"] = urls
        out["seen"] = [s.headers.get("host") for s in server.seen]
    return out


if __name__ == "__main__":
    scenario, *arguments = sys.argv[1:]
    print(json.dumps(globals()[scenario](*arguments)))
