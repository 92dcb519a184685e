"""Trust beyond first use: a first signer is pinned only when the namespace registered its key
on the registry, or the project trusts it out of band (`splice keys trust`, splice.json
`trustedSigners`, which then overrides the registry's word and the lock's pin, and requires a
signature). The malicious registry hides the key, drops the signature or forges a valid one by
its own key; with requireSignatures or trustedSigners that is refused and the project is
unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testing.cli import run_splice
from testing.hostile_registry import (
    HostileRegistry,
    SignedPackage,
    hostile_registry,
    is_version_answer,
    signed_store,
)
from testing.project_state import state_bytes
from testing.signing import new_key, signature_entry


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, SignedPackage]:
    store = tmp_path / "served-data"
    return store, signed_store(store, tmp_path / "pkgs")


@pytest.fixture
def registry(signed: tuple[Path, SignedPackage]) -> Iterator[HostileRegistry]:
    with hostile_registry(signed[0]) as hostile:
        yield hostile


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    return project


@pytest.fixture
def mallory(tmp_path: Path):
    return new_key(tmp_path / "mallory-keys", "mallory")


def _require_signatures(project: Path) -> None:
    path = project / "splice.json"
    data = json.loads(path.read_text())
    data["requireSignatures"] = ["acme"]
    path.write_text(json.dumps(data, indent=2) + "\n")


def _hide_keys(path: str, answer: Any) -> Any:
    if path.endswith("/namespaces/acme/keys"):
        answer["keys"] = []
    return answer


def _forge(package: SignedPackage, key):
    forged = signature_entry(key, package.package_id, package.version, package.integrity)

    def twist(path: str, answer: Any) -> Any:
        if is_version_answer(path, package):
            answer["signatures"] = [forged]
        return answer

    return twist


def _add(registry: HostileRegistry, project: Path, package: SignedPackage):
    return run_splice("--json", "--registry", registry.url, "add", package.package_id, cwd=project)


def _lock_entry(project: Path, package: SignedPackage) -> dict[str, Any]:
    return json.loads((project / "splice.lock").read_text())["packages"][package.package_id]


def _refused(registry, project: Path, package: SignedPackage) -> dict[str, Any]:
    before = state_bytes(project)
    done = _add(registry, project, package)
    assert done.code == 1, done.stdout + done.stderr
    assert state_bytes(project) == before
    return done.json()["error"]


def test_a_registered_signer_is_pinned(registry, project, signed) -> None:
    """The regression: an honest registry, the namespace's registered key, pinned."""
    done = _add(registry, project, signed[1])
    assert done.code == 0, done.stderr
    assert _lock_entry(project, signed[1])["signedBy"] == signed[1].key_id


def test_a_signer_the_namespace_never_registered_is_not_pinned(registry, project, signed) -> None:
    registry.twist = _hide_keys
    done = _add(registry, project, signed[1])
    assert done.code == 0, done.stderr
    assert "untrusted" in done.json()[0]["signature"]
    assert "signedBy" not in _lock_entry(project, signed[1])


def test_required_signatures_refuse_an_unregistered_signer(registry, project, signed) -> None:
    _require_signatures(project)
    registry.twist = _hide_keys
    error = _refused(registry, project, signed[1])
    assert error["code"] == "SIGNER_UNTRUSTED"
    assert signed[1].key_id in error["message"]
    assert "splice keys trust @acme" in error["hint"]


def test_required_signatures_refuse_a_forged_signer(registry, project, signed, mallory) -> None:
    """A valid signature over the right bytes, by a key the registry made up."""
    _require_signatures(project)
    registry.twist = _forge(signed[1], mallory)
    error = _refused(registry, project, signed[1])
    assert error["code"] == "SIGNER_UNTRUSTED"
    assert mallory.key_id in error["message"]


def test_a_trusted_key_overrides_the_registry(registry, project, signed, mallory) -> None:
    """Trusting a key out of band: it is accepted unregistered, and the registered one is not."""
    _require_signatures(project)
    trusted = run_splice("--json", "keys", "trust", "@acme", mallory.key_id, cwd=project)
    assert trusted.code == 0, trusted.stderr
    assert json.loads((project / "splice.json").read_text())["trustedSigners"] == {
        "acme": [mallory.key_id]
    }
    error = _refused(registry, project, signed[1])  # signed by the registered key only
    assert error["code"] == "SIGNER_UNTRUSTED"
    assert "trustedSigners" in error["message"]

    registry.twist = _forge(signed[1], mallory)
    done = _add(registry, project, signed[1])
    assert done.code == 0, done.stderr
    assert _lock_entry(project, signed[1])["signedBy"] == mallory.key_id


def test_trust_reads_a_public_key_file(project, mallory, tmp_path: Path) -> None:
    key_file = tmp_path / "mallory.pub"
    key_file.write_text(mallory.public_key + "\n")
    done = run_splice("--json", "keys", "trust", "@acme", str(key_file), cwd=project)
    assert done.code == 0, done.stderr
    assert done.json()["keyId"] == mallory.key_id
    again = run_splice("--json", "keys", "trust", "@acme", mallory.key_id, cwd=project)
    assert again.json()["trusted"] == [mallory.key_id]


def test_trust_refuses_a_public_key_on_an_unsupported_curve(project, tmp_path: Path) -> None:
    """``keys trust`` with such a PEM ended INTERNAL_ERROR (UnsupportedAlgorithm)."""
    from tests.signing.test_keys import UNSUPPORTED_CURVE_PUBLIC_KEY

    key_file = tmp_path / "odd.pub"
    key_file.write_text(UNSUPPORTED_CURVE_PUBLIC_KEY)
    before = state_bytes(project)
    done = run_splice("--json", "keys", "trust", "@acme", str(key_file), cwd=project)
    assert done.json()["error"]["code"] == "SIGNATURE_INVALID", done.stderr
    assert state_bytes(project) == before


@pytest.mark.parametrize(
    "value",
    [
        ["ed25519:0011223344556677"],
        {"acme": "ed25519:0011223344556677"},
        {"acme": ["nope"]},
        {"acme": ["ed25519:0011223344556677"], "@acme": ["ed25519:8899aabbccddeeff"]},
    ],
    ids=["list", "not-a-list", "bad-key-id", "one-namespace-twice"],
)
def test_a_malformed_trusted_signers_field_is_an_invalid_project(project, value) -> None:
    path = project / "splice.json"
    data = json.loads(path.read_text())
    data["trustedSigners"] = value
    path.write_text(json.dumps(data))
    done = run_splice("--json", "list", cwd=project)
    assert done.code == 1
    assert done.json()["error"]["code"] == "INVALID_PROJECT"


def _strip_signatures(package: SignedPackage):
    def twist(path: str, answer: Any) -> Any:
        if is_version_answer(path, package):
            answer["signatures"] = []
        return answer

    return twist


def _trust(project: Path, key_id: str) -> None:
    done = run_splice("--json", "keys", "trust", "@acme", key_id, cwd=project)
    assert done.code == 0, done.stderr


def test_a_trusted_namespace_refuses_an_unsigned_copy(registry, project, signed) -> None:
    """The downgrade: the project trusts the publisher's key (no requireSignatures), the
    registry drops the signature. Trusting a key is asking for its signature."""
    _trust(project, signed[1].key_id)
    registry.twist = _strip_signatures(signed[1])
    error = _refused(registry, project, signed[1])
    assert error["code"] == "SIGNATURE_REQUIRED"


def test_a_trusted_namespace_refuses_another_signer(registry, project, signed, mallory) -> None:
    """A valid signature by the registry's own key, where the project trusts another one."""
    _trust(project, signed[1].key_id)
    registry.twist = _forge(signed[1], mallory)
    error = _refused(registry, project, signed[1])
    assert error["code"] == "SIGNER_UNTRUSTED"
    assert mallory.key_id in error["message"]


def test_a_lock_pin_does_not_outrank_trusted_signers(
    registry, project, signed, mallory, tmp_path: Path
) -> None:
    """A checkout whose splice.lock was edited to pin the registry's forged signer: a fresh
    clone on another machine (nothing cached) must still refuse a signer splice.json does not
    trust, whatever the lock pins."""
    _trust(project, signed[1].key_id)
    assert _add(registry, project, signed[1]).code == 0
    lock_path = project / "splice.lock"
    lock = json.loads(lock_path.read_text())
    lock["packages"][signed[1].package_id]["signedBy"] = mallory.key_id
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "splice.json").write_bytes((project / "splice.json").read_bytes())
    (clone / "splice.lock").write_text(json.dumps(lock, indent=2) + "\n")
    registry.twist = _forge(signed[1], mallory)
    before = state_bytes(clone)
    done = run_splice(
        "--json",
        "--registry",
        registry.url,
        "install",
        cwd=clone,
        env={"SPLICE_HOME": str(tmp_path / "other-machine")},
    )
    assert done.code == 1, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["code"] == "SIGNER_UNTRUSTED"
    assert mallory.key_id in error["message"]
    assert "splice keys trust @acme" in error["hint"]
    assert state_bytes(clone) == before


@pytest.mark.parametrize("kind", ["fifo", "device-link"])
def test_trust_refuses_a_key_file_that_is_not_a_regular_file(project, kind) -> None:
    """A "public key file" from a checkout that is a FIFO (would block for ever) or a link to
    /dev/zero (would be read without end) is refused at once, and splice.json is unchanged."""
    import os

    path = project / "publisher.pub"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    before = state_bytes(project)
    done = run_splice(
        "--json",
        "keys",
        "trust",
        "@acme",
        path.name,
        cwd=project,
        timeout=60,
        address_space=2 << 30,
    )
    assert done.code == 2, done.stderr
    error = done.json()["error"]
    assert error["code"] == "USAGE"
    assert error["details"] == ["not a regular file"]
    assert state_bytes(project) == before


def test_verify_applies_trusted_signers_over_the_lock_pin(
    registry, project, signed, mallory
) -> None:
    """`splice verify` fails as the install would: the lock edited to pin the registry's own
    key does not make its signature trusted when splice.json trusts another key."""
    _trust(project, signed[1].key_id)
    assert _add(registry, project, signed[1]).code == 0
    lock_path = project / "splice.lock"
    lock = json.loads(lock_path.read_text())
    lock["packages"][signed[1].package_id]["signedBy"] = mallory.key_id
    lock_path.write_text(json.dumps(lock, indent=2) + "\n")
    registry.twist = _forge(signed[1], mallory)
    done = run_splice(
        "--json", "--registry", registry.url, "verify", signed[1].package_id, cwd=project
    )
    assert done.code == 1, done.stdout + done.stderr
    checks = {c["id"]: c for c in done.json()["checks"]}
    assert checks["signature"]["status"] == "failed"
    assert checks["signature"]["code"] == "SIGNER_UNTRUSTED"


def _install(registry: HostileRegistry, project: Path, *flags: str):
    return run_splice("--json", "--registry", registry.url, "install", *flags, cwd=project)


def test_a_kept_unsigned_package_meets_a_signature_requirement_or_fails(
    registry, project, signed
) -> None:
    """`splice install --require-signed` (or requireSignatures) with an unsigned package already
    installed: it is not verified again, so its recorded signer decides, and none is
    SIGNATURE_REQUIRED, also after a no-op install recorded the project's state."""
    registry.twist = _strip_signatures(signed[1])
    assert _add(registry, project, signed[1]).code == 0
    assert _install(registry, project).code == 0  # a no-op run: the fast path's state
    before = state_bytes(project)
    done = _install(registry, project, "--require-signed")
    assert done.code == 1, done.stdout + done.stderr
    assert done.json()["error"]["code"] == "SIGNATURE_REQUIRED"
    assert state_bytes(project) == before
    _require_signatures(project)
    before = state_bytes(project)
    done = _install(registry, project)
    assert done.code == 1, done.stdout + done.stderr
    assert done.json()["error"]["code"] == "SIGNATURE_REQUIRED"
    assert state_bytes(project) == before


def test_a_kept_package_pinned_to_a_key_no_longer_trusted_fails(
    registry, project, signed, mallory
) -> None:
    """Trusting another key for the namespace after the install: the kept package's pinned
    signer is no longer trusted, as it would not be on a fresh install."""
    assert _add(registry, project, signed[1]).code == 0
    _trust(project, mallory.key_id)
    before = state_bytes(project)
    done = _install(registry, project)
    assert done.code == 1, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["code"] == "SIGNER_UNTRUSTED"
    assert signed[1].key_id in error["message"]
    assert state_bytes(project) == before
