"""Several server processes behind one PostgreSQL database and one S3 bucket.

The web tier is stateless: publishes race in the database, reads agree whichever process
answers, rate-limit counters are shared, and the database refuses history rewrites from any
client. PostgreSQL + S3 only (the SQLite file is not for several machines).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import requests

from splice_build.registry.service.ratelimit import RateLimits
from testing.rate_windows import away_from_window_ends
from testing.registry import artifact
from testing.registry_backends import ScaleServices, StoreBackend, make_backend
from testing.registry_server import RunningRegistry, registry_server, user_token

PUBLISHERS = 40


@contextmanager
def two_servers(backend: StoreBackend, *extra: str) -> Iterator[list[RunningRegistry]]:
    with ExitStack() as stack:
        yield [
            stack.enter_context(registry_server(backend.data, *extra, backend=backend))
            for _ in range(2)
        ]


@pytest.fixture
def backend(scale_services: ScaleServices, tmp_path: Path) -> StoreBackend:
    return make_backend("postgres", tmp_path / "data", scale_services)


def test_forty_concurrent_publishes_through_two_servers_have_one_winner(
    backend: StoreBackend, tmp_path: Path
) -> None:
    with two_servers(backend, "--publish-limit", "0", "--request-limit", "0") as servers:
        token = user_token(servers[0], "racer")
        data = artifact(tmp_path / "p", "racer", "pkg", "1.0.0")
        statuses: list[int] = []
        barrier = threading.Barrier(PUBLISHERS)

        def publish(url: str) -> None:
            barrier.wait()
            response = requests.post(
                url + "/publish",
                data=data,
                headers={"authorization": f"Bearer {token}"},
                timeout=60,
            )
            statuses.append(response.status_code)

        threads = [
            threading.Thread(target=publish, args=(servers[i % 2].url,)) for i in range(PUBLISHERS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert statuses.count(201) == 1, statuses
        assert statuses.count(409) == PUBLISHERS - 1, statuses
        for server in servers:  # every process reads the same committed state
            listed = requests.get(server.url + "/packages/racer/pkg/versions", timeout=5).json()
            assert [v["version"] for v in listed["versions"]] == ["1.0.0"]
            download = requests.get(server.url + "/packages/racer/pkg/1.0.0/download", timeout=5)
            assert download.content == data
    assert list(backend.artifacts().values()) == [data]
    assert backend.query("SELECT count(*) FROM versions") == [(1,)]


def test_direct_update_of_a_version_row_fails_in_postgresql(
    backend: StoreBackend, tmp_path: Path
) -> None:
    with two_servers(backend, "--publish-limit", "0") as servers:
        token = user_token(servers[1], "frozen")
        data = artifact(tmp_path / "p", "frozen", "pkg", "1.0.0")
        published = requests.post(
            servers[1].url + "/publish",
            data=data,
            headers={"authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert published.status_code == 201, published.text
        before = backend.query("SELECT integrity, manifest, provenance FROM versions")
        for statement in (
            "UPDATE versions SET integrity = 'sha256-evil'",
            "UPDATE versions SET published_by = published_by",
            "UPDATE versions SET provenance = '{}'",
            "DELETE FROM versions",
            "TRUNCATE versions CASCADE",
            "DELETE FROM packages",
        ):
            with pytest.raises(backend.integrity_error):
                backend.execute(statement)
        assert backend.query("SELECT integrity, manifest, provenance FROM versions") == before
        info = requests.get(servers[0].url + "/packages/frozen/pkg/1.0.0", timeout=5).json()
        assert info["integrity"] == published.json()["integrity"]


def test_rate_limit_counters_are_shared_by_the_servers(
    backend: StoreBackend, tmp_path: Path
) -> None:
    with two_servers(backend, "--publish-limit", "2", "--request-limit", "0") as (first, second):
        token = user_token(first, "busy")
        headers = {"authorization": f"Bearer {token}"}
        away_from_window_ends(RateLimits().publish_period, margin=5)
        statuses = [
            requests.post(
                server.url + "/publish",
                data=artifact(tmp_path / "p", "busy", "x", f"1.0.{i}"),
                headers=headers,
                timeout=30,
            ).status_code
            for i, server in enumerate((first, second, first))
        ]
        assert statuses == [201, 201, 429]
        bad = {"authorization": "Bearer splice_" + "B" * 43}
        away_from_window_ends(RateLimits().failed_auth_period, margin=15)  # 21 in one window
        failures = [
            requests.get(server.url + "/auth/whoami", headers=bad, timeout=5).status_code
            for server in (first, second) * 10
        ]
        assert set(failures) == {401}
        # The budget is spent across both servers: the next failure is blocked on either one,
        # while a valid token still passes (a lockout keyed so that it cannot lock out others).
        blocked = requests.get(second.url + "/auth/whoami", headers=bad, timeout=5)
        assert blocked.status_code == 429 and blocked.headers["retry-after"] == "600"
        valid = requests.get(first.url + "/auth/whoami", headers=headers, timeout=5)
        assert valid.status_code == 200


def test_concurrent_first_starts_apply_each_migration_once(scale_services: ScaleServices) -> None:
    from splice_build.registry.db.migrate import migrations
    from splice_build.registry.db.postgres import SCHEMA_TABLE, PostgresMetadataStore

    url = scale_services.postgres.create_database()
    opened: list[PostgresMetadataStore] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def start() -> None:
        barrier.wait()
        try:
            opened.append(PostgresMetadataStore(url, pool_size=1))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in opened:
        store.close()
    assert errors == []
    import psycopg

    with psycopg.connect(url) as conn:
        levels = conn.execute(f"SELECT version FROM {SCHEMA_TABLE} ORDER BY version").fetchall()
    assert [row[0] for row in levels] == [m.number for m in migrations("migrations_pg")]
