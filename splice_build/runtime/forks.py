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
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol


class ForkHolder(Protocol):
    def forget_after_fork(self) -> None:
        """In the child: drop the parent's processes without touching them."""


_HOLDERS: weakref.WeakSet[ForkHolder] = weakref.WeakSet()


def forget_in_children(holder: ForkHolder) -> None:
    """Have ``holder.forget_after_fork()`` run in every child this process forks."""
    _HOLDERS.add(holder)


def _in_child() -> None:
    for holder in list(_HOLDERS):
        holder.forget_after_fork()


os.register_at_fork(after_in_child=_in_child)
