"""The official skills (``splice_build/skills/*``) published and signed into the embedded store.

On first use of the embedded registry every skill directory is packed and published by the
user ``splice``, owner of the reserved namespace ``splice``, and signed with the store's own
official key: an Ed25519 key generated at first use next to the store
(``<store>/official-signing.key``, 0600), registered for ``@splice``. A fresh machine
therefore shows "signature: verified" for them, and an install pins that key in the lock.
Idempotent (a version already in the store and signed is skipped, and a cheap manifest read
and two queries decide that without packing or loading the key) and safe across processes
(a file lock, then check again under it).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.registry_service import RegistryService

if TYPE_CHECKING:
    from splice_build.project.keys import SigningKey

log = logging.getLogger(__name__)

OFFICIAL_USER = "splice"
OFFICIAL_NAMESPACE = "splice"
LOCK_FILE = "official.lock"
KEY_FILE = "official-signing.key"


@dataclass(frozen=True)
class OfficialSkill:
    directory: Path
    package_id: str
    version: str


def official_skills() -> list[OfficialSkill]:
    """Skill directories shipped in the wheel, with the id and version their manifest claims."""
    root = Path(str(resources.files("splice_build.skills")))
    found = []
    for directory in sorted(root.iterdir()):
        manifest_file = directory / "manifest.json"
        if not manifest_file.is_file():
            continue
        manifest = json.loads(manifest_file.read_text("utf-8"))
        package_id = f"@{manifest['namespace']}/{manifest['name']}"
        found.append(OfficialSkill(directory, package_id, str(manifest["version"])))
    return found


def _pending(service: RegistryService, skills: list[OfficialSkill]) -> list[OfficialSkill]:
    """Skills whose version is not in the store yet, or is there without any signature."""
    meta = service.deps.meta
    return [
        s
        for s in skills
        if meta.version(s.package_id, s.version) is None
        or not meta.signatures_of(s.package_id, s.version)
    ]


def official_key(data: Path) -> SigningKey:
    """The store's official signing key, created on first use (call under the store's lock)."""
    from splice_build.project.keys import create_key_file, load_key_file

    path = data / KEY_FILE
    if path.exists():
        return load_key_file(path, name="official")
    return create_key_file(path, name="official")


def ensure_official_skills(service: RegistryService, data: Path) -> list[str]:
    """Publish and sign every official skill version not yet done; returns the ids published."""
    skills = official_skills()
    if not _pending(service, skills):
        return []
    from splice_build.project.locking import lock
    from splice_build.registry.service import admin

    with lock(data / LOCK_FILE):
        pending = _pending(service, skills)  # check again: another process may have done it
        if not pending:
            return []
        deps = service.deps
        if deps.meta.user_by_name(OFFICIAL_USER) is None:
            admin.create_user(deps, OFFICIAL_USER)
        namespace = deps.meta.namespace(OFFICIAL_NAMESPACE)
        if namespace is None or namespace.owner != OFFICIAL_USER:
            admin.set_owner(deps, OFFICIAL_NAMESPACE, OFFICIAL_USER)
        caller = Caller(internal_user=OFFICIAL_USER)
        published = _publish_missing(service, caller, pending)
        _sign(service, caller, data, pending)
    return published


def _publish_missing(
    service: RegistryService, caller: Caller, pending: list[OfficialSkill]
) -> list[str]:
    from splice_build.spec.pack import pack_directory

    published = []
    for skill in pending:
        if service.deps.meta.version(skill.package_id, skill.version) is None:
            packed = pack_directory(skill.directory)
            service.publish(caller, packed.archive)
            published.append(f"{skill.package_id}@{skill.version}")
    return published


def _sign(
    service: RegistryService, caller: Caller, data: Path, pending: list[OfficialSkill]
) -> None:
    """Register the official key for ``@splice`` (a no-op when it is) and sign each version."""
    from splice_build.spec.signing import signing_payload

    key = official_key(data)
    try:
        service.add_key(caller, OFFICIAL_NAMESPACE, {"publicKey": key.public_key})
    except RegistryError as exc:
        if exc.code is not ErrorCode.KEY_REVOKED:
            raise
        log.warning("the official signing key %s is revoked; skills stay unsigned", key.key_id)
        return
    for skill in pending:
        row = service.deps.meta.version(skill.package_id, skill.version)
        assert row is not None, "BUG: official skill missing after publish"
        signature = key.sign(signing_payload(skill.package_id, skill.version, row.integrity))
        name = skill.package_id.split("/", 1)[1]
        body = {"keyId": key.key_id, "signature": signature}
        service.add_signature(caller, OFFICIAL_NAMESPACE, name, skill.version, body)
