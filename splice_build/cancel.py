"""Cancelling a call in flight from another thread (docs/runtime.md#cancellation).

An MCP client that gives up on a ``tools/call`` sends ``notifications/cancelled``; the
server then flips the call's ``Cancellation`` from the thread that read the notification.
The runtime watches the token for the call's sandbox process: a cancel ends that process at
once (``SandboxProcess.end_now``: SIGKILL through pidfds, so no other process is ever hit),
and the call's own thread then finds its pipes closed and ends the group on the same path as
a timeout. A process of a cancelled call is never kept for reuse.

The token reaches the runtime as the context of the calling thread (``cancellable``), so
the SDK's ``run`` keeps its signature: a call made outside ``cancellable`` cannot be
cancelled.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from splice_build.runtime.sandbox import SandboxProcess


class Cancellation:
    """One call's cancel switch: flipped once, from any thread; never flipped back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._process: SandboxProcess | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> bool:
        """Flip the switch: end the watched process now, and run the callbacks (each once).
        False when it was already flipped (nothing more is done)."""
        with self._lock:
            if self._cancelled:
                return False
            self._cancelled = True
            if self._process is not None:
                self._process.end_now()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()
        return True

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the call is cancelled (at once if it already is); returns
        the function that removes it."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def watch(self, process: SandboxProcess) -> None:
        """The call runs in ``process`` from now on: a cancel ends it (at once if the call
        is already cancelled)."""
        with self._lock:
            self._process = process
            if self._cancelled:
                process.end_now()

    def unwatch(self) -> bool:
        """The call is over: no cancel reaches its process any more. Whether it was
        cancelled (its process then must not be kept)."""
        with self._lock:
            self._process = None
            return self._cancelled


_current: ContextVar[Cancellation | None] = ContextVar("splice_cancellation", default=None)


@contextlib.contextmanager
def cancellable(token: Cancellation) -> Iterator[Cancellation]:
    """Calls the runtime runs in this context are ended when ``token`` is cancelled."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def active() -> Cancellation | None:
    """The calling context's token, or None outside ``cancellable``."""
    return _current.get()


def current() -> Cancellation:
    """The calling context's token, or a fresh one nobody can cancel."""
    token = _current.get()
    return token if token is not None else Cancellation()
