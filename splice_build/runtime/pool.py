"""The warm pool: sandbox processes started before a call, each used for exactly one job.

A warm process is the host (``host.mjs``) started with the exact command line, empty
environment, working directory and address-space limit its package needs, blocked reading
its job: no tool code is imported before the job arrives. Processes are keyed by
``PoolKey`` (the ``SandboxSpec`` — package directory, granted read/write paths, limits,
Node binary — and the package's files digest when the process was requested).

``acquire`` pops a process (it leaves the pool for good: a process is never handed out
twice, and the host exits after its one job) and asks for a replacement — unless a start
for that key is already queued: a key has at most one queued start (and one in flight),
so a burst of calls does not leave a backlog of starts behind it, and once calls stop the
pool starts at most two more processes per key (docs/mcp.md#admission-control). Every warm
process is started by the pool's own long-lived thread, so the parent-death signal the
sandbox sets (it follows the *thread* that forked) fires only when the pool ends or the
whole parent dies; the host also exits when its job pipe hangs up. The pool is bounded
(``max_size`` idle plus starting processes; the least recently started process of another
key is evicted to make room), idle processes expire after ``idle_seconds``, and ``close``
(also run at interpreter exit, for every pool still open: one exit hook for all of them)
kills whatever is left. A child of ``fork`` starts with an
empty pool and never touches the parent's processes (runtime/forks.py).

Processes of a package that changed are dropped as soon as the pool notices, not left to
expire: a call (or prewarm) whose key finds no idle process ends the idle, queued and
starting processes of the same package directory under another key (its files or grant
changed: an update, a lock edit), and every ``CHECK_SECONDS`` while processes are idle the
pool's thread stats each one's package directory and ends those whose directory is gone or
is another one (removed, or replaced by an install) than the one the process was started
on. Neither adds work to a call that finds its process idle.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import threading
import time
import weakref
from collections import deque
from pathlib import Path

from splice_build.file_keys import same_file_at
from splice_build.records import dataclass
from splice_build.runtime import sandbox
from splice_build.runtime.forks import forget_in_children

DEFAULT_MAX_SIZE = 8
DEFAULT_IDLE_SECONDS = 120.0
# How long ``acquire`` waits for a start already in progress for its key before starting a
# process itself. A start is milliseconds on an idle machine, but the first one of a process
# also runs the OS layer's probes, and on an overloaded machine it can take seconds: a second,
# cold start then only adds to the load, so the wait is long.
START_WAIT_SECONDS = 10.0
CHECK_SECONDS = 5.0  # how often the idle processes' package directories are looked at


@dataclass(frozen=True)
class PoolKey:
    """What a warm process was started for; only a call with an equal key may take it.
    ``project``: the runtime's project, so that a key of another project (a pool shared by
    runtimes) never reads as a change of this one's package (``_superseded``)."""

    spec: sandbox.SandboxSpec
    files_digest: str
    project: Path | None = None
    # A reused process: what each granted path names now (``fileview.grants_named``). A
    # descriptor a call opened in a grant outlives the grant's meaning (the directory moved
    # aside and another made at its path, a link retargeted), so a changed grant is another
    # key: without a file view, which keys only what it binds, and for a grant inside a
    # write grant, which it does not bind.
    grants: tuple[tuple[str, tuple[int, int] | None], ...] = ()


@dataclass(frozen=True)
class PoolStats:
    """Counters since the pool was created (for tests and benchmarks)."""

    idle: int  # warm processes waiting now
    starting: int  # requested or being started now
    hits: int  # acquires served by a warm process
    cold: int  # acquires that had to start a process themselves
    started: int  # warm processes started by the pool's thread
    expired: int  # idle processes killed for age
    evicted: int  # idle processes killed to make room for another key
    discarded: int  # warm processes found dead when taken
    stale: int  # processes ended because their package changed or went away


@dataclass(frozen=True)
class _Warm:
    process: sandbox.SandboxProcess
    started_at: float
    directory: tuple[int, int] | None  # the package directory's (device, inode) at its start


# What a runtime chooses, not its package: two runtimes sharing a pool may differ here for
# one package at the same time (one with reuse, one without), and neither key is stale.
_RUNTIME_FIELDS = ("node", "heap_limit_mb", "isolation", "reuse", "unsafe_in_process_guards_off")


def _superseded(old: PoolKey, new: PoolKey) -> bool:
    """Whether ``new`` replaces ``old``: the same project's package directory under the
    same runtime settings, with other files or another grant (an update, a changed lock
    entry)."""
    if old == new or old.project != new.project or old.spec.package_dir != new.spec.package_dir:
        return False
    return all(getattr(old.spec, f) == getattr(new.spec, f) for f in _RUNTIME_FIELDS)


def _idle_seconds(max_size: object, idle_seconds: object) -> float:
    """``idle_seconds`` as a float, once both settings are ones the pool's thread can work
    with, else ``USAGE``: an ``idle_seconds`` of ``"5"`` killed that thread at its first
    expiry check (every call then waited 5 s for a warm process that never came), a negative
    one expired every process as it started, NaN kept them for ever; ``max_size`` raised a
    bare ``ValueError`` or ``TypeError``."""
    from splice_build.errors import UsageError

    if type(max_size) is not int or max_size < 1:
        raise UsageError(f"WarmPool max_size must be an int of at least 1, not {_shown(max_size)}")
    seconds = math.nan
    if type(idle_seconds) in (int, float):
        try:
            seconds = float(idle_seconds)  # type: ignore[arg-type]
        except OverflowError:  # an int past any float
            seconds = math.inf
    if not 0 < seconds < math.inf:
        raise UsageError(
            f"WarmPool idle_seconds must be a finite number above 0, not {_shown(idle_seconds)}"
        )
    return seconds


def _shown(value: object) -> str:
    """A plain number as it is, anything else by its type alone (no caller's ``__repr__``)."""
    if type(value) is float or (type(value) is int and abs(value) < 10**18):
        return repr(value)
    from splice_build.sdk_args import kind

    return kind(value)


class WarmPool:
    """Bounded, expiring warm sandbox processes; thread-safe."""

    def __init__(
        self, *, max_size: int = DEFAULT_MAX_SIZE, idle_seconds: float = DEFAULT_IDLE_SECONDS
    ) -> None:
        self.idle_seconds = _idle_seconds(max_size, idle_seconds)
        self.max_size = max_size
        self._cond = threading.Condition()
        self._idle: dict[PoolKey, deque[_Warm]] = {}
        self._queue: deque[PoolKey] = deque()  # starts requested, not begun
        self._in_flight: PoolKey | None = None  # the start the thread is doing now
        self._in_flight_stale = False  # its package changed since: it is ended, not kept
        self._stale: list[_Warm] = []  # dropped under the lock, ended by the thread
        self._checked_at = time.monotonic()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._counts = dict.fromkeys(
            ("hits", "cold", "started", "expired", "evicted", "discarded", "stale"), 0
        )
        _OPEN.add(self)
        forget_in_children(self)

    # public ------------------------------------------------------------------------------
    def acquire(self, key: PoolKey) -> sandbox.SandboxProcess:
        """A started process for one job of ``key``; raises OSError when none can start.

        A warm process if there is one (or one is being started for this key), else one
        started now in the caller's thread. Either way a replacement is requested.
        """
        warm = self.acquire_warm(key)
        return warm if warm is not None else self.start_cold(key)

    def start_cold(self, key: PoolKey) -> sandbox.SandboxProcess:
        """A process started now, in the caller's thread (counted as a cold acquire)."""
        with self._cond:
            self._counts["cold"] += 1
        return sandbox.start(key.spec)

    def acquire_warm(self, key: PoolKey) -> sandbox.SandboxProcess | None:
        """A process the pool's own thread started for ``key``, or None when there is none
        (none idle, none arriving in time, or the pool closed); never starts one itself.

        For a process that must outlive the calling thread (reuse): one started in the
        caller's thread dies with that thread (PR_SET_PDEATHSIG).
        """
        deadline = time.monotonic() + START_WAIT_SECONDS
        with self._cond:
            warm = self._pop_alive(key)
            if warm is None:  # a hit costs nothing more: a changed package's first call misses
                self._drop_stale(key)
            while warm is None and self._pending(key) and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
                warm = self._pop_alive(key)
            if not self._closed:
                self._request(key)
            if warm is not None:
                self._counts["hits"] += 1
        return warm.process if warm is not None else None

    def prewarm(self, key: PoolKey, *, wait: bool = False) -> None:
        """Ask for a warm process of ``key`` unless one is idle or coming; ``wait`` blocks
        until it is idle (or could not start)."""
        with self._cond:
            if self._closed:
                return
            if not self._idle.get(key):
                self._drop_stale(key)
                if not self._pending(key):
                    self._request(key)
            while wait and not self._closed and not self._idle.get(key) and self._pending(key):
                self._cond.wait(1.0)

    def stats(self) -> PoolStats:
        with self._cond:
            return PoolStats(
                idle=sum(len(q) for q in self._idle.values()),
                starting=len(self._queue) + (self._in_flight is not None),
                **self._counts,
            )

    def idle_pids(self) -> list[int]:
        with self._cond:
            return [w.process.pid for q in self._idle.values() for w in q]

    def close(self) -> None:
        """Kill every idle process and stop the pool's thread; later acquires start cold.

        Returns once every process the pool started and still held is gone, the sandbox's
        PID 1 included (``SandboxProcess.close`` waits for it, bounded), and the thread has
        ended (bounded too; a start in flight is closed by the thread itself).
        """
        _OPEN.discard(self)
        with self._cond:
            if self._closed:
                return
            self._closed = True
            victims = [w for q in self._idle.values() for w in q] + self._stale
            self._idle.clear()
            self._stale = []
            self._queue.clear()
            self._cond.notify_all()
            thread = self._thread
        for warm in victims:
            warm.process.close()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    def forget_after_fork(self) -> None:
        """In a child of ``fork``: the parent's processes and thread are not the child's; the
        pool starts empty, with a lock of its own (runtime/forks.py)."""
        inherited = [w.process for q in self._idle.values() for w in q]
        inherited += [w.process for w in self._stale]
        self._cond = threading.Condition()
        self._idle = {}
        self._queue = deque()
        self._in_flight = None
        self._stale = []
        self._thread = None
        for process in inherited:
            process.forget()

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # under the lock ----------------------------------------------------------------------
    def _pending(self, key: PoolKey) -> bool:
        return self._in_flight == key or key in self._queue

    def _pop_alive(self, key: PoolKey) -> _Warm | None:
        queue = self._idle.get(key)
        while queue:
            warm = queue.popleft()
            if warm.process.popen.poll() is None:
                if not queue:
                    del self._idle[key]
                return warm
            self._counts["discarded"] += 1
            warm.process.close()
        self._idle.pop(key, None)
        return None

    def _drop_stale(self, key: PoolKey) -> None:
        """End what the pool holds of ``key``'s package under another key: its files or
        grant changed, so no call will take those processes again (they are ended by the
        thread, never in the caller's)."""
        dropped = [k for k in self._idle if _superseded(k, key)]
        for other in dropped:
            self._counts["stale"] += len(self._idle[other])
            self._stale += self._idle.pop(other)
        if any(_superseded(k, key) for k in self._queue):
            self._queue = deque(k for k in self._queue if not _superseded(k, key))
        if self._in_flight is not None and _superseded(self._in_flight, key):
            self._in_flight_stale = True
        if dropped:
            self._start_thread()
            self._cond.notify_all()

    def _take_stale(self, now: float) -> list[_Warm]:
        """Every ``CHECK_SECONDS``: the idle processes whose package directory is gone or
        is another one than at their start, with those ``_drop_stale`` left to end."""
        dropped, self._stale = self._stale, []
        if now - self._checked_at < CHECK_SECONDS:
            return dropped
        self._checked_at = now
        stale: list[_Warm] = []
        for key in list(self._idle):
            directory = same_file_at(key.spec.package_dir)  # a few stats, every CHECK_SECONDS
            kept: deque[_Warm] = deque()
            for warm in self._idle.pop(key):
                (kept if warm.directory == directory else stale).append(warm)
            if kept:
                self._idle[key] = kept
        self._counts["stale"] += len(stale)
        return dropped + stale

    def _request(self, key: PoolKey) -> None:
        if key in self._queue:
            return  # that start will serve the next call; a backlog would outlive the burst
        self._queue.append(key)
        self._start_thread()
        self._cond.notify_all()

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._serve, name="splice-warm-pool", daemon=True
            )
            self._thread.start()

    def _size(self) -> int:
        return sum(len(q) for q in self._idle.values()) + (self._in_flight is not None)

    def _take_expired(self, now: float) -> list[_Warm]:
        expired = []
        for key in list(self._idle):
            queue = self._idle[key]
            while queue and now - queue[0].started_at >= self.idle_seconds:
                expired.append(queue.popleft())
            if not queue:
                del self._idle[key]
        self._counts["expired"] += len(expired)
        return expired

    def _make_room(self, key: PoolKey) -> tuple[bool, list[_Warm]]:
        """Whether a process of ``key`` may start, and the idle processes evicted for it."""
        evicted: list[_Warm] = []
        while self._size() >= self.max_size:
            others = [(q[0].started_at, k) for k, q in self._idle.items() if k != key and q]
            if not others:
                return False, evicted
            _, oldest = min(others, key=lambda item: item[0])
            evicted.append(self._idle[oldest].popleft())
            if not self._idle[oldest]:
                del self._idle[oldest]
        self._counts["evicted"] += len(evicted)
        return True, evicted

    def _next_expiry(self, now: float) -> float | None:
        """Seconds until the thread has work without a request: the oldest idle process's
        expiry, or the next look at the package directories."""
        oldest = [q[0].started_at for q in self._idle.values() if q]
        if not oldest:
            return None
        expiry = min(oldest) + self.idle_seconds
        return max(0.0, min(expiry, self._checked_at + CHECK_SECONDS) - now)

    # the pool's thread -------------------------------------------------------------------
    def _serve(self) -> None:
        """Start requested processes one at a time; expire idle ones. Runs until ``close``."""
        while True:
            with self._cond:
                key = None
                while not self._closed:
                    now = time.monotonic()
                    doomed = self._take_expired(now) + self._take_stale(now)
                    if doomed or self._queue:
                        break
                    self._cond.wait(self._next_expiry(time.monotonic()))
                if self._closed:
                    return
                if not doomed:
                    key = self._queue.popleft()
                    allowed, doomed = self._make_room(key)
                    if allowed:
                        self._in_flight = key
                    else:
                        key = None
            for warm in doomed:
                warm.process.close()
            if key is not None:
                self._start(key)

    def _start(self, key: PoolKey) -> None:
        """Start one process of ``key`` and make it idle. Whatever the start raises, the
        thread goes on and the waiters of ``prewarm`` are woken: a caller then starts cold in
        its own thread, where the same error is raised and reported as the call's."""
        process: sandbox.SandboxProcess | None = None
        directory = same_file_at(key.spec.package_dir)  # before: a later swap reads as stale
        try:
            process = sandbox.start(key.spec)
        except Exception:  # any error: see the docstring (the cold start reports it)
            process = None
        with self._cond:
            self._in_flight = None
            stale, self._in_flight_stale = self._in_flight_stale, False
            if process is not None and stale:
                self._counts["stale"] += 1
            elif process is not None and not self._closed:
                warm = _Warm(process, time.monotonic(), directory)
                self._idle.setdefault(key, deque()).append(warm)
                self._counts["started"] += 1
                process = None
            self._cond.notify_all()
        if process is not None:
            process.close()


# The pools not closed yet, closed at interpreter exit. One hook for all of them: a hook per
# pool (it was one ``atexit.register`` per ``WarmPool``, never unregistered) kept an entry
# for every pool ever made, closed or collected, for the life of the process: a host making
# a ``Splice(reuse=True)`` per session, or a project switched at its path, grew by one each.
_OPEN: weakref.WeakSet[WarmPool] = weakref.WeakSet()


def _close_at_exit() -> None:
    for pool in list(_OPEN):
        with contextlib.suppress(Exception):
            pool.close()


atexit.register(_close_at_exit)
