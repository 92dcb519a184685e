"""The ``BlobStore`` protocol: where published artifact bytes live.

Keys are content-addressed (``packages/<ns>/<name>/<version>/<sha256>.tar.gz``), so a put
of identical bytes under an existing key is a no-op (the retry path after a crash between
the artifact write and the metadata commit), while different bytes under an existing key
are refused with ``VERSION_EXISTS``. Other failures raise ``ARTIFACT_STORAGE_FAILED``; a
missing key raises ``NOT_FOUND``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass


@dataclass(frozen=True)
class BlobReader:
    """One stored artifact, read a piece at a time: a download streams it
    (registry/http/download.py) rather than holding the bytes whole. ``read(offset, count)``
    returns up to ``count`` bytes from ``offset`` and holds no open file between calls, so a
    slow download costs its connection's socket and nothing more (the open-file budget of
    splice_build/connections.py)."""

    size: int
    read: Callable[[int, int], bytes]


class BlobStore(Protocol):
    backend: str  # recorded in the version row ("fs", "memory", "s3", ...)

    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def reader(self, key: str) -> BlobReader: ...
    def url(self, key: str) -> str | None:
        """A direct public URL for the artifact, or None when only the registry serves it."""
        ...


def artifact_key(namespace: str, name: str, version: str, sha256_hex: str, *, legacy: bool) -> str:
    """The content-addressed key of one artifact (docs/compatibility.md#publish-flow step 8)."""
    suffix = "bundle.json" if legacy else "tar.gz"
    return f"packages/{namespace}/{name}/{version}/{sha256_hex}.{suffix}"


def conflict(key: str) -> RegistryError:
    return RegistryError(
        ErrorCode.VERSION_EXISTS, f"A different artifact is already stored under {key}"
    )


def missing(key: str) -> RegistryError:
    return RegistryError(ErrorCode.NOT_FOUND, f"Artifact {key} not found")
