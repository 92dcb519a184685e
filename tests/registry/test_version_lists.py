"""Version lists whose cost does not grow with a package's history (docs/registry.md#version-lists).

A publish compares the new version with the package's ``latest`` pointer instead of reading
every version; ``/versions`` is paginated (cursor + limit, publish order); the package view
lists a bounded number of versions in the shape the TypeScript client reads. Each test runs on
SQLite and on PostgreSQL (``conftest.py``); the stores are the real ones, the server is the
real ``splice registry serve``.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from splice_build.errors import ErrorCode, RegistryError
from splice_build.install.resolve import resolve
from splice_build.registry.client.http import HttpRegistryClient
from splice_build.registry.db.interface import MetadataStore, NewVersion, Publisher, Version
from splice_build.registry.service import read
from splice_build.registry.service.deps import Deps
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.storage import DB_FILE
from splice_build.spec.semver import Range, latest_version
from splice_build.spec.semver import Version as SemVer
from testing.registry_backends import StoreBackend
from testing.registry_server import RunningRegistry

PACKAGE = "@acme/history"


def _latest(versions: list[str]) -> str:
    """The rule the service passes to the store (highest stable, else highest prerelease)."""
    return str(latest_version(versions))


def _new(version: str, published_at: str, *, package_id: str = PACKAGE, claim: int) -> NewVersion:
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
            published_at=published_at,
            artifact_backend="fs",
            artifact_url=None,
            provenance=None,
        ),
        namespace=ns,
        name=name,
        description=f"version {version}",
        kind="skill",
        publisher=Publisher(claim, claim=True),
    )


def _at(second: int) -> str:
    return f"2025-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def _publish(store: MetadataStore, user: int, versions: list[str], *, start: int = 0) -> None:
    for offset, version in enumerate(versions):
        at = _at(start + offset)
        store.insert_version(_new(version, at, claim=user), latest_of=_latest, now=at)


@pytest.fixture
def store(backend: StoreBackend) -> Iterator[MetadataStore]:
    db = backend.open_meta()
    yield db
    db.close()


@pytest.fixture
def deps(backend: StoreBackend) -> Iterator[Deps]:
    """The read service's dependencies over a second connection to the same store."""
    service_deps = backend.service(limits=RateLimits()).deps
    yield service_deps
    service_deps.meta.close()


# -- latest ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "order",
    [
        ["1.0.0", "2.0.0-rc.1", "1.5.0", "0.9.0", "2.0.0", "1.9.9", "3.0.0-beta", "2.0.1-0"],
        ["1.0.0-a", "1.0.0-b", "0.1.0-z", "0.1.0", "1.0.0-c", "0.0.9"],
        ["10.0.0", "9.0.0", "10.0.0-rc.1", "10.1.0-alpha", "1.10.0", "1.9.0"],
    ],
)
def test_latest_is_right_whatever_the_publish_order(store: MetadataStore, order: list[str]) -> None:
    alice = store.create_user("alice", now=_at(0))
    for index, version in enumerate(order):
        _publish(store, alice.id, [version], start=index)
        package = store.package(PACKAGE)
        assert package is not None
        assert package.latest_version == _latest(order[: index + 1])  # over the whole history
        assert package.version_count == index + 1
        latest_row = store.version(PACKAGE, package.latest_version)
        assert latest_row is not None
        assert package.description == f"version {package.latest_version}"


def test_highest_versions_follow_semver_precedence(store: MetadataStore) -> None:
    alice = store.create_user("alice", now=_at(0))
    versions = [
        *(f"1.{minor}.0" for minor in range(12)),
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "2.0.0-0",
        "2.0.0-a",
        "2.0.0-a.0",
        "2.0.0-a-",
        "10.0.0",
    ]
    shuffled = versions[:]
    random.Random(24).shuffle(shuffled)
    _publish(store, alice.id, shuffled)
    expected = sorted(versions, key=SemVer.parse, reverse=True)
    found = [v.version for v in store.highest_versions(PACKAGE, limit=len(versions))]
    assert found == expected
    assert [v.version for v in store.highest_versions(PACKAGE, limit=3)] == expected[:3]


# -- pages ----------------------------------------------------------------------------


def test_pages_walk_every_version_once_in_order_while_others_publish(
    backend: StoreBackend, store: MetadataStore, deps: Deps
) -> None:
    alice = store.create_user("alice", now=_at(0))
    before = [f"1.0.{patch}" for patch in range(230)]
    _publish(store, alice.id, before, start=1000)
    ns, name = PACKAGE[1:].split("/")
    stop, running = threading.Event(), threading.Event()
    published: list[str] = []

    def publish_meanwhile() -> None:
        writer = backend.open_meta()
        try:
            patch = 0
            while not stop.is_set() and patch < 400:
                # Half land before the walk's position (a clock behind), half after it.
                at = _at(10 + patch) if patch % 2 else _at(5000 + patch)
                version = f"2.0.{patch}"
                writer.insert_version(_new(version, at, claim=alice.id), latest_of=_latest, now=at)
                published.append(version)
                patch += 1
                if patch == 3:
                    running.set()
        finally:
            writer.close()

    thread = threading.Thread(target=publish_meanwhile)
    thread.start()
    walked: list[dict[str, Any]] = []
    cursor = None
    try:
        assert running.wait(60), "the publisher did not start"
        while True:
            page = read.versions(deps, ns, name, cursor=cursor, limit="7")
            assert len(page["versions"]) <= 7
            walked += page["versions"]
            cursor = page["nextCursor"]
            if cursor is None:
                break
    finally:
        stop.set()
        thread.join()
    seen = [entry["version"] for entry in walked]
    assert len(seen) == len(set(seen))  # nothing twice
    assert set(before) <= set(seen)  # nothing that existed at the start is missed
    assert set(seen) <= set(before) | set(published)
    keys = [(entry["publishedAt"], entry["version"]) for entry in walked]
    assert keys == sorted(keys)  # publish order, then version
    assert len(published) > 3  # the walk ran alongside publishes


def test_a_full_walk_equals_the_unpaginated_list(store: MetadataStore, deps: Deps) -> None:
    alice = store.create_user("alice", now=_at(0))
    _publish(store, alice.id, [f"0.{minor}.0" for minor in range(25)])
    # Two versions published in the same millisecond: the version breaks the tie.
    same = _at(99)
    for version in ("3.0.0", "3.0.0-rc.1"):
        store.insert_version(_new(version, same, claim=alice.id), latest_of=_latest, now=same)
    walked: list[str] = []
    cursor = None
    while True:
        page = read.versions(deps, "acme", "history", cursor=cursor, limit="4")
        walked += [entry["version"] for entry in page["versions"]]
        if page["nextCursor"] is None:
            break
        cursor = page["nextCursor"]
    assert walked == [v.version for v in store.versions(PACKAGE)]
    assert read.versions(deps, "acme", "history", limit="1000")["nextCursor"] is None
    assert (
        read.versions(deps, "acme", "history", limit="0" * 5000 + "4")["versions"]
        == (read.versions(deps, "acme", "history", limit="4")["versions"])
    )


@pytest.mark.parametrize(
    "limit",
    [
        "0",
        "1001",
        "-1",
        "abc",
        "1e2",
        "",
        " 5",
        "٣",
        pytest.param("9" * 5000, id="5000-digits"),  # past int()'s digit limit: was a 500
        pytest.param("0" * 5000, id="5000-zeros"),
    ],
)
def test_a_limit_outside_1_to_1000_is_bad_request(
    store: MetadataStore, deps: Deps, limit: str
) -> None:
    alice = store.create_user("alice", now=_at(0))
    _publish(store, alice.id, ["1.0.0"])
    with pytest.raises(RegistryError) as caught:
        read.versions(deps, "acme", "history", limit=limit)
    assert caught.value.code is ErrorCode.BAD_REQUEST


@pytest.mark.parametrize(
    "cursor",
    [
        "not-base64!",
        "bnVsbA",  # null
        "WyJhIl0",  # ["a"]
        "WzEsMl0",  # [1,2]
        "x" * 600,
        "ée",
        # ["\\ud800","1.0.0"] and ["x","\\udfff"]: lone surrogates were a 500
        "WyJcdWQ4MDAiLCAiMS4wLjAiXQ",
        "WyJ4IiwgIlx1ZGZmZiJd",
    ],
)
def test_a_cursor_the_server_did_not_make_is_bad_request(
    store: MetadataStore, deps: Deps, cursor: str
) -> None:
    alice = store.create_user("alice", now=_at(0))
    _publish(store, alice.id, ["1.0.0"])
    with pytest.raises(RegistryError) as caught:
        read.versions(deps, "acme", "history", cursor=cursor)
    assert caught.value.code is ErrorCode.BAD_REQUEST


# -- the package view -----------------------------------------------------------------


def test_package_view_is_bounded_and_keeps_latest(store: MetadataStore, deps: Deps) -> None:
    alice = store.create_user("alice", now=_at(0))
    # 1.0.0 is the latest stable; 150 prereleases rank above it.
    _publish(store, alice.id, ["1.0.0", *(f"2.0.0-rc.{n}" for n in range(150))])
    view = read.package(deps, "acme", "history")
    listed = [entry["version"] for entry in view["versions"]]
    assert len(listed) == read.PACKAGE_VERSIONS
    assert view["latest"] == "1.0.0" and "1.0.0" in listed
    assert "2.0.0-rc.149" in listed and "2.0.0-rc.0" not in listed  # the highest ones
    assert view["versionCount"] == 151 and view["versionsTruncated"] is True


# -- over HTTP, as clients read it ----------------------------------------------------


def _fill(server: RunningRegistry, package_id: str, versions: list[str]) -> None:
    """Versions written straight into the server's store (the real one, shared with it)."""
    assert server.backend is not None
    store = server.backend.open_meta()
    try:
        user = store.user_by_name("filler") or store.create_user("filler", now=_at(0))
        for offset, version in enumerate(versions):
            at = _at(offset)
            new = _new(version, at, package_id=package_id, claim=user.id)
            store.insert_version(new, latest_of=_latest, now=at)
    finally:
        store.close()


def test_package_view_keeps_the_typescript_clients_shape(server: RunningRegistry) -> None:
    """The TypeScript client reads ``versions[].version`` of ``GET /packages/:ns/:name`` and
    resolves ranges over them; the other fields it has always had are still there."""
    _fill(server, "@tsshape/pkg", [f"1.{minor}.0" for minor in range(130)])
    body = requests.get(server.url + "/packages/tsshape/pkg", timeout=30).json()
    assert set(body) == {
        "name",
        "namespace",
        "description",
        "latest",
        "versions",
        "versionCount",
        "versionsTruncated",
        "createdAt",
        "updatedAt",
    }
    assert (body["name"], body["namespace"], body["latest"]) == (
        "@tsshape/pkg",
        "tsshape",
        "1.129.0",
    )
    assert all(set(entry) == {"version", "publishedAt"} for entry in body["versions"])
    listed = [entry["version"] for entry in body["versions"]]
    assert listed == [f"1.{minor}.0" for minor in range(80, 130)]  # publish order, highest 50
    assert (body["versionCount"], body["versionsTruncated"]) == (130, True)


def test_versions_pages_over_http(server: RunningRegistry) -> None:
    _fill(server, "@pages/pkg", [f"0.0.{patch}" for patch in range(12)])
    url = server.url + "/packages/pages/pkg/versions"
    seen: list[str] = []
    params: dict[str, str] = {"limit": "5"}
    while True:
        response = requests.get(url, params=params, timeout=30)
        assert response.status_code == 200
        body = response.json()
        assert set(body) == {"name", "versions", "nextCursor"}
        seen += [entry["version"] for entry in body["versions"]]
        if body["nextCursor"] is None:
            break
        params = {"limit": "5", "cursor": body["nextCursor"]}
    assert seen == [f"0.0.{patch}" for patch in range(12)]
    refused = requests.get(url, params={"cursor": "bm9wZQ"}, timeout=30)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "BAD_REQUEST"


def test_the_installer_resolves_over_every_page(server: RunningRegistry) -> None:
    """A range that only an old version satisfies resolves although the package view lists
    only the highest versions: the client walks the ``/versions`` pages."""
    _fill(server, "@walk/pkg", ["1.0.0", "1.0.1", *(f"2.{minor}.0" for minor in range(140))])
    client = HttpRegistryClient(server.url)
    try:
        listed = client.package("@walk/pkg")["versions"]
        assert "1.0.1" not in [entry["version"] for entry in listed]
        chosen = resolve(client, "@walk/pkg", Range.parse("^1.0.0"), None)
    finally:
        client.close()
    assert chosen.version == "1.0.1"


# -- migration of an existing store ---------------------------------------------------

# The packages and versions tables as schema level 3 created them, with the trigger that keeps
# a version's identity (what the new migration must live with).
_LEVEL_3_SQLITE = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
    github_login TEXT);
CREATE TABLE namespaces (name TEXT PRIMARY KEY, owner_id INTEGER REFERENCES users(id),
    reserved INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
CREATE TABLE packages (id TEXT PRIMARY KEY, namespace TEXT NOT NULL REFERENCES namespaces(name),
    name TEXT NOT NULL, description TEXT NOT NULL, latest_version TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'skill',
    hidden INTEGER NOT NULL DEFAULT 0);
CREATE TABLE versions (package_id TEXT NOT NULL REFERENCES packages(id), version TEXT NOT NULL,
    manifest TEXT NOT NULL, integrity TEXT NOT NULL, size INTEGER NOT NULL,
    artifact_key TEXT NOT NULL UNIQUE, published_by TEXT NOT NULL, published_at TEXT NOT NULL,
    artifact_backend TEXT NOT NULL, artifact_url TEXT, provenance TEXT,
    PRIMARY KEY (package_id, version));
CREATE TRIGGER versions_identity_immutable
BEFORE UPDATE OF package_id, version, manifest, integrity, size, artifact_key, published_by, published_at
ON versions
BEGIN
    SELECT RAISE(ABORT, 'published versions are immutable');
END;
"""
_LEVEL_3_PG_EXTRA = """
CREATE FUNCTION splice_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
CREATE TABLE splice_schema_version (version INTEGER NOT NULL);
INSERT INTO splice_schema_version (version) VALUES (1), (2), (3);
"""
_OLD_VERSIONS = ["1.0.0", "1.10.0", "1.9.0", "2.0.0-rc.1", "0.5.0"]


def _old_store(backend: StoreBackend) -> None:
    """A level-3 store holding ``_OLD_VERSIONS`` of one package, made without store code."""
    rows = [
        (PACKAGE, v, "{}", "sha256-x", 1, f"key-{v}", "alice", _at(i), "fs", None, None)
        for i, v in enumerate(_OLD_VERSIONS)
    ]
    statements = [
        "INSERT INTO users (id, name, created_at) VALUES (1, 'alice', '2025')",
        "INSERT INTO namespaces (name, owner_id, reserved, created_at) VALUES ('acme', 1, 0, '2025')",
        "INSERT INTO packages (id, namespace, name, description, latest_version, created_at, "
        "updated_at) VALUES ('@acme/history', 'acme', 'history', 'Ärger', '1.10.0', '2025', '2025')",
    ]
    insert = "INSERT INTO versions VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    if backend.kind == "sqlite":
        backend.data.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(backend.data / DB_FILE, isolation_level=None)
        try:
            conn.executescript(_LEVEL_3_SQLITE)
            for statement in statements:
                conn.execute(statement)
            conn.executemany(insert.replace("%s", "?"), rows)
            conn.execute("PRAGMA user_version = 3")
        finally:
            conn.close()
        return
    import psycopg

    with psycopg.connect(backend.database_url or "", autocommit=True) as conn:
        conn.execute(_LEVEL_3_PG_EXTRA)
        ddl = _LEVEL_3_SQLITE.replace(
            "BEGIN\n    SELECT RAISE(ABORT, 'published versions are immutable');\nEND;",
            "FOR EACH ROW EXECUTE FUNCTION splice_refuse('published versions are immutable');",
        )
        conn.execute(ddl)
        for statement in statements:
            conn.execute(statement)
        with conn.cursor() as cursor:
            cursor.executemany(insert, rows)


def test_an_old_store_is_migrated_in_place(backend: StoreBackend) -> None:
    _old_store(backend)
    store = backend.open_meta()
    try:
        assert backend.schema_level() == 5
        # migration 5 keys the description for search (db/search_key.py)
        assert [hit.id for hit in store.search("ärger", limit=5, kind=None)] == [PACKAGE]
        package = store.package(PACKAGE)
        assert package is not None
        assert (package.latest_version, package.version_count) == ("1.10.0", len(_OLD_VERSIONS))
        highest = [v.version for v in store.highest_versions(PACKAGE, limit=10)]
        assert highest == ["2.0.0-rc.1", "1.10.0", "1.9.0", "1.0.0", "0.5.0"]
        # The next publish keeps the pointer and the count right without reading the history.
        _publish(store, 1, ["1.11.0"], start=50)
        package = store.package(PACKAGE)
        assert package is not None
        assert (package.latest_version, package.version_count) == ("1.11.0", 6)
    finally:
        store.close()
    missing = backend.query("SELECT count(*) FROM versions WHERE precedence IS NULL")
    assert missing == [(0,)]
    with pytest.raises(backend.integrity_error):  # the filled key is written once
        backend.execute("UPDATE versions SET precedence = 'z'")
