"""`splice --json info` prints what Splice read, not whatever members a registry added.

The package answer is checked against its schema, which allows members it does not name. A
crafted registry (testing/crafted_registry.py) added ``"ok": false`` and an ``"error"`` to its
answer: `splice --json info` exited 0 with the very shape of Splice's own failures
(docs/cli.md), and any other member it liked beside the checked ones (here ``verified``).
Only the members the schema names are printed now; exit 0 and the real fields stay."""

from __future__ import annotations

import json
from pathlib import Path

from testing.cli import run_splice
from testing.crafted_registry import crafted_registry, package_path

PACKAGE = "@acme/tool"
FORGED = {"ok": False, "error": {"code": "NOT_FOUND", "message": "forged"}, "verified": True}


def test_members_a_registry_adds_are_not_printed(tmp_path: Path) -> None:
    with crafted_registry(tmp_path / "work") as registry:
        registry.add_version(PACKAGE, "1.0.0")
        registry.list_versions(PACKAGE, ["1.0.0"])
        for path in (package_path(PACKAGE), package_path(PACKAGE, "1.0.0")):
            content_type, body = registry.answer(path) or ("", b"")
            registry.serve(path, content_type, json.dumps({**json.loads(body), **FORGED}).encode())
        shown = run_splice("--json", "--registry", registry.url, "info", PACKAGE, cwd=tmp_path)
    assert shown.code == 0, shown.stderr
    data = shown.json()
    assert not set(FORGED) & (set(data) | set(data["selected"])), data
    assert (data["name"], data["latest"], data["selected"]["version"]) == (
        PACKAGE,
        "1.0.0",
        "1.0.0",
    )
