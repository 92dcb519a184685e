"""The commands the permission and @splice/files documentation shows, run as written with the
real `splice` binary against the embedded registry (offline, a fresh SPLICE_HOME)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.install.consent import ACCEPT_HINT
from testing.cli import run_splice

pytestmark = pytest.mark.node

ANY_PUBLIC_HOST = (
    "network: any public host (private, loopback and link-local addresses are blocked)"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    assert run_splice("init", cwd=root).code == 0
    return root


def _state(project: Path) -> dict[str, bytes | None]:
    return {
        name: (project / name).read_bytes() if (project / name).exists() else None
        for name in ("splice.json", "splice.lock")
    }


def _lock(project: Path) -> dict:
    return json.loads((project / "splice.lock").read_text())["packages"]


def test_reviewing_permissions_info_then_add(project: Path) -> None:
    """`splice info @splice/http`, `splice add @splice/http` (refused), then with consent."""
    info = run_splice("info", "@splice/http", cwd=project)
    assert info.code == 0, info.stderr
    assert f"  {ANY_PUBLIC_HOST}" in info.stdout.splitlines()
    before = _state(project)
    refused = run_splice("add", "@splice/http", cwd=project)
    assert refused.code == 1
    assert f"  - {ANY_PUBLIC_HOST}" in refused.stderr.splitlines()
    assert f"hint: {ACCEPT_HINT}" in refused.stderr
    as_json = run_splice("--json", "add", "@splice/http", cwd=project)
    assert as_json.code == 1
    assert as_json.json()["error"]["code"] == "PERMISSIONS_NOT_ACCEPTED"
    assert as_json.json()["error"]["details"] == [ANY_PUBLIC_HOST]
    assert _state(project) == before
    assert not (project / ".splice" / "packages" / "@splice" / "http").exists()
    added = run_splice("add", "@splice/http", "--accept-permissions", cwd=project)
    assert added.code == 0, added.stderr
    assert _lock(project)["@splice/http"]["permissions"]["network"] == ["*"]


def test_files_examples(project: Path) -> None:
    """The four commands of the @splice/files examples, in order."""
    refused = run_splice("--json", "add", "@splice/files", cwd=project)
    assert refused.code == 1
    assert refused.json()["error"]["code"] == "PERMISSIONS_NOT_ACCEPTED"
    assert not (project / "workspace").exists() and not (project / "splice.lock").exists()
    added = run_splice("add", "@splice/files", "--accept-permissions", cwd=project)
    assert added.code == 0, added.stderr
    assert _lock(project)["@splice/files"]["permissions"]["fs"] == {
        "read": ["workspace"],
        "write": ["workspace"],
    }
    write = run_splice("run", "files.write", "path=notes/today.md", "content=# Notes", cwd=project)
    assert write.code == 0, write.stderr
    assert json.loads(write.stdout) == {
        "path": "notes/today.md",
        "bytes": 7,
        "size": 7,
        "created": True,
    }
    assert (project / "workspace" / "notes" / "today.md").read_text() == "# Notes"
    read = run_splice("run", "files.read", "path=notes/today.md", cwd=project)
    assert read.code == 0, read.stderr
    assert json.loads(read.stdout)["content"] == "# Notes"
    listing = run_splice("run", "files.list", "recursive=true", cwd=project)
    assert listing.code == 0, listing.stderr
    assert [(e["path"], e["type"]) for e in json.loads(listing.stdout)["entries"]] == [
        ("notes", "directory"),
        ("notes/today.md", "file"),
    ]
