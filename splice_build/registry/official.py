"""The official skills (``splice_build/skills/*``) published into the embedded store.

On first use of the embedded registry every skill directory is packed and published by the
user ``splice``, owner of the reserved namespace ``splice``. Idempotent (a version already
in the store is skipped, and a cheap manifest read decides that without packing) and safe
across processes (a file lock, then check again under it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from splice_build.registry.service.auth import Caller
from splice_build.registry.service.registry_service import RegistryService

OFFICIAL_USER = "splice"
OFFICIAL_NAMESPACE = "splice"
LOCK_FILE = "official.lock"


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


def _missing(service: RegistryService, skills: list[OfficialSkill]) -> list[OfficialSkill]:
    meta = service.deps.meta
    return [s for s in skills if meta.version(s.package_id, s.version) is None]


def ensure_official_skills(service: RegistryService, data: Path) -> list[str]:
    """Publish every official skill version not yet in the store; returns the ids published."""
    skills = official_skills()
    if not _missing(service, skills):
        return []
    from splice_build.project.locking import lock
    from splice_build.registry.service import admin
    from splice_build.spec.pack import pack_directory

    published = []
    with lock(data / LOCK_FILE):
        pending = _missing(service, skills)  # check again: another process may have done it
        if not pending:
            return []
        deps = service.deps
        if deps.meta.user_by_name(OFFICIAL_USER) is None:
            admin.create_user(deps, OFFICIAL_USER)
        namespace = deps.meta.namespace(OFFICIAL_NAMESPACE)
        if namespace is None or namespace.owner != OFFICIAL_USER:
            admin.set_owner(deps, OFFICIAL_NAMESPACE, OFFICIAL_USER)
        caller = Caller(internal_user=OFFICIAL_USER)
        for skill in pending:
            packed = pack_directory(skill.directory)
            service.publish(caller, packed.archive, base_url="embedded:")
            published.append(f"{skill.package_id}@{skill.version}")
    return published
