"""The limits of a tool's fetch, enforced by the parent whatever the host does
(runtime/fetch_channel.py): calls per execution, requests in flight (the host queues them),
request and response bodies in bounded chunks, streaming with cancel and abort, and the
same limits against frames a tool forges on its pipe."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from splice_build.runtime.limits import FETCH_CHUNK_BYTES, MAX_FETCH_CALLS, MAX_FETCHES_IN_FLIGHT
from testing.netservers import NetServer, serve

pytestmark = pytest.mark.node

NET = {"network": ["127.0.0.1"]}


@pytest.fixture
def server() -> Iterator[NetServer]:
    with serve() as running:
        yield running


def test_calls_per_execution_are_limited(run_tool, server: NetServer) -> None:
    result = run_tool(
        "export default async () => { const out = [];"
        f" for (let i = 0; i < {MAX_FETCH_CALLS + 2}; i += 1) {{"
        f"  try {{ await (await fetch('{server.url()}')).text(); out.push('ok'); }}"
        "  catch (e) { out.push(e.cause?.code ?? e.message); } }"
        " return out; };",
        permissions=NET,
        timeout_ms=60000,
    )
    assert result.output == ["ok"] * MAX_FETCH_CALLS + ["ERR_SPLICE_FETCH_LIMIT"] * 2
    assert len(server.seen) == MAX_FETCH_CALLS


def test_requests_beyond_the_in_flight_limit_wait_for_a_slot(run_tool, server: NetServer) -> None:
    result = run_tool(
        "export default async () => { const all = [];"
        f" for (let i = 0; i < {2 * MAX_FETCHES_IN_FLIGHT}; i += 1)"
        f"  all.push(fetch('{server.url('/slow?ms=300')}').then((r) => r.text()));"
        " return Promise.all(all); };",
        permissions=NET,
        timeout_ms=30000,
    )
    assert result.output == ["ok"] * (2 * MAX_FETCHES_IN_FLIGHT), result.to_json()
    assert server.httpd.max_active <= MAX_FETCHES_IN_FLIGHT


def test_a_forged_request_beyond_the_in_flight_limit_is_refused(
    run_tool, server: NetServer
) -> None:
    """The tool writes request frames itself (bodies never completed, so they stay open) and
    reads the parent's answers from its pipe."""
    frames = "".join(
        json.dumps(
            {
                "type": "fetch",
                "id": i,
                "url": server.url(),
                "method": "POST",
                "headers": [],
                "redirect": "follow",
                "body": True,
            }
        )
        + "\n"
        for i in range(1, MAX_FETCHES_IN_FLIGHT + 2)
    )
    body = (
        "import fs from 'node:fs'; export default () => {"
        f" fs.writeSync(Number(process.argv[3]), {json.dumps(frames)});"
        " const b = Buffer.alloc(65536); const n = fs.readSync(Number(process.argv[2]), b, 0, 65536, null);"
        " return b.toString('utf8', 0, n).trim().split('\\n').map((l) => JSON.parse(l)); };"
    )
    result = run_tool(body, permissions=NET)
    assert result.ok, result.to_json()
    (answer,) = result.output
    assert answer["id"] == MAX_FETCHES_IN_FLIGHT + 1
    assert answer["error"]["code"] == "ERR_SPLICE_FETCH_LIMIT"
    assert server.seen == []


def test_request_bodies_are_limited_in_the_host_and_in_the_parent(
    run_tool, server: NetServer
) -> None:
    chunk = "A" * (4 * ((FETCH_CHUNK_BYTES + 2) // 3))
    forged = (
        json.dumps(
            {
                "type": "fetch",
                "id": 1,
                "url": server.url(),
                "method": "POST",
                "headers": [],
                "redirect": "follow",
                "body": True,
            }
        )
        + "\n"
        + (json.dumps({"type": "fetch-body", "id": 1, "data": chunk}) + "\n") * 17
    )
    body = (
        "import fs from 'node:fs'; export default async () => {"
        " let host; try { await fetch('" + server.url() + "', { method: 'POST',"
        "  body: new Uint8Array(4 * 1024 * 1024 + 1) }); host = 'sent'; }"
        " catch (e) { host = e.cause?.code ?? e.message; }"
        f" fs.writeSync(Number(process.argv[3]), {json.dumps(forged)});"
        " const b = Buffer.alloc(65536); const n = fs.readSync(Number(process.argv[2]), b, 0, 65536, null);"
        " return { host, parent: JSON.parse(b.toString('utf8', 0, n).split('\\n')[0]).error.code }; };"
    )
    result = run_tool(body, permissions=NET, timeout_ms=30000)
    assert result.output == {
        "host": "ERR_SPLICE_REQUEST_TOO_LARGE",
        "parent": "ERR_SPLICE_REQUEST_TOO_LARGE",
    }, result.to_json()
    assert server.seen == []


def test_bodies_stream_both_ways(run_tool, server: NetServer) -> None:
    result = run_tool(
        "export default async () => {"
        " const parts = ['a'.repeat(300000), 'b'.repeat(300000), 'c'];"
        " const upload = new ReadableStream({ pull(c) { const p = parts.shift();"
        "  if (p === undefined) c.close(); else c.enqueue(new TextEncoder().encode(p)); } });"
        f" const echo = await (await fetch('{server.url()}', {{ method: 'PUT', body: upload, duplex: 'half' }})).json();"
        f" const r = await fetch('{server.url('/big?bytes=3000000')}');"
        " const reader = r.body.getReader(); const sizes = [];"
        " for (;;) { const s = await reader.read(); if (s.done) break; sizes.push(s.value.byteLength);"
        "  if (!(s.value instanceof Uint8Array) || s.value.buffer.byteLength !== s.value.byteLength) return 'shared'; }"
        " return { uploaded: echo.body.length, sizes: sizes.length, max: Math.max(...sizes),"
        "  total: sizes.reduce((a, b) => a + b, 0) }; };",
        permissions=NET,
        timeout_ms=30000,
    )
    output = result.output
    assert output["uploaded"] == 600001, result.to_json()
    assert output["total"] == 3000000 and output["max"] <= FETCH_CHUNK_BYTES
    assert output["sizes"] >= 3000000 // FETCH_CHUNK_BYTES


def test_cancel_and_abort_free_the_request(run_tool, server: NetServer) -> None:
    result = run_tool(
        "export default async () => { const out = {};"
        f" const big = '{server.url('/big?bytes=8000000')}';"
        " const opened = [];"
        f" for (let i = 0; i < {MAX_FETCHES_IN_FLIGHT}; i += 1) opened.push(await fetch(big));"
        " for (const r of opened) { const rd = r.body.getReader(); await rd.read(); await rd.cancel(); }"
        f" out.after = (await (await fetch('{server.url()}')).json()).method;"
        " const c = new AbortController(); const r = await fetch(big, { signal: c.signal });"
        " const rd = r.body.getReader(); await rd.read(); c.abort();"
        " try { for (;;) { if ((await rd.read()).done) break; } out.aborted = 'finished'; }"
        " catch (e) { out.aborted = e.name; }"
        f" out.last = (await (await fetch('{server.url()}')).json()).method; return out; }};",
        permissions=NET,
        timeout_ms=30000,
    )
    assert result.output == {"after": "GET", "aborted": "AbortError", "last": "GET"}, (
        result.to_json()
    )


def test_the_ids_a_call_can_make_the_parent_keep_are_bounded() -> None:
    """A tool can write fetch requests to its pipe itself, as fast as it likes (the real
    host stops at the limit, a tool's own frames do not): the parent keeps the ids of the
    first ``MAX_FETCH_CALLS`` only, and refuses every other with the limit's code."""
    import time

    from splice_build.runtime.fetch_channel import FetchChannel
    from splice_build.runtime.protocol import FetchRequest

    channel = FetchChannel(
        patterns=["example.com"], post=lambda frame: None, deadline=time.monotonic() + 60
    )
    answers = [
        channel.handle(FetchRequest(i, "https://undeclared.test/", "GET", (), "follow", False))
        for i in range(20 * MAX_FETCH_CALLS)
    ]
    assert all(len(frames) == 1 for frames in answers)
    limited = [json.loads(frames[0]) for frames in answers[MAX_FETCH_CALLS:]]
    assert {frame["error"]["code"] for frame in limited} == {"ERR_SPLICE_FETCH_LIMIT"}
    assert len(channel._used_ids) == MAX_FETCH_CALLS


def _frame(kind: str, rid: int, url: str, *, body: bool = False) -> str:
    if kind == "fetch":
        fields = {"url": url, "method": "POST", "headers": [], "redirect": "follow", "body": body}
        return json.dumps({"type": "fetch", "id": rid, **fields}) + "\n"
    if kind == "fetch-body":
        return json.dumps({"type": "fetch-body", "id": rid, "data": "eA=="}) + "\n"
    return json.dumps({"type": kind, "id": rid}) + "\n"


@pytest.mark.parametrize("with_body", [False, True], ids=["no body", "with body"])
def test_a_request_is_sent_once_whatever_frames_follow_it(
    run_tool, server: NetServer, with_body: bool
) -> None:
    """A tool that writes its own frames after a request's head (ends of a body it never
    announced, ends and chunks after the end) still gets exactly one request sent, and no
    worker of the parent outlives the call."""
    import threading
    import time

    url = server.url()
    tail = "".join(_frame(kind, 7, url) for kind in ("fetch-body-end", "fetch-body") * 100)
    frames = _frame("fetch", 7, url, body=with_body)
    if with_body:
        frames += _frame("fetch-body", 7, url) + _frame("fetch-body-end", 7, url)
    body = (
        "import fs from 'node:fs'; export default async () => {"
        f" fs.writeSync(Number(process.argv[3]), {json.dumps(frames + tail)});"
        " await new Promise((r) => setTimeout(r, 1500)); return 'done'; };"
    )
    result = run_tool(body, permissions=NET, timeout_ms=10000)
    assert result.ok, result.to_json()
    assert len(server.seen) == 1, server.seen
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(
        t.name.startswith("splice-fetch_") for t in threading.enumerate()
    ):
        time.sleep(0.05)
    assert [t.name for t in threading.enumerate() if t.name.startswith("splice-fetch_")] == []
