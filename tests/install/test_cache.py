"""The artifact cache re-hashes on every read and deletes corrupt entries, including what is
no artifact at all (a FIFO, a link to a device, a file larger than any artifact)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.install.cache import MAX_SIGNATURES_BYTES, ArtifactCache
from splice_build.spec.digests import integrity_of
from testing.fifos import returns_without_waiting

REGISTRY = "https://registry.test"  # the registry the stored signatures came from

REPO = Path(__file__).resolve().parents[2]


def test_round_trip_and_layout(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path / "artifacts")
    data = b"artifact bytes"
    cache.put(data)
    integrity = integrity_of(data)
    assert cache.path_for(integrity) == tmp_path / "artifacts" / "sha256" / integrity.removeprefix(
        "sha256-"
    )
    assert cache.get(integrity, len(data)) == data


def test_a_wrong_size_leaves_the_entry_alone(tmp_path: Path) -> None:
    """Bytes that hash to the integrity are the artifact: a size that differs is the asker's.
    A checkout's splice.lock pinning a cached artifact with another size made `splice install`
    delete the user's verified entry (real CLI: 'deleting corrupt cache entry ... (4631 bytes,
    expected 4632)', then LOCK_MISMATCH 'Nothing was changed'), so every other project of the
    user fetched it again, and offline could not restore it."""
    cache = ArtifactCache(tmp_path)
    data = b"artifact bytes"
    cache.put(data)
    integrity = integrity_of(data)
    assert cache.get(integrity, len(data) + 1) is None
    assert cache.get(integrity, len(data)) == data


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
    assert cache.signatures(integrity, "@a/b", "1.0.0", REGISTRY) is None, "nothing stored yet"
    cache.put_signatures(integrity, "@a/b", "1.0.0", REGISTRY, [entry])
    assert cache.signatures(integrity, "@a/b", "1.0.0", REGISTRY) is None, (
        "no artifact: no orphan record"
    )
    cache.put(b"signed bytes")
    cache.put_signatures(integrity, "@a/b", "1.0.0", REGISTRY, [entry])
    path = cache.signatures_path_for(integrity)
    assert path == tmp_path / "signatures" / (integrity.removeprefix("sha256-") + ".json")
    assert cache.signatures(integrity, "@a/b", "1.0.0", REGISTRY) == (entry,)
    assert cache.signatures(integrity, "@a/c", "1.0.0", REGISTRY) is None, "another package"
    assert cache.signatures(integrity, "@a/b", "1.0.1", REGISTRY) is None, "another version"
    assert cache.signatures(integrity, "@a/b", "1.0.0", "https://other.test") is None, (
        "listed by another registry"
    )
    cache.put_signatures(integrity, "@a/b", "1.0.0", REGISTRY, [])
    assert cache.signatures(integrity, "@a/b", "1.0.0", REGISTRY) == (), "stored as unsigned"
    # "[" * 200_000: json.loads raised RecursionError, an internal error of install and
    # install --json for a kept package of the embedded registry, which reads the record.
    for text in ("not json", "[]", '{"package": "@a/b"}', "[" * 200_000, "1" * 5000):
        path.write_text(text)
        assert cache.signatures(integrity, "@a/b", "1.0.0", REGISTRY) is None, text


def test_a_fifo_as_an_entry_is_deleted_without_waiting(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    integrity = integrity_of(b"the artifact")
    path = cache.path_for(integrity)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    assert returns_without_waiting(lambda: cache.get(integrity), path) is None
    assert not os.path.lexists(path)
    cache.put(b"the artifact")  # and the next fetch puts the real bytes in its place
    assert cache.get(integrity) == b"the artifact"


# A fresh interpreter with 1 GiB of address space reads one entry: a read that does not stop
# at the cache's bound ends in MemoryError (exit 1) instead of eating the test machine.
ENTRY_PROBE = """
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from splice_build.install.cache import ArtifactCache
cache = ArtifactCache(Path(sys.argv[1]))
print(cache.get(sys.argv[2]), cache.signatures(sys.argv[2], "@a/b", "1.0.0", "https://r.test"))
"""


@pytest.mark.parametrize("entry", ["link-to-dev-zero", "sparse-64-gib-file", "link-to-it"])
def test_an_entry_no_artifact_can_be_is_deleted_without_reading_it(
    tmp_path: Path, entry: str
) -> None:
    """A link to ``/dev/zero`` never ends; a (sparse) file over the 5 MiB an artifact can have
    is refused by its size. The link is deleted, never what it points to. The signatures file
    next to it, in the same shape, counts as absent."""
    cache = ArtifactCache(tmp_path / "cache")
    integrity = integrity_of(b"the artifact")
    path, signatures = cache.path_for(integrity), cache.signatures_path_for(integrity)
    path.parent.mkdir(parents=True)
    signatures.parent.mkdir(parents=True)
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as handle:
        handle.truncate(64 << 30)
    for target in (path, signatures):
        if entry == "link-to-dev-zero":
            target.symlink_to("/dev/zero")
        elif entry == "link-to-it":
            target.symlink_to(sparse)
        else:
            os.link(sparse, target)
    done = subprocess.run(
        [sys.executable, "-c", ENTRY_PROBE, str(tmp_path / "cache"), integrity],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["None", "None"]
    assert "deleting corrupt cache entry" in done.stderr
    assert not os.path.lexists(path)
    assert sparse.stat().st_size == 64 << 30, "what a link points to is left alone"


def test_a_fifo_as_the_signatures_file_counts_as_absent(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    cache.put(b"signed bytes")
    integrity = integrity_of(b"signed bytes")
    path = cache.signatures_path_for(integrity)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    assert (
        returns_without_waiting(
            lambda: cache.signatures(integrity, "@a/b", "1.0.0", REGISTRY), path
        )
        is None
    )


def test_signatures_over_the_bound_are_not_written_so_what_is_written_reads_back(
    tmp_path: Path,
) -> None:
    cache = ArtifactCache(tmp_path)
    cache.put(b"signed bytes")
    integrity = integrity_of(b"signed bytes")
    entry = {"keyId": "ed25519:" + "a" * 16, "publicKey": "k", "signature": "s" * 1000}
    many = [entry] * (MAX_SIGNATURES_BYTES // 1000)
    cache.put_signatures(integrity, "@a/b", "1.0.0", REGISTRY, many)
    assert not cache.signatures_path_for(integrity).exists()
    cache.put_signatures(integrity, "@a/b", "1.0.0", REGISTRY, [entry])
    assert cache.signatures(integrity, "@a/b", "1.0.0", REGISTRY) == (entry,)
