"""Several server processes on one listening socket (``splice registry serve --workers N``).

The parent binds the socket and migrates the store (``server.serve``), then forks N workers
that each open their own store connections and run uvicorn on the inherited socket; the
kernel hands each new connection to whichever worker accepts it first. Everything the
workers share (packages, tokens, rate-limit windows and lockouts) lives in the store: SQLite
in WAL mode (one writer at a time across processes, queued on a ``flock``: ``db.sqlite``) or
PostgreSQL, and a counter is counted and judged in one atomic upsert (``db.sql_store.hit``),
so a limit holds across workers.

The parent only supervises, with every signal it handles blocked and taken synchronously
(``sigtimedwait``), so no handler runs between a fork and its bookkeeping:

- a worker that exits is started again, with a log line; one that dies within
  ``FAST_EXIT`` seconds of its start is restarted after ``RESTART_DELAY`` (a store that
  is down does not become a fork loop);
- SIGTERM, SIGINT or SIGHUP stops every worker with SIGTERM (uvicorn finishes the requests
  in flight), waits up to ``STOP_TIMEOUT`` seconds and kills what is left; then, as a single
  process does (splice_build/stopping.py), ``supervise`` returns after SIGTERM (exit 0) and
  raises SIGINT or SIGHUP again with the caller's handlers back in place (130, 129).

Workers run in their own process group, so a terminal's Ctrl-C reaches only the parent
(which then stops them once, gracefully), and with ``PR_SET_PDEATHSIG`` so that a parent
killed outright (``kill -9``) leaves no orphans.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import threading
import time
from collections.abc import Callable

FAST_EXIT = 1.0  # seconds: a worker that dies sooner is restarted after RESTART_DELAY
RESTART_DELAY = 1.0
STOP_TIMEOUT = 15.0  # seconds the workers get to finish their requests on SIGTERM
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1

log = logging.getLogger("splice.registry.workers")


def supervise(
    count: int, run_worker: Callable[[], None], on_ready: Callable[[], None] = lambda: None
) -> None:
    """Keep ``count`` forked processes running ``run_worker`` until SIGTERM/SIGINT/SIGHUP;
    ``on_ready`` runs once those signals are the supervisor's, before the workers start."""
    if threading.active_count() != 1:  # a fork would copy a thread's locks, not the thread
        raise AssertionError("BUG: the registry supervisor forks with threads running")
    # A stop signal the process was started ignoring (``nohup``'s SIGHUP, a background
    # job's SIGINT) stays ignored: blocked and waited for, it would stop the registry.
    stops = frozenset(s for s in _STOP_SIGNALS if signal.getsignal(s) != signal.SIG_IGN)
    handled = {signal.SIGCHLD, *stops}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, handled)
    # A handler keeps SIGCHLD pending while blocked (POSIX may discard an ignored signal).
    old_chld = signal.signal(signal.SIGCHLD, lambda *_: None)
    workers: dict[int, tuple[int, float]] = {}  # pid -> (slot, started at)
    try:
        on_ready()
        for slot in range(count):
            _start(slot, workers, run_worker)
        stopped_by = _run(count, workers, run_worker, stops)
    finally:
        again = _stop(workers, stops)
        signal.signal(signal.SIGCHLD, old_chld)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    stopped_by = again or stopped_by  # a later ^C or SIGHUP says how it ends, as uvicorn's
    if stopped_by != signal.SIGTERM:  # a service's normal stop returns (exit 0)
        signal.raise_signal(stopped_by)


def _run(
    count: int,
    workers: dict[int, tuple[int, float]],
    run_worker: Callable[[], None],
    stops: frozenset[int],
) -> int:
    """Restart workers as they exit; return the stop signal (one of ``stops``) once one
    arrives."""
    due: dict[int, float] = {}  # slot -> when to start it again
    while True:
        now = time.monotonic()
        for slot, when in sorted(due.items()):
            if when <= now:
                del due[slot]
                _start(slot, workers, run_worker)
        timeout = max(0.0, min(due.values()) - now) if due else 60.0
        info = signal.sigtimedwait({signal.SIGCHLD, *stops}, timeout)
        if info is not None and info.si_signo in stops:
            return info.si_signo
        for pid, status in _reap():
            slot, started = workers.pop(pid)
            quick = time.monotonic() - started < FAST_EXIT
            log.warning(
                "registry worker %d (pid %d) %s; starting it again%s",
                slot,
                pid,
                _describe(status),
                f" in {RESTART_DELAY:g} s" if quick else "",
            )
            due[slot] = time.monotonic() + (RESTART_DELAY if quick else 0.0)
        if len(workers) + len(due) != count:
            raise AssertionError("BUG: the supervisor lost track of a worker")


def _start(
    slot: int, workers: dict[int, tuple[int, float]], run_worker: Callable[[], None]
) -> None:
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the supervisor's code
        code = 1
        try:
            _become_worker(parent)
            run_worker()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            log.exception("registry worker %d failed", slot)
        finally:
            logging.shutdown()
            os._exit(code)
    workers[pid] = (slot, time.monotonic())


def _become_worker(parent: int) -> None:
    """Undo the supervisor's signal state; die with the parent; leave its process group."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for sig in _STOP_SIGNALS:  # uvicorn re-raises the signal it stopped for: exit quietly
        signal.signal(sig, _exit_quietly)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    os.setpgid(0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the prctl took effect
        raise SystemExit(0)


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _reap() -> list[tuple[int, int]]:
    """Every child that has exited: (pid, wait status)."""
    done = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done.append((pid, status))


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _stop(workers: dict[int, tuple[int, float]], stops: frozenset[int] = frozenset()) -> int:
    """SIGTERM every worker, wait for them (SIGKILL after ``STOP_TIMEOUT``), reap them all.

    A stop signal meanwhile (one of ``stops``) is passed on as a second SIGTERM, which ends a
    worker's grace as it does a single server's (splice_build/stopping.py): the supervisor
    took it and told no worker, so a second ^C or SIGTERM changed nothing and the requests in
    flight held the stop for the whole grace. Returns the last such signal other than
    SIGTERM (SIGINT, SIGHUP), else 0."""
    again = 0
    for pid in workers:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while workers:
        for pid, _status in _reap():
            workers.pop(pid, None)
        left = deadline - time.monotonic()
        if not workers:
            return again
        if left <= 0:
            log.warning("registry workers %s did not stop in time; killing them", sorted(workers))
            for pid in workers:
                _signal(pid, signal.SIGKILL)
            deadline = float("inf")
        info = signal.sigtimedwait({signal.SIGCHLD, *stops}, min(max(left, 0.0), 1.0))
        if info is not None and info.si_signo in stops:
            again = again if info.si_signo == signal.SIGTERM else info.si_signo
            for pid in workers:
                _signal(pid, signal.SIGTERM)
    return again


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # exited meanwhile; reaped by the caller
        os.kill(pid, sig)
