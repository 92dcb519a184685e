"""The broker's bounded in-memory result cache (docs/compatibility.md#capabilities: ≤ 500 entries, per-type TTLs).

Only ``LIVE`` results are stored, keyed by capability and canonical arguments (never by
package or key: two skills asking the same question share the answer). AI results are never
cached: a generation is not a fact that stays true. Least recently used entries go first
when the cache is full; expired entries are dropped when they are looked up.

The cache is bounded in bytes as well as in entries: a tool chooses the arguments, so it can
make every call a new entry, and a web page it controls can make every answer megabytes.
Each entry is kept as its JSON text (so the bytes counted are the bytes held, and a replay
is a fresh copy nobody else holds); a result larger than a tool may receive
(``MAX_CAPABILITY_RESULT_BYTES``) is never stored, and the oldest entries go once all of them
together pass ``MAX_BYTES``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from splice_build.records import dataclass
from splice_build.runtime.limits import MAX_CAPABILITY_RESULT_BYTES
from splice_build.runtime.result_json import json_size, write_json
from splice_build.spec.js_date import iso_string

MAX_ENTRIES = 500  # docs/compatibility.md#capabilities
MAX_BYTES = 32 * 1024 * 1024  # all entries' JSON together (docs/capabilities.md)

# Seconds a LIVE result stays good, by capability family, then by exact name (which wins).
# Prices move fast; a mined transaction or a token's metadata does not.
_FAMILY_TTL: Mapping[str, float] = {
    "market": 30,
    "onchain": 15,
    "tokens": 60,
    "stock": 30,
    "perps": 30,
    "security": 600,
    "wallet": 60,
    "web": 600,
    "github": 300,
    "defi": 300,
    "global": 120,
    "macro": 3600,
    "equity": 300,
}
_EXACT_TTL: Mapping[str, float] = {
    "onchain.transaction": 300,
    "onchain.token": 3600,
    "onchain.contract": 3600,
    "market.ohlcv": 60,
}
NEVER_CACHED_FAMILIES = frozenset({"ai"})


def ttl_for(capability: str) -> float:
    """Seconds a result of ``capability`` may be replayed; 0 means never cached."""
    family = capability.split(".", 1)[0]
    if family in NEVER_CACHED_FAMILIES:
        return 0
    return _EXACT_TTL.get(capability, _FAMILY_TTL.get(family, 0))


def cache_key(capability: str, args: Any) -> str:
    """``<capability>:<sha256 of the canonical arguments>`` (sorted keys, no whitespace)."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{capability}:{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"


@dataclass(frozen=True)
class _Entry:
    text: bytes  # the result's JSON
    stored_at: float
    ttl: float


class ResultCache:
    """Thread-safe LRU of LIVE results; ``clock`` is injectable so tests can age entries."""

    def __init__(
        self,
        *,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        max_entry_bytes: int = MAX_CAPABILITY_RESULT_BYTES,
        clock: Callable[[], float] | None = None,
    ) -> None:
        import time

        self._max = max_entries
        self._max_bytes = max_bytes
        self._max_entry_bytes = min(max_entry_bytes, max_bytes)
        self._clock = clock or time.time
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        """The JSON bytes all entries hold together (at most ``max_bytes``)."""
        return self._bytes

    def get(self, key: str) -> tuple[Mapping[str, Any], dict[str, Any]] | None:
        """The stored result and its ``provenance.cache`` block, or None (absent or expired)."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if now >= entry.stored_at + entry.ttl:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
        ttl_ms = round(entry.ttl * 1000)
        return json.loads(entry.text), {
            "key": key,
            "cachedAt": iso_string(entry.stored_at),
            "ageMs": round((now - entry.stored_at) * 1000),
            "ttlMs": ttl_ms,
            "expiresAt": iso_string(entry.stored_at + entry.ttl),
        }

    def put(self, key: str, capability: str, result: Mapping[str, Any]) -> None:
        """Store a LIVE result unless its capability is never cached."""
        ttl = ttl_for(capability)
        if ttl <= 0:
            return
        try:
            # Counted first: one written only to be found too large cost a copy of it, up to
            # six times its size (runtime/result_json.py).
            size = json_size(result, self._max_entry_bytes)
            if size > self._max_entry_bytes:
                return
            text = write_json(result, size)
        except (ValueError, TypeError):  # no JSON form (the channel answers ERROR)
            return
        with self._lock:
            self._drop(key)
            self._entries[key] = _Entry(text, self._clock(), ttl)
            self._bytes += len(text)
            while len(self._entries) > self._max or self._bytes > self._max_bytes:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        """Remove ``key`` if present (the lock is held)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry.text)
