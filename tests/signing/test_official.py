"""The official skills in the embedded registry carry a valid signature by a local, pinned key."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from splice_build.install.checks import (
    AllOf,
    Candidate,
    Expected,
    ManifestMatchesMetadata,
    PackageIsValid,
    Sha256Matches,
    SizeMatches,
)
from splice_build.install.signature_check import SignatureValid
from splice_build.registry.client.embedded import EmbeddedRegistryClient
from splice_build.registry.official import KEY_FILE, official_skills
from splice_build.spec.signing import check_signatures
from testing.cli import run_splice


def test_a_fresh_home_shows_official_skills_as_signed() -> None:
    skill = official_skills()[0]
    info = run_splice("info", f"{skill.package_id}@{skill.version}", "--json")
    assert info.code == 0, info.stderr
    selected = info.json()["selected"]
    (entry,) = selected["signatures"]
    outcome = check_signatures(
        selected["signatures"],
        package_id=skill.package_id,
        version=skill.version,
        integrity=selected["integrity"],
    )
    assert outcome.signed_by == entry["keyId"]
    keys = run_splice("keys", "list", "@splice", "--json").json()["keys"]
    assert [(k["keyId"], k["revokedAt"]) for k in keys] == [(entry["keyId"], None)]
    key_file = Path(os.environ["SPLICE_HOME"]) / "registry" / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_every_official_version_passes_the_install_policy_with_its_signature() -> None:
    home = Path(os.environ["SPLICE_HOME"])
    client = EmbeddedRegistryClient(home / "registry")
    try:
        signers = set()
        for skill in official_skills():
            meta = client.version(skill.package_id, skill.version)
            data = client.download(skill.package_id, skill.version)
            expected = Expected(
                skill.package_id, skill.version, meta["integrity"], meta["size"], meta["manifest"]
            )
            check = SignatureValid(meta["signatures"])
            policy = AllOf(
                [Sha256Matches(), SizeMatches(), PackageIsValid(), ManifestMatchesMetadata(), check]
            )
            report = policy.report(Candidate(data, expected))
            assert report.verified, report.results
            assert report.results[-1].status == "passed"
            signers.add(check.signed_by)
        assert len(signers) == 1 and None not in signers
    finally:
        client.close()
    # opening the store again signs nothing twice and keeps the same key
    again = EmbeddedRegistryClient(home / "registry")
    try:
        skill = official_skills()[0]
        assert len(again.version(skill.package_id, skill.version)["signatures"]) == 1
    finally:
        again.close()


def test_a_store_from_an_unsigned_build_gets_its_official_skills_signed(tmp_path: Path) -> None:
    from splice_build.registry.official import OFFICIAL_NAMESPACE, OFFICIAL_USER
    from splice_build.registry.service import admin
    from splice_build.registry.service.auth import Caller
    from splice_build.registry.storage import open_service
    from splice_build.spec.pack import pack_directory

    store = tmp_path / "registry"
    service = open_service(store)
    admin.create_user(service.deps, OFFICIAL_USER)
    admin.set_owner(service.deps, OFFICIAL_NAMESPACE, OFFICIAL_USER)
    skill = official_skills()[0]
    archive = pack_directory(skill.directory).archive
    service.publish(Caller(internal_user=OFFICIAL_USER), archive)
    assert (
        service.version("splice", skill.package_id.split("/")[1], skill.version)["signatures"] == []
    )
    service.deps.meta.close()
    client = EmbeddedRegistryClient(store)
    try:
        meta = client.version(skill.package_id, skill.version)
    finally:
        client.close()
    outcome = check_signatures(
        meta["signatures"],
        package_id=skill.package_id,
        version=skill.version,
        integrity=meta["integrity"],
    )
    assert outcome.signed_by is not None
