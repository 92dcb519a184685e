"""An in-memory provider: real code with no network, for tests of routing, fallback and caching.

``MemoryProvider(name, answers)`` serves the capabilities named in ``answers``; each answer
is data to return or a ``ProviderFailure`` to raise. ``calls`` records what was asked.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure


class MemoryProvider:
    hosts: tuple[str, ...] = ()
    key_hosts: tuple[str, ...] = ()
    key_is_endpoint = False

    def __init__(
        self,
        name: str,
        answers: Mapping[str, Any],
        *,
        key_variable: str | None = None,
        key_required: bool = False,
    ) -> None:
        self.name = name
        self.title = name
        self.key_variable = key_variable
        self.key_required = key_required
        self.capabilities = frozenset(answers)
        self._answers = dict(answers)
        self._lock = threading.Lock()
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        with self._lock:
            self.calls.append((capability, dict(args)))
        answer = self._answers[capability]
        if isinstance(answer, ProviderFailure):
            raise answer
        return ProviderData(answer, f"memory:{capability}")
