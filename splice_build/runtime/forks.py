"""What a child of ``os.fork()`` does with the sandbox processes its parent holds: nothing.

A program holding a ``Splice`` (or a ``SpliceRuntime`` with a pool or reuse) may fork:
``multiprocessing``'s default start method on Linux, a daemonizing server, a test runner.
The child inherits a copy of every pool, with the parent's idle processes and the pipes to
them. Left as they were, the child's first call took the parent's process, found
``Popen.poll()`` answering "exited" (it is not the child's child, so ``waitpid`` fails) and
killed it; a child that closed its SDK or merely exited killed the parent's idle processes
(``close``, and the pool's ``atexit`` close); and the pool's thread, which does not exist in
the child, never served the start a second call waited for (with ``reuse`` that call waited
for ever).

So every holder registered here forgets, in the child, what it held: the child's copies of
the pipes are closed, no process is signalled or waited for, locks are made anew (another
thread may have held one at the fork), and the pool starts empty; the child's calls start
processes of its own, with a thread of its own.

The other way round, every sandbox start forks (``preexec_fn``), often from a thread while
the program's other threads go on: ``settle_fork_hooks`` runs before each such fork.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import weakref
from typing import Protocol

# Standard modules that, when first imported, register a pair of fork hooks: a lock taken
# before a fork and released after it in the parent.
_PAIRED_HOOKS = ("logging", "concurrent.futures.thread")


class ForkHolder(Protocol):
    def forget_after_fork(self) -> None:
        """In the child: drop the parent's processes without touching them."""


_HOLDERS: weakref.WeakSet[ForkHolder] = weakref.WeakSet()


def forget_in_children(holder: ForkHolder) -> None:
    """Have ``holder.forget_after_fork()`` run in every child this process forks."""
    _HOLDERS.add(holder)


def settle_fork_hooks() -> None:
    """Import the modules of ``_PAIRED_HOOKS`` before this process forks, when another thread
    could import them while the fork is under way.

    CPython runs the ``before`` hooks registered when a fork begins and the ``after_in_parent``
    hooks registered when it ends. A module imported by another thread in between (an asyncio
    program's first ``asyncio.to_thread`` imports ``concurrent.futures.thread``) has its lock
    released without having taken it: that program's ``to_thread`` raised ``RuntimeError:
    release unlocked lock`` (about one run in three of ``to_thread(splice.run, ...)`` while
    other threads made calls), or, released while another thread held it, let two threads in.
    Once imported, the pair is balanced for every later fork. A single-threaded process (the
    one-shot CLI) has no other thread to import them and loads neither."""
    if threading.active_count() > 1:
        for name in _PAIRED_HOOKS:
            # Also when another thread is importing it now: import_module waits for that
            # import to finish (and its hooks to be registered); loaded, it is a lookup.
            importlib.import_module(name)


def fork_probe() -> int:
    """``os.fork()`` for a probe child, which never execs and only reports on a pipe: the
    fork hooks settled first (``settle_fork_hooks``), and in the child a server's listening
    sockets closed at once (splice_build/listen.py ``close_in_child``), as a sandbox child's
    are. A probe lives some milliseconds (the isolation probe builds namespaces and a file
    view), and a server killed outright meanwhile kept its port accepting connections nobody
    would answer. A program that made no listening socket never imported that module, and
    nothing is imported for it here."""
    settle_fork_hooks()
    listen = sys.modules.get("splice_build.listen")
    pid = os.fork()
    if pid == 0 and listen is not None:
        listen.close_in_child()
    return pid


def reap(pid: int) -> None:
    """Wait for a probe child that has said all it has to say (its report pipe reached its
    end), whose exit status nobody needs. A program that ignores SIGCHLD (``signal.signal(
    signal.SIGCHLD, signal.SIG_IGN)``, common in servers that never wait for their children)
    has its children reaped by the kernel: ``waitpid`` then fails with ECHILD once the child
    is gone, which raised out of the isolation probe and made every call ``TOOL_CRASHED``
    ("No child processes"). So a probe's answer never comes from its exit status."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _in_child() -> None:
    for holder in list(_HOLDERS):
        holder.forget_after_fork()


os.register_at_fork(after_in_child=_in_child)
