"""stdio framing and behaviour: unit tests of the line splitter, then a real server process."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from splice_build.mcp.admission import MAX_CALLS_ENV
from splice_build.mcp.transport.stdio import CHUNK_BYTES, OVERSIZE, iter_lines
from testing.mcp_clients import LineClient, child_env, demo_argv, rss_kib, sdk_stdio

MIB = 1024 * 1024


class Trickle(io.RawIOBase):
    """A stream that hands out at most ``step`` bytes per read, like a pipe."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = data
        self._step = step
        self._pos = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        chunk = self._data[
            self._pos : self._pos + min(self._step, size if size > 0 else self._step)
        ]
        self._pos += len(chunk)
        return chunk


@pytest.mark.parametrize("step", [1, 3, 7, 64 * 1024])
def test_lines_split_across_reads_and_oversize_discarded(step: int) -> None:
    data = b'{"a":1}\n' + b"x" * 50 + b"\n" + "é€😀".encode() + b"\nlast"
    lines = list(iter_lines(Trickle(data, step), limit=20))
    assert lines == [b'{"a":1}', OVERSIZE, "é€😀".encode(), b"last"]


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_limit_counts_utf8_bytes(text: str, limit: int) -> None:
    # "é" is one character and one UTF-16 unit but two bytes: only bytes count.
    line = text.replace("\n", "").encode("utf-8", "surrogatepass")
    kept = line.removesuffix(b"\r")  # a line's trailing "\r" is dropped, never counted
    expected = [kept] if len(kept) <= limit else [OVERSIZE]
    assert list(iter_lines(io.BytesIO(line + b"\n"), limit=limit)) == expected


@pytest.mark.parametrize("step", [1, 5, 64 * 1024])
def test_a_crlf_line_of_exactly_the_limit_is_kept(step: int) -> None:
    at_limit, over = b"x" * 20, b"y" * 21
    data = at_limit + b"\r\n" + over + b"\r\n" + at_limit + b"\r"
    assert list(iter_lines(Trickle(data, step), limit=20)) == [at_limit, OVERSIZE, at_limit]


class Accents(io.RawIOBase):
    """``total`` bytes of ``é`` then a newline, produced chunk by chunk like a pipe."""

    def __init__(self, total: int) -> None:
        self.left = total
        self.ended = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.left == 0:
            if self.ended:
                return b""
            self.ended = True
            return b"\n"
        step = min(self.left, size if size > 0 else CHUNK_BYTES)
        self.left -= step
        return "é".encode() * (step // 2)


def test_a_multibyte_line_is_never_buffered_past_the_limit_and_a_chunk() -> None:
    # 12 MiB of "é" is 6 Mi characters: counting characters would hold 8 MiB before the cut.
    tracemalloc.start()
    try:
        assert list(iter_lines(Accents(12 * MIB), limit=4 * MIB)) == [OVERSIZE]
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MIB + 4 * CHUNK_BYTES, peak


def test_oversize_line_at_end_of_stream() -> None:
    assert list(iter_lines(io.BytesIO(b"y" * 100), limit=10)) == [OVERSIZE]


# -- the real process ------------------------------------------------------------------------
def initialize(client: LineClient) -> None:
    client.request(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
    )
    assert client.receive()["result"]["protocolVersion"] == "2025-06-18"


@pytest.fixture
def client() -> Any:
    line_client = LineClient(demo_argv("stdio"), env=child_env())
    yield line_client
    if line_client.process.poll() is None:
        line_client.process.kill()
        line_client.process.wait()


def test_a_message_of_exactly_4_mib_with_crlf_is_answered(client: LineClient) -> None:
    """The limit is 4 MiB of message: the newline and a ``\\r`` before it are not counted."""
    head, tail = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"', b'"}}'
    message = head + b"a" * (4 * MIB - len(head) - len(tail)) + tail
    assert len(message) == 4 * MIB
    client.send(message + b"\r\n")
    assert client.receive(timeout=60) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    client.send(message[:-1] + b" }\r\n")  # one byte more: too large
    assert client.receive(timeout=60)["error"] == {"code": -32600, "message": "Message too large"}


def test_a_request_with_a_null_id_is_refused_and_never_runs(
    client: LineClient, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    params = {"name": "demo_echo_marker", "arguments": {"path": str(marker)}}
    client.request({"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": params})
    assert client.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid Request"},
    }
    client.request({"jsonrpc": "2.0", "id": 1, "method": "ping"})  # answered after it
    assert client.receive()["id"] == 1
    assert not marker.exists()


def test_bom_crlf_blank_lines_and_parse_errors(client: LineClient) -> None:
    client.send(b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n')
    assert client.receive() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    client.send(b"\n\r\n   \n")
    client.send(b"{not json\n")
    assert client.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }
    client.send(b"[1]\n")
    assert client.receive()["error"]["code"] == -32600
    client.send(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')  # no newline before EOF
    code, _out, stderr = client.close()
    assert code == 0
    assert "Traceback" not in stderr


def test_five_mib_line_never_executes_and_memory_stays_flat(
    client: LineClient, tmp_path: Path
) -> None:
    initialize(client)
    marker = tmp_path / "executed"
    # Warm up: one normal call so lazy imports and allocator pools are in place.
    client.request(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "demo_echo_echo", "arguments": {"text": "x" * 100_000}},
        }
    )
    assert client.receive()["result"]["isError"] is False
    time.sleep(0.2)
    before = rss_kib(client.process.pid)
    huge = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "demo_echo_marker",
                "arguments": {"path": str(marker), "pad": "p" * (5 * MIB)},
            },
        }
    ).encode()
    peak = before
    for start in range(0, len(huge), MIB // 4):
        client.send(huge[start : start + MIB // 4])
        peak = max(peak, rss_kib(client.process.pid))
    client.send(b"\n")
    assert client.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Message too large"},
    }
    after = rss_kib(client.process.pid)
    client.request({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert client.receive()["id"] == 3
    assert not marker.exists()
    # The server holds at most one line's limit (4 MiB) while the 5 MiB line streams past,
    # and gives it back once the line is dropped.
    assert peak - before < 5 * 1024, (before, peak, after)  # less than the line itself
    assert after - before < 2 * 1024, (before, peak, after)
    code, _out, stderr = client.close()
    assert code == 0
    assert "[splice mcp] discarded a message longer than" in stderr


def test_stdout_carries_protocol_only(client: LineClient) -> None:
    initialize(client)
    client.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    client.request(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "demo_echo_fail"}}
    )
    _code, out, _err = client.close()
    lines = out.decode().splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == [1, 2]


def test_sdk_client_over_stdio() -> None:
    async def scenario() -> None:
        async with sdk_stdio(demo_argv("stdio"), env=child_env()) as session:
            tools = await session.list_tools()
            assert "demo_echo_echo" in [tool.name for tool in tools.tools]
            called = await session.call_tool("demo_echo_echo", {"text": "hi"})
            assert called.structured_content == {"echo": {"text": "hi"}}
            refused = await session.call_tool("demo_broken_run", {})
            assert refused.is_error
            assert refused.content[0].text.startswith("INSTALLED_PACKAGE_MODIFIED: ")
            resources = await session.list_resources()
            read = await session.read_resource(resources.resources[0].uri)
            assert read.contents[0].text == "# Echo\n\nEchoes.\n"

    anyio.run(scenario)


def test_fifty_concurrent_calls(tmp_path: Path) -> None:
    """Fifty calls, ten at once (the default is one per core: on a one-core machine they
    ran one after another). Each waits for the test's release: ten run together, seen
    as ten lines in ``started``, not as a wall-clock bound, which a loaded machine made the
    server miss whatever it did."""
    env = child_env({MAX_CALLS_ENV: "10"})
    release, started = tmp_path / "release", tmp_path / "started"

    def running() -> int:
        return len(started.read_text().splitlines()) if started.exists() else 0

    async def scenario() -> None:
        async with sdk_stdio(demo_argv("stdio"), env=env) as session:
            results: dict[int, Any] = {}

            async def one(index: int) -> None:
                arguments = {"path": str(release), "started": str(started), "id": index}
                answer = await session.call_tool("demo_echo_wait", arguments)
                results[index] = answer.structured_content

            async with anyio.create_task_group() as group:
                for index in range(50):
                    group.start_soon(one, index)
                with anyio.fail_after(30):  # a bound on a wait that must end, not a measure
                    while running() < 10:
                        await anyio.sleep(0.01)
                assert running() == 10 and results == {}  # ten at once, none answered
                release.touch()
            assert results == {index: {"released": True, "id": index} for index in range(50)}

    anyio.run(scenario)


def test_calls_queued_when_the_client_leaves_never_start(tmp_path: Path) -> None:
    """One call runs (max 1 at once) and three wait behind it; the client closes both pipes
    and then lets the running call finish: the server exits without running the others
    (docs/mcp.md#stdio)."""
    client = LineClient(demo_argv("stdio"), env=child_env({"SPLICE_MCP_MAX_CALLS": "1"}))
    release = tmp_path / "release"

    def call(index: int, name: str, arguments: dict[str, Any]) -> None:
        params = {"name": name, "arguments": arguments}
        client.request({"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params})

    call(0, "demo_echo_wait", {"path": str(release)})
    for index in range(1, 4):
        call(index, "demo_echo_marker", {"path": str(tmp_path / f"marker-{index}")})
    client.request({"jsonrpc": "2.0", "id": "last", "method": "ping"})
    assert client.receive() == {"jsonrpc": "2.0", "id": "last", "result": {}}  # all were read
    assert client.process.stdin is not None and client.process.stdout is not None
    client.process.stdin.close()
    client.process.stdout.close()
    release.touch()
    assert client.process.wait(timeout=60) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["release"]


def test_a_tool_call_spelled_with_escapes_waits_for_its_slot(tmp_path: Path) -> None:
    """``"tools\\/call"`` is a tool call: it takes one of the ``max_calls`` slots (here 1)
    like any other, so the second call starts only once the first has answered."""
    client = LineClient(demo_argv("stdio"), env=child_env({"SPLICE_MCP_MAX_CALLS": "1"}))
    release = tmp_path / "release"
    try:
        for index, name, path in ((1, "wait", release), (2, "marker", tmp_path / "marker")):
            params = json.dumps({"name": f"demo_echo_{name}", "arguments": {"path": str(path)}})
            line = f'{{"jsonrpc":"2.0","id":{index},"method":"tools\\/call","params":{params}}}'
            client.send(line.encode() + b"\n")
        client.request({"jsonrpc": "2.0", "id": "last", "method": "ping"})
        assert client.receive()["id"] == "last"  # both calls were read
        release.touch()
        assert [client.receive()["id"] for _ in range(2)] == [1, 2]
    finally:
        code, _rest, _stderr = client.close()
    assert code == 0


class ReadThenSignalled(io.RawIOBase):
    """stdin that hands out ``data``, then raises as a signal's handler does in a read."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if not self._data:
            raise KeyboardInterrupt  # SIGTERM's Terminated is one (splice_build/cli/errors.py)
        data, self._data = self._data, b""
        return data


def test_a_client_that_reads_no_more_never_holds_the_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that stops reading its stdout filled the pipe, and a SIGTERM then never
    ended ``splice mcp``: the stop waited for the threads writing answers nobody read (shown
    with the real server: still running 20 s after SIGTERM, 2,999 tools/list sent and none
    read). Now no write waits past the grace and the cut (both 0 here)."""
    import os
    import threading

    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server
    from splice_build.mcp.transport.stdio import serve_stdio
    from testing.mcp_memory import MemoryBackend, descriptor, stdio_script

    monkeypatch.setattr("splice_build.stopping.CUT_SECONDS", 0.0)
    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/big", "t", description="x" * 20_000), lambda _: None)
    server = Server(backend, ServerInfo(version="9.9.9"), log=lambda _: None)
    lists = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(1, 12)]
    stdin = ReadThenSignalled(stdio_script(*lists))
    read_end, write_end = os.pipe()  # 64 KiB that nobody reads: 11 answers of 20 KB
    stopped: list[str] = []

    def serve() -> None:
        with open(write_end, "wb", buffering=0) as stdout:
            try:
                serve_stdio(server, stdin, stdout, log=lambda _: None, max_calls=1, grace=0)
            except KeyboardInterrupt:
                stopped.append("stopped")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        thread.join(60)  # a bound for the old code only, which never returned
        assert stopped == ["stopped"]
    finally:
        os.close(read_end)  # the old code's writers fail now, and its threads end
        thread.join()


def test_a_second_signal_while_the_stop_answers_still_cuts_the_running_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stop answers the waiting calls first, which waits for a client slow to read (up
    to the grace and the cut, above): a second SIGTERM or ^C then came out of that step and
    the cut never ran, so a running call went on to its own timeout (60 s by default)."""
    import threading

    from splice_build import cancel
    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server
    from splice_build.mcp.transport.stdio import serve_stdio
    from testing.mcp_memory import MemoryBackend, call_request, descriptor, stdio_script

    started, cut = threading.Event(), []

    def hang(_: object) -> None:
        ended = threading.Event()
        cancel.current().on_cancel(ended.set)
        started.set()
        cut.append(ended.wait(30))  # a bound for the old code only, which never cut it

    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/hang", "t"), hang)
    server = Server(backend, ServerInfo(version="9.9.9"), log=lambda _: None)
    begin = server.begin_stop

    def interrupted(grace: float) -> None:
        begin(grace)
        raise KeyboardInterrupt  # the second signal

    monkeypatch.setattr(server, "begin_stop", interrupted)

    class Stdin(ReadThenSignalled):
        def read(self, size: int = -1) -> bytes:
            data = super().read(size) if self._data else b""
            if not data:
                started.wait(30)
                raise KeyboardInterrupt
            return data

    stdin = Stdin(stdio_script(call_request("acme_hang_t")))
    with pytest.raises(KeyboardInterrupt):
        serve_stdio(server, stdin, io.BytesIO(), log=lambda _: None, max_calls=1, grace=0)
    assert cut == [True]


def test_a_signal_that_cuts_an_answer_short_costs_that_answer_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second SIGTERM while the stop answered a large batch "Server stopping" (written a
    piece at a time) left that answer cut short, and the running call's answer went onto
    the end of it: the client could read neither (shown with a real signal and a slow
    reader). Now the next answer starts a line of its own. Here the signal's exception is
    raised right after the batch answer's first piece."""
    import os
    import threading

    from splice_build import cancel
    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server
    from splice_build.mcp.transport.stdio import serve_stdio
    from testing.mcp_memory import MemoryBackend, descriptor, stdio_script

    started = threading.Event()

    def hang(_: object) -> None:
        ended = threading.Event()
        cancel.current().on_cancel(ended.set)
        started.set()
        ended.wait(30)

    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/hang", "t"), hang)
    server = Server(backend, ServerInfo(version="9.9.9"), log=lambda _: None)
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "acme_hang_t"}}
    batch = [{**call, "id": f"{i}-{'x' * 100}"} for i in range(100)]  # answered in pieces

    class Stdin(ReadThenSignalled):
        def read(self, size: int = -1) -> bytes:
            data = super().read(size) if self._data else b""
            if not data:
                started.wait(30)
                raise KeyboardInterrupt  # the stop's signal
            return data

    read_end, write_end = os.pipe()
    real_write, cut_short = os.write, []

    def write(fd: int, data: bytes) -> int:
        written = real_write(fd, data)
        if fd == write_end and bytes(data[:2]) == b"[{" and not cut_short:
            cut_short.append(written)
            raise KeyboardInterrupt  # the second signal, between two pieces
        return written

    monkeypatch.setattr(os, "write", write)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(os.fdopen(read_end, "rb").read()))
    reader.start()
    stdin = Stdin(stdio_script({**call, "id": 1}, batch))
    with open(write_end, "wb", buffering=0) as stdout, pytest.raises(KeyboardInterrupt):
        serve_stdio(server, stdin, stdout, log=lambda _: None, max_calls=1, grace=0)
    reader.join()
    # Each answer is written by its own thread: on a loaded machine the initialize answer
    # came last (CI), so the lines are told apart by what they hold, not by their order.
    lines = received[0].splitlines()
    cut = [line for line in lines if line.startswith(b"[{")]
    whole = [json.loads(line) for line in lines if not line.startswith(b"[{")]
    assert cut_short and len(lines) == 3 and len(cut) == 1  # the cut one, a line of its own
    assert any("serverInfo" in answer.get("result", {}) for answer in whole)  # initialize's
    assert {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32003, "message": "Server stopping", "data": {"retryAfter": 1}},
    } in whole


def test_a_signal_once_stdin_ended_still_stops_the_running_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client stops its server by closing stdin, then sending SIGTERM when it has not
    exited (MCP's stdio shutdown). The server waited for the running calls in its pools'
    exits, out of the stop's reach, and a signal raised into a thread's join marks that
    thread ended (Python before 3.13): a real ``splice mcp`` exited 0 at once, the running
    call neither given its grace nor answered. Here the signal's exception comes as the
    server waits for the running call once stdin has ended (in whichever wait it is)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from splice_build import cancel
    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server
    from splice_build.mcp.transport import stdio
    from testing.mcp_memory import MemoryBackend, call_request, descriptor, stdio_script

    started, ended_stdin, signalled = threading.Event(), threading.Event(), threading.Event()
    cut: list[bool] = []

    def hang(_: object) -> None:
        ended = threading.Event()
        cancel.current().on_cancel(ended.set)
        started.set()
        cut.append(ended.wait(30))  # a bound for the old code only, which never cut it

    def signal_once() -> None:
        if ended_stdin.is_set() and not signalled.is_set():
            signalled.set()
            started.wait(30)
            raise KeyboardInterrupt  # SIGTERM as the server waits for the running call

    real_wait = stdio.wait

    def wait(*args: Any, **kwargs: Any) -> Any:
        signal_once()
        return real_wait(*args, **kwargs)

    class Pool(ThreadPoolExecutor):
        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            signal_once()
            super().shutdown(wait, cancel_futures=cancel_futures)

    class Stdin(io.BytesIO):
        def read1(self, size: int = -1) -> bytes:
            data = super().read1(size)
            if not data:
                ended_stdin.set()
            return data

    monkeypatch.setattr(stdio, "wait", wait)
    monkeypatch.setattr(stdio, "ThreadPoolExecutor", Pool)
    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/hang", "t"), hang)
    server = Server(backend, ServerInfo(version="9.9.9"), log=lambda _: None)
    stdout = io.BytesIO()
    stdin = Stdin(stdio_script(call_request("acme_hang_t")))
    with pytest.raises(KeyboardInterrupt):
        stdio.serve_stdio(server, stdin, stdout, log=lambda _: None, max_calls=1, grace=0)
    assert signalled.is_set() and cut == [True]
    assert json.loads(stdout.getvalue().splitlines()[-1]) == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32003, "message": "Server stopping", "data": {"retryAfter": 1}},
    }


def test_the_reader_holds_at_most_16_mib_of_unanswered_lines() -> None:
    """Back-pressure counts the bytes of the lines held, not only how many: by count alone
    (64) a client held 64 decoded lines of 4 MiB behind a running call (a real `splice mcp`
    at 1,958 MB of resident memory for 20 lines of ``{}``s, 545 MB now). Here one call
    hangs and twenty lines of 1 MiB follow it: the reader stops before the seventeenth."""
    import io
    import threading

    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server
    from splice_build.mcp.transport import stdio
    from testing.mcp_memory import MemoryBackend, descriptor, stdio_script

    release = threading.Event()
    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/hang", "t"), lambda _: release.wait(30))
    server = Server(backend, ServerInfo(version="9.9.9"), log=lambda _: None)
    pad = {"pad": "x" * (1024 * 1024)}
    calls = [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "acme_hang_t", "arguments": pad}}
        for i in range(1, 22)
    ]  # fmt: skip

    class Counted(io.BytesIO):
        handed = 0

        def read1(self, size: int = -1) -> bytes:
            data = super().read1(size)
            self.handed += len(data)
            return data

    stdin = Counted(stdio_script(*calls))
    thread = threading.Thread(
        target=stdio.serve_stdio,
        args=(server, stdin, io.BytesIO()),
        kwargs={"log": lambda _: None, "max_calls": 1},
        daemon=True,
    )
    thread.start()
    try:
        before = -1
        while stdin.handed != before:  # until the reader reads no more
            before = stdin.handed
            threading.Event().wait(0.1)
        assert stdin.handed <= stdio.MAX_HELD_BYTES + 2 * stdio.CHUNK_BYTES + len(pad["pad"])
    finally:
        release.set()
        thread.join(30)
    assert stdin.handed == len(stdin.getvalue())  # and all of it once the calls were answered
