"""What a tool can make the parent hold, walked over every channel from the tool to the
parent with a payload past its bound: capability arguments and results, a fetch request
body (forged frames too), logs and the result frame. Each is refused with its own code, and
the parent's Python memory grows by a bounded amount: nothing is buffered, nor written out
whole, only to be found too large (docs/security.md#memory-a-tool-can-make-the-parent-hold).
And a capability call the tool leaves running answers into nothing once its execution ended."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime.limits import FETCH_CHUNK_BYTES, MAX_CAPABILITY_ARGS_BYTES
from testing.fake_providers import skill_runtime
from testing.hostile_packages import write_package
from testing.netservers import serve

pytestmark = pytest.mark.node

# 5 MiB of a control character: 30 MiB of JSON, written whole (and encoded: 60 MiB) by the
# old size check of a capability result.
HUGE_RESULT = {"status": "LIVE", "data": {"text": "\x01" * (5 * 1024 * 1024)}}
# The parent's traced Python memory may grow this much over the walk (it was > 60 MiB).
GROWTH_BOUND = 24 * 1024 * 1024


class HugeAnswers:
    """A broker answering every call with HUGE_RESULT (made once, before the walk), except
    a query "hold", answered once ``release`` is set."""

    def __init__(self) -> None:
        self.held = threading.Event()
        self.release = threading.Event()

    def call(self, request: Any) -> Any:
        if request["args"].get("query") == "hold":
            self.held.set()
            self.release.wait()
            return {"status": "LIVE"}
        return HUGE_RESULT


def _walk_tool(url: str) -> str:
    chunk = "A" * (4 * ((FETCH_CHUNK_BYTES + 2) // 3))
    fetch = {"type": "fetch", "id": 1, "url": url, "method": "POST", "headers": []}
    forged = json.dumps({**fetch, "redirect": "follow", "body": True}) + "\n"
    forged += (json.dumps({"type": "fetch-body", "id": 1, "data": chunk}) + "\n") * 17
    return (
        "import fs from 'node:fs'; export default async (i, ctx) => {"
        " if (i.big) return { big: 'x'.repeat(2 * 1024 * 1024) };"
        " let host; try { await fetch('" + url + "', { method: 'POST',"
        "  body: new Uint8Array(4 * 1024 * 1024 + 1) }); host = 'sent'; }"
        " catch (e) { host = e.cause?.code ?? e.message; }"
        f" fs.writeSync(Number(process.argv[3]), {json.dumps(forged)});"
        " const b = Buffer.alloc(65536); const n = fs.readSync(Number(process.argv[2]), b, 0, 65536, null);"
        " const parent = JSON.parse(b.toString('utf8', 0, n).split('\\n')[0]).error.code;"
        f" const args = await ctx.capability('web.search', {{ query: 'q'.repeat({MAX_CAPABILITY_ARGS_BYTES}) }})"
        ".then((r) => r.status, (e) => e.code);"
        " const result = (await ctx.capability('web.search', { query: 'q' })).code;"
        " for (let k = 0; k < 8; k++) { process.stdout.write('o'.repeat(128 * 1024));"
        " process.stderr.write('e'.repeat(128 * 1024)); }"
        " ctx.capability('web.search', { query: 'hold' }).catch(() => {});"
        " return { host, parent, args, result }; };"
    )


def test_every_channel_refuses_past_its_bound_and_late_answers_go_nowhere(
    tmp_path: Path,
) -> None:
    broker = HugeAnswers()
    with serve() as server:
        runtime = skill_runtime(tmp_path / "project", broker)
        permissions = {"network": ["127.0.0.1"], "capabilities": ["web.search"]}
        package = runtime.load(
            write_package(tmp_path / "packages", _walk_tool(server.url()), permissions=permissions)
        )
        tracemalloc.start()
        try:
            walked = runtime.execute(package, "t", {}).to_json()
            too_large = runtime.execute(package, "t", {"big": True}).to_json()
            _, peak = tracemalloc.get_traced_memory()
            assert broker.held.wait(30)
            # The lowest free numbers, the ended sessions' among them: files a server might
            # be writing. The late answer woke its session through its closed wake pipe,
            # and the byte went to one of them.
            files = [os.open(tmp_path / f"f{n}", os.O_RDWR | os.O_CREAT, 0o600) for n in range(32)]
        finally:
            tracemalloc.stop()
            broker.release.set()
        assert server.seen == []
    for thread in [t for t in threading.enumerate() if t.name.startswith("splice-capability")]:
        thread.join()
    written = {fd: os.fstat(fd).st_size for fd in files}
    for fd in files:
        os.close(fd)
    assert walked["output"] == {
        "host": "ERR_SPLICE_REQUEST_TOO_LARGE",
        "parent": "ERR_SPLICE_REQUEST_TOO_LARGE",
        "args": "INPUT_TOO_LARGE",
        "result": "RESULT_TOO_LARGE",
    }, walked
    assert walked["logs"].endswith("[logs truncated]") and len(walked["logs"]) < 70_000
    assert too_large["error"]["code"] == "OUTPUT_TOO_LARGE", too_large
    assert peak < GROWTH_BOUND, f"the parent's traced memory peaked at {peak >> 20} MiB"
    assert set(written.values()) == {0}, written
