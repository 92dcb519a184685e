"""The registry's store back ends as test subjects: the same test body runs against each.

- ``sqlite``: the data directory (``registry.db`` + ``artifacts/``), the default.
- ``postgres``: a fresh PostgreSQL database and a fresh S3 bucket (moto) per backend, from
  the session's servers (``testing.services``).

A ``StoreBackend`` opens the stores in-process, gives a server process the environment that
selects them, and reaches the raw storage *without* store code (``execute``, ``dump``,
``artifacts``), which is how tests check what the database itself refuses or keeps.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splice_build.registry.blobs.interface import BlobStore
from splice_build.registry.db.interface import MetadataStore
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.storage import (
    ARTIFACTS_DIR,
    DB_FILE,
    S3Location,
    StorageConfig,
    open_blobs,
    open_metadata,
)
from testing.services import PostgresServer, S3Server

KINDS = ("sqlite", "postgres")
S3_PREFIX = "registry"


@dataclass(frozen=True)
class ScaleServices:
    """The session's PostgreSQL cluster and S3 server."""

    postgres: PostgresServer
    s3: S3Server


@dataclass
class StoreBackend:
    kind: str
    data: Path  # the data directory (unused by the postgres kind's stores, still given)
    database_url: str | None = None
    bucket: str | None = None
    s3: S3Server | None = None
    env: dict[str, str] = field(default_factory=dict)  # selects these stores in a process

    @property
    def config(self) -> StorageConfig:
        if self.kind == "sqlite":
            return StorageConfig()
        assert self.s3 is not None and self.bucket is not None
        return StorageConfig(
            database_url=self.database_url,
            artifacts=S3Location(self.bucket, S3_PREFIX),
            s3_endpoint=self.s3.endpoint,
        )

    # -- the stores, through their code ---------------------------------------------------

    def open_meta(self) -> MetadataStore:
        self.data.mkdir(parents=True, exist_ok=True)
        return open_metadata(self.data, self.config)

    def open_blobs(self) -> BlobStore:
        if self.kind == "sqlite":
            return open_blobs(self.data, self.config)
        from splice_build.registry.blobs.s3 import S3BlobStore

        assert self.s3 is not None and self.bucket is not None
        return S3BlobStore(self.bucket, S3_PREFIX, client=self.s3.client())

    def service(
        self, *, limits: RateLimits, admin_sha256: str | None = None, clock: Any = None
    ) -> RegistryService:
        kwargs: dict[str, Any] = {"admin_token_sha256": admin_sha256, "limits": limits}
        if clock is not None:
            kwargs["clock"] = clock
        return RegistryService(self.open_meta(), self.open_blobs(), **kwargs)

    # -- the raw storage, without store code ----------------------------------------------

    @property
    def integrity_error(self) -> type[Exception]:
        """What the database raises when a trigger or constraint refuses a statement."""
        if self.kind == "sqlite":
            return sqlite3.IntegrityError
        import psycopg

        return psycopg.errors.IntegrityError

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> int:
        """Run one statement on a direct connection (autocommit); rows affected."""
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.data / DB_FILE, isolation_level=None)
            try:
                return conn.execute(statement.replace("%s", "?"), params).rowcount
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.database_url or "", autocommit=True) as conn:
            return conn.execute(statement, params or None).rowcount

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.data / DB_FILE)
            try:
                return [tuple(r) for r in conn.execute(sql.replace("%s", "?"), params)]
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.database_url or "", autocommit=True) as conn:
            return [tuple(r) for r in conn.execute(sql, params or None).fetchall()]

    def schema_level(self) -> int:
        if self.kind == "sqlite":
            return int(self.query("PRAGMA user_version")[0][0])
        from splice_build.registry.db.postgres import SCHEMA_TABLE

        return int(self.query(f"SELECT max(version) FROM {SCHEMA_TABLE}")[0][0])

    def dump(self) -> bytes:
        """Everything the metadata store keeps, as bytes (the files, or every row as text)."""
        if self.kind == "sqlite":
            return b"".join(p.read_bytes() for p in sorted(self.data.glob(DB_FILE + "*")))
        tables = [
            row[0]
            for row in self.query(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
            )
        ]
        lines = []
        for table in tables:
            lines += [row[0] for row in self.query(f"SELECT t::text FROM {table} t")]
        return "\n".join(lines).encode()

    def artifacts(self) -> dict[str, bytes]:
        """Every stored artifact: key (below the store's root or prefix) → bytes."""
        if self.kind == "sqlite":
            root = self.data / ARTIFACTS_DIR
            return {
                path.relative_to(root).as_posix(): path.read_bytes()
                for path in sorted(root.rglob("*"))
                if path.is_file()
            }
        assert self.s3 is not None
        client = self.s3.client()
        found = {}
        listed = client.list_objects_v2(Bucket=self.bucket)
        for item in listed.get("Contents", []):
            body = client.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
            found[item["Key"].removeprefix(S3_PREFIX + "/")] = body
        return found

    def overwrite_artifact(self, key: str, data: bytes) -> None:
        """Damage storage behind the registry's back (the stored hash metadata is kept)."""
        if self.kind == "sqlite":
            (self.data / ARTIFACTS_DIR / key).write_bytes(data)
            return
        assert self.s3 is not None
        client = self.s3.client()
        name = f"{S3_PREFIX}/{key}"
        metadata = client.head_object(Bucket=self.bucket, Key=name)["Metadata"]
        client.put_object(Bucket=self.bucket, Key=name, Body=data, Metadata=metadata)


def make_backend(kind: str, data: Path, services: ScaleServices | None) -> StoreBackend:
    """A new, empty store of ``kind`` (the postgres kind needs the session's services)."""
    if kind == "sqlite":
        return StoreBackend(kind, data)
    if kind != "postgres" or services is None:
        raise AssertionError(f"BUG: backend {kind!r} without its services")
    url = services.postgres.create_database()
    bucket = services.s3.create_bucket()
    env = {
        **services.s3.env(),
        "SPLICE_REGISTRY_DATABASE_URL": url,
        "SPLICE_REGISTRY_ARTIFACTS": f"s3://{bucket}/{S3_PREFIX}",
    }
    return StoreBackend(kind, data, url, bucket, services.s3, env)
