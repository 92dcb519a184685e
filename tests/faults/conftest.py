"""Shared pieces of the fault-injection tests: a served registry, snapshots, leftovers.

Every test here injects one real fault (docs/lifecycle.md#failure-and-recovery), checks the
coded error, that the project and cache are byte for byte what they were with no temp file
left, then removes the fault and checks that the same command converges.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.faults import namespaces_available
from testing.registry_fixtures import publish
from testing.registry_server import RunningRegistry, registry_server

GREETER = "@acme/greeter"
# Random bytes do not compress: the 1.1.0 artifact really is this large on the wire and disk.
BIG = random.Random(21).randbytes(600_000)


def publish_greeter(store: Path, work: Path) -> None:
    """@acme/greeter 1.0.0 (small) and 1.1.0 (with a 600 kB file) into ``store``."""
    publish(store, work)
    publish(store, work, version="1.1.0", files={"data/big.bin": BIG})


def _greeter_registry(tmp: Path, env: dict[str, str] | None = None) -> Iterator[RunningRegistry]:
    store = tmp / "registry-data"
    publish_greeter(store, tmp / "pkgs")
    with registry_server(store, admin=False, env=env) as server:
        yield server


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningRegistry]:
    """A registry of its own (a test may stop it or change its store)."""
    yield from _greeter_registry(tmp_path)


@pytest.fixture(scope="module")
def served_to_read(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    """One registry for a module whose tests only fetch from it: the same store and server
    as ``served``, started once instead of once a test. It starts before the first test's
    private HOME (tests/conftest.py), so it gets one of its own."""
    tmp = tmp_path_factory.mktemp("registry")
    home = {"HOME": str(tmp / "home"), "SPLICE_HOME": str(tmp / "home" / ".splice")}
    yield from _greeter_registry(tmp, home)


needs_namespaces = pytest.mark.skipif(
    not namespaces_available(),
    reason="needs unprivileged user + mount namespaces (unshare -rm) for a real full disk",
)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (not the graph, stat and workspace caches, the
    empty lock file)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and p.name
        not in {
            "graph.sqlite3",
            "sync.sqlite3",
            "state.lock",
            "statcache.json",
            "workspace.json",
            ".filler",
        }
    }


def leftovers(*roots: Path) -> list[str]:
    """Temp files and staging directories a failed command must not leave behind."""
    found = []
    for root in roots:
        for p in root.rglob("*"):
            if p.name.endswith((".tmp", ".part")) or (
                p.name == "tmp" and p.parent.name == ".splice"
            ):
                found.append(str(p))
    return sorted(found)
