"""Opt-in reuse: sandbox processes kept between calls of one package under one grant.

A reused process is a warm process started with ``SandboxSpec.reuse`` (the host then serves
another job after a success, host/serve.mjs). Between calls it waits here, under the
``PoolKey`` it was started for — the package directory, its files digest, the grant paths
and what each names, the limits, the isolation plan — and only a call with an equal key
takes it: never two packages, never two grants. A process is taken by one call at a time
(it leaves the pool while the call runs), so concurrent calls never share one: each takes
its own.

It is given back only after a clean success (session.py: nothing of the call left open, the
output accepted) and only while it is under the policy's limits (spec/reuse.py): a failure, a
timeout, the call count, the resident memory, the CPU time used or the idle time end it. The
CPU time matters because the kernel's CPU limit (isolation/rlimits.py) counts the process's
whole life: a process is kept only while the longest call could still use its full share.
While it waits it is stopped (SIGSTOP to its process group as ``give_back`` keeps it; Node
is seen stopped before ``take`` hands it out, else it is ended) and it is
continued only by the call that takes it, once that call's from-bytes check passed, just
before its job is sent (``resume``):
work a call left running (timers, thread-pool jobs such as a ``crypto.pbkdf2``) runs only
inside a later call of the same key, bounded by that call's deadline, never between calls
(where it burned CPU after its call's result, and read and wrote a grant the user had moved
aside since). A call takes it only if it is still alive, still within the memory and CPU
limits, and has written nothing to its message pipe since its result. A call whose key
differs from an idle process's key for the same package directory (its files or grant
changed) ends that process. The from-bytes check before each call is the runtime's, as for
any warm process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import deque

from splice_build.file_keys import same_file_at
from splice_build.records import dataclass, field
from splice_build.runtime.forks import forget_in_children
from splice_build.runtime.isolation.rlimits import CPU_SECONDS
from splice_build.runtime.limits import MAX_TIMEOUT_MS
from splice_build.runtime.pool import CHECK_SECONDS, PoolKey
from splice_build.runtime.sandbox import SandboxProcess
from splice_build.spec.reuse import ReusePolicy

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# What a kept process may have used: the longest call then still has its full CPU share.
CPU_BUDGET_SECONDS = CPU_SECONDS - MAX_TIMEOUT_MS / 1000
# How long ``take`` waits for a kept Node to be seen stopped (microseconds, unless its main
# thread waits on a disk); past it, the process is ended. Waiting there, not in
# ``give_back``, keeps the wait off the path of a call's answer, and one thread's state is
# read, not every thread's: 4 calls in flight lost a third of their throughput to waiting
# for all of Node's threads in ``give_back``.
STOP_WAIT_SECONDS = 2.0


@dataclass
class Lease:
    """One reused process and what it has served."""

    key: PoolKey
    process: SandboxProcess
    # The declared variables its first job installed (the host reads them once).
    env: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    last_used: float = field(default_factory=time.monotonic)
    node_pid: int | None = None  # Node's pid as this parent sees it (for its memory)
    # Its package directory's (device, inode) when it was leased for its first job: the
    # reaper ends it once the directory is gone or another one (pool.py ``_take_stale``).
    # Found after that job, a directory removed or replaced during it read as current.
    directory: tuple[int, int] | None = None


@dataclass(frozen=True)
class ReuseStats:
    """Counters since the pool was created (for tests and benchmarks)."""

    idle: int  # processes waiting for their next call now
    reused: int  # calls served by a process that had served one before
    recycled: int  # processes ended by the policy (calls, memory, idle time, eviction)
    discarded: int  # processes ended because their package's files or grant changed


class ReusePool:
    """Idle reused processes by key, bounded and expiring; thread-safe."""

    def __init__(self, policy: ReusePolicy) -> None:
        self.policy = policy
        self._cpu_budget = (
            CPU_BUDGET_SECONDS if policy.max_cpu_seconds is None else policy.max_cpu_seconds
        )
        self._cond = threading.Condition()
        self._idle: dict[PoolKey, deque[Lease]] = {}
        self._closed = False
        self._reaper: threading.Thread | None = None
        self._checked_at = time.monotonic()
        self._counts = dict.fromkeys(("reused", "recycled", "discarded"), 0)
        forget_in_children(self)

    def take(self, key: PoolKey, env: dict[str, str]) -> Lease | None:
        """An idle process of ``key`` that is still alive and holds ``env``, or None; still
        stopped (``resume`` continues it just before its job). Idle processes of the same
        package under another key or environment are ended first (the package, its grant or
        the values of its variables changed)."""
        doomed: list[Lease] = []
        lease = None
        with self._cond:
            for other in [k for k in self._idle if k != key and _same_package(k, key)]:
                stale = self._idle.pop(other)
                self._counts["discarded"] += len(stale)
                doomed += stale
            queue = self._idle.get(key)
            if queue and any(kept.env != env for kept in queue):
                stale = [kept for kept in queue if kept.env != env]
                self._counts["discarded"] += len(stale)
                doomed += stale
                queue = self._idle[key] = deque(kept for kept in queue if kept.env == env)
            while queue and lease is None:
                candidate = queue.pop()  # the most recently used: its memory is warm
                if candidate.process.popen.poll() is not None or not _quiet(candidate.process):
                    doomed.append(candidate)  # ended, or said something after its result
                elif not (self._memory_ok(candidate) and self._cpu_ok(candidate)):
                    self._counts["recycled"] += 1  # grew or ran while it waited
                    doomed.append(candidate)
                else:
                    lease = candidate
            if queue is not None and not queue:
                del self._idle[key]
        if lease is not None:
            seen = _seen_stopped(lease)  # outside the lock: it may wait for a thread
            with self._cond:
                self._counts["reused" if seen else "discarded"] += 1
            if not seen:  # a thread never stopped: it may have run while it waited
                doomed.append(lease)
                lease = None
        for stale_lease in doomed:
            stale_lease.process.close()
        return lease

    def give_back(self, lease: Lease) -> None:
        """After a clean success: keep the process, stopped, for its next call, unless a
        limit says it is done or it cannot be stopped (then it ends here)."""
        lease.calls += 1
        lease.last_used = time.monotonic()
        if lease.node_pid is None:
            lease.node_pid = _node_pid(lease.process)
        stopped = lease.node_pid is not None and _signal_group(lease.process, signal.SIGSTOP)
        doomed: list[Lease] = []
        with self._cond:
            if self._closed or not stopped or not self._within_limits(lease):
                self._counts["recycled"] += not self._closed
                doomed.append(lease)
            else:
                was_empty = not self._idle
                self._idle.setdefault(lease.key, deque()).append(lease)
                doomed += self._over_bound()
                self._start_reaper()
                if was_empty:  # else the reaper already waits for an earlier expiry
                    self._cond.notify_all()
        for done in doomed:
            done.process.close()

    def stats(self) -> ReuseStats:
        with self._cond:
            return ReuseStats(idle=sum(len(q) for q in self._idle.values()), **self._counts)

    def idle_pids(self) -> list[int]:
        with self._cond:
            return [lease.process.pid for q in self._idle.values() for lease in q]

    def close(self) -> None:
        """End every idle process and the reaper."""
        with self._cond:
            self._closed = True
            doomed = [lease for q in self._idle.values() for lease in q]
            self._idle.clear()
            self._cond.notify_all()
            reaper = self._reaper
        for lease in doomed:
            lease.process.close()
        if reaper is not None and reaper is not threading.current_thread():
            reaper.join(timeout=10)

    def forget_after_fork(self) -> None:
        """In a child of ``fork``: the parent's kept processes are not the child's (taking
        one killed it); none is kept, the reaper is the child's own (runtime/forks.py)."""
        inherited = [lease.process for q in self._idle.values() for lease in q]
        self._cond = threading.Condition()
        self._idle = {}
        self._reaper = None
        for process in inherited:
            process.forget()

    # under the lock ----------------------------------------------------------------------
    def _within_limits(self, lease: Lease) -> bool:
        return (
            lease.calls < self.policy.max_calls and self._memory_ok(lease) and self._cpu_ok(lease)
        )

    def _cpu_ok(self, lease: Lease) -> bool:
        """Its CPU time is known and within the budget (read as its memory is)."""
        used = None if lease.node_pid is None else _cpu_seconds(lease.node_pid)
        return used is not None and used <= self._cpu_budget

    def _memory_ok(self, lease: Lease) -> bool:
        """Its resident memory is known and within the policy (read after each call, and
        again when a call takes it: code the package left running may grow between calls)."""
        resident = None if lease.node_pid is None else _resident_bytes(lease.node_pid)
        return resident is not None and resident <= self.policy.max_memory_mb * 1024 * 1024

    def _over_bound(self) -> list[Lease]:
        """The least recently used idle processes beyond ``max_idle``, taken out."""
        doomed: list[Lease] = []
        while sum(len(q) for q in self._idle.values()) > self.policy.max_idle:
            key = min((q[0].last_used, k) for k, q in self._idle.items() if q)[1]
            doomed.append(self._idle[key].popleft())
            if not self._idle[key]:
                del self._idle[key]
        self._counts["recycled"] += len(doomed)
        return doomed

    def _take_moved(self) -> list[Lease]:
        """The idle processes whose package directory is gone or another one than when
        they were first leased (a few stats, every ``CHECK_SECONDS``), taken out."""
        moved: list[Lease] = []
        for key in list(self._idle):
            directory = same_file_at(key.spec.package_dir)  # None: gone
            kept: deque[Lease] = deque()
            for lease in self._idle[key]:
                here = directory is not None and lease.directory == directory
                (kept.append if here else moved.append)(lease)
            if kept:
                self._idle[key] = kept
            else:
                del self._idle[key]
        self._counts["discarded"] += len(moved)
        return moved

    def _start_reaper(self) -> None:
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap, name="splice-reuse", daemon=True)
            self._reaper.start()

    # the reaper thread -------------------------------------------------------------------
    def _reap(self) -> None:
        """End processes idle for ``idle_seconds``, and every ``CHECK_SECONDS`` those whose
        package directory is gone or another one (pool.py does the same for warm
        processes: a kept process of a removed package stayed, stopped, for up to
        ``idleSeconds``, an hour at most); runs until ``close``."""
        while True:
            with self._cond:
                if self._closed:
                    return
                now = time.monotonic()
                doomed: list[Lease] = []
                for key in list(self._idle):
                    queue = self._idle[key]
                    while queue and now - queue[0].last_used >= self.policy.idle_seconds:
                        doomed.append(queue.popleft())
                    if not queue:
                        del self._idle[key]
                self._counts["recycled"] += len(doomed)
                if now - self._checked_at >= CHECK_SECONDS:
                    self._checked_at = now
                    doomed += self._take_moved()
                if not doomed:
                    oldest = [q[0].last_used for q in self._idle.values() if q]
                    expiry = min(oldest) + self.policy.idle_seconds if oldest else None
                    check = self._checked_at + CHECK_SECONDS
                    self._cond.wait(None if expiry is None else min(expiry, check) - now)
            for lease in doomed:
                lease.process.close()


def resume(process: SandboxProcess) -> bool:
    """Continue a process ``take`` returned, just before its job is sent (False when it
    cannot be signalled: it is not used)."""
    return _signal_group(process, signal.SIGCONT)


def _signal_group(process: SandboxProcess, signum: int) -> bool:
    """Send ``signum`` to the process group (False when it cannot be: not kept)."""
    try:
        os.killpg(process.pid, signum)
    except OSError:
        return False
    return True


def _seen_stopped(lease: Lease) -> bool:
    """Wait until the stop has reached the kept process's Node; False when that cannot be
    seen in time (or read from ``/proc``): the process is not used."""
    if lease.node_pid is None:
        return False
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    while not _stop_reached(lease.node_pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.0002)
    return True


def _stop_reached(pid: int) -> bool:
    """Node's main thread is in the group stop (state ``T``): the stop reached the process.
    A group stop is the whole process's: once one thread has stopped for it, the kernel has
    marked it on every thread, and none runs the tool's code again before ``SIGCONT``. False
    when the state is another, or cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rpartition(")")[2].split()[:1]
    except OSError:
        return False
    return state == ["T"]


def _quiet(process: SandboxProcess) -> bool:
    """Nothing arrived on its message pipe or its stdout/stderr since its result: no frame
    or log line of code the package left running, and no hang-up. Anything there would be
    read as the next call's (a later caller's logs holding what an earlier call logged).
    ``wait_readable``, not ``select.poll``: a program monkey-patched by a green-thread library
    has none, and every reuse raised AttributeError out of ``run`` (the kept process lost)."""
    from splice_build.runtime.sandbox import wait_readable

    streams = (process.popen.stdout, process.popen.stderr)
    fds = [process.message_fd, *(s.fileno() for s in streams if s is not None)]
    return not wait_readable(fds, 0)


def _same_package(a: PoolKey, b: PoolKey) -> bool:
    return a.spec.package_dir == b.spec.package_dir


def _node_pid(process: SandboxProcess) -> int | None:
    """Node's pid: the started process itself, or with the OS layer its one child (PID 1 of
    the namespace; the started process only waits for it)."""
    if not process.isolation.os_layer:
        return process.pid
    with contextlib.suppress(OSError, ValueError):
        path = f"/proc/{process.pid}/task/{process.pid}/children"
        with open(path, encoding="ascii") as f:
            children = f.read().split()
        if children:
            return int(children[0])
    return None


def _resident_bytes(pid: int) -> int | None:
    """Resident memory of ``pid`` (None when it cannot be read: the process is not kept)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of ``pid`` (None when it cannot be read: not kept). The
    fields are read after the last ``)``: the command name may hold spaces and parentheses."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, ValueError, IndexError):
        return None
