"""The default broker, built on the first capability call (runs without one cost nothing)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.runtime.forks import forget_in_children

if TYPE_CHECKING:
    from splice_build.broker.broker import Broker


class LazyDefaultBroker:
    """A ``CapabilityBroker`` that imports and builds ``default_broker`` when first called.

    Importing the broker and its providers costs ~50 ms, which a tool that never calls
    ``ctx.capability`` should not pay. One instance keeps one broker, so its cache lives as
    long as the SDK object that owns it (built under a lock: concurrent first calls
    share it, with its cache and its limits).
    """

    def __init__(self, *, project_root: Path, env: Mapping[str, str], home: Path) -> None:
        self._project_root = project_root
        self._env = dict(env)
        self._home = home
        self._broker: Broker | None = None
        self._lock = threading.Lock()
        forget_in_children(self)

    def forget_after_fork(self) -> None:
        """In a child of ``fork`` (runtime/forks.py): another thread's first call may have
        held the lock while it built the broker (about 50 ms of imports), and no thread of
        the child would release it; every capability call of the child's tools then waited
        for it to the tool's timeout. The child builds a broker of its own if it has none."""
        self._lock = threading.Lock()

    def call(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        with self._lock:
            if self._broker is None:
                from splice_build.broker.broker import default_broker

                self._broker = default_broker(
                    project_root=self._project_root, env=self._env, home=self._home
                )
            broker = self._broker
        return broker.call(request)
