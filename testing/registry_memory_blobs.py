"""In-memory ``BlobStore``: a real implementation of the protocol for unit tests (no mocks); in
``testing/`` because nothing shipped needs it."""

from __future__ import annotations

import threading

from splice_build.registry.blobs.interface import BlobReader, conflict, missing


class MemoryBlobStore:
    backend = "memory"

    def __init__(self) -> None:
        self._blobs: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, key: str, data: bytes) -> None:
        with self._lock:
            existing = self._blobs.get(key)
            if existing is not None and existing != data:
                raise conflict(key)
            self._blobs[key] = bytes(data)

    def get(self, key: str) -> bytes:
        with self._lock:
            if key not in self._blobs:
                raise missing(key)
            return self._blobs[key]

    def reader(self, key: str) -> BlobReader:
        data = self.get(key)
        return BlobReader(len(data), lambda offset, count: data[offset : offset + count])

    def url(self, key: str) -> str | None:
        return None

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._blobs)
