"""A project whose splice.json and splice.lock the TypeScript CLI wrote installs, verifies and
runs with the real `splice` binary against the real registry server, and our own install of
the same package writes the same bytes TS writes.

"What TS writes" is built from the documented serialisation (docs/compatibility.md,
"splice.json", "splice.lock"): the TS key orders, formatted by Node's own
``JSON.stringify(value, null, 2)`` plus a newline, so the formatting is JavaScript's, not ours.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime.node import find_node
from splice_build.spec.archive import read_archive
from splice_build.spec.digests import files_digest, integrity_of
from testing.cli import run_splice
from testing.registry_fixtures import publish
from testing.registry_server import RunningRegistry, registry_server

GREETER = "@acme/greeter"
EMPTY_PERMISSIONS = {"fs": {"read": [], "write": []}, "network": [], "env": []}


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value, null, 2) + "\\n"`` computed by Node (key order as given)."""
    script = (
        'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () =>'
        ' process.stdout.write(JSON.stringify(JSON.parse(s), null, 2) + "\\n"));'
    )
    done = subprocess.run(
        [str(find_node({}).path), "-e", script],
        input=json.dumps(value),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    base = tmp_path_factory.mktemp("ts-project")
    publish(base / "store", base / "work", name="greeter", version="1.0.0")
    with registry_server(base / "store", admin=False) as running:
        yield running


def _ts_entry(server: RunningRegistry, *, legacy: bool = False) -> dict[str, Any]:
    """The lock entry the TypeScript installer writes for @acme/greeter@1.0.0 from ``server``."""
    resolved = f"{server.url}/packages/acme/greeter/1.0.0/download"
    with urllib.request.urlopen(resolved, timeout=30) as response:
        artifact = response.read()
    if legacy:  # a lock from before the registry, size, files and permissions fields
        return {"version": "1.0.0", "integrity": integrity_of(artifact), "resolved": resolved}
    return {
        "version": "1.0.0",
        "integrity": integrity_of(artifact),
        "size": len(artifact),
        "files": files_digest(read_archive(artifact)),
        "registry": server.url,
        "resolved": resolved,
        "permissions": EMPTY_PERMISSIONS,
    }


def _ts_project(root: Path, server: RunningRegistry, lock_name: str, entry: dict[str, Any]) -> None:
    root.mkdir()
    project = {"specVersion": 1, "packages": {GREETER: "^1.0.0"}, "registry": server.url}
    (root / "splice.json").write_text(js_stringify(project), encoding="utf-8")
    lock = {"lockfileVersion": 1, "packages": {GREETER: entry}}
    (root / lock_name).write_text(js_stringify(lock), encoding="utf-8")


def _installs_verifies_and_runs(root: Path) -> None:
    installed = run_splice("install", cwd=root)
    assert installed.code == 0, installed.stderr
    verified = run_splice("--json", "verify", f"{GREETER}@1.0.0", cwd=root)
    assert verified.code == 0, verified.stdout + verified.stderr
    checks = {c["id"]: c["status"] for c in verified.json()["checks"]}
    assert checks["installed"] == "passed"
    ran = run_splice("run", "greeter.hello", "name=Ada", cwd=root)
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.stdout) == {"message": "Hello, Ada."}


def test_a_ts_written_project_installs_verifies_and_runs(
    tmp_path: Path, server: RunningRegistry
) -> None:
    root = tmp_path / "project"
    _ts_project(root, server, "splice.lock", _ts_entry(server))
    written = {name: (root / name).read_bytes() for name in ("splice.json", "splice.lock")}
    _installs_verifies_and_runs(root)
    assert {name: (root / name).read_bytes() for name in written} == written, (
        "an install that changes nothing rewrites nothing: TS's bytes stay"
    )


def test_a_pre_registry_field_ts_lock_installs_and_is_rewritten_as_ts_writes(
    tmp_path: Path, server: RunningRegistry
) -> None:
    """splice-lock.json (the name before splice.lock) with only version, integrity, resolved."""
    root = tmp_path / "project"
    _ts_project(root, server, "splice-lock.json", _ts_entry(server, legacy=True))
    _installs_verifies_and_runs(root)
    assert not (root / "splice-lock.json").exists()
    expected = js_stringify({"lockfileVersion": 1, "packages": {GREETER: _ts_entry(server)}})
    assert (root / "splice.lock").read_text(encoding="utf-8") == expected


def test_our_install_writes_what_ts_writes(tmp_path: Path, server: RunningRegistry) -> None:
    root = tmp_path / "project"
    root.mkdir()
    assert run_splice("init", "--registry", server.url, cwd=root).code == 0
    added = run_splice("add", GREETER, cwd=root)
    assert added.code == 0, added.stderr
    project = {"specVersion": 1, "packages": {GREETER: "^1.0.0"}, "registry": server.url}
    assert (root / "splice.json").read_text(encoding="utf-8") == js_stringify(project)
    lock = {"lockfileVersion": 1, "packages": {GREETER: _ts_entry(server)}}
    assert (root / "splice.lock").read_text(encoding="utf-8") == js_stringify(lock)
