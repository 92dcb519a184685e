"""The registry's own storage failing: a damaged SQLite database, a full disk under publish.

- The metadata database is the registry's record of packages and users: garbage or a
  truncated file must stop ``splice registry serve`` (and the embedded registry) with
  STORAGE_UNAVAILABLE, the file left byte for byte as it was; restored, it serves again.
- A publish to a server whose data directory is on a full disk fails coded, stores neither
  a partial artifact nor a version without one, and succeeds once there is room.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testing.cli import run_splice, splice_executable
from testing.faults import fill, small_disk, unfill
from testing.packages import minimal_manifest, write_package
from testing.registry_fixtures import publish
from testing.registry_server import launch, registry_server
from tests.faults.conftest import BIG, leftovers, needs_namespaces, snapshot


def _damage(db: Path, how: str) -> None:
    data = db.read_bytes()
    if how == "garbage":
        db.write_bytes(b"this is not a database " * 300)
    else:
        db.write_bytes(data[: len(data) // 3])


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_a_damaged_registry_database_stops_the_server_coded_and_is_kept(
    tmp_path: Path, how: str
) -> None:
    store = tmp_path / "registry-data"
    publish(store, tmp_path / "pkgs")
    db = store / "registry.db"
    good = db.read_bytes()
    _damage(db, how)
    damaged = db.read_bytes()
    done = subprocess.run(
        [splice_executable(), "--json", "registry", "serve", "--port", "0", "--data", str(store)],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["error"]["code"] == "STORAGE_UNAVAILABLE", done.stdout
    assert "Traceback" not in done.stderr and "unexpected failure" not in done.stderr
    assert db.read_bytes() == damaged  # the only record of the registry is never rewritten

    db.write_bytes(good)
    with registry_server(store, admin=False) as server:
        info = run_splice("--json", "--registry", server.url, "info", "@acme/greeter")
        assert info.code == 0, info.stderr


def test_a_damaged_embedded_registry_database_fails_coded(tmp_path: Path) -> None:
    home = Path(os.environ["SPLICE_HOME"])
    publish(home / "registry", tmp_path / "pkgs")
    _damage(home / "registry" / "registry.db", "garbage")
    done = run_splice("--json", "--registry", "embedded", "info", "@acme/greeter")
    assert done.code == 1, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["error"]["code"] == "STORAGE_UNAVAILABLE", done.stdout


@needs_namespaces
@pytest.mark.parametrize("leave", [0, 300_000])
def test_publish_to_a_server_on_a_full_disk_stores_nothing_then_converges(
    tmp_path: Path, leave: int
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    first = write_package(tmp_path / "big-1", minimal_manifest(namespace="bob", name="big"))
    big = write_package(
        tmp_path / "big-2",
        minimal_manifest(namespace="bob", name="big", version="2.0.0"),
        {"data/big.bin": BIG},
    )
    with small_disk(disk, size="16m") as ns:
        data = disk / "data"
        ns.sh(f"mkdir -p {data}")
        for args in (["create-user", "bob"], ["create-token", "bob", "--show"]):
            made = ns.splice("registry", "admin", *args, "--data", str(data), cwd=disk)
            assert made.code == 0, made.stderr
        token = made.stdout.strip()
        nsenter = ["nsenter", "-t", str(ns.process.pid), "-U", "-m", "--preserve-credentials"]
        server = launch(
            [
                *nsenter,
                splice_executable(),
                "registry",
                "serve",
                "--port",
                "0",
                "--data",
                str(data),
            ],
            data,
        )
        try:
            as_bob = {"SPLICE_TOKEN": token}
            done = run_splice("--registry", server.url, "publish", str(first), env=as_bob)
            assert done.code == 0, done.stderr
            fill(ns, disk, leave=leave)
            before = snapshot(ns.view(data))
            failed = run_splice("--json", "--registry", server.url, "publish", str(big), env=as_bob)
            assert failed.code == 1, (failed.stdout, failed.stderr)
            error = json.loads(failed.stdout)["error"]
            # the blob store refuses (a 500) or the database does (a 503, worth a retry)
            assert (error["code"], error["details"]) in (
                ("REGISTRY_ERROR", ["registry code: ARTIFACT_STORAGE_FAILED"]),
                ("REGISTRY_UNAVAILABLE", ["registry code: METADATA_WRITE_FAILED"]),
            ), failed.stdout
            after = snapshot(ns.view(data))
            assert {k: v for k, v in after.items() if "registry.db" not in k} == {
                k: v for k, v in before.items() if "registry.db" not in k
            }  # no partial artifact
            assert leftovers(ns.view(data)) == []
            info = run_splice("--json", "--registry", server.url, "info", "@bob/big")
            assert "2.0.0" not in json.dumps(info.json())  # no version without its artifact

            unfill(ns, disk)
            again = run_splice("--registry", server.url, "publish", str(big), env=as_bob)
            assert again.code == 0, again.stderr
            project = tmp_path / "p"
            project.mkdir()
            assert run_splice("init", cwd=project).code == 0
            added = run_splice("--registry", server.url, "add", "@bob/big@2.0.0", cwd=project)
            assert added.code == 0, added.stderr
            assert (project / ".splice/packages/@bob/big/data/big.bin").read_bytes() == BIG
        finally:
            server.stop()
