"""The official skills (``splice_build/skills/*``) published and signed into the embedded store.

On first use of the embedded registry every skill directory is packed and published by the
user ``splice``, owner of the reserved namespace ``splice``. The shipped official public key
(``schemas/official_publisher.json``) is registered for ``@splice`` and the signatures the
maintainers made with the release key (``skills/signatures.json``, see ``official_sign``)
are attached: the store holds no private key. A shipped signature whose integrity is not the
packed bytes' (a skill changed without re-signing) is not attached, and clients then refuse
that skill (``OFFICIAL_SIGNATURE_REQUIRED``). Idempotent (a version already in the store and
signed by the official key is skipped, decided by a manifest read and two queries without
packing) and safe across processes (a file lock, then check again under it).
"""

from __future__ import annotations

import json
import logging
from importlib import resources
from pathlib import Path

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.registry_service import RegistryService

log = logging.getLogger(__name__)

OFFICIAL_USER = "splice"
OFFICIAL_NAMESPACE = "splice"
LOCK_FILE = "official.lock"
SIGNATURES_FILE = "signatures.json"


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
    """Skills whose version is not in the store yet, or is there unsigned by the official key."""
    from splice_build.spec.official_key import official_key

    meta = service.deps.meta
    key_id = official_key().key_id
    return [
        s
        for s in skills
        if meta.version(s.package_id, s.version) is None
        or key_id not in {row.key_id for row in meta.signatures_of(s.package_id, s.version)}
    ]


def shipped_signatures() -> dict[tuple[str, str], dict[str, str]]:
    """``skills/signatures.json`` by (package id, version); empty when the file is missing."""
    path = Path(str(resources.files("splice_build.skills"))) / SIGNATURES_FILE
    try:
        entries = json.loads(path.read_text("utf-8"))["signatures"]
    except FileNotFoundError:
        return {}
    return {(e["package"], e["version"]): e for e in entries}


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
        _sign(service, caller, pending)
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


def _sign(service: RegistryService, caller: Caller, pending: list[OfficialSkill]) -> None:
    """Register the shipped official key for ``@splice`` (a no-op when it is) and attach the
    shipped signature of each version whose stored integrity it covers."""
    from splice_build.spec.official_key import official_key

    key = official_key()
    try:
        service.add_key(caller, OFFICIAL_NAMESPACE, {"publicKey": key.public_key})
    except RegistryError as exc:
        if exc.code is not ErrorCode.KEY_REVOKED:
            raise
        log.warning(
            "the official key %s is revoked in this store; skills stay unsigned", key.key_id
        )
        return
    shipped = shipped_signatures()
    for skill in pending:
        row = service.deps.meta.version(skill.package_id, skill.version)
        assert row is not None, "BUG: official skill missing after publish"
        entry = shipped.get((skill.package_id, skill.version))
        if entry is None or entry["integrity"] != row.integrity or entry["keyId"] != key.key_id:
            log.warning(
                "no shipped official signature covers %s@%s (%s); re-sign the official skills",
                skill.package_id,
                skill.version,
                row.integrity,
            )
            continue
        name = skill.package_id.split("/", 1)[1]
        body = {"keyId": key.key_id, "signature": entry["signature"]}
        service.add_signature(caller, OFFICIAL_NAMESPACE, name, skill.version, body)
