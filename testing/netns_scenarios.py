"""Scenarios run by ``testing.netns.run_in_private_netns`` (one JSON line out).

The rebinding scenarios start a real HTTP server on 127.0.0.1 inside the namespace and give
the guard a fake resolver whose first answer is public (unreachable here: no route, no
packet leaves) and whose second answer is 127.0.0.1. The guard must connect only to the
address it checked. ``url_table`` runs the URL verdict table through real sandboxed tools
and the parent's fetch, with the table's public addresses on this namespace's ``lo``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

PUBLIC = "2606:4700:4700::1111"  # a public address; unreachable inside the namespace


def sandbox_rebinding() -> dict[str, object]:
    from splice_build.runtime import SpliceRuntime
    from testing.hostile_packages import write_package
    from testing.netservers import serve

    with serve() as server, tempfile.TemporaryDirectory() as tmp:
        url = f"http://rebind.test:{server.port}/echo"
        body = (
            "export default async () => { const out = [];"
            " for (let i = 0; i < 2; i++) {"
            f"  try {{ await fetch('{url}', {{ signal: AbortSignal.timeout(1500) }});"
            " out.push('reached'); }"
            "  catch (e) { out.push(e.code === 'ERR_ACCESS_DENIED' ? 'denied' : 'failed'); } }"
            " return out; };"
        )
        project = Path(tmp) / "project"
        project.mkdir()
        pkg = write_package(Path(tmp) / "pkgs", body, permissions={"network": ["*"]})
        runtime = SpliceRuntime(
            project_root=project,
            env={},
            _unsafe_test_resolver={"rebind.test": [[PUBLIC], ["127.0.0.1"]]},
        )
        result = runtime.execute(runtime.load(pkg), "t", {})
        return {"result": result.to_json(), "seen": len(server.seen)}


def sandbox_rebinding_reachable() -> dict[str, object]:
    """As ``sandbox_rebinding``, with the public first answer on ``lo`` and a server there:
    the first request arrives at exactly that address; the second lookup's 127.0.0.1 is
    refused, and no request arrives at any other address."""
    from splice_build.runtime import SpliceRuntime
    from testing.hostile_packages import write_package
    from testing.netns_url_table import add_addresses, servers

    add_addresses({PUBLIC})
    with servers() as seen, tempfile.TemporaryDirectory() as tmp:
        body = (
            "export default async () => { const out = [];"
            " for (let i = 0; i < 2; i++) {"
            "  try { out.push((await (await fetch('http://rebind.test/')).json()).local); }"
            "  catch (e) { out.push(e.code === 'ERR_ACCESS_DENIED' ? 'denied' : 'failed'); } }"
            " return out; };"
        )
        project = Path(tmp) / "project"
        project.mkdir()
        pkg = write_package(Path(tmp) / "pkgs", body, permissions={"network": ["*"]})
        runtime = SpliceRuntime(
            project_root=project,
            env={},
            _unsafe_test_resolver={"rebind.test": [[PUBLIC], ["127.0.0.1"]]},
        )
        result = runtime.execute(runtime.load(pkg), "t", {})
        return {"result": result.to_json(), "seen": list(seen)}


def python_rebinding() -> dict[str, object]:
    from splice_build.security.guarded_http import GuardedSession
    from splice_build.security.net_errors import NetworkDenied, NetworkFailure
    from testing.netservers import FakeResolver, serve

    outcomes: list[str] = []
    with serve() as server:
        resolver = FakeResolver({"rebind.test": [[PUBLIC], ["127.0.0.1"]]})
        with GuardedSession(["*"], resolver=resolver, timeout_s=2) as http:
            for _ in range(2):
                try:
                    http.get(f"http://rebind.test:{server.port}/echo")
                    outcomes.append("reached")
                except NetworkDenied:
                    outcomes.append("denied")
                except NetworkFailure:
                    outcomes.append("failed")
            lookups = http.lookups
        return {
            "outcomes": outcomes,
            "lookups": lookups,
            "calls": resolver.calls,
            "seen": len(server.seen),
        }


def url_table(table_file: str) -> dict[str, object]:
    """Every ``[url, patterns]`` of the file fetched by a sandboxed tool whose manifest
    declares ``patterns``; each public address the table allows is on ``lo`` with an HTTP
    server on ports 80 and 8080, so an allowed request really arrives (its Host header is
    reported) and a refused one never leaves the parent."""
    from testing.netns_url_table import run_table

    return run_table(json.loads(Path(table_file).read_text(encoding="utf-8")))


if __name__ == "__main__":
    name, *args = sys.argv[1:]
    print(json.dumps(globals()[name](*args)))
