"""One execution inside a started sandbox process: send the job, serve the channel, collect.

A single thread multiplexes the job pipe (outgoing frames), the message pipe (frames from the
host), stdout and stderr (logs, read while running so a flood can neither block the tool nor
grow memory) and a wake pipe for answers finished on other threads: capability replies from
the broker's threads and fetch frames from the fetch workers (fetch_channel.py). The loop
itself never waits for a broker or the network. The deadline covers everything; at the end
the whole process group is killed and every open request aborted — except, with ``keep``
(opt-in reuse, runtime/reuse.py), after a clean success: a result frame with nothing after
it, no request of the call still open and nothing left to send. The process then stays
alive for its next job (``Outcome.kept``); the logs written before the result are drained.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import threading
import time
from collections.abc import Callable

from splice_build.records import dataclass
from splice_build.runtime.capabilities import CapabilityChannel, CapabilityReply
from splice_build.runtime.fetch_channel import FetchChannel
from splice_build.runtime.limits import (
    EXIT_GRACE_SECONDS,
    MAX_FRAME_BYTES,
    MAX_PENDING_OUTGOING_BYTES,
)
from splice_build.runtime.logs import LogBuffer
from splice_build.runtime.protocol import (
    RESULT_OK_PREFIX,
    RESULT_OK_SUFFIX_BYTES,
    CapabilityRequest,
    ChildMessage,
    Job,
    ProtocolViolation,
    ResultError,
    ResultOk,
    encode_capability_result,
    parse_child_message,
)
from splice_build.runtime.sandbox import SandboxProcess, write_to_host

_READ_CHUNK = 65536


def _pipe_capacity(fd: int) -> int:
    """How much the pipe ``fd`` holds (Linux: 16 pages by default; 64 KiB elsewhere)."""
    import fcntl

    try:
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (AttributeError, OSError):
        return 65536


@dataclass(frozen=True)
class Outcome:
    """What happened, before mapping to a ToolResult (runtime.py does the mapping)."""

    message: ChildMessage | None  # the result frame, if one arrived
    violation: str | None  # a protocol violation by the child
    oversized_output: int | None  # bytes of an oversized result frame
    timed_out: bool
    exit_code: int | None
    logs: LogBuffer
    kept: bool = False  # the process is alive and may take another job (``keep`` only)


class _FrameReader:
    """Splits the message pipe into frames, bounding each; oversized frames are counted."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._discarding: int | None = None  # bytes of an oversized frame seen so far
        self._discard_is_result = False
        self.oversized_result: int | None = None

    @property
    def empty(self) -> bool:
        """No partial frame is buffered or being discarded."""
        return not self._buffer and self._discarding is None

    def feed(self, chunk: bytes) -> list[bytes]:
        frames: list[bytes] = []
        while chunk:
            if self._discarding is not None:
                nl = chunk.find(b"\n")
                if nl < 0:
                    self._discarding += len(chunk)
                    return frames
                self._discarding += nl
                if self._discard_is_result:
                    self.oversized_result = (
                        self._discarding - len(RESULT_OK_PREFIX) - RESULT_OK_SUFFIX_BYTES
                    )
                    self._discarding = None
                    return frames
                raise ProtocolViolation(f"frame of {self._discarding} bytes")
            nl = chunk.find(b"\n")
            if nl < 0:
                self._buffer += chunk
                chunk = b""
            else:
                self._buffer += chunk[:nl]
                chunk = chunk[nl + 1 :]
                frames.append(bytes(self._buffer))
                self._buffer.clear()
            if len(self._buffer) > MAX_FRAME_BYTES:
                self._discard_is_result = self._buffer.startswith(RESULT_OK_PREFIX)
                self._discarding = len(self._buffer)
                self._buffer.clear()
        return frames


class Session:
    """Drives one started process through one job; ``run`` returns the Outcome."""

    def __init__(
        self,
        process: SandboxProcess,
        *,
        job: Job,
        frame: bytes,
        timeout_s: float,
        make_channel: Callable[[Callable[[CapabilityReply], None]], CapabilityChannel],
        make_fetch: Callable[[Callable[[bytes], None]], FetchChannel],
        log_limit: int,
        keep: bool = False,
    ) -> None:
        self._proc = process
        self._keep = keep
        self._outgoing = bytearray(frame)  # job.encode(), as runtime.py checked its size
        self._job_id = job.id
        self._timeout_s = timeout_s
        self._logs = LogBuffer(log_limit)
        self._frames = _FrameReader()
        self._replies: list[CapabilityReply] = []
        self._replies_lock = threading.Lock()
        # Guards ``_outgoing`` and the job pipe: fetch workers write their frames themselves
        # when nothing is queued before them (one thread hop less per frame).
        self._out_lock = threading.Lock()
        self._over = False  # the session ended: the pipe may be closed, workers must stop
        self._wake_r, self._wake_w = os.pipe()
        self._channel = make_channel(self._reply_from_thread)
        self._fetch = make_fetch(self._post_from_thread)

    def _reply_from_thread(self, reply: CapabilityReply) -> None:
        """A broker thread's answer; dropped once the session is over (a call the tool left
        running answers after its execution, when the wake pipe is closed and its number
        may be another file's: the wake byte was written there)."""
        with self._out_lock:
            if self._over:
                return
            with self._replies_lock:
                self._replies.append(reply)
            self._wake()

    def _post_from_thread(self, frame: bytes) -> None:
        """A fetch worker's frame: written now if the pipe takes it, else queued in order."""
        with self._out_lock:
            if self._over:
                return
            sent = 0
            if not self._outgoing:
                try:
                    sent = write_to_host(self._proc.job_fd, frame)
                except BlockingIOError:
                    sent = 0
                except OSError:
                    return  # the host is gone
                if sent == len(frame):
                    return
            self._outgoing += frame[sent:]
            self._wake()

    def _wake(self) -> None:
        """Wake the loop; only with ``_out_lock`` held and the session not over, so the
        pipe is still this session's."""
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def _queue(self, reply: CapabilityReply) -> None:
        frame = encode_capability_result(
            reply.request_id, result=reply.result, error=reply.error, encoded=reply.encoded
        )
        with self._out_lock:
            self._outgoing += frame

    def run(self) -> Outcome:
        outcome = None
        try:
            outcome = self._loop()
            return outcome
        finally:
            with self._out_lock:
                self._over = True
                for fd in (self._wake_r, self._wake_w):
                    os.close(fd)
            self._channel.close()
            self._fetch.close()
            if outcome is None or not outcome.kept:
                self._proc.kill_group()

    def _loop(self) -> Outcome:
        popen = self._proc.popen
        assert popen.stdout is not None and popen.stderr is not None, "BUG: pipes missing"
        os.set_blocking(self._proc.job_fd, False)
        sel = selectors.DefaultSelector()
        readers = {
            popen.stdout.fileno(): "log",
            popen.stderr.fileno(): "log",
            self._proc.message_fd: "msg",
            self._wake_r: "wake",
        }
        for fd in readers:
            sel.register(fd, selectors.EVENT_READ)
        writing = False
        message: ChildMessage | None = None
        violation: str | None = None
        deadline = time.monotonic() + self._timeout_s
        grace_until: float | None = None
        open_streams = 3  # stdout, stderr, message pipe
        kept = False
        try:
            while True:
                if self._outgoing and not writing and self._proc.job_fd >= 0:
                    sel.register(self._proc.job_fd, selectors.EVENT_WRITE)
                    writing = True
                now = time.monotonic()
                limit = deadline if grace_until is None else min(deadline, grace_until)
                if kept or now >= limit or open_streams == 0:
                    break
                for key, _ in sel.select(limit - now):
                    fd = key.fd
                    if fd == self._proc.job_fd:
                        if not self._write_some():
                            sel.unregister(fd)
                            writing = False
                        continue
                    kind = readers[fd]
                    if kind == "wake":
                        os.read(fd, 4096)
                        self._deliver_thread_replies()
                        continue
                    try:
                        chunk = os.read(fd, _READ_CHUNK)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        sel.unregister(fd)
                        open_streams -= 1
                        continue
                    if kind == "log":
                        self._logs.append(chunk)
                        continue
                    if message is not None or violation is not None:
                        continue  # after the result nothing the child says matters
                    try:
                        frames = self._frames.feed(chunk)
                        for index, raw in enumerate(frames):
                            parsed = parse_child_message(raw)
                            if isinstance(parsed, ResultOk | ResultError):
                                if parsed.job != self._job_id:  # written by the tool itself
                                    raise ProtocolViolation("a result that is not this job's")
                                message = parsed
                                kept = self._keep and self._clean(message, frames[index + 1 :])
                                break
                            self._dispatch(parsed)
                    except ProtocolViolation as exc:
                        violation = str(exc)
                    if kept:
                        break
                    if self._keep and isinstance(message, ResultOk) and grace_until is None:
                        grace_until = time.monotonic()  # a reuse host does not exit by itself
                    if (
                        message is not None
                        or violation is not None
                        or self._frames.oversized_result is not None
                    ) and grace_until is None:
                        grace_until = time.monotonic() + EXIT_GRACE_SECONDS
                        if violation is not None or self._frames.oversized_result is not None:
                            grace_until = time.monotonic()  # nothing more to wait for
            timed_out = (
                message is None
                and violation is None
                and self._frames.oversized_result is None
                and time.monotonic() >= deadline
                and open_streams > 0
            )
            if kept:
                kept = self._drain_logs(sel, readers)
        finally:
            sel.close()
        exit_code = None
        if not kept:
            if open_streams == 0:
                # Every pipe reached its end: the process is ending by itself. Its own exit
                # code, not the -9 of a kill that overtook its exit, says what happened (13:
                # the tool's promise never settled; outcome.py).
                left = max(0.0, deadline - time.monotonic())
                self._proc.await_exit(min(EXIT_GRACE_SECONDS, left))
            self._proc.kill_group()
            exit_code = self._proc.popen.wait()
            if exit_code == 0 and signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
                exit_code = None  # the kernel reaped it (forks.reap): Popen's 0 is made up
        return Outcome(
            message=message,
            violation=violation,
            oversized_output=self._frames.oversized_result,
            timed_out=timed_out,
            exit_code=exit_code,
            logs=self._logs,
            kept=kept,
        )

    def _clean(self, message: ChildMessage, after: list[bytes]) -> bool:
        """Whether the call ended so that its process may take another job: a success with
        no frame after it and nothing of this call left open or unsent."""
        with self._out_lock:
            unsent = bool(self._outgoing)
        return (
            isinstance(message, ResultOk)
            and not after
            and self._frames.empty
            and not unsent
            and self._channel.idle
            and self._fetch.idle
        )

    def _drain_logs(self, sel: selectors.BaseSelector, readers: dict[int, str]) -> bool:
        """Read what the host wrote to stdout/stderr before its result (those writes were
        synchronous, so it is all in the pipes now: at most a pipe's capacity each). False
        when more than twice that comes: code of the call still writing, so its process is
        not kept (and never holds the call past its result)."""
        budget = 2 * sum(_pipe_capacity(fd) for fd, kind in readers.items() if kind == "log")
        while True:
            ready = [key.fd for key, _ in sel.select(0) if readers.get(key.fd) == "log"]
            if not ready:
                return True
            for fd in ready:
                chunk = os.read(fd, _READ_CHUNK)
                if not chunk:
                    sel.unregister(fd)
                    readers.pop(fd)
                else:
                    self._logs.append(chunk)
                    budget -= len(chunk)
            if budget < 0:
                return False

    def _dispatch(self, message: ChildMessage) -> None:
        """A request from the host: answered now, or later by another thread."""
        if isinstance(message, CapabilityRequest):
            reply = self._channel.handle(message)
            if reply is not None:
                self._queue(reply)
        else:
            frames = self._fetch.handle(message)  # type: ignore[arg-type]
            with self._out_lock:
                for frame in frames:
                    self._outgoing += frame
        if len(self._outgoing) > MAX_PENDING_OUTGOING_BYTES:
            raise ProtocolViolation("the host does not read its channel")

    def _write_some(self) -> bool:
        """Write pending outgoing bytes; False when nothing is left (or the pipe is gone)."""
        with self._out_lock:
            try:
                written = write_to_host(self._proc.job_fd, self._outgoing)
            except BlockingIOError:
                return True
            except OSError:
                self._outgoing.clear()
                return False
            del self._outgoing[:written]
            return bool(self._outgoing)

    def _deliver_thread_replies(self) -> None:
        with self._replies_lock:
            replies, self._replies = self._replies, []
        for reply in replies:
            self._channel.reply_delivered()
            self._queue(reply)
