"""A read-only project, a damaged graph database, a damaged cache entry.

- Read-only: the project bind-mounted read-only (EROFS for root too) in a private mount
  namespace; ``add`` must refuse with NOT_WRITABLE and change nothing, and work once writable.
- The graph database ``.splice/graph.sqlite3`` only caches file states: garbage bytes in it
  must not stop a command (it is rebuilt, every check recomputed).
- A truncated or corrupted artifact in the shared cache is never trusted, nor is an entry that
  is no artifact at all (a FIFO, a link to ``/dev/zero``): it is replaced from the registry,
  and with the registry gone the install fails coded, at once, without touching the project.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from testing.cli import run_splice
from testing.faults import read_only
from testing.registry_server import RunningRegistry
from tests.faults.conftest import BIG, GREETER, leftovers, needs_namespaces, snapshot


def _project(tmp_path: Path, server: RunningRegistry, version: str = "1.0.0") -> Path:
    project = tmp_path / "p"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    done = run_splice("--registry", server.url, "add", f"{GREETER}@{version}", cwd=project)
    assert done.code == 0, done.stderr
    return project


def _listed(project: Path) -> list[tuple[str, str]]:
    done = run_splice("--json", "list", cwd=project)
    assert done.code == 0, done.stdout + done.stderr
    return [(row["version"], row["status"]) for row in done.json()]


def _cache(home: Path) -> Path:
    return home / "cache" / "artifacts"


@needs_namespaces
def test_a_read_only_project_refuses_with_not_writable_and_changes_nothing(
    served: RunningRegistry, tmp_path: Path
) -> None:
    project = _project(tmp_path, served)
    before = snapshot(project)
    with read_only(project) as ns:
        done = ns.splice("--json", "--registry", served.url, "add", f"{GREETER}@1.1.0", cwd=project)
    assert done.code == 1, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "NOT_WRITABLE", error
    assert "Traceback" not in done.stderr
    assert snapshot(project) == before
    assert leftovers(project) == []
    again = run_splice("--registry", served.url, "add", f"{GREETER}@1.1.0", cwd=project)
    assert again.code == 0, again.stderr
    assert _listed(project) == [("1.1.0", "ok")]


@needs_namespaces
def test_a_read_only_checkout_is_checked_by_sync_check(
    served: RunningRegistry, tmp_path: Path
) -> None:
    """``splice sync --check`` (the pre-commit hook, a CI gate) writes nothing, so it answers
    in a checkout mounted read-only (a container's ``-v $PWD:/src:ro``): it was NOT_WRITABLE,
    "the file system refused access to …/.splice/state.lock", the lock file it only holds."""
    project = _project(tmp_path, served)
    with read_only(project) as ns:
        done = ns.splice("--json", "sync", "--check", cwd=project)
    assert (done.code, done.json()["ok"]) == (0, True), done.stdout + done.stderr
    assert done.json()["projects"][0]["unchanged"] == [{"name": GREETER, "version": "1.0.0"}]


@pytest.mark.parametrize(
    "damage",
    [b"garbage, not SQLite" * 100, b"SQLite format 3\0" + b"\xff" * 4000],
    ids=["garbage", "bad-header"],
)
def test_a_damaged_graph_database_is_rebuilt(
    served: RunningRegistry, tmp_path: Path, damage: bytes
) -> None:
    project = _project(tmp_path, served)
    db = ProjectLayout(project).graph_db
    assert db.exists()
    db.write_bytes(damage)
    done = run_splice("--json", "--registry", served.url, "add", f"{GREETER}@1.1.0", cwd=project)
    assert done.code == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert _listed(project) == [("1.1.0", "ok")]
    assert run_splice("install", cwd=project).code == 0  # and the rebuilt database serves again


def _damage(entry: Path, how: str) -> None:
    """Damage the cache entry ``entry``: other bytes, or no artifact at all (a FIFO, whose
    read would wait for a writer forever; a link to ``/dev/zero``, whose read never ends)."""
    good = entry.read_bytes()
    if how in ("fifo", "link-to-dev-zero"):
        entry.unlink()
    if how == "truncated":
        entry.write_bytes(good[: len(good) // 2])
    elif how == "corrupted":
        entry.write_bytes(good[:1000] + bytes([good[1000] ^ 0xFF]) + good[1001:])
    elif how == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")


DAMAGE = ["truncated", "corrupted", "fifo", "link-to-dev-zero"]
# What the install may take: a read of /dev/zero past it ends in MemoryError, not in the
# test machine's memory; a wait on the FIFO ends at the timeout.
ADDRESS_SPACE = 2 << 30
TIMEOUT = 60


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_cache_entry_is_replaced_from_the_registry(
    served: RunningRegistry, tmp_path: Path, how: str
) -> None:
    home = Path(os.environ["SPLICE_HOME"])
    project = _project(tmp_path, served, "1.1.0")
    [entry] = [p for p in _cache(home).rglob("*") if p.is_file() and p.stat().st_size > len(BIG)]
    good = entry.read_bytes()
    _damage(entry, how)
    shutil.rmtree(project / ".splice")  # a fresh clone: the install must come from the cache
    done = run_splice(
        "--json", "install", cwd=project, timeout=TIMEOUT, address_space=ADDRESS_SPACE
    )
    assert done.code == 0, done.stdout + done.stderr
    assert not entry.is_symlink()
    assert entry.read_bytes() == good  # the bad entry was replaced by verified bytes
    assert (project / ".splice/packages/@acme/greeter/data/big.bin").read_bytes() == BIG
    assert leftovers(project, home) == []


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_cache_entry_with_the_registry_gone_fails_coded(
    served: RunningRegistry, tmp_path: Path, how: str
) -> None:
    home = Path(os.environ["SPLICE_HOME"])
    project = _project(tmp_path, served, "1.1.0")
    [entry] = [p for p in _cache(home).rglob("*") if p.is_file() and p.stat().st_size > len(BIG)]
    _damage(entry, how)
    shutil.rmtree(project / ".splice")
    before = snapshot(project)
    served.kill()
    done = run_splice(
        "--json", "install", cwd=project, timeout=TIMEOUT, address_space=ADDRESS_SPACE
    )
    assert done.code == 1, done.stdout + done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "REGISTRY_UNREACHABLE"
    assert "Traceback" not in done.stderr
    assert snapshot(project) == before
    assert not os.path.lexists(entry)  # never trusted, never kept
    assert leftovers(project, home) == []
