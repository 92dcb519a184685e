"""The content-addressed artifact cache shared by every project of a user.

docs/compatibility.md#user-state: ``SPLICE_HOME/cache/artifacts/sha256/<hex>`` holds verified artifacts only.
An entry is trusted by nobody: :meth:`ArtifactCache.get` re-hashes it on every read and deletes
a corrupt one, so the caller fetches it again. Writes are best effort (temp file + rename): a
cache that cannot be written never fails an install.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from splice_build.project.atomic import atomic_write_bytes
from splice_build.spec.digests import INTEGRITY_PREFIX, integrity_of, is_integrity

_log = logging.getLogger(__name__)


class ArtifactCache:
    """Artifacts by integrity under ``directory`` (``<directory>/sha256/<hex>``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def path_for(self, integrity: str) -> Path:
        """Where the artifact with ``integrity`` lives; raises ``AssertionError`` on a bad id."""
        if not is_integrity(integrity):
            raise AssertionError(f"BUG: not an integrity string: {integrity!r}")
        return self.directory / "sha256" / integrity[len(INTEGRITY_PREFIX) :]

    def get(self, integrity: str, size: int | None = None) -> bytes | None:
        """The cached bytes if they still hash to ``integrity`` (and have ``size``), else None.

        A corrupt entry is deleted, so the next fetch replaces it.
        """
        path = self.path_for(integrity)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if integrity_of(data) == integrity and (size is None or len(data) == size):
            return data
        _log.warning("deleting corrupt cache entry %s", path)
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def put(self, data: bytes) -> None:
        """Store verified ``data`` under its integrity (best effort, never raises OSError)."""
        path = self.path_for(integrity_of(data))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, data)
        except OSError as exc:
            _log.warning("could not write cache entry %s: %s", path, exc)
