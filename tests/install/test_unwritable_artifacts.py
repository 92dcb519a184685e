"""An artifact no file system can write is an invalid package, refused while it is checked.

A registry (here the real server, its stored artifact replaced and its answers made
consistent with the new bytes by the malicious proxy) serves the honest package plus entries
that clash: a file and a directory of one name, in either order or differing in case, or two
names macOS merges. `splice add` refuses it with `INVALID_PACKAGE` naming the entry, before
any staging copy is written, and leaves the project, `.splice/` and the cache as they were.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from splice_build.registry.api import INTEGRITY_HEADER
from splice_build.spec.archive import read_archive
from splice_build.spec.digests import integrity_of
from testing.archives import RawEntry, tar_gz
from testing.cli import run_splice
from testing.counting_proxy import Headers
from testing.hostile_registry import hostile_registry
from testing.project_state import state_bytes
from testing.registry_fixtures import publish

VERSION_PATH = "/packages/acme/greeter/1.0.0"
# Entries added after the honest package's own (manifest.json, SKILL.md, tools/hello.js),
# and the text the refusal's details must hold.
CLASHES: dict[str, tuple[list[tuple[str, bytes]], str]] = {
    "file-then-directory": ([("lib", b"x"), ("lib/a.js", b"y")], 'entry "lib/a.js"'),
    "directory-then-file": ([("lib/a.js", b"y"), ("lib", b"x")], 'entry "lib"'),
    "a-file-named-like-tools-ignoring-case": ([("TOOLS", b"x")], 'entry "TOOLS"'),
    "nfc-and-nfd": ([("caf\u00e9.js", b"1"), ("cafe\u0301.js", b"2")], "cafe\u0301.js"),
}


def _serve_instead(store: Path, extra: list[tuple[str, bytes]]) -> bytes:
    """Replace the stored artifact of @acme/greeter@1.0.0 by its files plus ``extra``."""
    integrity = publish(store, store.parent / "pkgs")["integrity"]
    [blob] = store.rglob(integrity.removeprefix("sha256-") + ".tar.gz")
    entries = [*read_archive(blob.read_bytes()).items(), *extra]
    hostile = tar_gz([RawEntry(path, content) for path, content in entries])
    blob.write_bytes(hostile)
    return hostile


@pytest.mark.parametrize("clash", sorted(CLASHES))
def test_an_artifact_no_file_system_can_write_is_an_invalid_package(
    tmp_path: Path, clash: str
) -> None:
    extra, named = CLASHES[clash]
    store = tmp_path / "registry-data"
    hostile = _serve_instead(store, extra)

    def consistent(path: str, answer: Any) -> Any:
        if path.split("?", 1)[0] == VERSION_PATH:
            answer = {**answer, "integrity": integrity_of(hostile), "size": len(hostile)}
        return answer

    def consistent_headers(path: str, headers: Headers) -> Headers:
        return [
            (key, integrity_of(hostile) if key.lower() == INTEGRITY_HEADER else value)
            for key, value in headers
        ]

    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    before = state_bytes(project)
    with hostile_registry(store) as registry:
        registry.twist, registry.twist_headers = consistent, consistent_headers
        done = run_splice(
            "--json", "--registry", registry.url, "add", "@acme/greeter@1.0.0", cwd=project
        )
    assert done.code == 1, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["code"] == "INVALID_PACKAGE", error
    assert any(named in detail for detail in error["details"]), error["details"]
    assert "Traceback" not in done.stderr
    assert state_bytes(project) == before
    assert not (project / ".splice" / "tmp").exists(), "no staging copy was started"
    cache = Path(os.environ["SPLICE_HOME"]) / "cache" / "artifacts"
    assert not [p for p in cache.rglob("*") if p.is_file()], "an invalid artifact is never cached"
