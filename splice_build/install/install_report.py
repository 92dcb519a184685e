"""What ``splice add``/``install``/``update`` report for each package, and the report of a
package that stays as it is.

Apart from the installer so that a no-op ``splice install`` (tasks/noop.py) can answer with
the same reports without loading what installing needs (the registry client, the checks,
the transaction).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from splice_build.errors import SpliceError
from splice_build.project.registry_url import EMBEDDED_REGISTRY
from splice_build.records import dataclass, field

if TYPE_CHECKING:
    from pathlib import Path

    from splice_build.install.cache import ArtifactCache
    from splice_build.project.lockfile import LockEntry
    from splice_build.spec.manifest import Manifest


@dataclass(frozen=True)
class InstallReport:
    """One installed (or already installed) package, shaped like ``splice add --json``."""

    name: str
    version: str
    integrity: str
    already_installed: bool
    previous_version: str | None
    from_cache: bool
    offline: bool
    signed_by: str | None
    permissions: list[str]
    tools: list[str] = field(default_factory=list)
    signature: str = "unsigned"  # what the signature check found, for people

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "integrity": self.integrity,
            "alreadyInstalled": self.already_installed,
            "previousVersion": self.previous_version,
            "fromCache": self.from_cache,
            "offline": self.offline,
            "signedBy": self.signed_by,
            "signature": self.signature,
            "permissions": self.permissions,
            "tools": self.tools,
        }


def signature_text(
    verified: str | None,
    recorded: str | None,
    untrusted: str | None = None,
    *,
    pinned_only: bool = False,
) -> str:
    """The report's ``signature``: who signed the bytes and how far that is trusted."""
    if verified is None:
        return "unsigned"
    if pinned_only:
        return f"pinned {verified} in splice.lock (no signature stored with the cached artifact)"
    if untrusted is not None:
        return f"verified {verified}, but untrusted ({untrusted}); not pinned"
    from splice_build.spec.official_key import official_key

    if verified == recorded == official_key().key_id:
        return f"verified {verified} (the official @splice key)"
    if recorded is None:
        return f"verified {verified} (a key of this machine's embedded registry; not pinned)"
    return f"verified {verified}"


def report_for(
    manifest: Manifest,
    entry: LockEntry,
    *,
    already: bool,
    previous: str | None,
    from_cache: bool,
    offline: bool,
    signature: str | None = None,
    root: Path | None = None,
) -> InstallReport:
    """The report of one package; ``root``: the project, so file grants show their paths."""
    from splice_build.security.addresses import grants_connection

    if signature is None:
        signature = f"verified {entry.signed_by}" if entry.signed_by else "unsigned"
    return InstallReport(
        name=manifest.id,
        version=entry.version,
        integrity=entry.integrity,
        already_installed=already,
        previous_version=previous,
        from_cache=from_cache,
        offline=offline,
        signed_by=entry.signed_by,
        permissions=[]
        if manifest.permissions.is_empty
        else list(manifest.permissions.describe(root, grants=grants_connection)),
        tools=[tool.name for tool in manifest.tools],
        signature=signature,
    )


def kept_report(
    cache: Callable[[], ArtifactCache],
    root: Path,
    package_id: str,
    manifest: Manifest,
    entry: LockEntry,
    *,
    offline: bool = False,
) -> InstallReport:
    """The report of an intact locked package that stays as it is (``root``: the project's
    real path; ``cache`` is asked for only when the lock pins no signer; ``offline``: kept
    because the registry could not be asked)."""
    return report_for(
        manifest,
        entry,
        already=True,
        previous=None,
        from_cache=False,
        offline=offline,
        root=root,
        signature=_kept_signature(cache, package_id, entry),
    )


def _kept_signature(cache: Callable[[], ArtifactCache], package_id: str, entry: LockEntry) -> str:
    """What a kept package's signature was at install: the lock's pin, else the signer of
    the signatures stored with its cached artifact (named, not verified again: nothing is
    installed), else unsigned."""
    if entry.signed_by is not None:
        return f"verified {entry.signed_by}"
    signer = stored_signer(
        cache().signatures(entry.integrity, package_id, entry.version, entry.registry)
    )
    if signer is None:
        return "unsigned"
    if entry.registry == EMBEDDED_REGISTRY:
        return signature_text(signer, None)
    return f"verified {signer} at install (not pinned in splice.lock)"


def stored_signer(stored: Sequence[Mapping[str, Any]] | None) -> str | None:
    """The key id (recomputed from its public key) of the first unrevoked stored entry."""
    for entry in stored or ():
        if isinstance(entry, Mapping) and entry.get("revokedAt") is None:
            from splice_build.spec.signing import decode_public_key, key_id

            try:
                return key_id(decode_public_key(entry.get("publicKey")))
            except SpliceError:
                return None
    return None
