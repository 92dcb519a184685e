"""Registry keys and signatures in-process: who may register, sign and revoke; what is stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.service import admin
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.tokens import TokenRequest
from splice_build.spec.signing import check_signatures, signing_payload
from testing.registry import artifact, memory_service
from testing.signing import new_key


@pytest.fixture
def svc(tmp_path: Path):
    service = memory_service(tmp_path / "store")
    for user in ("alice", "bob", "carol"):
        admin.create_user(service.deps, user)
    return service


def login(svc, user: str, *, manage: bool = True, namespaces=None) -> Caller:
    request = TokenRequest(can_manage=manage, namespaces=namespaces)
    token = admin.create_token(svc.deps, user, request)
    return Caller(authorization=f"Bearer {token['token']}", client="10.0.0.1")


def code_of(fn, *args, **kwargs) -> ErrorCode:
    with pytest.raises(RegistryError) as info:
        fn(*args, **kwargs)
    return info.value.code


@pytest.fixture
def published(svc, tmp_path: Path):
    """@acme/greeter 1.0.0 and 1.0.1 by alice, bob a maintainer of @acme."""
    alice = login(svc, "alice")
    for version in ("1.0.0", "1.0.1"):
        svc.publish(alice, artifact(tmp_path / "pkgs", version=version))
    svc.set_maintainer(alice, "acme", "bob", add=True)
    return alice


def sign_body(key, version: str, integrity: str) -> dict:
    payload = signing_payload("@acme/greeter", version, integrity)
    return {"keyId": key.key_id, "signature": key.sign(payload)}


def integrity(svc, version: str) -> str:
    return svc.version("acme", "greeter", version)["integrity"]


def test_owner_registers_a_key_and_anyone_lists_it(svc, published, tmp_path: Path) -> None:
    key = new_key(tmp_path / "keys")
    info = svc.add_key(published, "acme", {"publicKey": key.public_key})
    assert info["keyId"] == key.key_id and info["namespace"] == "acme"
    assert info["addedBy"] == "alice" and info["revokedAt"] is None
    assert svc.add_key(published, "@acme", {"publicKey": key.public_key}) == info  # idempotent
    assert svc.keys("acme") == {"namespace": "acme", "keys": [info]}


def test_only_the_owner_with_a_managing_token_manages_keys(svc, published, tmp_path) -> None:
    body = {"publicKey": new_key(tmp_path / "keys").public_key}
    assert code_of(svc.add_key, login(svc, "bob"), "acme", body) is ErrorCode.FORBIDDEN
    assert code_of(svc.add_key, login(svc, "alice", manage=False), "acme", body) is (
        ErrorCode.TOKEN_SCOPE
    )
    scoped = login(svc, "alice", namespaces=["other"])
    assert code_of(svc.add_key, scoped, "acme", body) is ErrorCode.TOKEN_SCOPE
    assert code_of(svc.add_key, Caller(), "acme", body) is ErrorCode.UNAUTHENTICATED
    assert code_of(svc.add_key, published, "nobody", body) is ErrorCode.NOT_FOUND
    for bad in ({}, {"publicKey": "AAAA"}, {"publicKey": 7}):
        assert code_of(svc.add_key, published, "acme", bad) is ErrorCode.BAD_REQUEST


def test_a_key_belongs_to_one_namespace_and_stays_revoked(svc, published, tmp_path) -> None:
    key = new_key(tmp_path / "keys")
    body = {"publicKey": key.public_key}
    svc.add_key(published, "acme", body)
    carol = login(svc, "carol")
    svc.publish(carol, artifact(tmp_path / "c", namespace="carol"))
    assert code_of(svc.add_key, carol, "carol", body) is ErrorCode.KEY_EXISTS
    revoked = svc.revoke_key(published, "acme", key.key_id)
    assert revoked["revokedAt"] is not None
    assert svc.revoke_key(published, "acme", key.key_id) == revoked  # revoked once
    assert code_of(svc.add_key, published, "acme", body) is ErrorCode.KEY_REVOKED
    assert code_of(svc.revoke_key, carol, "carol", key.key_id) is ErrorCode.NOT_FOUND


def test_owner_or_maintainer_signs_and_metadata_lists_it(svc, published, tmp_path) -> None:
    key = new_key(tmp_path / "keys")
    svc.add_key(published, "acme", {"publicKey": key.public_key})
    bob_publish_only = login(svc, "bob", manage=False)
    digest = integrity(svc, "1.0.0")
    stored = svc.add_signature(
        bob_publish_only, "acme", "greeter", "1.0.0", sign_body(key, "1.0.0", digest)
    )
    assert stored["keyId"] == key.key_id and stored["publicKey"] == key.public_key
    assert stored["revokedAt"] is None
    meta = svc.version("acme", "greeter", "1.0.0")
    assert meta["signatures"] == [stored]
    outcome = check_signatures(
        meta["signatures"], package_id="@acme/greeter", version="1.0.0", integrity=digest
    )
    assert outcome.signed_by == key.key_id
    again = svc.add_signature(
        published, "acme", "greeter", "1.0.0", sign_body(key, "1.0.0", digest)
    )
    assert again == stored  # one signature per key and version; the first stays
    assert svc.version("acme", "greeter", "1.0.1")["signatures"] == []


def test_signatures_are_verified_before_they_are_stored(svc, published, tmp_path) -> None:
    key = new_key(tmp_path / "keys", "good")
    stranger = new_key(tmp_path / "keys", "stranger")
    svc.add_key(published, "acme", {"publicKey": key.public_key})
    first, second = integrity(svc, "1.0.0"), integrity(svc, "1.0.1")
    sign = svc.add_signature

    moved_version = sign_body(key, "1.0.0", first)
    assert code_of(sign, published, "acme", "greeter", "1.0.1", moved_version) is (
        ErrorCode.INVALID_SIGNATURE
    )
    other_bytes = sign_body(key, "1.0.1", first)
    assert code_of(sign, published, "acme", "greeter", "1.0.1", other_bytes) is (
        ErrorCode.INVALID_SIGNATURE
    )
    unregistered = sign_body(stranger, "1.0.1", second)
    assert code_of(sign, published, "acme", "greeter", "1.0.1", unregistered) is (
        ErrorCode.KEY_NOT_REGISTERED
    )
    for bad in (
        {},
        {"keyId": key.key_id},
        {"keyId": "x", "signature": "AAAA"},
        {"keyId": key.key_id, "signature": "AAAA"},
    ):
        assert code_of(sign, published, "acme", "greeter", "1.0.1", bad) is ErrorCode.BAD_REQUEST
    good = sign_body(key, "1.0.1", second)
    assert code_of(sign, login(svc, "carol"), "acme", "greeter", "1.0.1", good) is (
        ErrorCode.FORBIDDEN
    )
    assert code_of(sign, published, "acme", "greeter", "9.9.9", good) is ErrorCode.NOT_FOUND
    svc.revoke_key(published, "acme", key.key_id)
    assert code_of(sign, published, "acme", "greeter", "1.0.1", good) is ErrorCode.KEY_REVOKED
    assert svc.version("acme", "greeter", "1.0.1")["signatures"] == []


def test_revocation_shows_on_existing_signatures(svc, published, tmp_path) -> None:
    key = new_key(tmp_path / "keys")
    svc.add_key(published, "acme", {"publicKey": key.public_key})
    digest = integrity(svc, "1.0.0")
    svc.add_signature(published, "acme", "greeter", "1.0.0", sign_body(key, "1.0.0", digest))
    svc.revoke_key(published, "acme", key.key_id)
    (entry,) = svc.version("acme", "greeter", "1.0.0")["signatures"]
    assert entry["revokedAt"] is not None
    outcome = check_signatures(
        [entry], package_id="@acme/greeter", version="1.0.0", integrity=digest
    )
    assert outcome.signed_by is None and outcome.ignored_revoked == (key.key_id,)


def test_the_database_keeps_keys_and_signatures_append_only(svc, published, tmp_path) -> None:
    key = new_key(tmp_path / "keys")
    svc.add_key(published, "acme", {"publicKey": key.public_key})
    digest = integrity(svc, "1.0.0")
    svc.add_signature(published, "acme", "greeter", "1.0.0", sign_body(key, "1.0.0", digest))
    svc.revoke_key(published, "acme", key.key_id)
    conn = sqlite3.connect(tmp_path / "store" / "registry.db")
    refused = [
        "UPDATE signatures SET signature = 'x'",
        "DELETE FROM signatures",
        "UPDATE signing_keys SET public_key = 'x'",
        "UPDATE signing_keys SET namespace = 'carol'",
        "UPDATE signing_keys SET revoked_at = NULL",
        "DELETE FROM signing_keys",
    ]
    for statement in refused:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(statement)
    conn.close()
