"""Bounded capture of the tool's stdout/stderr while it runs (docs/compatibility.md#ipc, Logs)."""

from __future__ import annotations

from splice_build.runtime.limits import MAX_LOG_BYTES

TRUNCATED_MARKER = "\n[logs truncated]\n"


class LogBuffer:
    """Keeps the first ``limit`` bytes and only counts the rest, so a flood costs no memory."""

    def __init__(self, limit: int = MAX_LOG_BYTES) -> None:
        self._limit = limit
        self._chunks: list[bytes] = []
        self._kept = 0
        self.total = 0

    def append(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._limit - self._kept
        if room > 0:
            piece = chunk[:room]
            self._chunks.append(piece)
            self._kept += len(piece)

    @property
    def truncated(self) -> bool:
        return self.total > self._kept

    def raw(self) -> bytes:
        return b"".join(self._chunks)

    def text(self) -> str:
        """The kept bytes as text, with the truncation marker, trimmed."""
        text = self.raw().decode("utf-8", "replace")
        if self.truncated:
            text += TRUNCATED_MARKER
        return text.strip()
