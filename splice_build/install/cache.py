"""The content-addressed artifact cache shared by every project of a user.

docs/compatibility.md#user-state: ``SPLICE_HOME/cache/artifacts/sha256/<hex>`` holds verified artifacts only.
An entry is trusted by nobody: :meth:`ArtifactCache.get` re-hashes it on every read and deletes
a corrupt one, so the caller fetches it again. Corrupt includes what is no artifact at all: an
entry that is no regular file (a FIFO would block the read forever, a link to ``/dev/zero``
would never end it) or is larger than any artifact can be (``MAX_ARCHIVE_BYTES``); it is
refused before it is read (``spec/regular_file.py``), and deleting it deletes the entry, never
what a link points to. Writes are best effort (temp file + rename): a cache that cannot be
written never fails an install.

Next to each artifact installed from a registry, ``<directory>/signatures/<hex>.json`` keeps
the registry's signature entries that were checked at install (``{package, version,
integrity, registry, signatures}``; an empty list for an unsigned package), so a restore from
the cache verifies them again over the cached bytes, offline too
(docs/signing.md#restoring-from-the-cache). Like the artifact, it is trusted by nobody: the
restore runs the same signature check an install runs, and a file that cannot be read (no
regular file, or over ``MAX_SIGNATURES_BYTES``) or is not of that shape counts as absent.
The cache is shared by every project of the user, and the same bytes may come from several
registries: a record counts only for the registry that listed its signatures (the lock
entry's), so a registry that lists none for public bytes (one a checkout names) cannot make
every other project's restore of them unsigned (``SIGNER_CHANGED``).

``<directory>/files/<hex>`` holds the files digest this machine derived from the artifact
``sha256-<hex>`` when it verified it (install, sync, add, update, verify), next to the cached
artifact: the digest of the tree the artifact extracts to. It is what makes a lock entry's ``files`` trusted here
(install/derived.py, docs/security.md#the-locks-files-digest-is-derived-here); nothing in a
project is read to write it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from splice_build.project.atomic import atomic_write_bytes, remove_dead_temps, remove_stale_temps
from splice_build.project.home import make_private_dirs
from splice_build.spec.digests import INTEGRITY_PREFIX, integrity_of, is_integrity
from splice_build.spec.limits import MAX_ARCHIVE_BYTES
from splice_build.spec.regular_file import read_regular_file, this_user

# A record holds a few signature entries of a few hundred bytes each: far below this. One that
# would not fit is not written (and one larger on disk is not read), so what is written reads back.
MAX_SIGNATURES_BYTES = 1024 * 1024
# A files digest is ``sha256-`` and 64 hex digits; a record larger than this is none.
MAX_FILES_DIGEST_BYTES = 128


def _warn(message: str, *args: object) -> None:
    """Log a warning; ``logging`` (with ``traceback``, about 4 ms) is imported only then, as a
    no-op ``splice install`` opens the cache without writing to it."""
    import logging

    logging.getLogger(__name__).warning(message, *args)


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

        A corrupt entry is deleted, so the next fetch replaces it. Bytes that hash to
        ``integrity`` are that artifact whatever ``size`` says: a size that differs is the
        caller's (a ``splice.lock`` another hand wrote), so the entry is kept for every other
        project of the user and only this read finds nothing.
        """
        path = self.path_for(integrity)
        try:
            data = read_regular_file(path, limit=MAX_ARCHIVE_BYTES)
        except FileNotFoundError:
            return None
        except OSError as exc:  # a FIFO, a device, a directory, too large: no artifact
            problem = exc.strerror or type(exc).__name__
        else:
            if integrity_of(data) == integrity:
                # Two installs of one sync may both write this entry; killed between them, the
                # second's temp file stays, and no later write of the entry comes to remove it.
                remove_stale_temps(path)
                return data if size is None or len(data) == size else None
            problem = "other bytes"
        _warn("deleting corrupt cache entry %s (%s)", path, problem)
        with contextlib.suppress(OSError):
            path.unlink()  # the entry itself: a link goes, never what it points to
        return None

    def put(self, data: bytes) -> None:
        """Store verified ``data`` under its integrity (best effort, never raises OSError)."""
        path = self.path_for(integrity_of(data))
        try:
            make_private_dirs(path.parent)
            remove_dead_temps(path.parent)  # also those of entries never written again
            atomic_write_bytes(path, data)
        except OSError as exc:
            _warn("could not write cache entry %s: %s", path, exc)

    def files_digest_path_for(self, integrity: str) -> Path:
        """Where the files digest derived from the artifact ``integrity`` is recorded."""
        return self.directory / "files" / self.path_for(integrity).name  # home's files_digest_dir

    def files_digest(self, integrity: str) -> str | None:
        """The files digest recorded for the artifact ``integrity``, or None (no record, or
        one that is no regular file of a digest's size). Unlike an artifact or its
        signatures, a record is believed, not checked again: one another user owns (put while
        the home was open to them, as a config.json or a key may be) is none."""
        try:
            data = read_regular_file(
                self.files_digest_path_for(integrity),
                limit=MAX_FILES_DIGEST_BYTES,
                owner=this_user(),
            )
        except OSError:
            return None
        return data.decode("ascii", "replace")

    def put_files_digest(self, integrity: str, files: str) -> None:
        """Record ``files``, the files digest of the artifact ``integrity`` just verified
        (best effort: without it, the package is checked against the artifact again), only
        next to an artifact the cache holds, as its signatures: a put that failed (a full
        disk) leaves no orphan."""
        if not self.path_for(integrity).is_file() or self.files_digest(integrity) == files:
            return
        path = self.files_digest_path_for(integrity)
        try:
            make_private_dirs(path.parent)
            remove_dead_temps(path.parent)
            atomic_write_bytes(path, files.encode())
        except OSError as exc:
            _warn("could not write files digest %s: %s", path, exc)

    def signatures_path_for(self, integrity: str) -> Path:
        """Where the signatures stored with the artifact ``integrity`` live."""
        return self.directory / "signatures" / f"{self.path_for(integrity).name}.json"

    def put_signatures(
        self,
        integrity: str,
        package_id: str,
        version: str,
        registry: str,
        signatures: Sequence[Mapping[str, Any]],
    ) -> None:
        """Keep the signature entries ``registry`` listed and that verified for these bytes
        (best effort), only next to an artifact the cache holds: a put that failed (a full
        disk) leaves no orphan."""
        if not self.path_for(integrity).is_file():
            return
        path = self.signatures_path_for(integrity)
        record = {
            "package": package_id,
            "version": version,
            "integrity": integrity,
            "registry": registry,
            "signatures": [dict(entry) for entry in signatures],
        }
        try:
            text = json.dumps(record, indent=2).encode() + b"\n"
            if len(text) > MAX_SIGNATURES_BYTES:
                raise ValueError(f"{len(text)} bytes (max {MAX_SIGNATURES_BYTES})")
            make_private_dirs(path.parent)
            remove_dead_temps(path.parent)
            atomic_write_bytes(path, text)
        except (OSError, TypeError, ValueError) as exc:
            _warn("could not write signatures %s: %s", path, exc)

    def signatures(
        self, integrity: str, package_id: str, version: str, registry: str | None
    ) -> tuple[Mapping[str, Any], ...] | None:
        """The signature entries ``registry`` listed for exactly this artifact (empty: it was
        unsigned there), or None when nothing usable from that registry is stored.

        The entries are *not* verified here: the caller's signature check does that.
        """
        path = self.signatures_path_for(integrity)
        try:
            record = json.loads(read_regular_file(path, limit=MAX_SIGNATURES_BYTES))
        except (OSError, ValueError, RecursionError):  # RecursionError: nested past the decoder
            return None
        if not isinstance(record, dict) or (
            record.get("package"),
            record.get("version"),
            record.get("integrity"),
            record.get("registry"),
        ) != (package_id, version, integrity, registry):
            return None
        entries = record.get("signatures")
        if not isinstance(entries, list):
            return None
        return tuple(entries)
