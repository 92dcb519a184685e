"""Artifact stores: one contract, run against the filesystem and in-memory back ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.blobs.filesystem import FilesystemBlobStore
from splice_build.registry.blobs.interface import artifact_key
from splice_build.registry.blobs.memory import MemoryBlobStore

KEY = artifact_key("acme", "tool", "1.0.0", "ab" * 32, legacy=False)


@pytest.fixture(params=["fs", "memory"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path):
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
    files = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert files == [f"{'ab' * 32}.tar.gz"]


def test_filesystem_failure_is_artifact_storage_failed(tmp_path: Path) -> None:
    (tmp_path / "packages").write_text("not a directory")
    with pytest.raises(RegistryError) as info:
        FilesystemBlobStore(tmp_path).put(KEY, b"x")
    assert info.value.code is ErrorCode.ARTIFACT_STORAGE_FAILED
