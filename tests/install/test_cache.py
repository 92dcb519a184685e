"""The artifact cache re-hashes on every read and deletes corrupt entries."""

from __future__ import annotations

from pathlib import Path

from splice_build.install.cache import ArtifactCache
from splice_build.spec.digests import integrity_of


def test_round_trip_and_layout(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path / "artifacts")
    data = b"artifact bytes"
    cache.put(data)
    integrity = integrity_of(data)
    assert cache.path_for(integrity) == tmp_path / "artifacts" / "sha256" / integrity.removeprefix(
        "sha256-"
    )
    assert cache.get(integrity, len(data)) == data
    assert cache.get(integrity, len(data) + 1) is None  # a size mismatch is a corrupt entry too


def test_corrupt_entry_is_deleted(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    data = b"good bytes"
    cache.put(data)
    path = cache.path_for(integrity_of(data))
    path.write_bytes(b"evil bytes")
    assert cache.get(integrity_of(data)) is None
    assert not path.exists()


def test_missing_entry(tmp_path: Path) -> None:
    assert ArtifactCache(tmp_path).get(integrity_of(b"nothing")) is None
