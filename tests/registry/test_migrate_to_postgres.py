"""`splice registry admin migrate --to postgresql://… --artifacts s3://…`: SQLite → PostgreSQL.

A registry used on SQLite + files moves to PostgreSQL + S3 and keeps working: the same
users and tokens, the same versions with the same bytes, provenance unchanged.
"""

from __future__ import annotations

from pathlib import Path

import requests

from testing.cli import run_splice
from testing.registry import artifact
from testing.registry_backends import S3_PREFIX, ScaleServices, make_backend
from testing.registry_server import admin, registry_server, user_token


def test_move_a_registry_from_sqlite_to_postgres_and_s3(
    scale_services: ScaleServices, tmp_path: Path
) -> None:
    old = make_backend("sqlite", tmp_path / "old", None)
    archives = [artifact(tmp_path / "p", "alice", "tool", v) for v in ("1.0.0", "1.1.0")]
    with registry_server(old.data, backend=old) as server:
        token = user_token(server, "alice")
        for data in archives:
            sent = requests.post(
                server.url + "/publish",
                data=data,
                headers={"authorization": f"Bearer {token}"},
                timeout=30,
            )
            assert sent.status_code == 201, sent.text
        before = requests.get(server.url + "/packages/alice/tool/1.0.0", timeout=5).json()

    new = make_backend("postgres", tmp_path / "new", scale_services)
    argv = ("registry", "admin", "migrate", "--to", new.database_url or "", "--data", str(old.data))
    target = f"s3://{new.bucket}/{S3_PREFIX}"
    done = run_splice(*argv, "--artifacts", target, "--json", env=scale_services.s3.env())
    assert done.code == 0, done.stderr
    report = done.json()
    assert report["rows"]["versions"] == 2 and report["rows"]["users"] == 1
    assert report["artifacts"] == 2
    assert sorted(new.artifacts().values()) == sorted(archives)
    assert new.query("SELECT DISTINCT artifact_backend FROM versions") == [("s3",)]

    with registry_server(new.data, backend=new) as server:
        after = requests.get(server.url + "/packages/alice/tool/1.0.0", timeout=5).json()
        for field in ("integrity", "size", "publishedAt", "publishedBy", "provenance", "manifest"):
            assert after[field] == before[field], field
        download = requests.get(server.url + "/packages/alice/tool/1.0.0/download", timeout=5)
        assert download.content == archives[0]
        headers = {"authorization": f"Bearer {token}"}  # the token issued on SQLite
        assert requests.get(server.url + "/auth/whoami", headers=headers, timeout=5).ok
        newer = requests.post(
            server.url + "/publish",
            data=artifact(tmp_path / "p", "alice", "tool", "2.0.0"),
            headers=headers,
            timeout=30,
        )
        assert newer.status_code == 201, newer.text
        assert "Created user bob" in admin(server, "create-user", "bob")  # ids continue

    again = run_splice(*argv, "--json", env=scale_services.s3.env())
    assert again.code == 1
    assert "already holds a registry" in again.json()["error"]["message"]
