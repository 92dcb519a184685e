"""A publisher's right lost while its publish is in flight (docs/registry.md#users-tokens-and-namespaces).

The service checks the token and the namespace before it stores the artifact; the metadata
transaction comes after the blob write (S3, or a body that took minutes to arrive over
HTTP: the route authenticates before it reads the body). A maintainer removed, a token
revoked or expired, or a namespace given to another owner in that window still got the
version published. The transaction now checks the publisher again, on both stores.

The interleaving is deterministic, through two connections: while the first service writes
the artifact, a second service on the same store (its own database connection) takes the
right away, and its change is committed before the publish transaction begins.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.service import admin
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.service.tokens import TokenRequest
from testing.registry import NO_LIMITS, artifact
from testing.registry_backends import StoreBackend

DAY = 86_400


class Clock:
    def __init__(self) -> None:
        self.now = 1_750_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def services(backend: StoreBackend) -> Iterator[tuple[RegistryService, RegistryService, Clock]]:
    """The publishing service and a second one on the same store, with its own connection."""
    clock = Clock()
    publishing = backend.service(limits=NO_LIMITS, clock=clock)
    other = backend.service(limits=NO_LIMITS, clock=clock)
    yield publishing, other, clock
    for service in (publishing, other):
        service.deps.meta.close()


def _login(service: RegistryService, user: str, **request: Any) -> tuple[Caller, str]:
    created = admin.create_token(service.deps, user, TokenRequest(can_manage=True, **request))
    return Caller(authorization=f"Bearer {created['token']}"), str(created["id"])


def _publish_while(
    service: RegistryService, caller: Caller, body: bytes, change: Callable[[], object]
) -> ErrorCode | None:
    """Publish ``body``; ``change`` runs, and commits, while the artifact is being written."""
    blobs = service.deps.blobs
    put = blobs.put

    def put_then_change(key: str, data: bytes) -> None:
        put(key, data)
        change()

    blobs.put = put_then_change  # type: ignore[method-assign]
    try:
        service.publish(caller, body)
    except RegistryError as exc:
        return exc.code
    finally:
        del blobs.put  # the class's own again
    return None


def test_a_right_lost_while_the_artifact_is_written_publishes_nothing(
    services: tuple[RegistryService, RegistryService, Clock], tmp_path: Path
) -> None:
    publishing, other, clock = services
    for user in ("alice", "bob", "carol"):
        admin.create_user(publishing.deps, user)
    alice, _ = _login(publishing, "alice")
    bob, bob_token = _login(publishing, "bob")
    short, _ = _login(publishing, "bob", expires_in_days=1)
    publishing.publish(alice, artifact(tmp_path / "a", version="1.0.0"))

    def nothing() -> None:
        pass

    def add_bob() -> None:
        other.set_maintainer(alice, "acme", "bob", add=True)

    def remove_bob() -> None:
        other.set_maintainer(alice, "acme", "bob", add=False)

    def revoke_bob() -> None:
        other.revoke_token(bob, bob_token)

    def a_day_passes() -> None:
        clock.now += DAY + 1

    def give_acme_to_carol() -> None:
        admin.set_owner(other.deps, "acme", "carol")

    cases = [  # (who publishes, what happens while the artifact is written, the answer)
        (bob, nothing, None),  # the maintainer publishes
        (bob, remove_bob, ErrorCode.FORBIDDEN),
        (short, a_day_passes, ErrorCode.UNAUTHENTICATED),
        (bob, revoke_bob, ErrorCode.UNAUTHENTICATED),
        (alice, give_acme_to_carol, ErrorCode.FORBIDDEN),
    ]
    answers = []
    for minor, (caller, change, _expected) in enumerate(cases, start=1):
        add_bob()  # each publish starts with every right in place
        version = f"1.{minor}.0"
        body = artifact(tmp_path / version, version=version)
        code = _publish_while(publishing, caller, body, change)
        published = publishing.deps.meta.version("@acme/greeter", version) is not None
        answers.append((code, published))
    assert answers == [(expected, expected is None) for _caller, _change, expected in cases]


@pytest.mark.parametrize("backend_kind", ["postgres"], indirect=True)
def test_on_postgresql_a_removal_waits_for_the_publish_in_flight(
    services: tuple[RegistryService, RegistryService, Clock], backend: StoreBackend, tmp_path: Path
) -> None:
    """The publish transaction reads its publisher's rows FOR SHARE: a removal that comes
    while it runs waits for it to commit, so once the removal has answered no publish on the
    old right is recorded after it. The removal runs on a thread while the transaction is
    held in ``latest_of``; the transaction goes on once PostgreSQL shows the removal waiting
    for a lock (a state, not a time). PostgreSQL only: SQLite runs one write transaction at
    a time, so no removal can come while a publish is held."""
    assert backend.kind == "postgres"
    from splice_build.registry.db.interface import NewVersion, Publisher, Version
    from splice_build.spec.semver import latest_version

    publishing, other, _clock = services
    for user in ("alice", "bob"):
        admin.create_user(publishing.deps, user)
    alice, _ = _login(publishing, "alice")
    publishing.publish(alice, artifact(tmp_path, version="1.0.0"))
    other.set_maintainer(alice, "acme", "bob", add=True)
    bob = publishing.deps.meta.user_by_name("bob")
    assert bob is not None
    removal = threading.Thread(
        target=other.set_maintainer, args=(alice, "acme", "bob"), kwargs={"add": False}
    )
    order: list[str] = []

    def latest_while_the_removal_waits(versions: Sequence[str]) -> str:
        removal.start()
        deadline = time.monotonic() + 60  # a bound on a broken run, never reached otherwise
        while not _waiting_for_a_lock(backend):
            assert time.monotonic() < deadline, "the removal never waited for the publish"
            time.sleep(0.01)
        order.append("publish")
        return str(latest_version(versions))

    row = Version(
        package_id="@acme/greeter",
        version="1.1.0",
        manifest="{}",
        integrity="sha256-" + "0" * 64,
        size=1,
        artifact_key="k",
        published_by="bob",
        published_at="2025-01-01T00:00:00.000Z",
        artifact_backend="fs",
        artifact_url=None,
        provenance=None,
    )
    new = NewVersion(row, "acme", "greeter", "d", "skill", Publisher(bob.id))
    publishing.deps.meta.insert_version(
        new, latest_of=latest_while_the_removal_waits, now=row.published_at
    )
    removal.join()
    order.append("removal")
    assert order == ["publish", "removal"]
    assert publishing.deps.meta.version("@acme/greeter", "1.1.0") is not None
    assert "bob" not in publishing.deps.meta.maintainers("acme")


def _waiting_for_a_lock(backend: StoreBackend) -> bool:
    rows = backend.query(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    return bool(rows[0][0])
