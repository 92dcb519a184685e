"""Newline-delimited JSON-RPC over stdin/stdout (docs/compatibility.md#mcp, docs/mcp.md#stdio).

stdout carries protocol messages only (``claim_stdout`` points fd 1 at stderr so a stray
write elsewhere cannot corrupt the stream). stdin is read in chunks from the binary buffer;
a line longer than 4 MiB (4,194,304 bytes of UTF-8, the newline not counted) is dropped
*while it streams* — at most the limit plus one chunk is ever held — and answered -32600.
Every line is decoded once, by the reader, with ``protocol.parse_message`` (refusals are
-32700), and answered by ``Server.answer`` (batches included). Requests run concurrently on
bounded thread pools, chosen by the decoded message (never by its bytes: ``tools\\/call`` is a
tool call too): tool calls on ``max_calls`` threads of their own (docs/mcp.md#admission-control — the same
bound as over HTTP; further calls queue, nothing is refused), everything else on another,
so a ``ping`` is answered while calls wait. At most ``MAX_IN_FLIGHT`` messages, and
``MAX_HELD_BYTES`` of their lines, are held: beyond that the reader stops reading stdin
(back-pressure). The server stops when stdin ends.
A message whose turn comes after the client stopped reading stdout (the pipe's reader is
gone, or a write failed) is dropped unanswered. A client that closes its end of stdout (it
exited) cancels every call in flight at once (``_Writer.on_reader_gone``): a running call
went on to its tool's timeout for nobody, holding its sandbox process and the server. A ``notifications/cancelled`` is applied
by the reader itself, in stdin order (docs/mcp.md#cancellation): the call it names is ended,
or leaves the queue, and gets no answer. A signal that ends the read (SIGTERM, ^C) stops the
server (docs/mcp.md#stopping): the waiting calls are answered "Server stopping" at once, the
running ones get ``grace`` seconds to finish and are then cut (answered the same), and the
signal's exception goes on to the caller once every call thread is done.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, BinaryIO, Final

from splice_build.mcp.admission import needs_admission
from splice_build.mcp.cancellation import Ticket, is_cancellation
from splice_build.mcp.protocol import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Log,
    ParseError,
    Server,
    Session,
    encode,
    error_response,
    parse_message,
)
from splice_build.stopping import CUT_SECONDS, MCP_GRACE_SECONDS, signals_held

MAX_LINE_BYTES = 4 * 1024 * 1024  # docs/compatibility.md#mcp
CHUNK_BYTES = 64 * 1024
MAX_WORKERS = 16  # threads for messages other than tool calls
# Beyond either the reader waits (back-pressure instead of an unbounded queue): messages held,
# and the bytes of their lines (a decoded line of small objects is up to 24 times its size).
MAX_IN_FLIGHT = 1024
MAX_HELD_BYTES = 16 * 1024 * 1024

_BOM = b"\xef\xbb\xbf"
# Why the calls in flight are cancelled when the client closes its end of stdout.
GONE = "its client closed stdout"


class Oversize:
    """Marker for a line that was discarded because it exceeded the limit."""


OVERSIZE: Final = Oversize()


def iter_lines(stream: BinaryIO, *, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | Oversize]:
    """Yield each line (without ``\\n`` and one trailing ``\\r``) or OVERSIZE once it passes
    ``limit`` bytes, neither of the two counted.

    Memory stays within the limit plus one chunk: a line is dropped as soon as its bytes
    pass the limit (plus one for a ``\\r`` that may end it), and the rest of it is skipped
    chunk by chunk up to its newline.
    """
    read = getattr(stream, "read1", stream.read)
    pieces: list[bytes] = []
    size = 0
    discarding = False
    while True:
        chunk = read(CHUNK_BYTES)
        if not chunk:
            break
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            segment = chunk[start:] if newline < 0 else chunk[start:newline]
            if not discarding and segment:
                size += len(segment)
                if size > limit + 1:  # one more byte may be the line's "\r"
                    pieces.clear()
                    discarding = True
                else:
                    pieces.append(segment)
            if newline < 0:
                break
            yield OVERSIZE if discarding else _line(pieces, limit)
            pieces, size, discarding = [], 0, False
            start = newline + 1
    if discarding:
        yield OVERSIZE
    elif pieces:
        yield _line(pieces, limit)


def _line(pieces: list[bytes], limit: int) -> bytes | Oversize:
    """The line without one trailing ``\\r``, or OVERSIZE if what remains passes ``limit``."""
    line = b"".join(pieces).removesuffix(b"\r")
    return OVERSIZE if len(line) > limit else line


def claim_stdout() -> BinaryIO:
    """A private handle on fd 1 for protocol messages; fd 1 itself then points at stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(protocol_fd, "wb", buffering=0)


class _Writer:
    """Serializes whole messages onto the output stream.

    A client that stops reading its stdout fills the pipe, and a write then waits for it for
    ever: a stopping server (SIGTERM) waited for those writes' threads and never exited. So
    a file the platform can ``poll`` is written a piece at a time, each waiting until the
    file takes it or, once the server stops (``stop_by``), until the stop's deadline, when
    the writer gives up as on a closed pipe. A piece is at most ``PIPE_BUF`` bytes: a pipe
    that reports room takes that many without blocking."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.broken = False
        self._deadline: float | None = None
        self._torn = False  # a message was cut short: the next one starts a new line
        self._woken_r, self._woken_w = os.pipe()  # written once: the deadline is set

    def close(self) -> None:
        os.close(self._woken_r)
        os.close(self._woken_w)

    def stop_by(self, deadline: float) -> None:
        """The server stops: no write waits past ``deadline`` (``time.monotonic``)."""
        if self._deadline is None:
            self._deadline = deadline
            os.write(self._woken_w, b"x")

    def gone(self) -> bool:
        """Whether nobody reads the stream any more: a write failed, or (where ``poll``
        exists) its file reports an error or a hang-up, as a pipe whose read end is closed
        does."""
        if self.broken:
            return True
        fd = self._fileno()
        if fd is None:
            return False
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0)):
            self.broken = True
        return self.broken

    @contextlib.contextmanager
    def on_reader_gone(self, act: Callable[[], None]) -> Iterator[None]:
        """While in the block, call ``act`` (on a thread of its own) once nobody reads the
        stream any more: its file reports an error (a pipe whose read end is closed) or a
        hang-up (a socket its peer closed). A client half-closing a socket it uses both ways
        (its end of stdin) is no hang-up. Nothing is watched where the platform cannot
        ``poll`` the stream."""
        fd = self._fileno()
        if fd is None:
            yield
            return
        wake_r, wake_w = os.pipe()

        def watch() -> None:
            poller = select.poll()
            poller.register(fd, 0)  # no event asked for: errors and hang-ups only
            poller.register(wake_r, select.POLLIN)
            events = dict(poller.poll())
            if events.get(fd, 0) & (select.POLLERR | select.POLLHUP) and wake_r not in events:
                self.broken = True
                act()

        watcher = threading.Thread(target=watch, name="splice-mcp-reader", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            os.write(wake_w, b"x")
            watcher.join()
            os.close(wake_r)
            os.close(wake_w)

    def send(self, message: dict[str, Any] | list[Any]) -> None:
        data = encode(message) + b"\n"
        with self._lock:
            if self.broken:
                return
            try:
                fd = self._fileno()
                if fd is None:
                    self._stream.write(data)
                    self._stream.flush()
                elif not self._write_by_pieces(fd, memoryview(data)):
                    self.broken = True  # the stop's deadline passed: nobody reads
            except (BrokenPipeError, ValueError, OSError):
                self.broken = True

    def _fileno(self) -> int | None:
        """The stream's descriptor when the platform can ``poll`` it, else None."""
        if not hasattr(select, "poll"):
            return None
        try:
            return self._stream.fileno()
        except (OSError, ValueError):  # not a file (an in-memory stream), or closed
            return None

    def _write_by_pieces(self, fd: int, data: memoryview) -> bool:
        """Write ``data`` to ``fd``; False when the stop's deadline passes first.

        A signal's exception between two pieces (a second SIGTERM while the stop answers a
        large batch) leaves the message cut short: the next one then starts on a line of its
        own, so the client loses the cut message alone. It was written onto the end of the
        cut one, and the client could read neither (the running call's "Server stopping"
        never arrived). The handler may run once a piece is written but before it is
        counted, so any message left unfinished counts as cut short (at worst the client
        reads an empty line)."""
        self._stream.flush()  # nothing of the stream's own buffer goes after these bytes
        if self._torn:
            data = memoryview(b"\n" + data)
        self._torn = True  # until the last piece is written
        while data:
            if not self._takes(fd):
                return False
            data = data[os.write(fd, data[: select.PIPE_BUF]) :]
        self._torn = False
        return True

    def _takes(self, fd: int) -> bool:
        """Wait until ``fd`` takes a piece (or reports an error, which its write raises);
        False once the stop's deadline passes first."""
        import time

        while True:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            deadline, timeout = self._deadline, None
            if deadline is None:
                poller.register(self._woken_r, select.POLLIN)  # stop_by wakes this wait
            elif (timeout := (deadline - time.monotonic()) * 1000) <= 0:
                return False
            if any(found == fd for found, _events in poller.poll(timeout)):
                return True


class _Held:
    """The messages the reader has handed on and that are not answered yet, by count and by
    the bytes of their lines: the reader waits while ``messages`` are held, or while the next
    line would take their bytes past ``size`` (one line is always taken when none is held).
    By count alone (64), a client held 64 decoded lines of 4 MiB (6 GB of objects for lines
    of ``{}``), while 64 small calls queued behind a running one stopped the reader before a
    ``notifications/cancelled`` sent after them: nothing could be cancelled until a call
    ended (the 60 s of a hanging tool's timeout)."""

    def __init__(self, messages: int, size: int) -> None:
        self._messages = messages
        self._size = size
        self._count = 0
        self._bytes = 0
        self._changed = threading.Condition()

    def take(self, size: int) -> None:
        with self._changed:
            while self._count and (
                self._count >= self._messages or self._bytes + size > self._size
            ):
                self._changed.wait()
            self._count += 1
            self._bytes += size

    def give(self, size: int) -> None:
        with self._changed:
            self._count -= 1
            self._bytes -= size
            self._changed.notify()


def serve_stdio(
    server: Server,
    stdin: BinaryIO,
    stdout: BinaryIO,
    *,
    log: Log,
    max_calls: int,
    max_line_bytes: int = MAX_LINE_BYTES,
    grace: float = MCP_GRACE_SECONDS,
) -> None:
    """Serve until stdin ends (or stdout closes), running at most ``max_calls`` tool calls at
    once; waits for calls in flight before returning. An exception that ends the read (a
    signal's) stops the calls first (``grace``: the module docstring), then propagates."""
    session = Session(scope="stdio")  # one client: its cancellations reach its calls
    writer = _Writer(stdout)
    held = _Held(MAX_IN_FLIGHT, MAX_HELD_BYTES)
    admitted: set[Future[None]] = set()  # tool calls queued or running
    answering: set[Future[None]] = set()  # the other messages being answered

    def work(message: Any, ticket: Ticket | None, size: int) -> None:
        try:
            if writer.gone():
                return  # the client left: no answer would be read
            if ticket is not None and ticket.token.cancelled and not ticket.stopped:
                return  # cancelled as its turn came: it never runs
            response = server.answer(message, session, ticket)
            if response is not None:
                writer.send(response)
        finally:
            done(ticket, size)

    def done(ticket: Ticket | None, size: int) -> None:
        if ticket is not None:
            ticket.close()
        held.give(size)

    def dequeue(queued: Future[None], message: Any, ticket: Ticket, size: int) -> None:
        """A queued call's cancellation (its client's, or the stop's) takes it out of the
        queue and frees its place; a stopped one is answered "Server stopping"."""
        if not queued.cancel():
            return  # it runs, or ran: ``work`` answers it
        try:
            if ticket.stopped and (answer := server.stopped_answer(message)) is not None:
                writer.send(answer)
        finally:
            done(ticket, size)

    with (
        contextlib.ExitStack() as after_the_cut,  # left last: the threads are done by then
        contextlib.closing(writer),  # closed next: the threads below are done by then
        writer.on_reader_gone(lambda: server.abandon(GONE)),
        ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="splice-mcp") as pool,
        ThreadPoolExecutor(max_workers=max_calls, thread_name_prefix="splice-mcp-call") as calls,
    ):
        try:
            for line in iter_lines(stdin, limit=max_line_bytes):
                if writer.broken:
                    break
                if isinstance(line, Oversize):
                    log(f"discarded a message longer than {max_line_bytes} bytes")
                    writer.send(error_response(None, INVALID_REQUEST, "Message too large"))
                    continue
                line = line.removeprefix(_BOM)
                if not line.strip():
                    continue
                try:
                    message = parse_message(line, max_bytes=max_line_bytes)
                except ParseError:
                    writer.send(error_response(None, PARSE_ERROR, "Parse error"))
                    continue
                if is_cancellation(message):  # here, in stdin order: no thread applies it late
                    if (refusal := server.answer(message, session)) is not None:
                        writer.send(refusal)  # not JSON-RPC 2.0: answered as any message
                    continue
                size = len(line)
                held.take(size)
                if not needs_admission(message):
                    other = pool.submit(work, message, None, size)
                    answering.add(other)
                    other.add_done_callback(answering.discard)
                    continue
                ticket = server.track(message, session)  # known from now on, queued or running
                queued = calls.submit(work, message, ticket, size)
                admitted.add(queued)
                queued.add_done_callback(admitted.discard)
                ticket.token.on_cancel(
                    lambda q=queued, m=message, t=ticket, n=size: dequeue(q, m, t, n)
                )
            # stdin ended (a client's stop closes it, then sends SIGTERM): the work in flight
            # is waited for here, where a signal still stops it as below. The pools' exits
            # waited for it out of the stop's reach, and on Python before 3.13 a signal
            # raised into a thread's join marks that thread ended: the running call was
            # neither given its grace nor answered, and the process exited under it.
            wait([*admitted, *answering])
        except BaseException:  # a signal (SIGTERM, ^C): stop, then let it end the command
            _stop(server, writer, admitted, grace, after_the_cut)
            raise


def _stop(
    server: Server,
    writer: _Writer,
    admitted: set[Future[None]],
    grace: float,
    after_the_cut: contextlib.ExitStack,
) -> None:
    """Refuse the waiting calls, give the running ones ``grace`` seconds, then cut what is
    left (a second signal during the wait cuts them at once). No answer is written past the
    grace and ``CUT_SECONDS`` (splice_build/stopping.py): a client that reads no more never
    holds the stop. From the cut until ``after_the_cut`` closes, once the call threads are
    done, the stop signals do nothing (``signals_held``, for its bound): a third one raised
    into the cut left calls uncut, which the threads' join then waited for to their own
    timeout."""
    import time

    writer.stop_by(time.monotonic() + grace + CUT_SECONDS)
    try:  # a second signal while the waiting calls are answered still cuts the running ones
        server.begin_stop(grace)
        wait(list(admitted), timeout=grace)
    finally:
        after_the_cut.enter_context(signals_held())
        server.cut()
