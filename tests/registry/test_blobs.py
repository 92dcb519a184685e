"""Artifact stores: one contract, run against the filesystem, in-memory and S3 back ends.

S3 is moto's server (a test double of S3) started once per session: see conftest.py.
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.blobs.filesystem import LEGACY_SWEPT, FilesystemBlobStore
from splice_build.registry.blobs.interface import artifact_key
from splice_build.registry.blobs.s3 import S3BlobStore
from splice_build.spec.limits import MAX_ARCHIVE_BYTES
from testing.fifos import returns_without_waiting
from testing.registry_backends import ScaleServices
from testing.registry_memory_blobs import MemoryBlobStore

KEY = artifact_key("acme", "tool", "1.0.0", "ab" * 32, legacy=False)


@pytest.fixture
def bucket(scale_services: ScaleServices) -> S3BlobStore:
    s3 = scale_services.s3
    return S3BlobStore(s3.create_bucket(), "some/prefix", client=s3.client())


@pytest.fixture(params=["fs", "memory", "s3"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "s3":
        return request.getfixturevalue("bucket")
    return (
        FilesystemBlobStore(tmp_path / "artifacts") if request.param == "fs" else MemoryBlobStore()
    )


def test_key_is_content_addressed() -> None:
    assert f"packages/acme/tool/1.0.0/{'ab' * 32}.tar.gz" == KEY


def test_put_get_and_idempotent_retry(blobs) -> None:
    blobs.put(KEY, b"bytes")
    blobs.put(KEY, b"bytes")  # the retry path after a crash
    assert blobs.get(KEY) == b"bytes"


def test_different_bytes_under_a_key_conflict(blobs) -> None:
    blobs.put(KEY, b"bytes")
    with pytest.raises(RegistryError) as info:
        blobs.put(KEY, b"other")
    assert info.value.code is ErrorCode.VERSION_EXISTS
    assert blobs.get(KEY) == b"bytes"


def test_missing_key(blobs) -> None:
    with pytest.raises(RegistryError) as info:
        blobs.get(KEY)
    assert info.value.code is ErrorCode.NOT_FOUND


def test_filesystem_leaves_no_temp_files(tmp_path: Path) -> None:
    store = FilesystemBlobStore(tmp_path)
    store.put(KEY, b"x" * 100_000)
    files = {p.name for p in tmp_path.rglob("*") if p.is_file()}
    assert files == {f"{'ab' * 32}.tar.gz", LEGACY_SWEPT}  # the marker: no old temp file either


def test_filesystem_failure_is_artifact_storage_failed(tmp_path: Path) -> None:
    (tmp_path / "packages").write_text("not a directory")
    with pytest.raises(RegistryError) as info:
        FilesystemBlobStore(tmp_path).put(KEY, b"x")
    assert info.value.code is ErrorCode.ARTIFACT_STORAGE_FAILED


def test_s3_keys_live_under_the_prefix_with_their_digest(bucket: S3BlobStore) -> None:
    bucket.put(KEY, b"bytes")
    head = bucket.client.head_object(Bucket=bucket.bucket, Key=f"some/prefix/{KEY}")
    assert head["ContentLength"] == 5
    assert head["Metadata"]["sha256"] == hashlib.sha256(b"bytes").hexdigest()


def test_s3_damaged_object_is_never_served(bucket: S3BlobStore) -> None:
    bucket.put(KEY, b"original bytes")
    name = f"some/prefix/{KEY}"
    kept = bucket.client.head_object(Bucket=bucket.bucket, Key=name)["Metadata"]
    bucket.client.put_object(Bucket=bucket.bucket, Key=name, Body=b"tampered bytes", Metadata=kept)
    with pytest.raises(RegistryError) as info:
        bucket.get(KEY)
    assert info.value.code is ErrorCode.ARTIFACT_STORAGE_FAILED
    with pytest.raises(RegistryError) as again:  # nor accepted as the "identical" retry
        bucket.put(KEY, b"original bytes")
    assert again.value.code is ErrorCode.ARTIFACT_STORAGE_FAILED


def test_s3_missing_bucket_is_a_clear_error(scale_services: ScaleServices) -> None:
    with pytest.raises(RegistryError) as info:
        S3BlobStore("no-such-bucket", client=scale_services.s3.client())
    assert info.value.code is ErrorCode.ARTIFACT_STORAGE_FAILED
    assert "no-such-bucket" in info.value.message


def test_filesystem_refuses_what_no_artifact_can_be_without_reading_it(tmp_path: Path) -> None:
    """A FIFO where an artifact belongs would block a download forever, a 1 TiB (sparse) file
    would be read whole: a download gets the error at once, and so does a publish's
    identical-retry check (ARTIFACT_STORAGE_FAILED)."""
    store = FilesystemBlobStore(tmp_path)
    path = tmp_path / KEY
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(OSError) as refused:
        returns_without_waiting(lambda: store.get(KEY), path)
    assert refused.value.errno == errno.EINVAL
    with pytest.raises(RegistryError) as info:
        returns_without_waiting(lambda: store.put(KEY, b"bytes"), path)
    assert info.value.code is ErrorCode.ARTIFACT_STORAGE_FAILED
    assert "not a regular file" in info.value.message
    path.unlink()
    with open(path, "wb") as handle:
        handle.truncate(1 << 40)
    with pytest.raises(OSError) as refused:
        store.get(KEY)
    assert refused.value.errno == errno.EFBIG
    assert f"larger than {MAX_ARCHIVE_BYTES} bytes" in str(refused.value)


def test_a_reader_reads_the_artifact_a_piece_at_a_time(blobs) -> None:
    blobs.put(KEY, b"0123456789")
    reader = blobs.reader(KEY)
    assert reader.size == 10
    assert [reader.read(0, 4), reader.read(4, 4), reader.read(8, 4)] == [b"0123", b"4567", b"89"]


def test_missing_key_has_no_reader(blobs) -> None:
    with pytest.raises(RegistryError) as info:
        blobs.reader(KEY)
    assert info.value.code is ErrorCode.NOT_FOUND


def test_filesystem_reader_refuses_what_no_artifact_can_be(tmp_path: Path) -> None:
    """A download's reader opens the file for each piece with ``get``'s checks: a FIFO, a
    file too large, or one whose size changed since the download began is an OSError (the
    route then aborts the connection: registry/http/download.py)."""
    store = FilesystemBlobStore(tmp_path)
    path = tmp_path / KEY
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(OSError) as refused:
        returns_without_waiting(lambda: store.reader(KEY), path)
    assert refused.value.errno == errno.EINVAL
    path.unlink()
    with open(path, "wb") as handle:
        handle.truncate(1 << 40)
    with pytest.raises(OSError) as refused:
        store.reader(KEY)
    assert refused.value.errno == errno.EFBIG
    path.write_bytes(b"0123456789")
    reader = store.reader(KEY)
    path.write_bytes(b"01234")
    with pytest.raises(OSError) as refused:
        reader.read(0, 4)
    assert refused.value.errno == errno.EIO


def test_an_s3_download_holds_a_window_of_its_artifact(bucket: S3BlobStore) -> None:
    """A download read and checked the whole object, then kept it in memory while a client
    read it (5 MiB for each slow client). The check now reads a piece at a time and keeps
    none; the download reads ranged windows of the checked object (If-Match its ETag)."""
    import random
    import tracemalloc

    from splice_build.registry.blobs.s3 import WINDOW_BYTES

    data = random.Random(3).randbytes(3 * 512 * 1024 + 17)
    bucket.put(KEY, data)
    served = hashlib.sha256()
    tracemalloc.start()
    try:
        reader = bucket.reader(KEY)
        for offset in range(0, reader.size, 65536):
            served.update(reader.read(offset, 65536))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert served.digest() == hashlib.sha256(data).digest()
    assert peak < 4 * WINDOW_BYTES, f"{peak} bytes"


def test_an_s3_object_replaced_during_a_download_is_not_served(bucket: S3BlobStore) -> None:
    """Past its first window, a download reads the object again: one replaced since it was
    checked (other bytes, the same metadata) ends the download (the route aborts it)."""
    from splice_build.registry.blobs.s3 import WINDOW_BYTES

    size = WINDOW_BYTES + 1000
    bucket.put(KEY, b"x" * size)
    reader = bucket.reader(KEY)
    assert reader.read(0, 65536) == b"x" * 65536
    name = f"some/prefix/{KEY}"
    kept = bucket.client.head_object(Bucket=bucket.bucket, Key=name)["Metadata"]
    bucket.client.put_object(Bucket=bucket.bucket, Key=name, Body=b"y" * size, Metadata=kept)
    with pytest.raises(OSError):
        reader.read(size - 1000, 1000)


def test_an_s3_object_larger_than_any_artifact_is_refused(bucket: S3BlobStore) -> None:
    name = f"some/prefix/{KEY}"
    body = b"z" * (MAX_ARCHIVE_BYTES + 1)
    bucket.client.put_object(Bucket=bucket.bucket, Key=name, Body=body)
    for read in (bucket.reader, bucket.get):
        with pytest.raises(RegistryError) as info:
            read(KEY)
        assert info.value.code is ErrorCode.ARTIFACT_STORAGE_FAILED
        assert "larger than any artifact" in info.value.message
