"""S3-compatible ``BlobStore`` (``boto3``): artifacts as objects under ``s3://bucket/prefix``.

Keys are the registry's content-addressed keys below the prefix. Integrity is checked at
both ends, because a bucket is storage we do not control:

- write: the object is sent with its SHA-256 (``ChecksumSHA256``, verified by the store on
  receipt) and the hex digest as metadata; afterwards its size and SHA-256 are read back
  and must match, otherwise the publish fails with ``ARTIFACT_STORAGE_FAILED`` before any
  metadata is written.
- read: the bytes must have the size and SHA-256 recorded at write time; a damaged object
  is ``ARTIFACT_STORAGE_FAILED``, never served, and one larger than any artifact
  (``MAX_ARCHIVE_BYTES``) is refused from its length, unread. So a download (``reader``)
  reads and checks the whole object before its first byte is sent, a piece at a time and
  keeping none, then serves it in ranged reads of ``WINDOW_BYTES`` that name the checked
  object's ETag (``If-Match``): an object replaced since is an ``OSError``, and the route
  aborts the download (registry/http/download.py). It kept the whole object in memory while
  it was streamed: 5 MiB for each slow client.

An existing key is compared byte for byte: identical bytes are the idempotent retry path,
different bytes are ``VERSION_EXISTS`` (``blobs.interface``). Concurrent writers of one key
can only write identical bytes (the key names their digest), so the last write is harmless.
Credentials, region and retries come from the usual AWS configuration (environment,
``~/.aws``, instance roles); ``endpoint_url`` selects an S3-compatible service.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from typing import Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.blobs.interface import BlobReader, conflict, missing
from splice_build.spec.limits import MAX_ARCHIVE_BYTES
from splice_build.spec.paths import is_safe_relative_path

INSTALL_HINT = "pip install 'splice-build[scale]'"
# What a download holds of its artifact at once: one ranged read of the bucket (so a 5 MiB
# artifact is 20 of them, after the check's one read of the whole object).
WINDOW_BYTES = 256 * 1024
_READ_BYTES = 256 * 1024  # a piece of the check's read
SHA256_METADATA = "sha256"  # x-amz-meta-sha256: hex digest recorded at write time
_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}


def make_client(endpoint_url: str | None = None) -> Any:
    """A thread-safe boto3 S3 client with bounded timeouts and standard retries."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        raise RegistryError(
            ErrorCode.STORAGE_UNAVAILABLE,
            "S3 support is not installed",
            hint=f"Install it with: {INSTALL_HINT}",
        ) from exc
    config = Config(
        connect_timeout=5,
        read_timeout=30,
        retries={"max_attempts": 3, "mode": "standard"},
        max_pool_connections=64,
    )
    return boto3.client("s3", endpoint_url=endpoint_url, config=config)


class S3BlobStore:
    backend = "s3"

    def __init__(self, bucket: str, prefix: str = "", *, client: Any) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client
        self._errors = (BotoCoreError, ClientError)
        try:
            self.client.head_bucket(Bucket=bucket)
        except self._errors as exc:
            raise _failed(f"Bucket {bucket} is not reachable", exc) from exc

    def object_key(self, key: str) -> str:
        if not is_safe_relative_path(key, allow_dot=False):
            raise AssertionError(f"BUG: unsafe artifact key {key!r}")
        return f"{self.prefix}/{key}" if self.prefix else key

    def put(self, key: str, data: bytes) -> None:
        name = self.object_key(key)
        digest = hashlib.sha256(data)
        if self._exists(name):
            if self._read(key, name) != data:
                raise conflict(key)
            return
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=name,
                Body=data,
                ContentLength=len(data),
                ContentType="application/octet-stream",
                ChecksumSHA256=base64.b64encode(digest.digest()).decode("ascii"),
                Metadata={SHA256_METADATA: digest.hexdigest()},
            )
            head = self.client.head_object(Bucket=self.bucket, Key=name, ChecksumMode="ENABLED")
        except self._errors as exc:
            raise _failed(f"Could not store artifact {key}", exc) from exc
        problems = _mismatches(head, len(data), digest.digest())
        if problems:
            raise RegistryError(
                ErrorCode.ARTIFACT_STORAGE_FAILED,
                f"The bucket stored artifact {key} with different bytes",
                details=problems,
            )

    def get(self, key: str) -> bytes:
        return self._read(key, self.object_key(key))

    def reader(self, key: str) -> BlobReader:
        name = self.object_key(key)
        size, etag = self._checked(key, name, keep=None)
        return BlobReader(size, _Window(self, name, size, etag).read)

    def url(self, key: str) -> str | None:
        return None  # the bucket may be private: the registry serves (and checks) the bytes

    def _exists(self, name: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=name)
        except self._errors as exc:
            if _is_not_found(exc):
                return False
            raise _failed(f"Could not look up {name}", exc) from exc
        return True

    def _read(self, key: str, name: str) -> bytes:
        kept: list[bytes] = []
        self._checked(key, name, keep=kept)
        return b"".join(kept)

    def _checked(self, key: str, name: str, *, keep: list[bytes] | None) -> tuple[int, str]:
        """The object's size and ETag once its bytes have the recorded size and SHA-256,
        read a piece at a time (appended to ``keep`` when given, else let go)."""
        digest = hashlib.sha256()
        size = 0
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=name)
            length = response.get("ContentLength")
            if not isinstance(length, int) or length > MAX_ARCHIVE_BYTES:
                response["Body"].close()
                raise RegistryError(
                    ErrorCode.ARTIFACT_STORAGE_FAILED,
                    f"Artifact {key} in the bucket is {length} bytes, larger than any "
                    f"artifact ({MAX_ARCHIVE_BYTES}); it is not served",
                )
            while size <= length and (piece := response["Body"].read(_READ_BYTES)):
                size += len(piece)
                digest.update(piece)
                if keep is not None:
                    keep.append(piece)
            response["Body"].close()
        except self._errors as exc:
            if _is_not_found(exc):
                raise missing(key) from exc
            raise _failed(f"Could not read artifact {key}", exc) from exc
        expected = response.get("Metadata", {}).get(SHA256_METADATA)
        actual = digest.hexdigest()
        if size != length or expected != actual:
            raise RegistryError(
                ErrorCode.ARTIFACT_STORAGE_FAILED,
                f"Artifact {key} in the bucket is damaged; it is not served",
                details=[f"recorded sha256: {expected}", f"stored sha256: {actual}"],
            )
        return size, str(response.get("ETag", ""))


class _Window:
    """A download's reads of one checked object: each ``read`` is served from the last
    ranged read of the bucket, or makes the next one (``WINDOW_BYTES``, ``If-Match`` the
    checked ETag). Reads come one at a time, in order (registry/http/download.py)."""

    def __init__(self, store: S3BlobStore, name: str, size: int, etag: str) -> None:
        self._store = store
        self._name = name
        self._size = size
        self._etag = etag
        self._start = 0
        self._bytes = b""
        self._lock = threading.Lock()

    def read(self, offset: int, count: int) -> bytes:
        with self._lock:
            end = min(offset + count, self._size)
            if not self._start <= offset <= end <= self._start + len(self._bytes):
                self._fill(offset)
            return self._bytes[offset - self._start : end - self._start]

    def _fill(self, offset: int) -> None:
        last = min(offset + WINDOW_BYTES, self._size) - 1
        store = self._store
        self._bytes = b""  # the old window goes before the new one is read
        try:
            response = store.client.get_object(
                Bucket=store.bucket,
                Key=self._name,
                Range=f"bytes={offset}-{last}",
                IfMatch=self._etag,
            )
            data: bytes = response["Body"].read(last - offset + 2)
            response["Body"].close()
        except store._errors as exc:
            raise OSError(f"artifact {self._name} could not be read again: {exc}") from exc
        if len(data) != last - offset + 1:
            raise OSError(f"artifact {self._name} changed since it was checked")
        self._start, self._bytes = offset, data


def _mismatches(head: dict[str, Any], size: int, digest: bytes) -> list[str]:
    """What differs between the object the bucket reports and the bytes we sent."""
    problems = []
    if head.get("ContentLength") != size:
        problems.append(f"size: sent {size}, stored {head.get('ContentLength')}")
    if head.get("Metadata", {}).get(SHA256_METADATA) != digest.hex():
        problems.append("sha256 metadata was not kept")
    checksum = head.get("ChecksumSHA256")
    sent = base64.b64encode(digest).decode("ascii")
    if checksum is not None and checksum != sent:
        problems.append(f"sha256: sent {sent}, stored {checksum}")
    return problems


def _is_not_found(exc: BaseException) -> bool:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return False
    return str(response.get("Error", {}).get("Code")) in _NOT_FOUND


def _failed(message: str, exc: BaseException) -> RegistryError:
    return RegistryError(
        ErrorCode.ARTIFACT_STORAGE_FAILED, f"{message}: {type(exc).__name__}: {exc}"
    )
