"""A checkout can ship ``.splice/statcache.json``: its no-op state must never be believed.

The no-op fast path (tasks/noop.py, docs/lifecycle.md#the-no-op-fast-path) answers "nothing
to do" when the recorded state still holds. A state holds the texts of ``splice.json`` and
``splice.lock``, which the author of a checkout knows, and the packages to compare by stat;
a forged one listing no package at all left nothing to compare, so ``sync --check`` passed
and ``sync``/``install`` kept installed files the checkout had tampered with (or never
installed them). The state now also names the identity (device, inode, ``ctime``) of the
two files it was read from, which a clone gets fresh on this machine.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from splice_build.sdk import Splice
from testing.cli import run_splice
from testing.registry_fixtures import new_project

GREETER = "@acme/greeter"
TAMPERED = b"export default async () => 'tampered';\n"


def _cloned_with_forged_state(tmp_path: Path) -> tuple[Path, Path]:
    """An upstream project installed and recorded on "its author's machine", then a copy of
    it (new files, as a clone makes) whose installed tool is tampered with and whose stat
    cache is the upstream one, rewritten to claim the clone as its root and no package."""
    upstream = new_project(tmp_path / "upstream")
    splice = Splice(upstream)
    splice.add([f"{GREETER}@^1.0.0"])
    splice.install()
    splice.install()
    assert splice.last_tasks is not None and splice.last_tasks.executed == []  # recorded
    clone = tmp_path / "clone"
    shutil.copytree(upstream, clone, symlinks=True)
    layout = ProjectLayout(clone)
    tool = next((layout.package_dir(GREETER) / "tools").iterdir())
    tool.write_bytes(TAMPERED)
    cache = json.loads(layout.stat_cache.read_text())
    cache["state"]["root"] = os.path.realpath(clone)
    cache["state"]["packages"] = {}
    layout.stat_cache.write_text(json.dumps(cache))
    return clone, tool


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_a_shipped_no_op_state_does_not_pass_sync_check(tmp_path: Path, registry: dict) -> None:
    clone, _ = _cloned_with_forged_state(tmp_path)
    done = run_splice("--json", "sync", "--check", cwd=clone)
    assert done.code == 1, (done.stdout, done.stderr)
    [project] = json.loads(done.stdout)["projects"]
    assert [(c["name"], c["action"]) for c in project["changes"]] == [(GREETER, "restore")]


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
@pytest.mark.parametrize("command", [["sync"], ["install"]])
def test_a_shipped_no_op_state_does_not_keep_tampered_files(
    tmp_path: Path, registry: dict, command: list[str]
) -> None:
    clone, tool = _cloned_with_forged_state(tmp_path)
    done = run_splice("--json", *command, cwd=clone)
    assert done.code == 0, (done.stdout, done.stderr)
    assert tool.read_bytes() != TAMPERED  # restored from the verified artifact
    verified = run_splice("--json", "verify", GREETER, cwd=clone)
    assert verified.code == 0, (verified.stdout, verified.stderr)
