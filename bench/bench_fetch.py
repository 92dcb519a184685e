"""A tool's fetch, performed by the parent (docs/network-security.md), against the guarded
client used directly from Python, in the same run, on a loopback HTTP server.

- loopback GET: the median time of one ``fetch`` + ``text()`` measured inside the tool
  (``performance.now()``), against one ``GuardedSession.get`` from Python (a fresh session
  per request, as the parent makes one per request; and a reused one). Target: ≤ 2 ms more.
- 10 MiB download: the tool reads the whole body (``arrayBuffer()``, streamed in chunks
  through the channel), against Python reading it directly. Target: ≥ 100 MiB/s.
- CPU per 10 MiB: what one download costs the Node host (``process.cpuUsage()``) and the
  parent (``time.process_time()`` of an execution that only downloads, divided by its
  downloads: an upper bound, it includes the execution's own start). Throughput on a loaded
  machine is roughly the CPU share the three processes get divided by these costs, so these
  rows compare changes where the MiB/s rows only show the load.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import Row

SIZE = 10 * 1024 * 1024
_MIB = 1024 * 1024

# The server runs in its own process, so it never competes with the parent for the GIL.
SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BIG = b"x" * int(sys.argv[1])
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # head and body in one write: no Nagle/delayed-ACK stall on keep-alive
    disable_nagle_algorithm = True
    def log_message(self, *a): pass
    def do_GET(self):
        body = BIG if self.path.startswith("/big") else b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


@contextmanager
def _server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(SIZE)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}"
    finally:
        proc.kill()
        proc.wait()


TOOL = """
export default async ({ url, big, gets, downloads }) => {
  const latency = [];
  for (let i = 0; i < gets; i += 1) {
    const t0 = performance.now();
    await (await fetch(url)).text();
    latency.push(performance.now() - t0);
  }
  const download = [];
  if (downloads > 0) await (await fetch(big)).arrayBuffer(); // warms the code paths
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < downloads; i += 1) {
    const t0 = performance.now();
    const bytes = (await (await fetch(big)).arrayBuffer()).byteLength;
    download.push([performance.now() - t0, bytes]);
  }
  const cpu = process.cpuUsage(cpu0);
  return { latency, download, nodeCpuMs: (cpu.user + cpu.system) / 1000 };
};
"""


def _direct(
    url: str, big: str, gets: int, downloads: int
) -> tuple[list[float], list[float], list[float]]:
    from splice_build.security.guarded_http import GuardedSession

    fresh, reused, download = [], [], []
    for _ in range(gets):
        started = time.perf_counter()
        with GuardedSession(["127.0.0.1"]) as http:
            http.get(url)
        fresh.append((time.perf_counter() - started) * 1000)
    with GuardedSession(["127.0.0.1"]) as http:
        for _ in range(gets):
            started = time.perf_counter()
            http.get(url)
            reused.append((time.perf_counter() - started) * 1000)
        for _ in range(downloads):
            started = time.perf_counter()
            size = len(http.get(big).content)
            download.append(size / _MIB / (time.perf_counter() - started))
    return fresh, reused, download


def run(quick: bool = False) -> list[Row]:
    from splice_build.runtime import SpliceRuntime
    from testing.hostile_packages import write_package

    gets, downloads, rounds = (15, 2, 2) if quick else (25, 3, 4)
    fresh: list[float] = []
    reused: list[float] = []
    direct_download: list[float] = []
    latency: list[float] = []
    through: list[float] = []
    node_cpu: list[float] = []
    parent_cpu: list[float] = []
    with _server() as base, tempfile.TemporaryDirectory() as tmp:
        url, big = f"{base}/echo", f"{base}/big"
        project = Path(tmp) / "project"
        project.mkdir()
        pkg = write_package(
            Path(tmp) / "pkgs", TOOL, permissions={"network": ["127.0.0.1"]}, timeout_ms=60000
        )
        runtime = SpliceRuntime(project_root=project, env={})
        loaded = runtime.load(pkg)
        # Rounds alternate the two sides, so a change of load hits both alike.
        for _ in range(rounds):
            one_fresh, one_reused, one_download = _direct(url, big, gets, downloads)
            fresh += one_fresh
            reused += one_reused
            direct_download += one_download
            result = runtime.execute(
                loaded, "t", {"url": url, "big": big, "gets": gets + 1, "downloads": 0}
            )
            if not result.ok:
                raise RuntimeError(f"the fetch benchmark tool failed: {result.to_json()}")
            latency += result.output["latency"][1:]  # the first pays the client's imports
            cpu_started = time.process_time()
            result = runtime.execute(
                loaded, "t", {"url": url, "big": big, "gets": 0, "downloads": downloads}
            )
            parent_cpu.append((time.process_time() - cpu_started) * 1000 / (downloads + 1))
            if not result.ok:
                raise RuntimeError(f"the fetch benchmark tool failed: {result.to_json()}")
            through += [b / _MIB / (ms / 1000) for ms, b in result.output["download"]]
            node_cpu.append(result.output["nodeCpuMs"] / downloads)
    tool_ms = statistics.median(latency)
    return [
        Row(
            "loopback GET, tool fetch through the parent",
            tool_ms,
            "ms",
            "GuardedSession.get, fresh session",
            statistics.median(fresh),
            "≤ +2 ms",
        ),
        Row(
            "loopback GET, tool fetch: added over a direct fresh-session GET",
            tool_ms - statistics.median(fresh),
            "ms",
            target="≤ 2 ms",
        ),
        Row(
            "loopback GET, tool fetch through the parent ",
            tool_ms,
            "ms",
            "GuardedSession.get, reused session",
            statistics.median(reused),
        ),
        Row(
            "10 MiB download, tool fetch (arrayBuffer)",
            statistics.median(through),
            "MiB/s",
            "GuardedSession.get, direct",
            statistics.median(direct_download),
            "≥ 100 MiB/s",
        ),
        Row("10 MiB download: Node host CPU", statistics.median(node_cpu), "ms"),
        Row("10 MiB download: parent CPU (upper bound)", statistics.median(parent_cpu), "ms"),
    ]
