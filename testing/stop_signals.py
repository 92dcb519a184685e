"""The child side of tests/cli/test_stop_signals.py: a stop signal at each phase of a server
command where nothing waited for it, each delivered by the process to itself (``os.kill``)
from inside the phase, so it lands there whatever the machine's speed.

``python -m testing.stop_signals DIR`` runs, in ``DIR`` (a project with no packages):

1. ``startup``: ``splice mcp``, ``splice registry serve`` and ``splice list``, SIGTERM as
   the parser is built (before the command runs): the exit codes;
2. ``teardown``: ``splice mcp`` over stdio whose stdin ends, SIGTERM as its ``Splice`` (the
   warm pool) is closed: the exit code and whether the close ran to its end;
3. ``cut``: ``serve_stdio`` stopped by a signal (grace 0), SIGTERM again as the running call
   is cut: whether the call was cut;
4. ``overrun``: the same with a call the cut does not end (stuck where no cancellation
   reaches), SIGTERM again once the hold's bound is over (``HELD_SECONDS`` 0 here): whether
   ``serve_stdio`` ended while the call was still stuck.

and writes the findings as one JSON object, the last line of stderr (fd 1 is stderr once
``splice mcp`` claimed stdout).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

HANG_SECONDS = 5.0  # how long the uncut call of the cut phase waits (the old code only)


def _terminating(real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, run once this process sent itself SIGTERM (its handler runs first)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    return wrapper


def _startup() -> list[int]:
    from splice_build.cli import main, parser

    real = parser.build_parser
    parser.build_parser = _terminating(real)
    try:
        lines = (["mcp"], ["registry", "serve", "--port", "0"], ["list"])
        return [main.main(line) for line in lines]
    finally:
        parser.build_parser = real


def _teardown() -> dict[str, Any]:
    from splice_build.cli import main
    from splice_build.sdk import Splice

    real, closed = Splice.close, []

    def close(splice: Splice) -> None:
        real(splice)
        closed.append(True)

    Splice.close = _terminating(close)  # type: ignore[method-assign]
    try:
        return {"code": main.main(["mcp"]), "closed": closed == [True]}
    finally:
        Splice.close = real  # type: ignore[method-assign]


class _Signalled(io.RawIOBase):
    """stdin that hands out ``data``, then (once ``ready`` is set) raises as SIGTERM's
    handler does in a read."""

    def __init__(self, data: bytes, ready: threading.Event) -> None:
        self._data = data
        self._ready = ready

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._data:
            data, self._data = self._data, b""
            return data
        self._ready.wait(HANG_SECONDS)
        from splice_build.cli.errors import Terminated

        raise Terminated(signal.SIGTERM)


def _cut() -> bool:
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
        cut.append(ended.wait(HANG_SECONDS))

    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/hang", "t"), hang)
    server = Server(backend, ServerInfo(version="9.9.9"), log=lambda _: None)
    server.cut = _terminating(server.cut)  # type: ignore[method-assign]
    stdin = _Signalled(stdio_script(call_request("acme_hang_t")), started)
    with contextlib.suppress(KeyboardInterrupt):  # the stop's Terminated, once it is done
        serve_stdio(server, stdin, io.BytesIO(), log=lambda _: None, max_calls=1, grace=0)
    return cut == [True]


def _overrun() -> bool:
    from concurrent.futures import ThreadPoolExecutor

    from splice_build import stopping
    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server
    from splice_build.mcp.transport import stdio
    from testing.mcp_memory import MemoryBackend, call_request, descriptor, stdio_script

    started, released, ended = threading.Event(), threading.Event(), threading.Event()

    def stuck(_: object) -> None:  # the cut does not reach it
        started.set()
        released.wait(HANG_SECONDS)  # the bound of the old code, which waited for it
        ended.set()

    class Pools(ThreadPoolExecutor):
        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            signalled = self._thread_name_prefix == "splice-mcp-call" and wait
            real = _terminating(super().shutdown) if signalled else super().shutdown
            real(wait, cancel_futures=cancel_futures)  # SIGTERM as the stop waits for the call

    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/stuck", "t"), stuck)
    server = Server(backend, ServerInfo(version="9.9.9"), log=lambda _: None)
    stdin = _Signalled(stdio_script(call_request("acme_stuck_t")), started)
    held = stopping.__dict__.get("HELD_SECONDS")
    stopping.HELD_SECONDS = 0.0  # type: ignore[misc]
    pools, stdio.ThreadPoolExecutor = stdio.ThreadPoolExecutor, Pools  # type: ignore[misc]
    try:
        with contextlib.suppress(KeyboardInterrupt):
            stdio.serve_stdio(server, stdin, io.BytesIO(), log=lambda _: None, max_calls=1, grace=0)
        return not ended.is_set()
    finally:
        stopping.HELD_SECONDS, stdio.ThreadPoolExecutor = held, pools  # type: ignore[misc]
        released.set()


def run(directory: Path) -> None:
    os.chdir(directory)
    found: dict[str, Any] = {"startup": _startup(), "teardown": _teardown()}
    from splice_build.cli.errors import stop_on_termination

    stop_on_termination()  # as main left it: SIGTERM raises Terminated
    found["cut"] = _cut()
    found["overrun"] = _overrun()
    sys.stderr.write("\n" + json.dumps(found) + "\n")


if __name__ == "__main__":
    run(Path(sys.argv[1]))
