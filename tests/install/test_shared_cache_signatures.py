"""The artifact cache under SPLICE_HOME is shared by every project of the user, and so are the
signatures stored next to each artifact (docs/signing.md#restoring-from-the-cache).

A second registry that serves the same public bytes but lists no signatures (one a cloned
project's splice.json names) used to overwrite that record: every other project whose lock
pins the publisher's key then failed its restore from the cache with ``SIGNER_CHANGED`` (and a
hint to drop the pin). A record now counts only for the registry that listed it.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from testing.cli import run_splice
from testing.counting_proxy import counting_proxy
from testing.hostile_registry import is_version_answer, signed_store
from testing.registry_server import registry_server


def test_a_registry_listing_no_signatures_does_not_unsign_another_projects_restore(
    tmp_path: Path,
) -> None:
    package = signed_store(tmp_path / "data", tmp_path / "pkgs")

    def unsigned(path: str, answer: Any) -> Any:
        if is_version_answer(path, package):
            answer = copy.deepcopy(answer)
            answer["signatures"] = []
        return answer

    with (
        registry_server(tmp_path / "data", admin=False) as server,
        counting_proxy(server.url) as honest,
        counting_proxy(server.url, unsigned) as other,
    ):
        mine = tmp_path / "mine"
        mine.mkdir()
        assert run_splice("init", cwd=mine).code == 0
        added = run_splice("--json", "--registry", honest.url, "add", package.package_id, cwd=mine)
        assert added.code == 0, added.stdout + added.stderr
        assert json.loads(added.stdout)[0]["signedBy"] == package.key_id

        cloned = tmp_path / "cloned"
        cloned.mkdir()
        assert run_splice("init", cwd=cloned).code == 0
        same_bytes = run_splice(
            "--json", "--registry", other.url, "add", package.package_id, cwd=cloned
        )
        assert same_bytes.code == 0, same_bytes.stdout + same_bytes.stderr
        assert json.loads(same_bytes.stdout)[0]["signature"] == "unsigned"

        fresh = tmp_path / "fresh"  # a fresh checkout of mine: the lock pins the key
        fresh.mkdir()
        for name in ("splice.json", "splice.lock"):
            shutil.copy(mine / name, fresh / name)
        restored = run_splice("--json", "--registry", honest.url, "install", cwd=fresh)
    assert restored.code == 0, restored.stdout + restored.stderr
    report = json.loads(restored.stdout)
    assert [row["signedBy"] for row in report] == [package.key_id]
    assert honest.downloads() == [f"/packages/{package.package_id[1:]}/1.0.0/download"], (
        "the restore took the cached bytes"
    )
