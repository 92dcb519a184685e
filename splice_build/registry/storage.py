"""A registry data directory: ``registry.db`` (SQLite metadata) + ``artifacts/`` (blobs).

The same layout serves ``splice registry serve --data DIR``, ``splice registry admin`` and
the embedded registry under ``SPLICE_HOME``.
"""

from __future__ import annotations

from pathlib import Path

from splice_build.registry.blobs.filesystem import FilesystemBlobStore
from splice_build.registry.db.sqlite import SqliteMetadataStore
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.service.registry_service import RegistryService

DB_FILE = "registry.db"
ARTIFACTS_DIR = "artifacts"


def open_service(
    data: Path, *, admin_token_sha256: str | None = None, limits: RateLimits | None = None
) -> RegistryService:
    """Open (creating and migrating as needed) the registry stored in ``data``."""
    data.mkdir(parents=True, exist_ok=True)
    meta = SqliteMetadataStore(data / DB_FILE)
    blobs = FilesystemBlobStore(data / ARTIFACTS_DIR)
    return RegistryService(meta, blobs, admin_token_sha256=admin_token_sha256, limits=limits)
