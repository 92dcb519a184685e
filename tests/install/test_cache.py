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


def test_stored_signatures_are_for_exactly_one_artifact(tmp_path: Path) -> None:
    """docs/signing.md#restoring-from-the-cache: kept next to the artifact, unverified here."""
    cache = ArtifactCache(tmp_path)
    integrity = integrity_of(b"signed bytes")
    entry = {"keyId": "ed25519:" + "a" * 16, "publicKey": "k", "signature": "s"}
    assert cache.signatures(integrity, "@a/b", "1.0.0") is None, "nothing stored yet"
    cache.put_signatures(integrity, "@a/b", "1.0.0", [entry])
    assert cache.signatures(integrity, "@a/b", "1.0.0") is None, "no artifact: no orphan record"
    cache.put(b"signed bytes")
    cache.put_signatures(integrity, "@a/b", "1.0.0", [entry])
    path = cache.signatures_path_for(integrity)
    assert path == tmp_path / "signatures" / (integrity.removeprefix("sha256-") + ".json")
    assert cache.signatures(integrity, "@a/b", "1.0.0") == (entry,)
    assert cache.signatures(integrity, "@a/c", "1.0.0") is None, "another package"
    assert cache.signatures(integrity, "@a/b", "1.0.1") is None, "another version"
    cache.put_signatures(integrity, "@a/b", "1.0.0", [])
    assert cache.signatures(integrity, "@a/b", "1.0.0") == (), "stored as unsigned"
    for text in ("not json", "[]", '{"package": "@a/b"}'):
        path.write_text(text)
        assert cache.signatures(integrity, "@a/b", "1.0.0") is None, text
