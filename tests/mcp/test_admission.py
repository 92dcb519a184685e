"""Admission control (docs/mcp.md#admission-control) on the real HTTP and stdio transports.

The server runs with ``SPLICE_MCP_MAX_CALLS=1``; ``demo_echo_wait`` blocks until the file it
names exists, so the test decides when the running call ends. Nothing here measures time:
"waits" means "has no answer yet while another call has the slot", checked by the order of
events the test controls.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from splice_build.mcp.admission import SERVER_BUSY
from testing.mcp_clients import (
    DEMO_TOKEN,
    QUEUE_LOG,
    LineClient,
    Response,
    child_env,
    demo_argv,
    http_server,
    post,
    sdk_http,
)

HEADERS = {
    "Authorization": f"Bearer {DEMO_TOKEN}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def one_slot(tmp_path: Path) -> dict[str, str]:
    """A demo server's environment: one slot, its queue logged (``Placed.start``)."""
    return child_env({"SPLICE_MCP_MAX_CALLS": "1", QUEUE_LOG: str(tmp_path / "queue.log")})


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with http_server(demo_argv("http", "0"), env=one_slot(tmp_path)) as (address, _process):
        yield address


def wait_call(
    path: Path, call_id: Any, log: Path | None = None, started: Path | None = None
) -> bytes:
    arguments = {"path": str(path), "id": call_id}
    if log is not None:
        arguments["log"] = str(log)
    if started is not None:
        arguments["started"] = str(started)
    params = {"name": "demo_echo_wait", "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}
    ).encode()


class Caller(threading.Thread):
    """One HTTP request in its own thread; ``response`` once it is answered."""

    def __init__(
        self,
        url: str,
        body: bytes,
        session: str,
        forwarded: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.url, self.body, self.session, self.forwarded = url, body, session, forwarded
        self.source = source
        self.response: Response | None = None

    def run(self) -> None:
        headers = dict(HEADERS)
        if self.session:
            headers["mcp-session-id"] = self.session
        if self.forwarded is not None:
            headers["X-Forwarded-For"] = self.forwarded
        try:
            self.response = post(self.url, self.body, headers, self.source)
        except ConnectionError:
            self.response = None  # the server stopped at teardown with this call queued


def ping(url: str) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": "p", "method": "ping"}).encode()
    return post(url, body, HEADERS).json()


def until(condition: Any) -> None:
    """Poll (not a timing assertion: only a bound on a wait that must end)."""
    for _ in range(3000):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("condition never held")


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


class Placed:
    """Calls to a server started with ``one_slot(tmp_path)``, each sent once the one before
    it has its place: running, waiting in the queue, or answered (refused). The server
    logs each call entering its queue (testing/mcp_clients.py ``QUEUE_LOG``) and each
    ``wait_call`` names ``started``; no call is ordered by a moment."""

    def __init__(self, url: str, tmp_path: Path) -> None:
        self.url, self.queue, self.started = url, tmp_path / "queue.log", tmp_path / "started"

    def start(self, caller: Caller) -> str:
        """``caller`` started; ``"running"``, ``"queued"`` or ``"answered"`` once it is."""
        queued, running = _lines(self.queue), _lines(self.started)
        caller.start()
        until(
            lambda: (
                caller.response is not None
                or (_lines(self.queue), _lines(self.started)) != (queued, running)
            )
        )
        if _lines(self.queue) > queued:
            return "queued"
        return "running" if _lines(self.started) > running else "answered"

    def call(
        self, release: Path, name: str, session: str = "", log: Path | None = None, **kwargs: Any
    ) -> tuple[Caller, str]:
        """A call that waits for ``release``, started and placed (``start``)."""
        caller = Caller(self.url, wait_call(release, name, log, self.started), session, **kwargs)
        return caller, self.start(caller)


def busy_refusals(placed: Placed, tmp_path: Path, session: str, count: int) -> list[Response]:
    """Send ``count`` calls that never end by themselves, one placed after the other; the
    answers of those answered at once, and the others are all queued."""
    refused = []
    for index in range(count):
        caller, place = placed.call(tmp_path / f"never-{session}-{index}", f"{session}-{index}")
        assert place in ("queued", "answered")
        if caller.response is not None:
            refused.append(caller.response)
    return refused


def test_second_call_waits_and_calls_beyond_the_queue_get_503(url: str, tmp_path: Path) -> None:
    placed = Placed(url, tmp_path)
    first_release = tmp_path / "first"
    first, place = placed.call(first_release, "first", "a")
    assert place == "running"
    # The first call holds the only slot; a ping is not a tool call and is still answered.
    assert ping(url)["result"] == {}
    second_release = tmp_path / "second"
    second_release.touch()  # the second call could finish at once if it ran
    second, place = placed.call(second_release, "second", "b")
    assert place == "queued"  # behind the first call
    assert ping(url)["result"] == {}
    assert second.response is None
    # Session "a" floods from the same address as "b": one address may fill the whole queue
    # (8 calls: "b"'s and seven of "a"'s), then "a" is refused (it cannot push itself out).
    refused = busy_refusals(placed, tmp_path, "a", 9)
    assert len(refused) == 2
    response = refused[0]
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": SERVER_BUSY, "message": "Server busy", "data": {"retryAfter": 1}},
    }
    first_release.touch()
    second.join(60)
    first.join(60)
    assert second.response is not None and second.response.status_code == 200
    assert json.loads(second.response.json()["result"]["content"][0]["text"])["released"]
    assert first.response is not None and first.response.status_code == 200
    # The flood's calls end too: the server, stopped with one of them running, waited for it
    # until the fixture killed it (10 s).
    for index in range(9):
        (tmp_path / f"never-a-{index}").touch()


def test_a_flooding_address_does_not_starve_another(url: str, tmp_path: Path) -> None:
    placed = Placed(url, tmp_path)
    release, order = tmp_path / "release", tmp_path / "order"
    holder, place = placed.call(release, "holder", "flood", order, source="127.0.0.2")
    assert place == "running"
    flood = []
    for index in range(2):  # the flooding address's whole share of the queue
        caller, place = placed.call(release, f"flood-{index}", "flood", order, source="127.0.0.2")
        assert place == "queued"
        flood.append(caller)
    other, place = placed.call(release, "other", "other", order, source="127.0.0.3")
    assert place == "queued"
    assert other.response is None and all(caller.response is None for caller in flood)
    release.touch()
    for caller in [holder, other, *flood]:
        caller.join(60)
        assert caller.response is not None and caller.response.status_code == 200
    # Round-robin: the flood's queued calls alternate with the other address's call.
    assert order.read_text().split() == ["holder", "flood-0", "other", "flood-1"]


def test_rotating_session_ids_earns_a_flooder_no_room(url: str, tmp_path: Path) -> None:
    """The review's attack: a flooder sends every call under a new ``mcp-session-id`` and
    fills the queue. Another address's call then pushes out the flooder's newest waiting
    call and waits for its turn instead of being refused."""
    release, started = tmp_path / "release", tmp_path / "started"
    holder_call = wait_call(release, "holder", started=started)
    holder = Caller(url, holder_call, uuid.uuid4().hex, source="127.0.0.2")
    holder.start()
    until(started.exists)  # it runs: each later call waits or is refused
    flood = []
    for index in range(12):  # more than the whole queue (8)
        body = wait_call(release, f"flood-{index}")
        caller = Caller(url, body, uuid.uuid4().hex, source="127.0.0.2")
        caller.start()
        flood.append(caller)

    def refused() -> int:
        return sum(c.response is not None and c.response.status_code == 503 for c in flood)

    # Refusals only grow: four means all twelve arrived, eight queued (the whole queue).
    until(lambda: refused() >= 4)
    assert refused() == 4
    victim = Caller(url, wait_call(release, "victim"), "victim", source="127.0.0.3")
    victim.start()
    until(lambda: refused() > 4 or victim.response is not None)
    assert victim.response is None  # waiting for its turn, not refused
    assert refused() == 5  # it pushed out the flooder's newest waiting call
    release.touch()
    victim.join(60)
    assert victim.response is not None and victim.response.status_code == 200
    holder.join(60)
    for caller in flood:
        caller.join(60)
    statuses = sorted(c.response.status_code for c in flood if c.response is not None)
    assert statuses == [200] * 7 + [503] * 5  # one more pushed out by the victim


@pytest.mark.parametrize(
    "proxy", ["127.0.0.1", "::ffff:127.0.0.1", None], ids=["trusted", "mapped", "untrusted"]
)
def test_behind_a_trusted_proxy_a_client_without_session_is_queued_by_its_address(
    proxy: str | None, tmp_path: Path
) -> None:
    """Calls without ``mcp-session-id`` are queued by client address; ``X-Forwarded-For``
    names it only from a ``--trusted-proxy`` peer (here the test itself, on 127.0.0.1, also
    when named as the IPv4-mapped address a dual-stack socket shows for it)."""
    trusted = proxy is not None
    argv = demo_argv("http", "0", *([proxy] if proxy else []))
    with http_server(argv, env=one_slot(tmp_path)) as (url, _process):
        placed = Placed(url, tmp_path)
        call = partial(placed.call, tmp_path / "release")

        calls = [call(f"a{i}", forwarded="10.0.0.1") for i in range(9)]
        # one runs, eight fill the queue
        assert [place for _, place in calls] == ["running"] + ["queued"] * 8
        refused, place = call("a9", forwarded="10.0.0.1")
        assert place == "answered" and refused.response is not None
        assert refused.response.status_code == 503
        other, place = call("b0", forwarded="10.0.0.2")
        if trusted:  # another address: pushes out a's newest call and waits its turn
            assert place == "queued"
            pushed_out = calls.pop()[0]
            pushed_out.join(60)
            assert pushed_out.response is not None and pushed_out.response.status_code == 503
        else:  # the header is ignored: one peer, one address, the queue already full
            assert place == "answered"
            assert other.response is not None and other.response.status_code == 503
        (tmp_path / "release").touch()
        for caller, _ in calls:
            caller.join(60)
            assert caller.response is not None and caller.response.status_code == 200
        other.join(60)


def test_an_ipv6_client_rotating_addresses_of_its_64_is_one_address(tmp_path: Path) -> None:
    """An IPv6 host has a /64 of source addresses: its calls share one queue whatever
    address of it they come from, and another /64 still pushes out (client_address.client_key)."""
    argv = demo_argv("http", "0", "127.0.0.1")
    with http_server(argv, env=one_slot(tmp_path)) as (url, _process):
        placed = Placed(url, tmp_path)
        call = partial(placed.call, tmp_path / "release")

        calls = [call(f"a{i}", forwarded=f"2001:db8::{i + 1:x}") for i in range(9)]
        assert [place for _, place in calls] == ["running"] + ["queued"] * 8
        rotated, place = call("a9", forwarded="2001:db8::ffff:1")  # a fresh address, same /64
        assert place == "answered" and rotated.response is not None
        assert rotated.response.status_code == 503
        other, place = call("b0", forwarded="2001:db8:0:1::1")  # the next /64: pushes out
        assert place == "queued"
        newest = calls.pop()[0]
        newest.join(60)
        assert newest.response is not None and newest.response.status_code == 503
        (tmp_path / "release").touch()
        for caller in [*(caller for caller, _ in calls), other]:
            caller.join(60)
            assert caller.response is not None and caller.response.status_code == 200


def test_sdk_client_gets_a_session_id_and_is_served(url: str) -> None:
    async def scenario() -> None:
        async with sdk_http(url, DEMO_TOKEN) as session:
            called = await session.call_tool("demo_echo_echo", {"text": "admitted"})
            assert called.structured_content == {"echo": {"text": "admitted"}}

    anyio.run(scenario)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    response = post(url, json.dumps(init).encode(), HEADERS)
    assert len(response.headers["mcp-session-id"]) >= 16


def test_a_tools_call_notification_takes_no_slot(url: str, tmp_path: Path) -> None:
    """A notification naming ``tools/call`` runs nothing and is answered nothing: it is
    answered 202 at once while every slot is held, and a 2025-03-26 batch holding one next
    to a call holds one call. Before, it waited in the queue behind the running call (up to
    10 s, then 503 "Server busy"), and the batch was refused "Batch of more than one
    tools/call"."""
    placed = Placed(url, tmp_path)
    release = tmp_path / "release"
    holder, place = placed.call(release, "holder")
    assert place == "running"
    echo = {"name": "demo_echo_echo", "arguments": {"text": "x"}}
    note = {"jsonrpc": "2.0", "method": "tools/call", "params": echo}
    notified = Caller(url, json.dumps(note).encode(), "a")
    assert placed.start(notified) == "answered"
    assert notified.response is not None and notified.response.status_code == 202
    release.touch()
    holder.join(60)
    batch = [{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": echo}, note]
    answered = post(url, json.dumps(batch).encode(), HEADERS)
    assert answered.status_code == 200
    (item,) = answered.json()  # 2025-03-26: the output is the text alone
    assert (item["id"], json.loads(item["result"]["content"][0]["text"])) == (
        7,
        {"echo": echo["arguments"]},
    )


def test_stdio_runs_one_call_at_a_time_and_queues_the_next(tmp_path: Path) -> None:
    client = LineClient(demo_argv("stdio"), env=child_env({"SPLICE_MCP_MAX_CALLS": "1"}))
    try:
        first_release, second_release = tmp_path / "first", tmp_path / "second"
        second_release.touch()
        for call_id, path in (("first", first_release), ("second", second_release)):
            client.send(wait_call(path, call_id) + b"\n")
        client.request({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        # The ping is answered first: the second call (free to finish) waits for the slot.
        assert client.receive()["id"] == "p"
        first_release.touch()
        assert [client.receive()["id"] for _ in range(2)] == ["first", "second"]
    finally:
        client.close()


def test_admission_queue_bounds_round_robin_and_deadline() -> None:
    """``AsyncAdmission`` itself: per-key and total bounds, round-robin hand-over, deadline."""
    import asyncio

    from splice_build.mcp.admission import AsyncAdmission, Busy

    async def scenario() -> None:
        admission = AsyncAdmission(1, queue=4, per_address=2, wait_seconds=30)
        served: list[str] = []
        await admission.acquire("a")  # runs
        waiters = []
        for name, key in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("c1", "c")):

            async def wait(name: str = name, key: str = key) -> None:
                await admission.acquire(key)
                served.append(name)
                admission.release()

            waiters.append(asyncio.create_task(wait()))
            await asyncio.sleep(0)
        with pytest.raises(Busy):
            await admission.acquire("a", "another session")  # "a" has its two queued
        with pytest.raises(Busy):
            await admission.acquire("b")  # full, and no address holds more than b would
        # Full, but "a" holds two: "d" pushes out a's newest waiting call.
        waiters.append(asyncio.create_task(admission.acquire("d")))
        await asyncio.sleep(0)
        admission.release()
        outcomes = await asyncio.gather(*waiters, return_exceptions=True)
        assert isinstance(outcomes[1], Busy)  # a2, pushed out
        assert served == ["a1", "b1", "c1"]
        admission.release()  # d's call ends
        assert (admission.running, admission.waiting) == (0, 0)
        short = AsyncAdmission(1, wait_seconds=0.01)
        await short.acquire("x")
        with pytest.raises(Busy):
            await short.acquire("y")  # waited past its deadline
        assert short.waiting == 0
        short.release()
        await short.acquire("y")  # the slot is free again

    asyncio.run(scenario())


def test_admission_takes_addresses_then_their_sessions_in_turn() -> None:
    """Round-robin at two levels: addresses first, then the sessions of each address; the
    bound is the address's, whatever sessions its calls name."""
    import asyncio

    from splice_build.mcp.admission import AsyncAdmission, Busy

    async def scenario() -> None:
        admission = AsyncAdmission(1, queue=16, per_address=4, wait_seconds=30)
        served: list[str] = []
        await admission.acquire("a", "s1")  # runs
        waiters = []
        calls = [("a", "s1"), ("a", "s1"), ("a", "s1"), ("a", "s2"), ("b", "t1"), ("b", "t1")]
        for index, (address, session) in enumerate(calls):

            async def wait(address: str = address, session: str = session, n: int = index) -> None:
                await admission.acquire(address, session)
                served.append(f"{address}/{session}#{n}")
                admission.release()

            waiters.append(asyncio.create_task(wait()))
            await asyncio.sleep(0)
        with pytest.raises(Busy):
            await admission.acquire("a", "a brand-new session")  # "a" holds its four
        admission.release()
        await asyncio.gather(*waiters)
        assert served == ["a/s1#0", "b/t1#4", "a/s2#3", "b/t1#5", "a/s1#1", "a/s1#2"]
        assert (admission.running, admission.waiting) == (0, 0)

    asyncio.run(scenario())


def test_one_address_may_fill_the_queue_until_another_needs_room() -> None:
    """Clients behind one address keep the slots busy (the whole queue is theirs while nobody
    else waits); a call from another address then pushes out their newest waiting call, and
    is served before their older ones (round-robin)."""
    import asyncio

    from splice_build.mcp.admission import AsyncAdmission, Busy

    async def scenario() -> None:
        admission = AsyncAdmission(1, queue=4, wait_seconds=30)
        served: list[str] = []
        await admission.acquire("proxy")  # runs

        async def call(address: str, name: str) -> None:
            await admission.acquire(address)
            served.append(name)
            admission.release()

        flood = [asyncio.create_task(call("proxy", f"p{n}")) for n in range(4)]
        await asyncio.sleep(0)
        assert admission.waiting == 4  # the whole queue, one address
        victim = asyncio.create_task(call("victim", "v"))
        await asyncio.sleep(0)
        assert admission.waiting == 4
        admission.release()
        outcomes = await asyncio.gather(*flood, victim, return_exceptions=True)
        assert isinstance(outcomes[3], Busy)  # p3, the newest, pushed out
        assert [o for i, o in enumerate(outcomes) if i != 3] == [None] * 4
        assert served == ["p0", "v", "p1", "p2"]
        assert (admission.running, admission.waiting) == (0, 0)

    asyncio.run(scenario())


@pytest.mark.parametrize("gives_up", ["deadline", "cancelled"])
def test_a_call_pushed_out_as_it_gives_up_frees_no_slot(gives_up: str) -> None:
    """A waiting call is pushed out in the turn of the loop in which it stops waiting (its
    deadline passes, or its task is cancelled): it held no slot, so none is handed on. Before,
    the call that gave up released one, and the next waiting call ran beside the one holding
    the only slot; the count stayed one short for as long as the server lived (a real
    ``splice mcp --http`` with one slot ran every queued call beside a blocked one). The loop's
    clock is the test's: the deadline passes when the test says so, never by waiting."""
    import asyncio

    from splice_build.mcp.admission import AsyncAdmission, Busy

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        clock = [loop.time()]
        loop.time = lambda: clock[0]  # type: ignore[method-assign]
        admission = AsyncAdmission(1, queue=2, wait_seconds=10)
        await admission.acquire("holder")  # runs until the test releases it
        served: list[str] = []

        async def call(address: str) -> None:
            await admission.acquire(address)
            served.append(address)

        first, newest = asyncio.create_task(call("a")), asyncio.create_task(call("a"))
        await asyncio.sleep(0)
        assert admission.waiting == 2  # the queue is full, "a" holds both
        pushers: list[asyncio.Task[None]] = []
        if gives_up == "deadline":
            # "b" comes in the turn in which both deadlines pass; it runs in the next, first.
            loop.call_soon(lambda: pushers.append(asyncio.create_task(call("b"))))
            clock[0] += 11
        else:
            pushers.append(asyncio.create_task(call("b")))  # runs before the cancelled call
            newest.cancel()
        outcome = (await asyncio.gather(newest, return_exceptions=True))[0]
        assert isinstance(outcome, Busy if gives_up == "deadline" else asyncio.CancelledError)
        first.cancel()  # timed out too, or its client leaves now: it only waited
        await asyncio.gather(first, return_exceptions=True)
        for _ in range(10):
            await asyncio.sleep(0)
        assert served == []  # "b" waits: the holder still has the only slot
        assert (admission.running, admission.waiting) == (1, 1)
        admission.release()  # the holder's call ends: "b" runs
        await pushers[0]
        assert served == ["b"]
        admission.release()
        assert (admission.running, admission.waiting) == (0, 0)

    asyncio.run(scenario())


def test_requests_are_answered_while_as_many_calls_run_as_the_pool_has_threads(
    tmp_path: Path,
) -> None:
    """With N = 40 (the default on a machine of 40 cores), 40 calls run at once: before, they
    took all 40 threads of the pool that answers every request, and a ping, an initialize, a
    tools/list got no answer until one of them ended (here: until the calls gave up waiting,
    unreleased, 60 s later). Admitted calls now have threads of their own."""
    threads = 40  # anyio's default thread limiter, which Starlette's run_in_threadpool takes
    env = child_env({"SPLICE_MCP_MAX_CALLS": str(threads)})
    release, started = tmp_path / "release", tmp_path / "started"
    with http_server(demo_argv("http", "0"), env=env) as (address, _process):
        parts = urlsplit(address)

        def send(body: bytes) -> http.client.HTTPConnection:
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            connection.request("POST", parts.path, body=body, headers=HEADERS)
            return connection

        calls = []
        for index in range(threads):
            params = {
                "name": "demo_echo_wait",
                "arguments": {"path": str(release), "started": str(started), "id": index},
            }
            body = {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}
            calls.append(send(json.dumps(body).encode()))
        deadline = time.monotonic() + 60  # a bound on a wait that must end, not a measure
        while time.monotonic() < deadline and (
            not started.exists() or len(started.read_text().splitlines()) < threads
        ):
            time.sleep(0.01)
        assert len(started.read_text().splitlines()) == threads  # all of them run now
        ping = send(json.dumps({"jsonrpc": "2.0", "id": "ping", "method": "ping"}).encode())
        try:
            answered = ping.getresponse()
            assert (answered.status, json.loads(answered.read())["result"]) == (200, {})
        finally:
            release.touch()
            ping.close()
        for connection in calls:  # each ran until the release, after the ping's answer
            result = json.loads(connection.getresponse().read())["result"]
            assert json.loads(result["content"][0]["text"])["released"] is True, result
            connection.close()
