"""Metadata stores: migrations, immutability triggers, transactions, search.

One contract, run against each back end (SQLite, PostgreSQL: see conftest.py); ``store`` is
the store under test, ``backend`` reaches the same database without any store code.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.db.interface import (
    MetadataStore,
    NewToken,
    NewVersion,
    Publisher,
    Version,
)
from splice_build.registry.db.migrate import migrations
from testing.registry_backends import StoreBackend

NOW = "2025-01-01T00:00:00.000Z"


def _latest(versions):
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def _new(
    package_id: str = "@acme/tool",
    version: str = "1.0.0",
    *,
    claim: int,
    description: str = "A tool",
) -> NewVersion:
    ns, name = package_id[1:].split("/")
    return NewVersion(
        version=Version(
            package_id=package_id,
            version=version,
            manifest='{"name": "x"}',
            integrity="sha256-" + "0" * 64,
            size=10,
            artifact_key=f"packages/{ns}/{name}/{version}/{'0' * 64}.tar.gz",
            published_by="alice",
            published_at=NOW,
            artifact_backend="fs",
            artifact_url=None,
            provenance='{"recorded": true}',
        ),
        namespace=ns,
        name=name,
        description=description,
        kind="skill",
        publisher=Publisher(claim, claim=True),
    )


@pytest.fixture
def store(backend: StoreBackend) -> Iterator[MetadataStore]:
    db = backend.open_meta()
    yield db
    db.close()


def test_migrations_are_numbered_and_applied_once(backend: StoreBackend) -> None:
    names = [m.name for m in migrations()]
    assert names[0].startswith("0001_")
    assert [m.name for m in migrations("migrations_pg")] == names  # one sequence, two dialects
    backend.open_meta().close()
    again = backend.open_meta()  # re-open: no re-run, no error
    assert backend.schema_level() == len(names)
    assert again.namespace("splice").reserved
    again.close()


def test_reserved_namespaces_exist(store: MetadataStore) -> None:
    for name in ("splice", "spliceloom", "admin", "www"):
        row = store.namespace(name)
        assert row is not None and row.reserved and row.owner is None


def test_duplicate_user(store: MetadataStore) -> None:
    store.create_user("alice", now=NOW)
    with pytest.raises(RegistryError) as info:
        store.create_user("alice", now=NOW)
    assert info.value.code is ErrorCode.USER_EXISTS


def test_publish_transaction_claims_and_tracks_latest(store: MetadataStore) -> None:
    alice = store.create_user("alice", now=NOW)
    store.insert_version(
        _new(version="1.2.0", claim=alice.id, description="new"), latest_of=_latest, now=NOW
    )
    store.insert_version(
        _new(version="1.0.0", claim=alice.id, description="old"), latest_of=_latest, now=NOW
    )
    package = store.package("@acme/tool")
    assert package is not None
    assert package.latest_version == "1.2.0"
    assert package.description == "new"  # follows the latest version, not the last publish
    assert store.namespace("acme").owner == "alice"
    assert [v.version for v in store.versions("@acme/tool")] == ["1.0.0", "1.2.0"]


def test_duplicate_version_is_version_exists(store: MetadataStore) -> None:
    alice = store.create_user("alice", now=NOW)
    store.insert_version(_new(claim=alice.id), latest_of=_latest, now=NOW)
    with pytest.raises(RegistryError) as info:
        store.insert_version(_new(claim=alice.id), latest_of=_latest, now=NOW)
    assert info.value.code is ErrorCode.VERSION_EXISTS


def test_claim_inside_transaction_refuses_someone_elses_namespace(
    store: MetadataStore,
) -> None:
    alice = store.create_user("alice", now=NOW)
    bob = store.create_user("bob", now=NOW)
    store.insert_version(_new(claim=alice.id), latest_of=_latest, now=NOW)
    with pytest.raises(RegistryError) as info:
        store.insert_version(_new(version="2.0.0", claim=bob.id), latest_of=_latest, now=NOW)
    assert info.value.code is ErrorCode.FORBIDDEN
    assert store.version("@acme/tool", "2.0.0") is None  # rolled back


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE versions SET integrity = 'sha256-evil'",
        "UPDATE versions SET manifest = '{}'",
        "UPDATE versions SET version = '9.9.9'",
        "UPDATE versions SET size = size",  # even a no-op write of an identity column
        "UPDATE versions SET provenance = '{}'",
        "UPDATE versions SET precedence = '01901~'",  # the sort key is written once, too
        "DELETE FROM versions",
        "DELETE FROM packages",
    ],
)
def test_database_refuses_to_rewrite_history(backend: StoreBackend, statement: str) -> None:
    store = backend.open_meta()
    alice = store.create_user("alice", now=NOW)
    store.insert_version(_new(claim=alice.id), latest_of=_latest, now=NOW)
    store.close()
    with pytest.raises(backend.integrity_error):  # a direct connection, no store code involved
        backend.execute(statement)
    row = backend.query("SELECT integrity, manifest, provenance FROM versions")
    assert row == [("sha256-" + "0" * 64, '{"name": "x"}', '{"recorded": true}')]


def test_artifact_location_may_move(backend: StoreBackend) -> None:
    store = backend.open_meta()
    alice = store.create_user("alice", now=NOW)
    store.insert_version(_new(claim=alice.id), latest_of=_latest, now=NOW)
    store.close()
    assert (
        backend.execute("UPDATE versions SET artifact_backend = 's3', artifact_url = 'https://x/y'")
        == 1
    )


def test_tokens_keep_only_hashes_and_revoke_once(store: MetadataStore) -> None:
    alice = store.create_user("alice", now=NOW)
    token = store.insert_token(
        NewToken("tok_1", alice.id, "ab" * 32, "ci", NOW, None, ("acme", "beta"), False)
    )
    assert token.namespaces == ("acme", "beta") and not token.can_manage
    assert store.token_by_hash("ab" * 32) == token
    assert not hasattr(token, "token_hash")
    store.touch_token("tok_1", now="2025-02-01T00:00:00.000Z")
    assert store.token_by_id("tok_1").last_used_at == "2025-02-01T00:00:00.000Z"
    assert store.revoke_token("tok_1", now=NOW)
    assert not store.revoke_token("tok_1", now=NOW)


def test_search_ranks_exact_then_prefix_then_substring(store: MetadataStore) -> None:
    alice = store.create_user("alice", now=NOW)
    for pkg in ("@acme/files", "@acme/files-extra", "@acme/myfiles", "@acme/other"):
        store.insert_version(
            _new(pkg, claim=alice.id, description="Unrelated"), latest_of=_latest, now=NOW
        )
    hits = [h.id for h in store.search("files", limit=10, kind=None)]
    assert hits == ["@acme/files", "@acme/files-extra", "@acme/myfiles"]


def test_search_wildcards_are_literal(store: MetadataStore) -> None:
    alice = store.create_user("alice", now=NOW)
    store.insert_version(
        _new("@acme/alpha", claim=alice.id, description="100% pure"), latest_of=_latest, now=NOW
    )
    store.insert_version(
        _new("@acme/beta", claim=alice.id, description="plain"), latest_of=_latest, now=NOW
    )
    assert [h.id for h in store.search("%", limit=10, kind=None)] == ["@acme/alpha"]
    assert store.search("_", limit=10, kind=None) == []
    store.set_hidden("@acme/alpha", True, now=NOW)
    assert store.search("%", limit=10, kind=None) == []


def test_rate_limit_counter_is_shared_and_windowed(store: MetadataStore) -> None:
    assert [store.hit("k", 5) for _ in range(3)] == [1, 2, 3]
    assert store.count("k", 5) == 3
    assert store.hit("k", 6) == 1
    assert store.count("k", 5) == 0  # old windows are dropped
    assert (store.hit("k", 6, 4), store.hit("w", 6, 3)) == (5, 3)  # weighted: a costly read's CPU


def test_rate_limit_rows_of_clients_gone_quiet_are_dropped(store: MetadataStore) -> None:
    """Each client address has its own key: a client seen once (a scan, a guess from a fresh
    address) must not leave its row in the store for ever."""
    for client in ("198.51.100.1", "198.51.100.2", "2001:db8::/64"):
        assert store.hit(f"auth-fail:{client}", 5) == 1
    assert store.hit("requests:198.51.100.1", 5) == 1
    assert store.hit("auth-fail:198.51.100.3", 6) == 1  # the next window of that limit
    for client in ("198.51.100.1", "198.51.100.2", "2001:db8::/64"):
        assert store.count(f"auth-fail:{client}", 5) == 0
    assert store.count("requests:198.51.100.1", 5) == 1, "another limit keeps its own windows"
    assert store.hit("auth-fail:198.51.100.3", 6) == 2


def test_concurrent_inserts_of_one_version_have_one_winner(store: MetadataStore) -> None:
    alice = store.create_user("alice", now=NOW)
    results: list[str] = []

    def attempt() -> None:
        try:
            store.insert_version(_new(claim=alice.id), latest_of=_latest, now=NOW)
            results.append("ok")
        except RegistryError as exc:
            results.append(str(exc.code))

    threads = [threading.Thread(target=attempt) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("ok") == 1
    assert results.count("VERSION_EXISTS") == 19
