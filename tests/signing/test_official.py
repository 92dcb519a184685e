"""The official key (docs/signing.md#the-official-key): the wheel ships the public key of the
``@splice`` publisher and the signatures the maintainers made over the official skills' packed
bytes. The embedded registry serves those signatures; every client refuses an ``@splice``
package that the shipped key did not sign, from any registry, with or without a signature
requirement (``OFFICIAL_SIGNATURE_REQUIRED``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
from splice_build.registry.official import official_skills, shipped_signatures
from splice_build.spec.official_key import official_key
from splice_build.spec.pack import pack_directory
from splice_build.spec.signing import check_signatures, signing_payload, verify_signature
from testing.cli import run_splice
from testing.hostile_registry import HostileRegistry, hostile_registry, is_version_answer
from testing.packages import minimal_manifest, write_package
from testing.project_state import state_bytes
from testing.signing import new_key, signature_entry

OFFICIAL = official_key()


def test_the_shipped_signatures_cover_the_official_skills_as_they_are_now() -> None:
    """Fails when a skill's bytes change without `python -m splice_build.registry.official_sign`."""
    shipped = shipped_signatures()
    skills = official_skills()
    assert {(s.package_id, s.version) for s in skills} == set(shipped)
    for skill in skills:
        first, second = pack_directory(skill.directory), pack_directory(skill.directory)
        assert first.archive == second.archive, f"{skill.package_id} does not pack reproducibly"
        entry = shipped[(skill.package_id, skill.version)]
        assert entry["integrity"] == first.integrity, (
            f"{skill.package_id}@{skill.version} changed since it was signed: re-sign the "
            "official skills with the release key"
        )
        assert (entry["keyId"], entry["publicKey"]) == (OFFICIAL.key_id, OFFICIAL.public_key)
        payload = signing_payload(skill.package_id, skill.version, first.integrity)
        verify_signature(OFFICIAL.public_key, entry["signature"], payload)


def test_a_fresh_home_shows_official_skills_signed_by_the_official_key() -> None:
    skill = official_skills()[0]
    info = run_splice("info", f"{skill.package_id}@{skill.version}", "--json")
    assert info.code == 0, info.stderr
    selected = info.json()["selected"]
    outcome = check_signatures(
        selected["signatures"],
        package_id=skill.package_id,
        version=skill.version,
        integrity=selected["integrity"],
    )
    assert outcome.valid == (OFFICIAL.key_id,)
    keys = run_splice("keys", "list", "@splice", "--json").json()["keys"]
    assert [(k["keyId"], k["revokedAt"]) for k in keys] == [(OFFICIAL.key_id, None)]
    store = Path(os.environ["SPLICE_HOME"]) / "registry"
    assert not list(store.glob("*.key")), "the store holds no private key"


def test_every_official_version_passes_the_install_policy_with_the_official_key() -> None:
    home = Path(os.environ["SPLICE_HOME"])
    client = EmbeddedRegistryClient(home / "registry")
    try:
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
            assert check.signed_by == OFFICIAL.key_id
    finally:
        client.close()
    again = EmbeddedRegistryClient(home / "registry")  # opening again signs nothing twice
    try:
        skill = official_skills()[0]
        assert len(again.version(skill.package_id, skill.version)["signatures"]) == 1
    finally:
        again.close()


def test_a_store_from_an_unsigned_build_gets_the_shipped_signatures(tmp_path: Path) -> None:
    from splice_build.registry.official import OFFICIAL_NAMESPACE, OFFICIAL_USER
    from splice_build.registry.service import admin
    from splice_build.registry.service.auth import Caller
    from splice_build.registry.storage import open_service

    store = tmp_path / "registry"
    service = open_service(store)
    admin.create_user(service.deps, OFFICIAL_USER)
    admin.set_owner(service.deps, OFFICIAL_NAMESPACE, OFFICIAL_USER)
    skill = official_skills()[0]
    service.publish(Caller(internal_user=OFFICIAL_USER), pack_directory(skill.directory).archive)
    service.deps.meta.close()
    client = EmbeddedRegistryClient(store)
    try:
        meta = client.version(skill.package_id, skill.version)
    finally:
        client.close()
    assert [s["keyId"] for s in meta["signatures"]] == [OFFICIAL.key_id]


def test_the_demo_path_installs_and_runs_the_official_skills_pinned_to_the_official_key(
    tmp_path: Path,
) -> None:
    assert run_splice("init", cwd=tmp_path).code == 0
    added = run_splice("--json", "add", "@splice/example", cwd=tmp_path)
    assert added.code == 0, added.stderr
    assert added.json()[0]["signature"] == f"verified {OFFICIAL.key_id} (the official @splice key)"
    lock = json.loads((tmp_path / "splice.lock").read_text())
    assert lock["packages"]["@splice/example"]["signedBy"] == OFFICIAL.key_id
    demo = run_splice("demo", "--dir", str(tmp_path / "demo"), "--json")
    assert demo.code == 0, demo.stdout + demo.stderr
    assert demo.json()["runs"]["first"]["ok"] is True
    demo_lock = json.loads((tmp_path / "demo" / "splice.lock").read_text())
    assert demo_lock["packages"]["@splice/example"]["signedBy"] == OFFICIAL.key_id


# -- a local HTTP registry that serves @splice packages the official key did not sign ---------


def _publish_as_official_user(store: Path, work: Path, name: str, key: Any) -> str:
    """``@splice/<name>@1.0.0`` published by the store's ``splice`` user; signed by ``key``
    (registered for @splice in that store) unless it is None. Returns the integrity."""
    from splice_build.registry.official import OFFICIAL_NAMESPACE, OFFICIAL_USER
    from splice_build.registry.service.auth import Caller
    from splice_build.registry.storage import open_service

    directory = write_package(
        work / name, minimal_manifest(namespace=OFFICIAL_NAMESPACE, name=name, version="1.0.0")
    )
    packed = pack_directory(directory)
    service = open_service(store)
    try:
        caller = Caller(internal_user=OFFICIAL_USER)
        service.publish(caller, packed.archive)
        if key is not None:
            service.add_key(caller, OFFICIAL_NAMESPACE, {"publicKey": key.public_key})
            payload = signing_payload(f"@splice/{name}", "1.0.0", packed.integrity)
            body = {"keyId": key.key_id, "signature": key.sign(payload)}
            service.add_signature(caller, OFFICIAL_NAMESPACE, name, "1.0.0", body)
    finally:
        service.deps.meta.close()
    return packed.integrity


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HostileRegistry, Any]]:
    work = tmp_path_factory.mktemp("official-served")
    store = work / "data"
    EmbeddedRegistryClient(store).close()  # the official skills, with the shipped signatures
    other = new_key(work / "keys", "other")
    _publish_as_official_user(store, work, "greeter", other)
    _publish_as_official_user(store, work, "bare", None)
    with hostile_registry(store) as registry:
        yield registry, other


@pytest.fixture
def project(tmp_path: Path) -> Path:
    assert run_splice("init", cwd=tmp_path).code == 0
    return tmp_path


def _refused(registry: HostileRegistry, project: Path, package: str) -> dict[str, Any]:
    before = state_bytes(project)
    done = run_splice("--json", "--registry", registry.url, "add", package, cwd=project)
    assert done.code == 1, done.stdout + done.stderr
    assert state_bytes(project) == before
    return done.json()["error"]


def test_an_official_skill_from_another_registry_installs_with_the_official_pin(
    served, project: Path
) -> None:
    registry, _ = served
    registry.twist = None
    done = run_splice("--json", "--registry", registry.url, "add", "@splice/example", cwd=project)
    assert done.code == 0, done.stderr
    lock = json.loads((project / "splice.lock").read_text())
    assert lock["packages"]["@splice/example"]["signedBy"] == OFFICIAL.key_id


def test_splice_signed_by_another_registered_key_is_refused(served, project: Path) -> None:
    registry, other = served
    registry.twist = None
    error = _refused(registry, project, "@splice/greeter")
    assert error["code"] == "OFFICIAL_SIGNATURE_REQUIRED"
    assert f"official key: {OFFICIAL.key_id}; found: {other.key_id}" in " ".join(error["details"])


def test_unsigned_splice_is_refused_without_a_signature_requirement(served, project) -> None:
    registry, _ = served
    registry.twist = None
    error = _refused(registry, project, "@splice/bare")
    assert error["code"] == "OFFICIAL_SIGNATURE_REQUIRED"
    assert "found: no valid signature" in " ".join(error["details"])


def test_a_trusted_signer_does_not_replace_the_official_key(served, project: Path) -> None:
    """`splice keys trust @splice <other>` does not let another key vouch for @splice."""
    registry, other = served
    registry.twist = None
    assert run_splice("keys", "trust", "@splice", other.key_id, cwd=project).code == 0
    assert _refused(registry, project, "@splice/greeter")["code"] == "OFFICIAL_SIGNATURE_REQUIRED"


def test_an_official_skill_whose_signature_the_registry_replaces_is_refused(
    served, project: Path, tmp_path: Path
) -> None:
    """A valid signature over the real bytes, by a key the registry made up."""
    registry, _ = served
    skill = next(s for s in official_skills() if s.package_id == "@splice/example")
    integrity = shipped_signatures()[(skill.package_id, skill.version)]["integrity"]
    mallory = new_key(tmp_path / "mallory", "mallory")
    forged = signature_entry(mallory, skill.package_id, skill.version, integrity)
    target = type("Target", (), {"package_id": skill.package_id, "version": skill.version})

    def twist(path: str, answer: Any) -> Any:
        if is_version_answer(path, target):  # type: ignore[arg-type]
            answer["signatures"] = [forged]
        return answer

    registry.twist = twist
    try:
        error = _refused(registry, project, f"{skill.package_id}@{skill.version}")
    finally:
        registry.twist = None
    assert error["code"] == "OFFICIAL_SIGNATURE_REQUIRED"
    assert f"found: {mallory.key_id}" in " ".join(error["details"])


def test_the_signing_task_refuses_a_key_that_is_not_the_official_one(tmp_path: Path) -> None:
    """Re-signing with any other key would ship signatures the shipped key cannot verify."""
    from splice_build.errors import SpecError
    from splice_build.registry.official_sign import signatures_for

    other = new_key(tmp_path / "keys", "other")
    with pytest.raises(SpecError) as caught:
        signatures_for(other.path)
    assert caught.value.code.value == "SIGNATURE_INVALID"
    assert OFFICIAL.key_id in caught.value.message


def test_the_signing_command_refuses_another_key_with_a_coded_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m splice_build.registry.official_sign --key FILE` (docs/signing.md) ended in
    a Python traceback for a key that is not the official one, or a key file that is none;
    now one `error: …` line with the code, exit 1, and signatures.json untouched."""
    from splice_build.registry.official import SIGNATURES_FILE
    from splice_build.registry.official_sign import main
    from splice_build.skills import skills_root

    shipped = (skills_root() / SIGNATURES_FILE).read_bytes()
    other = new_key(tmp_path / "keys", "other")
    (tmp_path / "garbage.key").write_text("not a key\n")
    for key_file, code in (
        (other.path, "SIGNATURE_INVALID"),
        (tmp_path / "garbage.key", "INVALID_CONFIG"),
    ):
        assert main(["--key", str(key_file)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and f"({code})\n" in err and "Traceback" not in err, err
    assert (skills_root() / SIGNATURES_FILE).read_bytes() == shipped


def test_verify_fails_a_splice_package_the_official_key_did_not_sign(served, project) -> None:
    registry, _ = served
    registry.twist = None
    done = run_splice(
        "--json", "--registry", registry.url, "verify", "@splice/greeter", cwd=project
    )
    assert done.code == 1, done.stdout + done.stderr
    check = next(c for c in done.json()["checks"] if c["id"] == "signature")
    assert (check["status"], check["code"]) == ("failed", "OFFICIAL_SIGNATURE_REQUIRED"), check
