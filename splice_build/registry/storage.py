"""Where a registry keeps its data: the back ends chosen by configuration.

By default a data directory holds ``registry.db`` (SQLite metadata) and ``artifacts/``
(blobs); ``splice registry serve --data DIR``, ``splice registry admin`` and the embedded
registry under ``SPLICE_HOME`` all use that layout. A served registry may instead keep its
metadata in PostgreSQL and its artifacts in an S3-compatible bucket, so several server
processes on several machines share one store (``StorageConfig.from_env``):

- ``SPLICE_REGISTRY_DATABASE_URL=postgresql://user@host:5432/db``
- ``SPLICE_REGISTRY_ARTIFACTS=s3://bucket/prefix`` (AWS credentials and region from the
  usual AWS variables or files; ``SPLICE_REGISTRY_S3_ENDPOINT`` for a non-AWS service)

Each setting is independent; whatever is not configured stays in the data directory. After
a switch to S3, artifacts already in the data directory stay readable from there until
``POST /admin/artifacts/migrate`` (or ``splice registry admin migrate-artifacts``) copies
them into the bucket. The embedded registry never reads these variables: it is always the
local SQLite store.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.blobs.interface import BlobStore
from splice_build.registry.db.interface import MetadataStore
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.service.registry_service import RegistryService

DB_FILE = "registry.db"
ARTIFACTS_DIR = "artifacts"
DATABASE_URL_ENV = "SPLICE_REGISTRY_DATABASE_URL"
ARTIFACTS_ENV = "SPLICE_REGISTRY_ARTIFACTS"
S3_ENDPOINT_ENV = "SPLICE_REGISTRY_S3_ENDPOINT"
POSTGRES_SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str


@dataclass(frozen=True)
class StorageConfig:
    """Back ends of a served registry; ``None`` means "in the data directory"."""

    database_url: str | None = None
    artifacts: S3Location | None = None
    s3_endpoint: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> StorageConfig:
        database = env.get(DATABASE_URL_ENV, "").strip() or None
        artifacts = env.get(ARTIFACTS_ENV, "").strip() or None
        endpoint = env.get(S3_ENDPOINT_ENV, "").strip() or None
        return cls(
            database_url=postgres_url(database) if database else None,
            artifacts=s3_location(artifacts) if artifacts else None,
            s3_endpoint=endpoint,
        )

    @property
    def needs_data_dir(self) -> bool:
        return self.database_url is None or self.artifacts is None

    def describe(self, data: Path) -> str:
        """Where metadata and artifacts live, without secrets (for the serve banner)."""
        from splice_build.registry.db.postgres import display_url

        meta = display_url(self.database_url) if self.database_url else str(data / DB_FILE)
        blobs = (
            f"s3://{self.artifacts.bucket}/{self.artifacts.prefix}".rstrip("/")
            if self.artifacts
            else str(data / ARTIFACTS_DIR)
        )
        return f"metadata: {meta}, artifacts: {blobs}"


def _split(text: str) -> SplitResult | None:
    """``text`` split as a URL, or None when ``urlsplit`` refuses it (``ValueError``: an
    unclosed ``[`` of an IPv6 host, or characters NFKC makes into a separator)."""
    try:
        return urlsplit(text)
    except ValueError:
        return None


def postgres_url(text: str) -> str:
    parts = _split(text)
    if parts is None or parts.scheme not in POSTGRES_SCHEMES:
        raise RegistryError(
            ErrorCode.INVALID_CONFIG,
            f"{DATABASE_URL_ENV} must be a postgresql:// URL",
            hint="Example: postgresql://splice@db.internal:5432/splice",
        )
    return text


def s3_location(text: str) -> S3Location:
    parts = _split(text)
    if parts is None or parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise RegistryError(
            ErrorCode.INVALID_CONFIG,
            f"{ARTIFACTS_ENV} must be s3://bucket or s3://bucket/prefix",
        )
    return S3Location(parts.netloc, parts.path.strip("/"))


def open_metadata(data: Path, config: StorageConfig) -> MetadataStore:
    if config.database_url is not None:
        from splice_build.registry.db.postgres import PostgresMetadataStore

        return PostgresMetadataStore(config.database_url)
    from splice_build.registry.db.sqlite import SqliteMetadataStore

    return SqliteMetadataStore(data / DB_FILE)


def open_blobs(data: Path, config: StorageConfig) -> BlobStore:
    if config.artifacts is not None:
        from splice_build.registry.blobs.s3 import S3BlobStore, make_client

        location = config.artifacts
        return S3BlobStore(location.bucket, location.prefix, client=make_client(config.s3_endpoint))
    from splice_build.registry.blobs.filesystem import FilesystemBlobStore

    return FilesystemBlobStore(data / ARTIFACTS_DIR)


def open_service(
    data: Path,
    *,
    admin_token_sha256: str | None = None,
    limits: RateLimits | None = None,
    config: StorageConfig | None = None,
) -> RegistryService:
    """Open (creating and migrating as needed) the registry stored in ``data`` / ``config``."""
    config = config or StorageConfig()
    if config.needs_data_dir:
        from splice_build.project.creation_modes import make_directories

        make_directories(data)
    meta = open_metadata(data, config)
    try:
        blobs = open_blobs(data, config)
    except BaseException:
        meta.close()
        raise
    return RegistryService(
        meta,
        blobs,
        admin_token_sha256=admin_token_sha256,
        limits=limits,
        previous_blobs=previous_blobs(data, config),
    )


def previous_blobs(data: Path, config: StorageConfig) -> tuple[BlobStore, ...]:
    """The data directory's artifacts when the configured store is elsewhere (S3).

    Versions published before the switch stay readable from there, and
    ``POST /admin/artifacts/migrate`` copies them into the configured store.
    """
    directory = data / ARTIFACTS_DIR
    if config.artifacts is None or not directory.is_dir():
        return ()
    from splice_build.registry.blobs.filesystem import FilesystemBlobStore

    return (FilesystemBlobStore(directory),)
