"""The registry service in-process: publish rules, auth, tokens, namespaces, limits, reads.

Each test runs on both store back ends (SQLite + files, PostgreSQL + S3): see conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.api import TOKEN_PATTERN
from splice_build.registry.service import admin
from splice_build.registry.service.auth import Caller, token_hash
from splice_build.registry.service.ratelimit import RateLimitedError, RateLimits
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.service.tokens import TokenRequest
from splice_build.spec.names import download_path
from testing.registry import HOSTILE, NO_LIMITS, artifact
from testing.registry_backends import StoreBackend


class Clock:
    def __init__(self) -> None:
        self.now = 1_750_000_000.0

    def __call__(self) -> float:
        return self.now


OpenService = Callable[..., RegistryService]


@pytest.fixture
def open_service() -> Iterator[OpenService]:
    """``open_service(backend, limits=…, clock=…, admin_sha256=…)``; closed after the test."""
    opened: list[RegistryService] = []

    def open_(store: StoreBackend, *, limits: RateLimits = NO_LIMITS, **kwargs) -> RegistryService:
        service = store.service(limits=limits, **kwargs)
        opened.append(service)
        return service

    yield open_
    for service in opened:
        service.deps.meta.close()


@pytest.fixture
def svc(backend: StoreBackend, open_service: OpenService):
    service = open_service(backend)
    admin.create_user(service.deps, "alice")
    admin.create_user(service.deps, "bob")
    return service


def login(svc, user: str, **request) -> Caller:
    token = admin.create_token(svc.deps, user, TokenRequest(**{"can_manage": True, **request}))
    return Caller(authorization=f"Bearer {token['token']}", client="10.0.0.1")


def code_of(fn, *args, **kwargs) -> ErrorCode:
    with pytest.raises(RegistryError) as info:
        fn(*args, **kwargs)
    return info.value.code


def test_token_format_and_only_hash_stored(svc, backend: StoreBackend) -> None:
    created = admin.create_token(svc.deps, "alice", TokenRequest())
    assert TOKEN_PATTERN.fullmatch(created["token"])
    db = backend.dump()
    assert created["token"].encode() not in db
    assert token_hash(created["token"]).encode() in db


def test_publish_then_read(svc, tmp_path: Path) -> None:
    alice = login(svc, "alice")
    data = artifact(tmp_path)
    out = svc.publish(alice, data)
    assert out["download"] == "/packages/acme/greeter/1.0.0/download"  # a path, as TS answers
    assert svc.download("acme", "greeter", "1.0.0").data == data
    assert svc.namespace("acme")["owner"] == "alice"
    version = svc.version("acme", "greeter", "1.0.0")
    assert version["download"] == out["download"]
    assert version["provenance"]["publisher"] == {"user": "alice", "via": "token"}
    assert version["provenance"]["manifestSha256"]


def test_the_download_path_encodes_the_version_as_a_uri_component() -> None:
    """TS's downloadPath: encodeURIComponent(version), so build metadata's "+" is %2B."""
    assert (
        download_path("acme", "greeter", "1.0.0-rc.1")
        == "/packages/acme/greeter/1.0.0-rc.1/download"
    )
    assert (
        download_path("acme", "greeter", "1.0.0+b.7")
        == "/packages/acme/greeter/1.0.0%2Bb.7/download"
    )


def test_duplicate_version_conflicts_even_with_identical_bytes(svc, tmp_path: Path) -> None:
    alice = login(svc, "alice")
    data = artifact(tmp_path)
    svc.publish(alice, data)
    with pytest.raises(RegistryError) as info:
        svc.publish(alice, data)
    assert info.value.code is ErrorCode.VERSION_EXISTS
    assert "identical" in info.value.message


def test_namespace_rules(svc, tmp_path: Path) -> None:
    alice, bob = login(svc, "alice"), login(svc, "bob")
    svc.publish(alice, artifact(tmp_path))
    assert code_of(svc.publish, bob, artifact(tmp_path, version="2.0.0")) is ErrorCode.FORBIDDEN
    assert (
        code_of(svc.publish, alice, artifact(tmp_path, namespace="splice"))
        is ErrorCode.NAMESPACE_RESERVED
    )
    # a maintainer may publish
    svc.set_maintainer(alice, "acme", "bob", add=True)
    svc.publish(bob, artifact(tmp_path, version="2.0.0"))
    assert svc.package("acme", "greeter")["latest"] == "2.0.0"
    # admin assigns a reserved namespace
    admin.set_owner(svc.deps, "splice", "alice")
    svc.publish(alice, artifact(tmp_path, namespace="splice"))


def test_token_scope_and_publish_only(svc, tmp_path: Path) -> None:
    alice = login(svc, "alice")
    created = svc.create_token(alice, {"namespaces": ["acme"], "label": "ci"})
    assert created["canManage"] is False and created["namespaces"] == ["acme"]
    ci = Caller(authorization=f"Bearer {created['token']}")
    svc.publish(ci, artifact(tmp_path))
    assert code_of(svc.publish, ci, artifact(tmp_path, namespace="other")) is ErrorCode.TOKEN_SCOPE
    assert code_of(svc.tokens, ci) is ErrorCode.TOKEN_SCOPE
    assert code_of(svc.create_token, ci, {}) is ErrorCode.TOKEN_SCOPE
    assert svc.whoami(ci)["user"] == "alice"


def test_scoped_managing_token_cannot_widen(svc) -> None:
    scoped = login(svc, "alice", namespaces=("acme",))
    assert code_of(svc.create_token, scoped, {"namespaces": ["other"]}) is ErrorCode.TOKEN_SCOPE
    assert svc.create_token(scoped, {})["namespaces"] == ["acme"]


def test_scoped_managing_token_lists_only_tokens_within_its_scope(svc) -> None:
    alice = login(svc, "alice")
    everywhere = svc.create_token(alice, {"label": "everywhere"})
    other = svc.create_token(alice, {"label": "other", "namespaces": ["other"]})
    scoped = login(svc, "alice", namespaces=("acme", "tools"))
    narrower = svc.create_token(scoped, {"label": "narrower", "namespaces": ["acme"]})
    listed = {t["id"]: t for t in svc.tokens(scoped)["tokens"]}
    assert narrower["id"] in listed
    assert [t["current"] for t in listed.values()].count(True) == 1
    assert everywhere["id"] not in listed and other["id"] not in listed
    assert all(set(t["namespaces"]) <= {"acme", "tools"} for t in listed.values())
    everyone = {t["id"] for t in svc.tokens(alice)["tokens"]}
    assert {everywhere["id"], other["id"], narrower["id"]} <= everyone


def test_revoked_and_expired_tokens_are_refused(
    backend: StoreBackend, open_service: OpenService
) -> None:
    clock = Clock()
    svc = open_service(backend, clock=clock)
    admin.create_user(svc.deps, "alice")
    alice = login(svc, "alice")
    short = svc.create_token(alice, {"expiresInDays": 1})
    short_caller = Caller(authorization=f"Bearer {short['token']}")
    assert svc.whoami(short_caller)["user"] == "alice"
    clock.now += 86_400 + 1
    assert code_of(svc.whoami, short_caller) is ErrorCode.UNAUTHENTICATED
    other = svc.create_token(alice, {})
    svc.revoke_token(alice, other["id"])
    assert (
        code_of(svc.whoami, Caller(authorization=f"Bearer {other['token']}"))
        is ErrorCode.UNAUTHENTICATED
    )
    assert [t["current"] for t in svc.tokens(alice)["tokens"]].count(True) == 1


def test_revoking_someone_elses_token_is_not_found(svc) -> None:
    alice, bob = login(svc, "alice"), login(svc, "bob")
    theirs = svc.create_token(alice, {})
    assert code_of(svc.revoke_token, bob, theirs["id"]) is ErrorCode.NOT_FOUND


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_hostile_archives_are_422_and_nothing_is_stored(
    svc, backend: StoreBackend, attack: str
) -> None:
    alice = login(svc, "alice")
    assert code_of(svc.publish, alice, HOSTILE[attack]()) is ErrorCode.INVALID_PACKAGE
    assert backend.artifacts() == {}
    assert svc.search("")["results"] == []


def test_dependencies_and_build_metadata_are_refused(svc, tmp_path: Path) -> None:
    alice = login(svc, "alice")
    with_deps = artifact(tmp_path, name="deps", dependencies={"@acme/other": "^1.0.0"})
    assert code_of(svc.publish, alice, with_deps) is ErrorCode.DEPENDENCIES_UNSUPPORTED
    build = artifact(tmp_path, version="1.0.0+build.5")
    assert code_of(svc.publish, alice, build) is ErrorCode.INVALID_PACKAGE


def test_failed_auth_blocks_the_client(backend: StoreBackend, open_service: OpenService) -> None:
    # A fixed clock: the limits count in fixed windows, and a window ending between the
    # failures would start the count again (as on a loaded machine, now and then).
    svc = open_service(backend, limits=RateLimits(failed_auth=3), clock=Clock())
    bad = Caller(authorization="Bearer splice_" + "x" * 43, client="10.9.9.9")
    for _ in range(3):
        assert code_of(svc.whoami, bad) is ErrorCode.UNAUTHENTICATED
    with pytest.raises(RateLimitedError) as info:
        svc.whoami(bad)
    assert info.value.retry_after == 600


def test_publish_limit_per_user(
    tmp_path: Path, backend: StoreBackend, open_service: OpenService
) -> None:
    svc = open_service(backend, limits=RateLimits(publishes=2), clock=Clock())  # one window
    admin.create_user(svc.deps, "alice")
    alice = login(svc, "alice")
    svc.publish(alice, artifact(tmp_path, version="1.0.0"))
    svc.publish(alice, artifact(tmp_path, version="1.0.1"))
    with pytest.raises(RateLimitedError) as info:
        svc.publish(alice, artifact(tmp_path, version="1.0.2"))
    assert info.value.retry_after == 60


def test_admin_api_needs_configured_hash(
    new_backend: Callable[..., StoreBackend], open_service: OpenService
) -> None:
    disabled = open_service(new_backend("a"))
    assert code_of(disabled.admin_create_user, Caller(), {"name": "x"}) is ErrorCode.ADMIN_DISABLED
    enabled = open_service(new_backend("b"), admin_sha256=token_hash("splice_admin"))
    assert code_of(enabled.admin_create_user, Caller(), {"name": "x"}) is ErrorCode.UNAUTHENTICATED
    wrong = Caller(authorization="Bearer splice_wrong")
    assert code_of(enabled.admin_create_user, wrong, {"name": "x"}) is ErrorCode.FORBIDDEN
    right = Caller(authorization="Bearer splice_admin")
    assert enabled.admin_create_user(right, {"name": "carol"})["name"] == "carol"
    assert code_of(enabled.admin_create_user, right, {"name": "carol"}) is ErrorCode.USER_EXISTS


def test_hidden_packages_leave_search_but_stay_readable(svc, tmp_path: Path) -> None:
    svc.publish(login(svc, "alice"), artifact(tmp_path))
    admin.set_hidden(svc.deps, "acme", "greeter", True)
    assert svc.search("greeter")["results"] == []
    assert svc.package("acme", "greeter")["latest"] == "1.0.0"
