"""The written bytes of anonymous read answers, kept by what they are made of.

Writing a version's answer costs the server about 0.1 s of CPU for a manifest of 2 MiB
(parsing the stored text, writing it compactly, then indented), and it was paid again for
every anonymous ``GET``, for the same bytes. An answer is kept here under its ``key``: every
row and column it is built from, except what the store never changes (a version's manifest,
docs/registry.md: the immutability triggers). A publish, a signature, a key's revocation or an
artifact's move changes the key, so a changed answer is built again and never served stale,
and each process (``--workers``) keeps its own copies with no signal to pass between them.

The copies are bounded by ``MAX_BYTES`` in all, the least recently used dropped first; an
answer larger than ``MAX_ANSWER`` is written for each request as before. Each answer carries
a strong ETag (a digest of its bytes), and a request whose ``If-None-Match`` names it is
answered ``304 Not Modified`` without a body. ``KeptCache`` is the keeping, bound and charge
of any value made from a ``Keyed`` document (the MCP ``registry_package_info`` keeps what it
reads of a manifest with it: registry/mcp_backend.py).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from splice_build.records import dataclass
from splice_build.registry.http.errors import json_bytes
from splice_build.registry.service.read import Keyed

MAX_BYTES = 64 * 1024 * 1024  # all the kept answers of one process
MAX_ANSWER = 8 * 1024 * 1024  # the largest kept: a 2 MiB manifest indented is at most ~4.2 MiB

V = TypeVar("V")


@dataclass(frozen=True)
class Answer:
    body: bytes
    etag: str  # quoted, as the header carries it


Charge = Callable[[Keyed], Callable[[float], None]]
"""A client's budget of costly reads (registry/service/ratelimit.py): charges an answer about
to be written, or raises ``RATE_LIMITED``, and returns what charges the CPU (this thread's
seconds) its writing took."""


def _answer(body: bytes) -> Answer:
    return Answer(body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')


class KeptCache(Generic[V]):
    """Values made from keyed documents, kept by key, least recently used dropped past
    ``max_bytes`` of their ``size`` (thread-safe: the handlers run on the thread pool)."""

    def __init__(
        self,
        make: Callable[[Keyed], V],
        size: Callable[[V], int],
        max_bytes: int = MAX_BYTES,
        max_one: int = MAX_ANSWER,
    ) -> None:
        self._make = make
        self._size = size
        self._max_bytes = max_bytes
        self._max_one = max_one
        self._kept: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, document: Keyed, charge: Charge) -> V:
        """The value kept for ``document.key``, or one made (and kept), once ``charge`` (the
        client's budget of costly reads) let it be, then charged the CPU the making took."""
        with self._lock:
            kept = self._kept.get(document.key)
            if kept is not None:
                self._kept.move_to_end(document.key)
                return kept[0]
        settle = charge(document)
        began = time.thread_time()
        made = self._make(document)  # outside the lock: it may take 0.1 s
        settle(time.thread_time() - began)
        size = self._size(made)
        if size <= self._max_one:
            self._keep(document.key, made, size)
        return made

    def _keep(self, key: Hashable, value: V, size: int) -> None:
        with self._lock:
            previous = self._kept.pop(key, None)
            if previous is not None:
                self._bytes -= previous[1]
            self._kept[key] = (value, size)
            self._bytes += size
            while self._bytes > self._max_bytes:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._bytes -= dropped


class AnswerCache(KeptCache[Answer]):
    """Written answers by key (their bytes counted)."""

    def __init__(self, max_bytes: int = MAX_BYTES, max_answer: int = MAX_ANSWER) -> None:
        super().__init__(
            lambda document: _answer(json_bytes(document.build())),
            lambda answer: len(answer.body),
            max_bytes,
            max_answer,
        )


def names_etag(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (``*``, a list, weak or strong:
    RFC 9110 compares weakly for this header)."""
    if if_none_match is None:
        return False
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False
