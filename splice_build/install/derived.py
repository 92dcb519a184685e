"""Whether this machine derived a lock entry's files digest from the artifact it pins.

``splice.lock`` and ``.splice/packages`` come with a checkout: an author can rewrite an
installed file and the lock's ``files`` to match, and the tree then passes every check
against the lock. So a lock entry's ``files`` is trusted on a machine only once this machine
has derived that digest from the artifact the entry's ``integrity`` pins: the record
``SPLICE_HOME/cache/artifacts/files/<hex>`` (install/cache.py), written whenever an artifact
is verified, never from anything in a project. ``splice install`` and ``splice sync`` derive
what is missing (tasks/loader.py); ``splice run``, ``splice mcp`` and the SDK refuse a package
without the record (:func:`require_derived`), fetching nothing
(docs/security.md#the-locks-files-digest-is-derived-here).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, NotDerivedError

if TYPE_CHECKING:
    from splice_build.install.installed import InstalledPackage
    from splice_build.project.lockfile import LockEntry

DERIVE_HINT = (
    "Run `splice install`: it checks the installed files against the artifact splice.lock pins."
)


def derived_here(cache_dir: Path, package_id: str, entry: LockEntry) -> bool:
    """The files digest this machine derived from the entry's artifact is its ``files``."""
    from splice_build.install.cache import ArtifactCache

    known = entry.known(package_id)
    return ArtifactCache(cache_dir).files_digest(entry.integrity) == known.files


def require_derived(home: Path, package: InstalledPackage) -> None:
    """``NOT_INSTALLED`` unless this machine derived ``package``'s files digest from its
    artifact: the tree matches the lock, but nothing says the lock matches the registry's
    bytes. One small file read; nothing is fetched. The record is read only from a home
    that is this user's alone (``INVALID_CONFIG`` otherwise): another user who chose what
    the home holds could have put there the digest of any tree."""
    from splice_build.project.home import SpliceHome

    if derived_here(SpliceHome(home).check().artifacts_dir, package.id, package.lock_entry):
        return
    raise NotDerivedError(
        ErrorCode.NOT_INSTALLED,
        f"{package.id}@{package.version} was not installed on this machine",
        details=[
            "its files match splice.lock, but splice.lock's files digest was never derived "
            f"here from the artifact it pins ({package.lock_entry.integrity})"
        ],
        hint=DERIVE_HINT,
    )
