"""The URL verdict table through the real sandbox and the parent's fetch, inside a private
network namespace (``testing.netns_scenarios.url_table`` calls ``run_table``).

The table's allowed IP literals are added to this namespace's ``lo``, one dual-stack HTTP
server per port (80, 8080) answers on all of them and records the ``Host`` of every request,
and every name resolves (through the runtime's test resolver) to one of those addresses, so
an allowed request reaches a server and a refused one reaches nothing. Rows are grouped by
their patterns: one package per group declares them in ``permissions.network``.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PORTS = (80, 8080)
NAME_ADDRESS = "8.8.8.8"  # every name but localhost resolves here (on lo in the namespace)
ROWS_PER_CALL = 40  # below the runtime's fetch budget per execution

TOOL = """
export default async ({ urls }) => {
  const out = [];
  for (const url of urls) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
      out.push({ verdict: 'allow', host: (await r.json()).host });
    } catch (e) {
      if (e.code === 'ERR_ACCESS_DENIED') out.push({ verdict: 'deny', reason: e.reason });
      else if (e.name === 'TypeError' && e.cause?.code === 'ERR_INVALID_URL') {
        out.push({ verdict: 'invalid' });
      }
      else out.push({ verdict: 'allow', failure: e.cause?.code ?? e.name });
    }
  }
  return out;
};
"""


class _Handler(BaseHTTPRequestHandler):
    server: _DualStack

    def do_GET(self) -> None:
        local = str(self.connection.getsockname()[0]).removeprefix("::ffff:")
        self.server.seen.append(local)
        body = json.dumps({"host": self.headers.get("Host", ""), "local": local}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


class _DualStack(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True
    seen: list[str]  # the local address of every request

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


@contextmanager
def servers() -> Iterator[list[str]]:
    """The dual-stack servers on every local address; yields the local addresses hit."""
    seen: list[str] = []
    running = [_DualStack(("::", port), _Handler) for port in PORTS]
    for server in running:
        server.seen = seen
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in running]
    for thread in threads:
        thread.start()
    try:
        yield seen
    finally:
        for server in running:
            server.shutdown()
            server.server_close()


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def add_addresses(addresses: set[str]) -> None:
    """Put ``addresses`` on this namespace's ``lo`` (loopback ones are there already)."""
    for address in sorted(addresses):
        if ipaddress.ip_address(address).is_loopback:
            continue
        prefix = "/128" if ":" in address else "/32"
        subprocess.run(["ip", "addr", "add", address + prefix, "dev", "lo"], check=True)


def run_table(rows: list[dict[str, Any]]) -> dict[str, object]:
    from splice_build.runtime import SpliceRuntime
    from testing.hostile_packages import write_package

    add_addresses(
        {NAME_ADDRESS}
        | {a for row in rows if (a := _literal(row.get("expectHost") or "")) is not None}
    )
    groups: dict[tuple[str, ...], list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault(tuple(row["patterns"]), []).append(index)
    resolver = {"localhost": [["127.0.0.1"]]}
    for row in rows:
        name = (row.get("expectHost") or "").lower()
        if name and _literal(name) is None and name != "localhost":
            resolver[name] = [[NAME_ADDRESS]]
    verdicts: list[Any] = [None] * len(rows)
    with servers(), tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        runtime = SpliceRuntime(project_root=project, env={}, _unsafe_test_resolver=resolver)
        for number, (patterns, indexes) in enumerate(groups.items()):
            pkg = write_package(
                Path(tmp) / "pkgs",
                TOOL,
                name=f"g{number}",
                permissions={"network": list(patterns)},
                timeout_ms=60000,
            )
            loaded = runtime.load(pkg)
            for start in range(0, len(indexes), ROWS_PER_CALL):
                chunk = indexes[start : start + ROWS_PER_CALL]
                result = runtime.execute(loaded, "t", {"urls": [rows[i]["url"] for i in chunk]})
                if not result.ok:
                    raise AssertionError(f"table call failed: {result.to_json()}")
                for index, verdict in zip(chunk, result.output, strict=True):
                    verdicts[index] = verdict
    return {"verdicts": verdicts}
