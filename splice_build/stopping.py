"""How the long-running servers stop (``splice mcp``, ``splice registry serve``;
docs/cli.md#exit-codes-and-errors, docs/mcp.md#stopping).

SIGTERM is how a supervisor (systemd, a container runtime, Kubernetes, supervisord) asks a
service to stop, and each of them counts only exit status 0 as a clean stop: a status of
143, which uvicorn's re-raised SIGTERM gave through the CLI's ``INTERRUPTED`` handling, is a
failure to systemd, and a container runtime reports 128 + 15 as "Error" whether the process
exited with it or died by the signal. Dying by the signal would not even work everywhere:
as a container's PID 1 a process ignores a signal it has no handler for. So a server stops
gracefully and exits 0 on SIGTERM: it stops accepting, gives the work in flight ``grace``
seconds, ends what is left (sandbox processes included) and returns. ^C stays the
interactive interruption: the same graceful stop, then ``INTERRUPTED`` and 130 as for every
command. SIGHUP (the terminal the server runs in was closed) is one too: the same graceful
stop, then ``INTERRUPTED`` and 129. uvicorn handles only SIGINT and SIGTERM, so SIGHUP
reached the CLI's handler inside the event loop: the loop ended while a call's thread ran
on, and the process waited for that call's own timeout (60 s measured) before exiting.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from splice_build.records import dataclass

if TYPE_CHECKING:
    import asyncio  # imported where it runs: the CLI's ^C report needs only signals_held

GRACE_ENV = "SPLICE_MCP_STOP_GRACE"
MCP_GRACE_SECONDS = 5  # well inside a container runtime's 10 s before it kills
MAX_GRACE_SECONDS = 3600
REGISTRY_GRACE_SECONDS = 10  # a registry request is short; the workers' own stop waits 15 s
CUT_SECONDS = 2.0  # after the cut, for the cut calls' answers before their tasks are cancelled
HELD_SECONDS = 5.0  # further stop signals do nothing this long (``signals_held``)


@dataclass(frozen=True)
class Stop:
    """A server's graceful stop: ``begin`` runs as it starts (no new work may start),
    ``cut`` once ``grace`` seconds have passed (the work still running is ended; it may run
    again, and must then do nothing)."""

    grace: float
    begin: Callable[[], None] = lambda: None
    cut: Callable[[], None] = lambda: None


def mcp_grace(env: Mapping[str, str] | None = None) -> int:
    """``SPLICE_MCP_STOP_GRACE`` seconds if set (0 to ``MAX_GRACE_SECONDS``, ASCII digits),
    else ``MCP_GRACE_SECONDS``."""
    from splice_build.errors import UsageError
    from splice_build.spec.number_text import whole_number

    raw = (os.environ if env is None else env).get(GRACE_ENV)
    if raw is None or raw == "":
        return MCP_GRACE_SECONDS
    value = whole_number(raw, len(str(MAX_GRACE_SECONDS)))
    if value is None or value > MAX_GRACE_SECONDS:
        raise UsageError(
            f"{GRACE_ENV} must be a whole number of seconds from 0 to {MAX_GRACE_SECONDS}, "
            f"got {raw[:40]!r}",
            # the command's --help, the hint otherwise, says nothing of the variable
            hint=f"Unset {GRACE_ENV} for the default of {MCP_GRACE_SECONDS} s "
            "(docs/mcp.md#stopping).",
        )
    return value


def graceful_server(config: Any, stop: Stop, on_ready: Callable[[], None]) -> Any:
    """A ``uvicorn.Server`` that stops as this module says: SIGTERM ends ``serve`` normally
    (uvicorn raises a caught signal again once it has shut down; SIGINT and SIGHUP still
    are), and the shutdown runs ``stop``; uvicorn cancels the requests still open
    ``CUT_SECONDS`` after the cut (``config.timeout_graceful_shutdown``: ``shutdown_seconds``). ``on_ready`` runs
    once it serves, its signal handlers in place."""
    import uvicorn

    class GracefulServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            """uvicorn's, with SIGHUP taken as SIGINT is (raised again once stopped), and
            every stop signal the process was started ignoring left ignored: ``nohup``
            (SIGHUP; cli/errors.py leaves it ignored too) and a job a shell started in the
            background (SIGINT: ^C to the script that started it is not for the server).
            uvicorn took SIGINT whatever its disposition, so such a server stopped on ^C
            and, raising the ignored signal again, exited 0."""
            if threading.current_thread() is not threading.main_thread():
                with super().capture_signals():
                    yield
                return
            ignored = [s for s in _stop_signals() if signal.getsignal(s) == signal.SIG_IGN]
            hup = getattr(signal, "SIGHUP", None)
            taken = hup is not None and hup not in ignored
            previous = signal.signal(hup, self.handle_exit) if taken else None
            try:
                with super().capture_signals():  # raises SIGHUP again, ``previous`` back
                    for signum in ignored:
                        signal.signal(signum, signal.SIG_IGN)
                    yield
                    if taken:
                        signal.signal(hup, previous)
            finally:
                if taken:
                    signal.signal(hup, previous)

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if not self.should_exit:
                on_ready()

        hurried = False  # a stop signal came again: the grace is over
        _cut: asyncio.TimerHandle | None = None
        _loop: asyncio.AbstractEventLoop | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.should_exit:
                self._hurry(sig, frame)
            elif sig == signal.SIGTERM:
                self.should_exit = True  # not recorded: nothing is raised again
            else:
                super().handle_exit(sig, frame)

        def _hurry(self, sig: int, frame: Any) -> None:
            """A second stop signal ends the grace: the running work is cut now, and the
            server stops waiting for it ``CUT_SECONDS`` later, as over stdio. uvicorn's own
            second ^C (``force_exit``) stopped waiting at once, so the running calls' tasks
            were cancelled (500 Internal Server Error, not "Server stopping"),
            and it let a second SIGTERM change nothing (the whole grace was waited for)."""
            if sig != signal.SIGTERM:
                super().handle_exit(sig, frame)  # recorded: raised again once stopped
                self.force_exit = False
            self.hurried = True
            if self._loop is not None:  # else the shutdown, not begun yet, cuts at once
                self._loop.call_soon_threadsafe(self._cut_now)

        def _cut_now(self) -> None:
            if self._cut is not None:
                self._cut.cancel()
            stop.cut()
            assert self._loop is not None
            self._loop.call_later(CUT_SECONDS, setattr, self, "force_exit", True)

        async def shutdown(self, sockets: Any = None) -> None:
            import asyncio

            stop.begin()
            self._loop = asyncio.get_running_loop()
            self._cut = self._loop.call_later(stop.grace, stop.cut)
            if self.hurried:
                self._cut_now()
            try:
                await super().shutdown(sockets)
            finally:
                self._cut.cancel()
                stop.cut()

    return GracefulServer(config)


@contextlib.contextmanager
def signals_held(seconds: float | None = None) -> Iterator[None]:
    """Run the block with the stop signals the process handles doing nothing for ``seconds``
    (``HELD_SECONDS``), then put their handlers back (main thread only: elsewhere a signal's
    handler never runs anyway).

    For the end of a stop, which is bounded (the cut, the call threads' last answers, the
    warm processes' close): a further SIGTERM or ^C raised into it left the cut or the pool's
    close half done, and the command ended 143 or, the exception raised again inside the
    error report, with a traceback and exit 1 (``kill`` sent twice to a stopping ``splice
    mcp``). A signal the process was started ignoring stays ignored.

    A stop signal once ``seconds`` have passed acts as it would without the hold: an end
    that overruns its bound is stuck somewhere the cut does not reach (a call waiting for
    the project's lock was, until such a wait ended on a cancellation: project/locking.py),
    and ignoring every SIGTERM, ^C and SIGHUP then left the server to be killed outright."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import time

    until = time.monotonic() + (HELD_SECONDS if seconds is None else seconds)
    taken = {
        s: h for s in _stop_signals() if (h := signal.getsignal(s)) not in (None, signal.SIG_IGN)
    }

    def held(signum: int, frame: Any) -> None:
        if time.monotonic() < until:
            return  # the stop already under way goes on
        for taken_signum, handler in taken.items():
            signal.signal(taken_signum, handler)
        _act(taken[signum], signum, frame)

    for signum in taken:
        signal.signal(signum, held)
    try:
        yield
    finally:
        for signum, handler in taken.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Run the block with the stop signals the process handles recorded, not acted on; once
    it ends, the first one recorded acts as it would have (main thread only: elsewhere a
    signal's handler never runs anyway).

    For a step a ``KeyboardInterrupt`` must not cut in two because what it leaves cannot be
    undone: a ``ThreadPoolExecutor`` starting a thread (``Thread.start`` waits for it to
    run) and interrupted before it records the thread never tells that thread to end, and
    the exit joins it for ever (project/atomic.py's fsync pool). A signal the process was
    started ignoring stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = {
        s: h for s in _stop_signals() if (h := signal.getsignal(s)) not in (None, signal.SIG_IGN)
    }
    caught: list[int] = []
    for signum in taken:
        signal.signal(signum, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for signum, handler in taken.items():
            signal.signal(signum, handler)
    if caught:
        _act(taken[caught[0]], caught[0], None)


def _act(handler: Any, signum: int, frame: Any) -> None:
    """What ``signum`` does with ``handler``, the handler that was taken from it."""
    if callable(handler):
        handler(signum, frame)
    else:  # SIG_DFL: what the signal does to a process without a handler
        signal.raise_signal(signum)


def _stop_signals() -> list[int]:
    """The signals that stop a server: SIGINT, SIGTERM and, where it exists, SIGHUP."""
    hup = getattr(signal, "SIGHUP", None)
    return [signal.SIGINT, signal.SIGTERM] + ([hup] if hup is not None else [])


def shutdown_seconds(stop: Stop) -> int:
    """uvicorn's ``timeout_graceful_shutdown`` for ``stop`` (a whole number of seconds)."""
    return math.ceil(stop.grace + CUT_SECONDS)
