"""What one anonymous read costs the registry server, for a version whose manifest is 2 MiB.

One version (``@acme/big@1.0.0``, its tool's ``default`` a list of 145,000 strings: a
2,064,222-byte manifest, within the publish limits) is published into a data directory with
the project's own embedded client, and the real server (``splice registry serve``, one
worker, rate limits off) answers ``GET`` of the package, the version, its versions page, its
artifact, the version again with ``If-None-Match`` naming its ETag, and ``/health``, each
round's requests of a path on one connection the client holds, as the red team's readers
did. "server CPU per request"
is the server's CPU time (``/proc``) over its requests.

With ``SPLICE_BENCH_BEFORE`` naming another checkout, a second server run from it serves a
copy of the same data directory, and the rounds alternate between the two (this tree's
first in even rounds), so both see the machine's load alike; each row of this tree then has
that checkout's figure as its baseline.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

from bench.bench_registry import server_cpu
from bench.common import REPO, Row, median

PATHS = {
    "package": "/packages/acme/big",
    "version (2 MiB manifest)": "/packages/acme/big/1.0.0",
    "version, If-None-Match its ETag": "/packages/acme/big/1.0.0",
    "versions page": "/packages/acme/big/versions",
    "artifact": "/packages/acme/big/1.0.0/download",
    "health": "/health",
}
HELD = "version, If-None-Match its ETag"


def _manifest() -> str:
    from testing.packages import minimal_manifest

    manifest = minimal_manifest(name="big")
    strings = [f"item-{i}" for i in range(145_000)]
    manifest["tools"][0]["input"]["properties"]["name"]["default"] = strings
    return json.dumps(manifest)


def _reads(url: str, path: str, count: int, etag: str | None) -> str | None:
    """``count`` GETs of ``path`` on one connection; the last answer's ETag."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    headers = {"if-none-match": etag} if etag else {}
    answer = None
    try:
        for _ in range(count):
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status not in (200, 304):
                raise AssertionError(f"GET {path}: HTTP {response.status}")
            answer = response.getheader("etag")
    finally:
        conn.close()
    return answer


def run(quick: bool = False) -> list[Row]:
    from testing.registry_fixtures import publish
    from testing.registry_server import registry_server

    count, rounds = (5, 4) if quick else (20, 10)
    trees = {"this tree": str(REPO)}
    if os.environ.get("SPLICE_BENCH_BEFORE"):
        trees["before"] = os.environ["SPLICE_BENCH_BEFORE"]
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        root = Path(tmp)
        publish(root / "data", root / "work", name="big", files={"manifest.json": _manifest()})
        servers = {}
        for label, tree in trees.items():
            data = root / f"data-{len(servers)}"
            shutil.copytree(root / "data", data)
            env = {"PYTHONPATH": tree}
            limits = ("--publish-limit", "0", "--request-limit", "0")
            servers[label] = stack.enter_context(registry_server(data, *limits, env=env))
        etags = {label: _reads(s.url, PATHS[HELD], 2, None) for label, s in servers.items()}
        for index in range(rounds):
            order = list(servers) if index % 2 == 0 else list(reversed(servers))
            for name, path in PATHS.items():
                for label in order:
                    pid = servers[label].process.pid
                    etag = etags[label] if name == HELD else None
                    before, start = server_cpu(pid), time.perf_counter()
                    _reads(servers[label].url, path, count, etag)
                    wall.setdefault((label, name), []).append((time.perf_counter() - start) / count)
                    cpu.setdefault((label, name), []).append((server_cpu(pid) - before) / count)
    rows = []
    for name in PATHS:
        for label in trees:
            mine = median(cpu[(label, name)]) * 1000
            base = median(cpu[("before", name)]) * 1000 if "before" in trees else None
            compare = (
                ("before", base) if label == "this tree" and base is not None else (None, None)
            )
            rows.append(Row(f"{name}: server CPU per request ({label})", mine, "ms", *compare))
            latency = median(wall[(label, name)]) * 1000
            rows.append(Row(f"{name}: latency ({label})", latency, "ms"))
    return rows
